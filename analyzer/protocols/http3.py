"""HTTP/3 in the detail tree: a frame's node points at its bytes inside the "Decrypted QUIC"
tab of the STREAM frame that carries them in the datagram."""
from __future__ import annotations

from typing import TYPE_CHECKING

from wirefall.analyzer.model import Frame
from wirefall.dissectors.http3 import SETTINGS_NAMES, settings_items
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
            if fr.type == "SETTINGS" and fr.offset >= off and fr.offset + hl + fr.length <= off + ln:
                settings_nodes(fn, fr, r.data, pos + fr.offset - off + hl, k)
            return


# tshark's names of the settings it knows (packet-http3.c http3_settings_vals)
_TSHARK_SETTINGS = {0x01: ("Max Table Capacity", "http3.settings.qpack.max_table_capacity"),
                    0x06: ("Max Field Section Size", "http3.settings.max_field_section_size"),
                    0x07: ("Blocked Streams", "http3.settings.qpack.blocked_streams"),
                    0x08: ("Extended CONNECT", "http3.settings.extended_connect")}


def settings_nodes(fn: Node, fr: Frame, data: bytes, start: int, source: int) -> None:
    """One node per setting of a SETTINGS frame, in wire order (GREASE ones and repeats too),
    with tshark's fields (http3.settings.id / .value and the named ones) and their bytes in
    the "Decrypted QUIC" tab ``source`` (the payload begins at ``data[start]``)."""
    from wirefall.analyzer.detail import Node

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
            name = SETTINGS_NAMES.get(ident) or ("GREASE" if key.startswith("GREASE_") else "Unknown")
            sn = Node(f"Setting: {name} (0x{ident:x}) = {value}", [], p, q2, "http3.settings", "")
            sn.add(f"Settings Identifier: {name} (0x{ident:x})", p, q, "http3.settings.id", str(ident))
            sn.add(f"Settings Value: {value}", q, q2, "http3.settings.value", str(value))
            if known is not None:
                sn.add(f"{known[0]}: {value}", q, q2, known[1], str(value))
            for x in sn.walk():
                x.source = source
            nodes.append(sn)
            p = q2
    except IndexError:
        return
    fn.children.extend(nodes)
