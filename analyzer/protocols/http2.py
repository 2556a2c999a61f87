"""HTTP/2 in the packet list and the detail tree: ``HEADERS[1]: 200 OK`` (the status with its
reason phrase), ``Magic`` before the client's first frames, `` (text/css)`` after the DATA frame
that ends a response body, ``[TCP Window Full] , HEADERS…`` (tshark's separator after a
TCP-analysis prefix); the frame node with Wireshark's field names (``http2.*``) and the byte
ranges of the 9-byte frame header."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wirefall.analyzer.info import exchange_by_id, frame_text, header, media_text, status_text
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


def type_code(fr: Frame) -> int | None:
    """The frame's type number: a known type's, or an unknown one's (``UNKNOWN_0xNN``)."""
    t = TYPES.get(fr.type)
    if t is None:
        u = (fr.fields or {}).get("unknown_type")
        if isinstance(u, int):
            return u
        if fr.type.startswith("UNKNOWN_0x"):
            try:
                return int(fr.type[10:], 16)
            except ValueError:
                return None
    return t


def type_text(fr: Frame) -> str:
    """The frame's type as tshark's Info names it: ``Unknown type (250)`` for a type it does not know."""
    if fr.type in TYPES:
        return fr.type
    t = type_code(fr)
    return f"Unknown type ({t})" if t is not None else fr.type


def summary(fr: Frame) -> str:
    """One frame in frame lists and the tree's frame line: ``analyzer.detail``'s generic form
    (``HEADERS[1]: GET /``, ``DATA[3]``), a type tshark does not know named as it names it
    (``Unknown type (250)[0]``)."""
    return frame_text(fr, type_text(fr))


def frame_info(analysis: Analysis, fr: Frame) -> str:
    """tshark's Info of one HTTP/2 frame."""
    name = type_text(fr)
    s = f"{name}[{fr.stream_id}]" if fr.stream_id is not None else name
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
    t = type_code(fr)
    known = fr.type in TYPES
    node.add(f"Type: {fr.type if known else 'Unknown'} ({t if t is not None else '?'})", abbrev="http2.type",
             value=str(t) if t is not None else fr.type)
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
    fields = fr.fields or {}
    skip: set[str] = set()
    if fr.type == "PRIORITY" or fr.type == "HEADERS" and fr.flags & 0x20:
        _priority_nodes(node, fields, skip)
    if fr.type == "SETTINGS":
        _settings_nodes(node, fields, skip)
    if fr.type == "GOAWAY" and "debug_data" in fields:
        _debug_data_node(node, fields, skip)
    if fr.type not in TYPES and "unknown_type" in fields:
        skip.add("unknown_type")  # (the Type line says it)
    for k, v in fields.items():
        if k not in skip:
            value_nodes(node, k, v)
    return node


def _priority_nodes(node: Node, fields: Mapping[str, Any], skip: set[str]) -> None:
    """Exclusive, stream dependency and weight, with tshark's names: ``http2.headers.weight`` is
    the byte sent, ``weight_real`` one more (the dissector keeps the latter as ``weight``)."""
    ex, dep, w = fields.get("exclusive"), fields.get("depends_on"), fields.get("weight")
    if ex is None or dep is None or not isinstance(w, int):
        return
    node.add(f"Exclusive: {'True' if ex else 'False'}", abbrev="http2.exclusive", value="1" if ex else "0")
    node.add(f"Stream Dependency: {dep}", abbrev="http2.stream_dependency", value=str(dep))
    node.add(f"Weight: {w - 1}", abbrev="http2.headers.weight", value=str(w - 1))
    node.add(f"Weight real: {w}", abbrev="http2.headers.weight_real", value=str(w))
    skip.update(("exclusive", "depends_on", "weight"))


_SETTING_FIELDS = {1: "header_table_size", 2: "enable_push", 3: "max_concurrent_streams", 4: "initial_window_size",
                   5: "max_frame_size", 6: "max_header_list_size", 8: "extended_connect"}  # tshark 4.0's http2.settings.*


def _settings_nodes(node: Node, fields: Mapping[str, Any], skip: set[str]) -> None:
    """Each setting in wire order (a repeated identifier each time), as tshark lists them."""
    from wirefall.dissectors.http2 import SETTINGS_NAMES

    items = fields.get("settings_list")
    if not isinstance(items, list):
        return
    for ident, value in items:
        name = SETTINGS_NAMES.get(ident, f"0x{ident:x}")
        sn = node.add(f"Settings - {name} : {value}", abbrev="http2.settings")
        sn.add(f"Settings Identifier: {name} ({ident})", abbrev="http2.settings.id", value=str(ident))
        sn.add(f"{name}: {value}", abbrev=f"http2.settings.{_SETTING_FIELDS.get(ident, 'unknown')}", value=str(value))
    skip.update(("settings", "settings_list"))


def _debug_data_node(node: Node, fields: Mapping[str, Any], skip: set[str]) -> None:
    """GOAWAY debug data: its text (bytes that are not UTF-8 as ``\\xNN``), with its length and,
    when the dissector kept only its start, how much of it is shown."""
    text = fields.get("debug_data")
    total = fields.get("debug_data_length")
    shown = text if isinstance(text, str) and len(text) <= 400 else f"{str(text)[:400]}…"
    cut = " (truncated)" if fields.get("debug_data_truncated") else ""
    size = f" [{total} bytes{cut}]" if isinstance(total, int) else ""
    node.add(f"Additional Debug Data: {shown}{size}", abbrev="http2.goaway.addata")
    skip.update(("debug_data", "debug_data_length", "debug_data_truncated", "debug_data_escaped"))


_HEADER_SPANS = {"http2.length": (0, 3), "http2.type": (3, 4), "http2.flags": (4, 5), "http2.streamid": (5, 9)}


def header_ranges(fn: Node, source: int, start: int, end: int) -> None:
    """Byte ranges of the HTTP/2 frame header fields, the frame starting at ``start``."""
    if end - start < 9:
        return
    for c in fn.children:
        if c.abbrev in _HEADER_SPANS:
            a, b = _HEADER_SPANS[c.abbrev]
            c.source, c.start, c.end = source, start + a, start + b
