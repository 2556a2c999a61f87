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

Protocols are rows of ``PROTOCOLS`` (a ``Spec`` each, ``oracle.spec``): the tshark layer and unit
keys, the fields compared, how to name tshark's type values, which wirefall frames correspond, any
``-d`` decode-as arguments derived from the analysis (tshark has no heuristic for cleartext
HTTP/2 or SPDY on arbitrary ports), and -- in comments and in ``Spec.limits`` -- what tshark
4.0 is known to get wrong or cannot show, which is set aside and counted, nothing more.  Each
protocol's Spec is its own module, ``oracle/specs/<name>.py``, loaded here for every registry
descriptor with an ``oracle`` entry that has one (``load_specs``): a new protocol's comparison
is one new module, with no edit here.
"""
from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import ModuleType

from wirefall.analyzer.model import Analysis, NoteKind, notes_of
from wirefall.dissectors.registry import REGISTRY
from wirefall.oracle.spec import (  # noqa: F401 (re-exported: the names callers and tests use from here)
    MAX_REPORTED,
    PROTOCOLS,
    TCP_ARGS,
    Entry,
    Spec,
    TFrame,
    _extract,
    merged_keylog,
    run_tshark,
    tshark_available,
    tshark_frames,
    tshark_packets,
)


def load_specs() -> list[ModuleType]:
    """Import ``oracle/specs/<name>.py`` for each registry descriptor with an ``oracle``
    entry (in registry order); each registers its Spec in ``PROTOCOLS``."""
    out = []
    for d in REGISTRY.values():
        mod = f"{__package__}.specs.{d.name}"
        if d.oracle is not None and importlib.util.find_spec(mod) is not None:
            out.append(importlib.import_module(mod))
    return out


# (the spec modules' names, private ones included, stay readable here as before the split:
# tests name the documented limitations, e.g. ``crosscheck._TLS_NO_SH``)
for _mod in load_specs():
    globals().update({k: v for k, v in vars(_mod).items() if not k.startswith("__") and k not in globals()})


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
    packets_matched: int = 0  # packets where both sides show the same frames (``matched`` counts their frames)
    packets_differ: int = 0  # packets where the frames differ (one ``problems`` line each)
    headers_differ: int = 0  # header lists that differ (one ``problems`` line each)


_GAP = ("frames after bytes missing from the capture in their direction (tshark's TCP reassembly waits for the "
        "missing bytes and shows nothing more there; wirefall resynchronises)")
_TLS_TRIAL = ("frames of a TLS connection the capture joined mid-way, decrypted with keys found by trying the key "
              "log's secrets (analyzer/sessions/tls_late.py): tshark cannot decrypt it without its ClientHello "
              "(tests/test_late_multi.py checks these requests against Chromium's NetLog)")


def _tcp_trial_conns(an: Analysis) -> set[int]:
    """TCP connections whose TLS keys were found by trial (no ClientHello in the capture)."""
    return {c.id for c in an.connections if c.transport == "tcp" and any(notes_of(c.notes, NoteKind.KEYS_BY_TRIAL))}


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
    trial = _tcp_trial_conns(an)
    if trial:  # wirefall's frames in packets of such a connection where tshark shows none: set aside, counted
        shown = {t.packet for t in tframes}
        kept = [e for e in entries if not (e.frame.connection in trial and e.packet not in shown)]
        if len(kept) != len(entries):
            res.set_aside[_TLS_TRIAL] = res.set_aside.get(_TLS_TRIAL, 0) + len(entries) - len(kept)
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
            res.packets_differ += 1
            continue
        res.matched += len(b)
        res.packets_matched += 1
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
                res.headers_differ += 1
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
