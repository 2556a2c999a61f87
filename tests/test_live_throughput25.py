"""While a live pass reads a capture, the throughput strip counts what was read so far (review
24: the live web view's strip stayed empty until Stop — the TCP offset maps it reads were set
only when the pass ended).  The pass is paused mid-file through its opener, as a live capture's
FollowFile pauses it; the truth is tshark's frame lengths of the TCP packets read so far, per
direction (since review 29 every TCP packet, ACKs and handshakes too, as the finished track
counts them: the track takes directions from the TCP analysis the loss markers use)."""
from __future__ import annotations

import io
import shutil
import subprocess

import pytest

from conftest import SAMPLES
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.waterfall import throughput

CAP = SAMPLES / "http" / "h2c-node.pcap"


class _Slow(io.RawIOBase):
    """The file in 4 KiB reads; at read ``at``, ``check()`` runs (the pass is between packets)."""

    def __init__(self, data: bytes, at: int, check):
        self.f, self.k, self.at, self.check = io.BytesIO(data), 0, at, check

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        self.k += 1
        if self.k == self.at:
            self.check()
        return self.f.readinto(memoryview(b)[:4096])


@pytest.mark.skipif(not shutil.which("tshark"), reason="tshark not installed")
def test_throughput_counts_what_a_live_pass_has_read():
    if not CAP.exists():
        pytest.skip(f"{CAP} missing")
    data = CAP.read_bytes()
    seen: dict = {}
    box: list = []

    def check():
        an = box[0]
        seen["packets"] = len(an.index)
        seen["tp"] = throughput(an)

    an = analyze(str(CAP), on_start=box.append, opener=lambda _p: _Slow(data, len(data) // 4096 // 2, check))
    assert 0 < seen["packets"] < len(an.index)
    k, tp = seen["packets"], seen["tp"]
    assert tp is not None
    server = {str(c.server[1]) for c in an.connections if c.transport == "tcp"}
    out = subprocess.run(["tshark", "-n", "-r", str(CAP), "-Y", f"frame.number <= {k} && tcp",
                          "-T", "fields", "-e", "tcp.srcport", "-e", "frame.len"], capture_output=True, text=True, check=True).stdout
    down = up = 0
    for line in out.splitlines():
        sport, n = line.split("\t")
        if sport in server:
            down += int(n)
        else:
            up += int(n)
    assert down > 0 and (sum(tp.down), sum(tp.up)) == (down, up)
    assert "live_maps" not in an.__dict__  # (the finished model: its maps set, the live view gone)
