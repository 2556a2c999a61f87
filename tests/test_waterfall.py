"""Waterfall model and statistics.

Truth: tshark on third-party captures (DNS answers, per-connection packets and bytes), the
timeline model itself for hand-built analyses (the input of this layer), and tshark /
``wirefall requests --json`` on the sample captures once their exchanges are dissected."""
from __future__ import annotations

import collections
import glob
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirefall.analyzer import stats, waterfall
from wirefall.dissectors import dns as dnsd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wf_fixture import T0, make_analysis  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
SAMPLES = ROOT / "sample_captures"
AMAZON = SHARED / "pageload-amazon" / "amazon1.cap.gz"


def _shared(p: Path) -> Path:
    if not SHARED.exists():
        pytest.skip("../shared/captures not present")
    if not p.exists():
        pytest.skip(f"{p.name} not present")
    return p


def _tshark(*args: str) -> str:
    out = subprocess.run(["tshark", *args], capture_output=True, text=True, timeout=300, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-500:]
    return out.stdout


# ------------------------------------------------------------------ hand-built analysis


def test_rows_one_per_exchange_in_start_order_with_model_times():
    an = make_analysis()
    wf = waterfall.build(an)
    assert len(wf.rows) == len(an.exchanges) == 7
    starts = [r.start for r in wf.rows]
    assert starts == sorted(starts)
    exs = {e.id: e for e in an.exchanges}
    conns = {c.id: c for c in an.connections}
    seen_conn = set()
    for r in wf.rows:
        e = exs[r.exchange]
        if e.pushed:  # no request on the wire: waits from the promise
            assert r.phase("send") is None
            assert r.phase("wait") == (e.request_start, e.response_start)
        else:
            assert r.phase("send") == (e.request_start, e.request_end)
            assert r.phase("wait") == (e.request_end, e.response_start)
        assert r.phase("receive") == (e.response_start, e.response_end)
        c = conns[e.connection]
        if e.connection not in seen_conn:  # first exchange of the connection carries connect/TLS
            assert r.first_of_connection
            assert r.phase("connect") == (c.connect_start, c.connect_end)
            # TLS from the end of the TCP handshake (the client's set-up of TLS: its ClientHello
            # came after), not a blocked gap between them
            assert c.tls_start > c.connect_end and r.phase("tls") == (c.connect_end, c.tls_end)
            seen_conn.add(e.connection)
        else:
            assert not r.first_of_connection
            assert r.phase("connect") is None and r.phase("tls") is None and r.phase("dns") is None
    # DNS: matched through the CNAME chain's address to connection 1, not to connection 2
    # (same server address, but the lookup is used once)
    first = wf.rows[0]
    assert first.url == "https://example.test/"
    assert first.phase("dns") == (T0, T0 + 0.008)
    assert wf.rows[1].phase("dns") is None


def test_content_classes_colours_badges():
    wf = waterfall.build(make_analysis())
    by_url = {r.url.rsplit("/", 1)[-1]: r for r in wf.rows}
    assert {k: r.content_class for k, r in by_url.items()} == {
        "": "html", "style.css": "css", "app.js": "script", "img.png": "image", "font.woff2": "font",
        "pushed.js": "script", "cancelled": "other"}
    assert by_url[""].colors["receive"] == waterfall.CONTENT_COLORS["html"][1]
    # waiting and sending have colours of their own (a shared one hid which was which); the
    # light content colour is the download's where no packet arrives (Row.chunks are dark)
    assert by_url["app.js"].colors["wait"] == waterfall.WAIT_COLOR != by_url["app.js"].colors["send"] == waterfall.SEND_COLOR
    assert by_url["app.js"].colors["light"] == waterfall.CONTENT_COLORS["script"][0]
    assert by_url[""].badge == "HTTP/1.1" and by_url["app.js"].badge == "h2"
    assert waterfall.content_class(None, "/a/b.woff2?x=1") == "font"
    assert waterfall.content_class("application/json", "/x.js") == "script"  # URL decides when MIME is not a class
    assert waterfall.content_class("image/svg+xml") == "image"
    byconn = waterfall.build(make_analysis(), color_by="connection")
    cols = {r.connection: r.colors["receive"] for r in byconn.rows}
    assert len(set(cols.values())) == 2


def test_markers_push_reset_priority_stall_gap():
    wf = waterfall.build(make_analysis())
    by_url = {r.url.rsplit("/", 1)[-1]: r for r in wf.rows}
    kinds = lambda r: collections.Counter(m.kind for m in r.markers)
    pushed = by_url["pushed.js"]
    assert pushed.pushed and wf.rows[pushed.push_parent_row].url.endswith("/app.js")
    push = next(m for m in pushed.markers if m.kind == "push")
    assert push.packet == 165  # the PUSH_PROMISE frame
    reset = next(m for m in by_url["cancelled"].markers if m.kind == "reset")
    assert reset.packet == 141 and "CANCEL" in reset.label
    assert kinds(by_url["app.js"])["priority"] == 1
    # stream 1 stalled 40 ms (DATA 180 -> WINDOW_UPDATE 220), connection window 41 ms
    stalls = [m for m in by_url["app.js"].markers if m.kind == "stall"]
    assert sorted(m.label.rsplit(", ", 1)[-1] for m in stalls) == ["40.0 ms", "41.0 ms"]
    assert kinds(by_url["img.png"])["stall"] == 1  # connection window only
    assert kinds(by_url["style.css"])["stall"] == 0  # other connection
    # the capture gap at packet 250 falls inside app.js and img.png only
    assert {k for k, r in by_url.items() if kinds(r)["gap"]} == {"app.js", "img.png"}
    assert any("bytes lost" in h for h in by_url["app.js"].hover[-4:] + [m.label for m in by_url["app.js"].markers])


def test_milestones_and_grouping():
    an = make_analysis()
    wf = waterfall.build(an)
    assert wf.milestone("first_packet").time == T0
    html = wf.milestone("html_first_byte")
    assert html.packet == 120 and html.time == an.exchanges[0].response_start
    assert wf.milestone("page_load").packet == 300
    assert wf.page_load_time == pytest.approx(0.299)
    g = waterfall.build(an, group_by="connection")
    conns = [r.connection for r in g.rows]
    assert conns == sorted(conns, key=lambda c: conns.index(c))  # contiguous groups
    assert conns[:2] == [1, 1]
    assert [r.index for r in g.rows] == list(range(len(g.rows)))
    d = wf.to_dict()
    assert len(d["rows"]) == 7 and d["milestones"][0]["name"] == "first_packet"


def test_hover_text_has_url_status_sizes_and_phase_times():
    wf = waterfall.build(make_analysis())
    h = "\n".join(wf.rows[0].hover)
    assert "https://example.test/" in h and "status 200" in h and "19.5 KiB" in h and "58.6 KiB decoded" in h
    assert "DNS lookup: 8.0 ms" in h and "Waiting (TTFB): 39.0 ms" in h


def test_stats_handmade_header_reduction_first_vs_rest():
    s = stats.compute(make_analysis())
    h2 = s.protocols["h2"]
    assert h2.req_headers == [120 + 20 + 22, 400 + 390 + 395]
    assert h2.req_headers_first == [120, 400] and h2.req_headers_rest == [42, 785]
    assert s.protocols["http/1.1"].req_headers == [780, 780]
    d = stats.to_dict(s)
    assert d["protocols"]["h2"]["headers"]["request"]["reduction"] == round(1 - 162 / 1185, 4)
    assert d["protocols"]["http/1.1"]["headers"]["request"]["reduction"] == 0.0
    assert d["capture"]["pushes"] == 1 and d["capture"]["requests"] == 6 and d["capture"]["resets"] == 1
    assert d["connections"][2]["max_streams_in_flight"] == 4
    assert d["connections"][2]["framing_overhead"] == [9 * 4, 9 * 3]
    assert d["capture"]["page_load_time"] == pytest.approx(0.299)
    txt = stats.render_text(s)
    assert "86.3%" in txt and "Header bytes" in txt and "h2" in txt


# -------------------------------------------------------------------------------- DNS


def _tshark_dns(path: Path) -> dict[int, tuple[str, set[str]]]:
    out = _tshark("-r", str(path), "-Y", "dns.flags.response == 1", "-T", "fields", "-E", "separator=\t",
                  "-e", "frame.number", "-e", "dns.qry.name", "-e", "dns.a", "-e", "dns.aaaa")
    res = {}
    for line in out.splitlines():
        f = (line.split("\t") + ["", "", "", ""])[:4]
        addrs = {a for a in (f[2] + "," + f[3]).split(",") if a}
        res[int(f[0])] = (f[1], addrs)
    return res


def _check_lookups(lookups, truth):
    got = {d.response_packet: (d.name, set(d.addresses)) for d in lookups if d.response_packet is not None}
    assert got == truth


def test_dns_lookups_match_tshark_by_rereading_packets():
    from wirefall.analyzer.pipeline import analyze

    p = _shared(AMAZON)
    truth = _tshark_dns(p)
    assert len(truth) >= 30
    an = analyze(str(p))
    _check_lookups(waterfall.dns_lookups(an), truth)
    # reopened from the cache: the frames' protocols come from the summary part; with dns among
    # them the frames are read, and the lookups are the same
    from wirefall.analyzer import cache

    again = cache.loads(cache.dumps(an))
    assert again.frame_protocols() == {f.protocol for f in an.frames}
    _check_lookups(waterfall.dns_lookups(again), truth)


def test_dns_session_frames_match_tshark(monkeypatch):
    from wirefall.analyzer import sessions
    from wirefall.analyzer.pipeline import analyze

    p = _shared(AMAZON)
    monkeypatch.setitem(sessions.KINDS, "dns", ("wirefall.analyzer.sessions.dns", "DnsSession"))
    an = analyze(str(p))
    dframes = [f for f in an.frames if f.protocol == "dns"]
    q = _tshark("-r", str(p), "-Y", "dns", "-T", "fields", "-e", "frame.number", "-e", "dns.id", "-e", "dns.flags.response")
    truth = {int(a): (int(b, 16), c in ("1", "True")) for a, b, c in (ln.split("\t") for ln in q.splitlines())}
    assert {f.packet: (f.stream_id, f.type == "RESPONSE") for f in dframes} == truth
    _check_lookups(waterfall.dns_lookups(an), _tshark_dns(p))
    from wirefall.analyzer import cache

    again = cache.loads(cache.dumps(an))  # reopened: its frames hold DNS, so they are read
    assert "dns" in again.frame_protocols()
    _check_lookups(waterfall.dns_lookups(again), _tshark_dns(p))


def test_dns_parser_rejects_garbage_without_raising():
    m = dnsd.parse(b"\x00\x01\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00\xc0\x0c")  # pointer loop in the question
    assert m.error and "loop" in m.error
    assert dnsd.parse(b"\x01").error


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_dns_parser_fuzz(data):
    m = dnsd.parse(data)
    assert isinstance(m, dnsd.DnsMessage)


# ------------------------------------------------------------------ stats vs tshark


def test_connection_stats_match_tshark():
    """Per connection and direction: packets, wire bytes and TCP/UDP payload equal tshark's."""
    from wirefall.analyzer.pipeline import analyze

    p = _shared(AMAZON)
    an = analyze(str(p))
    s = stats.to_dict(stats.compute(an))
    out = _tshark("-r", str(p), "-Y", "tcp or udp", "-T", "fields", "-E", "separator=\t", "-e", "ip.src", "-e", "ipv6.src",
                  "-e", "tcp.srcport", "-e", "udp.srcport", "-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport", "-e", "udp.dstport",
                  "-e", "frame.len", "-e", "tcp.len", "-e", "udp.length")
    agg: dict[tuple, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for line in out.splitlines():
        f = line.split("\t")
        src = (f[0] or f[1], int(f[2] or f[3]))
        dst = (f[4] or f[5], int(f[6] or f[7]))
        pl = int(f[9]) if f[9] else int(f[10]) - 8
        a = agg[(src, dst)]
        a[0] += 1
        a[1] += int(f[8])
        a[2] += pl
    checked = 0
    for c, cd in zip(an.connections, s["connections"]):
        for d, (src, dst) in enumerate(((c.client, c.server), (c.server, c.client))):
            t = agg.get((tuple(src), tuple(dst)), [0, 0, 0])
            assert [cd["packets"][d], cd["bytes"][d], cd["payload_bytes"][d]] == t, (c.id, d)
            checked += 1
    assert checked == 2 * len(an.connections) >= 80
    total_pk = sum(a[0] for a in agg.values())
    assert sum(s["capture"]["packets"]) == total_pk


# ---------------------------------------------------- sample captures, once dissected


def _analyze_sample(pattern: str):
    from wirefall.analyzer.pipeline import analyze

    files = sorted(glob.glob(str(SAMPLES / pattern)))
    if not files:
        pytest.skip(f"no sample capture {pattern}")
    f = files[0]
    base = f.rsplit(".", 1)[0]
    keys = [k for k in (base + ".keys", base + ".keylog", base + ".keys.txt") if Path(k).exists()]
    an = analyze(f, keylogs=keys)
    if not an.exchanges:
        pytest.skip(f"{Path(f).name}: no exchanges dissected yet")
    return f, keys, an


@pytest.mark.parametrize("pattern", ["page/page-h1.pcap*", "page/page-h2.pcap*", "page/page-h3.pcap*", "spdy/*.pcap*"])
def test_waterfall_on_sample_matches_tshark_handshake_and_model(pattern):
    f, keys, an = _analyze_sample(pattern)
    wf = waterfall.build(an)
    assert len(wf.rows) == len([e for e in an.exchanges if waterfall._exchange_start(e) is not None]) > 0
    exs = {e.id: e for e in an.exchanges}
    for r in wf.rows:
        e = exs[r.exchange]
        if e.response_start is not None and e.response_end is not None:
            assert r.phase("receive") == (e.response_start, e.response_end)
    # connect phase = tshark's SYN and the client's ACK of the SYN/ACK
    # (QUIC: the client's first packet of the connection)
    out = _tshark("-r", f, "-Y", "(tcp.flags.syn == 1 && tcp.flags.ack == 0) || udp", "-T", "fields", "-e", "frame.time_epoch",
                  "-e", "tcp.srcport", "-e", "udp.srcport")
    syn: dict[int, float] = {}
    for ln in out.splitlines():
        t, tp, up = ln.split("\t")
        syn.setdefault(int(tp or up), float(t))
    firsts = [r for r in wf.rows if r.first_of_connection and r.phase("connect")]
    conns = {c.id: c for c in an.connections}
    for r in firsts:
        c = conns[r.connection]
        assert r.phase("connect")[0] == pytest.approx(syn[c.client[1]], abs=1e-6)
    if "h3" not in pattern:
        assert firsts


def test_stats_http1_vs_spdy_header_reduction():
    f1, _, an1 = _analyze_sample("page/page-h1.pcap*")
    # the same page over SPDY when the lab makes one; else the npm spdy sample page
    spdy = "page/page-spdy*.pcap*" if glob.glob(str(SAMPLES / "page/page-spdy*.pcap*")) else "spdy/spdy3.1-tls.pcap"
    fs, _, ans = _analyze_sample(spdy)
    s1, ss = stats.compute(an1), stats.compute(ans)
    p1 = next(b for n, b in s1.protocols.items() if n.startswith("http/1"))
    ps = next(b for n, b in ss.protocols.items() if n.startswith("spdy"))
    # HTTP/1 header bytes on the wire = tshark's request/status lines + header lines + CRLF
    keys = str(Path(f1).with_suffix(".keys"))
    tot = {}
    for kind, fields in (("request", ("http.request.method", "http.request.uri", "http.request.version", "http.request.line")),
                         ("response", ("http.response.version", "http.response.code", "http.response.phrase", "http.response.line"))):
        args = ["-r", f1, "-Y", f"http.{kind}", "-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=^"]
        if Path(keys).exists():
            args += ["-o", f"tls.keylog_file:{keys}"]
        for fl in fields:
            args += ["-e", fl]
        n = 0
        for ln in _tshark(*args).splitlines():
            a, b, c, lines = ln.split("|", 3)
            n += len(a) + len(b) + len(c) + 4 + sum(len(x.replace("\\r\\n", "\r\n").encode()) for x in lines.split("^") if x) + 2
        tot[kind] = n
    assert p1.req_headers[0] == tot["request"] > 0
    assert p1.resp_headers[0] == tot["response"] > 0
    assert p1.req_headers[0] >= p1.req_headers[1]  # HTTP/1 does not compress: no reduction
    assert ps.req_headers[0] < ps.req_headers[1] * 0.5  # zlib: more than half saved
    assert ps.req_headers_rest[0] / ps.req_headers_rest[1] < ps.req_headers_first[0] / ps.req_headers_first[1]
    txt = stats.render_text(ss)
    assert "Header bytes" in txt


def test_flow_control_stalls_agree_with_spdy_session():
    """Our window bookkeeping (SETTINGS, DATA, WINDOW_UPDATE) finds the same stalls, with
    the same durations, as the SPDY session's own per-WINDOW_UPDATE ``stall_duration``."""
    f, keys, an = _analyze_sample("spdy/spdy3.1-tls.pcap")
    frames = [x for x in an.frames if x.connection == 0 and x.protocol.startswith("spdy")]
    mine = {(s[4], round(s[3] - s[2], 6)) for s in waterfall.flow_control_stalls(frames, "spdy/3.1") if s[3] is not None}
    theirs = {(x.packet, round(x.fields["stall_duration"], 6)) for x in frames
              if x.type == "WINDOW_UPDATE" and (x.fields or {}).get("stall_duration") is not None}
    if not theirs:
        pytest.skip("SPDY session reports no stall_duration")
    ends = {}
    for s in waterfall.flow_control_stalls(frames, "spdy/3.1"):
        if s[3] is not None:
            pk = next(x.packet for x in frames if x.type == "WINDOW_UPDATE" and x.time == s[3] and
                      ((x.stream_id or None) == s[0] or (s[0] is None and not x.stream_id)))
            ends[pk] = round(s[3] - s[2], 6)
    assert ends == {p: d for p, d in theirs}
    assert len(mine) == len(theirs) >= 2


def test_content_colours_stand_apart_from_the_phase_colours():
    """A script's download (dark: packets arriving) was #e58a1f beside the connect phase's
    #e58226 — the same orange to the eye (RGB distance 11): a 1-second JavaScript download
    on amazon read as a 1-second TCP connect.  No content colour is within 45 of a phase
    colour (video's teal was 24 from the DNS lookup's, other's light grey 26 from queued's),
    and the script's is well apart from the connect's."""
    from wirefall.analyzer.waterfall import BLOCKED_COLOR, CONTENT_COLORS, PHASE_COLORS, SEND_COLOR, WAIT_COLOR

    def dist(a: str, b: str) -> float:
        return sum((int(a[i:i + 2], 16) - int(b[i:i + 2], 16)) ** 2 for i in (1, 3, 5)) ** 0.5

    phases = {**PHASE_COLORS, "blocked": BLOCKED_COLOR, "send": SEND_COLOR, "wait": WAIT_COLOR}
    near = [(k, c, p) for k, cs in CONTENT_COLORS.items() for c in cs for p, pc in phases.items() if dist(c, pc) < 45]
    assert not near
    assert min(dist(c, PHASE_COLORS["connect"]) for c in CONTENT_COLORS["script"]) > 60


@pytest.mark.parametrize("name", ["lossy/page-h2", "lossy/page-h1", "lossy/page-spdy", "page/page-h2"])
@pytest.mark.parametrize("kind,field", [("retransmission", "tcp.analysis.retransmission"), ("out_of_order", "tcp.analysis.out_of_order")])
def test_retransmission_ticks_are_tsharks_retransmissions(name, kind, field):
    """The waterfall's retransmission ticks are tshark's tcp.analysis.retransmission packets
    (fast ones included: a segment resent after a loss before the capture point fills a hole,
    it duplicates no captured byte), and its out-of-order marks tshark's
    tcp.analysis.out_of_order packets (a hole filled within an RTT: lossy page-h2's late
    recoveries at 690-726 ms had no mark), each on every row of its connection whose time it
    falls in; none that tshark does not flag."""
    from wirefall.analyzer.pipeline import analyze

    cap, keys = SAMPLES / f"{name}.pcapng", SAMPLES / f"{name}.keys"
    an = analyze(str(cap), keylogs=[str(keys)])
    wf = waterfall.build(an)
    theirs = {int(x) for x in _tshark("-r", str(cap), "-Y", field, "-T", "fields", "-e", "frame.number").split()}
    ticked = collections.defaultdict(set)
    for r in wf.rows:
        for m in r.markers:
            if m.kind == kind:
                ticked[r.index].add(m.packet)
    assert set().union(*ticked.values()) <= theirs
    want = 0
    for r in wf.rows:
        for k in theirs:
            if an.index.conn[k - 1] == r.connection and r.start <= an.time(k) <= r.end:
                assert k in ticked[r.index], (name, r.index, k)
                want += 1
    if name.startswith("lossy/") and kind == "retransmission":
        assert want >= 2  # (the lossy loads' fast retransmissions fall in their rows)
    if name == "lossy/page-h2" and kind == "out_of_order":
        assert want >= 3


@pytest.mark.parametrize("name", ["page/page-h2", "page/page-h1", "lossy/page-h2", "lossy/page-spdy"])
def test_throughput_bins_are_every_tcp_packets_wire_bytes(name):
    """The throughput track's bytes per bin each way are the frame lengths of every TCP packet
    of the page's connections (tshark: frame.time_epoch, frame.len, which side sent it) —
    retransmissions and ACKs included (page-h2's 54 kB retransmission at 125 ms was left out
    of its bin, the maps holding only first copies)."""
    from wirefall.analyzer.pipeline import analyze

    cap, keys = SAMPLES / f"{name}.pcapng", SAMPLES / f"{name}.keys"
    an = analyze(str(cap), keylogs=[str(keys)])
    th = waterfall.build(an).throughput
    servers = {(c.server[0], c.server[1]) for c in an.connections if c.transport == "tcp"}
    down, up = [0] * len(th.down), [0] * len(th.up)
    out = _tshark("-r", str(cap), "-Y", "tcp", "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.len",
                  "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport")
    for line in out.splitlines():
        t, ln, s4, s6, sp = line.split("\t")
        k = min(int((float(t) - th.t0) / th.bin), len(down) - 1)
        (down if ((s4 or s6), int(sp)) in servers else up)[k] += int(ln)
    assert (th.down, th.up) == (down, up)
