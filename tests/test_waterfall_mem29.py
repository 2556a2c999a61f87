"""The waterfall model's rows hold less (review 29): a row took ~3 KB on 63 k requests
(benchmarks/corpus/h2-requests.pcap: 188 MB traced after ``build``, peak 205 MB), ~0.9 KB
of it hover text made for every row whether a figure asked for it or not, and ~16 KB on
aioquic-h3-cut, whose rows each held 64 flow-control stall markers of their own.  Now
``Row.hover`` is made when read (``waterfall.hover_lines``, from the row and its shared
``HoverFacts``), ``Row.packets``/``sizes`` are dicts made when read from tuples, and what many
rows hold alike is one object (colour dicts, connection labels, host names, a connection's
stall and loss markers).

The truth is the code before the change: every bundled capture's hover lines, model dict
(``Waterfall.to_dict``: what ``export json`` writes) and hover figure JSON (what ``export
html`` and the web page draw) hash as they did.  tests/data/waterfall_mem29.json holds those
hashes, written by ``python tests/test_waterfall_mem29.py --write`` run on the tree before the
change (its eager ``Row.hover``: analyzer/waterfall.py, analyzer/waterfall_model.py as of
review 29's start) and checked equal on the code after it.  A later change that alters these
outputs on purpose rewrites them the same way, saying why."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

try:
    from conftest import ROOT, SAMPLES, analysed, sample_captures
except ImportError:  # (run as a script: --write)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conftest import ROOT, SAMPLES, analysed, sample_captures

DATA = Path(__file__).parent / "data" / "waterfall_mem29.json"
CORPUS = ROOT / "benchmarks" / "corpus"
PAGE = SAMPLES / "page"
# browser logs laid over their captures (browser bars, their hover lines): (capture, keys, [(kind, log)])
OVERLAID = [(PAGE / "page-h2.pcapng", [str(PAGE / "page-h2.keys")], [("netlog", PAGE / "page-h2.netlog.json.gz")]),
            (PAGE / "pw-h2.pcapng", [str(PAGE / "pw-h2.keys")], [("har", PAGE / "pw-h2.har.gz")])]
CASES = [(p, k, []) for p, k in sample_captures()] + OVERLAID


def _id(case) -> str:
    p, _k, logs = case
    return str(p.relative_to(SAMPLES)) + "".join("+" + kind for kind, _ in logs)


def _h(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()[:24]


def _analysis(case):
    p, keys, logs = case
    if not logs:
        return analysed(p, keys)
    from wirefall.analyzer.browserlog import overlay
    from wirefall.analyzer.pipeline import analyze

    an = analyze(str(p), keylogs=keys)
    for kind, log in logs:
        overlay(an, str(log), kind=kind)
    return an


def _hashes(an) -> dict[str, str]:
    """The outputs that read the rows: their hover lines, the model's dict, the hover figure."""
    from wirefall.analyzer.waterfall import build
    from wirefall.ui.figures import waterfall_figure

    wf = build(an)
    return {"hover": _h(json.dumps([r.hover for r in wf.rows], ensure_ascii=False)),
            "model": _h(json.dumps(wf.to_dict(), default=str)),
            "figure": _h(waterfall_figure(wf, hover=True, responsive=True).to_json())}


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_rows_hover_model_and_figure_are_the_former_codes(case):
    """Each bundled capture's hover lines (made on demand now), ``to_dict`` (packets and sizes
    read through the tuples) and hover figure JSON hash as the eager code's did."""
    pytest.importorskip("plotly")
    want = json.loads(DATA.read_text())[_id(case)]
    assert _hashes(_analysis(case)) == want


def _held_per_row(an, wf) -> float:
    """Bytes the rows hold of their own (``sys.getsizeof``, each object once), leaving out
    what the analysis already holds (the exchanges' values), and the hover lines when they are
    made on demand (a figure's, not the model's)."""
    shared = {id(None), id(True), id(False)}
    for e in an.exchanges:
        held = getattr(e, "__dict__", None)
        shared.update(id(v) for v in (held.values() if held is not None else (getattr(e, s, None) for s in e.__slots__)))
    seen: set[int] = set()

    def deep(o) -> int:
        if id(o) in seen or id(o) in shared:
            return 0
        seen.add(id(o))
        n = sys.getsizeof(o)
        if isinstance(o, dict):
            n += sum(deep(k) + deep(v) for k, v in o.items())
        elif isinstance(o, (list, tuple)):
            n += sum(deep(x) for x in o)
        elif hasattr(o, "__slots__") and not isinstance(o, (str, int, float)):
            n += sum(deep(getattr(o, s)) for s in o.__slots__ if hasattr(o, s))
        return n

    return sum(deep(r) for r in wf.rows) / max(len(wf.rows), 1)


@pytest.mark.parametrize("cap,limit", [("quic/aioquic-h3-cut.pcap", 4000), ("page/page-h2.pcapng", 2000)])
def test_rows_hold_a_fraction_of_what_they_did(cap, limit):
    """aioquic-h3-cut: 126 of 130 rows each show 65 stall markers (64 and "N more"); each row
    made its own 64 markers and labels, 15.9 KB a row held (now ~2.0 KB: the connection's
    markers are shared).  page-h2: 3.7 KB a row (now ~1.6 KB)."""
    from wirefall.analyzer.waterfall import build

    p = SAMPLES / cap
    an = analysed(p, [str(p.with_suffix(".keys"))])
    wf = build(an)
    assert wf.rows
    per_row = _held_per_row(an, wf)
    assert per_row < limit, per_row
    if "cut" in cap:  # the markers of one event: one object, in every row whose span holds it
        stalls = [m for r in wf.rows for m in r.markers if m.kind == "stall" and m.packet is not None]
        assert len(stalls) > 64 * 100 and len({id(m) for m in stalls}) <= 200, len({id(m) for m in stalls})


def test_hover_follows_the_row_as_drawn():
    """The hover is the row's own: made from the row when read, it names the row's markers and
    says background where the page left the row out (bg-mixed's metadata long-poll)."""
    from wirefall.analyzer.waterfall import build

    p = PAGE / "bg-mixed.pcapng"
    wf = build(analysed(p, [str(p.with_suffix(".keys"))]))
    bg = [r for r in wf.rows if r.background]
    assert bg and all(r.hover[-1] == f"background, not the page's: {r.background_reason}" for r in bg)
    assert not any(h.startswith("background") for r in wf.rows if not r.background for h in r.hover)
    assert "hover" not in type(wf.rows[0]).__slots__  # (not held)


# ------------------------------------------------------------------------ memory (slow)

_CHILD = textwrap.dedent("""
    import gc, json, os, sys
    os.environ.pop("SSLKEYLOGFILE", None)
    from wirefall.analyzer.pipeline import analyze
    from wirefall.analyzer.waterfall import build

    def kb(field):
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith(field + ":"))

    cap, keys = sys.argv[1:3]
    an = analyze(cap, keylogs=[keys])
    gc.collect()
    base = kb("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:  # (5: the peak RSS starts again from the current RSS)
        f.write("5")
    wf = build(an)
    gc.collect()
    print(json.dumps({"rows": len(wf.rows), "peak_kb": kb("VmHWM") - base, "held_kb": kb("VmRSS") - base}))
""")


@pytest.mark.slow
def test_h2_requests_waterfall_takes_under_2_kb_a_row():
    """On 63 k requests (benchmarks/corpus/h2-requests.pcap, made by benchmarks/bench.py with
    nghttpd and h2load), building the waterfall raises the peak RSS by under 2 KB a row
    (before: 3.3 KB, 203 MB; now 1.45 KB, 89 MB)."""
    cap, keys = CORPUS / "h2-requests.pcap", CORPUS / "h2-requests.keys"
    if not cap.exists() or not keys.exists():
        pytest.skip("benchmarks/corpus/h2-requests.pcap not made (benchmarks/bench.py)")
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("no /proc/self/clear_refs to reset the peak RSS")
    r = subprocess.run([sys.executable, "-c", _CHILD, str(cap), str(keys)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    m = json.loads(r.stdout.splitlines()[-1])
    assert m["rows"] >= 60000
    assert m["peak_kb"] * 1024 / m["rows"] < 2048, m


def _write() -> None:
    """tests/data/waterfall_mem29.json from the code at hand (see the module's docstring)."""
    out = {_id(c): _hashes(_analysis(c)) for c in CASES}
    DATA.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {DATA} ({len(out)} captures)")


if __name__ == "__main__" and "--write" in sys.argv:
    _write()
