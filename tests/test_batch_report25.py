"""The batch report says what its medians rest on (review 24, batch finding 1, 2, 10): a
truncated load, a capture not decrypted and a browser log beside its own capture were counted
without a word, a log's packets and bytes as 0, and the whitepaper table gave no n.

Truth: the truncated copy's packet count is tshark's on the same bytes; page-h2's packets and
bytes are its own pages row (tshark-checked in test_batch); the HAR is Chromium's for pw-h2."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import SAMPLES
from wirefall.analyzer.pipeline import analyze

PAGE = SAMPLES / "page"


def _row(path: Path, keys: Path | None, **cond):
    from wirefall.analyzer.batch.rows import page_row
    from wirefall.analyzer.keylog import load_keylog
    from wirefall.analyzer.stats import compute

    an = analyze(str(path), keylog=load_keylog([str(keys)] if keys else [], use_env=False))
    return page_row(an, compute(an), dict(cond, capture=str(path)))


def test_report_flags_incomplete_undecrypted_and_browser_log_loads(tmp_path):
    pytest.importorskip("pyarrow")
    from wirefall.analyzer.batch.summary import summarise
    from wirefall.ui.batch_report import render_html, whitepaper_table

    data = (PAGE / "page-h1.pcapng").read_bytes()
    cut = tmp_path / "trunc-h1.pcapng"
    cut.write_bytes(data[: len(data) * 6 // 10])
    rows = [_row(cut, PAGE / "page-h1.keys"), _row(PAGE / "page-h1.pcapng", PAGE / "page-h1.keys"),
            _row(PAGE / "page-h3.pcapng", None),  # no key log: no request decrypted
            _row(PAGE / "pw-h2.pcapng", PAGE / "pw-h2.keys"), _row(PAGE / "pw-h2.har.gz", None)]
    trunc, whole, h3, h2, har = rows
    out = subprocess.run(["tshark", "-n", "-r", str(cut), "-T", "fields", "-e", "frame.number"], capture_output=True, text=True)
    assert trunc["packets_c2s"] + trunc["packets_s2c"] <= len(out.stdout.split()) and trunc["complete"] is False
    assert whole["complete"] is True and h3["protocol"] is None and har["format"] == "har" and h2["protocol"] == har["protocol"] == "h2"
    s = summarise(rows, ["protocol"])
    g = {x["series"]: x for x in s["groups"]}
    assert (g["http/1.1"]["captures"], g["http/1.1"]["incomplete"]) == (2, 1)
    assert (g["h2"]["captures"], g["h2"]["browser_logs"], g["h2"]["incomplete"]) == (2, 1, 0)
    # a log has no packets or bytes: left out (n 1, the capture's own), not a 0 that halves the median
    pk = g["h2"]["metrics"]["packets"]
    assert pk["n"] == 1 and pk["median"] == h2["packets_c2s"] + h2["packets_s2c"] and pk["min"] > 0
    assert g["h2"]["metrics"]["bytes"]["median"] == h2["bytes_c2s"] + h2["bytes_s2c"]
    assert g["h2"]["metrics"]["page_load_time"]["n"] == 2  # (its load time is a load's: counted, and warned of)
    kinds = {(w["kind"], tuple(w["series"])): w for w in s["warnings"]}
    inc = kinds["incomplete_loads", ("http/1.1",)]["text"]
    assert inc.startswith("http/1.1 · all: 1 of 2 load(s) incomplete") and "capture damaged" in inc, inc
    assert "not decrypted" in kinds["incomplete_loads", ("–",)]["text"]  # (page-h3 without its keys)
    assert ("incomplete_loads", ("h2",)) not in kinds  # (the HAR's "no packets" is the browser_logs warning's)
    kinds = {w["kind"]: w for w in s["warnings"]}
    assert kinds["protocol_unknown"]["text"].startswith("1 capture(s) have no protocol")
    assert kinds["browser_logs"]["series"] == ["h2"] and "1 browser log(s) (har)" in kinds["browser_logs"]["text"]
    (row,) = s["whitepaper"]
    assert row["n"]["http/1.1"] == 2 and row["incomplete"]["http/1.1"] == 1
    table = whitepaper_table(s)
    assert "(n 2, 1 incomplete)" in table and "(n 2)" in table
    page = render_html(s, [], [], [], "out")
    import html

    assert all(html.escape(w["text"]) in page for w in s["warnings"])
    json.dumps(s)  # (report.json)
