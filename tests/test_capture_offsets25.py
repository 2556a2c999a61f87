"""A truncated pcapng's warning names the cut block's own file offset, past the reader's first
buffer too (a block read across a buffer refill once gave base + p after need() had already
moved base by p: twice the offset).  Offsets come from walking the file's block headers here,
the packet count from tshark on the cut file."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

from wirefall.analyzer.capture import CaptureInfo, read_capture

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_captures" / "quic" / "page-h3-late.pcapng"


def _blocks(data: bytes):
    """(offset, type, length) of each block of a little-endian pcapng."""
    p = 0
    while p + 8 <= len(data):
        t, n = struct.unpack_from("<II", data, p)
        yield p, t, n
        p += n


def test_truncated_block_past_the_first_buffer_names_its_own_offset(tmp_path):
    one = SAMPLE.read_bytes()
    assert one[8:12] == b"\x4d\x3c\x2b\x1a"
    first = next(p for p, t, _ in _blocks(one) if t == 6)
    data = one + one[first:] + one[first:]  # (its packets three times: a file past the 1 MiB first buffer)
    epbs = [(p, n) for p, t, n in _blocks(data) if t == 6]
    for cut_after in (3, len(epbs) // 2, len(epbs) - 2):  # inside the first buffer, past it, near the end
        at, n = epbs[cut_after]
        path = tmp_path / f"cut{cut_after}.pcapng"
        path.write_bytes(data[: at + n // 2])
        info = CaptureInfo()
        got = sum(1 for _ in read_capture(str(path), info))
        assert got == cut_after and info.truncated
        want = f"capture truncated in packet {cut_after + 1} at file offset {at}: block of {n} bytes incomplete"
        assert [w for w in info.warnings if want in w], (want, info.warnings)
        if shutil.which("tshark"):
            out = subprocess.run(["tshark", "-n", "-r", str(path), "-T", "fields", "-e", "frame.number"],
                                 capture_output=True, text=True)
            assert len(out.stdout.split()) == got, out.stderr
            assert re.search(r"cut short in the middle of a packet", out.stderr), out.stderr
    assert epbs[len(epbs) // 2][0] > 1 << 20  # (the middle cut is past the first 1 MiB buffer)


def test_a_pcapng_cut_inside_its_section_header_is_not_a_capture(tmp_path):
    """A 10-byte pcapng fragment read as a capture of 0 packets, 'damaged' (review 24), where a
    pcap cut inside its global header is refused and tshark refuses both."""
    import pytest

    from wirefall.analyzer.capture import CaptureError

    one = SAMPLE.read_bytes()
    shb_len = struct.unpack_from("<I", one, 4)[0]
    for n in (4, 10, shb_len - 1):
        path = tmp_path / f"head{n}.pcapng"
        path.write_bytes(one[:n])
        with pytest.raises(CaptureError, match="pcapng section header truncated"):
            list(read_capture(str(path), CaptureInfo()))
        if shutil.which("tshark") and n >= 8:  # (4 bytes: tshark's file-type heuristics read them as JSON)
            r = subprocess.run(["tshark", "-n", "-r", str(path)], capture_output=True, text=True)
            assert r.returncode != 0 and not r.stdout.strip(), (n, r.stderr)
    path = tmp_path / "shb.pcapng"  # (the section header whole, nothing after it: a capture of 0 packets, as tshark reads it)
    path.write_bytes(one[:shb_len])
    assert list(read_capture(str(path), CaptureInfo())) == []
