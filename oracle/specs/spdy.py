"""SPDY as tshark shows it: type, stream id, flags, length, associated stream and priority, and the header list.

A ``Spec`` (``oracle.spec``) registered on import; ``oracle.crosscheck`` imports this module
for the ``spdy`` registry descriptor."""
from __future__ import annotations

import json
from collections.abc import Iterable

from wirefall.analyzer.model import Analysis
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
    run_tshark,
)

# -- SPDY ------------------------------------------------------------------------------------
# tshark 4.0: ``-o spdy.assemble_data_frames:FALSE`` (its DATA reassembly hits a dissector bug
# on multi-frame bodies); cleartext SPDY needs ``-d tcp.port==P,spdy`` (no heuristic); over TLS
# it follows ALPN. SPDY/2: tshark frames it but says "Unsupported Version" for control frames,
# so their stream id / associated id / priority / headers are not shown -- compared for DATA
# frames only (type, flags, length are compared for all); SPDY/2 header blocks are checked
# against the implementations' own logs in tests/test_spdy.py instead.
SPDY_TYPES = descriptor("spdy").type_names
_SPDY_F = _oracle("spdy").fields  # Frame attribute -> tshark field
_SPDY_TYPE = _oracle("spdy").type_field or ""
SPDY_NO_STREAM = ("SETTINGS", "PING", "GOAWAY", "NOOP")  # tshark shows no stream id on these


def _spdy_unit(s: dict) -> dict | None:
    """One SPDY frame of tshark's JSON as a dict (None: not a frame)."""
    if not isinstance(s, dict) or _SPDY_F["length"] not in s:
        return None
    control = str(_first(s.get("spdy.control_bit"))) == "1"
    t = str(_first(s.get(_SPDY_TYPE)))
    typ = (SPDY_TYPES.get(int(t), f"UNKNOWN_{t}") if t.isdigit() else "?") if control else "DATA"
    sid = _first(s.get(_SPDY_F["stream_id"]))
    assoc = _first(s.get("spdy.associated.streamid"))
    prio = _first(s.get("spdy.priority"))
    hdrs = None
    if "spdy.header" in s:
        hdrs = [(str(_first(h.get("spdy.header.name"))), str(_first(h.get("spdy.header.value"))))
                for h in _as_list(s["spdy.header"]) if isinstance(h, dict)]
    tree = s.get("spdy.header_block_tree")
    num = _first(tree.get("spdy.numheaders")) if isinstance(tree, dict) else None
    return {
        "type": typ,
        "stream_id": int(sid) if sid is not None else None,
        "flags": int(str(_first(s.get(_SPDY_F["flags"]))), 16),
        "length": int(_first(s[_SPDY_F["length"]])),
        "associated": int(assoc) if assoc is not None else None,
        "priority": int(prio) if prio is not None else None,
        "headers": hdrs,
        "numheaders": int(num) if num is not None else None,
    }


def _spdy_extract(layers: dict, num: int, ts: float, state: dict) -> list[TFrame]:
    out = []
    for s in _as_list(layers.get("spdy")):
        d = _spdy_unit(s)
        if d is None:
            continue
        key = (d["type"], d["stream_id"], d["flags"], d["length"], d["associated"], d["priority"])
        hdrs = d["headers"]
        if hdrs is None and d["numheaders"] is not None:
            hdrs = []  # tshark counted the header list but shows no entry: wirefall must show none
        out.append(TFrame(num, ts, {}, d["type"], hdrs, key))
    return out


def spdy_tshark_frames(path: str, keylogs: Iterable[str] | None = None, port: int | None = None,
                       tshark: str = "tshark") -> list[dict]:
    """Every SPDY frame tshark dissects, in packet order, as dicts: packet, first_packet (first
    packet of the PDU reassembled from several segments/records, for the first frame of a
    packet), type, stream_id, flags, length, associated, priority, headers, numheaders.
    ``port``: cleartext SPDY server port (tshark has no heuristic for it)."""
    args = ["-o", "spdy.assemble_data_frames:FALSE"]
    if port is not None:
        args += ["-d", f"tcp.port=={port},spdy"]
    out = run_tshark(path, args + ["-Y", "spdy", "-T", "json", "--no-duplicate-keys"], keylogs, tshark)
    frames = []
    for pkt in (json.loads(out) if out.strip() else []):
        layers = pkt["_source"]["layers"]
        num = int(_first(layers["frame"]["frame.number"]))
        seg = (layers.get("tcp.segments") or {}).get("tcp.segment") or (layers.get("tls.segments") or {}).get("tls.segment")
        first_of_first = int(_first(seg)) if seg else num
        i = 0
        for s in _as_list(layers.get("spdy")):
            d = _spdy_unit(s)
            if d is None:
                continue
            d["packet"] = num
            d["first_packet"] = first_of_first if i == 0 else num
            frames.append(d)
            i += 1
    return frames


def _spdy_entries(an: Analysis, tframes) -> tuple[list[Entry], dict[str, int]]:
    out = []
    for f in an.frames:
        if not f.protocol.startswith("spdy/"):
            continue
        fl = f.fields or {}
        v2 = f.protocol == "spdy/2"
        key: tuple
        if v2 and f.type != "DATA":
            key = (f.type, None, f.flags, f.length, None, None)
        else:
            key = (f.type, None if f.type in SPDY_NO_STREAM else f.stream_id, f.flags, f.length,
                   fl.get("associated_stream_id"), fl.get("priority"))
        out.append(Entry(f.packet, key, f, check_headers=not v2))
    out.sort(key=lambda e: (e.packet, e.frame.direction, e.frame.offset))
    return out, {}


def _spdy_decode_as(an: Analysis) -> list[str]:
    ports = sorted({c.server[1] for c in an.connections
                    if c.protocol and c.protocol.startswith("spdy/") and c.transport == "tcp" and not c.tls})
    return [a for p in ports for a in ("-d", f"tcp.port=={p},spdy")]


register(Spec(
    name="spdy", layer=_oracle("spdy").layer, unit=None, protocols=descriptor("spdy").protocols, fields={},
    type_field=_oracle("spdy").type_field or "", type_name=str, headers=("spdy.header", "spdy.header.name", "spdy.header.value"),
    decode_as=_spdy_decode_as, args=("-o", "spdy.assemble_data_frames:FALSE") + TCP_ARGS,
    extract=_spdy_extract, entries=_spdy_entries,
    fmt=lambda k: f"{k[0]}(stream={k[1]}, flags=0x{k[2]:x}, length={k[3]}, assoc={k[4]}, prio={k[5]})",
))
