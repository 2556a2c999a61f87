"""QUIC as tshark shows it: the decrypted frames of every QUIC packet of a datagram.

A ``Spec`` (``oracle.spec``) registered on import; ``oracle.crosscheck`` imports this module
for the ``quic`` registry descriptor."""
from __future__ import annotations

from collections.abc import Callable

from wirefall.analyzer.model import Analysis, Frame, NoteKind, notes_of
from wirefall.dissectors.registry import descriptor
from wirefall.oracle.spec import (
    _fl,
    Entry,
    Spec,
    TFrame,
    _as_list,
    _find,
    _first,
    _oracle,
    register,
)

# -- QUIC ------------------------------------------------------------------------------------
# Per packet, the decrypted QUIC frames of every QUIC packet in the datagram (coalesced ones in
# order): frame type, stream id (STREAM), offset and length (STREAM, CRYPTO), padding length,
# and one detail of the control frames (largest acknowledged of ACK, stream id of RESET_STREAM /
# STOP_SENDING / MAX_STREAM_DATA / STREAM_DATA_BLOCKED, the limits of MAX_DATA / MAX_STREAM_DATA /
# MAX_STREAMS, the sequence of NEW/RETIRE_CONNECTION_ID, CONNECTION_CLOSE's error code).
# A packet tshark did not decrypt has no frames, so the decrypted-packet sets are compared too.
# (ft, tshark fields, wirefall: frame -> values)
_QUIC_DETAIL: dict[int, tuple[tuple[str, ...], Callable[[Frame], tuple]]] = {}


for _ft in (2, 3):
    _QUIC_DETAIL[_ft] = (("quic.ack.largest_acknowledged",), lambda f: (_fl(f).get("largest_acknowledged"),))
_QUIC_DETAIL[4] = (("quic.rsts.stream_id", "quic.rsts.final_size"), lambda f: (f.stream_id, _fl(f).get("final_size")))
_QUIC_DETAIL[5] = (("quic.ss.stream_id",), lambda f: (f.stream_id,))
_QUIC_DETAIL[0x10] = (("quic.md.maximum_data",), lambda f: (_fl(f).get("maximum_data"),))
_QUIC_DETAIL[0x11] = (("quic.msd.stream_id", "quic.msd.maximum_stream_data"), lambda f: (f.stream_id, _fl(f).get("maximum_stream_data")))
for _ft in (0x12, 0x13):
    _QUIC_DETAIL[_ft] = (("quic.ms.max_streams",), lambda f: (_fl(f).get("maximum_streams"),))
_QUIC_DETAIL[0x15] = (("quic.sdb.stream_id",), lambda f: (f.stream_id,))
_QUIC_DETAIL[0x18] = (("quic.nci.sequence",), lambda f: (_fl(f).get("sequence"),))
_QUIC_DETAIL[0x19] = (("quic.rci.sequence",), lambda f: (_fl(f).get("sequence"),))
_QUIC_DETAIL[0x1C] = (("quic.cc.error_code",), lambda f: (_fl(f).get("error_code"),))
_QUIC_DETAIL[0x1D] = (("quic.cc.error_code.app",), lambda f: (_fl(f).get("error_code"),))
def _quic_name(ft: int) -> str:
    from wirefall.dissectors.quic import FRAME_NAMES

    return FRAME_NAMES.get(ft, f"0x{ft:x}")


def _quic_extract(layers: dict, num: int, ts: float, state: dict) -> list[TFrame]:
    out = []
    for q in _as_list(layers.get("quic")):
        if not isinstance(q, dict):
            continue
        for fd in _as_list(q.get("quic.frame")):
            if not isinstance(fd, dict) or "quic.frame_type" not in fd:
                continue
            ft = int(_first(fd["quic.frame_type"]))
            sid = off = ln = None
            if 8 <= ft <= 15:
                sid = int(_first(fd.get("quic.stream.stream_id")))
                off = int(_first(fd.get("quic.stream.offset", 0)))
                if "quic.stream.length" in fd:
                    ln = int(_first(fd["quic.stream.length"]))
                else:  # no LEN bit: the data runs to the end of the packet
                    data = _first(fd.get("quic.stream_data")) or ""
                    ln = (len(data) + 1) // 3 if data else 0
            elif ft == 6:
                off, ln = int(_first(fd["quic.crypto.offset"])), int(_first(fd["quic.crypto.length"]))
            elif ft == 0:
                ln = int(_first(fd.get("quic.padding_length", 0)))
            det = None
            if ft in _QUIC_DETAIL:
                det = tuple(int(str(_first(_find(fd, k))), 0) if _find(fd, k) is not None else None
                            for k in _QUIC_DETAIL[ft][0])
            out.append(TFrame(num, ts, {}, _quic_name(ft), None, (ft, sid, off, ln, det)))
    return out


_QUIC_TRIAL = ("frames of a QUIC connection whose start the capture missed, in packets wirefall decrypts and tshark "
               "does not: keys found by trying the key log's secrets, Initial keys from a later client Initial "
               "(tests/test_midstream.py checks them against tshark on the whole capture)")


def _quic_trial_conns(an: Analysis) -> set[int]:
    """QUIC connections whose first packet in the capture is not the client's first Initial."""
    late = {c.id for c in an.connections if c.transport == "udp" and any(notes_of(c.notes, NoteKind.KEYS_BY_TRIAL))}
    first = {c.id: c.first_packet for c in an.connections if c.transport == "udp" and c.quic is not None}
    for f in an.frames:
        if f.protocol == "quic" and first.get(f.connection) == f.packet:
            if f.direction != 0 or (f.fields or {}).get("packet_type") != "Initial":
                late.add(f.connection)
            del first[f.connection]
    return late


def _quic_entries(an: Analysis, tframes) -> tuple[list[Entry], dict[str, int]]:
    out = []
    trial = _quic_trial_conns(an)
    shown: dict[int, list] = {}
    if trial:
        for t in tframes:
            shown.setdefault(t.packet, []).append(t.key)
    aside = 0
    for f in an.frames:
        if f.protocol != "quic" or not f.fields or "frame_type" not in f.fields:
            continue
        ft = f.fields["frame_type"]
        key: tuple
        if 8 <= ft <= 15:
            key = (ft, f.stream_id, f.fields.get("offset", 0), f.length)
        elif ft == 6:
            key = (ft, None, f.fields.get("offset", 0), f.length)
        elif ft == 0:
            key = (ft, None, None, f.length)
        else:
            key = (ft, None, None, None)
        det = _QUIC_DETAIL[ft][1](f) if ft in _QUIC_DETAIL else None
        out.append(Entry(f.packet, key + (det,), f, check_headers=False))
    if trial:  # drop, and count, what tshark could not decrypt: whole packets, or some of a datagram's packets
        kept = []
        want = {p: list(ks) for p, ks in shown.items()}
        for e in out:
            if e.frame.connection in trial:
                w = want.get(e.packet)
                if not w or w[0] != e.key:
                    aside += 1
                    continue
                w.pop(0)
            kept.append(e)
        out = kept
    return out, ({_QUIC_TRIAL: aside} if aside else {})


def _quic_fmt(k: tuple) -> str:
    ft, sid, off, ln, det = k
    s = _quic_name(ft) + f"(0x{ft:x}"
    if det is not None:
        s += f", {det}"
    if sid is not None:
        s += f", stream={sid}"
    if off is not None:
        s += f", offset={off}"
    if ln is not None:
        s += f", length={ln}"
    return s + ")"


register(Spec(
    name="quic", layer=_oracle("quic").layer, unit=None, protocols=descriptor("quic").protocols, fields={},
    type_field=_oracle("quic").type_field or "",
    type_name=str, extract=_quic_extract, entries=_quic_entries, fmt=_quic_fmt,
))
