"""HTTP/3 in the detail tree: a frame's node points at its bytes inside the "Decrypted QUIC"
tab of the STREAM frame that carries them in the datagram."""
from __future__ import annotations

from typing import TYPE_CHECKING

from wirefall.analyzer.model import Frame
from wirefall.dissectors.registry import descriptor

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
            return
