"""Hostile HARs against the fields the browser-log readers gained on 2026-12-02..04
(scripts/hostile/browserlog23_inputs.py builds them from WebPageTest's amazon HAR and
Playwright's pw-h2).  Red-team findings (2026-12-04), each before its fix:

* ``headersSize``/``bodySize``/``content.size`` of 10**400 (valid JSON): ``wirefall export``
  (HAR, JSON, HTML) died with "OverflowError: integer division result too large for a float";
  wirefall's own ``_header_bytes_wire`` of 2**63 was written back as ``headersSize``
  9223372036854775808 (beyond every int64 HAR reader).
* ``timings`` of 1e308 ms: ``wirefall requests --json`` and ``export -o x.har|x.json`` died with
  "OverflowError: cannot convert float infinity to integer" (seven phases of 1e305 s end to end).
* a page whose ``startedDateTime`` is year 1, opened alone: ``stats --json`` gave a TTFB and
  page load of 63 910 166 162 s (2000 years), timed from that page start.

Outside truth: the HAR's own JSON (read here with ``json``), the HAR 1.2 schema, exit codes.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT, shared

sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
import browserlog23_inputs as B  # noqa: E402

SCHEMA = json.loads((Path(__file__).parent / "data" / "har-1.2.schema.json").read_text())
MAX_MS = 30 * 86_400_000  # the longest phase the reader takes (analyzer.browserlog.har.MAX_PHASE_MS)
MAX_SIZE = (1 << 53) - 1


def _run(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "wirefall", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return r.stdout


def _requests(path: Path) -> list[dict]:
    out = json.loads(_run("requests", "--json", str(path)))
    return out if isinstance(out, list) else out["requests"]


def _entries(path: Path) -> list[dict]:
    return json.loads(path.read_text())["log"]["entries"]


def _size_truth(v) -> int:
    """What headersSize a HAR export should write for the log's own value ``v``."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        return -1
    try:
        n = int(v) if not isinstance(v, float) or (math.isfinite(v) and v.is_integer()) else None
    except ValueError:
        return -1
    return n if n is not None and 0 <= n <= MAX_SIZE and (not isinstance(v, str) or len(v) < 20) else -1


def test_huge_sizes_export_valid_har_with_the_logs_sane_sizes(tmp_path):
    har = B.huge_sizes(tmp_path)
    src = {e["request"]["url"]: e for e in _entries(har)}
    for ext in ("json", "html"):
        _run("export", str(har), "-o", str(tmp_path / f"x.{ext}"))
    out = tmp_path / "x.har"
    _run("export", str(har), "-o", str(out))
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    got = doc["log"]["entries"]
    assert sorted(e["request"]["url"] for e in got) == sorted(src)
    for e in got:
        want = src[e["request"]["url"]]
        for side in ("request", "response"):
            assert e[side]["headersSize"] == _size_truth(want[side]["headersSize"]), (side, want[side]["headersSize"])
    # read back: the same requests, each with the browser's sizes it wrote
    back = _requests(out)
    assert sorted(r["url"] for r in back) == sorted(src)
    for r in back:
        want = src[r["url"]]
        hs = {s: _size_truth(want[s]["headersSize"]) for s in ("request", "response")}
        assert r["browser"]["headers_size"] == {s: (v if v >= 0 else None) for s, v in hs.items()}


def test_huge_timings_are_not_times(tmp_path):
    har = B.huge_timings(tmp_path)
    src = {e["request"]["url"]: e for e in _entries(har)}

    def ok(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= MAX_MS  # (NaN compares false)

    sent = [u for u, e in src.items() if any(ok(e["timings"][k]) for k in ("connect", "send", "wait", "receive"))]
    rows = _requests(har)
    # (since review 24 an entry that never reached the network is a row too, marked ``not_sent``)
    assert sorted(r["url"] for r in rows) == sorted(src)
    reqs = [r for r in rows if not r["browser"].get("not_sent")]
    assert sorted(r["url"] for r in reqs) == sorted(sent) and 0 < len(sent) < len(src)
    for r in reqs:
        tm = src[r["url"]]["timings"]
        ph = r["browser"]["phases"]
        for k in ("dns", "send", "wait", "receive"):
            if ok(tm[k]):
                assert ph[k] == pytest.approx(tm[k] / 1000.0, abs=1e-5), (k, tm)
            else:
                assert ph[k] in (None, 0.0), (k, tm)
        t0 = datetime.fromisoformat(src[r["url"]]["startedDateTime"].replace("Z", "+00:00")).timestamp()
        for t in r["browser"]["times"].values():
            assert t is None or t0 - 1 <= t <= t0 + 7 * MAX_MS / 1000.0
    out = tmp_path / "x.har"
    _run("export", str(har), "-o", str(out))
    jsonschema.validate(json.loads(out.read_text()), SCHEMA)
    assert sorted(r["url"] for r in _requests(out)) == sorted(src)  # (every row exported, the not-sent ones too)


def _want_wire(hw, hb, side):
    """The wire header bytes wirefall's HAR gives for ``side`` (None: not known)."""
    if not (isinstance(hw, dict) and isinstance(hb, dict)):
        return "absent"
    v = hw.get(side)
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_SIZE else None


def test_wirefall_own_odd_header_bytes(tmp_path):
    har = B.wirefall_odd_sizes(tmp_path)
    src = {e["request"]["url"]: e for e in _entries(har)}
    reqs = _requests(har)
    assert sorted(r["url"] for r in reqs) == sorted(src)
    for r in reqs:
        e = src[r["url"]]
        for side in ("request", "response"):
            want = _want_wire(e["_header_bytes_wire"], e["_header_bytes_decoded"], side)
            if want == "absent":  # not wirefall's dict pair: the wire's bytes are unknown
                assert r[f"{side}_header_bytes_wire"] is None
            else:
                assert r[f"{side}_header_bytes_wire"] == want, (side, e["_header_bytes_wire"])
        pp = e["_push_parent"]
        assert r["push_parent"] == (pp if isinstance(pp, int) and not isinstance(pp, bool) and 0 <= pp < 1 << 62 else None)
        rs = e["_reset"]  # an error code's name (HTTP/2 RST_STREAM): a string, kept to 200 characters
        assert r["reset"] == (rs[:200] if isinstance(rs, str) else None)
    out = tmp_path / "x.har"
    _run("export", str(har), "-o", str(out))
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    for e in doc["log"]["entries"]:
        for side in ("request", "response"):
            assert -1 <= e[side]["headersSize"] <= MAX_SIZE
    back = {r["url"]: r for r in _requests(out)}
    assert sorted(back) == sorted(src)
    for r in reqs:  # the wire sizes read back as they were read
        for side in ("request", "response"):
            assert back[r["url"]][f"{side}_header_bytes_wire"] == r[f"{side}_header_bytes_wire"]


def test_page_start_far_before_its_requests_is_not_the_start(tmp_path):
    shared("hars/webpagetest-amazon.har.gz")
    har = B.page_start_year1(tmp_path)
    log = json.loads(har.read_text())["log"]
    page = log["pages"][0]
    ents = [e for e in log["entries"] if e.get("pageref") == page["id"]]
    starts = [datetime.fromisoformat(e["startedDateTime"]).timestamp() for e in ents]
    ends = [s + e["time"] / 1000.0 for s, e in zip(starts, ents, strict=True)]
    span = max(ends) - min(starts)  # the HAR's own load: its first request's start to its last response's end
    st = json.loads(_run("stats", "--json", str(har)))["capture"]
    assert 0 < st["ttfb"] < st["page_load_time"] <= span + 0.5


def test_wpt_odd_setup_pairs_keep_the_logs_own_times(tmp_path):
    """Finding: a ``_dns_start`` (or any WebPageTest set-up time, or a timing) of 10**400 —
    valid JSON — stopped every command: "OverflowError: int too large to convert to float"
    (records.num).  Truth: WebPageTest's own ``_all_start``/``_all_end`` (ms from the page's
    start) of each entry, and its ``_dns_start``/``_dns_end`` where untouched."""
    shared("hars/webpagetest-amazon.har.gz")
    har = B.wpt_odd_pairs(tmp_path)
    log = json.loads(har.read_text())["log"]
    p0 = {p["id"]: datetime.fromisoformat(p["startedDateTime"]).timestamp() for p in log["pages"]}
    reqs = _requests(har)
    page1 = [i for i, e in enumerate(log["entries"]) if e["pageref"] == log["pages"][0]["id"]]
    assert sorted(int(r["browser"]["id"]) for r in reqs) == page1
    for r in reqs:
        i = int(r["browser"]["id"])
        e = log["entries"][i]
        t, base = r["browser"]["times"], p0[e["pageref"]]
        assert (t["start"] - base) * 1000 == pytest.approx(e["_all_start"], abs=1.5), i
        assert (t["response_end"] - base) * 1000 == pytest.approx(e["_all_end"], abs=1.5), i
        if i % 2 == 0 and e["_dns_start"] >= 0:
            assert (t["dns_start"] - base) * 1000 == pytest.approx(e["_dns_start"], abs=0.01), i
            assert (t["dns_end"] - base) * 1000 == pytest.approx(e["_dns_end"], abs=0.01), i
    for cmd in ("summary", "stats"):
        json.loads(_run(cmd, "--json", str(har)))
    out = tmp_path / "x.har"
    _run("export", str(har), "-o", str(out))
    jsonschema.validate(json.loads(out.read_text()), SCHEMA)
    assert sorted(r["url"] for r in _requests(out)) == sorted(r["url"] for r in reqs)
