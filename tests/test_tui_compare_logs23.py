"""`wirefall tui A --compare B --har LA --har-b LB`: each side's browser log laid over it in the
TUI's compare view, as `wirefall compare` does (the TUI's compare read A and B bare: its load
event rows read – on both sides where the CLI gave 0.199 and 0.244 s).  Outside truth: the
CLI's `compare --json` with the same logs (whose figures tests/test_compare_har_b23.py checks
against each HAR's pageTimings and `stats --har`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLES
from tuifix import sync, wait_compare

textual = pytest.importorskip("textual")

from wirefall.ui.tui.app import WirefallApp  # noqa: E402

PAGE = SAMPLES / "page"


@sync
async def test_tui_compare_lays_each_sides_log_over_it():
    a, b = PAGE / "pw-h1.pcapng", PAGE / "pw-h2.pcapng"
    ka, kb, la, lb = PAGE / "pw-h1.keys", PAGE / "pw-h2.keys", PAGE / "pw-h1.har.gz", PAGE / "pw-h2.har.gz"
    r = subprocess.run([sys.executable, "-m", "wirefall", "compare", str(a), str(b), "--keylog", str(ka), "--keylog-b", str(kb),
                        "--har", str(la), "--har-b", str(lb), "--json"], capture_output=True, text=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)["page"]
    assert cli["load_event"]["a"] is not None and cli["load_event"]["b"] is not None
    app = WirefallApp(str(a), [str(ka)], compare=str(b), keylogs_b=[str(kb)], overlays=[("har", str(la))],
                      overlays_b=[("har", str(lb))])
    async with app.run_test(size=(160, 45)) as pilot:
        scr = await wait_compare(pilot, app, steps=600, settle=0.1)
        assert scr.loaded, scr.error
        page = scr.res["page"]
        for k in ("load_event", "dom_content_loaded"):
            for side in ("a", "b"):
                assert page[k][side] == pytest.approx(cli[k][side], abs=1e-9), (k, side)
        # the table's row shows both (ms, as the TUI's page table gives times)
        from textual.widgets import DataTable

        t = scr.query_one("#cmp-page", DataTable)
        rows = [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]
        row = next(rw for rw in rows if rw[0].startswith("browser load event"))
        assert "–" not in row[1:3], row
    # A's log is laid over once (the main view reads the analysis the compare view handed back)
    logs = [s for s in ((app.an.browser or {}).get("logs") or ()) if "matched" in s] if app.an is not None else []
    assert len(logs) <= 1
