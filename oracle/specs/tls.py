"""TLS records as tshark shows them: content type and length per record.

A ``Spec`` (``oracle.spec``) registered on import; ``oracle.crosscheck`` imports this module
for the ``tls`` registry descriptor."""
from __future__ import annotations

from wirefall.analyzer.model import Analysis, NoteKind, ReasonKind, notes_of
from wirefall.dissectors.registry import descriptor
from wirefall.oracle.spec import (
    TCP_ARGS,
    Entry,
    Spec,
    TFrame,
    _as_list,
    _first,
    _oracle,
    register,
)

# -- TLS records -----------------------------------------------------------------------------
# Per packet, the records that end in it: content type (the inner type once tshark decrypted
# a TLS 1.3 record, else the outer one) and the record length. QUIC's TLS messages (in CRYPTO
# frames, no records) are not compared here.
TLS_TYPES = descriptor("tls").type_names


def _tls_extract(layers: dict, num: int, ts: float, state: dict) -> list[TFrame]:
    out = []
    for u in _as_list(layers.get("tls")):
        if not isinstance(u, dict):
            continue
        for r in _as_list(u.get("tls.record")):
            if not isinstance(r, dict) or "tls.record.length" not in r:
                continue
            ct = _first(r.get("tls.record.content_type"))
            if ct is None:
                ct = _first(r.get("tls.record.opaque_type"))
            if ct is None and str(_first(r.get("tls.handshake.type"))) == "1":
                name = "SSLV2_CLIENT_HELLO"  # an SSLv2-compatible record (2-byte header) holding a ClientHello
            elif ct is None:
                name = "UNKNOWN"
            else:
                name = TLS_TYPES.get(int(ct), f"UNKNOWN_{ct}")
            out.append(TFrame(num, ts, {}, name, None, (name, int(_first(r["tls.record.length"])))))
    return out


_TLS_MID = ("TLS records of a connection the capture joined mid-stream, where tshark guesses other record boundaries "
            "(tests/test_midstream.py checks wirefall's against tshark's on the whole capture)")


def _tls_mid_conns(an: Analysis) -> set[int]:
    """TLS connections whose start the capture missed: tshark finds their records only from
    where its per-segment guess lands on a record header, wirefall from a chain of headers."""
    # (the reason's kind, not its words: the words grew a detail where keys were tried by trial)
    return {c.id for c in an.connections if c.tls is not None and getattr(c.tls.reason, "kind", None) is ReasonKind.HANDSHAKE_NOT_CAPTURED}


def _tls_no_sh_conns(an: Analysis) -> set[int]:
    return {c.id for c in an.connections if c.tls is not None and any(notes_of(c.notes, NoteKind.NO_SERVER_HELLO))}


def _tls_entries(an: Analysis, tframes) -> tuple[list[Entry], dict[str, int]]:
    mid, no_sh = _tls_mid_conns(an), _tls_no_sh_conns(an)
    shown = {t.packet for t in tframes} if mid or no_sh else set()
    out: list[Entry] = []
    aside: dict[str, int] = {}
    for f in an.frames:
        if f.protocol != "tls" or (f.fields and "quic_epoch" in f.fields):
            continue
        if f.packet not in shown and (f.connection in mid or f.connection in no_sh):  # tshark shows no record there
            why = _TLS_MID if f.connection in mid else _TLS_NO_SH
            aside[why] = aside.get(why, 0) + 1
            continue
        out.append(Entry(f.packet, (f.type, f.length), f, check_headers=False))
    return out, aside


_TLS_NO_SH = ("TLS records wirefall decrypts though the ServerHello is not in the capture (same record lengths; "
              "tshark, not knowing the cipher suite, shows them as APPLICATION_DATA)")


def _tls_limits(an: Analysis, tframes: list[TFrame]) -> tuple[list[TFrame], dict[str, int]]:
    mid, no_sh = _tls_mid_conns(an), _tls_no_sh_conns(an)
    if not mid and not no_sh:
        return tframes, {}
    mine: dict[int, list[tuple]] = {}
    for f in an.frames:
        if (f.connection in mid or f.connection in no_sh) and f.protocol == "tls" and not (f.fields and "quic_epoch" in f.fields):
            mine.setdefault(f.packet, []).append((f.type, f.length))
    theirs: dict[int, list[tuple]] = {}
    for t in tframes:
        assert t.key is not None  # _tls_extract gives every record its key
        theirs.setdefault(t.packet, []).append(t.key)
    conn = an.index.conn
    kept: list[TFrame] = []
    aside: dict[str, int] = {}
    for t in tframes:
        p = t.packet
        c = conn[p - 1] if 0 < p <= an.packets else -1
        if c in mid and theirs[p] != mine.get(p, []):
            aside[_TLS_MID] = aside.get(_TLS_MID, 0) + 1  # the two disagree on this packet's records
            continue
        if c in no_sh and theirs[p] != mine.get(p, []) and [k[1] for k in theirs[p]] == [k[1] for k in mine.get(p, [])] \
                and all(k[0] in ("APPLICATION_DATA", "CHANGE_CIPHER_SPEC") for k in theirs[p]):
            aside[_TLS_NO_SH] = aside.get(_TLS_NO_SH, 0) + 1  # same records, tshark could not open them
            continue
        kept.append(t)
    return kept, aside


register(Spec(
    name="tls", layer=_oracle("tls").layer, unit=None, protocols=descriptor("tls").protocols, fields={},
    type_field=_oracle("tls").type_field or "",
    type_name=str, extract=_tls_extract, entries=_tls_entries, limits=_tls_limits, args=TCP_ARGS,
    fmt=lambda k: f"{k[0]}(length={k[1]})",
))
