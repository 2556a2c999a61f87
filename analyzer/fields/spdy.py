"""``spdy``: SPDY/2, 3 and 3.1 frames (over TLS with NPN/ALPN, or cleartext)."""
from __future__ import annotations

import re

from wirefall.dissectors.spdy import CONTROL_NAMES

from ._util import frame_field as F, frames_present
from .types import BOOL, BYTES, NONE, STRING, UINT, Protocol

TYPE_CODES = {v: k for k, v in CONTROL_NAMES.items()}
TYPE_CODES["DATA"] = 0


def _is_spdy(fr) -> bool:
    return fr.protocol.startswith("spdy")


def _type(fr, ctx):
    c = TYPE_CODES.get(fr.type)
    if c is None:
        m = re.fullmatch(r"UNKNOWN_0x([0-9a-fA-F]+)", fr.type)
        c = int(m.group(1), 16) if m else None
    return [c] if c is not None else []


_NO_STREAM = ("SETTINGS", "PING", "GOAWAY", "NOOP")  # tshark shows no stream id on these
_FIN_TYPES = frozenset({"DATA", "SYN_STREAM", "SYN_REPLY", "HEADERS"})  # the types that define FLAG_FIN


def _known(fr) -> bool:
    """A DATA frame or a control frame of a type tshark knows: of one it does not, tshark shows
    the version and type, then stops (no flags, no length)."""
    return fr.type == "DATA" or fr.type in TYPE_CODES


def _of_type(ftype: str):
    return lambda fr: _is_spdy(fr) and fr.type == ftype


def _value(key: str):
    return lambda fr, ctx: [v] if isinstance(v := (fr.fields or {}).get(key), int) else []


def _flags(fr, ctx):
    if not _known(fr):
        return []
    if fr.type != "SETTINGS":
        return [fr.flags]
    return [fr.flags] + [e["flags"] for e in (fr.fields or {}).get("settings") or () if isinstance(e, dict) and isinstance(e.get("flags"), int)]


def _is_data(fr) -> bool:
    return _is_spdy(fr) and fr.type == "DATA"


def _data(fr, ctx):
    """A DATA frame's payload, read again from the (decrypted) stream."""
    if ctx is None or fr.offset < 0:
        return []
    from .http2 import _plain

    b = _plain(ctx, fr, fr.offset + 8, fr.offset + 8 + fr.length)
    return [b] if b is not None else []


PROTOCOL = Protocol("spdy", "SPDY", frames_present("spdy", _is_spdy, "a SPDY frame"), [
    F("spdy.streamid", UINT, _is_spdy, lambda fr, ctx: [fr.stream_id] if fr.stream_id is not None and fr.type not in _NO_STREAM else [],
      "stream identifier (not on SETTINGS, PING, GOAWAY, NOOP: tshark shows none there)", size=4),
    F("spdy.data", BYTES, _is_data, _data, "a DATA frame's payload"),
    F("spdy.type", UINT, lambda fr: _is_spdy(fr) and fr.type != "DATA", _type, "control frame type (1 SYN_STREAM, 2 SYN_REPLY, 3 RST_STREAM, 4 SETTINGS, 6 PING, 7 GOAWAY, 8 HEADERS, 9 WINDOW_UPDATE); "
      "none on a DATA frame, as tshark (spdy.data there)", size=2),
    F("spdy.flags", UINT, _is_spdy, _flags, "frame flags (not on a control frame of an unknown type); then, as tshark names them "
      "so too, each SETTINGS entry's flags (1 PERSIST_VALUE, 2 PERSISTED)", size=1),
    F("spdy.flags.fin", BOOL, _is_spdy, lambda fr, ctx: [fr.flags & 1] if fr.type in _FIN_TYPES else [],
      "FLAG_FIN (DATA, SYN_STREAM, SYN_REPLY, HEADERS: the types that define it, as tshark shows it)"),
    F("spdy.length", UINT, _is_spdy, lambda fr, ctx: [fr.length] if _known(fr) else [], "frame length (not on a control frame of an unknown type)", size=3),
    F("spdy.priority", UINT, _of_type("SYN_STREAM"), _value("priority"),
      "SYN_STREAM priority (SPDY/3: 0..7, 0 highest; SPDY/2: 0..3, which tshark 4.0 does not decode)", size=2),
    F("spdy.rst_stream_status", UINT, _of_type("RST_STREAM"), _value("status"),
      "RST_STREAM status code (1 PROTOCOL_ERROR … 11 FRAME_TOO_LARGE; SPDY/2's too, which tshark 4.0 does not decode)", size=4),
    # one item per header, as tshark adds one (count(spdy.header) counts the headers, not the frames)
    F("spdy.header", NONE, _is_spdy, lambda fr, ctx: [True] * len(fr.headers or ()), "a decoded header (one per header)"),
    F("spdy.header.name", STRING, _is_spdy, lambda fr, ctx: [k for k, _ in fr.headers or ()], "decoded header name"),
    F("spdy.header.value", STRING, _is_spdy, lambda fr, ctx: [v for _, v in fr.headers or ()], "decoded header value"),
])
