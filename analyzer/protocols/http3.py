"""HTTP/3 in the detail tree: a frame's node points at its bytes inside the "Decrypted QUIC"
tab of the STREAM frame that carries them in the datagram."""
from __future__ import annotations

from typing import TYPE_CHECKING

from wirefall.analyzer.model import Frame
from wirefall.dissectors.http3 import settings_items
from wirefall.dissectors.registry import descriptor

from .quic import _varint  # (QUIC's variable-length integers: one reader for the QUIC and HTTP/3 detail)

if TYPE_CHECKING:
    from wirefall.analyzer.detail import Node

_CODES: dict[str, int] = {}  # Frame.type -> its first wire number in the descriptor's table
for _c, _n in descriptor("http3").type_names.items():
    _CODES.setdefault(_n, _c)


def _vlen(v: int) -> int:
    return 1 if v < 0x40 else 2 if v < 0x4000 else 4 if v < 0x40000000 else 8


def header_len(fr: Frame, data: bytes, pos: int) -> int:
    """Length of an HTTP/3 frame header (type and length varints): read from the decrypted
    bytes when they hold it (``pos`` >= 0), else the shortest encodings of its type and length."""
    if 0 <= pos < len(data):
        p = pos
        for _ in range(2):
            if p >= len(data):
                break
            p += 1 << (data[p] >> 6)
        else:
            return p - pos
    return _vlen(_CODES.get(fr.type, 0x21)) + _vlen(fr.length)


# tshark's stream type words (packet-http3.c http3_stream_types) by the dissector's stream_type
_STREAM_TYPES = {"control": (0x00, "Control Stream"), "push": (0x01, "Push Stream"),
                 "qpack_encoder": (0x02, "QPACK Encoder Stream"), "qpack_decoder": (0x03, "QPACK Decoder Stream")}


def frame_node(node: Node, fr: Frame) -> Node:
    """An HTTP/3 frame as tshark 4.0 shows it (``http3.*``): the stream's type before the
    first frame of a unidirectional stream (``Stream Type: Control Stream (0x0000000000000000)``),
    ``Type: HEADERS (0x0000000000000001)``, ``Length``; the payload's bytes and a SETTINGS frame's
    settings come with the bytes (``place_in_stream``).  The decoded header list (QPACK: tshark
    4.0 does not decode it) stays in view; wirefall's own facts in a ``[wirefall: …]`` node."""
    from wirefall.analyzer.detail import frame_facts_node, header_list_node

    f = fr.fields or {}
    st = _STREAM_TYPES.get(str(f.get("stream_type")))
    if st is not None and fr.offset == _vlen(st[0]):  # (the stream's first frame, right after its type)
        node.add(f"Stream Type: {st[1]} (0x{st[0]:016x})", abbrev="http3.stream_type", value=str(st[0]))
    code = _CODES.get(fr.type)
    if code is not None:
        node.add(f"Type: {fr.type} (0x{code:016x})", abbrev="http3.frame_type", value=str(code))
    node.add(f"Length: {fr.length}", abbrev="http3.frame_length", value=str(fr.length))
    if fr.headers:
        header_list_node(node, fr.headers)
    if fr.error:
        node.add(f"[Error: {fr.error}]")
    node.children.append(frame_facts_node(fr, fr.type, f))
    return node


def place_in_stream(fr: Frame, fn: Node, spans: list) -> None:
    """Point an HTTP/3 frame's node at its bytes in the "Decrypted QUIC" tab of the STREAM
    frame carrying them in this datagram (the first one that does)."""
    if fr.offset < 0:
        return
    for d, sid, off, ln, k, pos, r in spans:
        if (d, sid) != (fr.direction, fr.stream_id):
            continue
        hl = header_len(fr, r.data, pos + fr.offset - off if off <= fr.offset < off + ln else -1)
        s, e = max(fr.offset, off), min(fr.offset + hl + fr.length, off + ln)
        if s < e:
            fn.source, fn.start, fn.end = k, pos + s - off, pos + e - off
            if fr.offset >= off and fr.offset + hl + fr.length <= off + ln:  # (the whole frame here: its payload)
                if not any(c.abbrev == "http3.frame_type" for c in fn.children):  # (a reserved type: its number from the bytes)
                    _reserved_type_node(fn, r.data, pos + fr.offset - off, k)
                _payload_node(fn, r.data, pos + fr.offset - off + hl, fr.length, k)
                if fr.type == "SETTINGS":
                    settings_nodes(fn, fr, r.data, pos + fr.offset - off + hl, k)
            return


def _reserved_type_node(fn: Node, data: bytes, at: int, source: int) -> None:
    """``Type: Reserved (0x185ef4b55d)``: a frame type no HTTP/3 frame has (a GREASE one, RFC 9114
    s7.2.8), its number unpadded as tshark writes it, before the Length line."""
    from wirefall.analyzer.detail import Node

    try:
        t, q = _varint(data, at)
    except IndexError:
        return
    n = Node(f"Type: Reserved (0x{t:x})", [], at, q, "http3.frame_type", str(t))
    n.source = source
    i = next((i for i, c in enumerate(fn.children) if c.abbrev == "http3.frame_length"), len(fn.children))
    fn.children.insert(i, n)


def _payload_node(fn: Node, data: bytes, start: int, length: int, source: int) -> None:
    """``Frame Payload: <hex>`` (its first 36 bytes, as tshark's bytes fields) after the frame's
    Length line, with its bytes in the "Decrypted QUIC" tab ``source``."""
    from wirefall.analyzer.detail import Node

    b = bytes(data[start : start + length])
    if len(b) != length or not length:
        return
    # (http3.frame_payload: not a field of wirefall's filter, the line is named by none)
    n = Node(f"Frame Payload: {b[:36].hex()}{'…' if length > 36 else ''}", [], start, start + length)
    n.source = source
    at = next((i + 1 for i, c in enumerate(fn.children) if c.abbrev == "http3.frame_length"), len(fn.children))
    fn.children.insert(at, n)


# the settings tshark adds a field of its own for: (the identifier's word — packet-http3.c
# http3_settings_vals; 4.0 names no other, "Unknown" — the field's word, the field)
_TSHARK_SETTINGS = {0x01: ("Max Table Capacity", "Max Table Capacity", "http3.settings.qpack.max_table_capacity"),
                    0x06: ("Max Field Section Size", "Max header list size", "http3.settings.max_field_section_size"),
                    0x07: ("Blocked Streams", "Blocked Streams", "http3.settings.qpack.blocked_streams"),
                    0x08: ("Unknown", "Extended CONNECT", "http3.settings.extended_connect")}


def settings_nodes(fn: Node, fr: Frame, data: bytes, start: int, source: int) -> None:
    """One node per setting of a SETTINGS frame, in wire order (GREASE ones and repeats too),
    with tshark's fields (http3.settings.id / .value and the named ones) and their bytes in
    the "Decrypted QUIC" tab ``source`` (the payload begins at ``data[start]``)."""
    from wirefall.analyzer.detail import Node, insert_before_facts

    items = settings_items(fr.fields)
    p, end = start, start + fr.length
    nodes = []
    try:
        for ident, key, value in items:
            a, q = _varint(data, p)
            v, q2 = _varint(data, q)
            if (a, v) != (ident, value) or q2 > end:
                return  # (the bytes are not the frame's: no ranges rather than wrong ones)
            known = _TSHARK_SETTINGS.get(ident)
            if key.startswith("GREASE_"):  # (tshark's words for a reserved identifier, its number unpadded)
                sn = Node("Settings - GREASE", [], p, q2, "http3.settings", "")
                sn.add(f"Type: GREASE (0x{ident:x})", p, q, "http3.settings.id", str(ident))
            else:
                name = known[0] if known is not None else "Unknown"
                # (the value in the title where tshark has a field of its own for the setting)
                sn = Node(f"Settings - {name}: {value}" if known else f"Settings - {name}", [], p, q2, "http3.settings", "")
                sn.add(f"Settings Identifier: {name} (0x{ident:016x})", p, q, "http3.settings.id", str(ident))
            sn.add(f"Settings Value: {value}", q, q2, "http3.settings.value", str(value))
            if known is not None:
                sn.add(f"{known[1]}: {value}", q, q2, known[2], str(value))
            for x in sn.walk():
                x.source = source
            nodes.append(sn)
            p = q2
    except IndexError:
        return
    insert_before_facts(fn, nodes)
