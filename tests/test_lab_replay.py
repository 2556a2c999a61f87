"""One real HAR replay per protocol through `wirefall lab --page HAR` (root; slow).

Checks, against tshark reading the captures with their key logs: every resource of the HAR's
page was fetched with status 200 from its own origin's address, each origin's name was looked up
in the lab's DNS server (queries and answers in the capture), and the connections per origin are
one for the multiplexed protocols (at most six for HTTP/1.1).
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from conftest import ROOT
from test_lab_pages import HAR

pytestmark = pytest.mark.slow
PROTOS = ["h1", "spdy", "h2", "h3"]


def _tshark(cap, keys, fields, flt):
    out = subprocess.run(["tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", flt, "-T", "fields",
                          "-E", "separator=|", *sum((["-e", f] for f in fields), [])],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [ln.split("|") for ln in out.stdout.splitlines() if ln.strip()]


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the lab needs root (namespaces, tcpdump)")
    need = ["ip", "tc", "ethtool", "tcpdump", "editcap", "openssl", "cjpeg", "ss", "nginx", "chromium", "node",
            "dnsmasq", "tshark"]
    missing = [t for t in need if not shutil.which(t)]
    if missing:
        pytest.skip(f"missing tools: {missing}")
    if not (ROOT / "scripts" / "spdy" / "node_modules" / "spdy").is_dir():
        pytest.skip("scripts/spdy/node_modules absent (npm ci)")
    if not HAR.exists():
        pytest.skip("the HAR is not here")
    out = tmp_path_factory.mktemp("replay") / "runs"
    # 20 ms of RTT: on a bare veth Chromium races spare connections it never uses
    p = subprocess.run([sys.executable, "-m", "wirefall", "lab", "--protocols", ",".join(PROTOS), "--page", str(HAR),
                        "--rtt", "20", "-o", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    m = json.loads((out / "manifest.json").read_text())
    return out, m


def _run(replay, proto):
    out, m = replay
    r = next(x for x in m["runs"] if x["protocol"] == proto)
    d = out / r["dir"]
    return m, r, d / r["files"]["capture"], d / r["files"]["keys"]


@pytest.mark.parametrize("proto", PROTOS)
def test_replay_fetches_every_resource_from_its_origin(replay, proto):
    m, r, cap, keys = _run(replay, proto)
    origins = m["page"]["addresses"]
    want = m["page"]["requests"]
    assert len(want) == 13 and len(origins) == 4
    # wirefall's decode: every URL a 200, answered by its origin's address
    d = r["decode"]
    assert d["ok"] and d["status_200"] == len(want) and not d["wrong_address"], d
    # tshark's: requests (host, path) on connections to the origin's address, answered 200
    if proto == "h1":
        rows = _tshark(cap, keys, ["ip.dst", "http.host", "http.request.uri"], "http.request")
        got = {(h, u) for ip, h, u in rows if origins.get(h) == ip}
        resp = _tshark(cap, keys, ["ip.src", "http.response.code"], "http.response")
        assert all(code == "200" for _ip, code in resp) and len(resp) >= len(want)
    elif proto == "h2":
        rows = _tshark(cap, keys, ["ip.dst", "http2.headers.authority", "http2.headers.path"], "http2.headers.method")
        got = {(h, u) for ip, h, u in rows if origins.get(h) == ip}
        st = [s for row in _tshark(cap, keys, ["http2.headers.status"], "http2.headers.status") for s in row[0].split(",")]
        assert st and set(st) == {"200"}
    elif proto == "h3":
        # tshark 4.0 has HTTP/3 frames but no QPACK: per origin's address, a HEADERS frame from the
        # client (request) and one from the server (response) for each of the origin's URLs
        # (requests counted as distinct client request streams per client port: tshark dissects a
        # HEADERS frame again in each QUIC packet that retransmits it)
        rows = _tshark(cap, keys, ["ip.src", "ip.dst", "http3.frame_type", "udp.srcport", "quic.stream.stream_id"],
                       "http3.frame_type == 1")
        for h, addr in origins.items():
            n = sum(1 for u in want if urlsplit(u).hostname == h)
            sent = {(port, sid) for src, dst, ft, port, sids in rows if dst == addr
                    for sid in sids.split(",") if sid and int(sid) % 4 == 0}
            answered = sum(ft.split(",").count("1") for src, dst, ft, _p, _s in rows if src == addr)
            assert len(sent) == n and answered >= n, (h, sorted(sent), answered, n)
        got = {(urlsplit(u).hostname, urlsplit(u).path) for u in want}
    else:  # SPDY: tshark has no SPDY/3 dissector; the TLS SNI per connection and wirefall's decode
        rows = _tshark(cap, keys, ["ip.dst", "tls.handshake.extensions_server_name"], "tls.handshake.type == 1")
        assert {(h, ip) for ip, h in rows} == {(h, ip) for h, ip in origins.items()}
        got = {(urlsplit(u).hostname, urlsplit(u).path) for u in want}
    assert {(urlsplit(u).hostname, urlsplit(u).path) for u in want} <= got


@pytest.mark.parametrize("proto", PROTOS)
def test_replay_looks_up_every_origin_and_opens_its_connections(replay, proto):
    m, r, cap, keys = _run(replay, proto)
    origins = m["page"]["addresses"]
    q = _tshark(cap, keys, ["dns.qry.name", "dns.qry.type"], "dns.flags.response == 0")
    a = _tshark(cap, keys, ["dns.qry.name", "dns.a"], "dns.flags.response == 1 && dns.a")
    assert {n for n, _t in q} >= set(origins)
    assert {(n, ip) for n, ip in a if n in origins} == set(origins.items())
    # connections that carried the page's requests (Chromium may also open a spare one it never uses)
    if proto == "h3":
        rows = _tshark(cap, keys, ["ip.dst", "udp.stream"], "http3.frame_type == 1")
    elif proto == "h2":
        rows = _tshark(cap, keys, ["ip.dst", "tcp.stream"], "http2.headers.method")
    elif proto == "h1":
        rows = _tshark(cap, keys, ["ip.dst", "tcp.stream"], "http.request")
    else:  # SPDY: no tshark dissector; the client opens one TLS connection per origin it needs
        rows = _tshark(cap, keys, ["ip.dst", "tcp.stream"], "tls.handshake.type == 1")
    per = {h: len({st for ip, st in rows if ip == addr}) for h, addr in origins.items()}
    if proto == "h1":
        assert all(1 <= n <= 6 for n in per.values()), per
    else:
        assert set(per.values()) == {1}, per
    # the lab's own record agrees
    o = r["origins"]
    assert o["ok"] and {h: v["connections"] for h, v in o["origins"].items()} == per


def _netlog_quic(path):
    """Chromium's NetLog read here, apart from the lab's reader: its active field trial groups, the
    QUIC sessions it began per host and the port migrations it began per host."""
    log = json.loads(gzip.open(path, "rt").read())
    t, begin = log["constants"]["logEventTypes"], log["constants"]["logEventPhase"]["PHASE_BEGIN"]
    host, sessions, moved = {}, {}, {}
    for e in log["events"]:
        if e["phase"] == begin and e["type"] == t["QUIC_SESSION"]:
            host[e["source"]["id"]] = e["params"]["host"]
            sessions[e["params"]["host"]] = sessions.get(e["params"]["host"], 0) + 1
        elif e["phase"] == begin and e["type"] == t["QUIC_PORT_MIGRATION_TRIGGERED"]:
            moved[host[e["source"]["id"]]] = moved.get(host[e["source"]["id"]], 0) + 1
    return log["constants"]["activeFieldTrialGroups"], sessions, moved


def test_replay_h3_one_quic_session_per_origin_never_moved(replay):
    """Chromium's own record of the HTTP/3 load: the lab's QUIC field trial in force (port
    migration off: on a busy host Chromium took the stalls for a degrading path and moved
    connections to new UDP ports, whose server half tshark 4.0 does not follow, or reopened them
    with 0-RTT), one QUIC session per origin and no port migration; the lab's record agrees."""
    from wirefall.lab.run import QUIC_FIELD_TRIAL

    out, m = replay
    r = next(x for x in m["runs"] if x["protocol"] == "h3")
    trials, sessions, moved = _netlog_quic(out / r["dir"] / r["files"]["netlog"])
    assert f"QUIC:{QUIC_FIELD_TRIAL}" in trials, trials
    assert sessions == {h: 1 for h in m["page"]["addresses"]} and not moved, (sessions, moved)
    assert r["quic"] == {"sessions": sessions, "port_migrations": moved, "field_trials": trials}
