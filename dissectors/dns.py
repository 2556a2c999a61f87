"""Sans-IO DNS message decoder (RFC 1035), just enough for the waterfall's DNS phase:
the question, the flags and the A / AAAA / CNAME answers.

Written by hand rather than with dpkt.dns because dpkt raises on many malformed or
truncated messages and allocates an object per record; here a bad message gives a
``DnsMessage`` with ``error`` set and whatever was decoded before the fault.
Name decompression is bounded (pointer hops and name length).
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field
from enum import IntEnum

from wirefall.dissectors.dataclass_repr import FACTORY, dataclass_repr
from wirefall.dissectors.registry import OracleSpec, ProtocolDescriptor, names_of

class RRType(IntEnum):  # RFC 1035 §3.2.2, RFC 3596 (AAAA), RFC 2782 (SRV), RFC 6891 (OPT), RFC 9460 (SVCB, HTTPS)
    A = 1
    NS = 2
    CNAME = 5
    SOA = 6
    PTR = 12
    MX = 15
    TXT = 16
    AAAA = 28
    SRV = 33
    OPT = 41
    SVCB = 64
    HTTPS = 65


class Rcode(IntEnum):  # RFC 1035 §4.1.1
    NOERROR = 0
    FORMERR = 1
    SERVFAIL = 2
    NXDOMAIN = 3
    NOTIMP = 4
    REFUSED = 5


TYPE_NAMES = names_of(RRType)
RCODE_NAMES = names_of(Rcode)

DESCRIPTOR = ProtocolDescriptor(
    name="dns", display="DNS", protocols=("dns",), fields_module="dns", hooks_module="dns", long_name="Domain Name System",
    oracle=OracleSpec(layer="dns", fields={"stream_id": "dns.id"}),  # (a message's id: wirefall's stream_id)
)

MAX_POINTER_HOPS = 64
MAX_NAME = 255
MAX_RECORDS = 512

_HDR = struct.Struct("!HHHHHH")
_RR = struct.Struct("!HHIH")
_Q = struct.Struct("!HH")


class DnsError(ValueError):
    pass


# (each with a docstring: for a class without one, @dataclass builds it from
# inspect.signature at every start; and __repr__ not compiled: dissectors/dataclass_repr.py)
@dataclass(init=False, slots=True, repr=False)
class DnsAnswer:
    """One resource record of a DNS answer section."""

    __repr__ = dataclass_repr

    name: str
    type: str
    ttl: int
    value: str  # address for A/AAAA, target name for CNAME, hex otherwise

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, name: str, type: str, ttl: int, value: str) -> None:
        self.name = name
        self.type = type
        self.ttl = ttl
        self.value = value


@dataclass(init=False, slots=True, repr=False)
class DnsMessage:
    """A decoded DNS message: header fields, questions and answers."""

    __repr__ = dataclass_repr

    id: int = 0
    response: bool = False
    opcode: int = 0
    rcode: str = "NOERROR"
    questions: list[tuple[str, str]] = field(default_factory=list)
    answers: list[DnsAnswer] = field(default_factory=list)
    error: str | None = None

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, id: int = 0, response: bool = False, opcode: int = 0, rcode: str = "NOERROR", questions: list[tuple[str, str]] = FACTORY,
                 answers: list[DnsAnswer] = FACTORY, error: str | None = None) -> None:
        self.id = id
        self.response = response
        self.opcode = opcode
        self.rcode = rcode
        self.questions = [] if questions is FACTORY else questions
        self.answers = [] if answers is FACTORY else answers
        self.error = error

    @property
    def qname(self) -> str | None:
        return self.questions[0][0] if self.questions else None

    @property
    def qtype(self) -> str | None:
        return self.questions[0][1] if self.questions else None

    def addresses(self) -> list[str]:
        return [a.value for a in self.answers if a.type in ("A", "AAAA")]


def _name(buf: bytes, pos: int) -> tuple[str, int]:
    """Decode a (possibly compressed) name at pos; return (name, position after it)."""
    name, end, _ = _name_labels(buf, pos)
    return name, end


def _name_labels(buf: bytes, pos: int) -> tuple[str, int, int]:
    """``_name`` and the name's label count."""
    labels: list[str] = []
    end = -1
    hops = 0
    total = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise DnsError("name runs past the end of the message")
        ln = buf[pos]
        if ln & 0xC0 == 0xC0:
            if pos + 1 >= n:
                raise DnsError("truncated compression pointer")
            if end < 0:
                end = pos + 2
            hops += 1
            if hops > MAX_POINTER_HOPS:
                raise DnsError("compression pointer loop")
            pos = ((ln & 0x3F) << 8) | buf[pos + 1]
            continue
        if ln & 0xC0:
            raise DnsError(f"unknown label type {ln:#x}")
        pos += 1
        if ln == 0:
            break
        if pos + ln > n:
            raise DnsError("label runs past the end of the message")
        total += ln + 1
        if total > MAX_NAME:
            raise DnsError("name longer than 255 bytes")
        labels.append(buf[pos : pos + ln].decode("ascii", "replace"))
        pos += ln
    return ".".join(labels), (end if end >= 0 else pos), len(labels)


def parse(data: bytes | bytearray | memoryview) -> DnsMessage:
    """Decode one DNS message (UDP payload; for TCP strip the 2-byte length first).
    Never raises: problems are reported in ``DnsMessage.error``."""
    buf = bytes(data)
    msg = DnsMessage()
    if len(buf) < 12:
        msg.error = "message shorter than the 12-byte header"
        return msg
    ident, flags, qd, an, ns, ar = _HDR.unpack_from(buf, 0)
    msg.id = ident
    msg.response = bool(flags & 0x8000)
    msg.opcode = (flags >> 11) & 0xF
    msg.rcode = RCODE_NAMES.get(flags & 0xF, str(flags & 0xF))
    pos = 12
    try:
        for _ in range(min(qd, MAX_RECORDS)):
            name, pos = _name(buf, pos)
            if pos + 4 > len(buf):
                raise DnsError("truncated question")
            qtype, _qclass = _Q.unpack_from(buf, pos)
            pos += 4
            msg.questions.append((name, TYPE_NAMES.get(qtype, str(qtype))))
        for _ in range(min(an, MAX_RECORDS)):
            name, pos = _name(buf, pos)
            if pos + 10 > len(buf):
                raise DnsError("truncated resource record")
            rtype, _rclass, ttl, rdlen = _RR.unpack_from(buf, pos)
            pos += 10
            if pos + rdlen > len(buf):
                raise DnsError("record data runs past the end of the message")
            rdata = buf[pos : pos + rdlen]
            tname = TYPE_NAMES.get(rtype, str(rtype))
            if rtype == 1 and rdlen == 4:
                value = str(ipaddress.IPv4Address(rdata))
            elif rtype == 28 and rdlen == 16:
                value = str(ipaddress.IPv6Address(rdata))
            elif rtype == 5:
                value = _name(buf, pos)[0]
            else:
                value = rdata.hex()
            msg.answers.append(DnsAnswer(name, tname, ttl, value))
            pos += rdlen
    except DnsError as e:
        msg.error = str(e)
    return msg


def classes(data: bytes | bytearray | memoryview) -> tuple[list[int], list[int]]:
    """The class of each question, and of each resource record of every section (answer,
    authority, additional; not an OPT record, whose class field is a payload size), as far as
    the message reads (``parse`` keeps neither)."""
    lay = layout(data)
    return [q.cls for q in lay.questions], [r.cls for r in lay.records if r.type != RRType.OPT]


# Where each part of a message lies, for the detail tree (Wireshark's, with byte ranges) and
# the display-filter fields of every section (``parse`` keeps the answers only, as values).
@dataclass(init=False, slots=True, repr=False)
class DnsName:
    """A name in a message: its text ("" for the root), label count, and the bytes it takes
    where it stands (``start`` to ``end``: a compression pointer's two, not what they point to)."""

    __repr__ = dataclass_repr

    text: str
    labels: int
    start: int
    end: int

    def __init__(self, text: str, labels: int, start: int, end: int) -> None:
        self.text = text
        self.labels = labels
        self.start = start
        self.end = end


@dataclass(init=False, slots=True, repr=False)
class DnsQuestion:
    """A question: its name, type and class (``start`` to ``end``: the whole entry)."""

    __repr__ = dataclass_repr

    name: DnsName
    type: int
    cls: int
    start: int
    end: int

    def __init__(self, name: DnsName, type: int, cls: int, start: int, end: int) -> None:
        self.name = name
        self.type = type
        self.cls = cls
        self.start = start
        self.end = end


@dataclass(init=False, slots=True, repr=False)
class DnsRecord:
    """A resource record: its section (0 answer, 1 authority, 2 additional), owner name,
    type, class (an OPT record's: the UDP payload size), ttl (an OPT record's: extended rcode,
    version and flags), data (``rdata`` to ``end``), and where it starts."""

    __repr__ = dataclass_repr

    section: int
    name: DnsName
    type: int
    cls: int
    ttl: int
    rdata: int
    end: int
    start: int

    def __init__(self, section: int, name: DnsName, type: int, cls: int, ttl: int, rdata: int, end: int, start: int) -> None:
        self.section = section
        self.name = name
        self.type = type
        self.cls = cls
        self.ttl = ttl
        self.rdata = rdata
        self.end = end
        self.start = start


@dataclass(init=False, slots=True, repr=False)
class DnsLayout:
    """A message's header (``counts``: questions, answer, authority and additional records, as
    the header says) and every question and record that reads whole, in order; ``error``
    (with ``error_at``, the offset it was found at) where the message stops reading (at most
    ``MAX_RECORDS`` records a section are read)."""

    __repr__ = dataclass_repr

    id: int
    flags: int
    counts: tuple[int, int, int, int]
    questions: list[DnsQuestion]
    records: list[DnsRecord]
    error: str | None
    error_at: int

    def __init__(self, id: int = 0, flags: int = 0, counts: tuple[int, int, int, int] = (0, 0, 0, 0),
                 questions: list[DnsQuestion] = FACTORY, records: list[DnsRecord] = FACTORY, error: str | None = None,
                 error_at: int = -1) -> None:
        self.id = id
        self.flags = flags
        self.counts = counts
        self.questions = [] if questions is FACTORY else questions
        self.records = [] if records is FACTORY else records
        self.error = error
        self.error_at = error_at


def layout(data: bytes | bytearray | memoryview) -> DnsLayout:
    """Every part of one DNS message with its offsets (``DnsLayout``).  Never raises: a part
    that does not read stops the walk with ``error`` set."""
    buf = bytes(data)
    lay = DnsLayout()
    if len(buf) < 12:
        lay.error, lay.error_at = "message shorter than the 12-byte header", 0
        return lay
    ident, flags, qd, an, ns, ar = _HDR.unpack_from(buf, 0)
    lay.id, lay.flags, lay.counts = ident, flags, (qd, an, ns, ar)
    pos = 12
    try:
        for _ in range(min(qd, MAX_RECORDS)):
            start = pos
            text, pos, k = _name_labels(buf, pos)
            if pos + 4 > len(buf):
                raise DnsError("truncated question")
            qtype, qclass = _Q.unpack_from(buf, pos)
            pos += 4
            lay.questions.append(DnsQuestion(DnsName(text, k, start, pos - 4), qtype, qclass, start, pos))
        for section, count in enumerate((an, ns, ar)):
            for _ in range(min(count, MAX_RECORDS)):
                start = pos
                text, pos, k = _name_labels(buf, pos)
                if pos + 10 > len(buf):
                    raise DnsError("truncated resource record")
                rtype, rclass, ttl, rdlen = _RR.unpack_from(buf, pos)
                name = DnsName(text, k, start, pos)
                pos += 10
                if pos + rdlen > len(buf):
                    raise DnsError("record data runs past the end of the message")
                lay.records.append(DnsRecord(section, name, rtype, rclass, ttl, pos, pos + rdlen, start))
                pos += rdlen
    except DnsError as e:
        lay.error, lay.error_at = str(e), pos
    return lay
