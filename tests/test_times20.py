"""Every packet's time is tshark's: pcapng timestamps are ticks / ticks-per-second, correctly
rounded (``ticks * 1e-6`` was a ulp off on a third of page-h2's packets: packet 23
1795976276.5014958 for tshark's 1795976276.501496), on the record loop's path, the scan's
(numpy, the parallel analysis') and classic pcap's."""
from __future__ import annotations

import pytest

from conftest import SAMPLES, need_tool, run_tool

CAPTURES = ["page/page-h2.pcapng", "page/bg-mixed.pcapng", "quic/page-h3-late.pcapng", "lossy/page-h2.pcapng",
            "tcp-port-reuse.pcap", "link-sll2.pcap"]


def _tshark_times(path) -> list[float]:
    return [float(x) for x in run_tool("tshark", "-r", str(path), "-T", "fields", "-e", "frame.time_epoch").split()]


@pytest.mark.parametrize("name", CAPTURES)
def test_packet_times_are_tsharks(name):
    need_tool("tshark")
    from wirefall.analyzer.pipeline import analyze

    path = SAMPLES / name
    want = _tshark_times(path)
    an = analyze(str(path), workers=1)
    got = [an.index.time(i) for i in range(1, len(an.index) + 1)]
    assert len(got) == len(want) and got == want
    if name.endswith(".pcapng"):  # the scan's own times (numpy over the whole file), as the parallel pass takes them
        from wirefall.analyzer import demux

        for vector in (False, True):  # the record loop's and numpy's
            sc = demux.scan(str(path), 2, vector=vector)
            assert sc is not None and list(sc.ts) == want


def test_keylog_beside_hint(tmp_path):
    """No key log given, a connection left encrypted for want of one and NAME.keys beside the
    capture: the command says so on stderr (``objects`` said only "wrote 0 objects"); with the
    key log, or with nothing beside, no note."""
    import shutil
    import subprocess
    import sys

    src = SAMPLES / "quic" / "aioquic-h3.pcap"
    cap = tmp_path / "cap.pcap"
    shutil.copy(src, cap)
    env = {k: v for k, v in __import__("os").environ.items() if k != "SSLKEYLOGFILE"}

    def run(*args):
        return subprocess.run([sys.executable, "-m", "wirefall", *args], capture_output=True, text=True, env=env, timeout=120)

    assert "note:" not in run("objects", str(cap), "-o", str(tmp_path / "o1")).stderr
    shutil.copy(src.with_suffix(".keys"), tmp_path / "cap.keys")
    err = run("objects", str(cap), "-o", str(tmp_path / "o2")).stderr
    assert "1 connection not decrypted: no key log given" in err and "--keylog " + str(tmp_path / "cap.keys") in err
    assert "note:" in run("summary", str(cap)).stderr
    r = run("objects", str(cap), "-o", str(tmp_path / "o3"), "--keylog", str(tmp_path / "cap.keys"))
    assert "note:" not in r.stderr and "wrote 7 objects" in r.stderr


def test_saved_capture_private_without_keys(tmp_path):
    """``wirefall capture`` without a key log wrote its file 0644 (with one, 0600): a capture
    holds traffic either way; both are 0600, as dumpcap's own files."""
    import os
    import stat

    need_tool("editcap")
    from wirefall.analyzer.live import save_with_keys

    for keys in ("", "CLIENT_RANDOM " + "00" * 32 + " " + "11" * 48 + "\n"):
        dest = tmp_path / f"out{len(keys)}.pcapng"
        save_with_keys(str(SAMPLES / "tcp-port-reuse.pcap"), str(dest), keys)
        assert stat.S_IMODE(os.stat(dest).st_mode) == 0o600
        assert run_tool("capinfos", "-c", "-M", str(dest)).split()[-1] == run_tool("capinfos", "-c", "-M", str(SAMPLES / "tcp-port-reuse.pcap")).split()[-1]


def test_duration_is_latest_minus_earliest(tmp_path):
    """A capture whose packets are not in time order (merged, or the clock stepped back): its
    duration is latest - earliest, as capinfos' "Capture duration" (it was last - first, and
    negative here); ``first_time``/``last_time`` stay the first and the last packet's.  The
    capture is a sample's packets written in reverse order by this test."""
    need_tool("capinfos")
    import dpkt

    from wirefall.analyzer.jsonout import summary_dict
    from wirefall.analyzer.pipeline import analyze
    from wirefall.analyzer.stats import compute

    with open(SAMPLES / "tcp-port-reuse.pcap", "rb") as f:
        r = dpkt.pcap.Reader(f)
        recs, lt = list(r), r.datalink()
    out = tmp_path / "reversed.pcap"
    with open(out, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=lt, nano=False)
        for ts, buf in reversed(recs):
            w.writepkt(buf, ts=ts)
    caps = run_tool("capinfos", "-M", "-u", "-a", "-e", str(out))
    want = float(next(x for x in caps.splitlines() if "Capture duration" in x).split(":", 1)[1].split()[0])
    an = analyze(str(out), workers=1)
    s = summary_dict(an)
    assert s["first_time"] > s["last_time"] and want > 0
    assert s["duration"] == pytest.approx(want, abs=1e-6)
    assert compute(an).duration == pytest.approx(want, abs=1e-6)
