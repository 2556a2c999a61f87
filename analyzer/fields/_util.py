"""Helpers the per-protocol field modules share."""
from __future__ import annotations

from typing import Any
from collections.abc import Callable, Iterable

from .types import NONE, PROTO_OPAQUE, Field


def packet_field(name: str, type_: str, fn: Callable[[Any], list], desc: str, **kw) -> Field:
    """A field read from the packet itself (its bytes, headers or index entry)."""
    return Field(name, type_, fn, desc, **kw)


def frame_field(name: str, type_: str, match: Callable[[Any], bool], fn: Callable[[Any, Any], Iterable], desc: str, **kw) -> Field:
    """A field of the analysis frames of one protocol (``match(frame)``): its values on a
    packet are those of the frames that complete there, in order; ``fn(frame, ctx)`` gives
    one frame's values (``ctx`` is the PacketContext, or None when a frame is filtered on its
    own, as by ``frames -Y``)."""

    def get(pv) -> list:
        out: list = []
        ctx = pv.ctx
        for fr in pv.frames:
            if match(fr):
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


def label(name: str, match: Callable[[Any], bool], fn: Callable[[Any, Any], bool], desc: str) -> Field:
    """An FT_NONE field: present on frames ``match`` accepts where ``fn(frame, ctx)``."""
    return frame_field(name, NONE, match, lambda fr, ctx: [True] if fn(fr, ctx) else [], desc)


def header_values(headers, name: str) -> list[str]:
    name = name.lower()
    return [v for k, v in headers or () if k.lower() == name]


def to_int(v) -> int | None:
    try:
        return int(str(v).split()[0])
    except (ValueError, IndexError):
        return None
