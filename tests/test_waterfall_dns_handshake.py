"""The waterfall's DNS phase, its handshake phases and a HAR's bars against outside oracles.

The review of the amazon page load (Chrome; ../shared/captures/pageload-amazon, with Chrome's
NetLog; WebPageTest's HAR "Run 1, First View" is the same load):

1. DNS ended at the answer that carried the address used (www.amazon.com 0–9.1 ms, then 42.7 ms
   "blocked"), not at the last answer the browser waited for: its HTTPS records and those of
   the names of its CNAME chain (e15316.dsca.akamaiedge.net, answered 37.6 ms).
2. "blocked" between the TCP handshake and the ClientHello (68.3–84.0 ms): Chrome's
   SSL_CONNECT begins in the millisecond its TCP_CONNECT ends.
3. A HAR's thin bars drawn on its own clock (~130–164 ms left of the wire's) while its Load
   event milestone was moved onto the capture's.

Oracles: tshark's DNS and TCP packets; Chrome's NetLog read here with nothing but ``json``
(HOST_RESOLVER_DNS_TASK, TCP_CONNECT, SSL_CONNECT, matched to the wire by the socket's local
port); WebPageTest's HAR (``_dns_*``, ``_connect_*``, ``_ssl_*``: ms from its page start).
"""
from __future__ import annotations

import gzip
import json
import statistics
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import SAMPLES, run_tool, shared

from wirefall.analyzer import waterfall
from wirefall.analyzer.pipeline import analyze

AMAZON = "pageload-amazon/amazon1.cap.gz"
LOOKUP_TYPES = {"1", "28", "64", "65"}  # A, AAAA, SVCB, HTTPS


@lru_cache(maxsize=4)
def _amazon_keys() -> str:
    import os

    keys = Path(os.environ.get("TMPDIR", "/tmp")) / f"wirefall-amazon-{os.getuid()}.keys"
    if not keys.exists():
        keys.write_bytes(gzip.decompress(shared("pageload-amazon/amazon1.key_log.txt.gz").read_bytes()))
    return str(keys)


@lru_cache(maxsize=4)
def _amazon_cap() -> str:
    """The capture unpacked (tshark reads gzip, but one copy serves every tshark run)."""
    import os

    cap = Path(os.environ.get("TMPDIR", "/tmp")) / f"wirefall-amazon-{os.getuid()}.cap"
    if not cap.exists():
        cap.write_bytes(gzip.decompress(shared(AMAZON).read_bytes()))
    return str(cap)


_ANALYSES: dict = {}


def _analysis(cap: str, keys: str | None, log: str | None = None):
    k = (cap, keys, log)
    if k not in _ANALYSES:
        an = analyze(cap, keylogs=[keys] if keys else [])
        if log:
            from wirefall.analyzer.browserlog import overlay

            overlay(an, log)
        _ANALYSES[k] = (an, waterfall.build(an))
    return _ANALYSES[k]


# ---------------------------------------------------------------------------- tshark's DNS


def _tshark_dns(cap: str) -> list[dict]:
    """Each DNS query with its answer (tshark): name, type, asker, times and packets, the
    CNAMEs and addresses of the answer."""
    out = run_tool("tshark", "-r", cap, "-Y", "dns", "-T", "fields", "-E", "separator=\t", "-E", "aggregator=,",
                   "-e", "frame.number", "-e", "frame.time_epoch", "-e", "ip.src", "-e", "ipv6.src", "-e", "ip.dst", "-e", "ipv6.dst",
                   "-e", "udp.srcport", "-e", "udp.dstport", "-e", "dns.id", "-e", "dns.flags.response", "-e", "dns.qry.name",
                   "-e", "dns.qry.type", "-e", "dns.cname", "-e", "dns.a", "-e", "dns.aaaa")
    queries: dict[tuple, dict] = {}
    out_list = []
    for line in out.splitlines():
        f = (line.split("\t") + [""] * 15)[:15]
        src, dst = f[2] or f[3], f[4] or f[5]
        if f[9] in ("0", "False"):
            q = {"packet": int(f[0]), "time": float(f[1]), "client": src, "name": f[10].lower(), "type": f[11],
                 "answer_packet": None, "answer_time": None, "cnames": set(), "addresses": set()}
            queries[(src, f[6], f[8], f[10].lower())] = q
            out_list.append(q)
        else:
            q = queries.get((dst, f[7], f[8], f[10].lower()))
            if q is not None and q["answer_packet"] is None:
                q["answer_packet"], q["answer_time"] = int(f[0]), float(f[1])
                q["cnames"] = {n.lower() for n in f[12].split(",") if n}
                q["addresses"] = {a for a in (f[13] + "," + f[14]).split(",") if a}
    return out_list


def _expected_lookup(qs: list[dict], name: str, server: str, syn: float) -> tuple[float, float, set[int]] | None:
    """The lookup of a connection by the documented rule, from tshark's packets: (first query,
    last answer, the query packets it is made of)."""
    fits = [q for q in qs if q["name"] == name and server in q["addresses"] and q["answer_time"] <= syn]
    if not fits:
        return None
    best = max(fits, key=lambda q: q["answer_time"])
    first = best["time"]
    members = [best]
    for q in sorted((q for q in qs if q["name"] == name and q["time"] < best["time"] and best["time"] - q["time"] < 1.0),
                    key=lambda q: q["time"], reverse=True):
        if q["answer_time"] is not None and q["answer_time"] < best["time"] and q["addresses"]:
            break
        first = min(first, q["time"])
        if q["answer_time"] is not None and q["answer_time"] <= syn and q["client"] == best["client"]:
            members.append(q)
    names = {name} | {n for q in members for n in q["cnames"]}
    end = max(q["answer_time"] for q in members)
    grew = True
    while grew:
        grew = False
        for q in sorted(qs, key=lambda q: q["time"]):
            if (q not in members and q["client"] == best["client"] and q["type"] in LOOKUP_TYPES and q["name"] in names
                    and first <= q["time"] <= end + waterfall.LOOKUP_FOLLOW_GAP
                    and q["answer_time"] is not None and q["answer_time"] <= syn):
                members.append(q)
                names |= q["cnames"]
                end = max(end, q["answer_time"])
                grew = True
    return first, end, {q["packet"] for q in members}


DNS_CAPTURES = [("amazon", None), ("page/bg-mixed.pcapng", "page/bg-mixed.keys")]


def _open(which: str, keys: str | None):
    if which == "amazon":
        return _amazon_cap(), _amazon_keys()
    return str(SAMPLES / which), str(SAMPLES / keys) if keys else None


@pytest.mark.parametrize("which,keys", DNS_CAPTURES, ids=[w for w, _ in DNS_CAPTURES])
def test_dns_phase_is_the_whole_lookup_the_client_waited_for(which, keys):
    """Each DNS phase runs from the lookup's first query to its last answer before the
    connection's SYN/Initial — the name's and its CNAME chain's A/AAAA/HTTPS/SVCB queries of the
    same asker, recomputed here from tshark's packets — and every such query is ``used_by`` that
    connection (no query is left ``used_by`` None that the phase covers)."""
    cap, keys = _open(which, keys)
    an, wf = _analysis(cap, keys)
    qs = _tshark_dns(cap)
    conns = {c.id: c for c in an.connections}
    checked = 0
    for r in wf.rows:
        dns = r.phase("dns")
        if dns is None:
            continue
        c = conns[r.connection]
        syn = c.connect_start if c.connect_start is not None else c.start
        name = waterfall._host_name((c.tls and c.tls.sni) or (c.quic and c.quic.sni) or r.host)
        want = _expected_lookup(qs, name, c.server[0], syn)
        assert want is not None, (c.id, name)
        first, end, packets = want
        assert dns == (pytest.approx(first, abs=1e-6), pytest.approx(end, abs=1e-6)), (c.id, name)
        assert {d.query_packet for d in wf.dns if d.used_by == c.id} == packets, (c.id, name)
        checked += 1
    assert checked >= (4 if which == "amazon" else 3)


def test_amazon_dns_ends_at_the_last_answer_of_the_name_and_its_cname_chain():
    """The reviewer's numbers, from the capture (tshark): www.amazon.com's lookup ends with the
    HTTPS answers for its CNAME target e15316.dsca.akamaiedge.net (packets 13–16, 37.6 ms), not
    with the AAAA answer of its address (9.1 ms); fls-na.amazon.com's with those for
    endpoint.prod.us-east-1.forester.a2z.com (2.384 s), formerly ``used_by`` None.  A query
    answered after the connection's SYN (the token.awswaf.com AAAA, answered at 248.8 ms, SYN
    208.1) was not waited for: neither in the phase nor ``used_by``."""
    cap = _amazon_cap()
    an, wf = _analysis(cap, _amazon_keys())
    t0 = wf.t0
    qs = {q["packet"]: q for q in _tshark_dns(cap)}
    rows = {r.host: r for r in wf.rows if r.phase("dns") is not None}
    want = {  # host: (first query packet, last answer packet, the answer that gave the address)
        "www.amazon.com": (1, 16, 9),
        "1c5c1ecf7303.c0b160fb.us-east-1.token.awswaf.com": (54, 64, 64),
        "images-na.ssl-images-amazon.com": (570, 592, 583),
        "fls-na.amazon.com": (624, 663, 630),
    }
    assert set(rows) == set(want)
    answer_of = {q["answer_packet"]: q for q in qs.values()}
    for host, (qp, ap, addr) in want.items():
        r = rows[host]
        a, b = r.phase("dns")
        assert a == pytest.approx(qs[qp]["time"], abs=1e-6) and b == pytest.approx(answer_of[ap]["answer_time"], abs=1e-6), host
        assert answer_of[addr]["answer_time"] < b or addr == ap
        mine = {d.query_packet for d in wf.dns if d.used_by == r.connection}
        assert answer_of[ap]["packet"] in mine
    assert round((rows["www.amazon.com"].phase("dns")[1] - t0) * 1000, 1) == 37.6
    assert round(rows["fls-na.amazon.com"].phase("dns")[1] - t0, 3) == 2.384
    chain = [d for d in wf.dns if d.name == "endpoint.prod.us-east-1.forester.a2z.com"]
    assert len(chain) == 4 and {d.used_by for d in chain} == {rows["fls-na.amazon.com"].connection}
    late = next(d for d in wf.dns if d.response_packet == 73)
    assert late.used_by is None and late.response_time > an.connections[rows[
        "1c5c1ecf7303.c0b160fb.us-east-1.token.awswaf.com"].connection].connect_start


# --------------------------------------------------------------------------- Chrome's NetLog


@lru_cache(maxsize=8)
def _netlog(path: str) -> tuple[dict, dict]:
    """(socket by local port: {tcp: (begin, end), ssl: (begin, end)}, DNS task by host: (begin,
    end)) from the raw NetLog, epoch seconds (its ticks plus timeTickOffset)."""
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        text = f.read()
    try:
        d = json.loads(text)
    except json.JSONDecodeError:  # (a NetLog cut before its closing brackets)
        d = json.loads(text.rstrip().rstrip(",") + "]}")
    c = d["constants"]
    name = {v: k for k, v in c["logEventTypes"].items()}
    phase = {v: k for k, v in c["logEventPhase"].items()}
    off = int(c["timeTickOffset"])
    socks: dict[int, dict] = {}
    jobs: dict[int, dict] = {}
    for e in d["events"]:
        n, ph, src = name[e["type"]], phase[e["phase"]], e["source"]["id"]
        t = (int(e["time"]) + off) / 1000.0
        p = e.get("params") or {}
        if n in ("TCP_CONNECT", "SSL_CONNECT"):
            s = socks.setdefault(src, {})
            s.setdefault(n, [None, None])[0 if ph == "PHASE_BEGIN" else 1] = t
            if "local_address" in p:
                s["port"] = int(p["local_address"].rsplit(":", 1)[1])
        elif n == "HOST_RESOLVER_MANAGER_JOB" and ph == "PHASE_BEGIN":
            jobs.setdefault(src, {})["host"] = p["host"].split("://", 1)[-1].rsplit(":", 1)[0]
        elif n == "HOST_RESOLVER_DNS_TASK":
            jobs.setdefault(src, {}).setdefault("task", [None, None])[0 if ph == "PHASE_BEGIN" else 1] = t
    by_port = {s["port"]: s for s in socks.values() if "port" in s and None not in s.get("SSL_CONNECT", [None])}
    tasks = {j["host"]: tuple(j["task"]) for j in jobs.values() if "host" in j and None not in j.get("task", [None])}
    return by_port, tasks


def _reply_lag(cap: str, port: int) -> float:
    """This host's own delay on a connection (tshark): its ACK of the SYN/ACK minus the SYN/ACK."""
    out = run_tool("tshark", "-r", cap, "-Y", f"tcp.port == {port} && tcp.len == 0 && tcp.flags.ack == 1", "-T", "fields",
                   "-e", "frame.time_epoch", "-e", "tcp.flags.syn", "-e", "tcp.srcport")
    synack = ack = None
    for line in out.splitlines():
        t, syn, sport = line.split("\t")
        if syn in ("1", "True") and synack is None:
            synack = float(t)
        elif synack is not None and int(sport) == port and ack is None:
            ack = float(t)
    assert synack is not None and ack is not None
    return ack - synack


def test_amazon_phases_against_chromes_netlog():
    """Chrome's NetLog of the same load, per TCP connection with a lookup (4), its clock put on
    the capture's by the connection's own TCP_CONNECT begin ↔ SYN:

    - connect and tls are Chrome's TCP_CONNECT and SSL_CONNECT (within 5 and 3 ms: fls-na's
      TCP_CONNECT began 4.3 ms before its SYN reached the wire), with nothing between them
      (Chrome's SSL_CONNECT begins in the millisecond its TCP_CONNECT ends; before: 15–16 ms of
      "blocked" there on all four);
    - DNS starts within 6 ms of Chrome's HOST_RESOLVER_DNS_TASK begin (it asks systemd-resolved
      on 127.0.0.53, not in the capture, which asks the network) and ends no later than the
      task: the browser waited for all of it;
    - what the task lasted beyond the wire's last answer (12, 26, 13 and 40 ms) is this host's
      delay in taking answers in — its ACK of each connection's SYN/ACK left 15–29 ms after the
      SYN/ACK — plus, for fls-na, 11 ms more: never more than that delay + 15 ms.  Before, the
      DNS phase ended 9–41 ms earlier still (www 9.1 ms, task end 49.8)."""
    cap = _amazon_cap()
    an, wf = _analysis(cap, _amazon_keys())
    socks, tasks = _netlog(str(shared("pageload-amazon/amazon1_netlog.json.gz")))
    conns = {c.id: c for c in an.connections}
    checked = 0
    for r in wf.rows:
        dns = r.phase("dns")
        if dns is None:
            continue
        c = conns[r.connection]
        s = socks[c.client[1]]
        (tb, te), (sb, se) = s["TCP_CONNECT"], s["SSL_CONNECT"]
        off = c.connect_start - tb  # the capture's clock minus the NetLog's, at the SYN
        names = [n for n, *_ in r.phases]
        assert names.index("tls") == names.index("connect") + 1, names
        (ca, cb), (la, lb) = r.phase("connect"), r.phase("tls")
        assert cb == la and sb - te <= 0.001
        assert abs((cb - ca) - (te - tb)) <= 0.005 and abs((lb - la) - (se - sb)) <= 0.003, (r.host, cb - ca, te - tb, lb - la, se - sb)
        db, de = tasks[r.host]
        assert abs(dns[0] - (db + off)) <= 0.006, r.host
        assert dns[1] <= de + off + 0.001, r.host
        assert de + off - dns[1] <= _reply_lag(cap, c.client[1]) + 0.015, r.host
        checked += 1
    assert checked == 4


# --------------------------------------------------------------------- WebPageTest's HAR


def test_amazon_phases_against_webpagetests_har():
    """WebPageTest's HAR of the load ("Run 1, First View"), its ``_*_start``/``_*_end`` in ms from
    its page start, which is the capture's first packet but for the offset its connects show
    (median of SYN, ACK and TLS end − the HAR's: 4–5 ms): ``_connect_ms`` and ``_ssl_ms`` are the
    wire's connect and tls within 5 and 3 ms; ``_dns_start`` within 5 ms of the DNS phase's
    start; ``_dns_ms`` (54, 43, 55, 87) never shorter than the wire's DNS (37.6, 14.7, 37.4,
    49.4 ms; 9.1, 14.7, 10.2, 9.0 before) — the rest is the host, as with the NetLog."""
    cap = _amazon_cap()
    an, wf = _analysis(cap, _amazon_keys())
    har = json.loads(gzip.decompress(shared("hars/webpagetest-amazon.har.gz").read_bytes()))["log"]
    page = har["pages"][0]["id"]
    entries = {e["request"]["url"].split("/")[2]: e for e in har["entries"]
               if e.get("pageref") == page and (e.get("_dns_ms") or -1) > 0}
    rows = [r for r in wf.rows if r.phase("dns") is not None]
    assert {r.host for r in rows} == set(entries)
    rel = lambda t: (t - wf.t0) * 1000.0
    diffs = []
    for r in rows:
        e = entries[r.host]
        (ca, cb), (la, lb) = r.phase("connect"), r.phase("tls")
        diffs += [e["_connect_start"] - rel(ca), e["_connect_end"] - rel(cb), e["_ssl_end"] - rel(lb)]
    shift = statistics.median(diffs)
    assert 0 <= shift <= 6
    for r in rows:
        e = entries[r.host]
        (da, db), (ca, cb), (la, lb) = r.phase("dns"), r.phase("connect"), r.phase("tls")
        assert abs(e["_connect_ms"] - (cb - ca) * 1000) <= 5 and abs(e["_ssl_ms"] - (lb - la) * 1000) <= 3, r.host
        assert abs(e["_dns_start"] - shift - rel(da)) <= 5, r.host
        assert e["_dns_ms"] >= (db - da) * 1000 and e["_dns_end"] - shift >= rel(db), r.host


# ------------------------------------------------------------------------ handshake, tshark


TCP_TLS = [("amazon", None), ("page/bg-mixed.pcapng", "page/bg-mixed.keys"), ("page/page-h1.pcapng", "page/page-h1.keys"),
           ("page/pw-h1.pcapng", "page/pw-h1.keys"), ("page/pw-h2.pcapng", "page/pw-h2.keys"),
           ("quic/page-multi-late.pcapng", "quic/page-multi-late.keys"), ("lossy/page-h1.pcapng", "lossy/page-h1.keys")]


def _handshakes(cap: str) -> dict[tuple[str, int], tuple[float, float]]:
    """(client address, port) -> (SYN time, the client's first segment after the SYN/ACK), tshark."""
    out = run_tool("tshark", "-r", cap, "-Y", "tcp", "-T", "fields", "-e", "frame.time_epoch", "-e", "ip.src", "-e", "ipv6.src",
                   "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.flags.syn", "-e", "tcp.flags.ack", "-e", "tcp.stream")
    syn: dict[str, tuple] = {}
    synack: set[str] = set()
    done: dict[tuple[str, int], tuple[float, float]] = {}
    for line in out.splitlines():
        t, a4, a6, sp, _dp, fs, fa, st = line.split("\t")
        t_, s, a = float(t), fs in ("1", "True"), fa in ("1", "True")
        if s and not a:
            syn.setdefault(st, (t_, a4 or a6, int(sp)))
        elif s and a:
            synack.add(st)
        elif st in synack and st in syn and (a4 or a6, int(sp)) == syn[st][1:] and syn[st][1:] not in done:
            done[syn[st][1:]] = (syn[st][0], t_)
    return done


@pytest.mark.parametrize("which,keys", TCP_TLS, ids=[w for w, _ in TCP_TLS])
def test_tls_begins_where_the_tcp_handshake_ends(which, keys):
    """TLS over TCP: connect is the SYN → the client's ACK of the SYN/ACK (tshark; its first
    segment when that ACK is missing or rides on data) and tls follows it at once — the time
    until the ClientHello reached the wire is the client's TLS set-up, never "blocked" (before:
    amazon 15–16 ms, page-h1 up to 17 ms, pw-h1 3–5 ms there).  QUIC rows have no tls phase:
    their handshake is the connect phase (first Initial → handshake done), as before."""
    cap, keys = _open(which, keys)
    an, wf = _analysis(cap, keys)
    hs = _handshakes(cap)
    conns = {c.id: c for c in an.connections}
    tcp = quic = 0
    for r in wf.rows:
        c = conns.get(r.connection)
        if not r.first_of_connection or c is None:
            continue
        names = [n for n, *_ in r.phases]
        if c.transport == "udp":
            if "connect" in names:
                assert "tls" not in names and r.phase("connect") == (c.connect_start, c.connect_end)
                quic += 1
            continue
        if "tls" not in names or "connect" not in names:
            continue
        syn, ack = hs[(c.client[0], c.client[1])]
        (ca, cb), (la, lb) = r.phase("connect"), r.phase("tls")
        assert (ca, cb) == (pytest.approx(syn, abs=1e-6), pytest.approx(ack, abs=1e-6)), c.id
        assert names.index("tls") == names.index("connect") + 1 and la == cb, (c.id, names)
        assert lb == c.tls_end and c.tls_start >= cb
        tcp += 1
    assert tcp >= 1
    if which == "amazon":
        assert tcp == 4 and quic >= 3


NETLOG_TLS = [("page/page-h1.pcapng", "page/page-h1.keys", "page/page-h1.netlog.json.gz"),
              ("page/pw-h1.pcapng", "page/pw-h1.keys", "page/pw-h1.netlog.json.gz"),
              ("page/pw-h2.pcapng", "page/pw-h2.keys", "page/pw-h2.netlog.json.gz"),
              ("page/bg-mixed.pcapng", "page/bg-mixed.keys", "page/bg-mixed.netlog.json.gz"),
              ("quic/page-multi-late.pcapng", "quic/page-multi-late.keys", "quic/page-multi-late.netlog.json.gz")]


@pytest.mark.parametrize("cap,keys,log", NETLOG_TLS, ids=[c for c, _k, _l in NETLOG_TLS])
def test_connect_and_tls_together_are_chromes_connect_to_ssl_end(cap, keys, log):
    """The lab's Chromium loads (loopback): connect + tls is Chrome's TCP_CONNECT begin →
    SSL_CONNECT end within 2 ms (its whole milliseconds) on every TLS connection.  How Chrome
    splits it differs from the amazon load: on loopback its TCP_CONNECT ends when its network
    thread sees the connection up, up to 16 ms after the wire's ACK (page-h1's third
    connection: TCP_CONNECT 16 ms, SSL_CONNECT 7 — the wire: handshake 0.0 ms, ClientHello 17 ms
    later, TLS 5.9 ms), where the wire shows the TCP handshake over; the waterfall's connect is
    the wire's handshake, its tls the rest (the same split as the amazon NetLog's)."""
    an, wf = _analysis(str(SAMPLES / cap), str(SAMPLES / keys))
    socks, _tasks = _netlog(str(SAMPLES / log))
    conns = {c.id: c for c in an.connections}
    checked = 0
    for r in wf.rows:
        c = conns.get(r.connection)
        if not r.first_of_connection or c is None or c.transport != "tcp" or c.client[1] not in socks:
            continue
        con, tls = r.phase("connect"), r.phase("tls")
        if con is None or tls is None:
            continue
        s = socks[c.client[1]]
        assert abs((tls[1] - con[0]) - (s["SSL_CONNECT"][1] - s["TCP_CONNECT"][0])) <= 0.002, (c.id, tls[1] - con[0])
        assert con[1] == tls[0]
        checked += 1
    assert checked >= 1


# ------------------------------------------------------------------- a HAR's bars, its clock


def test_har_bars_and_load_event_are_on_one_clock():
    """WebPageTest's HAR over the amazon capture: its clock is 130–164 ms behind the capture's
    (browser − wire median: response end −130, request start −164 ms).  Its Load event is put
    on the capture's clock by its page's ``clock_offset``; the thin bars now move by the same
    offset (``Row.browser_clock_offset``), so that they sit under the wire's bars — the median
    of bar end − wire end is 0 ms by that offset, −130 ms before — and the figure's legend
    says so.  A NetLog (no page events, the capture host's clock) is drawn as it is."""
    cap = str(shared(AMAZON))
    har = str(shared("hars/webpagetest-amazon.har.gz"))
    an, wf = _analysis(cap, _amazon_keys(), har)
    pages = [p for p in an.browser["pages"] if isinstance(p.get("clock_offset"), (int, float))]
    assert pages
    off = pages[0]["clock_offset"]
    assert -0.2 < off < -0.1
    rows = [r for r in wf.rows if r.browser_phases]
    assert len(rows) >= 10
    ends = []
    for r in rows:
        times = r.browser["times"]
        assert r.browser_clock_offset == off
        assert r.browser_phases[0][1] == pytest.approx(times["start"] - off, abs=1e-9)
        assert r.browser_phases[-1][2] == pytest.approx(times["response_end"] - off, abs=1e-9)
        ends.append(r.browser_phases[-1][2] - r.end)
    assert abs(statistics.median(ends)) < 0.002
    load = next(m for m in wf.milestones if m.name == "load_event")
    har_page = json.loads(gzip.decompress(Path(har).read_bytes()))["log"]["pages"][0]
    on_load = next(p["on_load"] for p in pages if p["id"] == har_page["id"])
    assert load.time == pytest.approx(on_load - off, abs=1e-6)  # the same offset as the bars
    from wirefall.ui import figures

    fig = figures.waterfall_figure(wf)
    tr = next(t for t in fig.data if t.name == "browser")
    ms = lambda t: (t - wf.t0) * 1000.0
    assert sorted(tr.base) == pytest.approx(sorted(ms(a) for r in rows for _p, a, _b in r.browser_phases), abs=1e-6)
    legend = [t.name for t in fig.data if (t.name or "").startswith("Browser's view")]
    assert legend == [f"Browser's view (har, moved {-off * 1000:+.0f} ms to the capture's clock)"]
    assert any("after the log's clock offset" in (h or "") for h in tr.hovertext)
    # a NetLog of the same load: no page events, drawn on its own clock
    an2, wf2 = _analysis(cap, _amazon_keys(), str(shared("pageload-amazon/amazon1_netlog.json.gz")))
    for r in (r for r in wf2.rows if r.browser_phases):
        assert r.browser_clock_offset is None and r.browser_phases[0][1] == r.browser["times"]["start"]
