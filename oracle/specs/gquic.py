"""Google QUIC as tshark shows it: the public header and the clear-text CHLO/REJ/SHLO.

A ``Spec`` (``oracle.spec``) registered on import; ``oracle.crosscheck`` imports this module
for the ``gquic`` registry descriptor."""
from __future__ import annotations

from wirefall.analyzer.model import Analysis
from wirefall.dissectors.registry import descriptor
from wirefall.oracle.spec import (
    Entry,
    Spec,
    TFrame,
    _as_list,
    _find,
    _first,
    _oracle,
    register,
)

# -- Google QUIC -----------------------------------------------------------------------------
# Per packet: the public header (flags, connection id when present, version when present,
# packet number) and the handshake messages readable in the clear (CHLO / REJ / SHLO with
# their SNI and VER tags). No decryption exists for gQUIC (QUIC-Crypto), in tshark or here.
GQUIC_MESSAGES = ("CHLO", "REJ", "SHLO")


def _gquic_extract(layers: dict, num: int, ts: float, state: dict) -> list[TFrame]:
    out = []
    for g in _as_list(layers.get("gquic")):
        if not isinstance(g, dict) or "gquic.puflags" not in g:
            continue
        cid = _first(g.get("gquic.cid"))
        ver = _first(g.get("gquic.version"))
        pn = _first(g.get("gquic.packet_number"))
        key = ("PACKET", int(str(_first(g["gquic.puflags"])), 16), int(cid) if cid is not None else None,
               str(ver) if ver is not None else None, int(pn) if pn is not None else None)
        out.append(TFrame(num, ts, {}, "PACKET", None, key))
        for fr in _as_list(g.get("gquic.frame")):
            tag = _first(fr.get("gquic.tag")) if isinstance(fr, dict) else None
            if tag in GQUIC_MESSAGES:
                sni = _find(fr, "gquic.tag.sni")
                v = _find(fr, "gquic.tag.version")
                out.append(TFrame(num, ts, {}, tag, None, (tag, _first(sni), _first(v))))
    return out


def _gquic_entries(an: Analysis, tframes) -> tuple[list[Entry], dict[str, int]]:
    out = []
    for f in an.frames:
        if f.protocol != "gquic":
            continue
        fl = f.fields or {}
        if f.type == "PACKET":
            cid = fl.get("cid") if fl.get("public_flags", 0) & 0x08 else None
            # the version flag: "version present" from the client, version negotiation from the server
            ver = fl.get("version") if fl.get("public_flags", 0) & 0x01 and f.direction == 0 else None
            key: tuple = ("PACKET", fl.get("public_flags"), int(cid, 16) if cid else None, ver, fl.get("packet_number"))
        elif f.type in GQUIC_MESSAGES:
            key = (f.type, fl.get("SNI"), fl.get("VER"))
        else:
            continue
        out.append(Entry(f.packet, key, f, check_headers=False))
    return out, {}


register(Spec(
    name="gquic", layer=_oracle("gquic").layer, unit=None, protocols=descriptor("gquic").protocols, fields={}, type_field="",
    type_name=str, extract=_gquic_extract, entries=_gquic_entries, fmt=lambda k: " ".join(str(x) for x in k),
))
