"""What a display-filter field is: its name, its type and how to read its values.

A field's ``get(pv)`` returns the list of its values on one packet (``pv`` is an
``analyzer.fields.packet.PacketView``): several when the field occurs several times (both
addresses of ``ip.addr``, every HTTP/2 frame's ``http2.streamid``), none when it is absent.
Frame-level fields also have ``frame(fr)``: the values on one analysis ``Frame`` (what
``frames -Y`` filters), from which ``get`` is built.

Types follow Wireshark's (``tshark -G fields`` names them FT_*): the literal on the other
side of a comparison is read according to the field's type, as tshark does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable

# value types (the Wireshark FT_* each stands for)
UINT = "uint"  # FT_UINT8..64, FT_FRAMENUM
INT = "int"  # FT_INT*
BOOL = "bool"  # FT_BOOLEAN (a flag bit reads 0/1)
FLOAT = "float"  # FT_RELATIVE_TIME, FT_DOUBLE
ABSTIME = "abstime"  # FT_ABSOLUTE_TIME (epoch seconds)
STRING = "string"  # FT_STRING
BYTES = "bytes"  # FT_BYTES
ETHER = "ether"  # FT_ETHER (6 bytes)
IPV4 = "ipv4"  # FT_IPv4 (an int)
IPV6 = "ipv6"  # FT_IPv6 (an int)
PROTO = "protocol"  # FT_PROTOCOL whose bytes wirefall can give (slices, contains)
PROTO_OPAQUE = "protocol (presence only)"  # FT_PROTOCOL tested for presence only
NONE = "none"  # FT_NONE: a label, tested for presence only

NUMERIC = (UINT, INT, BOOL, FLOAT, ABSTIME)
ADDRESS = (IPV4, IPV6, ETHER)
BYTELIKE = (BYTES, ETHER, IPV4, IPV6, PROTO, STRING)

# the Wireshark type names, for docs/FILTERS.md and the test that checks them against tshark
FT_NAMES = {UINT: "FT_UINT*", INT: "FT_INT*", BOOL: "FT_BOOLEAN", FLOAT: "FT_RELATIVE_TIME/FT_DOUBLE",
            ABSTIME: "FT_ABSOLUTE_TIME", STRING: "FT_STRING", BYTES: "FT_BYTES", ETHER: "FT_ETHER",
            IPV4: "FT_IPv4", IPV6: "FT_IPv6", PROTO: "FT_PROTOCOL", PROTO_OPAQUE: "FT_PROTOCOL", NONE: "FT_NONE"}


@dataclass(slots=True)
class Field:
    name: str
    type: str
    get: Callable[[Any], list]  # PacketView -> values on that packet
    desc: str = ""
    frame: Callable[[Any], list] | None = None  # analysis Frame -> values (frame-level fields)
    note: str = ""  # how wirefall's values differ from tshark's, if they do
    unsupported: str = ""  # referencing the field is an error with this text
    size: int = 0  # an unsigned integer field's size in bytes, tshark's: a literal past it is refused, len() is it (0: unknown)
    since: str = ""  # the Wireshark version that added the field, if later than 4.0 (Debian 12's tshark, the oracle)


@dataclass(slots=True)
class Protocol:
    """One protocol's fields, as its module declares them (``PROTOCOL = Protocol(...)``).

    The protocol's own name is a field too (``tcp``, ``http2``): present on the packets that
    carry it; its ``get`` gives the layer's bytes where wirefall has them (``PROTO``), so that
    ``tcp[0:2]`` and ``frame contains "GET"`` work."""

    name: str
    desc: str
    present: Field
    fields: list[Field] = field(default_factory=list)
    # families of fields named by a prefix, e.g. http2.headers.<header name>: prefix -> factory
    prefixes: dict[str, Callable[[str], Field | None]] = field(default_factory=dict)
    unsupported_prefixes: dict[str, str] = field(default_factory=dict)  # prefix -> error text
