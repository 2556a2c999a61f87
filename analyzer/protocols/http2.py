"""HTTP/2 in the packet list and the detail tree: ``HEADERS[1]: 200 OK`` (the status with its
reason phrase), ``Magic`` before the client's first frames, `` (text/css)`` after the DATA frame
that ends a response body, ``[TCP Window Full] , HEADERS…`` (tshark's separator after a
TCP-analysis prefix); the frame node with Wireshark's field names (``http2.*``) and the byte
ranges of the 9-byte frame header."""
from __future__ import annotations

from typing import TYPE_CHECKING

from wirefall.analyzer.info import exchange_by_id, header, media_text, status_text
from wirefall.analyzer.model import Analysis, Frame
from wirefall.dissectors.registry import descriptor

if TYPE_CHECKING:
    from wirefall.analyzer.detail import Node
    from wirefall.analyzer.info import InfoContext

TYPES = {n: c for c, n in descriptor("http2").type_names.items()}  # Frame.type -> wire number


def first_client_packets(analysis: Analysis) -> set[int]:
    """Packets carrying the client's first HTTP/2 frame of each connection (its connection
    preface, ``Magic``, is in front of it)."""
    frames = analysis.frames
    memo = analysis.__dict__.get("_wf_h2_first")
    if memo is not None and memo[0] == len(frames):
        return memo[1]
    seen: dict[int, int] = {}
    # (read only until every HTTP/2 connection's first client frame is found, near its start:
    # a reopened analysis unpacks its frames a chunk at a time, analyzer.cache)
    h2 = {c.id for c in analysis.connections if c.protocol in ("h2", "h2c")}
    for fr in frames:
        if fr.direction == 0 and fr.protocol in ("h2", "h2c") and fr.connection not in seen:
            seen[fr.connection] = fr.first_packet
            if h2.issubset(seen):
                break
    out = set(seen.values())
    analysis.__dict__["_wf_h2_first"] = (len(frames), out)
    return out


def _exchange_of_stream(analysis: Analysis, fr: Frame):
    memo = analysis.__dict__.get("_wf_ex_by_stream")
    exs = analysis.exchanges
    if memo is None or memo[0] != len(exs):
        memo = (len(exs), {(e.connection, e.stream_id): e for e in exs})
        analysis.__dict__["_wf_ex_by_stream"] = memo
    return memo[1].get((fr.connection, fr.stream_id))


def frame_info(analysis: Analysis, fr: Frame) -> str:
    """tshark's Info of one HTTP/2 frame."""
    s = f"{fr.type}[{fr.stream_id}]" if fr.stream_id is not None else fr.type
    if fr.headers:
        m, p, st = header(fr.headers, ":method"), header(fr.headers, ":path"), header(fr.headers, ":status")
        if m:
            s += f": {m} {p or ''}".rstrip()
        elif st:
            s += f": {status_text(st)}"
    trailers = fr.type == "HEADERS" and fr.headers and not any(str(k).startswith(":") for k, _ in fr.headers)
    if fr.flags & 0x1 and (fr.type == "DATA" or trailers):  # END_STREAM: tshark dissects the body and names its type
        e = exchange_by_id(analysis, (fr.fields or {}).get("exchange"))
        if e is None:
            e = _exchange_of_stream(analysis, fr)
        if e is not None:
            ct = e.content_type if fr.direction == 1 else header(getattr(e, "request_headers", None), "content-type")
            s += media_text(ct) or ""
    if fr.error:
        s += " [error]"
    return s


def info(ctx: InfoContext, fr: Frame) -> str:
    s = frame_info(ctx.analysis, fr)
    if "h2" not in ctx.memo:
        ctx.memo["h2"] = True
        ctx.comma_after_prefix = True  # tshark: "[TCP Window Full] , HEADERS[1]"
        if fr.direction == 0 and ctx.n in first_client_packets(ctx.analysis):
            return "Magic, " + s
    return s


def frame_node(node: Node, fr: Frame) -> Node:
    """An HTTP/2 frame with Wireshark's field names (http2.*)."""
    from wirefall.analyzer.detail import flag_names, value_nodes

    fl = flag_names(fr)
    node.add(f"Length: {fr.length}", abbrev="http2.length", value=str(fr.length))
    t = TYPES.get(fr.type)
    node.add(f"Type: {fr.type} ({t if t is not None else '?'})", abbrev="http2.type", value=str(t) if t is not None else fr.type)
    node.add(f"Flags: 0x{fr.flags:02x}{' (' + fl + ')' if fl else ''}", abbrev="http2.flags", value=f"0x{fr.flags:02x}")
    node.add(f"Stream Identifier: {fr.stream_id}", abbrev="http2.streamid", value=str(fr.stream_id))
    node.add(f"Direction: {'client → server' if fr.direction == 0 else 'server → client'}")
    if fr.first_packet and fr.first_packet != fr.packet:
        node.add(f"[First byte in packet {fr.first_packet}, last byte in packet {fr.packet}]")
    if fr.error:
        node.add(f"[Error: {fr.error}]")
    if fr.headers:
        hn = node.add(f"Header list ({len(fr.headers)} headers)")
        for k, v in fr.headers:
            h = hn.add(f"Header: {k}: {v}")
            h.add(f"Name: {k}", abbrev="http2.header.name", value=k)
            h.add(f"Value: {v}", abbrev="http2.header.value", value=v)
    for k, v in (fr.fields or {}).items():
        value_nodes(node, k, v)
    return node


_HEADER_SPANS = {"http2.length": (0, 3), "http2.type": (3, 4), "http2.flags": (4, 5), "http2.streamid": (5, 9)}


def header_ranges(fn: Node, source: int, start: int, end: int) -> None:
    """Byte ranges of the HTTP/2 frame header fields, the frame starting at ``start``."""
    if end - start < 9:
        return
    for c in fn.children:
        if c.abbrev in _HEADER_SPANS:
            a, b = _HEADER_SPANS[c.abbrev]
            c.source, c.start, c.end = source, start + a, start + b
