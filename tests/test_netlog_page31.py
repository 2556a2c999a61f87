"""Requests Chrome made for itself, not for the page, are background traffic by the NetLog's own
word (review 31, web finding 2).

Over the amazon load, "Page complete: its 17 requests" counted Chrome's GMS check-in (POST
android.clients.google.com/checkin, refused at 127.0.0.1:443, never on the wire) as the page's;
on bg-mixed, of three identical accounts.google.com/ListAccounts POSTs the one timed inside the
page was the page's, the other two background by their timing.  Each URL_REQUEST_START_JOB of a
NetLog says whose the request is: its ``initiator`` ("not an origin": no document started it)
and ``network_isolation_key`` (top-frame site, frame site: Chrome's
``NetworkIsolationKey::ToDebugString``), next to ``request_type`` ("main frame": a navigation,
whose top-frame site is the page's site).

The truth: the NetLog's events read here with json alone; WebPageTest's HAR of the same amazon
load (run 1, ``page_1_0_1``: its 15 entries are the page's requests that went to the network);
sample_captures/README.md's bg-mixed row (10 requests of page.test and static.test; Chromium's
own lookups beside them)."""
from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import SAMPLES, shared

from wirefall.analyzer import completeness
from wirefall.analyzer.browserlog import overlay
from wirefall.analyzer.browserlog import netlog
from wirefall.analyzer.browserlog.netlog import read
from wirefall.analyzer.model import not_sent_of
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.waterfall import page_of

AMAZON = shared("pageload-amazon")
AMAZON_CAP, AMAZON_KEYS, AMAZON_NL = AMAZON / "amazon1.cap.gz", AMAZON / "amazon1.key_log.txt.gz", AMAZON / "amazon1_netlog.json.gz"
BG = SAMPLES / "page"
BG_CAP, BG_KEYS, BG_NL = BG / "bg-mixed.pcapng", BG / "bg-mixed.keys", BG / "bg-mixed.netlog.json.gz"
WPT_HAR = shared("hars") / "webpagetest-amazon.har.gz"


def _netlog(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def start_jobs(d: dict) -> dict[str, dict]:
    """The log's URL_REQUEST_START_JOB params, by the record id wirefall gives each job (the
    source id; "id.n" for the n-th redirect's job), read with json alone."""
    c = d["constants"]
    ev = {v: k for k, v in c["logEventTypes"].items()}
    src = {v: k for k, v in c["logSourceType"].items()}
    out: dict[str, dict] = {}
    n: Counter = Counter()
    for e in d["events"]:
        if src.get(e["source"]["type"]) == "URL_REQUEST" and ev[e["type"]] == "URL_REQUEST_START_JOB" and e["phase"] == 1:
            sid = e["source"]["id"]
            out[str(sid) if not n[sid] else f"{sid}.{n[sid]}"] = e["params"]
            n[sid] += 1
    return out


def _top(key: str) -> str | None:
    t = key.split(" ", 1)[0]
    return None if t == "null" else t


def own_requests(jobs: dict[str, dict]) -> tuple[set[str], set[str]]:
    """(the page's sites: its main-frame requests' isolation-key top-frame sites, the ids of the
    requests Chrome made for itself: no initiator, a top-frame site of none of them)."""
    sites = {_top(p["network_isolation_key"]) for p in jobs.values() if p["request_type"] == "main frame"}
    own = {i for i, p in jobs.items() if p["initiator"] == "not an origin" and p["request_type"] != "main frame"
           and _top(p["network_isolation_key"]) not in sites}
    return sites - {None}, own


@pytest.mark.parametrize("path", [AMAZON_NL, BG_NL], ids=["amazon", "bg-mixed"])
def test_the_logs_isolation_facts_are_kept(path):
    jobs = start_jobs(_netlog(path))
    log = read(str(path))
    assert {r.id for r in log.requests} == set(jobs)
    for r in log.requests:
        p = jobs[r.id]
        key = p["network_isolation_key"]
        assert r.isolation_key == key
        assert r.browser_initiated is (p["initiator"] == "not an origin")
        assert r.initiator == (None if p["initiator"] == "not an origin" else p["initiator"])  # (JSON as before)
        top, frame = key.split(" ")
        assert (r.top_frame_site, r.frame_site) == (None if top == "null" else top, None if frame == "null" else frame)
        site = re.fullmatch(r"SiteForCookies: \{site=(\S+); schemefully_same=(true|false)\}", p["site_for_cookies"]).group(1)
        assert r.site_for_cookies == (None if site == "null" else site)
        assert r.resource_type == p["request_type"]


def test_isolation_key_text_as_chrome_writes_it():
    # net/base/network_isolation_key.cc ToDebugString: "<top> <frame>", "null" for a site not
    # set, url::Origin::GetDebugString's opaque form, then " (with nonce …)"
    isolation_sites = netlog.isolation_sites
    assert isolation_sites("https://amazon.com https://amazon.com") == ("https://amazon.com", "https://amazon.com")
    assert isolation_sites("null null") == (None, None)
    assert isolation_sites("https://a.test https://b.test (with nonce 5C1D3A)") == ("https://a.test", "https://b.test")
    assert isolation_sites("null [internally: (7F2A) derived from https://x.test] https://b.test") == (None, "https://b.test")
    assert isolation_sites("https://[::1] https://[::1]") == ("https://[::1]", "https://[::1]")
    assert isolation_sites("https://a.test") == ("https://a.test", None)  # (a double-keyed Chrome's)
    assert isolation_sites("") == (None, None)


@pytest.fixture(scope="module")
def amazon():
    an = analyze(str(AMAZON_CAP), keylogs=[str(AMAZON_KEYS)])
    overlay(an, str(AMAZON_NL))
    return an


def _har_page() -> Counter:
    h = json.loads(gzip.decompress(WPT_HAR.read_bytes()))
    return Counter((e["request"]["method"], e["request"]["url"]) for e in h["log"]["entries"] if e.get("pageref") == "page_1_0_1")


def test_amazon_page_is_webpagetests_plus_its_cached_favicon(amazon):
    jobs = start_jobs(_netlog(AMAZON_NL))
    sites, own = own_requests(jobs)
    assert sites == {"https://amazon.com"} and len(own) == 1
    checkin_id = next(iter(own))
    assert jobs[checkin_id]["url"] == "https://android.clients.google.com/checkin" and jobs[checkin_id]["method"] == "POST"
    page = page_of(amazon)
    rows = [e for e in amazon.exchanges if e.browser]
    page_sent = Counter((e.method, e.url) for e in rows if e.id not in page.background and not_sent_of(e.browser) is None)
    har = _har_page()
    assert sum(har.values()) == 15
    assert page_sent == har  # the 15 WebPageTest lists (before: the same 15 …)
    page_unsent = [e for e in rows if e.id not in page.background and not_sent_of(e.browser) is not None]
    # … and the rows only the log has that the page did ask for: favicon.ico read from the disk
    # cache, initiator www.amazon.com, isolation key amazon.com (WebPageTest lists no cache hit)
    assert [(e.method, e.url, not_sent_of(e.browser)) for e in page_unsent] == [("GET", "https://www.amazon.com/favicon.ico", "disk cache")]
    fav = jobs[page_unsent[0].browser["id"]]
    assert fav["initiator"] == "https://www.amazon.com" and _top(fav["network_isolation_key"]) == "https://amazon.com"
    # the check-in is background, by the log's word (before: the page's 17th request)
    checkin = next(e for e in rows if e.browser["id"] == checkin_id)
    why = page.background.get(checkin.id)
    assert why is not None and why.startswith("the browser's own request")
    assert jobs[checkin_id]["network_isolation_key"] in why and "https://amazon.com" in why
    assert not_sent_of(checkin.browser) == "failed" and checkin.error == "ERR_CONNECTION_REFUSED"
    # the completeness line counts the page's 16
    lines = completeness.render_text(completeness.compute(amazon))
    assert lines[0].startswith("Page complete: its 16 requests"), lines[0]


def test_amazon_page_bounds_are_the_captures_page(amazon):
    # the check-in fell inside the page's span: the page's start and end are unchanged
    wire = analyze(str(AMAZON_CAP), keylogs=[str(AMAZON_KEYS)])
    p, p0 = page_of(amazon), page_of(wire)
    assert (p.start, p.end, p.document) == (p0.start, p0.end, p0.document)


def test_amazon_netlog_alone_sets_the_check_in_apart():
    an = analyze(str(AMAZON_NL))
    jobs = start_jobs(_netlog(AMAZON_NL))
    _sites, own = own_requests(jobs)
    page = page_of(an)
    bg = {e.browser["id"] for e in an.exchanges if e.id in page.background}
    assert bg == own  # only the check-in: every other request is the page's
    assert len(an.exchanges) - len(page.background) == 16


def _bg_rows(an) -> tuple[dict, dict]:
    page = page_of(an)
    return page.background, {e.browser["id"]: e for e in an.exchanges if e.browser}


def test_bg_mixed_list_accounts_all_background():
    jobs = start_jobs(_netlog(BG_NL))
    sites, own = own_requests(jobs)
    assert sites == {"https://page.test"}
    accounts = {i for i, p in jobs.items() if p["url"].startswith("https://accounts.google.com/ListAccounts")}
    assert accounts == {"15", "115", "137"} and accounts <= own
    # the same initiator and isolation key for all three
    assert len({(jobs[i]["initiator"], jobs[i]["network_isolation_key"], jobs[i]["method"]) for i in accounts}) == 1
    an = analyze(str(BG_CAP), keylogs=[str(BG_KEYS)])
    overlay(an, str(BG_NL))
    bg, by_id = _bg_rows(an)
    reasons = {bg.get(by_id[i].id) for i in accounts}
    assert len(reasons) == 1 and None not in reasons  # (before: 115, inside the page's span, the page's)
    assert next(iter(reasons)).startswith("the browser's own request")
    for i in own:  # the component updater's too ("null null"): the browser's own, by the log
        assert bg[by_id[i].id].startswith("the browser's own request"), i
    # the page: README's 10 requests of page.test and static.test, the log's requests keyed to its site
    page_ids = {i for i, e in by_id.items() if e.id not in bg}
    assert page_ids == {i for i, p in jobs.items() if _top(p["network_isolation_key"]) == "https://page.test"}
    assert len(page_ids) == 10 and {re.match(r"https://([^/]+)/", jobs[i]["url"]).group(1) for i in page_ids} == {"page.test", "static.test"}
    # the capture's own background (metadata long-poll, telemetry, the other host) stays as it was
    wire = analyze(str(BG_CAP), keylogs=[str(BG_KEYS)])
    p0 = page_of(wire)
    assert {k: v for k, v in bg.items() if k in {e.id for e in wire.exchanges}} == p0.background
    # alone: the same three
    alone = analyze(str(BG_NL))
    abg, aby = _bg_rows(alone)
    assert {i for i in aby if aby[i].id in abg} == own


def _rewritten(d: dict, tmp_path: Path, edit) -> str:
    d = json.loads(json.dumps(d))
    c = d["constants"]
    ev = {v: k for k, v in c["logEventTypes"].items()}
    for e in d["events"]:
        if ev[e["type"]] == "URL_REQUEST_START_JOB" and e["phase"] == 1:
            edit(e["source"]["id"], e["params"])
    p = tmp_path / "x.json"
    p.write_text(json.dumps(d))
    return str(p)


def test_another_sites_page_and_a_log_of_no_page(tmp_path):
    d = _netlog(AMAZON_NL)

    def other(sid, p):  # a request of a tab of another site (its navigation not in the log)
        if sid == 290:
            p["network_isolation_key"] = "https://example.test https://example.test"
    log = read(_rewritten(d, tmp_path, other))
    r = next(r for r in log.requests if r.id == "290")
    assert r.background is not None and r.background.startswith("another site's page's request")
    assert "top-frame site https://example.test" in r.background
    assert sorted(r.id for r in log.requests if r.background) == ["198", "290"]

    def no_page(sid, p):  # no main-frame request (logging began after the navigation): no page named
        if p["request_type"] == "main frame":
            p["request_type"] = "other"
    log = read(_rewritten(d, tmp_path, no_page))
    assert not any(r.background for r in log.requests)

    def no_key(sid, p):  # an older Chrome's log without isolation keys: the log says nothing
        p.pop("network_isolation_key", None)
    log = read(_rewritten(d, tmp_path, no_key))
    assert not any(r.background for r in log.requests) and all(r.isolation_key is None for r in log.requests)
