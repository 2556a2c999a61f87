"""The waterfall's throughput track is the same however often it is built, and is tshark's.

Before: it took packets' directions from tshark's TCP conversations only where that analysis
had finished, and the waterfall's own loss markers computed it after the track: a capture's
first waterfall lacked the bytes of the packets the segment maps do not hold (handshakes),
its second had them (tls13_0rtt: 140 bytes each way in its first bin) — `export png` and the
TUI drew two tracks for one capture."""
from __future__ import annotations

import pytest

from conftest import SAMPLES, need_tool, run_tool


@pytest.mark.parametrize("name", ["tls/tls13_0rtt", "tls/tls13_keyupdate"])
def test_first_build_is_the_second_and_tsharks(name):
    need_tool("tshark")
    from wirefall.analyzer import waterfall
    from wirefall.analyzer.pipeline import analyze

    cap, keys = SAMPLES / f"{name}.pcap", SAMPLES / f"{name}.keys"
    an = analyze(str(cap), keylogs=[str(keys)] if keys.exists() else [])
    first = waterfall.build(an).throughput
    second = waterfall.build(an).throughput
    assert (first.down, first.up) == (second.down, second.up)
    servers = {(c.server[0], c.server[1]) for c in an.connections if c.transport == "tcp"}
    down, up = [0] * len(first.down), [0] * len(first.up)
    out = run_tool("tshark", "-r", str(cap), "-Y", "tcp", "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.len",
                   "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport")
    for line in out.splitlines():
        t, ln, s4, s6, sp = line.split("\t")
        k = min(int((float(t) - first.t0) / first.bin), len(down) - 1)
        (down if ((s4 or s6), int(sp)) in servers else up)[k] += int(ln)
    assert (first.down, first.up) == (down, up)
