"""Review 32: the request view's "Wire and browser log" table left the wire's blocked (queued /
stalled) and DNS always "–" ("the wire does not tie a DNS query … to a request"), right under
the same view's Timing section reading "DNS lookup 37.631 ms [1 → 16]" and "Queued / stalled
14.175 ms" for the amazon load's document (its NetLog: DNS 39 ms).  Those rows now carry the
exchange's own waterfall phases (``Row.phases``, as the Timing section and ``requests --json``'s
``phases``): wire, browser and browser − wire; "–" where the wire has no such phase.

Outside truth: tshark 4.0 on the amazon capture — each DNS query and answer (time, name, id,
CNAME chain) and each connection's SYN — and Chrome's NetLog of the same load (its requests'
own ``dns_start``/``dns_end`` and phases, read by ``netlog.read``).
"""
from __future__ import annotations

import dataclasses

import pytest

from conftest import run_tool, shared

CAP_REL, KEYS_REL = "pageload-amazon/amazon1.cap.gz", "pageload-amazon/amazon1.key_log.txt.gz"
NETLOG_REL = "pageload-amazon/amazon1_netlog.json.gz"
US = 1.5e-6  # the row's phases are to the µs (waterfall.phase_totals); tshark's times to the ns


@pytest.fixture(scope="module")
def amazon_over():
    """The amazon capture with its key log and its NetLog laid over it, its waterfall, and the
    NetLog's own requests by id."""
    from wirefall.analyzer.browserlog import netlog, overlay
    from wirefall.analyzer.pipeline import analyze
    from wirefall.analyzer.waterfall import build

    cap, keys, nl = shared(CAP_REL), shared(KEYS_REL), shared(NETLOG_REL)
    an = analyze(str(cap), keylogs=[str(keys)])
    overlay(an, str(nl))
    wf = build(an)
    log = {str(r.id): r for r in netlog.read(str(nl)).requests}
    return an, wf, log


def _tshark(cap, *args: str) -> list[list[str]]:
    return [ln.split("\t") for ln in run_tool("tshark", "-r", str(cap), *args).splitlines() if ln.strip()]


def _wire_lookup(host: str, syn: float) -> tuple[float, float]:
    """(first query, last answer) of the lookup of ``host`` the connection whose SYN left at
    ``syn`` waited for, from tshark alone: the queries for the name and every name of its CNAME
    chain, from the name's first query in the second before the SYN, answered before it."""
    msgs = _tshark(shared(CAP_REL), "-Y", "dns", "-T", "fields", "-e", "frame.time_epoch", "-e", "dns.qry.name",
                   "-e", "dns.flags.response", "-e", "dns.id", "-e", "dns.cname")
    asked = {(m[1], m[3]): float(m[0]) for m in msgs if m[2] in ("0", "False")}
    answers = [(asked[(m[1], m[3])], float(m[0]), m[1], [c for c in m[4].split(",") if c]) for m in msgs
               if m[2] in ("1", "True") and (m[1], m[3]) in asked and float(m[0]) <= syn]
    start = min(q for q, _a, n, _c in answers if n == host and syn - 1.0 < q)
    names, grew = {host}, True
    while grew:
        grew = False
        for q, _a, n, cn in answers:
            if n in names and q >= start and not set(cn) <= names:
                names.update(cn)
                grew = True
    return start, max(a for q, a, n, _c in answers if n in names and q >= start)


def _syn(c) -> float:
    """The time of the connection's SYN (tshark), by its client port and server address."""
    for t, port, dst4, dst6 in _tshark(shared(CAP_REL), "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "-T", "fields",
                                       "-e", "frame.time_epoch", "-e", "tcp.srcport", "-e", "ip.dst", "-e", "ipv6.dst"):
        if int(port) == c.client[1] and c.server[0] in (dst4, dst6):
            return float(t)
    raise AssertionError(f"no SYN of connection {c.id}")


def _rows(an, wf, e):
    from wirefall.analyzer.browserlog import comparison as cmp

    row = next(r for r in wf.rows if r.exchange == e.id)
    c = an.connections[e.connection]
    return {r.name: r for r in cmp.phase_comparison(e, c, row.browser_clock_offset, row.phases)}, row


def test_amazon_blocked_and_dns_rows_have_the_wire_and_the_netlog(amazon_over):
    """Each amazon request the NetLog gives a DNS time and the wire a lookup (the document, the
    awswaf script, the AmazonUI CSS and the fls-na beacon): the wire's DNS is tshark's first
    query → last answer of the name's lookup, its blocked the last answer → the SYN; the
    browser's are the NetLog's own (``dns_end − dns_start``, the reader's ``phases``); the
    difference is theirs; the Timing section and ``requests --json``'s ``phases`` say the same."""
    from wirefall.analyzer.browserlog import comparison as cmp
    from wirefall.analyzer.browserlog.build import phases as log_phases
    from wirefall.analyzer.jsonout import phases_dicts
    from wirefall.analyzer.request_detail import request_detail

    an, wf, log = amazon_over
    js = phases_dicts(an)
    seen = []
    for e in an.exchanges:
        b = e.browser if isinstance(e.browser, dict) else {}
        r = log.get(str(b.get("id")))
        if r is None or r.dns_start is None or not b.get("offsets"):
            continue
        rows, wrow = _rows(an, wf, e)
        c = an.connections[e.connection]
        if not any(n == "dns" for n, _a, _b in wrow.phases):
            continue
        syn = _syn(c)
        q, a = _wire_lookup(e.url.split("/")[2], syn)
        dns, blocked = rows["dns"], rows["blocked"]
        assert dns.wire == pytest.approx(a - q, abs=US), (e.id, e.url)
        assert blocked.wire == pytest.approx(syn - a, abs=US), (e.id, e.url)
        assert dns.browser == pytest.approx(r.dns_end - r.dns_start, abs=1e-9) == log_phases(r)["dns"]
        assert blocked.browser == pytest.approx(log_phases(r)["blocked"], abs=1e-9)
        assert dns.diff == pytest.approx(dns.browser - dns.wire, abs=1e-12)
        assert blocked.diff == pytest.approx(blocked.browser - blocked.wire, abs=1e-12)
        # the same numbers as the Timing section just above the table, and as --json's phases
        timing = request_detail(an, e, wrow, bodies=False).phases
        assert cmp.fmt_ms(dns.wire) == cmp.fmt_ms(sum(p.duration for p in timing if p.name == "dns"))
        assert cmp.fmt_ms(blocked.wire) == cmp.fmt_ms(sum(p.duration for p in timing if p.name == "blocked"))
        assert (dns.wire, blocked.wire) == (js[e.id]["dns"], js[e.id]["blocked"])
        seen.append((e.url, round(dns.wire * 1000, 3), round(dns.browser * 1000, 3)))
    # the document (37.631 ms on the wire, 39 in the NetLog), awswaf, the AmazonUI CSS, fls-na
    assert len(seen) == 4, seen
    assert seen[0] == ("https://www.amazon.com/", 37.631, 39.0)


def test_amazon_request_on_an_open_connection_has_no_wire_dns(amazon_over):
    """favicon.ico, on the document's connection (already open; tshark: no DNS query after its
    SYN but the CNAME chain's answered before it): no DNS on the wire, none in the NetLog — no
    DNS row —, and its queueing has no wire side ("–") beside the NetLog's 5 ms."""
    from wirefall.analyzer.browserlog import comparison as cmp

    an, wf, log = amazon_over
    e = next(x for x in an.exchanges if x.url == "https://www.amazon.com/favicon.ico" and x.browser and x.browser.get("offsets"))
    first = min((x for x in an.exchanges if x.connection == e.connection and x.request_start), key=lambda x: x.request_start)
    assert first.id != e.id  # (not the request that opened it)
    rows, _row = _rows(an, wf, e)
    r = log[str(e.browser["id"])]
    assert "dns" not in rows and r.dns_start is None
    w, br, d = cmp.cells(rows["blocked"], an.start_time)
    assert (w, d) == ("–", "–") and rows["blocked"].browser == pytest.approx((r.send_start or 0) - r.start, abs=1e-9)
    assert br == cmp.fmt_ms(rows["blocked"].browser)


def test_the_views_show_the_wire_dns(amazon_over):
    """The TUI's and the web app's tables (formatted from the same rows, no special case): the
    document's DNS reads 37.631 ms on the wire, 39.000 in the log, +1.369 ms apart."""
    from wirefall.analyzer.request_detail import request_detail
    from wirefall.ui.tui.overlay import browser_text
    from wirefall.ui.web.overlay import browser_section

    an, wf, _log = amazon_over
    e = next(x for x in an.exchanges if x.url == "https://www.amazon.com/" and x.stream_id == 1 and x.connection == 8)
    rows, wrow = _rows(an, wf, e)
    d = request_detail(an, e, wrow, bodies=False)
    assert d.browser is not None
    b = dataclasses.replace(d.browser, phases=list(rows.values()))
    tui = {ln.split("  ")[1].strip(): ln.split() for ln in browser_text(b, an.start_time, True).plain.splitlines()
           if ln.startswith("  DNS") or ln.startswith("  blocked")}
    assert tui["DNS"][1:] == ["37.631", "ms", "39.000", "ms", "+1.369", "ms"]
    assert tui["blocked (queued)"][2:] == ["14.175", "ms", "0.000", "ms", "-14.175", "ms"]
    table = next(c for c in browser_section(b, an.start_time, True) if getattr(c, "id", None) == "detail-browser")
    cells = {tr.children[0].children: [td.children for td in tr.children[1:4]] for tr in table.children[1].children}
    assert cells["DNS"] == ["37.631 ms", "39.000 ms", "+1.369 ms"]
    assert cells["blocked (queued)"] == ["14.175 ms", "0.000 ms", "-14.175 ms"]


def test_request_detail_carries_the_wire_dns(amazon_over):
    """Through ``request_detail`` (what the TUI's and the web app's request views format)."""
    from wirefall.analyzer.request_detail import request_detail

    an, wf, _log = amazon_over
    e = next(x for x in an.exchanges if x.url == "https://www.amazon.com/" and x.stream_id == 1 and x.connection == 8)
    d = request_detail(an, e, waterfall=wf, bodies=False)
    assert d.browser is not None
    rows = {r.name: r for r in d.browser.phases}
    timing = next(p for p in d.phases if p.name == "dns")
    assert rows["dns"].wire == timing.duration


def _exchange(dns_phase: bool, browser_dns: float | None):
    from wirefall.analyzer.model import Connection, Exchange

    c = Connection(0, "tcp", ("10.0.0.1", 5000), ("10.0.0.2", 443), connect_start=1.02, connect_end=1.03)
    e = Exchange(id=1, connection=0, protocol="h2", stream_id=1, method="GET", url="https://a/", status=200)
    e.request_start = e.request_end = 1.05
    e.response_start, e.response_end = 1.06, 1.07
    e.browser = {"source": "netlog", "times": {}, "phases": {"blocked": 0.001, "dns": browser_dns, "send": 0.0},
                 "offsets": {"request_start": 0.0}}
    ph = [("dns", 1.0, 1.015)] if dns_phase else []
    ph += [("blocked", 1.015 if dns_phase else 1.0, 1.02), ("connect", 1.02, 1.03), ("idle", 1.03, 1.05),
           ("send", 1.05, 1.05), ("wait", 1.05, 1.06), ("receive", 1.06, 1.07)]
    return e, c, ph


def test_no_wire_dns_stays_a_dash():
    """A row with no DNS phase: the browser's DNS beside "–" and no difference; the wire's
    blocked is the row's."""
    from wirefall.analyzer.browserlog import comparison as cmp

    e, c, ph = _exchange(False, 0.012)
    rows = {r.name: r for r in cmp.phase_comparison(e, c, None, ph)}
    assert cmp.cells(rows["dns"], 0.0) == ("–", "12.000 ms", "–")
    assert cmp.cells(rows["blocked"], 0.0) == ("20.000 ms", "1.000 ms", "-19.000 ms")
    # without the row's phases given: the wire's side stays empty (as before)
    assert cmp.cells({r.name: r for r in cmp.phase_comparison(e, c)}["dns"], 0.0) == ("–", "12.000 ms", "–")


def test_wire_dns_the_log_lacks_says_not_in_log():
    """A lookup on the wire the log gives no DNS time for (a NetLog's host cache hit): the
    wire's, and "not in log" as for a connection moment."""
    from wirefall.analyzer.browserlog import comparison as cmp

    e, c, ph = _exchange(True, None)
    rows = {r.name: r for r in cmp.phase_comparison(e, c, None, ph)}
    assert cmp.cells(rows["dns"], 0.0) == ("15.000 ms", "not in log", "–")
    assert rows["dns"].browser is None and rows["dns"].diff is None
