"""``http2``: HTTP/2 frames (over TLS, or cleartext h2c), one per frame on the packet where
the frame completes, as tshark shows them; decoded header fields on the HEADERS,
PUSH_PROMISE or CONTINUATION frame where their encoding ended."""
from __future__ import annotations

import re

from wirefall.dissectors.http2 import FRAME_NAMES

from ._util import frame_field as F, frames_present, header_values, label, to_int
from .types import STRING, UINT, Field, Protocol

TYPE_CODES = {v: k for k, v in FRAME_NAMES.items()}
PSEUDO = {"path", "method", "status", "authority", "scheme", "protocol"}
NUMERIC_HEADERS = {"status", "content_length", "age", "max_forwards"}


def _is_h2(fr) -> bool:
    return fr.protocol in ("h2", "h2c")


def _type(fr, ctx):
    c = TYPE_CODES.get(fr.type)
    if c is None:
        m = re.fullmatch(r"UNKNOWN_0x([0-9a-fA-F]+)", fr.type)
        c = int(m.group(1), 16) if m else None
    return [c] if c is not None else []


def _weight(real: bool):
    def fn(fr, ctx):
        w = (fr.fields or {}).get("weight")
        return [w if real else w - 1] if isinstance(w, int) and fr.type == "HEADERS" and fr.flags & 0x20 else []
    return fn


def header_field(suffix: str) -> Field | None:
    """``http2.headers.<name>``: the decoded header ``name`` (``:name`` for the pseudo
    headers path, method, status, authority, scheme; ``_`` stands for ``-``)."""
    if not re.fullmatch(r"[a-z0-9_]+", suffix):
        return None
    return _header_field(suffix)


def _header_field(suffix: str) -> Field:
    """``header_field`` for a suffix known to be valid."""
    name = (":" + suffix) if suffix in PSEUDO else suffix.replace("_", "-")
    if suffix in NUMERIC_HEADERS:
        def fn(fr, ctx):
            return [v for v in (to_int(x) for x in header_values(fr.headers, name)) if v is not None]
        return F(f"http2.headers.{suffix}", UINT, _is_h2, fn, f"decoded header {name} (as a number)")
    return F(f"http2.headers.{suffix}", STRING, _is_h2, lambda fr, ctx: header_values(fr.headers, name), f"decoded header {name}")


PROTOCOL = Protocol("http2", "HTTP/2", frames_present("http2", _is_h2, "an HTTP/2 frame"), [
    F("http2.streamid", UINT, _is_h2, lambda fr, ctx: [fr.stream_id] if fr.stream_id is not None else [], "stream identifier"),
    F("http2.type", UINT, _is_h2, _type, "frame type (0 DATA, 1 HEADERS, 3 RST_STREAM, 4 SETTINGS, …; names work too: http2.type == HEADERS)", names=TYPE_CODES),
    F("http2.flags", UINT, _is_h2, lambda fr, ctx: [fr.flags], "frame flags (http2.flags & 0x01: END_STREAM)"),
    F("http2.length", UINT, _is_h2, lambda fr, ctx: [fr.length], "frame payload length"),
    label("http2.header", _is_h2, lambda fr, ctx: bool(fr.headers), "a decoded header field"),
    F("http2.header.name", STRING, _is_h2, lambda fr, ctx: [k for k, _ in fr.headers or ()], "decoded header name"),
    F("http2.header.value", STRING, _is_h2, lambda fr, ctx: [v for _, v in fr.headers or ()], "decoded header value"),
    F("http2.headers.weight", UINT, _is_h2, _weight(False), "priority weight as sent (0..255)"),
    F("http2.headers.weight_real", UINT, _is_h2, _weight(True), "priority weight (1..256)"),
    *[_header_field(s) for s in ("path", "method", "status", "authority", "scheme", "content_type", "content_length",
                               "user_agent", "server", "cookie", "set_cookie", "referer", "location", "content_encoding")],
], prefixes={"http2.headers.": header_field})
