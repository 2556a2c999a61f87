"""A HAR of several pages shows one page at a time (analyzer/browserlog/pages.py).

Outside truth: WebPageTest's HAR of two runs of amazon.com (``hars/webpagetest-amazon.har.gz``:
"Run 1, First View" and "Run 2, First View", 15 entries each, 17 s apart), read here with
nothing but ``json`` — its pages, their ``pageTimings``, each entry's ``pageref`` and
WebPageTest's own per-entry times in ms from the page's start (``_load_start``,
``_ttfb_end``, ``_download_end``) —, and tshark on the amazon capture of the first run.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, run_tool, shared

from wirefall.analyzer.browserlog import BrowserLogError, open_any, overlay, read_log
from wirefall.analyzer.browserlog import comparison as cmp
from wirefall.analyzer.browserlog.pages import notice, select, split
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.waterfall import build

WPT = "hars/webpagetest-amazon.har.gz"
NOTICE = ("HAR has 2 pages; showing page 1 'Run 1, First View for https://www.amazon.com' (15 entries), the first; "
          "--har-page 2 for 'Run 2, First View for https://www.amazon.com', --har-page all for every page")


def _epoch(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def _raw(p: Path) -> dict:
    return json.loads(gzip.decompress(p.read_bytes()))["log"]


def _cli(*args, check=True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "wirefall", *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(p.stderr)
    return p


def _write_har(path: Path, log: dict) -> Path:
    path.write_text(json.dumps({"log": log}))
    return path


@pytest.mark.parametrize("number", [1, 2])
def test_wpt_har_alone_shows_one_run(number):
    """Opened alone, the HAR shows one run — page 1 by default, page 2 when asked: exactly
    the entries whose pageref is that page's, the page's own onLoad as the one load event,
    its last byte and its HTML's first byte where WebPageTest's own fields put them, on an
    axis of that run (≈3.7 s), not of both (21 s); the summary says which page of how many."""
    p = shared(WPT)
    raw = _raw(p)
    pg = raw["pages"][number - 1]
    start = _epoch(pg["startedDateTime"])
    mine = [en for en in raw["entries"] if en["pageref"] == pg["id"]]
    assert len(mine) == 15 and len(raw["entries"]) == 30
    an = open_any(str(p), limits=None if number == 1 else {"har_page": number})
    assert sorted(e.url for e in an.exchanges) == sorted(en["request"]["url"] for en in mine)
    # WebPageTest's own times of each entry (ms from its page's start): the send at startedDateTime,
    # the response's first and last byte (within the HAR's millisecond)
    by_url: dict[str, list] = {}
    for en in mine:
        by_url.setdefault(en["request"]["url"], []).append(en)
    for e in an.exchanges:
        en = min(by_url[e.url], key=lambda x: abs(_epoch(x["startedDateTime"]) - e.request_start))
        by_url[e.url].remove(en)
        assert e.request_start == pytest.approx(_epoch(en["startedDateTime"]), abs=1e-6)
        assert e.response_start == pytest.approx(start + en["_ttfb_end"] / 1000.0, abs=0.0015), e.url
        assert e.response_end == pytest.approx(start + en["_download_end"] / 1000.0, abs=0.0015), e.url
    # the summary: which page of how many, the others' entries counted apart
    b = an.browser
    log = b["logs"][0]
    assert (log["requests"], log["sent"], log["other_pages"], log["pages_in_log"]) == (30, 15, 15, 2)
    shown = log["page_shown"]
    assert (shown["number"], shown["of"], shown["id"], shown["title"], shown["entries"], shown["how"]) == (
        number, 2, pg["id"], pg["title"], 15, "first" if number == 1 else "asked")
    assert [o["number"] for o in shown["other_pages"]] == [3 - number]
    # the page's own timings, the other's not
    assert [x["id"] for x in b["pages"]] == [pg["id"]]
    assert b["pages"][0]["on_load"] == pytest.approx(start + pg["pageTimings"]["onLoad"] / 1000.0, abs=1e-6)
    wf = build(an)
    ms = {m.name: m for m in wf.milestones}
    assert [(m.name, m.label) for m in wf.milestones if m.name in ("load_event", "dom_content_loaded")] == [
        ("load_event", "Load event (HAR)")]  # (onContentLoad −1: none)
    assert ms["load_event"].time == pytest.approx(start + pg["pageTimings"]["onLoad"] / 1000.0, abs=1e-6)
    last = max(start + en["_download_end"] / 1000.0 for en in mine)
    assert ms["page_load"].time == pytest.approx(last, abs=0.0015)  # WebPageTest's fullyLoaded
    assert ms["page_load"].time == pytest.approx(start + pg["_fullyLoaded"] / 1000.0, abs=0.0015)
    doc = next(en for en in mine if en["_request_type"] == "Document")
    assert ms["html_first_byte"].time == pytest.approx(start + doc["_ttfb_end"] / 1000.0, abs=0.0015)
    assert len(wf.rows) == 15 and wf.t_end - wf.t0 < 4.0  # one run (the two together spanned 21.4 s)


def test_wpt_har_page_choice_on_the_command_line(tmp_path):
    """The CLI says which page it shows and how to see the others (stderr, once); --har-page
    N shows page N, all every page (no notice), a page the HAR lacks is an error (exit 2);
    the export's JSON says which page it drew, of how many."""
    p = shared(WPT)
    run = _cli("requests", p, "--json")
    assert len(json.loads(run.stdout)) == 15
    assert f"wirefall: note: {NOTICE}" in run.stderr and run.stderr.count("HAR has 2 pages") == 1
    run = _cli("requests", p, "--json", "--har-page", "2")
    assert {e["browser"]["id"] for e in json.loads(run.stdout)} == {str(i) for i in range(15, 30)}
    assert "showing page 2 'Run 2, First View for https://www.amazon.com' (15 entries), as asked; --har-page 1 for" in run.stderr
    run = _cli("requests", p, "--json", "--har-page", "all")
    assert len(json.loads(run.stdout)) == 30 and "HAR has" not in run.stderr
    bad = _cli("summary", p, "--har-page", "3", check=False)
    assert bad.returncode == 2 and "the HAR has 2 pages: there is no page 3" in bad.stderr
    bad = _cli("summary", p, "--har-page", "0", check=False)
    assert bad.returncode == 2 and "a page number (1, 2, …) or all" in bad.stderr
    out = tmp_path / "har.json"
    _cli("export", p, "-o", out)
    d = json.loads(out.read_text())
    shown = d["summary"]["browser"]["logs"][0]["page_shown"]
    assert (shown["number"], shown["of"], shown["notice"]) == (1, 2, NOTICE)
    assert len(d["exchanges"]) == len(d["waterfall"]["rows"]) == 15


def test_entries_without_pageref_stay_with_the_page_they_fall_in(tmp_path):
    """An entry without a pageref (or naming no page) is kept with the page in whose time it
    started (from that page's startedDateTime to the next page's; before every page: the
    first to start) and counted as such; a HAR's first page without entries (DevTools'
    about:blank) is passed over by default; a HAR of one page is shown whole."""
    raw = _raw(shared(WPT))
    runs = [[en for en in raw["entries"] if en["pageref"] == pg["id"]] for pg in raw["pages"]]
    runs[0][3].pop("pageref")
    runs[1][5]["pageref"] = "no such page"
    runs[1][6].pop("pageref")
    early = json.loads(json.dumps(runs[1][0]))  # a copy of run 2's first entry, started before both pages, no pageref
    early.pop("pageref")
    early["startedDateTime"] = "2026-03-26T23:50:00.000+00:00"
    har = _write_har(tmp_path / "unpaged.har", dict(raw, entries=[early] + runs[0] + runs[1]))
    pages = split(read_log(str(har)))
    assert [(pg.number, len(pg.requests), pg.unpaged) for pg in pages] == [(1, 16, 2), (2, 15, 2)]
    an = open_any(str(har))
    shown = an.browser["logs"][0]["page_shown"]
    assert (shown["entries"], shown["unpaged_entries"], shown["other_pages_entries"]) == (16, 2, 15)
    assert "(16 entries, 2 without pageref placed by time), the first;" in notice(shown)
    urls = sorted(e.url for e in an.exchanges)
    assert urls == sorted([early["request"]["url"]] + [en["request"]["url"] for en in runs[0]])
    # an empty first page: the first with entries is shown
    raw = _raw(shared(WPT))
    runs = [[en for en in raw["entries"] if en["pageref"] == pg["id"]] for pg in raw["pages"]]
    blank = {"startedDateTime": "2026-03-26T23:56:00.000+00:00", "id": "blank", "title": "about:blank", "pageTimings": {}}
    har = _write_har(tmp_path / "blank.har", dict(raw, pages=[blank] + raw["pages"]))
    an = open_any(str(har))
    shown = an.browser["logs"][0]["page_shown"]
    assert (shown["number"], shown["of"], shown["entries"]) == (2, 3, 15)
    assert "showing page 2 'Run 1, First View for https://www.amazon.com' (15 entries), the first with entries;" in shown["notice"]
    # one page: the whole HAR, nothing to say
    one = _write_har(tmp_path / "one.har", dict(raw, pages=raw["pages"][:1], entries=runs[0]))
    an = open_any(str(one))
    log = an.browser["logs"][0]
    assert (log["pages_in_log"], log["page_shown"], log["other_pages"], len(an.exchanges)) == (1, None, 0, 15)
    with pytest.raises(BrowserLogError, match="the HAR has 1 page: there is no page 2"):
        open_any(str(one), limits={"har_page": 2})
    assert select(read_log(str(one)), 1, "asked").page_shown is None


def test_wpt_start_is_the_send_only_where_the_entry_says_so(tmp_path):
    """WebPageTest's startedDateTime is the request's send (page start + _load_start) with its
    DNS and connect before it; an entry whose startedDateTime is its set-up's start (as HAR
    1.2 has it: page start + _all_start) is read as the spec says, not moved."""
    raw = _raw(shared(WPT))
    pg = raw["pages"][0]
    start = _epoch(pg["startedDateTime"])
    en = json.loads(json.dumps(raw["entries"][0]))  # www.amazon.com/: DNS 54, connect 60 (ssl 43), _all_start 2, _load_start 116
    assert (en["_all_start"], en["_load_start"], en["timings"]["dns"], en["timings"]["connect"]) == (2, 116, 54, 60)
    r = read_log(str(_write_har(tmp_path / "wpt.har", dict(raw, pages=[pg], entries=[en])))).requests[0]
    assert r.send_start == pytest.approx(start + 0.116, abs=1e-6) and r.dns_start == pytest.approx(start + 0.002, abs=1e-6)
    assert r.response_start == pytest.approx(start + en["_ttfb_end"] / 1000.0, abs=1e-6)
    fixed = dict(en, startedDateTime=datetime.fromtimestamp(start + 0.002, tz=UTC).isoformat(timespec="milliseconds"))
    r = read_log(str(_write_har(tmp_path / "spec.har", dict(raw, pages=[pg], entries=[fixed])))).requests[0]
    assert r.dns_start == pytest.approx(start + 0.002, abs=1e-6) and r.send_start == pytest.approx(start + 0.116, abs=1e-6)
    # a HAR not of WebPageTest (Playwright's): its entries as written
    pw = read_log(str(SAMPLES / "page/pw-h2.har.gz"))
    pwraw = _raw(SAMPLES / "page/pw-h2.har.gz")
    assert [r.start for r in pw.requests] == pytest.approx([_epoch(x["startedDateTime"]) for x in pwraw["entries"]], abs=1e-6)


def test_wpt_har_over_the_amazon_capture_lays_the_run_it_holds():
    """Over the capture of run 1 the HAR's run 1 is laid (its 15 requests matched); run 2's 15
    entries are not looked for and the summary line says they belong to the other page
    (it said "15 not in the capture"); asked for page 2, none matches.  tshark: every packet
    of the capture falls in run 1's time and before run 2's first entry."""
    p = shared(WPT)
    cap = shared("pageload-amazon/amazon1.cap.gz")
    keys = shared("pageload-amazon/amazon1.key_log.txt.gz")
    raw = _raw(p)
    times = [float(t) for t in run_tool("tshark", "-r", str(cap), "-T", "fields", "-e", "frame.time_epoch").split()]
    run1 = [_epoch(en["startedDateTime"]) for en in raw["entries"] if en["pageref"] == raw["pages"][0]["id"]]
    run2 = [_epoch(en["startedDateTime"]) for en in raw["entries"] if en["pageref"] == raw["pages"][1]["id"]]
    assert min(times) - 1 < min(run1) and max(run1) < max(times) + 1 < min(run2)
    an = analyze(str(cap), keylogs=[str(keys)])
    s = overlay(an, str(p))
    assert (s["requests"], s["sent"], s["matched"], s["unmatched"], s["wire_only"], s["other_pages"]) == (30, 15, 15, 0, 0, 15)
    assert s["page_shown"]["number"] == 1 and s["page_shown"]["how"] == "matched"
    assert {e.browser["id"] for e in an.exchanges} == {str(i) for i in range(15)}
    assert [x["id"] for x in an.browser["pages"]] == [raw["pages"][0]["id"]]
    line = cmp.summary_line(s)
    assert line.startswith("HAR webpagetest-amazon.har.gz page 1 'Run 1, First View for https://www.amazon.com' (of 2 pages): "
                           "15 of 15 requests it sent matched, 0 not in the capture, 0 wire-only; 15 entries of page 2 "
                           "'Run 2, First View for https://www.amazon.com' (another load, not looked for in the capture)")
    # WebPageTest's set-up read before the send: the HAR's clock now stands apart from the
    # capture's by one offset (browser − wire within 40 ms of each other at response start; it spread over 208 ms)
    rs = s["offsets"]["response_start"]
    assert rs["count"] == 15 and rs["max"] - rs["min"] < 0.04
    an2 = analyze(str(cap), keylogs=[str(keys)])
    s2 = overlay(an2, str(p), limits={"har_page": 2})
    assert (s2["matched"], s2["unmatched"], s2["page_shown"]["how"]) == (0, 15, "asked")
    assert "15 entries of page 1 'Run 1, First View for https://www.amazon.com' (not looked for in the capture)" in cmp.summary_line(s2)
    # the CLI (stderr) says it
    run = _cli("summary", cap, "--keylog", keys, "--har", p)
    assert "15 of 15 requests it sent matched, 0 not in the capture, 0 wire-only; 15 entries of page 2" in run.stderr
