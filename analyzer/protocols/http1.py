"""HTTP/1.x in the packet list: a message is shown on the packet where it ends (tshark
reassembles the body before it dissects the message), as ``GET /x HTTP/1.1 `` (the trailing
space is tshark's) or ``HTTP/1.1 200 OK `` followed by `` (text/css)`` — the media type, or the
image dissector's name (``PNG``, ``JPEG JFIF image``) — when it has a body; the segments before
its end say ``[TCP segment of a reassembled PDU]`` (over TLS: ``[TLS segment of a reassembled
PDU]``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from wirefall.analyzer.info import exchange_by_id, header, media_text
from wirefall.analyzer.model import Analysis, Frame

if TYPE_CHECKING:
    from wirefall.analyzer.info import InfoContext


def summary(fr: Frame) -> str:
    f = fr.fields or {}
    if f.get("start_line"):
        return str(f["start_line"])
    if f.get("method"):
        return f"{f['method']} {f.get('target') or f.get('path') or ''} {fr.protocol.upper()}".strip()
    if f.get("status") is not None:
        return f"{fr.protocol.upper()} {f['status']} {f.get('reason', '')}".strip()
    return fr.type


def start_line(fr: Frame) -> str | None:
    f = fr.fields or {}
    if fr.type == "REQUEST" and f.get("method"):
        return f"{f['method']} {f.get('target') or ''} {f.get('version') or fr.protocol.upper()}"
    if fr.type == "RESPONSE" and f.get("status") is not None:
        return f"{f.get('version') or fr.protocol.upper()} {f['status']} {f.get('reason', '')}".rstrip()
    return None


def end_packet(analysis: Analysis, fr: Frame) -> int | None:
    """The packet where the message whose head is ``fr`` ends (its body's last byte)."""
    f = fr.fields or {}
    if fr.type == "RESPONSE" and isinstance(f.get("status"), int) and 100 <= f["status"] < 200:
        return fr.packet  # an interim response has no body (the exchange's end is the final response's)
    e = exchange_by_id(analysis, f.get("exchange"))
    if e is None:
        return None
    return e.request_end_packet if fr.type == "REQUEST" else e.response_end_packet


def _body_media(analysis: Analysis, head: Frame) -> str | None:
    e = exchange_by_id(analysis, (head.fields or {}).get("exchange"))
    if e is None:
        return None
    if head.type == "RESPONSE":
        return media_text(e.content_type or header(getattr(e, "response_headers", None), "content-type"))
    return media_text(header(getattr(e, "request_headers", None), "content-type"))


def messages_info(analysis: Analysis, n: int, frames: list[Frame], over_tls: bool = False) -> tuple[str, bool]:
    """(Info of the HTTP/1 messages ending on packet ``n``, whether a message's body ends
    later).  ``frames``: the HTTP/1 frames completing on ``n``."""

    parts: list[str] = []
    pending = False
    for fr in frames:
        if fr.type in ("REQUEST", "RESPONSE"):
            end = end_packet(analysis, fr)
            if end is not None and end > n:
                pending = True  # its body ends later: shown there, in full
                line = start_line(fr)
                if line is not None and not over_tls:
                    parts.append(line + " ")  # (tshark's HTTP writes the head it read before asking TCP for more)
                continue
            line = start_line(fr)
            if line is None:
                continue
            has_body = any(b.type == "BODY" and (b.fields or {}).get("exchange") == (fr.fields or {}).get("exchange")
                           and b.direction == fr.direction for b in frames)
            parts.append(line + " " + (_body_media(analysis, fr) or "" if has_body else ""))
        elif fr.type == "BODY":
            ex = (fr.fields or {}).get("exchange")
            if any(h.type in ("REQUEST", "RESPONSE") and (h.fields or {}).get("exchange") == ex and h.direction == fr.direction
                   for h in frames):
                continue  # (shown with its head, above)
            head = _head_of(analysis, fr, ex)
            line = start_line(head) if head is not None else None
            if head is not None and line is not None:
                parts.append(line + " " + (_body_media(analysis, head) or ""))
    return "".join(parts), pending


def _head_of(analysis: Analysis, body: Frame, ex) -> Frame | None:
    """The head (request or final response) of a body frame's message: on the packet where the
    body begins, as most are, or where its message began (an upload sent after 100 Continue
    begins after the head's packet, and after the interim response)."""
    from wirefall.analyzer.detail import frames_on_packet

    e = exchange_by_id(analysis, ex)
    where = [body.first_packet]
    if e is not None:
        where.append(e.request_start_packet if body.direction == 0 else e.response_headers_end_packet)
    for p in where:
        if p is None:
            continue
        for h in frames_on_packet(analysis, p):
            f = h.fields or {}
            if h.type in ("REQUEST", "RESPONSE") and h.direction == body.direction and f.get("exchange") == ex and not f.get("interim"):
                return h
    return None


def info(ctx: InfoContext, fr: Frame) -> str:
    """Every HTTP/1 message ending on the packet, written at the first of them (tshark's HTTP
    dissector writes the column once per reassembled PDU); "" at the others."""
    if "http1" in ctx.memo:
        return ""
    mine = [f for f in ctx.done if f.protocol.startswith("http/")]
    text, pending = messages_info(ctx.analysis, ctx.n, mine, ctx.over_tls)
    ctx.memo["http1"] = True
    ctx.pending = ctx.pending or pending
    return text


def continues(ctx: InfoContext) -> bool:
    """A body of a message on this packet ends on a later one."""
    return any(fr.packet > ctx.n and fr.protocol.startswith("http/") and fr.type == "BODY" for fr in ctx.frames)
