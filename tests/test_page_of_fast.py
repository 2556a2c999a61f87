"""``waterfall.page_of`` reads each distinct request's facts once (``_Request``) and, while
those facts tie at their first request in order of first use, ties every request at once
(``_TIE_BY_REQUEST_FACTS``) instead of going request by request.  Here the two ways give
the same ``Page`` — document, redirects, origins in order, start/end and every background
reason — on captures built to reach the edges: a request that ties only after a later one
made its origin the page's, requests sharing one header list, a browser header on the last
request only, redirects, link-local and other-client traffic, and random mixes of them."""
from __future__ import annotations

import random

import pytest

from wirefall.analyzer import waterfall
from wirefall.analyzer.model import Analysis, Connection, Exchange, PacketIndex
from wirefall.analyzer.waterfall import (BG_AFTER_PAGE, BG_BEFORE_DOCUMENT, BG_FOREIGN_REFERER, BG_LINK_LOCAL,
                                         BG_OTHER_AGENT, BG_OTHER_CLIENT, page_of)

T0 = 1_700_000_000.0
BROWSER = "Mozilla/5.0 (test)"


def _index(n: int, shuffled: bool = False) -> PacketIndex:
    idx = PacketIndex()
    ts = [T0 + i * 0.001 for i in range(n)]
    if shuffled:  # a capture whose packets are not in time order: the first, then the others last first
        ts = ts[:1] + ts[:0:-1]
    for t in ts:
        idx.ts.append(t)
        for arr, v in ((idx.offset, 0), (idx.caplen, 60), (idx.origlen, 60), (idx.linktype, 1), (idx.conn, -1),
                       (idx.proto, 0), (idx.interface, 0)):
            arr.append(v)
    return idx


class Capture:
    """A capture-like ``Analysis`` built request by request (packet p at T0 + (p - 1) ms)."""

    def __init__(self, packets: int = 2000, shuffled: bool = False):
        self.an = Analysis(path="/tmp/built.pcap", index=_index(packets, shuffled))

    def conn(self, client: str = "10.0.0.1", server: str = "192.0.2.10", port: int = 443, start: int = 1) -> int:
        cid = len(self.an.connections) + 1
        self.an.connections.append(Connection(id=cid, transport="tcp", client=(client, 40000 + cid), server=(server, port),
                                              start=T0 + (start - 1) * 0.001, first_packet=start, protocol="h2"))
        return cid

    def req(self, conn: int, url: str | None, start: int, end: int | None = None, headers: list | None = None,
            status: int | None = 200, ctype: str | None = None, response_headers: list | None = None, **kw) -> Exchange:
        t = lambda p: None if p is None else T0 + (p - 1) * 0.001  # noqa: E731
        e = Exchange(id=len(self.an.exchanges) + 1, connection=conn, protocol="h2", url=url, status=status,
                     path=url.split("/", 3)[-1] if url else None, content_type=ctype,
                     request_start=t(start), request_end=t(start), response_start=t(start + 1) if end else None,
                     response_end=t(end), request_start_packet=start, response_end_packet=end, **kw)
        e.request_headers = headers if headers is not None else [("user-agent", "h2load")]
        e.response_headers = response_headers if response_headers is not None else [(":status", str(status))]
        self.an.exchanges.append(e)
        return e


def _fields(p) -> tuple:
    return (p.document, p.redirects, p.origins, p.start, p.start_packet, p.end, p.end_packet, list(p.background.items()))


def both_ways(an: Analysis, monkeypatch, **kw) -> tuple:
    """page_of's fields with the tie-at-once path and request by request: they must agree."""
    monkeypatch.setattr(waterfall, "_TIE_BY_REQUEST_FACTS", True)
    fast = _fields(page_of(an, **kw))
    monkeypatch.setattr(waterfall, "_TIE_BY_REQUEST_FACTS", False)
    slow = _fields(page_of(an, **kw))
    monkeypatch.setattr(waterfall, "_TIE_BY_REQUEST_FACTS", True)
    assert fast == slow
    return fast


def test_h2load_like_requests_sharing_header_lists_are_all_the_page(monkeypatch):
    cap = Capture()
    shared = [(":method", "GET"), (":authority", "127.0.0.1:8443"), ("user-agent", "h2load nghttp2/1.52.0")]
    conns = [cap.conn(client="127.0.0.1", server="127.0.0.1", port=8443, start=1 + i) for i in range(3)]
    for i in range(300):
        cap.req(conns[i % 3], "https://127.0.0.1:8443/obj", 10 + i, 20 + i, headers=shared,
                response_headers=[(":status", "200"), ("content-length", "512")])
    p = both_ways(cap.an, monkeypatch)
    assert p[0] == 1 and p[2] == ["https://127.0.0.1:8443"] and p[7] == []
    assert p[5] == T0 + 318 * 0.001 and p[6] == 319  # the last response's last byte


def test_a_browser_header_on_the_last_request_only(monkeypatch):
    cap = Capture()
    shared = [("user-agent", "h2load")]
    a, b = cap.conn(), cap.conn(server="198.51.100.9")
    for i in range(100):
        cap.req(a, "https://example.test/obj", 10 + i, 12 + i, headers=shared)
    late = cap.req(b, "https://other.test/beacon", 500, 510, headers=[("user-agent", "h2load"), ("referer", "https://else.test/x")])
    p = both_ways(cap.an, monkeypatch)
    # the capture shows a browser now; the last request names another origin: background
    assert p[7] == [(late.id, BG_FOREIGN_REFERER.format(origin="https://else.test"))]
    # without its Referer, no request shows a browser: every request is the page's
    late.request_headers = [("user-agent", "h2load")]
    assert both_ways(cap.an, monkeypatch)[7] == []


def test_a_request_tied_only_by_a_later_request(monkeypatch):
    """The fast path's edge: cdn.test's first request has a Referer of an origin that only a
    later request (on the document's connection) makes the page's, so it is tied in the
    second pass; the request-by-request passes decide it, and the origins keep their order."""
    cap = Capture()
    page, cdn, ad = cap.conn(), cap.conn(server="192.0.2.20"), cap.conn(server="192.0.2.30")
    ua = ("user-agent", BROWSER)
    cap.req(page, "https://www.test/", 10, 20, headers=[ua, ("sec-fetch-dest", "document")], ctype="text/html")
    early = cap.req(cdn, "https://cdn.test/a.js", 30, 40, headers=[ua, ("referer", "https://static.www.test/x.css")])
    cap.req(page, "https://static.www.test/x.css", 50, 60, headers=[ua, ("referer", "https://www.test/")])
    cap.req(cdn, "https://cdn.test/b.js", 70, 80, headers=[ua, ("referer", "https://www.test/")])
    bg = cap.req(ad, "https://ad.test/t", 90, 95, headers=[ua, ("referer", "https://tracker.test/")])
    p = both_ways(cap.an, monkeypatch)
    assert p[0] == 1 and p[2] == ["https://www.test", "https://static.www.test", "https://cdn.test"]
    assert p[7] == [(bg.id, BG_FOREIGN_REFERER.format(origin="https://tracker.test"))]
    # (one pass would leave it to rule 4: it is tied in the second)
    monkeypatch.setattr(waterfall, "_MAX_LINK_PASSES", 1)
    p = both_ways(cap.an, monkeypatch)
    assert p[7] == [(early.id, BG_FOREIGN_REFERER.format(origin="https://static.www.test")),
                    (bg.id, BG_FOREIGN_REFERER.format(origin="https://tracker.test"))]


def test_redirects_link_local_other_clients_and_agents(monkeypatch):
    cap = Capture()
    ll = cap.conn(server="169.254.169.254", port=80)
    page = cap.conn(start=5)
    other = cap.conn(client="10.0.0.7", server="192.0.2.40")
    curl = cap.conn(server="192.0.2.50")
    late = cap.conn(server="192.0.2.60")
    ua = ("user-agent", BROWSER)
    poll = cap.req(ll, "http://169.254.169.254/poll", 2, 900, headers=[("user-agent", "agent")])
    r1 = cap.req(page, "http://www.test/", 10, 12, headers=[ua], status=301,
                 response_headers=[(":status", "301"), ("location", "https://www.test/start")])
    r2 = cap.req(page, "https://www.test/start", 14, 16, headers=[ua], status=302,
                 response_headers=[(":status", "302"), ("location", "/home#top")])
    cap.req(page, "https://www.test/home", 20, 40, headers=[ua, ("sec-fetch-dest", "document")], ctype="text/html")
    o = cap.req(other, "https://x.test/", 22, 30, headers=[ua])
    c = cap.req(curl, "https://api.test/v1", 24, 32, headers=[("user-agent", "curl/8.0")])
    during = cap.req(curl, "https://api2.test/", 33, 36, headers=[ua])
    after = cap.req(late, "https://api3.test/", 60, 70, headers=[ua])
    before = cap.req(late, "https://api0.test/", 3, 8, headers=[ua])
    p = both_ways(cap.an, monkeypatch)
    assert p[0] == 4 and p[1] == [r1.id, r2.id]
    assert dict(p[7]) == {
        poll.id: BG_LINK_LOCAL.format(addr="169.254.169.254"),
        o.id: BG_OTHER_CLIENT.format(addr="10.0.0.7", doc="10.0.0.1"),
        c.id: BG_OTHER_AGENT.format(agent="curl/8.0"),
        after.id: BG_AFTER_PAGE,
        before.id: BG_BEFORE_DOCUMENT,
    }
    assert during.id not in dict(p[7])  # no header ties it; it started while the page loaded
    # the link-local poll began before the page: the page starts at its first redirect
    assert p[3] == T0 + 9 * 0.001 and p[4] == 10


def test_only_link_local_requests_make_their_own_page(monkeypatch):
    cap = Capture()
    ll = cap.conn(client="fe80::2", server="fe80::1", port=80)
    for i in range(5):
        cap.req(ll, "http://[fe80::1]/x", 10 + i, 30 + i)
    p = both_ways(cap.an, monkeypatch)
    assert p[0] == 1 and p[7] == []


def test_page_start_in_a_capture_out_of_time_order(monkeypatch):
    cap = Capture(packets=100, shuffled=True)
    cap.conn(start=1)
    e = cap.req(1, "https://www.test/", 70, 80)
    starts = {e.id: T0 + 10 * 0.001}  # the 11th time, packet 91 of the capture out of order (no bisection finds it)
    p = both_ways(cap.an, monkeypatch, exs=[e], starts=starts)
    assert p[3] == T0 + 10 * 0.001 and p[4] == 91


def _random_capture(seed: int) -> Capture:
    """Requests drawn from a few connections (one link-local, one from another client, one
    IPv6, one the model does not hold), hosts, Referer/Origin/Sec-Fetch-Dest/User-Agent
    values, header lists shared between requests, content types, redirects (one Location
    that is no URL), pushes, missing responses, and packets out of time order."""
    rnd = random.Random(seed)
    cap = Capture(shuffled=rnd.random() < 0.2)
    addrs = [("10.0.0.1", "192.0.2.10"), ("10.0.0.1", "192.0.2.11"), ("10.0.0.1", "169.254.169.254"), ("10.0.0.9", "192.0.2.12"),
             ("2001:db8::1", "2001:db8::10"), ("10.0.0.1", "192.0.2.13")]
    conns = [cap.conn(*rnd.choice(addrs), port=rnd.choice((80, 443)), start=rnd.randint(1, 40)) for _ in range(rnd.randint(1, 6))]
    conns += [99] if rnd.random() < 0.2 else []  # (no such connection)
    hosts = ["www.test", "cdn.test", "ad.test", "www.test:8443", None]
    refs = [None, None, "https://www.test/", "https://cdn.test/p", "https://else.test/", "null", "not a url"]
    agents = [None, BROWSER, BROWSER, "curl/8.0", waterfall.UNKNOWN_VALUE]
    lists: list[list] = []
    urls: list[str] = []
    n = rnd.randint(1, 40)
    for _ in range(n):
        if lists and rnd.random() < 0.4:
            headers = rnd.choice(lists)  # a decoder's shared list
        else:
            headers = []
            for name, pool in (("referer", refs), ("origin", refs), ("user-agent", agents)):
                v = rnd.choice(pool)
                if v is not None:
                    headers.append((rnd.choice((name, name.title())), v))
            if rnd.random() < 0.3:
                headers.append(("sec-fetch-dest", rnd.choice(("document", " Document ", "script", "empty"))))
            lists.append(headers)
        host = rnd.choice(hosts)
        url = None if host is None else f"{rnd.choice(('http', 'https'))}://{host}/{rnd.choice(('', 'a.js', 'b.html', 'c.png', 'd'))}"
        if url and urls and rnd.random() < 0.3:
            url = rnd.choice(urls)
        if url:
            urls.append(url)
        start = rnd.randint(1, 400)
        status = rnd.choice((200, 200, 200, 204, 301, 302, None))
        rh = [(":status", str(status))]
        if status in (301, 302) and urls:
            rh.append(("location", rnd.choice(urls + ["/b.html", "d#frag", "http://[::1"])))
        if rnd.random() < 0.3:
            rh.append(("Content-Type", rnd.choice(("text/html", "image/png"))))
        cap.req(rnd.choice(conns), url, start, rnd.choice((None, start + rnd.randint(0, 300))), headers=headers, status=status,
                ctype=rnd.choice((None, None, "text/html; charset=utf-8", "text/css")), response_headers=rh,
                pushed=rnd.random() < 0.1, authority=rnd.choice((None, "www.test")))
    return cap


@pytest.mark.parametrize("seed", range(400))
def test_random_captures_both_ways(seed, monkeypatch):
    an = _random_capture(seed).an
    both_ways(an, monkeypatch)
    exs = sorted(an.exchanges, key=lambda e: (e.request_start, e.id))
    both_ways(an, monkeypatch, exs=exs[::2], starts={e.id: e.request_start for e in exs[1:]})
    both_ways(an, monkeypatch, exs=exs, starts={e.id: e.request_start + 0.0005 for e in exs})  # (at no packet's time)
