"""A NetLog request whose racing QUIC job did the DNS lookup (session 31).

Chrome starts a QUIC job (``alternative`` or ``dns_alpn_h3``) beside the main TCP job and
holds the main job back (``HTTP_STREAM_JOB_WAITING`` ``should_wait: true``) until the QUIC
job's host resolution ends; the main job's own lookup is then a cache hit.  Chrome's load
timing takes the QUIC job's lookup as the request's DNS (``JobController::OnQuicHostResolution``
→ ``HttpStreamRequest::SetDnsResolutionTimeOverrides`` → ``HttpNetworkTransaction::
GetLoadTimingInfo``, the QUIC session pool job's ``dns_resolution_start/end_time``, stamped
where its ``HOST_RESOLVER_MANAGER_REQUEST`` begins and ends; clamped to the request's start by
``ConvertRealLoadTimesToBlockingTimes``).  wirefall's reader called that wait ``blocked``
(amazon's document: 41 ms blocked, no DNS; fls-na's beacon: 114 ms blocked).

The truth here is the NetLog's own events, read with json alone: for each request served by
its main job on a connection it opened, the racing QUIC job of the same controller and
destination, the session pool job it bound to (``BOUND_TO_QUIC_SESSION_POOL_JOB``), that job's
``HOST_RESOLVER_MANAGER_REQUEST`` begin/end and the resolver job it attached to."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from wirefall.analyzer.browserlog import netlog, open_log
from wirefall.analyzer.browserlog.build import phases
from wirefall.analyzer.export import har as har_dict
from wirefall.analyzer.jsonout import page_and_phases

ROOT = Path(__file__).resolve().parent.parent
AMAZON = ROOT.parent / "shared" / "captures" / "pageload-amazon" / "amazon1_netlog.json.gz"


def _raced_lookups(path: Path) -> dict[str, dict]:
    """URL_REQUEST source id -> what its race says, for each request served by a main job
    whose controller's QUIC job bound to a session pool job while that job's lookup (a
    resolver job, not a cache hit) ran: {url, start, pool (begin, end) of the pool job's
    HOST_RESOLVER_MANAGER_REQUEST, resolver (begin, end) of the resolver job it attached to,
    own (begin, end) of the main job's connect job lookup, resumed (the main job's
    HTTP_STREAM_JOB_WAITING end)}; times epoch seconds."""
    d = json.loads(gzip.decompress(path.read_bytes()))
    c = d["constants"]
    ev = {v: k for k, v in c["logEventTypes"].items()}
    off = float(c["timeTickOffset"])
    by: dict[int, list] = {}
    for e in d["events"]:
        by.setdefault(e["source"]["id"], []).append(e)

    def t(e):
        return (int(e["time"]) + off) / 1000.0

    def find(sid, name, phase=None):
        return [e for e in by.get(sid, ()) if ev[e["type"]] == name and (phase is None or e["phase"] == phase)]

    def dep(e):
        return (e.get("params") or {}).get("source_dependency", {}).get("id")

    jobs_of: dict[int, list[tuple[int, dict]]] = {}
    for sid, es in by.items():
        for e in es:
            if ev[e["type"]] == "HTTP_STREAM_JOB" and e["phase"] == 1:
                jobs_of.setdefault(dep(e), []).append((sid, e["params"]))
    out = {}
    for sid in by:
        alive = find(sid, "REQUEST_ALIVE", 1)
        ctl, served = find(sid, "HTTP_STREAM_JOB_CONTROLLER_BOUND"), find(sid, "HTTP_STREAM_REQUEST_BOUND_TO_JOB")
        if not (alive and ctl and served):
            continue
        jobs = dict(jobs_of.get(dep(ctl[0]), ()))
        main = dep(served[0])
        mp = jobs.get(main)
        if mp is None or mp["type"] != "main" or mp["using_quic"]:
            continue
        for j, p in jobs.items():
            bound = find(j, "BOUND_TO_QUIC_SESSION_POOL_JOB")
            if j == main or not p["using_quic"] or p["destination"] != mp["destination"] or not bound:
                continue
            pool = dep(bound[0])
            attach = find(pool, "HOST_RESOLVER_MANAGER_JOB_ATTACH")
            b, e = find(pool, "HOST_RESOLVER_MANAGER_REQUEST", 1), find(pool, "HOST_RESOLVER_MANAGER_REQUEST", 2)
            if not (attach and b and e) or t(bound[0]) > t(e[0]):
                continue  # (a cache hit, or a lookup already over when the job bound: no override)
            rj = dep(attach[0])
            rb, re_ = find(rj, "HOST_RESOLVER_MANAGER_JOB", 1), find(rj, "HOST_RESOLVER_MANAGER_JOB", 2)
            sock_job = find(main, "SOCKET_POOL_BOUND_TO_CONNECT_JOB")
            own = None
            if sock_job:
                ob = find(dep(sock_job[0]), "HOST_RESOLVER_MANAGER_REQUEST", 1)
                oe = find(dep(sock_job[0]), "HOST_RESOLVER_MANAGER_REQUEST", 2)
                own = (t(ob[0]), t(oe[0])) if ob and oe else None
            waiting = find(main, "HTTP_STREAM_JOB_WAITING", 2)
            out[str(sid)] = dict(url=alive[0]["params"]["url"], start=t(alive[0]), pool=(t(b[0]), t(e[0])),
                                 resolver=(t(rb[0]), t(re_[0])), own=own, resumed=t(waiting[0]) if waiting else None,
                                 should_wait=find(main, "HTTP_STREAM_JOB_WAITING", 1)[0]["params"]["should_wait"])
    return out


needs_amazon = pytest.mark.skipif(not AMAZON.exists(), reason="no amazon NetLog")


@needs_amazon
def test_amazon_raced_lookups_are_the_four_waits():
    """The amazon load's NetLog (json alone): four requests were served by a main TCP job held
    back for a racing QUIC job's lookup — the document, the awswaf token script, the AmazonUI
    CSS and the fls-na beacon — each main job's own lookup a cache hit after the QUIC one."""
    raced = _raced_lookups(AMAZON)
    assert sorted(raced, key=int) == ["158", "174", "266", "290"]
    for sid, r in raced.items():
        assert r["should_wait"] is True and r["resumed"] >= r["pool"][1], sid  # the main job waited for it
        assert r["own"] is not None and r["own"][0] >= r["pool"][1] and r["own"][1] - r["own"][0] < 0.0015, sid
        # the pool job's request ended with its resolver job (the lookup itself)
        assert r["resolver"][1] == pytest.approx(r["pool"][1], abs=0.0011) and r["resolver"][0] >= r["pool"][0] - 0.0011


@needs_amazon
def test_amazon_raced_lookup_is_dns_not_blocked():
    """Each such request's browser times and phases, field by field against the NetLog's
    events: dns_start = the pool job's lookup begin (not before the request's start), dns_end =
    its end, blocked = dns_start − start (was: connect_start − start, the whole lookup in
    ``blocked``); the connect after it as before.  Through the reader, the log opened alone
    (``browser.phases``, the row's phases) and its HAR export."""
    raced = _raced_lookups(AMAZON)
    log = netlog.read(str(AMAZON))
    recs = {r.id: r for r in log.requests}
    an = open_log(str(AMAZON))
    _page, rows = page_and_phases(an)
    har = {en["_exchange"]: en for en in har_dict(an)["log"]["entries"]}
    for sid, want in raced.items():
        r = recs[sid]
        dns_start, dns_end = max(want["pool"][0], want["start"]), want["pool"][1]
        assert r.start == pytest.approx(want["start"], abs=1e-6)
        assert r.dns_start == pytest.approx(dns_start, abs=1e-6), (sid, r.url)
        assert r.dns_end == pytest.approx(dns_end, abs=1e-6), (sid, r.url)
        assert r.connect_start is not None and r.connect_start >= r.dns_end
        ph = phases(r)
        assert ph["dns"] == pytest.approx(dns_end - dns_start, abs=1e-6)
        assert ph["blocked"] == pytest.approx(dns_start - want["start"], abs=1e-6) and ph["blocked"] <= 0.0035
        assert all(v is None or v >= 0 for v in ph.values()), (sid, ph)
        e = next(x for x in an.exchanges if (x.browser or {}).get("id") == sid)
        assert e.browser["phases"] == pytest.approx(ph, abs=1e-6)
        row = rows[e.id]
        # the row: blocked before the lookup and from its end to the main job's connect (the
        # rest of the QUIC job's try), the lookup as dns; its phases add up to its total
        assert row["dns"] == pytest.approx(dns_end - dns_start, abs=1e-6)
        assert row["blocked"] == pytest.approx((dns_start - want["start"]) + (r.connect_start - dns_end), abs=1e-6)
        parts = [row[k] for k in ("blocked", "dns", "connect", "tls", "idle", "send", "wait", "receive") if row[k] is not None]
        assert sum(parts) == pytest.approx(row["total"], abs=1e-6) and min(parts) >= 0
        en = har[e.id]
        assert en["request"]["url"] == r.url
        assert en["timings"]["dns"] == pytest.approx((dns_end - dns_start) * 1000, abs=1e-3)
        # (the export puts the row's idle after the handshake in send, as DevTools' HAR does, and
        # says how much in _send_idle: blocked is the row's, before dns and connect)
        assert en["timings"]["blocked"] == pytest.approx(row["blocked"] * 1000, abs=1e-3)
        assert en["timings"].get("_send_idle", 0) == pytest.approx((row["idle"] or 0) * 1000, abs=1e-3)


@needs_amazon
def test_amazon_other_requests_keep_their_phases():
    """Only the raced requests gained a DNS phase: every other request of the load has none
    (amazon's connect jobs found their names in the cache), and none of the log's phases is
    negative."""
    raced = _raced_lookups(AMAZON)
    for r in netlog.read(str(AMAZON)).requests:
        ph = phases(r)
        assert all(v is None or v >= 0 for v in ph.values()), (r.id, ph)
        if r.id not in raced:
            assert r.dns_start is None and r.dns_end is None, (r.id, r.url)


SAMPLES = sorted((ROOT / "sample_captures").glob("*/*.netlog.json.gz"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_samples_raced_lookups(path):
    """The bundled NetLogs (lab loads of 127.0.0.1: their QUIC jobs' only real lookups are of
    update.googleapis.com, which failed, its request never sent): every raced lookup the json
    finds is the request's DNS, and no other request's DNS moved."""
    raced = _raced_lookups(path)
    for r in netlog.read(str(path)).requests:
        want = raced.get(r.id)
        if want is not None and r.sent:
            assert (r.dns_start, r.dns_end) == pytest.approx((max(want["pool"][0], want["start"]), want["pool"][1]), abs=1e-6)
        assert all(v is None or v >= 0 for v in phases(r).values())


WPT_HAR = ROOT.parent / "shared" / "captures" / "hars" / "webpagetest-amazon.har.gz"


@needs_amazon
@pytest.mark.skipif(not WPT_HAR.exists(), reason="no WebPageTest HAR")
def test_amazon_raced_lookups_against_webpagetest():
    """WebPageTest's HAR of the same load (its first run, ``page_1_0_1``: the fls-na beacon's
    requestId 8NR9ZEG52GNJFC1G1KPR is the NetLog's) gives each of the four requests a DNS
    time and no queueing (``blocked`` −1): its ``dns`` is the racing QUIC job's whole lookup
    (the pool job's HOST_RESOLVER_MANAGER_REQUEST) within the 1 ms both round to, its
    ``connect`` (with ssl) the main job's connect and TLS.  wirefall's dns is that lookup from
    the request's start on, as Chrome's own load timing clamps it: amazon's document began
    16 ms into the lookup a preconnect had started (WebPageTest: 54 ms, from before the
    request; Chrome and wirefall: 39)."""
    raced = _raced_lookups(AMAZON)
    recs = {r.id: r for r in netlog.read(str(AMAZON)).requests}
    entries = json.loads(gzip.decompress(WPT_HAR.read_bytes()))["log"]["entries"]
    assert any("8NR9ZEG52GNJFC1G1KPR" in en["request"]["url"] for en in entries if en.get("pageref") == "page_1_0_1")
    for sid, want in raced.items():
        r = recs[sid]
        en = next(en for en in entries if en.get("pageref") == "page_1_0_1" and en["request"]["url"] == r.url
                  and en["timings"]["dns"] >= 0)
        lookup = (want["pool"][1] - want["pool"][0]) * 1000
        assert en["timings"]["blocked"] == -1 and abs(en["timings"]["dns"] - lookup) <= 1.001, (sid, en["timings"], lookup)
        assert r.dns_start is not None and r.dns_end is not None and r.connect_start is not None and r.ssl_end is not None
        clamped = max(0.0, want["start"] - want["pool"][0]) * 1000
        assert (r.dns_end - r.dns_start) * 1000 == pytest.approx(lookup - clamped, abs=1e-3)
        assert abs((r.ssl_end - r.connect_start) * 1000 - en["timings"]["connect"]) <= 1.001, (sid, en["timings"])
