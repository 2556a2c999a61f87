"""Session 26's review of what a user reads, each against an outside truth:
- a TCP connection's ``rtt`` is SYN → SYN/ACK (docs/JSON.md), tshark's frame times;
- a browser log opened alone: its first row starts at the request's start in the log (the
  NetLog's URL_REQUEST), its HAR export's page where the log's page starts (the source HAR's
  own page); its requests that never reached the network are no HTTP/1.1 connection."""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from wirefall.analyzer.browserlog import open_log
from wirefall.analyzer.compare import compare
from wirefall.analyzer.export import har as har_dict
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.stats import compute as stats_of

ROOT = Path(__file__).resolve().parents[1]
AMAZON = ROOT.parent / "shared" / "captures" / "pageload-amazon"
PAGE = ROOT / "sample_captures" / "page"


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is the oracle")
@pytest.mark.parametrize("cap", [PAGE / "page-h2.pcapng", PAGE / "page-h1.pcapng", AMAZON / "amazon1.cap.gz"], ids=lambda p: p.name)
def test_tcp_rtt_is_syn_to_syn_ack(cap: Path):
    if not cap.exists():
        pytest.skip(f"{cap} not here")
    out = subprocess.run(["tshark", "-r", str(cap), "-Y", "tcp.flags.syn == 1", "-T", "fields", "-e", "tcp.srcport",
                          "-e", "tcp.dstport", "-e", "tcp.flags.ack", "-e", "frame.time_epoch"],
                         capture_output=True, text=True, check=True).stdout
    syn: dict[tuple[int, int], float] = {}
    syn_ack: dict[tuple[int, int], float] = {}
    for line in out.splitlines():
        sp, dp, ack, t = line.split("\t")
        if ack in ("1", "True"):
            syn_ack.setdefault((int(dp), int(sp)), float(t))  # (keyed by the client's port first)
        else:
            syn.setdefault((int(sp), int(dp)), float(t))
    an = analyze(str(cap))
    checked = 0
    for c in an.connections:
        if c.transport != "tcp":
            continue
        k = (c.client[1], c.server[1])
        if k in syn and k in syn_ack:
            assert c.rtt is not None
            assert abs(c.rtt - (syn_ack[k] - syn[k])) < 1.5e-6, (c.id, c.rtt, syn_ack[k] - syn[k])
            assert c.connect_end is not None and c.connect_end - c.connect_start >= c.rtt  # (the connect ends at the client's ACK)
            checked += 1
    assert checked >= 1


def test_netlog_alone_row_starts_at_the_request():
    """The amazon NetLog's first request (source 158, www.amazon.com/): REQUEST_ALIVE at the
    log's tick 20012922 + timeTickOffset; it waited 41 ms for its connection, 39 of them for
    the name's lookup by the racing QUIC job (Chrome's DNS override: test_netlog_race31)."""
    path = AMAZON / "amazon1_netlog.json.gz"
    if not path.exists():
        pytest.skip("no amazon NetLog")
    log = json.load(gzip.open(path))
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    off = int(log["constants"]["timeTickOffset"])
    src = next(e["source"]["id"] for e in log["events"]
               if names[e["type"]] == "URL_REQUEST_START_JOB" and (e.get("params") or {}).get("url") == "https://www.amazon.com/")
    alive = min(int(e["time"]) for e in log["events"] if e["source"]["id"] == src and names[e["type"]] == "REQUEST_ALIVE")
    want = (off + alive) / 1000.0
    an = open_log(str(path))
    from wirefall.analyzer.jsonout import page_and_phases

    _page, phases = page_and_phases(an)
    e = next(x for x in an.exchanges if x.url == "https://www.amazon.com/")
    ph = phases[e.id]
    assert ph is not None and ph["start"] == pytest.approx(want, abs=1e-6)
    t = e.browser["times"]
    assert t["dns_start"] == pytest.approx(want, abs=1e-6)
    assert ph["dns"] == pytest.approx(t["dns_end"] - t["dns_start"], abs=1e-6) and ph["dns"] > 0.03  # the racing QUIC job's lookup
    assert ph["blocked"] + ph["dns"] == pytest.approx(t["connect_start"] - want, abs=1e-6)  # the 41 ms wait
    har = har_dict(an)["log"]
    en = next(x for x in har["entries"] if x["request"]["url"] == "https://www.amazon.com/")
    assert _epoch(en["startedDateTime"]) == pytest.approx(want, abs=1e-6)
    assert en["timings"]["blocked"] == pytest.approx(ph["blocked"] * 1000, abs=1e-3)
    assert _epoch(har["pages"][0]["startedDateTime"]) == pytest.approx(want, abs=1e-6)  # (the log's first request)


def test_har_alone_export_keeps_the_page():
    """pw-h2.har.gz (Playwright's HAR) opened alone and exported: its page's startedDateTime and
    pageTimings as the HAR gives them (before: 1970-01-01 and epoch milliseconds)."""
    path = PAGE / "pw-h2.har.gz"
    src = json.load(gzip.open(path))["log"]["pages"][0]
    page = har_dict(open_log(str(path)))["log"]["pages"][0]
    assert _epoch(page["startedDateTime"]) == pytest.approx(_epoch(src["startedDateTime"]), abs=1e-6)
    for k in ("onContentLoad", "onLoad"):
        assert page["pageTimings"][k] == pytest.approx(src["pageTimings"][k], abs=1e-3)
    assert 0 < page["pageTimings"]["_firstByte"] < page["pageTimings"]["_lastByte"] < 60_000


def test_netlog_not_sent_requests_are_no_connection():
    """The amazon NetLog's checkin POST (ERR_CONNECTION_REFUSED) and favicon (disk cache) never
    reached the network: no protocol, no HTTP/1.1 connection; the capture of the same load and
    the log then agree on the page's connections and requests."""
    nl = open_log(str(AMAZON / "amazon1_netlog.json.gz")) if AMAZON.exists() else pytest.skip("no amazon load")
    unsent = [e for e in nl.exchanges if (e.browser or {}).get("not_sent")]
    assert sorted(e.url for e in unsent) == ["https://android.clients.google.com/checkin", "https://www.amazon.com/favicon.ico"]
    assert {e.protocol for e in unsent} == {""}
    st = stats_of(nl)
    assert "http/1.1" not in st.protocols and "" not in st.protocols
    assert st.not_sent_requests == 2 and st.capture.requests == len(nl.exchanges) - 2
    cap = analyze(str(AMAZON / "amazon1.cap.gz"), keylogs=[str(AMAZON / "amazon1.key_log.txt.gz")])
    res = compare(cap, nl)
    # (of the page's: the favicon; the check-in is Chrome's own, background since review 31)
    assert res["b"]["not_sent_requests"] == 1 and res["b"]["protocols"] == res["a"]["protocols"] == ["h2", "h3"]
    for k in ("connections", "requests"):
        r = res["page"][k]
        assert r["a"] == r["b"], (k, r)


def test_web_filtered_waterfall_keeps_the_request_numbers():
    """The web app's waterfall filtered to images-na's requests numbers them as the unfiltered
    view and `wirefall requests` do (8-13 on the amazon load; they read 1-6), and a click on one
    selects that request."""
    import re

    from wirefall.ui.web import WebState, views

    cap, keys = AMAZON / "amazon1.cap.gz", AMAZON / "amazon1.key_log.txt.gz"
    if not cap.exists():
        pytest.skip("no amazon load")
    an = analyze(str(cap), keylogs=[str(keys)])
    from wirefall.analyzer.waterfall import build

    want = [r.index + 1 for r in build(an).rows if "images-na" in (r.url or "")]
    assert len(want) == 6 and want[0] > 1
    st = WebState(use_cache=False)
    e = st.wait(st.add_file(str(cap), name=cap.name, keylogs=[str(keys)]).id)
    v = views.filtered_view(e, expr='url contains "images-na"')
    fig = views.figure(v, title=e.name)
    labels = [re.sub(r"<[^>]*>", "", t).replace("\xa0", " ").split() for t in fig.layout.yaxis.ticktext]
    nums = [int(w[0]) if w[0].isdigit() else int(w[1]) for w in labels]
    assert nums == want, labels


def test_tui_download_bar_is_not_broken_by_its_bursts():
    """amazon's challenge.js downloads for ~900 ms in many short bursts: every cell its receive
    phase covers whole is a full block in the TUI (it read as twelve thin ticks, ▏, between full
    cells: a stall that did not happen), and the cells where bursts fill half or more are dark."""
    from wirefall.analyzer.waterfall import build
    from wirefall.ui.tui.widgets import row_cells

    cap, keys = AMAZON / "amazon1.cap.gz", AMAZON / "amazon1.key_log.txt.gz"
    if not cap.exists():
        pytest.skip("no amazon load")
    wf = build(analyze(str(cap), keylogs=[str(keys)]))
    r = next(r for r in wf.rows if (r.url or "").endswith("challenge.js"))
    width, v0, v1 = 150, wf.t0, wf.t_end
    cells = row_cells(r, v0, v1, width)
    span = (v1 - v0) / width
    rec = [(a, b) for n, a, b in r.phases if n == "receive"]
    assert rec and len(r.chunks) > 10
    whole = [c for c in range(width) for a, b in rec if a <= v0 + c * span and v0 + (c + 1) * span <= b]
    assert len(whole) > 20
    assert all(cells[c][0] == "█" for c in whole), "".join(cells[c][0] for c in whole)


@pytest.mark.skipif(shutil.which("tshark") is None or shutil.which("editcap") is None, reason="tshark is the oracle")
def test_port_reuse_after_a_connection_joined_mid_way(tmp_path):
    """tcp-port-reuse.pcap without its first connection's handshake (packets 1-3): the second
    connection on the same ports (its SYN at packet 10 — 7 in the cut file) is a connection of
    its own, as tshark's tcp.stream says, with its request; before, it was merged into the first
    and its GET was lost, the sequence spaces' gap counted as 7.7 MB lost."""
    cut = tmp_path / "cut.pcap"
    subprocess.run(["editcap", str(ROOT / "sample_captures" / "tcp-port-reuse.pcap"), str(cut), "1-3"], check=True, capture_output=True)
    out = subprocess.run(["tshark", "-r", str(cut), "-T", "fields", "-e", "frame.number", "-e", "tcp.stream", "-e", "http.request.method"],
                         capture_output=True, text=True, check=True).stdout
    streams: dict[int, set[int]] = {}
    methods = 0
    for line in out.splitlines():
        n, st, m = (line.split("\t") + [""])[:3]
        streams.setdefault(int(st), set()).add(int(n))
        methods += bool(m)
    an = analyze(str(cut))
    assert len(an.connections) == len(streams) == 2
    assert len(an.exchanges) == methods == 2
    ours = {}
    for i in range(len(an.index)):
        ours.setdefault(an.index.conn[i], set()).add(i + 1)
    assert sorted(map(sorted, ours.values())) == sorted(map(sorted, streams.values()))
    from wirefall.analyzer.completeness import compute

    comp = compute(an)
    assert comp.bytes_lost == 0 and comp.gaps == 0  # (tshark: no segment not captured either)


FILTERS26 = ['http.request.uri matches "[[:digit:]]"', 'http.request.uri matches "[^[:space:]]"',
             'http.request.uri matches "[[:alpha:]]+\\\\.txt"', 'http.request.uri matches "[[:punct:]][[:xdigit:]]"',
             "tcp.flags.syn == 2", "tcp.flags.syn != 2", "tcp.flags.syn in {2}", "tcp.flags.fin == 7 && tcp.flags.ack"]


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is the oracle")
@pytest.mark.parametrize("expr", FILTERS26)
def test_filters_as_tshark_reads_them(expr: str):
    """A boolean field compared with any non-zero value is compared with true, and PCRE's POSIX
    classes in a bracket expression match what they name (both matched nothing before)."""
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.filter import compile_filter, filter_packets

    cap = ROOT / "sample_captures" / "http" / "http1-nginx.pcap"
    want = [int(x) for x in subprocess.run(["tshark", "-r", str(cap), "-Y", expr, "-T", "fields", "-e", "frame.number"],
                                           capture_output=True, text=True, check=True).stdout.split()]
    an = analyze(str(cap))
    src = PacketSource(str(cap))
    try:
        got = list(filter_packets(an, src, compile_filter(expr, "packets")))  # (packet numbers, 1-based)
    finally:
        src.close()
    assert want and got == want


def test_a_capture_through_a_pipe_or_a_fifo(tmp_path):
    """`tcpdump -w - | wirefall summary /dev/stdin` and a FIFO read as the file itself (74
    packets, tshark's count of http1-nginx.pcap); before, a FIFO hung (opened twice) and a
    pipe failed with "not seekable".  A stream that is no capture (/dev/zero's zeros) is refused,
    not copied for ever; nothing is left in the temporary folder."""
    import os
    import sys
    import threading

    cap = ROOT / "sample_captures" / "http" / "http1-nginx.pcap"
    data = cap.read_bytes()
    cmd = [sys.executable, "-m", "wirefall", "summary", "--json"]
    env = dict(os.environ, TMPDIR=str(tmp_path))
    p = subprocess.run(cmd + ["/dev/stdin"], input=data, capture_output=True, timeout=120, cwd=ROOT.parent, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["packets"] == 74 and b"is a stream" in p.stderr
    fifo = tmp_path / "f"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(data)
    t = threading.Thread(target=feed, daemon=True)
    t.start()
    p = subprocess.run(cmd + [str(fifo)], capture_output=True, timeout=120, cwd=ROOT.parent, env=env)
    t.join(5)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["packets"] == 74
    p = subprocess.run(cmd + ["/dev/stdin"], input=bytes(4096), capture_output=True, timeout=120, cwd=ROOT.parent, env=env)
    assert p.returncode == 2 and b"not a capture" in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["f"], list(tmp_path.iterdir())


@pytest.mark.parametrize("how", [["export", "-o", "{out}.har"], ["export", "-o", "{out}.png"], ["packets", "-w", "{out}.pcapng"]])
def test_an_output_that_cannot_be_written_is_named(tmp_path, how):
    """An output in a folder that does not exist: exit 2 and the user's path named (it was the
    catch-all internal error about '.wirefall-….tmp', exit 1)."""
    import sys

    out = tmp_path / "no-such-folder" / "x"
    cmd = [sys.executable, "-m", "wirefall", how[0], str(ROOT / "sample_captures" / "http" / "http1-nginx.pcap"), how[1],
           how[2].format(out=out)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT.parent)
    assert p.returncode == 2, p.stderr
    assert f"{out}{how[2][len('{out}'):]}: cannot write: no such folder" in p.stderr and ".wirefall-" not in p.stderr
    assert not (tmp_path / "no-such-folder").exists()


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is the oracle")
def test_integer_fields_have_tshark_s_sizes():
    """Every unsigned integer filter field wirefall shares with tshark has tshark's size
    (`tshark -G fields`: FT_UINT16 two bytes …): a literal past it is refused as tshark refuses
    it (`tcp.port == 65536`, `tcp.stream == 4294967296` were accepted), len() of it is its size,
    and no integer is sliced (`tcp.srcport[0:1]` was)."""
    from wirefall.analyzer import fields as F
    from wirefall.analyzer.fields import types as T
    from wirefall.analyzer.filter import FilterError, compile_filter

    out = subprocess.run(["tshark", "-G", "fields"], capture_output=True, text=True, check=True).stdout
    ts = {p[2]: p[3] for p in (line.split("\t") for line in out.splitlines()) if len(p) > 3 and p[0] == "F"}
    sizes = {"FT_UINT8": 1, "FT_UINT16": 2, "FT_UINT24": 3, "FT_UINT32": 4, "FT_UINT64": 8, "FT_FRAMENUM": 4}
    checked, wrong = 0, []
    for n in F.names():
        f = F.lookup(n)
        if f is None or f.type != T.UINT or f.unsupported or ts.get(n) not in sizes:
            continue
        checked += 1
        if f.size != sizes[ts[n]]:
            wrong.append((n, f.size, ts[n]))
    assert checked > 150 and not wrong, wrong
    for expr in ("tcp.port == 65536", "tcp.stream == 4294967296", "tcp.hdr_len == 256", "tcp.srcport[0:1] == 91"):
        with pytest.raises(FilterError):
            compile_filter(expr, "packets")


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is the oracle")
def test_frame_protocols_names_http_where_a_message_ends():
    """page-h1: `frame.protocols contains "http"` selects tshark's packets (it named http also
    on the six packets where a response's head was decoded and its body went on: 32 for 26), and
    on every capture the packets the `http` field is on."""
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.filter import compile_filter, filter_packets

    for name, oracle in (("page/page-h1", True), ("lossy/page-h1", False)):
        cap, keys = ROOT / "sample_captures" / f"{name}.pcapng", ROOT / "sample_captures" / f"{name}.keys"
        an = analyze(str(cap), keylogs=[str(keys)])
        src = PacketSource(str(cap))
        try:
            got = list(filter_packets(an, src, compile_filter('frame.protocols contains "http"', "packets")))
            http = list(filter_packets(an, src, compile_filter("http", "packets")))
        finally:
            src.close()
        assert got == http and len(got) > 20, name
        if oracle:
            want = [int(x) for x in subprocess.run(["tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y",
                                                    'frame.protocols contains "http"', "-T", "fields", "-e", "frame.number"],
                                                   capture_output=True, text=True, check=True).stdout.split()]
            assert got == want


def test_web_connections_chart_reads():
    """The web Connections tab on the amazon load (TCP and QUIC): every legend entry its own
    colour (TCP connect and QUIC handshake were one orange), the title in the top margin above
    the legend (the legend covered it: "Connections and ha"); page-h2's notes list says there are
    none instead of an empty heading."""
    from wirefall.ui.web import WebState, views

    cap, keys = AMAZON / "amazon1.cap.gz", AMAZON / "amazon1.key_log.txt.gz"
    if not cap.exists():
        pytest.skip("no amazon load")
    st = WebState(use_cache=False)
    e = st.wait(st.add_file(str(cap), name=cap.name, keylogs=[str(keys)]).id)
    fig = views.connections_figure(e)
    names = [t.name for t in fig.data]
    assert {"TCP connect", "QUIC handshake"} <= set(names)
    colors = [t.marker.color for t in fig.data]
    assert len(set(colors)) == len(colors), dict(zip(names, colors))
    lay = fig.layout
    assert lay.title.yref == "container" and lay.title.yanchor == "top" and lay.legend.y >= 1.0 and lay.margin.t >= 70
    h2 = st.wait(st.add_file(str(PAGE / "page-h2.pcapng"), name="page-h2", keylogs=[str(PAGE / "page-h2.keys")]).id)
    notes = views.connection_notes(h2)
    assert len(notes) >= 1 and all(str(n.children) for n in notes)


@pytest.mark.skipif(shutil.which("tshark") is None or shutil.which("editcap") is None, reason="tshark is the oracle")
def test_a_stray_fin_before_a_new_connection_on_the_same_ports(tmp_path):
    """tcp-port-reuse.pcap with only the server's FIN and ACK of its first connection before the
    second one's SYN (packets 1-9 and 11 dropped): the new connection's request and response are
    read (tshark: http on packets 6 and 10); the stray FIN had fixed the server direction's start
    and its response read as lost."""
    cut = tmp_path / "stray.pcap"
    subprocess.run(["editcap", str(ROOT / "sample_captures" / "tcp-port-reuse.pcap"), str(cut), "1-9", "11"], check=True,
                   capture_output=True)
    out = subprocess.run(["tshark", "-r", str(cut), "-Y", "http", "-T", "fields", "-e", "frame.number", "-e", "http.response.code"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    rows = [ln.split("\t") for ln in out if ln]
    assert [int(n) for n, _c in rows] == [6, 10]
    an = analyze(str(cut))
    assert len(an.exchanges) == 1
    e = an.exchanges[0]
    assert e.request_start_packet == 6 and e.response_end_packet == 10 and e.status == int(rows[1][1]) == 200
    from wirefall.analyzer.completeness import compute

    assert compute(an).bytes_lost == 0
