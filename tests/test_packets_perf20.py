"""The packet list's work, counted (not timed): ``wirefall packets`` reads each packet's bytes about
once, not a 1 MiB chunk per packet.

The list advances the TCP analysis (analyzer.tcp_analysis) a packet at a time; each call used to
start with an empty read buffer and re-read ``max(_CHUNK, caplen)`` = 1 MiB (4805 reads of 1 MiB
for h2-small's 4805 packets), and each row read its own bytes with a pread of its own.  Now the
pass keeps its chunk between calls, the listing (``packet_records``) reads its rows' bytes in
windows and runs the pass ahead in steps, and ``retransmissions_of`` walks the flags once per
capture, not once per connection.  The rows stay tshark's: their ``[TCP …]`` marks are on the
packets of ``tshark -Y tcp.analysis.flags``.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from wirefall.analyzer import tcp_analysis as ta_mod
from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.packet_record import packet_record, packet_records
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.tcp_analysis import FIELDS, retransmissions_of, tcp_analysis

ROOT = Path(__file__).resolve().parents[1]
LOSSY = ROOT / "sample_captures" / "lossy" / "page-h2.pcapng"
LOSSY_H1 = ROOT / "sample_captures" / "lossy" / "page-h1.pcapng"
TSHARK = shutil.which("tshark")
# the markers analyzer.tcp_analysis puts before a row's Info (tshark's), Dup ACK's with its numbers
MARK = re.compile(r"^\[TCP (Port numbers reused|Retransmission|Fast Retransmission|Spurious Retransmission|Out-Of-Order|"
                  r"Previous segment not captured|ACKed unseen segment|Window Update|Window Full|Keep-Alive|Keep-Alive ACK|"
                  r"Dup ACK \d+#\d+|ZeroWindowProbe|ZeroWindow|ZeroWindowProbeAck)\] ")


class Counting:
    """A PacketSource whose reads are counted (calls and bytes)."""

    def __init__(self, path: Path) -> None:
        self.src = PacketSource(str(path))
        self.calls = 0
        self.bytes = 0

    def read(self, offset: int, length: int) -> bytes:
        got = self.src.read(offset, length)
        self.calls += 1
        self.bytes += len(got)
        return got

    def close(self) -> None:
        self.src.close()


def _analysis(path: Path):
    keys = path.with_suffix(".keys")
    return analyze(str(path), [str(keys)] if keys.exists() else [])


@pytest.fixture(scope="module")
def lossy():
    an = _analysis(LOSSY)
    src = PacketSource(str(LOSSY))
    rows = list(packet_records(an, src, range(1, len(an.index) + 1)))
    src.close()
    return an, rows


def test_listing_reads_each_packet_about_once():
    an = _analysis(LOSSY)
    size = os.path.getsize(LOSSY)
    npk = len(an.index)
    assert npk > 300 and "_wf_tcp_analysis" not in an.__dict__
    src = Counting(LOSSY)
    try:
        rows = list(packet_records(an, src, range(1, npk + 1)))
    finally:
        src.close()
    assert len(rows) == npk
    # the TCP pass's chunks plus the rows' windows: about twice the file (it was ~1 MiB a packet)
    assert src.bytes <= 2 * size, (src.bytes, size)
    assert src.calls <= npk // 10, (src.calls, npk)  # windows, not a read per row


def test_rows_one_at_a_time_advance_the_pass_without_rereading():
    """The TUI's and the detail pane's way: one ``packet_record`` a row, in order; the pass's
    reads stay about one file's worth (the rows' own preads aside)."""
    an = _analysis(LOSSY)
    size = os.path.getsize(LOSSY)
    npk = len(an.index)
    src = Counting(LOSSY)
    pass_bytes = 0
    real_run = ta_mod._run

    def run(analysis, source, ta, stop):
        nonlocal pass_bytes
        before = src.bytes
        real_run(analysis, source, ta, stop)
        pass_bytes += src.bytes - before

    try:
        ta_mod._run = run
        for n in range(1, npk + 1):
            packet_record(an, src, n)
    finally:
        ta_mod._run = real_run
        src.close()
    assert an.__dict__["_wf_tcp_analysis"].packets == npk
    assert pass_bytes <= size + (1 << 20), (pass_bytes, size)
    assert "_wf_buf" not in an.__dict__["_wf_tcp_analysis"].__dict__  # (dropped at the last packet)


def test_windowed_rows_equal_rows_read_one_by_one(lossy):
    an, rows = lossy
    fresh = _analysis(LOSSY)
    src = PacketSource(str(LOSSY))
    try:
        one_by_one = [packet_record(fresh, src, n) for n in range(1, len(fresh.index) + 1)]
        # a sparse selection (a filter's): windows over rows far apart, the same rows
        picked = [n for n in range(1, len(an.index) + 1) if n % 7 == 0 or n % 50 < 3]
        sparse = list(packet_records(an, src, iter(picked)))
    finally:
        src.close()
    assert rows == one_by_one
    assert sparse == [one_by_one[n - 1] for n in picked]


def test_pass_in_steps_equals_one_pass():
    """The chunk kept between calls gives the flags of one whole pass, however the calls step."""
    path = LOSSY_H1
    an = _analysis(path)
    src = PacketSource(str(path))
    try:
        whole = tcp_analysis(_analysis(path), src)
        for n in range(1, len(an.index) + 1, 3):
            tcp_analysis(an, src, n)
        stepped = tcp_analysis(an, src)
    finally:
        src.close()
    public = ("flags", "dupack", "conv", "fwd", "wshift", "tcp_flags", "base", "rtt", "rtt_at", "packets")
    assert [getattr(stepped, k) for k in public] == [getattr(whole, k) for k in public]
    assert sum(1 for f in whole.flags if f) > 20


@pytest.mark.parametrize("path", [LOSSY, LOSSY_H1])
@pytest.mark.parametrize("field", ["tcp.analysis.retransmission", "tcp.analysis.out_of_order", "tcp.analysis.duplicate_ack"])
def test_retransmissions_of_equals_the_scan_per_connection(path, field):
    an = _analysis(path)
    src = PacketSource(str(path))
    try:
        ta = tcp_analysis(an, src)
    finally:
        src.close()
    bit = FIELDS[field]
    flags, cids = ta.flags, an.index.conn
    total = 0
    for c in an.connections:
        if c.transport != "tcp":
            continue
        first, last = max(c.first_packet, 1), min(c.last_packet, len(flags), len(cids))
        want = [k for k in range(first, last + 1) if flags[k - 1] & bit and cids[k - 1] == c.id]
        got = retransmissions_of(an, ta, c, field)
        assert [k for k, _d, _f in got] == want, c.id
        assert all(f == flags[k - 1] for k, _d, f in got)
        total += len(want)
    assert total > 0  # (lossy captures: a test that cannot fail is no test)


@pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
def test_row_marks_are_tsharks_analysis_flags(lossy):
    an, rows = lossy
    out = subprocess.run([TSHARK, "-n", "-r", str(LOSSY), "-Y", "tcp.analysis.flags", "-T", "fields", "-e", "frame.number"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    theirs = {int(x) for x in out.split()}
    ours = {r.number for r in rows if MARK.match(r.info)}
    assert len(theirs) > 20
    assert ours == theirs, (sorted(ours - theirs), sorted(theirs - ours))
