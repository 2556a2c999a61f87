"""The oracle's core: a ``Spec`` per protocol (how tshark shows it and which wirefall frames
correspond), the helpers over tshark's JSON the specs share, and how tshark is run.

Each protocol's ``Spec`` is written in ``oracle/specs/<name>.py`` (the registry descriptor's
name, for each descriptor with an ``oracle`` entry: its tshark layer, type field and compared
fields are there); ``oracle.crosscheck`` loads them from the registry and compares.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from wirefall.analyzer.model import Analysis, Frame
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


def _fl(f: Frame) -> Mapping[str, Any]:
    """A wirefall frame's fields (never None)."""
    return f.fields or {}


# tshark's TCP reassembly by default stops at data it takes for a retransmission after a hole
# (a segment lost before the capture point, then resent): with loss it shows no frame of the
# rest of that direction. Reassembling out-of-order segments is what a receiver does, and it
# is how wirefall's TCP layer delivers bytes; every TCP-based Spec asks for it.
TCP_ARGS = ("-o", "tcp.reassemble_out_of_order:TRUE")


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
