"""Exports: HAR 1.2 (schema, one entry per exchange, the model's times, the same times as
``wirefall requests --json``), JSON, qlog (packet events against tshark), PNG/SVG (one bar
per request, looked at), offline HTML in headless Chromium, atomic no-clobber writes."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from pngutil import png_pixels

from wirefall.analyzer import export as ex
from wirefall.analyzer import waterfall
from wirefall.ui.exports import export as export_any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wf_fixture import make_analysis  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
SAMPLES = ROOT / "sample_captures"
SCHEMA = json.loads((Path(__file__).parent / "data" / "har-1.2.schema.json").read_text())
SAMPLE_SET = [  # (capture, key log) of each protocol
    ("page/page-h1.pcapng", "page/page-h1.keys"),
    ("page/page-h2.pcapng", "page/page-h2.keys"),
    ("page/page-h3.pcapng", "page/page-h3.keys"),
    ("spdy/spdy3.1-tls.pcap", "spdy/spdy3.1-tls.keys"),
    ("spdy/spdy2-plain.pcap", None),
]


def _tshark(*args: str) -> str:
    out = subprocess.run(["tshark", *args], capture_output=True, text=True, timeout=300, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-500:]
    return out.stdout


_cache: dict = {}


def _sample(cap: str, keys: str | None):
    from wirefall.analyzer.pipeline import analyze

    p = SAMPLES / cap
    if not p.exists():
        pytest.skip(f"{cap} not present")
    if cap not in _cache:
        _cache[cap] = analyze(str(p), keylogs=[str(SAMPLES / keys)] if keys else [])
    an = _cache[cap]
    if not an.exchanges:
        pytest.skip(f"{cap}: no exchanges dissected yet")
    return p, an


def _validate_har(h):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft7Validator(SCHEMA).validate(h)


def _parse_iso(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def _har_times(entry) -> dict[str, float]:
    """Model times back from startedDateTime and the timings (HAR order: blocked, dns,
    connect (includes ssl), send, wait, receive)."""
    t = entry["timings"]
    start = _parse_iso(entry["startedDateTime"])
    pre = sum(max(t[k], 0) for k in ("blocked", "dns", "connect")) / 1000.0
    # send holds the connection's idle before the request's first byte (``_send_idle``, as
    # DevTools' HAR has that gap in send)
    rs = start + pre + t.get("_send_idle", 0) / 1000.0
    re_ = start + pre + t["send"] / 1000.0
    ps = re_ + t["wait"] / 1000.0
    return {"request_start": rs, "request_end": re_, "response_start": ps, "response_end": ps + t["receive"] / 1000.0}


# ---------------------------------------------------------------------------------- HAR


def test_har_handmade_schema_times_sensitive():
    an = make_analysis()
    h = ex.har(an)
    _validate_har(h)
    entries = h["log"]["entries"]
    assert len(entries) == len(an.exchanges)
    exs = {e.id: e for e in an.exchanges}
    for en in entries:
        e = exs[en["_exchange"]]
        for k, v in _har_times(en).items():
            assert v == pytest.approx(getattr(e, k), abs=2e-6), (e.id, k)
        assert en["time"] == pytest.approx(sum(v for k, v in en["timings"].items() if k != "ssl" and not k.startswith("_") and v > 0), abs=1e-6)
        # a sensitive header keeps its place, its value left out and named in the entry's comment (review 31: dropped without a word)
        left = [x["name"].lower() for x in en["request"]["headers"] + en["response"]["headers"] if x["value"] == ex.LEFT_OUT]
        assert {x["name"].lower() for x in en["request"]["headers"] + en["response"]["headers"]
                if x["name"].lower() in ex.SENSITIVE} == set(left)
        for n in left:
            assert n in en["comment"] and "--include-sensitive" in en["comment"]
    assert "secret" not in json.dumps(h) and any(x["name"] == "cookie" and x["value"] == ex.LEFT_OUT for x in entries[0]["request"]["headers"])
    first = entries[0]
    # the client's 1 ms pause between its TCP handshake (10-30 ms) and its ClientHello (31 ms) is
    # its TLS set-up (the waterfall's tls begins where the TCP handshake ends), in ssl; connect
    # includes ssl; nothing of it is "blocked" (which HAR viewers draw before dns and connect)
    assert first["timings"]["dns"] == pytest.approx(8.0, abs=1e-3) and first["timings"]["ssl"] == pytest.approx(1.0 + 49.0, abs=1e-3)
    assert first["timings"]["connect"] == pytest.approx(20.0 + 1.0 + 49.0, abs=1e-3)
    assert entries[1]["timings"]["dns"] == -1 and entries[2]["timings"]["connect"] == -1
    pushed = next(en for en in entries if en["_pushed"])
    assert pushed["_push_parent"] == 1 and pushed["_stream_id"] == 2 and pushed["_protocol"] == "h2"
    assert first["response"]["content"] == {"size": 60000, "mimeType": "text/html; charset=utf-8", "compression": 40000}
    s = ex.har(an, include_sensitive=True)
    _validate_har(s)
    e0 = s["log"]["entries"][0]
    assert {"name": "sid", "value": "secret"} in e0["request"]["cookies"]
    assert e0["response"]["cookies"][0] == {"name": "a", "value": "b", "path": "/"}
    # a broken HAR is caught by the schema (the check is not vacuous)
    import jsonschema

    bad = json.loads(json.dumps(h))
    del bad["log"]["entries"][0]["timings"]["wait"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)


@pytest.mark.parametrize("cap,keys", SAMPLE_SET)
def test_har_sample_matches_requests_json(cap, keys, tmp_path):
    p, an = _sample(cap, keys)
    out = tmp_path / "x.har"
    ex.export(an, str(out))
    h = json.loads(out.read_text())
    _validate_har(h)
    cmd = [sys.executable, "-m", "wirefall", "requests", str(p), "--json"] + (["--keylog", str(SAMPLES / keys)] if keys else [])
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300, env=dict(os.environ, SSLKEYLOGFILE=""))
    assert r.returncode == 0, r.stderr
    reqs = {d["id"]: d for d in json.loads(r.stdout)}
    entries = h["log"]["entries"]
    assert sorted(en["_exchange"] for en in entries) == sorted(reqs) and entries
    for en in entries:
        d = reqs[en["_exchange"]]
        assert en["request"]["url"] == (d["url"] or "")
        assert en["response"]["status"] == (d["status"] or 0)
        assert en["_stream_id"] == d["stream_id"]
        got = _har_times(en)
        for k in ("request_start", "request_end", "response_start", "response_end"):
            if d[k] is None or (k == "request_end" and (d["pushed"] or (d["response_start"] or 1e18) < d[k])):
                continue  # HAR has no request end for a push, nor for a request still sending when the response starts
            if True:
                assert got[k] == pytest.approx(d[k], abs=2e-6), (en["_exchange"], k)
        assert en["_packets"]["response_end"] == d["response_end_packet"]
    # and the packets the HAR names carry those times in tshark's view
    pk = {}
    for line in _tshark("-r", str(p), "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch").splitlines():
        a, b = line.split("\t")
        pk[int(a)] = float(b)
    for en in entries:
        d = reqs[en["_exchange"]]
        if d["response_end_packet"]:
            assert pk[d["response_end_packet"]] == pytest.approx(d["response_end"], abs=1e-6)


# --------------------------------------------------------------------------- JSON, writes


def test_json_export_versioned_and_no_clobber(tmp_path):
    an = make_analysis()
    out = tmp_path / "m.json"
    assert ex.export(an, str(out)) == "json"
    d = json.loads(out.read_text())
    assert d["format"] == "wirefall-model" and isinstance(d["version"], int)
    assert len(d["exchanges"]) == 7 and len(d["frames"]) == len(an.frames)
    assert len(d["waterfall"]["rows"]) == 7 and d["stats"]["capture"]["requests"] == 6
    before = out.read_bytes()
    with pytest.raises(FileExistsError):
        ex.export(an, str(out))
    with pytest.raises(FileExistsError):
        ex.export(an, str(out), fmt="har")
    assert out.read_bytes() == before
    ex.export(an, str(out), fmt="har", force=True)
    assert json.loads(out.read_text())["log"]["version"] == "1.2"
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]  # no temporary files left
    with pytest.raises(ValueError):
        ex.export(an, str(tmp_path / "x.bmp"))


# ---------------------------------------------------------------------------------- qlog

QUIC_TYPES = {"0": "initial", "1": "0RTT", "2": "handshake", "3": "retry"}


def _tshark_quic_packets(path: Path, keys: Path | None) -> dict[int, list[tuple[str, int | None]]]:
    args = ["-r", str(path), "-Y", "quic", "-T", "fields", "-E", "separator=\t", "-e", "frame.number", "-e", "quic.header_form",
            "-e", "quic.long.packet_type", "-e", "quic.packet_number", "-e", "quic.fixed_bit"]
    if keys:
        args += ["-o", f"tls.keylog_file:{keys}"]
    res = {}
    for line in _tshark(*args).splitlines():
        num, forms, ltypes, pns, fixed = (line.split("\t") + ["", "", "", ""])[:5]
        lt = iter(ltypes.split(",") if ltypes else [])
        fx = fixed.split(",") if fixed else []
        # a "short header" with the fixed bit clear is tshark reading the zero padding
        # after coalesced packets (RFC 9000 12.2) as a packet; it is not one
        types = [QUIC_TYPES.get(next(lt, "?"), "?") if f in ("1", "True") else "1RTT" for i, f in enumerate(forms.split(","))
                 if f and not (f in ("0", "False") and i < len(fx) and fx[i] in ("0", "False"))]
        pnl = [int(x) for x in pns.split(",") if x] if pns else []
        res[int(num)] = [(t, pnl[i] if len(pnl) == len(types) else None) for i, t in enumerate(types)]
    return res


@pytest.mark.parametrize("cap,keys", [
    ("quic-illustrated/capture.pcap", "quic-illustrated/keylog.txt"),
    ("sample:page/page-h3.pcapng", "sample:page/page-h3.keys"),
])
def test_qlog_packet_events_match_tshark(cap, keys, tmp_path):
    from wirefall.analyzer.pipeline import analyze

    base = SAMPLES if cap.startswith("sample:") else SHARED
    p, k = base / cap.split(":")[-1], base / keys.split(":")[-1]
    if not p.exists():
        pytest.skip(f"{p} not present")
    an = analyze(str(p), keylogs=[str(k)])
    out = tmp_path / "x.qlog"
    ex.export(an, str(out))
    q = json.loads(out.read_text())
    assert q["qlog_version"] == "0.3" and q["traces"]
    got: dict[int, list] = {}
    for tr in q["traces"]:
        assert tr["vantage_point"]["type"] == "network"
        times = [e["time"] for e in tr["events"]]
        assert times == sorted(times)
        for e in tr["events"]:
            if e["name"] in ("transport:packet_sent", "transport:packet_received"):
                h = e["data"]["header"]
                got.setdefault(e["data"]["_packet"], []).append((h["packet_type"], h.get("packet_number")))
    truth = _tshark_quic_packets(p, k)
    assert set(got) == set(truth) and truth
    pn_checked = 0
    for num, pkts in truth.items():
        assert [t for t, _ in got[num]] == [t for t, _ in pkts], num
        for (_, a), (_, b) in zip(got[num], pkts):
            if b is not None:
                assert a == b, num
                pn_checked += 1
    assert pn_checked >= len(truth)  # every packet's number was decrypted by both
    # qlog times are the packets' times relative to the connection start
    tr = q["traces"][0]
    first = next(e for e in tr["events"] if e["name"] == "transport:packet_sent")
    assert first["time"] == 0.0


def test_qlog_names_are_those_aioquic_writes_for_the_same_connection():
    """Event names and frame fields are qlog 0.3's as an independent implementation writes
    them: aioquic's own qlog of sample_captures/quic/aioquic-qlog.pcap's connection (the
    client's) against wirefall's export of the capture — every event name aioquic uses for
    datagrams and packets, and for each frame type both write, the same field names."""
    from wirefall.analyzer.pipeline import analyze

    p, k, ql = (SAMPLES / "quic" / f"aioquic-qlog.{x}" for x in ("pcap", "keys", "qlog"))
    theirs = json.loads(ql.read_text())["traces"][0]["events"]
    an = analyze(str(p), keylogs=[str(k)])
    ours = [e for tr in ex.qlog(an)["traces"] for e in tr["events"]]
    names = lambda evs: {e["name"] for e in evs if e["name"].startswith("transport:")}  # noqa: E731
    assert names(ours) <= names(theirs) and {"transport:datagrams_sent", "transport:packet_received"} <= names(ours)

    def fields(evs) -> dict[str, set]:
        out: dict[str, set] = {}
        for e in evs:
            for f in (e.get("data") or {}).get("frames") or ():
                out.setdefault(f["frame_type"], set()).update(k for k in f if not k.startswith("_"))
        return out

    a, b = fields(ours), fields(theirs)
    common = set(a) & set(b)
    assert {"stream", "ack", "crypto", "new_connection_id", "connection_close"} <= common
    for t in common:
        assert a[t] == b[t] or (t == "padding" and a[t] - b[t] == {"length"}), (t, a[t], b[t])


# ------------------------------------------------------------------------- images, HTML


def _bar_points(svg: str) -> list[list[tuple[float, float]]]:
    """Per bar trace of a Plotly SVG: the (y centre, width) of each drawn bar path."""
    ns = {"s": "http://www.w3.org/2000/svg"}
    root = ET.fromstring(svg)
    traces = []
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        if "bars" in (g.get("class") or "").split() and "trace" in (g.get("class") or "").split():
            pts = []
            for path in g.iterfind(".//s:g[@class='point']/s:path", ns):
                d = path.get("d") or ""
                nums = [float(x) for x in d.replace("M", " ").replace("V", " ").replace("H", " ").replace("Z", " ").replace(",", " ").split()]
                if len(nums) >= 5:  # M x0,y0 V y1 H x1 V y0 Z
                    x0, y0, y1, x1 = nums[0], nums[1], nums[2], nums[3]
                    pts.append(((y0 + y1) / 2, abs(x1 - x0)))
            traces.append(pts)
    return traces


@pytest.fixture(scope="module")
def image_server():
    if not Path("/usr/bin/chromium").exists() and not os.environ.get("BROWSER_PATH"):
        pytest.skip("no Chromium for kaleido")
    from wirefall.ui import figures

    with figures.image_server():
        yield


def _check_svg(svg: str, wf) -> None:
    traces = _bar_points(svg)
    present = [ph for ph in waterfall.PHASES if any(r.phase(ph) for r in wf.rows)]
    n_chunks = sum(len(r.chunks) for r in wf.rows)
    assert len(traces) == len(present) + (1 if n_chunks else 0)  # the phases, then the download chunks
    if n_chunks:
        assert len(traces[-1]) == n_chunks and all(w > 0 for _, w in traces[-1])
        traces = traces[:-1]
    for ph, pts in zip(present, traces):
        assert len(pts) == sum(1 for r in wf.rows for n, _, _ in r.phases if n == ph), ph  # (a row may be blocked twice)
        assert all(w > 0 for _, w in pts)
    # one row of bars per request: the bars' vertical centres give exactly one band per row
    centres = sorted({round(y, 1) for pts in traces for y, _ in pts})
    assert len(centres) == len(wf.rows)


def test_svg_png_handmade_one_bar_per_request(image_server, tmp_path):
    an = make_analysis()
    wf = waterfall.build(an)
    svg_path, png_path = tmp_path / "w.svg", tmp_path / "w.png"
    export_any(an, str(svg_path))
    export_any(an, str(png_path))
    _check_svg(svg_path.read_text(), wf)
    w, h, rows, bpp = png_pixels(png_path.read_bytes())
    assert w == 1400 and h >= 360
    want = {cls: bytes.fromhex(waterfall.CONTENT_COLORS[cls][1][1:]) for cls in ("html", "css", "script", "image", "font")}
    counts = {cls: sum(r.count(c) for r in rows) for cls, c in want.items()}  # byte-run hits (approximate pixel count)
    for cls, n in counts.items():
        assert n > 50, (cls, counts)
    if os.environ.get("WIREFALL_KEEP_IMAGES"):
        shutil.copy(png_path, os.environ["WIREFALL_KEEP_IMAGES"])


@pytest.mark.parametrize("cap,keys", SAMPLE_SET)
def test_svg_sample_one_bar_per_request(cap, keys, image_server, tmp_path):
    p, an = _sample(cap, keys)
    wf = waterfall.build(an)
    out = tmp_path / "w.svg"
    export_any(an, str(out))
    _check_svg(out.read_text(), wf)
    assert len(wf.rows) == len(an.exchanges)


def test_html_offline_in_headless_chromium(tmp_path):
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("chromium not installed")
    an = make_analysis()
    out = tmp_path / "w.html"
    export_any(an, str(out))
    html = out.read_text()
    assert "<script src=\"http" not in html  # plotly.js inlined
    ctl = tmp_path / "ctl.html"
    ctl.write_text("<html><body><script>console.error('control');</script></body></html>")

    def run(page: Path):
        r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--proxy-server=127.0.0.1:9",
                            "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                           capture_output=True, text=True, timeout=120)
        return r.stdout, [ln for ln in r.stderr.splitlines() if "CONSOLE" in ln]

    _, ctl_console = run(ctl)
    assert any("control" in ln for ln in ctl_console)  # the console is seen
    dom, console = run(out)
    assert console == []
    assert dom.count('class="trace bars"') == 8 + 1  # blocked, dns, connect, tls, idle, send, wait, receive drawn; the chunks
    assert dom.count('class="point"') >= 7 * 4


def test_many_rows_are_a_few_path_shapes_and_stay_fast():
    import time

    from wirefall.ui import figures

    an = make_analysis(n_extra_rows=5000)
    t = time.process_time()  # CPU, not the clock: a shared CI host's load does not count
    wf = waterfall.build(an)
    fig = figures.waterfall_figure(wf)
    elapsed = time.process_time() - t
    assert len(wf.rows) == 5007
    kinds = {tr.type for tr in fig.data if tr.x is not None and len([x for x in tr.x if x is not None])}
    assert "bar" not in kinds and "scattergl" not in kinds  # no DOM node per bar, no WebGL canvas
    paths = [s for s in fig.layout.shapes if s.type == "path"]
    assert len(fig.layout.shapes) < 60  # a path per colour, not a shape per bar
    on_rows = sum(s.path.count("M") for s in paths if s.yref == "y" and "H" in s.path)
    assert on_rows == sum(len(r.phases) + len(r.chunks) for r in wf.rows)  # each phase, each download chunk
    assert any(s.yref == "y2" for s in paths)  # the connection view: paths too
    carrier = [tr for tr in fig.data if tr.mode == "none" and tr.yaxis in (None, "y")]
    assert len(carrier) == 1 and len(carrier[0].hovertext) == len(wf.rows) and fig.layout.hovermode == "y"  # a tooltip per row
    assert elapsed < 10


def test_image_rendering_outside_a_server_is_isolated_and_bounded(tmp_path, monkeypatch):
    """Without an image server the figure is rendered in a child process: the same bars, and
    a rendering that does not finish in IMAGE_TIMEOUT is killed and reported, never a hang."""
    import time

    if not Path("/usr/bin/chromium").exists() and not os.environ.get("BROWSER_PATH"):
        pytest.skip("no Chromium for kaleido")
    from wirefall.ui import figures

    monkeypatch.setattr(figures, "_server", [False])  # as a command with no image server (this module may run one)
    an = make_analysis()
    wf = waterfall.build(an)
    svg_path = tmp_path / "w.svg"
    export_any(an, str(svg_path))
    _check_svg(svg_path.read_text(), wf)
    monkeypatch.setattr(figures, "IMAGE_TIMEOUT", 0.05)  # shorter than the child's own start-up
    t = time.monotonic()
    with pytest.raises(figures.ImageError, match=r"did not finish within .* \(2 attempts\)"):
        export_any(an, str(tmp_path / "late.svg"))
    assert time.monotonic() - t < 30 and not (tmp_path / "late.svg").exists()


def test_waterfall_without_requests_spans_the_capture():
    """A capture with no request to draw (page-h2 without its key log: nothing decrypted) still
    has its traffic in the throughput track; the time axis was 0-1 ms (the span of no rows),
    so the track read as empty — "no traffic" — beside the message saying why no row shows.
    The axis spans the capture, as the track's bins do."""
    from wirefall.analyzer.pipeline import analyze
    from wirefall.ui.figures import waterfall_figure

    an = analyze(str(SAMPLES / "page" / "page-h2.pcapng"))
    wf = waterfall.build(an)
    assert not wf.rows and wf.throughput is not None and sum(wf.throughput.down) > 100_000
    fig = waterfall_figure(wf, hover=False)
    assert fig.layout.xaxis.range[1] >= (wf.t_end - wf.t0) * 1000.0


def test_connection_labels_never_join_two_addresses():
    """The connection view's label (``client → server``) was cut in its middle as one string:
    with IPv6 on both sides (amazon1) it read ``[2600:1900:4…9000:215a:6200:7:49a5:5fd6:da1]:443``,
    the client's first characters glued to the server's last ones — an address of neither, the
    arrow gone.  The client goes first (its port kept), then the server's middle."""
    from wirefall.ui import waterfall_layout as L

    six = "[2600:1900:4090:1d:0:1::]:40494 → [2600:9000:215a:6200:7:49a5:5fd6:da1]:443"
    server = "[2600:9000:215a:6200:7:49a5:5fd6:da1]:443"
    assert L.elide_flow(six, 200, 12) == six
    assert L.elide_flow(six, 51, 12) == "…:40494 → " + server
    # narrower: the client's port and the arrow stay (two connections to one server differ by
    # it, and a label with no arrow read as a server alone), the server's address cut in its middle
    for n in (50, 36, 22):
        cut = L.elide_flow(six, n, 12)
        assert len(cut) == n and cut.startswith("…:40494 → [2600:") and cut.endswith(":443") and "…" in cut[10:] and "1900" not in cut
    four = "10.20.0.3:49658 → 3.167.37.14:443"
    assert L.elide_flow(four, 36, 12) == four
    assert L.elide_flow(four, 25, 12) == "…:49658 → 3.167.37.14:443"
    assert L.elide_flow(four, 24, 12).startswith("…:49658 → 3.167") and len(L.elide_flow(four, 24, 12)) == 24
