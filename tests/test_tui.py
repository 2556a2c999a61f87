"""TUI and per-packet detail tests.  Truth comes from tshark on the same captures."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tuifix import sync, wait_compare, wait_loaded

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import hexdump, packet_bytes, packet_detail, packet_row, packet_rows
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"
TSHARK = shutil.which("tshark")

needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


def shared(rel: str) -> Path:
    p = SHARED / rel
    if not SHARED.is_dir():
        pytest.skip("third-party captures folder absent")
    return p


def _tshark_json(path: Path, extra=()) -> list[dict]:
    out = subprocess.run([TSHARK, "-r", str(path), "-T", "json", "--no-duplicate-keys", *extra], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def _flatten(d, acc: dict) -> dict:
    """tshark -T json layers -> {field: [values]} (descending into *_tree objects)."""
    for k, v in d.items():
        if isinstance(v, dict):
            _flatten(v, acc)
        elif isinstance(v, list):
            for x in v:
                if isinstance(x, dict):
                    _flatten(x, acc)
                else:
                    acc.setdefault(k, []).append(x)
        else:
            acc.setdefault(k, []).append(v)
    return acc


# (capture, key log or None, packets to check)
LINK_CASES = [
    ("sample_captures/link-sll.pcap", None),
    ("sample_captures/link-sll2.pcap", None),
    ("sample_captures/link-raw.pcap", None),
    ("shared:tls13/capture.pcap", None),  # BSD loopback (null)
    ("shared:pageload-amazon/amazon1.cap.gz", None),  # Ethernet, IPv4+IPv6, TCP+UDP, gzip
    ("shared:quic-illustrated/capture.pcap", None),  # null + UDP
]


def _path(spec: str) -> Path:
    return shared(spec[7:]) if spec.startswith("shared:") else ROOT / spec


_analyses: dict = {}


def _analysis(path: Path, keylogs=None):
    key = (str(path), tuple(keylogs or ()))
    if key not in _analyses:
        _analyses[key] = analyze(str(path), [str(k) for k in keylogs or ()])
    return _analyses[key]


COMPARED = {
    "frame.number", "frame.len", "frame.cap_len", "frame.interface_id",
    "eth.dst", "eth.src", "eth.type", "null.family",
    "sll.pkttype", "sll.hatype", "sll.halen", "sll.src.eth", "sll.etype", "sll.ifindex",
    "ip.version", "ip.hdr_len", "ip.dsfield", "ip.len", "ip.id", "ip.flags", "ip.frag_offset", "ip.ttl", "ip.proto",
    "ip.checksum", "ip.src", "ip.dst",
    "ipv6.version", "ipv6.tclass", "ipv6.flow", "ipv6.plen", "ipv6.nxt", "ipv6.hlim", "ipv6.src", "ipv6.dst",
    "tcp.srcport", "tcp.dstport", "tcp.len", "tcp.seq", "tcp.seq_raw", "tcp.nxtseq", "tcp.ack", "tcp.ack_raw", "tcp.hdr_len",
    "tcp.flags", "tcp.window_size_value", "tcp.window_size", "tcp.checksum", "tcp.urgent_pointer",
    "tcp.options.mss_val", "tcp.options.wscale.shift", "tcp.options.timestamp.tsval", "tcp.options.timestamp.tsecr",
    "udp.srcport", "udp.dstport", "udp.length", "udp.checksum",
}


@needs_tshark
@pytest.mark.parametrize("spec", [c[0] for c in LINK_CASES])
def test_detail_fields_equal_tshark(spec):
    path = _path(spec)
    an = _analysis(path)
    src = PacketSource(str(path))
    ts = _tshark_json(path)
    assert len(ts) == an.packets > 0
    step = max(1, an.packets // 60)  # about 60 packets of each capture, spread over it
    compared = 0
    seen_fields = set()
    for n in range(1, an.packets + 1, step):
        want = _flatten(ts[n - 1]["_source"]["layers"], {})
        nodes = packet_detail(an, src, n)
        got: dict = {}
        for root in nodes:
            for node in root.walk():
                if node.abbrev in COMPARED:
                    got.setdefault(node.abbrev, []).append(node.value)
        # every IP/TCP/UDP field tshark shows for the outer headers is in our tree with its value
        for f in COMPARED:
            if f in want and f in got:
                w = want[f][: len(got[f])]
                assert got[f][: len(w)] == w, f"packet {n} {f}: wirefall {got[f]} tshark {want[f]}"
                compared += 1
                seen_fields.add(f)
            elif f in want and f.split(".")[0] in ("ip", "ipv6", "tcp", "udp") and not f.startswith("tcp.options"):
                if f == "ip.version" and "ipv6.version" in got:  # tshark names IPv6's version field both ways
                    continue
                if "icmp" in want.get("frame.protocols", [""])[0]:
                    continue
                raise AssertionError(f"packet {n}: tshark has {f}={want[f]}, wirefall tree lacks it")
        t_epoch = float(want["frame.time_epoch"][0])
        assert abs(float(got.get("frame.time_epoch", ["nan"])[0] if "frame.time_epoch" in got else nodes[0].find("frame.time_epoch").value) - t_epoch) < 2e-6
    assert compared > 100
    assert {"tcp.seq", "ip.src"} & seen_fields or {"udp.srcport", "ipv6.src"} & seen_fields


ALL_SAMPLES = sorted(str(p.relative_to(ROOT)) for p in SAMPLES.rglob("*.pcap*"))


@needs_tshark
@pytest.mark.parametrize("spec", ["shared:tls13/capture.pcap", "shared:pageload-amazon/amazon1.cap.gz"] + ALL_SAMPLES)
def test_packet_rows_equal_tshark_columns(spec):
    path = _path(spec)
    keys = sorted(path.parent.glob(path.name.split(".pcap")[0] + "*.keys"))
    an = _analysis(path, keys)
    src = PacketSource(str(path))
    fields = ["frame.number", "frame.time_relative", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "frame.len", "tcp.srcport", "tcp.dstport",
              "tcp.seq", "tcp.ack", "tcp.window_size", "tcp.len", "tcp.flags.str", "udp.length"]
    out = subprocess.run([TSHARK, "-r", str(path), "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f", *sum([["-e", f] for f in fields], [])],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    rows = packet_rows(an, src, 1, an.packets + 1)
    assert len(rows) == len(out) == an.packets
    tcp_checked = 0
    for row, line in zip(rows, out):
        t = dict(zip(fields, line.split("\t")))
        no, tm, s, d, proto, length, info = row
        assert no == int(t["frame.number"]) and length == int(t["frame.len"])
        assert isinstance(tm, float) and abs(tm - float(t["frame.time_relative"])) < 2e-6
        assert (s, d) == (t["ip.src"] or t["ipv6.src"], t["ip.dst"] or t["ipv6.dst"])
        if t["tcp.srcport"] and info.startswith(f"{t['tcp.srcport']} → "):
            # "sport → dport [FLAGS] Seq=… Ack=… Win=… Len=…" as Wireshark's Info
            assert f"{t['tcp.srcport']} → {t['tcp.dstport']} [" in info
            assert f" Seq={t['tcp.seq']} " in info
            if t["tcp.ack"] and "ACK" in info.split("]")[0]:
                assert f" Ack={t['tcp.ack']} " in info
            assert f" Win={t['tcp.window_size']} Len={t['tcp.len']}" in info
            tcp_checked += 1
        elif t["udp.length"] and proto == "UDP":
            assert info.endswith(f"Len={int(t['udp.length']) - 8}")
    assert tcp_checked == sum(1 for r in rows if r[4] == "TCP" and r[6][:1].isdigit())
    assert tcp_checked > 0 or "quic" in spec or "h3" in spec
    assert packet_row(an, src, 1) == rows[0]


def test_hexdump_format():
    data = bytes(range(0x30, 0x30 + 20))
    lines = hexdump(data)
    assert lines[0] == "0000  30 31 32 33 34 35 36 37 38 39 3a 3b 3c 3d 3e 3f   0123456789:;<=>?"
    assert lines[1] == "0010  40 41 42 43" + " " * 36 + "   @ABC"


@needs_tshark
def test_packet_bytes_equal_tshark_hex():
    path = _path("shared:tls13/capture.pcap")
    an = _analysis(path)
    src = PacketSource(str(path))
    out = subprocess.run([TSHARK, "-r", str(path), "-x"], capture_output=True, text=True, check=True).stdout
    # tshark -x prints each packet's hex dump, blocks separated by a blank line
    blocks = [b.splitlines() for b in out.split("\n\n") if b.strip()]
    assert len(blocks) == an.packets
    for n in range(1, an.packets + 1):
        assert hexdump(packet_bytes(src, an, n)) == [ln.rstrip() for ln in blocks[n - 1]] or \
            [ln.rstrip() for ln in hexdump(packet_bytes(src, an, n))] == [ln.rstrip() for ln in blocks[n - 1]], n


@needs_tshark
def test_tls_rows_info_equal_tshark_with_keys():
    path = _path("shared:tls13/capture.pcap")
    keys = path.parent / "keylog.txt"
    an = _analysis(path, [keys])
    src = PacketSource(str(path))
    out = subprocess.run([TSHARK, "-r", str(path), "-o", f"tls.keylog_file:{keys}", "-T", "fields", "-E", "separator=\t",
                          "-e", "_ws.col.Protocol", "-e", "_ws.col.Info"], capture_output=True, text=True, check=True).stdout.splitlines()
    rows = packet_rows(an, src, 1, an.packets + 1)
    tls_rows = 0
    for row, line in zip(rows, out):
        proto, info = line.split("\t", 1)
        if proto.startswith("TLS"):
            assert (row[4], row[6]) == (proto, info), row[0]
            tls_rows += 1
    assert tls_rows == 7


# ------------------------------------------------------------------ HTTP/2 detail vs tshark

def _h2_sample():
    p = SAMPLES / "page" / "page-h2.pcapng"
    if not p.exists():
        pytest.skip("sample_captures/page/page-h2.pcapng not present")
    return p, p.parent / "page-h2.keys"


H2_FIELDS = ("http2.type", "http2.streamid", "http2.length", "http2.flags", "http2.header.name", "http2.header.value")


@needs_tshark
def test_h2_detail_fields_equal_tshark():
    path, keys = _h2_sample()
    an = _analysis(path, [keys])
    src = PacketSource(str(path))
    ts = _tshark_json(path, ["-o", f"tls.keylog_file:{keys}"])
    checked = headers = 0
    for n in range(1, an.packets + 1):
        layers = ts[n - 1]["_source"]["layers"]
        if "http2" not in layers:
            continue
        want = _flatten(layers["http2"] if isinstance(layers["http2"], dict) else {"x": layers["http2"]}, {})
        got: dict = {}
        for root in packet_detail(an, src, n):
            for node in root.walk():
                if node.abbrev in H2_FIELDS:
                    got.setdefault(node.abbrev, []).append(node.value)
        for f in H2_FIELDS:
            assert got.get(f, []) == want.get(f, []), f"packet {n} {f}"
        checked += 1
        headers += len(want.get("http2.header.name", []))
    assert checked >= 30 and headers >= 100


# ------------------------------------------------------------------ the TUI (Textual pilot)

from wirefall.ui.tui.app import FollowScreen, HelpScreen, TextScreen, WirefallApp  # noqa: E402
from wirefall.ui.tui.widgets import HexView, PacketList, WaterfallView  # noqa: E402


def _tshark_fields(path, fields, extra=()):
    out = subprocess.run([TSHARK, "-r", str(path), *extra, "-T", "fields", "-E", "separator=\t", *sum([["-e", f] for f in fields], [])],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return [dict(zip(fields, ln.split("\t"))) for ln in out]


@needs_tshark
@sync
async def test_tui_packet_list_and_moving_match_tshark():
    path = shared("tls13/capture.pcap")
    keys = path.parent / "keylog.txt"
    want = _tshark_fields(path, ["frame.number", "frame.len", "ip.src", "ip.dst", "_ws.col.Protocol", "_ws.col.Info"], ["-o", f"tls.keylog_file:{keys}"])
    app = WirefallApp(str(path), [str(keys)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        assert app.loaded and app.load_error is None
        pl = app.query_one(PacketList)
        assert pl.count == len(want) == 22
        assert {r["tcp.stream"] for r in _tshark_fields(path, ["tcp.stream"])} == {"0"}  # (tshark: one TCP connection)
        assert "22 packets · 1 connection (1 decrypted) · " in str(app.query_one("#status").render())  # (not "1 connections")
        lines = pl.visible_lines()
        assert len(lines) >= 10
        for line, w in zip(lines, want):
            cols = line.split()
            assert cols[0] == w["frame.number"] and cols[2] == w["ip.src"] and cols[3] == w["ip.dst"]
            assert f" {w['frame.len']} " in line
            if w["_ws.col.Protocol"].startswith("TLS"):
                assert cols[4] == w["_ws.col.Protocol"] and line.endswith(w["_ws.col.Info"])
        await pilot.press("down", "down", "down", "down")
        assert pl.current_packet == 5
        from textual.widgets import Tree

        tree = app.query_one("#detail", Tree)
        labels = [c.label.plain for c in tree.root.children]
        assert labels[0].startswith(f"Frame 5: {want[4]['frame.len']} bytes on wire")
        assert labels[2] == f"Internet Protocol Version 4, Src: {want[4]['ip.src']}, Dst: {want[4]['ip.dst']}"
        tls = next(c for c in tree.root.children if c.label.plain == "Transport Layer Security")
        assert tls.children[0].label.plain.endswith("Record Layer: Handshake Protocol: Client Hello")  # (tshark's words)
        await pilot.press("end")
        assert pl.current_packet == 22
        await pilot.press("home", "pagedown")
        assert pl.current_packet > 10
        # the bytes pane shows tshark's hex dump of the selected packet
        hexlines = subprocess.run([TSHARK, "-r", str(path), "-x", "-Y", f"frame.number=={pl.current_packet}"], capture_output=True, text=True).stdout.strip().splitlines()
        assert [ln.rstrip() for ln in app.query_one(HexView).lines()] == [ln.rstrip() for ln in hexlines]


@needs_tshark
@sync
async def test_tui_h2_packet_detail_and_bytes_highlight():
    path, keys = _h2_sample()
    hdr_pkts = [int(r["frame.number"]) for r in _tshark_fields(path, ["frame.number"], ["-o", f"tls.keylog_file:{keys}", "-Y", "http2.type==1 && http2.streamid==1"])]
    first = hdr_pkts[0]
    names = _flatten(_tshark_json(path, ["-o", f"tls.keylog_file:{keys}", "-Y", f"frame.number=={first}"])[0]["_source"]["layers"], {})
    app = WirefallApp(str(path), [str(keys)])
    async with app.run_test(size=(200, 60)) as pilot:
        await wait_loaded(pilot, app)
        pl = app.query_one(PacketList)
        assert pl.select_packet(first)
        await pilot.pause(0.05)
        assert "HEADERS[1]: GET /" in pl.visible_lines()[pl.cursor - pl.scroll_offset.y]
        await pilot.press("enter")  # to the detail tree
        from textual.widgets import Tree

        tree = app.query_one("#detail", Tree)
        assert app.focused is tree
        h2 = [c for c in tree.root.children if c.label.plain.startswith("HyperText Transfer Protocol 2")]
        assert h2, [c.label.plain for c in tree.root.children]
        texts = []

        def walk(t):
            texts.append(t.label.plain)
            for c in t.children:
                walk(c)

        walk(h2[0])
        pairs = list(zip(names["http2.header.name"], names["http2.header.value"]))
        assert len(pairs) >= 10
        for k, v in pairs:
            assert f"Header: {k}: {v}" in texts
        # select the IPv4 source address field: its 4 bytes are highlighted in the bytes pane
        ip = tree.root.children[2]
        ip.expand()
        await pilot.pause(0.05)
        src_node = next(c for c in ip.children if c.label.plain.startswith("Source Address"))
        tree.move_cursor(src_node)
        await pilot.pause(0.05)
        hv = app.query_one(HexView)
        a, b = hv.hl
        assert b - a == 4
        data = hv.data
        assert ".".join(str(x) for x in data[a:b]) == names["ip.src"][0]
        assert hv.current == 0 and len(hv.sources) == 2  # Frame, Decrypted TLS
        # a decrypted HTTP/2 frame: the bytes pane switches to the "Decrypted TLS" tab (as
        # Wireshark does) whose bytes are tshark's, and highlights the frame in them
        srcs = _tshark_data_sources(path, keys)
        dec = [b for name, b in srcs[first - 1] if name == "Decrypted TLS"]
        fr = h2[0].children[0] if h2[0].children else h2[0]
        tree.move_cursor(fr)
        await pilot.pause(0.05)
        assert hv.current == 1 and hv.data == dec[0]
        assert hv.sources[1][0] == f"Decrypted TLS ({len(dec[0])} bytes)"
        assert "Decrypted TLS" in str(app.query_one("#bytes-tabs").render())
        a, b = hv.hl
        frame_len = int(names["http2.length"][0])
        assert b - a == 9 + frame_len and int.from_bytes(hv.data[a : a + 3], "big") == frame_len and hv.data[a + 3] == 1
        # its Stream Identifier field: 4 bytes of the frame header
        fr.expand()
        await pilot.pause(0.05)
        sid = next(c for c in fr.children if "= Stream Identifier: " in c.label.plain)
        tree.move_cursor(sid)
        await pilot.pause(0.05)
        a2, b2 = hv.hl
        assert (a2, b2) == (a + 5, a + 9) and int.from_bytes(hv.data[a2:b2], "big") == 1
        # a header (no bytes of its own) lights up its frame; x goes back to the packet's bytes
        hdr = next(c for c in fr.children if c.label.plain.startswith("Header: "))
        tree.move_cursor(hdr)
        await pilot.pause(0.05)
        assert hv.hl == (a, b)
        await pilot.press("x")
        assert hv.current == 0 and hv.data == data
        # a packet completing several records: one tab each, as tshark's data sources; the
        # tab line shows the current one with its position when they do not all fit
        many = max(range(1, app.an.packets + 1), key=lambda n: sum(1 for name, _ in srcs[n - 1] if name == "Decrypted TLS"))
        want_many = [b for name, b in srcs[many - 1] if name == "Decrypted TLS"]
        assert len(want_many) >= 4
        pl.select_packet(many)
        await pilot.pause(0.05)
        assert [b for _, b, _ in hv.sources[1:]] == want_many
        await pilot.press("x", "x")
        assert hv.current == 2 and f"Decrypted TLS 3/{len(want_many) + 1}" in str(app.query_one("#bytes-tabs").render())


@needs_tshark
@sync
async def test_tui_h3_packet_decrypted_quic_tab_and_frame_highlight():
    """page-h3: a decrypted HTTP/3 packet's bytes pane has a "Decrypted QUIC" tab equal to
    tshark's; selecting its HTTP/3 HEADERS frame switches to that tab and highlights exactly
    tshark's HTTP/3 frame (type .. end of payload), a QUIC STREAM frame tshark's quic.frame
    bytes; the QUIC packet itself lights up its bytes in the packet."""
    path = SAMPLES / "page" / "page-h3.pcapng"
    keys = SAMPLES / "page" / "page-h3.keys"
    kopt = ["-o", f"tls.keylog_file:{keys}"]
    n = int(_tshark_fields(path, ["frame.number"], [*kopt, "-Y", "http3.frame_type == 1"])[0]["frame.number"])
    layers = _tshark_json(path, [*kopt, "-x", "-Y", f"frame.number=={n}"])[0]["_source"]["layers"]
    h3 = layers["http3"] if isinstance(layers["http3"], list) else [layers["http3"]]
    hdr = next(x for x in h3 if str(x.get("http3.frame_type")) == "1")
    want_span = (hdr["http3.frame_type_raw"][1], hdr["http3.frame_length_raw"][1] + hdr["http3.frame_length_raw"][2] + int(hdr["http3.frame_length"]))
    q = layers["quic"] if isinstance(layers["quic"], dict) else layers["quic"][-1]
    qf, qr = q["quic.frame"], q["quic.frame_raw"]
    qf, qr = (qf, qr) if isinstance(qf, list) else ([qf], [qr])
    stream_raw = next(bytes.fromhex(r[0]) for f, r in zip(qf, qr) if "quic.stream.stream_id" in f)
    dec = [b for name, b in _tshark_data_sources(path, keys)[n - 1] if name == "Decrypted QUIC"]
    assert len(dec) == 1 and len(stream_raw) > 4
    app = WirefallApp(str(path), [str(keys)])
    async with app.run_test(size=(200, 60)) as pilot:
        await wait_loaded(pilot, app)
        pl = app.query_one(PacketList)
        assert pl.select_packet(n)
        await pilot.pause(0.05)
        await pilot.press("enter")
        from textual.widgets import Tree

        tree = app.query_one("#detail", Tree)
        hv = app.query_one(HexView)
        assert hv.current == 0 and [t for t, _, _ in hv.sources] == [f"Frame ({len(hv.data)} bytes)", f"Decrypted QUIC ({len(dec[0])} bytes)"]
        assert hv.sources[1][1] == dec[0] and hv.sources[1][2] is None
        groups = {c.label.plain.split(":")[0].split(" (")[0]: c for c in tree.root.children}
        g3 = groups["Hypertext Transfer Protocol Version 3"]
        g3.expand()
        await pilot.pause(0.05)
        node = next(c for c in g3.children if "HEADERS" in c.label.plain)
        tree.move_cursor(node)
        await pilot.pause(0.05)
        assert hv.current == 1 and hv.data == dec[0]
        assert "Decrypted QUIC" in str(app.query_one("#bytes-tabs").render())
        assert hv.hl == want_span and hv.data[want_span[0] : want_span[1]].hex() == hdr["http3.frame_type_raw"][0] + \
            hdr["http3.frame_length_raw"][0] + hdr["http3.frame_payload_raw"][0]
        # a QUIC STREAM frame: tshark's quic.frame bytes
        gq = groups["QUIC IETF"]
        gq.expand()
        await pilot.pause(0.05)
        pk = gq.children[-1]
        pk.expand()
        await pilot.pause(0.05)
        st = next(c for c in pk.children if c.label.plain.startswith("STREAM id="))
        tree.move_cursor(st)
        await pilot.pause(0.05)
        a, b = hv.hl
        assert hv.current == 1 and hv.data[a:b] == stream_raw
        # the QUIC packet node: its bytes in the packet (back to the Frame tab)
        tree.move_cursor(pk)
        await pilot.pause(0.05)
        a, b = hv.hl
        assert hv.current == 0 and hv.data[a:b].hex() == (layers["quic_raw"][0] if isinstance(layers["quic_raw"][0], str) else layers["quic_raw"][-1][0])


@needs_tshark
@sync
async def test_tui_filter_matches_tshark_and_reports_errors():
    path, keys = _h2_sample()
    want = [int(r["frame.number"]) for r in _tshark_fields(path, ["frame.number"], ["-o", f"tls.keylog_file:{keys}", "-Y", "http2.type==1"])]
    want_s1 = [int(r["frame.number"]) for r in _tshark_fields(path, ["frame.number"], ["-o", f"tls.keylog_file:{keys}", "-Y", "http2.streamid==1"])]
    app = WirefallApp(str(path), [str(keys)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("f")
        inp = app.query_one("#filter")
        assert app.focused is inp
        await pilot.press(*'type == "HEADERS"', "enter")
        pl = app.query_one(PacketList)
        for _ in range(100):
            await pilot.pause(0.05)
            if pl.count != app.an.packets:
                break
        assert list(pl.packets) == want
        assert all(" HTTP2 " in ln or " HTTP2/JSON " in ln for ln in pl.visible_lines())  # (tshark's name where the JSON dissector read a body)
        await pilot.press("f")
        inp.value = "stream == 1 && protocol == \"h2\""
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.05)
            if list(pl.packets) != want:
                break
        assert list(pl.packets) == want_s1
        # a bad expression: marked invalid with the column, the list unchanged, no crash
        await pilot.press("f")
        inp.value = "status >= "
        await pilot.pause(0.05)
        assert inp.has_class("-invalid")
        status = str(app.query_one("#status").render())
        from wirefall.analyzer.filter import FilterError, compile_filter

        with pytest.raises(FilterError) as err:
            compile_filter("status >= ".strip())  # (as Enter applies it: the live line and the toast say one column)
        assert f"filter: column {err.value.column}: {err.value.message}" in status
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert any(f"column {err.value.column}: {err.value.message}" in str(n.message) for n in app._notifications)
        assert list(pl.packets) == want_s1
        inp.value = ""
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert pl.count == app.an.packets


@needs_tshark
@sync
async def test_tui_waterfall_zoom_and_request_view():
    path, keys = _h2_sample()
    reqs = _tshark_fields(path, ["frame.number", "http2.streamid", "http2.headers.method", "http2.headers.path"],
                          ["-o", f"tls.keylog_file:{keys}", "-Y", "http2.headers.method"])
    resp = {}

    def streams(o):  # every HTTP/2 frame object of tshark's JSON: (stream id, :status)
        if isinstance(o, dict):
            if "http2.streamid" in o:
                st = _flatten(o, {}).get("http2.headers.status")
                if st:
                    resp[o["http2.streamid"]] = st[0]
            for v in o.values():
                streams(v)
        elif isinstance(o, list):
            for v in o:
                streams(v)

    streams(_tshark_json(path, ["-o", f"tls.keylog_file:{keys}", "-Y", "http2.headers.status"]))
    assert len(resp) == 13
    app = WirefallApp(str(path), [str(keys)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.1)
        wv = app.query_one(WaterfallView)
        assert app.focused is wv
        assert wv.count == len(reqs) == 13
        paths = sorted(r["http2.headers.path"] for r in reqs)
        assert sorted(r.url.split("59833", 1)[-1] for r in wv.rows) == paths
        for i in range(wv.count):
            label = wv.label_text(wv.rows[i])
            st = resp[str(wv.rows[i].stream_id)]
            assert label.rstrip().endswith(st)
            assert wv.bar_text(i).strip(), f"row {i} draws no bar"
        axis = str(app.query_one("#wf-axis").render())
        assert "0ms" in axis
        full = wv.v1 - wv.v0
        await pilot.press("down", "down", "down", "plus")
        assert abs((wv.v1 - wv.v0) - full / 2) < 1e-5
        await pilot.press("plus")
        assert abs((wv.v1 - wv.v0) - full / 4) < 1e-5
        r = wv.rows[3]
        assert wv.v0 <= (r.start + r.end) / 2 <= wv.v1  # zoom keeps the selected request in view
        v0 = wv.v0
        await pilot.press("right")
        assert wv.v0 > v0 or wv.v1 == wv.t1
        await pilot.press("0")
        assert (wv.v0, wv.v1) == (wv.t0, wv.t1)
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, TextScreen)
        body = app.screen.body.plain
        assert r.url in body and f"status {resp[str(r.stream_id)]}" in body
        assert "Request headers" in body and ":path: " + r.url.split("59833", 1)[-1] in body
        assert "Waiting (TTFB)" in body and "Frames of this stream" in body and "HEADERS[" in body
        await pilot.press("escape")
        assert not isinstance(app.screen, TextScreen)


@needs_tshark
@sync
async def test_tui_follow_stream_equals_tshark_frames():
    path, keys = _h2_sample()
    rows = _tshark_fields(path, ["frame.number", "http2.type", "http2.streamid"], ["-o", f"tls.keylog_file:{keys}", "-Y", "http2.streamid==3"])
    want = []
    for r in rows:
        for t, s in zip(r["http2.type"].split(","), r["http2.streamid"].split(",")):
            if s == "3":
                want.append((int(r["frame.number"]), int(t)))
    app = WirefallApp(str(path), [str(keys)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        pl = app.query_one(PacketList)
        pl.select_packet(want[0][0])
        await pilot.press("F")
        await pilot.pause(0.1)
        assert isinstance(app.screen, FollowScreen)
        from wirefall.analyzer.detail import H2_TYPES

        got = [(it[2], H2_TYPES[it[0].split("→" if "→" in it[0] else "←")[1].split()[1].split("[")[0].rstrip(":")])
               for it in app.screen.items if it[0].lstrip()[:1].isdigit()]
        assert got == want
        frame_lines = [i for i, it in enumerate(app.screen.items) if it[0].lstrip()[:1].isdigit()]
        await pilot.press(*["down"] * frame_lines[1], "enter")  # jump to the second frame's packet
        await pilot.pause(0.1)
        assert pl.current_packet == want[1][0]


@sync
async def test_tui_help_and_quit():
    path = shared("tls13/capture.pcap")
    app = WirefallApp(str(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        from wirefall.ui.tui.app import HELP

        for key in ("q", "?", "/", "F", "+ / -", "enter", "ctrl+f"):
            assert key in HELP
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        await pilot.pause(0.1)
    assert app.return_code in (0, None)


@sync
async def test_tui_bad_capture_is_a_notice_not_a_crash(tmp_path):
    bad = tmp_path / "not-a-capture.pcap"
    bad.write_bytes(b"hello, this is not a capture\n" * 10)
    app = WirefallApp(str(bad))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        assert app.load_error and "not a capture file" in app.load_error
        assert "error:" in str(app.query_one("#status").render())
        await pilot.press("down", "2", "question_mark", "escape")
    assert app.return_code in (0, None)


# ------------------------------------------------------------------ snapshots (pytest-textual-snapshot)

try:
    import pytest_textual_snapshot  # noqa: F401

    HAVE_SNAP = True
except ImportError:  # the plugin is optional
    HAVE_SNAP = False

needs_snap = pytest.mark.skipif(not HAVE_SNAP, reason="pytest-textual-snapshot not installed")
SNAP_SIZE = (160, 48)


def _snap_app(monkeypatch, sample=None):
    path, keys = _h2_sample() if sample is None else (SAMPLES / sample, (SAMPLES / sample).with_suffix(".keys"))
    monkeypatch.chdir(ROOT)
    rel, krel = str(path.relative_to(ROOT)), str(keys.relative_to(ROOT))
    return WirefallApp(rel, [krel], analysis=analyze(rel, [krel]))  # relative: no machine path on screen


@needs_snap
def test_snapshot_packets_h2_detail(snap_compare, monkeypatch):
    app = _snap_app(monkeypatch)

    async def before(pilot):
        pl = app.query_one(PacketList)
        pl.select_packet(25)
        await pilot.pause()
        await pilot.press("enter", "down", "down", "down", "down", "down")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=before)


@needs_snap
def test_snapshot_decrypted_tls_bytes_tab(snap_compare, monkeypatch):
    """Packet 25's HTTP/2 HEADERS frame selected: the bytes pane shows its Decrypted TLS tab."""
    app = _snap_app(monkeypatch)

    async def before(pilot):
        from textual.widgets import Tree

        app.query_one(PacketList).select_packet(25)
        await pilot.pause()
        await pilot.press("enter")
        tree = app.query_one("#detail", Tree)
        h2 = next(c for c in tree.root.children if c.label.plain.startswith("HyperText Transfer Protocol 2"))
        tree.move_cursor(h2.children[0])
        await pilot.pause()

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=before)


@needs_snap
def test_snapshot_waterfall_grouped_by_connection(snap_compare, monkeypatch):
    app = _snap_app(monkeypatch, "page/page-h1.pcapng")

    async def before(pilot):
        await pilot.press("2", "c")
        wv = app.query_one(WaterfallView)
        for _ in range(100):
            await pilot.pause(0.05)
            if wv.group_by == "connection":
                break
        await pilot.pause()

    assert snap_compare(app, terminal_size=SNAP_SIZE, run_before=before)


@needs_snap
def test_snapshot_waterfall_zoomed(snap_compare, monkeypatch):
    app = _snap_app(monkeypatch)
    assert snap_compare(app, terminal_size=SNAP_SIZE, press=["2", "down", "down", "down", "down", "down", "down", "plus"])


@needs_snap
def test_snapshot_request_view(snap_compare, monkeypatch):
    app = _snap_app(monkeypatch)
    assert snap_compare(app, terminal_size=SNAP_SIZE, press=["2", "down", "enter"])


@needs_snap
def test_snapshot_connections_and_statistics(snap_compare, monkeypatch):
    app = _snap_app(monkeypatch)
    assert snap_compare(app, terminal_size=SNAP_SIZE, press=["4"])


@needs_tshark
def test_quic_detail_packet_numbers_and_frame_types_equal_tshark():
    path = SAMPLES / "quic" / "aioquic-h3.pcap"
    if not path.exists():
        pytest.skip("sample_captures/quic/aioquic-h3.pcap not present")
    keys = path.with_suffix(".keys")
    an = _analysis(path, [keys])
    src = PacketSource(str(path))
    want = _tshark_fields(path, ["quic.packet_number", "quic.frame_type"], ["-o", f"tls.keylog_file:{keys}", "-E", "occurrence=a"])
    assert len(want) == an.packets
    checked = frames = 0
    for n in range(1, an.packets + 1):
        w = want[n - 1]
        if not w["quic.frame_type"]:
            continue
        got: dict = {}
        for root in packet_detail(an, src, n):
            for node in root.walk():
                if node.abbrev in ("quic.packet_number", "quic.frame_type"):
                    got.setdefault(node.abbrev, []).append(node.value)
        assert got.get("quic.packet_number") == w["quic.packet_number"].split(","), n
        assert got.get("quic.frame_type") == w["quic.frame_type"].split(","), n
        checked += 1
        frames += len(got["quic.frame_type"])
    assert checked >= 100 and frames >= 300


@needs_tshark
@pytest.mark.parametrize("name", ["spdy3-plain", "spdy3-tls"])
def test_spdy_detail_control_frame_types_equal_tshark(name):
    path = SAMPLES / "spdy" / f"{name}.pcap"
    if not path.exists():
        pytest.skip(f"{path.name} not present")
    keys = path.with_suffix(".keys")
    extra = ["-o", f"tls.keylog_file:{keys}"] if keys.exists() else []
    an = _analysis(path, [keys] if keys.exists() else [])
    src = PacketSource(str(path))
    port = an.connections[0].server[1]
    # tshark's SPDY dissector (spdy/3) needs "decode as"; over TLS, via the TLS port table
    extra += ["-d", f"tcp.port=={port},spdy"] if not keys.exists() else ["-d", f"tls.port=={port},spdy"]
    want = _tshark_fields(path, ["spdy.type"], extra + ["-E", "occurrence=a"])
    checked = 0
    for n in range(1, an.packets + 1):
        w = [x for x in want[n - 1]["spdy.type"].split(",") if x]
        got = [node.value for root in packet_detail(an, src, n) for node in root.walk() if node.abbrev == "spdy.type"]
        assert got == w, n
        checked += bool(w)
    assert checked >= 10


@needs_tshark
@pytest.mark.parametrize("rel", ["http/http1-nginx.pcap", "http/h2c-nghttp.pcap", "page/page-h1.pcapng", "spdy/spdy3.1-tls.pcap", "quic/aioquic-h3.pcap"])
@sync
async def test_tui_opens_sample_and_waterfall_shows_its_requests(rel):
    path = SAMPLES / rel
    if not path.exists():
        pytest.skip(f"{rel} not present")
    keys = sorted(path.parent.glob(path.name.split(".pcap")[0] + "*.keys"))
    extra = ["-o", f"tls.keylog_file:{keys[0]}"] if keys else []
    npk = len(_tshark_fields(path, ["frame.number"]))
    app = WirefallApp(str(path), [str(k) for k in keys])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        assert app.loaded and app.query_one(PacketList).count == npk
        if "spdy" in rel or "quic" in rel:
            want = None  # tshark 4.0 decodes neither SPDY/3.1 nor HTTP/3 request headers; compared with the client's log in their own tests
        else:
            if "h2c" in rel:
                extra += ["-d", f"tcp.port=={app.an.connections[0].server[1]},http2"]
            rows = _tshark_fields(path, ["http.request.uri", "http2.headers.path"],
                                  extra + ["-Y", "http.request || http2.headers.method", "-E", "occurrence=a", "-E", "aggregator=\x1e"])
            want = sorted(p for r in rows for p in (r["http.request.uri"] or r["http2.headers.path"]).split("\x1e") if p)
        await pilot.press("2")
        await pilot.pause(0.05)
        wv = app.query_one(WaterfallView)
        assert wv.count > 0
        shown = [wv.label_text(r) for r in wv.rows]
        if want is not None:
            got = sorted("/" + r.url.split("://", 1)[-1].split("/", 1)[-1] if "://" in r.url else r.url for r in wv.rows)
            assert got == want
        for r, line in zip(wv.rows, shown):
            assert (r.method or "") in line and str(r.status if r.status is not None else "-") in line
        await pilot.press("q")


def test_detail_and_row_never_raise_on_garbage(tmp_path):
    """Bad input never raises: truncated and random packets on every link type."""
    import random
    import struct as st

    rnd = random.Random(8)
    base = (SAMPLES / "link-sll2.pcap").read_bytes() if (SAMPLES / "link-sll2.pcap").exists() else None
    for lt in (0, 1, 101, 113, 276, 147):
        recs = []
        for i in range(60):
            n = rnd.choice([0, 1, 3, 13, 19, 20, 33, 40, 53, 60, 120])
            body = bytes(rnd.getrandbits(8) for _ in range(n))
            if lt == 1 and n >= 14 and i % 2:
                body = body[:12] + b"\x08\x00\x45" + body[15:]  # IPv4 with a random rest
            if lt == 101 and n and i % 2:
                body = bytes([0x45 if i % 4 == 1 else 0x60]) + body[1:]
            recs.append(st.pack("<IIII", 1700000000 + i, i, len(body), len(body) + i % 3) + body)
        f = tmp_path / f"garbage-{lt}.pcap"
        f.write_bytes(st.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, lt) + b"".join(recs))
        an = analyze(str(f))
        src = PacketSource(str(f))
        assert an.packets == 60
        for n in range(1, 61):
            nodes = packet_detail(an, src, n)
            assert nodes[0].find("frame.number").value == str(n)
            assert nodes[0].find("frame.cap_len").value == str(an.index.caplen[n - 1])
            row = packet_row(an, src, n)
            assert row[0] == n and row[5] == an.index.origlen[n - 1]
    if base:
        # a real packet cut short at every length
        an = _analysis(SAMPLES / "link-sll2.pcap")
        src = PacketSource(str(SAMPLES / "link-sll2.pcap"))
        data = packet_bytes(src, an, 4)

        class Cut:
            def __init__(self, k):
                self.k = k

            def read(self, off, ln):
                return data[: self.k]

        for k in range(len(data)):
            packet_detail(an, Cut(k), 4)
            packet_row(an, Cut(k), 4)


@needs_tshark
@sync
async def test_tui_search_finds_what_tshark_finds():
    path, keys = _h2_sample()
    want = [int(r["frame.number"]) for r in _tshark_fields(path, ["frame.number"], ["-Y", "tls.handshake.type == 1"])]
    assert len(want) == 2
    app = WirefallApp(str(path), [str(keys)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        pl = app.query_one(PacketList)
        await pilot.press("slash", *"client hello", "enter")
        await pilot.pause(0.05)
        assert pl.current_packet == want[0]
        await pilot.press("n")
        assert pl.current_packet == want[1]
        await pilot.press("N")
        assert pl.current_packet == want[0]


# ------------------------------------------------------------------ decrypted TLS vs tshark -x

def _tshark_data_sources(path: Path, keys: Path) -> list[list[tuple[str, bytes]]]:
    """``tshark -x`` per packet: [(source name, bytes)], e.g. ("Frame", …), ("Decrypted TLS", …).
    A packet with one source has no title line; packets are separated by a blank line."""
    # out-of-order segments reassembled, as wirefall's TCP reassembly does (lossy captures)
    out = subprocess.run([TSHARK, "-r", str(path), "-o", f"tls.keylog_file:{keys}", "-o", "tcp.reassemble_out_of_order:TRUE", "-x"],
                         capture_output=True, text=True, check=True).stdout
    pkts = []
    for block in out.split("\n\n"):
        if not block.strip():
            continue
        srcs: list = []
        cur = None
        for ln in block.splitlines():
            if re.match(r"^[0-9a-f]{4,}  ", ln):
                if cur is None:
                    cur = ["Frame", bytearray()]
                    srcs.append(cur)
                cur[1] += bytes.fromhex(ln.split("  ", 1)[1][:47].replace(" ", ""))
            elif ln.strip():
                cur = [ln.split(" (")[0], bytearray()]
                srcs.append(cur)
        pkts.append([(a, bytes(b)) for a, b in srcs])
    return pkts


DECRYPT_CASES = [
    "sample_captures/tls/tls10_cbc_sha1.pcap",  # CBC IV chained from the previous record (encrypt-then-MAC)
    "sample_captures/tls/tls11_cbc_sha1.pcap",
    "sample_captures/tls/tls12_cbc_sha256_noetm.pcap",
    "sample_captures/tls/tls12_aes128ccm.pcap",
    "sample_captures/tls/tls12_chacha20.pcap",
    "sample_captures/tls/tls12_resumed_sessionid.pcap",  # master secret of a resumed session
    "sample_captures/tls/tls13_keyupdate.pcap",  # traffic secret generations
    "sample_captures/tls/tls13_0rtt.pcap",  # early data key
    "sample_captures/page/page-h2.pcapng",
    "sample_captures/lossy/page-h1.pcapng",  # loss and reordering: records re-read from their carrier segments
    "sample_captures/lossy/page-h2.pcapng",
    "sample_captures/spdy/spdy3.1-tls.pcap",
    "shared:tls12/capture.pcap",
    "shared:tls13/capture.pcap",
]


@needs_tshark
@pytest.mark.parametrize("spec", DECRYPT_CASES)
def test_decrypted_tls_bytes_equal_tshark(spec):
    """Every "Decrypted TLS" block tshark prints equals the record wirefall decrypts again
    on demand (from the capture and the key log), packet by packet, byte by byte."""
    from wirefall.analyzer.detail import decrypted_tls

    path = _path(spec)
    if not path.exists():
        pytest.skip(f"{spec} not present")
    keys = sorted(path.parent.glob(path.name.split(".pcap")[0] + "*.keys")) or [path.parent / "keylog.txt"]
    an = analyze(str(path), [str(keys[0])])
    src = PacketSource(str(path))
    want = _tshark_data_sources(path, keys[0])
    assert len(want) == an.packets
    records = 0
    for n in range(1, an.packets + 1):
        w = [b for name, b in want[n - 1] if name == "Decrypted TLS"]
        got = decrypted_tls(an, src, n)
        assert [r.error for r in got if r.error] == [], n
        assert [r.data for r in got] == w, f"packet {n}"
        assert [r.title for r in got] == [f"Decrypted TLS ({len(b)} bytes)" for b in w]
        records += len(w)
    assert records >= 5
    # only numbers are kept per record: no plaintext in the analysis
    for tab in an.tls_records.values():
        assert all(not isinstance(getattr(tab, s), (bytes, bytearray)) for s in tab.__slots__ if s != "ref")


def test_decrypted_tls_without_key_log_is_an_error_not_a_crash():
    from wirefall.analyzer.detail import decrypted_tls

    path = SAMPLES / "tls" / "tls13_aes128gcm.pcap"
    if not path.exists():
        pytest.skip("sample absent")
    an = analyze(str(path), [str(path.with_suffix(".keys"))])
    an.keylog = None  # as an analysis loaded from the cache
    src = PacketSource(str(path))
    errs = [r.error for n in range(1, an.packets + 1) for r in decrypted_tls(an, src, n)]
    assert errs and all(e == "no key log with this analysis" for e in errs)


@needs_tshark
@sync
async def test_tui_rows_while_loading(monkeypatch):
    """The packet list shows rows as soon as packets are read: the loader is held after 40
    packets; the rows shown then are tshark's (No., source, destination, length) and the
    same as after loading; keys move and open packets meanwhile; loading then completes
    with the cursor where it was."""
    import threading

    import wirefall.analyzer.pipeline as P

    path, keys = _h2_sample()
    gate = threading.Event()
    real = P.read_batches

    def held(p, info=None, opener=None, *more):  # (more: the reader's inflate budget)
        i = 0
        for batch in real(p, info, opener, *more):
            for rec in batch:  # one record a list, so the reader stops exactly after 40
                if i == 40:
                    gate.wait(60)
                i += 1
                yield [rec]

    monkeypatch.setattr(P, "read_batches", held)
    want = _tshark_fields(path, ["frame.number", "ip.src", "ip.dst", "frame.len"], ["-o", f"tls.keylog_file:{keys}"])
    app = WirefallApp(str(path), [str(keys)])
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            pl = app.query_one(PacketList)
            for _ in range(200):
                await pilot.pause(0.05)
                if pl.count >= 39:
                    break
            # packets 1..40 were read; the 40th may still be getting frames: 39 shown
            assert not app.loaded and pl.count == 39
            assert not app.query_one("#progress").has_class("-done")
            early = [pl.cached_line(i)[0] for i in range(pl.count)]
            for line, w in zip(early, want):
                cols = line.split()
                assert (cols[0], cols[2], cols[3], cols[5]) == (w["frame.number"], w["ip.src"], w["ip.dst"], w["frame.len"])
            assert any(" HTTP2 " in ln for ln in early) and any(" TLSv1.3 " in ln for ln in early)
            await pilot.press("down", "down", "down", "down")
            assert pl.current_packet == 5 and not app.loaded
            from textual.widgets import Tree

            tree = app.query_one("#detail", Tree)
            assert tree.root.children[0].label.plain.startswith(f"Frame 5: {want[4]['frame.len']} bytes on wire")
            await pilot.press("end")
            assert pl.current_packet == 39
            gate.set()
            await wait_loaded(pilot, app)
            assert app.loaded and pl.count == len(want) == app.an.packets
            assert pl.current_packet == 39  # the cursor stayed
            assert [pl.cached_line(i)[0] for i in range(39)] == early  # rows drawn while loading were right
    finally:
        gate.set()


@needs_tshark
@sync
async def test_tui_filter_bar_filters_the_current_tab_only():
    """One filter bar, labelled with what it filters; each tab keeps its own filter."""
    path, keys = _h2_sample()
    kl = ["-o", f"tls.keylog_file:{keys}"]
    want_pk = [int(r["frame.number"]) for r in _tshark_fields(path, ["frame.number"], kl + ["-Y", "http2.type==1"])]
    paths = [r["http2.headers.path"] for r in _tshark_fields(path, ["http2.headers.path"], kl + ["-Y", "http2.headers.method"])]
    css = sorted(p for p in paths if "css" in p)
    assert len(paths) == 13 and len(css) == 2
    app = WirefallApp(str(path), [str(keys)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        label = app.query_one("#filter-label")
        inp = app.query_one("#filter")
        pl = app.query_one(PacketList)
        wv = app.query_one(WaterfallView)
        assert str(label.render()) == "Filter packets:"
        await pilot.press("f")
        inp.value = 'type == "HEADERS"'
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.05)
            if pl.count != app.an.packets:
                break
        assert list(pl.packets) == want_pk
        await pilot.press("2")
        await pilot.pause(0.05)
        assert str(label.render()) == "Filter requests:" and inp.value == ""
        assert wv.count == 13  # the packet filter does not touch the waterfall
        await pilot.press("f")
        inp.value = 'url contains "css"'
        await pilot.press("enter")
        await pilot.pause(0.05)
        assert sorted("/" + r.url.split("://", 1)[-1].split("/", 1)[-1] for r in wv.rows) == css
        assert list(pl.packets) == want_pk  # nor the waterfall filter the packets
        await pilot.press("1")
        await pilot.pause(0.05)
        assert str(label.render()) == "Filter packets:" and inp.value == 'type == "HEADERS"'
        await pilot.press("3")
        await pilot.pause(0.05)
        assert str(label.render()) == "Filter connections:" and inp.value == ""
        await pilot.press("4")
        await pilot.pause(0.05)
        assert str(label.render()) == "Filter: —" and inp.disabled
        await pilot.press("2")
        await pilot.pause(0.05)
        assert inp.value == 'url contains "css"' and wv.count == 2
        await pilot.press("f")
        inp.value = ""
        await pilot.press("enter")
        await pilot.pause(0.05)
        assert wv.count == 13 and list(pl.packets) == want_pk  # cleared here only


@needs_tshark
@sync
async def test_tui_waterfall_groups_by_connection_as_tshark_streams():
    """``c`` groups the waterfall by connection: each group is the requests tshark sees on
    one TCP stream, in order of first use, each in start order; ``c`` again ungroups."""
    path = SAMPLES / "page" / "page-h1.pcapng"
    if not path.exists():
        pytest.skip("page-h1 sample absent")
    keys = path.with_suffix(".keys")
    rows = _tshark_fields(path, ["frame.number", "tcp.stream", "http.request.uri"], ["-o", f"tls.keylog_file:{keys}", "-Y", "http.request"])
    streams: dict = {}
    for r in rows:  # tshark's requests in packet order, grouped by stream in order of first use
        streams.setdefault(r["tcp.stream"], []).append(r["http.request.uri"])
    want = [u for s in streams.values() for u in s]
    assert len(streams) >= 4 and len(want) == 13
    app = WirefallApp(str(path), [str(keys)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.05)
        wv = app.query_one(WaterfallView)
        by_start = [r.exchange for r in wv.rows]
        await pilot.press("c")
        for _ in range(100):
            await pilot.pause(0.05)
            if wv.group_by == "connection":
                break
        assert wv.group_by == "connection"
        got = ["/" + r.url.split("://", 1)[-1].split("/", 1)[-1] for r in wv.rows]
        assert got == want
        # one bracket per connection, with its id, as the connections tab numbers them
        conn_of = [r.connection for r in wv.rows]
        groups = [conn_of[0]] + [c for a, c in zip(conn_of, conn_of[1:]) if c != a]
        assert len(groups) == len(set(groups)) == len(streams)
        for i, r in enumerate(wv.rows):
            lab = wv.label_text(r)
            assert lab[0] in "┌│└─" and lab[1:4].strip() == str(r.connection)
            first = i == 0 or conn_of[i - 1] != r.connection
            assert (lab[0] in "┌─") == first
        assert "conn" in str(app.query_one("#wf-axis").render())
        await pilot.press("c")
        await pilot.pause(0.1)
        assert wv.group_by is None and [r.exchange for r in wv.rows] == by_start


# ------------------------------------------------------------------ compare view (ui/tui/compare.py)

from textual.widgets import DataTable, Input  # noqa: E402

from wirefall.ui.tui.compare import CompareDialog, CompareScreen, CompareWaterfall  # noqa: E402

PAGE = SAMPLES / "page"


def _page(name: str) -> tuple[Path, Path]:
    return PAGE / f"{name}.pcapng", PAGE / f"{name}.keys"


def _page_urls() -> list[str]:
    """The page's requests as the capture lab wrote them (manifest.json)."""
    return json.loads((PAGE / "manifest.json").read_text())["page"]["requests"]


def _tshark_request_starts(name: str) -> dict[str, list[float]] | None:
    """path -> times (s from the first packet) of the packets where tshark shows the
    requests (HTTP/1 request line, HTTP/2 HEADERS, SPDY SYN_STREAM); None where tshark 4.0
    cannot give them (HTTP/3: no QPACK)."""
    path, keys = _page(name)
    opt = ["-o", f"tls.keylog_file:{keys}", "-E", "aggregator=\x1f"]
    out: dict[str, list[float]] = {}
    if name == "page-h1":
        for r in _tshark_fields(path, ["frame.time_relative", "http.request.uri"], opt + ["-Y", "http.request"]):
            out.setdefault(r["http.request.uri"], []).append(float(r["frame.time_relative"]))
    elif name == "page-h2":
        for r in _tshark_fields(path, ["frame.time_relative", "http2.headers.path"], opt + ["-Y", "http2.headers.method"]):
            for p in r["http2.headers.path"].split("\x1f"):
                out.setdefault(p, []).append(float(r["frame.time_relative"]))
    elif name == "page-spdy":
        for r in _tshark_fields(path, ["frame.time_relative", "spdy.header.name", "spdy.header.value"], opt + ["-Y", "spdy.type == 1"]):
            for k, v in zip(r["spdy.header.name"].split("\x1f"), r["spdy.header.value"].split("\x1f")):
                if k == ":path":
                    out.setdefault(v, []).append(float(r["frame.time_relative"]))
    else:
        return None
    return out


def _num(s: str):
    s = s.replace(",", "").replace(" %", "").replace(" pt", "").strip()
    return None if s == "–" else float(s)


def _check_compare_screen(scr: CompareScreen, res: dict, tshark_a, tshark_b) -> None:
    """The table shows compare()'s numbers; every URL of the page is one matched row; request
    starts equal tshark's request packets' times."""
    from wirefall.analyzer.compare import PAGE_ROWS, render_text

    dt = scr.query_one("#cmp-page", DataTable)
    # the rows `wirefall compare` prints for the pair (its text: after the table's ruler, a line per
    # row shown, in PAGE_ROWS' order — three rows share a label — until the notes): the browser's
    # page events and a HAR page's figures only where a side has them
    lines = render_text(res).splitlines()
    ruler = next(i for i, ln in enumerate(lines) if ln.startswith("---"))
    cli: list[tuple[str, str]] = []
    rest = list(PAGE_ROWS)
    for ln in lines[ruler + 1:]:
        at = next((j for j, (_, lab) in enumerate(rest) if ln.startswith(lab + "  ")), None)
        if at is None:
            break
        cli.append(rest[at])
        rest = rest[at + 1:]
    assert dt.row_count == len(cli), ([str(dt.get_row_at(i)[0]) for i in range(dt.row_count)], cli)
    for i, (key, label) in enumerate(cli):
        cells = [str(c) for c in dt.get_row_at(i)]
        assert cells[0] == label
        p = res["page"][key]
        pct = key.endswith("compression")
        for txt, v, kind in ((cells[1], p["a"], "v"), (cells[2], p["b"], "v"), (cells[3], p["diff"], "v"), (cells[4], p["speedup"], "s")):
            got = _num(txt)
            if v is None:
                assert got is None, (label, txt)
                continue
            assert got is not None, (label, txt, v)
            if kind == "s" or pct:
                assert abs(got - 100 * v) <= 0.05 + 1e-9, (label, txt, v)
            elif isinstance(v, float):
                assert abs(got - v) <= 0.0005 + 1e-9, (label, txt, v)
            else:
                assert got == v, (label, txt, v)
    assert res["page"]["requests"]["a"] == res["page"]["requests"]["b"] == len(_page_urls())
    rq = scr.query_one("#cmp-requests", DataTable)
    rows = [[str(c) for c in rq.get_row_at(i)] for i in range(rq.row_count)]
    urls = [r[0] for r in rows]
    assert sorted(urls) == sorted(_page_urls())  # each URL of the page once, all matched (no A only / B only rows)
    assert len(res["matched"]) == len(_page_urls()) and not res["only_a"] and not res["only_b"]
    for r, m in zip(rows, res["matched"]):
        assert r[0] == m["url"]
        a, b, d = m["a"], m["b"], m["diff"]
        for col, v in ((3, a["start"]), (4, b["start"]), (5, d["start"]), (6, a["ttfb"]), (7, b["ttfb"]), (8, d["ttfb"]),
                       (9, a["duration"]), (10, b["duration"]), (11, d["duration"])):
            assert abs(_num(r[col]) - 1000 * v) <= 0.05 + 1e-9, (r[0], REQ_COL(col), r[col], v)
        assert (_num(r[12]), _num(r[13]), _num(r[14])) == (a["bytes"], b["bytes"], d["bytes"])
        for col, truth in ((3, tshark_a), (4, tshark_b)):
            if truth is not None:
                times = truth[r[0]]
                assert len(times) == 1 and abs(_num(r[col]) - 1000 * times[0]) <= 0.051, (r[0], r[col], times)
    warn = str(scr.query_one("#cmp-warnings").render())
    assert f"match mode: {res['match_mode']}" in warn
    for w in res["warnings"]:
        assert w in warn


def REQ_COL(i: int) -> str:
    from wirefall.ui.tui.compare import REQUEST_COLUMNS

    return REQUEST_COLUMNS[i]


def _check_bars(wv: CompareWaterfall, res: dict) -> int:
    """Each side's bar covers the column of that side's request start (ms from its own first
    packet on the shared ms-per-column scale) and reaches its response end; returns the
    number of sides checked."""
    checked = 0
    bw = wv.side_width
    for i, m in enumerate(res["matched"]):
        assert wv.rows[i].label == m["url"]
        for side, bar in zip(("a", "b"), wv.bar_texts(i)):
            assert len(bar) == bw
            s = m[side]["start"]
            e = s + (m[side]["duration"] or 0.0)
            if not (wv.v0 <= s < wv.v1):
                continue
            col = wv.column(s)
            assert bar[col] != " ", (m["url"], side, col, bar)
            first = len(bar) - len(bar.lstrip())
            assert first <= col, (m["url"], side)
            if e < wv.v1:
                last = len(bar.rstrip()) - 1
                assert last >= wv.column(e) - 1, (m["url"], side, last, wv.column(e))
            checked += 1
    return checked


async def _check_waterfall_tab(pilot, scr: CompareScreen, res: dict) -> None:
    await pilot.press("2")
    await pilot.pause(0.1)
    wv = scr.query_one(CompareWaterfall)
    assert scr.app.focused is wv
    assert wv.count == len(res["matched"]) + len(res["only_a"]) + len(res["only_b"])
    assert (wv.v0, wv.v1) == (0.0, wv.full)
    # the window covers both pages to their last response, each from its own first packet
    ends = [m[s]["start"] + m[s]["duration"] for m in res["matched"] for s in "ab" if m[s]["duration"] is not None]
    assert wv.full >= max(ends) - 1e-9
    assert _check_bars(wv, res) == 2 * len(res["matched"])
    axis = str(scr.query_one("#cmp-wf-axis").render())
    half = wv.side_width
    left, right = axis[wv.LABEL + 1: wv.LABEL + 1 + half], axis[wv.LABEL + 2 + half: wv.LABEL + 2 + 2 * half]
    assert left == right and left.startswith("┊0ms")  # one scale for both sides
    head = str(scr.query_one("#cmp-wf-head").render())
    assert res["a"]["protocols"][0] in head and res["b"]["protocols"][0] in head
    full = wv.full
    await pilot.press("down", "down", "down", "plus")
    assert abs((wv.v1 - wv.v0) - full / 2) < 1e-9
    await pilot.press("plus")
    assert abs((wv.v1 - wv.v0) - full / 4) < 1e-9
    m = res["matched"][3]
    assert wv.v0 <= m["a"]["start"] <= wv.v1  # zoom keeps the selected row's request (A's at least) in view
    if abs(m["b"]["start"] - m["a"]["start"]) < (wv.v1 - wv.v0) / 2:
        assert wv.v0 <= m["b"]["start"] <= wv.v1
    assert _check_bars(wv, res) >= 1
    v0 = wv.v0
    await pilot.press("right")
    assert wv.v0 > v0 or abs(wv.v1 - wv.full) < 1e-12
    _check_bars(wv, res)
    await pilot.press("0")
    assert (wv.v0, wv.v1) == (0.0, full)
    await pilot.press("enter")
    await pilot.pause(0.1)
    assert isinstance(scr.app.screen, TextScreen)
    body = scr.app.screen.body.plain
    m = res["matched"][3]
    assert body.count("Request headers") == 2 and m["a"]["url"] in body and m["b"]["url"] in body
    await pilot.press("escape")
    assert scr.app.screen is scr


@needs_tshark
@sync
async def test_tui_compare_h1_h2_from_cli_option():
    """`wirefall tui page-h1 --compare page-h2`: table = compare()'s figures, request starts
    = tshark's request packets, bars at each side's request start."""
    from wirefall.analyzer.compare import compare

    (pa, ka), (pb, kb) = _page("page-h1"), _page("page-h2")
    res = compare(_analysis(pa, [ka]), _analysis(pb, [ka, kb]))
    app = WirefallApp(str(pa), [str(ka)], compare=str(pb), keylogs_b=[str(kb)])
    async with app.run_test(size=(160, 48)) as pilot:
        scr = await wait_compare(pilot, app)
        assert scr.error is None and scr.loaded
        _check_compare_screen(scr, res, _tshark_request_starts("page-h1"), _tshark_request_starts("page-h2"))
        await _check_waterfall_tab(pilot, scr, res)
        await pilot.press("escape")
        await wait_loaded(pilot, app)
        # A read by the compare view is the main view's capture (not read twice)
        assert app.loaded and app.an is scr.an_a and app.query_one(PacketList).count == app.an.packets


@needs_tshark
@pytest.mark.parametrize("name", ["page-spdy", "page-h3"])
@sync
async def test_tui_compare_key_opens_second_capture(name):
    """Key C in the TUI asks for capture B and its key log, then compares."""
    from wirefall.analyzer.compare import compare

    (pa, ka), (pb, kb) = _page("page-h2"), _page(name)
    res = compare(_analysis(pa, [ka]), _analysis(pb, [ka, kb]))
    app = WirefallApp(str(pa), [str(ka)])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("C")
        await pilot.pause(0.05)
        assert isinstance(app.screen, CompareDialog)
        app.screen.query_one("#cmp-path", Input).value = str(pb) + ".missing"
        await pilot.press("enter")
        await pilot.press("enter")
        await pilot.pause(0.05)
        assert isinstance(app.screen, CompareDialog)
        assert "no such file" in str(app.screen.query_one("#cmp-dialog-error").render())
        app.screen.query_one("#cmp-path", Input).value = str(pb)
        app.screen.query_one("#cmp-keylog", Input).value = str(kb)
        app.screen.query_one("#cmp-keylog", Input).focus()
        await pilot.press("enter")
        scr = await wait_compare(pilot, app)
        assert scr.error is None and scr.an_a is app.an  # A is the loaded capture
        _check_compare_screen(scr, res, _tshark_request_starts("page-h2"), _tshark_request_starts(name))
        await _check_waterfall_tab(pilot, scr, res)


@sync
async def test_tui_compare_bad_capture_is_a_notice(tmp_path):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\xd4\xc3\xb2\xa1garbage")
    pa, ka = _page("page-h1")
    app = WirefallApp(str(pa), [str(ka)], compare=str(bad))
    async with app.run_test(size=(160, 48)) as pilot:
        scr = await wait_compare(pilot, app)
        assert scr.error and "cannot open B" in scr.error
        assert "error:" in str(scr.query_one("#cmp-status").render())
        await pilot.press("escape")
        await wait_loaded(pilot, app)
        assert app.loaded and app.an.packets > 0  # A was read and is shown
    app = WirefallApp(str(bad), [], compare=str(pa))
    async with app.run_test(size=(160, 48)) as pilot:
        scr = await wait_compare(pilot, app)
        assert scr.error and "cannot open A" in scr.error
        await pilot.press("escape")
        await pilot.pause(0.05)
        assert app.load_error


def _snap_compare_app(monkeypatch):
    monkeypatch.chdir(ROOT)
    (pa, ka), (pb, kb) = _page("page-h1"), _page("page-h2")
    rel = lambda p: str(p.relative_to(ROOT))  # noqa: E731 - no machine path on screen
    return WirefallApp(rel(pa), [rel(ka)], compare=rel(pb), keylogs_b=[rel(kb)])


async def _snap_wait(pilot):
    app = pilot.app
    for _ in range(300):
        await pilot.pause(0.05)
        if isinstance(app.screen, CompareScreen) and app.screen.loaded and app.loaded:
            break
    await pilot.pause()


@needs_snap
def test_snapshot_compare_table(snap_compare, monkeypatch):
    assert snap_compare(_snap_compare_app(monkeypatch), terminal_size=SNAP_SIZE, run_before=_snap_wait)


@needs_snap
def test_snapshot_compare_waterfalls(snap_compare, monkeypatch):
    async def before(pilot):
        await _snap_wait(pilot)
        await pilot.press("2", "down", "down", "down")
        await pilot.pause()

    assert snap_compare(_snap_compare_app(monkeypatch), terminal_size=SNAP_SIZE, run_before=before)


@sync
async def test_tui_cache_reopens_without_analysing_again(tmp_path, monkeypatch):
    """`wirefall tui FILE --cache`: the first opening analyses and stores, the second shows the
    same packets and requests from the cache without running the analysis."""
    import wirefall.analyzer.pipeline
    from wirefall.ui import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path, keys = _h2_sample()
    seen = {}
    monkeypatch.setattr("wirefall.ui.tui.run", lambda *a, **kw: seen.update(kw) or 0)
    assert cli.main(["tui", str(path), "--keylog", str(keys), "--cache"]) == 0 and seen["use_cache"] is True
    assert cli.main([str(path), "--keylog", str(keys)]) == 0 and seen["use_cache"] is False

    real, calls = wirefall.analyzer.pipeline.analyze, []
    monkeypatch.setattr(wirefall.analyzer.pipeline, "analyze", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    shown = []
    for _ in range(2):
        app = WirefallApp(str(path), [str(keys)], use_cache=True)
        async with app.run_test(size=(200, 50)) as pilot:
            await wait_loaded(pilot, app)
            assert app.loaded and app.load_error is None
            pl = app.query_one(PacketList)
            shown.append((pl.count, pl.visible_lines(), len(app.an.exchanges), len(app.an.frames)))
    assert calls == [1]  # analysed once, then read from the cache
    assert shown[0] == shown[1] and shown[0][0] == 75 and shown[0][2] == 13


@sync
async def test_tui_cache_first_screen_leaves_the_requests_packed(tmp_path, monkeypatch):
    """A reopened analysis whose views are deferred (DEFER_VIEWS_REQUESTS, made 1 here) shows its
    first screen — packets, status line, connections table with each connection's requests —
    from the frames and the counts stored in the summary part, without unpacking the requests
    (analyzer.cache BODY_PARTS: 0.6 s of a 60 k-request capture's first screen); opening the
    waterfall unpacks them, and its rows are the fresh analysis's."""
    from textual.widgets import DataTable

    import wirefall.ui.tui.app as tui_app

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(tui_app, "DEFER_VIEWS_REQUESTS", 1)
    path, keys = _h2_sample()
    seen = []
    for _ in range(2):
        app = WirefallApp(str(path), [str(keys)], use_cache=True)
        async with app.run_test(size=(200, 50)) as pilot:
            await wait_loaded(pilot, app)
            await pilot.pause()
            assert app.loaded and app.views_pending == {"waterfall", "statistics"}
            packed = "exchanges" not in app.an.__dict__
            status = str(app.query_one("#status").render())
            dt = app.query_one("#connections", DataTable)
            cols = [str(c.label) for c in dt.columns.values()]
            per_conn = {str(dt.get_row_at(i)[0]): str(dt.get_row_at(i)[cols.index("requests")]) for i in range(dt.row_count)}
            lines = app.query_one(PacketList).visible_lines()
            await pilot.press("2")
            for _ in range(200):
                if "waterfall" not in app.views_pending:
                    break
                await pilot.pause(0.02)
            await pilot.pause()
            rows = [r.exchange for r in app.wf.rows]
            seen.append((packed, status, per_conn, lines, rows, app.an.count("exchanges")))
    fresh, reopened = seen
    assert not fresh[0] and reopened[0]  # the second opening drew its first screen with the requests still packed
    assert "13 requests" in fresh[1] and fresh[1:] == reopened[1:]
    assert sorted(int(v) for v in fresh[2].values()) == [0, 13] and fresh[4] and fresh[5] == 13  # (two connections: one carries them)


@pytest.mark.parametrize("rel", ["link-sll.pcap", "page/page-h2.pcapng", "page/page-h3.pcapng", "page/bg-mixed.pcapng"])
def test_index_record_is_the_packet_record_without_what_needs_the_frames(rel):
    """A row drawn from the packet index (`widgets.index_record`, a reopened capture's first
    screen) is the packet record in every column the index and the packet's own headers give —
    number, times, addresses, length, connection — with the Info pending and no colouring rule;
    its protocol is the index's, the highest layer the analysis saw in the packet, which the
    final row names the same way (with TLS's version), except where the protocol's message ends
    on another packet (an HTTP/1 head or body segment: TCP in the final column, as tshark's; an
    HTTP/3 frame and its QUIC packet)."""
    from wirefall.analyzer.packet_record import packet_record
    from wirefall.ui.tui.widgets import INFO_PENDING, index_record

    path = SAMPLES / rel
    keys = path.with_suffix(".keys")
    an = _analysis(path, [keys] if keys.exists() else None)
    src = PacketSource(str(path))
    elsewhere = {("HTTP", "TCP"), ("HTTP3", "QUIC"), ("QUIC", "HTTP3")}
    for n in range(1, an.packets + 1):
        rec, want = index_record(an, src, n), packet_record(an, src, n)
        assert (rec.number, rec.time, rec.relative, rec.delta, rec.source, rec.destination, rec.length, rec.connection) == \
               (want.number, want.time, want.relative, want.delta, want.source, want.destination, want.length, want.connection)
        assert rec.info == INFO_PENDING and rec.colour is None
        assert want.protocol.startswith(rec.protocol) or (rec.protocol, want.protocol) in elsewhere, (n, rec.protocol, want.protocol)


@sync
async def test_tui_cache_shows_rows_from_the_packet_index_before_the_frames(tmp_path, monkeypatch):
    """A capture reopened from the cache (`tui --cache`) shows its packet list at once from the
    packet index — number, time, addresses, the protocol the index names, length — with every
    Info saying it is pending, before its frames are unpacked: the loader unpacks them after
    (held back here until the rows are looked at), never the UI thread, and keys move through
    the rows meanwhile (the packet's detail says it follows).  Once the frames are read, the rows
    are those of the fresh analysis, Info included."""
    import threading

    from wirefall.analyzer import cache
    from wirefall.analyzer.colouring import Colourer
    from wirefall.analyzer.packet_record import packet_record
    from wirefall.ui.tui.widgets import INFO_PENDING

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path, keys = _h2_sample()
    fresh, hit = cache.analyze_cached(str(path), [str(keys)])  # (stored now)
    assert not hit
    src = PacketSource(str(path))
    release, asked = threading.Event(), []  # asked: whether each request for the frames came from the UI thread
    unpack = cache._PartLoader.__call__

    def held(loader, name):
        if cache.PART_OF[name] == "frames":
            asked.append(threading.current_thread() is threading.main_thread())  # (run_test runs the app here)
            if not asked[-1]:
                release.wait(30)
        return unpack(loader, name)

    monkeypatch.setattr(cache._PartLoader, "__call__", held)
    app = WirefallApp(str(path), [str(keys)], use_cache=True)
    async with app.run_test(size=(200, 50)) as pilot:
        pl = app.query_one(PacketList)
        for _ in range(300):
            await pilot.pause(0.02)
            if pl.count:
                break
        await pilot.pause()
        assert pl.count == fresh.packets and not app.loaded and "frames" not in app.an.__dict__
        lines = pl.visible_lines()
        assert len(lines) >= 20 and all(INFO_PENDING in line for line in lines)
        for i in range(len(lines)):
            rec, want = pl.record(i), packet_record(fresh, src, i + 1)
            assert (rec.number, rec.time, rec.source, rec.destination, rec.length, rec.connection) == \
                   (want.number, want.time, want.source, want.destination, want.length, want.connection)
            assert want.protocol.startswith(rec.protocol), (i + 1, rec.protocol, want.protocol)  # (TLS → TLSv1.3)
            assert rec.info == INFO_PENDING and INFO_PENDING not in want.info
        await pilot.press("down", "down")
        await pilot.pause()
        assert pl.current_packet == 3 and not app.loaded
        tree = app.query_one("#detail")
        assert "follows once the frames are read" in str(tree.root.children[0].label)
        assert app.query_one(HexView).data == packet_bytes(src, fresh, 3)
        release.set()
        await wait_loaded(pilot, app, must_load=True)
        await pilot.pause()
        assert pl.current_packet == 3  # (the cursor kept where the keys put it)
        colours = Colourer(fresh, src)
        assert [(r.row(), r.colour) for r in (pl.record(i) for i in range(len(lines)))] == \
               [(w.row(), w.colour) for w in (packet_record(fresh, src, i + 1, colours) for i in range(len(lines)))]
        assert not any(INFO_PENDING in line for line in pl.visible_lines())
        assert str(tree.root.children[0].label).startswith("Frame 3:")
    assert asked and not any(asked)
