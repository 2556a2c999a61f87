"""Cross-check wirefall against tshark on the same capture.

``crosscheck(path, keylogs) -> list[str]``: every disagreement between wirefall's
``analyze()`` frames and the frames tshark dissects, as readable lines (empty = they agree).
For each packet the ordered list of (stream id, type, length) of each protocol's frames is
compared, then the decoded header list (name, value) of every frame that carries headers.

tshark is run through ``subprocess`` with ``-T json --no-duplicate-keys -J "frame <layer>"``
rather than through pyshark: pyshark drives the same tshark but builds Python objects per
field over a pipe (minutes on a page load against seconds here), and its JSON mode loses
repeated keys — exactly the repeated ``http2.stream`` / ``http2.header`` entries compared.

Protocols are rows of ``PROTOCOLS`` (a ``Spec`` each); SPDY / QUIC / HTTP/3 add theirs with
``register(Spec(...))``: the tshark layer and unit keys, the fields compared, how to name
tshark's type values, which wirefall frames correspond, and any ``-d`` decode-as
arguments derived from the analysis (tshark has no heuristic for cleartext HTTP/2 on
arbitrary ports, so h2c connections that start with the preface are decoded as http2 on
their server port; h2c reached by Upgrade is found by tshark's own HTTP dissector).
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .model import Analysis, Frame

MAX_REPORTED = 500


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


PROTOCOLS: dict[str, Spec] = {}


def register(spec: Spec) -> None:
    PROTOCOLS[spec.name] = spec


def _h2_type(v: str) -> str:
    from dissectors.http2 import frame_name

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
    layer="http2",
    unit="http2.stream",
    protocols=("h2", "h2c"),
    fields={"stream_id": "http2.streamid", "length": "http2.length"},
    type_field="http2.type",
    type_name=_h2_type,
    skip=lambda u: "http2.type" not in u,  # the connection preface ("http2.magic")
    headers=("http2.header", "http2.header.name", "http2.header.value"),
    decode_as=_h2_decode_as,
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


def _as_list(v) -> list:
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


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


def _first(v):
    while isinstance(v, list):
        v = v[0] if v else None
    return v


@dataclass
class TFrame:
    packet: int
    time: float
    values: dict[str, str]
    type: str
    headers: list[tuple[str, str]] | None = None


def tshark_frames(path: str, spec: Spec, keylogs=None, extra_args: list[str] | None = None,
                  tshark: str = "tshark") -> list[TFrame]:
    """Frames of ``spec``'s protocol as tshark dissects them, in packet order."""
    args = list(extra_args or []) + ["-Y", spec.display_filter or spec.layer, "-T", "json", "--no-duplicate-keys",
                                     "-J", f"frame {spec.layer}"]
    out = run_tshark(path, args, keylogs, tshark)
    data = json.loads(out) if out.strip() else []
    frames: list[TFrame] = []
    for pkt in data:
        layers = pkt.get("_source", {}).get("layers", {})
        fr = layers.get("frame", {})
        num = int(_first(fr.get("frame.number")))
        ts = float(_first(fr.get("frame.time_epoch")))
        for u in _units(layers.get(spec.layer), spec.unit):
            if spec.skip(u):
                continue
            vals = {k: str(_first(u.get(v))) for k, v in spec.fields.items()}
            t = spec.type_name(str(_first(u.get(spec.type_field))))
            hdrs = None
            if spec.headers is not None:
                lk, nk, vk = spec.headers
                if lk in u:
                    hdrs = [(str(_first(h.get(nk, ""))), str(_first(h.get(vk, "")))) for h in _as_list(u[lk]) if isinstance(h, dict)]
            frames.append(TFrame(num, ts, vals, t, hdrs))
    return frames


# -- comparison ------------------------------------------------------------------------------
def _wf_key(f: Frame, spec: Spec) -> tuple:
    return (f.type,) + tuple(str(getattr(f, k)) for k in spec.fields)


def _tf_key(f: TFrame, spec: Spec) -> tuple:
    return (f.type,) + tuple(f.values[k] for k in spec.fields)


def _fmt(key: tuple, spec: Spec) -> str:
    return key[0] + "(" + ", ".join(f"{k}={v}" for k, v in zip(spec.fields, key[1:])) + ")"


def compare(an: Analysis, tframes: list[TFrame], spec: Spec) -> list[str]:
    out: list[str] = []
    wf: dict[int, list[Frame]] = {}
    for f in an.frames:
        if f.protocol in spec.protocols and not spec.wirefall_skip(f):
            wf.setdefault(f.packet, []).append(f)
    tf: dict[int, list[TFrame]] = {}
    for f in tframes:
        tf.setdefault(f.packet, []).append(f)
    for pkt in sorted(set(wf) | set(tf)):
        a = wf.get(pkt, [])
        b = tf.get(pkt, [])
        ka = [_wf_key(f, spec) for f in a]
        kb = [_tf_key(f, spec) for f in b]
        if ka != kb:
            out.append(f"packet {pkt}: {spec.name} frames differ: tshark [{', '.join(_fmt(k, spec) for k in kb)}], "
                       f"wirefall [{', '.join(_fmt(k, spec) for k in ka)}]")
            continue
        if spec.headers is None:
            continue
        for x, y in zip(a, b):
            if y.headers is None and not x.headers:
                continue
            hx = list(x.headers or [])
            hy = list(y.headers or [])
            if hx != hy:
                diff = next((i for i, (p, q) in enumerate(zip(hx, hy)) if p != q), min(len(hx), len(hy)))
                out.append(f"packet {pkt}: {spec.name} {x.type} stream {x.stream_id}: headers differ at #{diff}: "
                           f"tshark {hy[diff:diff + 1]} ({len(hy)} fields), wirefall {hx[diff:diff + 1]} ({len(hx)} fields)")
    return out


def crosscheck(path: str, keylogs: list[str] | None = None, protocols: Iterable[str] | None = None,
               analysis: Analysis | None = None, tshark: str = "tshark") -> list[str]:
    """Disagreements between wirefall and tshark on ``path`` (see the module docstring)."""
    if analysis is None:
        from .pipeline import analyze

        analysis = analyze(path, keylogs=keylogs)
    found: list[str] = []
    for name in protocols or list(PROTOCOLS):
        spec = PROTOCOLS[name]
        tframes = tshark_frames(path, spec, keylogs, spec.decode_as(analysis), tshark)
        found += compare(analysis, tframes, spec)
    if len(found) > MAX_REPORTED:
        found = found[:MAX_REPORTED] + [f"... {len(found) - MAX_REPORTED} more disagreements"]
    return found
