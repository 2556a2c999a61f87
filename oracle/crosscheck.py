"""Cross-check wirefall against tshark on the same capture.

``crosscheck(path, keylogs) -> list[str]``: every disagreement between wirefall's
``analyze()`` frames and the frames tshark dissects, as readable lines (empty = they agree).
``crosscheck_report(...)`` gives the same per protocol with counts (frames tshark shows,
frames wirefall shows, frames matched, header lists compared, frames set aside by a
documented tshark limitation), so a caller can tell "agree" from "nothing compared".

Per packet, the ordered list of each protocol's frame keys is compared (HTTP/2: type, stream
id, length, flags; SPDY: type, stream id, flags, length, associated id, priority; QUIC: frame
type, stream id, offset, length and one control-frame detail; HTTP/3: type, length; gQUIC:
public header and clear-text CHLO/REJ/SHLO; TLS: record content type, length; HTTP/1.x:
request method + target / response status, at the packet of the message's last byte), then
the decoded header list (name, value) of every frame that carries headers (HTTP/2, SPDY/3,
SPDY/3.1, HTTP/1.x).

tshark is run once per capture through ``subprocess`` with ``-T json --no-duplicate-keys
-J "frame <layers>"`` rather than through pyshark: pyshark drives the same tshark but builds
Python objects per field over a pipe (minutes on a page load against seconds here), and its
JSON mode loses repeated keys -- exactly the repeated ``http2.stream`` / ``http2.header``
entries compared. Every protocol's preferences and decode-as arguments go into that one run.

Protocols are rows of ``PROTOCOLS`` (a ``Spec`` each): the tshark layer and unit keys, the
fields compared, how to name tshark's type values, which wirefall frames correspond, any
``-d`` decode-as arguments derived from the analysis (tshark has no heuristic for cleartext
HTTP/2 or SPDY on arbitrary ports), and -- in comments and in ``Spec.limits`` -- what tshark
4.0 is known to get wrong or cannot show, which is set aside and counted, nothing more.
"""
from __future__ import annotations

import bisect
import gzip
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Iterable

from wirefall.analyzer.model import Analysis, Frame, NoteKind, notes_of
from wirefall.dissectors.registry import OracleSpec, descriptor


def _oracle(name: str) -> OracleSpec:
    """The tshark side of a protocol's registry descriptor (layer, type field, compared fields)."""
    o = descriptor(name).oracle
    if o is None:
        raise KeyError(f"protocol {name!r} has no oracle spec")
    return o

MAX_REPORTED = 500


@dataclass
class TFrame:
    packet: int
    time: float
    values: dict[str, Any]  # tshark's field values (text or lists), or a spec's own facts
    type: str
    headers: list[tuple[str, str]] | None = None
    key: tuple | None = None  # comparison key (custom specs); None = (type, *values)
    ports: tuple[int, int] | None = None  # (src, dst) TCP/UDP port of the packet, when the spec asks


@dataclass
class Entry:
    """One wirefall frame as it should appear in tshark's output."""
    packet: int
    key: tuple
    frame: Frame
    check_headers: bool = True


@dataclass
class Spec:
    name: str  # key in PROTOCOLS, e.g. "http2"
    layer: str  # tshark JSON layer, e.g. "http2"
    unit: str | None  # key of one frame inside the layer ("http2.stream"); None = the layer itself
    protocols: tuple[str, ...]  # wirefall Frame.protocol values compared
    fields: dict[str, str]  # wirefall Frame attribute -> tshark field (compared as strings of ints)
    type_field: str  # tshark field holding the frame type
    type_name: Callable[[str], str]  # tshark type value -> wirefall Frame.type
    skip: Callable[[dict], bool] = lambda u: False  # tshark units that are not frames
    wirefall_skip: Callable[[Frame], bool] = lambda f: False
    headers: tuple[str, str, str] | None = None  # (list key, name key, value key) inside a unit
    decode_as: Callable[[Analysis], list[str]] = lambda an: []
    display_filter: str | None = None  # defaults to the layer name
    args: tuple[str, ...] = ()  # tshark preferences this protocol needs (harmless to the others)
    layers: tuple[str, ...] = ()  # further JSON layers the extractor reads (e.g. "tcp")
    # custom tshark side: (layers of one packet, packet number, time, state across packets) -> frames
    extract: Callable[[dict, int, float, dict], list[TFrame]] | None = None
    every_packet: bool = False  # call extract on every packet of the output, not only those with the layer
    # custom wirefall side: (analysis, tshark frames) -> (entries, {reason: frames set aside})
    entries: Callable[[Analysis, list[TFrame]], tuple[list[Entry], dict[str, int]]] | None = None
    # tshark frames set aside by a documented limitation: (analysis, tshark frames) -> (kept, {reason: n})
    limits: Callable[[Analysis, list[TFrame]], tuple[list[TFrame], dict[str, int]]] | None = None
    fmt: Callable[[tuple], str] | None = None  # how a key is printed


PROTOCOLS: dict[str, Spec] = {}


def register(spec: Spec) -> None:
    PROTOCOLS[spec.name] = spec


# -- helpers over tshark's JSON --------------------------------------------------------------
def _as_list(v) -> list:
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def _first(v):
    while isinstance(v, list):
        v = v[0] if v else None
    return v


def _find(obj, key: str):
    """First value of ``key`` anywhere inside ``obj`` (tshark nests fields under text keys)."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = _find(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = _find(v, key)
            if r is not None:
                return r
    return None


def _units(layer: Any, unit: str | None) -> Iterable[dict]:
    for obj in _as_list(layer):
        if not isinstance(obj, dict):
            continue
        if unit is None:
            yield obj
        else:
            for u in _as_list(obj.get(unit)):
                if isinstance(u, dict):
                    yield u


def _ports(layers: dict) -> tuple[int, int] | None:
    for l4 in ("tcp", "udp"):
        lay = _first(layers.get(l4))
        if isinstance(lay, dict) and f"{l4}.srcport" in lay:
            return int(_first(lay[f"{l4}.srcport"])), int(_first(lay[f"{l4}.dstport"]))
    return None


def _tcp_fin(layers: dict) -> bool:
    lay = _first(layers.get("tcp"))
    fl = _find(lay, "tcp.flags.fin") if isinstance(lay, dict) else None
    return str(_first(fl)) in ("1", "True", "true")


def _conn_of(an: Analysis, f: Frame):
    return an.connections[f.connection]


# tshark's TCP reassembly by default stops at data it takes for a retransmission after a hole
# (a segment lost before the capture point, then resent): with loss it shows no frame of the
# rest of that direction. Reassembling out-of-order segments is what a receiver does, and it
# is how wirefall's TCP layer delivers bytes; every TCP-based Spec asks for it.
TCP_ARGS = ("-o", "tcp.reassemble_out_of_order:TRUE")


# -- HTTP/2 ----------------------------------------------------------------------------------
def _h2_type(v: str) -> str:
    from wirefall.dissectors.http2 import frame_name

    return frame_name(int(v, 0))


def _h2_decode_as(an: Analysis) -> list[str]:
    ports = set()
    upgraded = {f.connection for f in an.frames if f.protocol.startswith("http/1")}
    for c in an.connections:
        if c.protocol == "h2c" and c.id not in upgraded and c.transport == "tcp":
            ports.add(c.server[1])
    args = []
    for p in sorted(ports):
        args += ["-d", f"tcp.port=={p},http2"]
    return args


register(Spec(
    name="http2",
    layer=_oracle("http2").layer,
    unit="http2.stream",
    protocols=descriptor("http2").protocols,
    fields=dict(_oracle("http2").fields),
    type_field=_oracle("http2").type_field or "",
    type_name=_h2_type,
    skip=lambda u: "http2.type" not in u,  # the connection preface ("http2.magic")
    headers=("http2.header", "http2.header.name", "http2.header.value"),
    decode_as=_h2_decode_as,
    args=TCP_ARGS,
))


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


# -- QUIC ------------------------------------------------------------------------------------
# Per packet, the decrypted QUIC frames of every QUIC packet in the datagram (coalesced ones in
# order): frame type, stream id (STREAM), offset and length (STREAM, CRYPTO), padding length,
# and one detail of the control frames (largest acknowledged of ACK, stream id of RESET_STREAM /
# STOP_SENDING / MAX_STREAM_DATA / STREAM_DATA_BLOCKED, the limits of MAX_DATA / MAX_STREAM_DATA /
# MAX_STREAMS, the sequence of NEW/RETIRE_CONNECTION_ID, CONNECTION_CLOSE's error code).
# A packet tshark did not decrypt has no frames, so the decrypted-packet sets are compared too.
# (ft, tshark fields, wirefall: frame -> values)
_QUIC_DETAIL: dict[int, tuple[tuple[str, ...], Callable[[Frame], tuple]]] = {}


def _fl(f: Frame) -> dict[str, Any]:
    return f.fields or {}


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
    from wirefall.analyzer.detail import _h3_header_len

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
    return {c.id for c in an.connections if c.tls is not None and c.tls.reason == "no ClientHello in the capture"}


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


# -- HTTP/1.x --------------------------------------------------------------------------------
# Per packet, the messages that end in it (tshark shows a message where its last byte, body
# included, arrived): requests by method and target, responses by status code. Known tshark
# 4.0 differences, set aside and counted:
# - a close-delimited response body: tshark completes the message only at the server's FIN;
#   the response is expected at the first packet of that direction where tshark shows HTTP
#   with the FIN flag (its TCP layer) at or after the body's last byte; over TLS tshark never
#   completes it (the FIN carries no record), nor when the capture ends first: then the
#   response is set aside and counted;
# - a HEAD request pipelined behind/ahead of others: tshark frames its body-less response with
#   the next response as its body, so the responses of that connection from the HEAD's on are
#   set aside (nginx's own log is the truth in tests/test_http1.py);
# - an HTTP/1.1 ``Upgrade: h2c`` exchange: the 101 and the upgraded request are HTTP/1.1 on the
#   wire and compared; the response to it comes as HTTP/2 on stream 1 (compared as http2).
def _h1_lines(v) -> list[tuple[str, str]]:
    """tshark's header lines ("Name: value\\r\\n") as (name, value) pairs."""
    out = []
    for line in _as_list(v):
        line = str(line)
        if line.endswith("\r\n"):
            line = line[:-2]
        name, _, value = line.partition(":")
        out.append((name, value.strip(" \t")))
    return out


def _h1_extract(layers: dict, num: int, ts: float, state: dict) -> list[TFrame]:
    out = []
    ports = _ports(layers)
    fin = _tcp_fin(layers)
    for u in _as_list(layers.get("http")):
        if not isinstance(u, dict):
            continue
        meth = _find(u, "http.request.method")
        code = _find(u, "http.response.code")
        if meth is not None:
            uri = _find(u, "http.request.uri")
            hdrs = _h1_lines(u.get("http.request.line"))
            out.append(TFrame(num, ts, {"fin": fin}, "REQUEST", hdrs, ("REQUEST", str(_first(meth)), str(_first(uri))), ports))
        elif code is not None:
            hdrs = _h1_lines(u.get("http.response.line"))
            out.append(TFrame(num, ts, {"fin": fin}, "RESPONSE", hdrs, ("RESPONSE", int(_first(code))), ports))
    return out


_H1_CLOSE = "close-delimited response: tshark completes it only at a FIN it shows (never over TLS)"
_H1_HEAD = "responses after a pipelined HEAD (tshark takes the next response as the HEAD's body)"
_H1_CUT = "messages whose body the connection's or the capture's end cuts (tshark shows only reassembled ones)"


def _h1_pipelined_head(an: Analysis) -> dict[int, int]:
    """connection -> packet of the first response (wirefall) from which tshark mis-frames."""
    by_conn: dict[int, list[Frame]] = {}
    for f in an.frames:
        if f.protocol.startswith("http/1") and f.type in ("REQUEST", "RESPONSE"):
            by_conn.setdefault(f.connection, []).append(f)
    out: dict[int, int] = {}
    for cid, frs in by_conn.items():
        reqs = [f for f in frs if f.type == "REQUEST"]
        for i, r in enumerate(reqs):
            if _fl(r).get("method") != "HEAD":
                continue
            ex = _fl(r).get("exchange")
            # pipelined: another request was sent before this HEAD's response began
            resp = [f for f in frs if f.type == "RESPONSE" and _fl(f).get("exchange") == ex]
            if not resp:
                continue
            later = [q for q in reqs[i + 1:] if q.first_packet <= resp[0].first_packet]
            if later:
                out[cid] = min(out.get(cid, resp[0].packet), resp[0].first_packet)
    return out


def _h1_entries(an: Analysis, tframes) -> tuple[list[Entry], dict[str, int]]:
    aside: dict[str, int] = {}
    fins: dict[tuple[int, int], list[int]] = {}
    for t in tframes:
        if t.values.get("fin") and t.ports:
            fins.setdefault(t.ports, []).append(t.packet)
    bodies: dict[tuple[int | None, int], Frame] = {}  # (exchange id, direction) -> body frame
    for f in an.frames:
        if f.protocol.startswith("http/1") and f.type == "BODY" and f.fields:
            bodies[(f.fields.get("exchange"), f.direction)] = f
    heads = _h1_pipelined_head(an)
    out = []
    for f in an.frames:
        if not f.protocol.startswith("http/1") or f.type not in ("REQUEST", "RESPONSE"):
            continue
        fl = f.fields or {}
        c = _conn_of(an, f)
        if f.type == "RESPONSE" and f.connection in heads and f.first_packet >= heads[f.connection]:
            aside[_H1_HEAD] = aside.get(_H1_HEAD, 0) + 1
            continue
        pkt = f.packet
        body = None if fl.get("interim") else bodies.get((fl.get("exchange"), f.direction))
        if body is not None:
            if (body.fields or {}).get("incomplete"):
                aside[_H1_CUT] = aside.get(_H1_CUT, 0) + 1
                continue
            pkt = max(pkt, body.packet)
            if (body.fields or {}).get("framing") == "close":
                sport, dport = (c.server[1], c.client[1]) if f.direction == 1 else (c.client[1], c.server[1])
                at = [p for p in fins.get((sport, dport), []) if p >= body.packet]
                if not at:
                    aside[_H1_CLOSE] = aside.get(_H1_CLOSE, 0) + 1
                    continue
                pkt = at[0]
        key = ("REQUEST", fl.get("method"), fl.get("target")) if f.type == "REQUEST" else ("RESPONSE", fl.get("status"))
        out.append(Entry(pkt, key, f))
    out.sort(key=lambda e: (e.packet, e.frame.direction, e.frame.offset))
    return out, aside


def _h1_limits(an: Analysis, tframes: list[TFrame]) -> tuple[list[TFrame], dict[str, int]]:
    heads = _h1_pipelined_head(an)
    if not heads:
        return tframes, {}
    cports = {}
    for cid, pkt in heads.items():
        c = an.connections[cid]
        cports[(c.server[1], c.client[1])] = pkt
    kept, n = [], 0
    for t in tframes:
        p = cports.get(t.ports) if t.ports else None
        if t.type == "RESPONSE" and p is not None and t.packet >= p:
            n += 1
            continue
        kept.append(t)
    return kept, ({_H1_HEAD: n} if n else {})


def _h1_decode_as(an: Analysis) -> list[str]:
    conns = {f.connection for f in an.frames if f.protocol.startswith("http/1")}
    ports = sorted({an.connections[c].server[1] for c in conns
                    if an.connections[c].transport == "tcp" and not an.connections[c].tls})
    return [a for p in ports for a in ("-d", f"tcp.port=={p},http")]


register(Spec(
    name="http1", layer=_oracle("http1").layer, unit=None, protocols=("http/1.0", "http/1.1"), fields={}, type_field="",
    type_name=str, headers=("http.request.line", "", ""), layers=("tcp",), extract=_h1_extract, entries=_h1_entries, limits=_h1_limits,
    decode_as=_h1_decode_as, args=TCP_ARGS, fmt=lambda k: " ".join(str(x) for x in k),
))


# -- tshark ----------------------------------------------------------------------------------
def tshark_available(tshark: str = "tshark") -> bool:
    return shutil.which(tshark) is not None


def merged_keylog(keylogs: Iterable[str] | None) -> str | None:
    """One plain key log file for tshark (it does not read .gz); caller deletes it."""
    texts = []
    for k in keylogs or []:
        with (gzip.open(k, "rt", errors="replace") if str(k).endswith(".gz") else open(k, errors="replace")) as fh:
            texts.append(fh.read())
    if not texts:
        return None
    fd, name = tempfile.mkstemp(prefix="wirefall-keys-", suffix=".txt")
    with os.fdopen(fd, "w") as fh:
        fh.write("\n".join(texts) + "\n")
    return name


def run_tshark(path: str, args: list[str], keylogs: Iterable[str] | None = None, tshark: str = "tshark") -> str:
    keyfile = merged_keylog(keylogs)
    try:
        cmd = [tshark, "-n", "-r", str(path)]
        if keyfile:
            cmd += ["-o", f"tls.keylog_file:{keyfile}"]
        cmd += args
        res = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=900)
        if res.returncode != 0 and not res.stdout:
            raise RuntimeError(f"tshark failed: {res.stderr.strip()[:500]}")
        return res.stdout
    finally:
        if keyfile:
            os.unlink(keyfile)


def _norm(v) -> str:
    """tshark's number ("5", "0x04") as a decimal string, anything else as it is."""
    try:
        return str(int(str(v), 0))
    except ValueError:
        return str(v)


def _default_extract(spec: Spec, layers: dict, num: int, ts: float) -> list[TFrame]:
    frames = []
    for u in _units(layers.get(spec.layer), spec.unit):
        if spec.skip(u):
            continue
        vals = {k: _norm(_first(u.get(v))) for k, v in spec.fields.items()}
        t = spec.type_name(str(_first(u.get(spec.type_field))))
        hdrs = None
        if spec.headers is not None:
            lk, nk, vk = spec.headers
            if lk in u:
                hdrs = [(str(_first(h.get(nk, ""))), str(_first(h.get(vk, "")))) for h in _as_list(u[lk]) if isinstance(h, dict)]
        frames.append(TFrame(num, ts, vals, t, hdrs, (t,) + tuple(vals[k] for k in spec.fields)))
    return frames


def _extract(spec: Spec, packets: list[dict]) -> list[TFrame]:
    frames: list[TFrame] = []
    state: dict = {}  # the extractor's memory across the packets of one capture
    for pkt in packets:
        layers = pkt.get("_source", {}).get("layers", {})
        if spec.layer not in layers and not (spec.every_packet and spec.extract is not None):
            continue
        fr = layers.get("frame", {})
        num = int(_first(fr.get("frame.number")))
        ts = float(_first(fr.get("frame.time_epoch")))
        if spec.extract is not None:
            frames += spec.extract(layers, num, ts, state)
        else:
            frames += _default_extract(spec, layers, num, ts)
    return frames


def tshark_packets(path: str, specs: list[Spec], keylogs=None, extra_args: list[str] | None = None,
                   tshark: str = "tshark") -> list[dict]:
    """tshark's JSON packets holding any of ``specs``' layers (one run for all of them)."""
    args = list(extra_args or [])
    pairs = set(zip(args[::2], args[1::2]))
    for s in specs:  # (option, value) pairs, each once
        for pair in zip(s.args[::2], s.args[1::2]):
            if pair not in pairs:
                pairs.add(pair)
                args += pair
    layers = ["frame"]
    for s in specs:
        for lay in (s.layer, *s.layers):
            if lay not in layers:
                layers.append(lay)
    filt = " || ".join(s.display_filter or s.layer for s in specs)
    args += ["-Y", filt, "-T", "json", "--no-duplicate-keys", "-J", " ".join(layers)]
    out = run_tshark(path, args, keylogs, tshark)
    return json.loads(out) if out.strip() else []


def tshark_frames(path: str, spec: Spec, keylogs=None, extra_args: list[str] | None = None,
                  tshark: str = "tshark") -> list[TFrame]:
    """Frames of ``spec``'s protocol as tshark dissects them, in packet order."""
    return _extract(spec, tshark_packets(path, [spec], keylogs, extra_args, tshark))


# -- comparison ------------------------------------------------------------------------------
def _default_entries(spec: Spec, an: Analysis) -> list[Entry]:
    return [Entry(f.packet, (f.type,) + tuple(str(getattr(f, k)) for k in spec.fields), f)
            for f in an.frames if f.protocol in spec.protocols and not spec.wirefall_skip(f)]


def _fmt(key: tuple, spec: Spec) -> str:
    if spec.fmt is not None:
        return spec.fmt(key)
    return key[0] + "(" + ", ".join(f"{k}={v}" for k, v in zip(spec.fields, key[1:])) + ")"


@dataclass
class Result:
    """One protocol's comparison on one capture."""
    name: str
    tshark_frames: int = 0  # frames tshark shows (after documented limitations)
    wirefall_frames: int = 0  # wirefall frames expected in tshark's output
    matched: int = 0  # frames at packets where both sides agree on every frame
    headers_compared: int = 0  # header lists compared (and equal or reported)
    set_aside: dict[str, int] = field(default_factory=dict)  # documented tshark limitation -> frames
    problems: list[str] = field(default_factory=list)


_GAP = ("frames after bytes missing from the capture in their direction (tshark's TCP reassembly waits for the "
        "missing bytes and shows nothing more there; wirefall resynchronises)")
def _tcp_gaps(an: Analysis) -> dict[tuple[int, int], int]:
    """(connection, direction) -> packet of the first bytes the capture lost, from the flow
    layer's gap notes."""
    out: dict[tuple[int, int], int] = {}
    for c in an.connections:
        for n in notes_of(c.notes, NoteKind.GAP):
            if n.direction is not None and n.packet is not None:
                out.setdefault((c.id, n.direction), n.packet)
    return out


def _compare(an: Analysis, tframes: list[TFrame], spec: Spec) -> Result:
    res = Result(spec.name)
    if spec.limits is not None:
        tframes, aside = spec.limits(an, tframes)
        for k, v in aside.items():
            res.set_aside[k] = res.set_aside.get(k, 0) + v
    if spec.entries is not None:
        entries, aside = spec.entries(an, tframes)
        for k, v in aside.items():
            res.set_aside[k] = res.set_aside.get(k, 0) + v
    else:
        entries = _default_entries(spec, an)
    gaps = _tcp_gaps(an)
    if gaps:  # wirefall's frames after a gap where tshark shows none: set aside, counted
        shown = {t.packet for t in tframes}
        kept = [e for e in entries if not (e.packet not in shown and e.packet >= gaps.get((e.frame.connection, e.frame.direction), 1 << 62))]
        if len(kept) != len(entries):
            res.set_aside[_GAP] = res.set_aside.get(_GAP, 0) + len(entries) - len(kept)
            entries = kept
    res.tshark_frames = len(tframes)
    res.wirefall_frames = len(entries)
    wf: dict[int, list[Entry]] = {}
    for e in entries:
        wf.setdefault(e.packet, []).append(e)
    tf: dict[int, list[TFrame]] = {}
    for f in tframes:
        tf.setdefault(f.packet, []).append(f)
    out = res.problems
    for pkt in sorted(set(wf) | set(tf)):
        a = wf.get(pkt, [])
        b = tf.get(pkt, [])
        ka = [e.key for e in a]
        kb = [f.key if f.key is not None else (f.type,) + tuple(f.values[k] for k in spec.fields) for f in b]
        if ka != kb:
            out.append(f"packet {pkt}: {spec.name} frames differ: tshark [{', '.join(_fmt(k, spec) for k in kb)}], "
                       f"wirefall [{', '.join(_fmt(k, spec) for k in ka)}]")
            continue
        res.matched += len(b)
        if spec.headers is None:
            continue
        for e, y in zip(a, b):
            x = e.frame
            if not e.check_headers or (y.headers is None and not x.headers):
                continue
            res.headers_compared += 1
            hx = list(x.headers or [])
            hy = list(y.headers or [])
            if hx != hy:
                diff = next((i for i, (p, q) in enumerate(zip(hx, hy)) if p != q), min(len(hx), len(hy)))
                out.append(f"packet {pkt}: {spec.name} {x.type} stream {x.stream_id}: headers differ at #{diff}: "
                           f"tshark {hy[diff:diff + 1]} ({len(hy)} fields), wirefall {hx[diff:diff + 1]} ({len(hx)} fields)")
    return res


def compare(an: Analysis, tframes: list[TFrame], spec: Spec) -> list[str]:
    return _compare(an, tframes, spec).problems


def crosscheck_report(path: str, keylogs: list[str] | None = None, protocols: Iterable[str] | None = None,
                      analysis: Analysis | None = None, tshark: str = "tshark") -> dict[str, Result]:
    """Per protocol: counts and disagreements between wirefall and tshark on ``path``."""
    if analysis is None:
        from wirefall.analyzer.pipeline import analyze

        analysis = analyze(path, keylogs=keylogs)
    specs = [PROTOCOLS[n] for n in (protocols or list(PROTOCOLS))]
    extra: list[str] = []
    for s in specs:
        extra += s.decode_as(analysis)
    packets = tshark_packets(path, specs, keylogs, extra, tshark)
    return {s.name: _compare(analysis, _extract(s, packets), s) for s in specs}


def crosscheck(path: str, keylogs: list[str] | None = None, protocols: Iterable[str] | None = None,
               analysis: Analysis | None = None, tshark: str = "tshark") -> list[str]:
    """Disagreements between wirefall and tshark on ``path`` (see the module docstring)."""
    found: list[str] = []
    for r in crosscheck_report(path, keylogs, protocols, analysis, tshark).values():
        found += r.problems
    if len(found) > MAX_REPORTED:
        found = found[:MAX_REPORTED] + [f"... {len(found) - MAX_REPORTED} more disagreements"]
    return found
