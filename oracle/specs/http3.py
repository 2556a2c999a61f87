"""HTTP/3 as tshark shows it: frame type and length per STREAM frame, with what tshark 4.0 cannot reassemble set aside.

A ``Spec`` (``oracle.spec``) registered on import; ``oracle.crosscheck`` imports this module
for the ``http3`` registry descriptor."""
from __future__ import annotations

import bisect

from wirefall.analyzer.model import Analysis, Frame
from wirefall.dissectors.registry import descriptor
from wirefall.oracle.specs.quic import _QUIC_TRIAL, _quic_trial_conns
from wirefall.oracle.spec import (
    Entry,
    Spec,
    TFrame,
    _as_list,
    _first,
    _oracle,
    _ports,
    register,
)

# -- HTTP/3 ----------------------------------------------------------------------------------
# tshark 4.0 neither decodes QPACK (headers are not compared here; tests/test_quic.py checks
# them against the clients' logs) nor reassembles HTTP/3 over QUIC streams:
# - an HTTP/3 frame whose bytes span several STREAM frames is not shown at all (neither where
#   it starts nor where it ends): such wirefall frames (first byte in another packet than the
#   last) are set aside and counted; every frame inside one STREAM frame is compared by type
#   and length, at its packet;
# - a STREAM frame that repeats bytes already received (a retransmission) is dissected again,
#   and one that arrives before earlier bytes of its stream (out of order) is parsed as if it
#   began with a frame header, giving duplicate or invented frames. In a packet holding such a
#   STREAM frame (found from tshark's own QUIC layer, per stream and direction), wirefall's
#   frames must be among tshark's; tshark's others there are set aside and counted.
_H3_SPAN = "HTTP/3 frame spanning STREAM frames or cut by the capture's end (tshark 4.0 does not reassemble them)"
_H3_REDO = "HTTP/3 frames tshark parses from a retransmitted or out-of-order STREAM frame"
_H3_INSIDE = "HTTP/3 frame headers tshark reads from inside a frame that spans STREAM frames"


def _h3_name(code: int) -> str:
    from wirefall.dissectors.http3 import FRAME_TYPES, is_grease

    return FRAME_TYPES.get(code) or ("GREASE" if is_grease(code) else f"UNKNOWN_0x{code:x}")


def _h3_extract(layers: dict, num: int, ts: float, state: dict) -> list[TFrame]:
    # STREAM frames of this packet: in order (starting where the stream's bytes so far end)?
    ports = _ports(layers)
    nxt = state.setdefault("next", {})
    clean = True
    starts = []  # (stream id, offset) of each STREAM frame in the packet
    for q in _as_list(layers.get("quic")):
        if not isinstance(q, dict):
            continue
        for fd in _as_list(q.get("quic.frame")):
            if not isinstance(fd, dict) or not 8 <= int(_first(fd.get("quic.frame_type", -1))) <= 15:
                continue
            sid = int(_first(fd.get("quic.stream.stream_id")))
            off = int(_first(fd.get("quic.stream.offset", 0)))
            if "quic.stream.length" in fd:
                ln = int(_first(fd["quic.stream.length"]))
            else:
                data = _first(fd.get("quic.stream_data")) or ""
                ln = (len(data) + 1) // 3 if data else 0
            starts.append((sid, off))
            k = (ports, sid)
            have = nxt.get(k, 0)
            if off != have:
                clean = False
            if off <= have:
                nxt[k] = max(have, off + ln)
    out = []
    for u in _as_list(layers.get("http3")):
        if not isinstance(u, dict):
            continue
        for t, ln in zip(_as_list(u.get("http3.frame_type")), _as_list(u.get("http3.frame_length"))):
            name = _h3_name(int(str(t), 0))
            out.append(TFrame(num, ts, {"clean": clean, "starts": starts}, name, None, (name, int(ln)), ports))
    return out


def _h3_inside(an: Analysis, tframes: list[TFrame]) -> set[int]:
    """Packets with a STREAM frame whose data begins strictly inside an HTTP/3 frame that
    wirefall reassembled across STREAM frames (same connection, direction and stream).
    tshark 4.0 can lose its place in such a stream (aioquic sends a HEADERS frame's type byte
    alone in one STREAM frame) and then reads a frame header from the middle of a DATA frame."""
    from wirefall.analyzer.protocols.http3 import header_len as _h3_header_len

    spans: dict[tuple, list[tuple[int, int]]] = {}
    for f in an.frames:
        if f.protocol in ("h3", "h3-29") and f.first_packet != f.packet and f.offset >= 0:
            end = f.offset + _h3_header_len(f, b"", -1) + f.length
            spans.setdefault((f.connection, f.direction, f.stream_id), []).append((f.offset, end))
    if not spans:
        return set()
    for v in spans.values():
        v.sort()
    out = set()
    for t in tframes:
        cid = an.index.conn[t.packet - 1] if 0 < t.packet <= an.packets else -1
        if cid < 0 or t.packet in out or not t.ports:
            continue
        direction = 0 if t.ports[0] == an.connections[cid].client[1] else 1
        for sid, off in t.values.get("starts", ()):
            sp = spans.get((cid, direction, sid))
            if sp:
                i = bisect.bisect_left(sp, (off, off)) - 1
                if i >= 0 and sp[i][0] < off < sp[i][1]:
                    out.add(t.packet)
                    break
    return out


def _h3_wirefall(an: Analysis) -> tuple[list[Frame], int]:
    keep, span = [], 0
    for f in an.frames:
        if f.protocol not in ("h3", "h3-29"):
            continue
        if f.first_packet != f.packet or (f.error or "").startswith("capture ends"):  # cut by the capture's end: spans on
            span += 1
        else:
            keep.append(f)
    return keep, span


def _h3_entries(an: Analysis, tframes) -> tuple[list[Entry], dict[str, int]]:
    keep, span = _h3_wirefall(an)
    aside = {_H3_SPAN: span} if span else {}
    trial = _quic_trial_conns(an)
    if trial:  # HTTP/3 frames in packets tshark could not decrypt
        shown = {t.packet for t in tframes}
        n = sum(1 for f in keep if f.connection in trial and f.packet not in shown)
        keep = [f for f in keep if f.connection not in trial or f.packet in shown]
        if n:
            aside[_QUIC_TRIAL] = n
    return [Entry(f.packet, (f.type, f.length), f, check_headers=False) for f in keep], aside


def _h3_limits(an: Analysis, tframes: list[TFrame]) -> tuple[list[TFrame], dict[str, int]]:
    dirty = {t.packet for t in tframes if not t.values.get("clean", True)}
    inside = _h3_inside(an, tframes) - dirty
    dirty |= inside
    if not dirty:
        return tframes, {}
    mine: dict[int, list[tuple]] = {}
    for f in _h3_wirefall(an)[0]:
        if f.packet in dirty:
            mine.setdefault(f.packet, []).append((f.type, f.length))
    kept, n, m = [], 0, 0
    for t in tframes:
        if t.packet in dirty:
            want = mine.get(t.packet, [])
            if want and want[0] == t.key:  # the frames wirefall shows there, in order
                want.pop(0)
            elif t.packet in inside:
                m += 1
                continue
            else:
                n += 1
                continue
        kept.append(t)
    aside = {_H3_REDO: n} if n else {}
    if m:
        aside[_H3_INSIDE] = m
    return kept, aside


register(Spec(
    name="http3", layer=_oracle("http3").layer, unit=None, protocols=descriptor("http3").protocols, fields={},
    type_field=_oracle("http3").type_field or "",
    type_name=str, layers=("quic", "udp"), extract=_h3_extract, every_packet=True, entries=_h3_entries,
    limits=_h3_limits, fmt=lambda k: f"{k[0]}(length={k[1]})",
))
