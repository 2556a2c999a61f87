"""Helpers the per-protocol field modules share."""
from __future__ import annotations

import re
from typing import Any
from collections.abc import Callable, Iterable

from .types import NONE, PROTO_OPAQUE, STRING, UINT, Field


def packet_field(name: str, type_: str, fn: Callable[[Any], list], desc: str, **kw) -> Field:
    """A field read from the packet itself (its bytes, headers or index entry)."""
    return Field(name, type_, fn, desc, **kw)


def frame_field(name: str, type_: str, match: Callable[[Any], bool], fn: Callable[[Any, Any], Iterable], desc: str,
                shown: Callable[[Any], bool] | None = None, **kw) -> Field:
    """A field of the analysis frames of one protocol (``match(frame)``): its values on a
    packet are those of the frames that complete there, in order; ``fn(frame, ctx)`` gives
    one frame's values (``ctx`` is the PacketContext, or None when a frame is filtered on its
    own, as by ``frames -Y``).  ``shown(frame)``: whether a packet shows the frame's fields
    at all, where tshark shows fewer frames than wirefall has (HTTP/3: only the frames a
    STREAM frame holds whole); ``frames -Y`` still sees every frame ``match`` accepts."""

    def get(pv) -> list:
        out: list = []
        ctx = pv.ctx
        for fr in pv.frames:
            if match(fr) and (shown is None or shown(fr)):
                out.extend(fn(fr, ctx))
        return out

    def frame(fr) -> list:
        return list(fn(fr, None)) if match(fr) else []

    return Field(name, type_, get, desc, frame=frame, **kw)


def frames_present(name: str, match: Callable[[Any], bool], desc: str, type_: str = PROTO_OPAQUE, **kw) -> Field:
    """Present where a frame ``match`` accepts completes."""

    def get(pv) -> list:
        return [True] if any(match(fr) for fr in pv.frames) else []

    def frame(fr) -> list:
        return [True] if match(fr) else []

    return Field(name, type_, get, desc, frame=frame, **kw)


def label(name: str, match: Callable[[Any], bool], fn: Callable[[Any, Any], bool], desc: str, **kw) -> Field:
    """An FT_NONE field: present on frames ``match`` accepts where ``fn(frame, ctx)``."""
    return frame_field(name, NONE, match, lambda fr, ctx: [True] if fn(fr, ctx) else [], desc, **kw)


def fields_value(key: str) -> Callable[[Any, Any], list]:
    """A frame field's extractor: the dissector's ``fields[key]``, where it is set."""
    return lambda fr, ctx: [v] if (v := (fr.fields or {}).get(key)) is not None else []


def header_values(headers, name: str) -> list[str]:
    name = name.lower()
    return [v for k, v in headers or () if k.lower() == name]


def to_int(v) -> int | None:
    try:
        return int(str(v).split()[0])
    except (ValueError, IndexError):
        return None


PSEUDO = {"path", "method", "status", "authority", "scheme", "protocol"}
# the headers read as numbers, with tshark's size of each (http2.headers.status FT_UINT16, the others FT_UINT64)
NUMERIC_HEADERS = {"status": 2, "content_length": 8, "age": 8, "max_forwards": 8}
# the ``<proto>.headers.<name>`` fields listed (and documented) by name; any other name works too
NAMED_HEADERS = ("path", "method", "status", "authority", "scheme", "content_type", "content_length", "user_agent", "server",
                 "cookie", "set_cookie", "referer", "location", "content_encoding")


class header_family:
    """The decoded-header fields of a protocol whose frames carry header lists (``fr.headers``:
    HTTP/2, HTTP/3), by Wireshark's names: ``<proto>.header`` (a decoded field), ``.header.name``,
    ``.header.value``, and ``<proto>.headers.<name>`` — the header ``name`` (``:name`` for the
    pseudo headers, ``_`` for ``-``; status, content_length, age, max_forwards as numbers)."""

    def __init__(self, proto: str, match: Callable[[Any], bool], note: str = "", since: str = "",
                 shown: Callable[[Any], bool] | None = None):
        self.proto, self.match, self.note, self.since, self.shown = proto, match, note, since, shown

    def generic(self) -> list[Field]:
        p, m, sh, kw = self.proto, self.match, self.shown, {"note": self.note, "since": self.since}
        # (one item per header field, as tshark adds one: count(http2.header) counts the headers)
        return [frame_field(f"{p}.header", NONE, m, lambda fr, ctx: [True] * len(fr.headers or ()), "a decoded header field",
                            shown=sh, **kw),
                frame_field(f"{p}.header.name", STRING, m, lambda fr, ctx: [k for k, _ in fr.headers or ()], "decoded header name",
                            shown=sh, **kw),
                frame_field(f"{p}.header.value", STRING, m, lambda fr, ctx: [v for _, v in fr.headers or ()], "decoded header value",
                            shown=sh, **kw)]

    def named(self) -> list[Field]:
        return [self._field(s) for s in NAMED_HEADERS]

    def field(self, suffix: str) -> Field | None:
        """``<proto>.headers.<suffix>`` for any header name (the prefix's factory)."""
        if not re.fullmatch(r"[a-z0-9_]+", suffix):
            return None
        return self._field(suffix)

    def _field(self, suffix: str) -> Field:
        name = (":" + suffix) if suffix in PSEUDO else suffix.replace("_", "-")
        fname = f"{self.proto}.headers.{suffix}"
        if suffix in NUMERIC_HEADERS:
            def fn(fr, ctx):
                return [v for v in (to_int(x) for x in header_values(fr.headers, name)) if v is not None]
            return frame_field(fname, UINT, self.match, fn, f"decoded header {name} (as a number)", note=self.note, since=self.since,
                               shown=self.shown, size=NUMERIC_HEADERS[suffix])
        return frame_field(fname, STRING, self.match, lambda fr, ctx: header_values(fr.headers, name), f"decoded header {name}",
                           note=self.note, since=self.since, shown=self.shown)
