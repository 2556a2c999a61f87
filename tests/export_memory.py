"""The export memory measurement tests/test_export29.py and test_export_json29.py share: in a
child process, ``wirefall``'s export of benchmarks/corpus/h2-requests.pcap (63 k requests), its
peak RSS over the finished analysis (VmHWM after resetting it through /proc/self/clear_refs) and
that of building the waterfall alone."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "benchmarks" / "corpus"

_CHILD = textwrap.dedent("""
    import gc, json, os, sys
    os.environ.pop("SSLKEYLOGFILE", None)
    from wirefall.analyzer.pipeline import analyze
    from wirefall.analyzer.waterfall import build
    from wirefall.ui.exports import export

    def kb(field):
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith(field + ":"))

    def reset_peak():
        with open("/proc/self/clear_refs", "w") as f:  # (5: the peak RSS starts again from the current RSS)
            f.write("5")

    cap, keys, out, fmt = sys.argv[1:5]
    an = analyze(cap, keylogs=[keys])
    gc.collect()
    base = kb("VmRSS")
    reset_peak()
    wf = build(an)  # the waterfall every export makes (and holds while it writes)
    wf_kb = kb("VmHWM") - base
    del wf
    gc.collect()
    base = kb("VmRSS")
    reset_peak()
    export(an, out, fmt=fmt)
    print(json.dumps({"exchanges": len(an.exchanges), "frames": len(an.frames), "waterfall_kb": wf_kb,
                      "export_kb": kb("VmHWM") - base, "size": os.path.getsize(out)}))
""")


def export_peak(fmt: str, tmp_path: Path) -> dict:
    """{exchanges, frames, waterfall_kb, export_kb, size} of exporting h2-requests as ``fmt``;
    skips where the corpus or /proc/self/clear_refs is missing."""
    cap, keys = CORPUS / "h2-requests.pcap", CORPUS / "h2-requests.keys"
    if not cap.exists() or not keys.exists():
        pytest.skip("benchmarks/corpus/h2-requests.pcap not made (benchmarks/bench.py)")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pytest.skip("no /proc/self/clear_refs to reset the peak RSS")
    out = tmp_path / f"x.{fmt}"
    r = subprocess.run([sys.executable, "-c", _CHILD, str(cap), str(keys), str(out), fmt], capture_output=True, text=True,
                       timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.splitlines()[-1])
