"""Colouring rules (analyzer.colouring) against tshark 4.0's default profile, packet by packet.

``tshark --color -T fields -e frame.coloring_rule.name`` names the rule Wireshark's default
colorfilters give each packet; wirefall's rule must be the same for every packet of the lossy
page loads (Bad TCP, TCP RST, SYN/FIN…), other real samples (HTTP over h2c and TLS, QUIC as
UDP, cooked and raw link types, port reuse), captures made lossy and reordered, and a capture
scripts/crosscheck/make_colouring_capture.py builds to reach ARP, ICMP (errors), Routing, TTL
and Broadcast beside an HTTP/1.1 exchange that must still decode.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wirefall.analyzer import colouring  # noqa: E402
from wirefall.analyzer.capture import PacketSource  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402
from scripts.crosscheck import make_colouring_capture as mkc  # noqa: E402
from scripts.crosscheck import make_tcp_analysis_captures as mk  # noqa: E402

SAMPLES = ROOT / "sample_captures"
pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
COLORFILTERS = Path("/usr/share/wireshark/colorfilters")


def _keys(path: Path) -> Path | None:
    k = path.with_suffix(".keys")
    return k if k.exists() else None


@cache
def _analysis(path: str):
    k = _keys(Path(path))
    return analyze(path, [str(k)] if k else None)


def _tshark_rules(path: Path) -> list[str]:
    from wirefall.oracle.crosscheck import PROTOCOLS

    an = _analysis(str(path))
    cmd = ["tshark", "-n", "--color", "-r", str(path), "-T", "fields", "-e", "frame.coloring_rule.name"]
    k = _keys(path)
    if k:
        cmd += ["-o", f"tls.keylog_file:{k}"]
    for spec in PROTOCOLS.values():  # the decode-as ports oracle/crosscheck.py gives tshark (h2c on any port…)
        cmd += list(spec.decode_as(an)) + list(spec.args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True).stdout.split("\n")[:-1]


def _ours(path: Path) -> list[str]:
    an = _analysis(str(path))
    src = PacketSource(str(path))
    try:
        c = colouring.Colourer(an, src)
        return [(c.colour(n) or ("",))[0] for n in range(1, an.packets + 1)]
    finally:
        src.close()


def _compare(path: Path) -> list[str]:
    theirs, ours = _tshark_rules(path), _ours(path)
    assert len(theirs) == len(ours)
    return [f"packet {i + 1}: wirefall {a!r}, tshark {b!r}" for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]


def test_rules_are_wiresharks_default_colorfilters():
    if not COLORFILTERS.exists():
        pytest.skip("Wireshark's colorfilters not installed")
    theirs = colouring.parse_colorfilters(COLORFILTERS.read_text())
    assert [(r.name, r.wireshark, r.fg, r.bg) for r in colouring.RULES] == theirs
    bad_tcp = colouring.RULES[colouring.BY_NAME["Bad TCP"]]
    assert (bad_tcp.fg, bad_tcp.bg) == ("#f78787", "#12272e")


# the HTTP/1 samples http1-nginx and http1-node are left out: a pipelined HEAD and a
# close-delimited body put the HTTP message on another packet in tshark (the crosscheck Spec
# for HTTP/1 sets these aside), which moves the "HTTP" rule by one packet
REAL = [SAMPLES / "lossy" / f"page-{p}.pcapng" for p in ("h1", "h2", "spdy", "h3")] + [
    SAMPLES / "page" / "page-h2.pcapng", SAMPLES / "page" / "page-h1c.pcapng", SAMPLES / "tcp-port-reuse.pcap",
    SAMPLES / "http" / "h2c-node.pcap", SAMPLES / "http" / "h2-tls.pcap", SAMPLES / "link-sll.pcap", SAMPLES / "link-raw.pcap",
    SAMPLES / "spdy" / "spdy3-tls.pcap"]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_rule_per_packet_equals_tsharks(path):
    bad = _compare(path)
    assert not bad, f"{path.name}: {len(bad)} packets differ:\n" + "\n".join(bad[:20])


def test_lossy_samples_reach_the_tcp_rules():
    seen = set()
    for p in REAL[:4]:
        seen |= set(_ours(p))
    assert {"Bad TCP", "TCP RST", "TCP SYN/FIN", "TCP", "HTTP", "UDP"} <= seen


def test_reordered_captures_and_crafted_rules(tmp_path):
    paths = [mk.derive(SAMPLES / "lossy" / "page-h2.pcapng", tmp_path / "h2-mixed.pcap", drop_every=11, swap_every=4, dup_every=9),
             mk.scenarios(tmp_path / "tcp-scenarios.pcap")]
    crafted = tmp_path / "colouring.pcap"
    mkc.write(str(crafted))
    paths.append(crafted)
    for p in paths:
        bad = _compare(p)
        assert not bad, f"{p.name}: {len(bad)} packets differ:\n" + "\n".join(bad[:20])
    got = set(_ours(crafted))
    assert {"ARP", "ICMP", "ICMP errors", "Routing", "TTL low or unexpected", "Broadcast", "HTTP", "TCP RST", "TCP SYN/FIN", "UDP"} <= got
    an = _analysis(str(crafted))  # the HTTP/1.1 exchange among them decodes
    assert [(e.method, e.path, e.status, e.response_body_bytes) for e in an.exchanges] == [("GET", "/index.html", 200, len(mkc.BODY))]


def test_colours_for_and_lazy_colouring():
    path = SAMPLES / "lossy" / "page-h2.pcapng"
    an = analyze(str(path), [str(_keys(path))])
    theirs = _tshark_rules(path)
    nums = [1, 31, 74, 200, an.packets]
    got = colouring.colours_for(an, nums)
    assert [g[0] if g else "" for g in got] == [theirs[n - 1] for n in nums]
    rule = colouring.RULES[colouring.BY_NAME[got[1][0]]]
    assert got[1] == (rule.name, rule.fg, rule.bg)
    # one row of a fresh analysis is coloured without colouring the others (cached per packet)
    an2 = analyze(str(path), [str(_keys(path))])
    src = PacketSource(str(path))
    try:
        c = colouring.colourer(an2, src)
        t = time.perf_counter()
        c.colour(5)
        assert list(c._cache) == [5] and time.perf_counter() - t < 5
        assert colouring.colourer(an2, src) is c
    finally:
        src.close()


def test_tui_rows_take_the_rules_colours_and_L_shows_the_key():
    import asyncio

    from wirefall.ui.tui.app import TextScreen, WirefallApp
    from wirefall.ui.tui.widgets import PacketList

    path = SAMPLES / "lossy" / "page-h2.pcapng"
    theirs = _tshark_rules(path)

    async def run():
        app = WirefallApp(str(path), [str(_keys(path))])
        async with app.run_test(size=(200, 50)) as pilot:
            for _ in range(300):
                await pilot.pause(0.05)
                if app.loaded or app.load_error:
                    break
            pl = app.query_one(PacketList)
            for n in (1, 4, 31, 74):  # SYN/FIN, TCP, TCP RST, Bad TCP in tshark's colours
                r = colouring.RULES[colouring.BY_NAME[theirs[n - 1]]]
                _, style = pl.line(n - 1)
                assert (style.bgcolor.name, style.color.name) == (r.bg, r.fg), (n, r.name)
            await pilot.press("L")
            await pilot.pause(0.1)
            assert isinstance(app.screen, TextScreen)
            text = app.screen.body.plain
            assert all(r.name in text for r in colouring.RULES if r.evaluated)

    asyncio.run(run())
