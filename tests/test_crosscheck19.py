"""``wirefall crosscheck``: the report (table and disagreements) on stdout, warnings on stderr,
every count with its unit, and the snap-length warning other commands print (review 19)."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
H2C = ROOT / "sample_captures" / "http" / "h2c-node.pcap"
pytestmark = pytest.mark.skipif(shutil.which("tshark") is None or shutil.which("editcap") is None,
                                reason="tshark/editcap not installed")
HEAD = ["protocol", "tshark frames", "wirefall frames", "frames matched", "in packets", "header lists compared"]


def _run(*a):
    return subprocess.run([sys.executable, "-m", "wirefall", *a], capture_output=True, text=True, timeout=300)


def _row(out: str, proto: str) -> list[str]:
    line = next(x for x in out.splitlines() if x.startswith(proto + " "))
    return re.split(r"\s{2,}", line.strip())


def _tshark_http2(cap: Path) -> tuple[int, int]:
    """(HTTP/2 frames, packets with one) as tshark shows them (Decode As the h2c port)."""
    out = subprocess.run(["tshark", "-r", str(cap), "-d", "tcp.port==18084,http2", "-Y", "http2", "-T", "fields",
                          "-e", "http2.type"], capture_output=True, text=True, check=True, timeout=120).stdout
    rows = [x for x in out.splitlines() if x]
    return sum(len(x.split(",")) for x in rows), len(rows)


def test_report_on_stdout_with_units_equal_to_tsharks_counts():
    r = _run("crosscheck", str(H2C))
    assert r.returncode == 0, r.stderr
    assert all(h in r.stdout for h in HEAD)
    frames, packets = _tshark_http2(H2C)
    row = _row(r.stdout, "http2")
    assert row[1:5] == [str(frames), str(frames), str(frames), str(packets)]
    assert f"; {frames} frames matched in {packets} packets" in r.stdout
    assert "0 disagreements with tshark (0 packets whose frames differ, 0 header lists that differ)" in r.stdout
    assert "protocol" not in r.stderr and "disagreements" not in r.stderr


def test_snapped_capture_warns_and_reports_every_disagreement_on_stdout(tmp_path):
    cut = tmp_path / "s200.pcap"
    subprocess.run(["editcap", "-s", "200", str(H2C), str(cut)], check=True, timeout=60)
    r = _run("crosscheck", str(cut))
    assert r.returncode == 1
    summary = _run("summary", str(cut))
    warning = next(x for x in summary.stderr.splitlines() if "snap length" in x)
    assert warning in r.stderr.splitlines()  # the same words as the other commands
    assert "frames differ" not in r.stderr  # (the disagreements are the report's)
    lines = [x for x in r.stdout.splitlines() if re.match(r"packet \d+: http2 frames differ: tshark \[", x)]
    row = _row(r.stdout, "http2")
    assert int(row[-2]) == len(lines) > 0 and row[-1] == "0"  # packets differing, header lists differing
    m = re.search(r"(\d+) disagreements with tshark \((\d+) packets whose frames differ, (\d+) header lists that differ\); "
                  r"(\d+) frames matched in (\d+) packets", r.stdout)
    assert m and int(m[1]) == int(m[2]) + int(m[3]) == len(lines)
    # the packets reported are packets where tshark shows HTTP/2 frames (the capture cut them)
    tshark_packets = {int(x) for x in subprocess.run(
        ["tshark", "-r", str(cut), "-d", "tcp.port==18084,http2", "-Y", "http2", "-T", "fields", "-e", "frame.number"],
        capture_output=True, text=True, check=True, timeout=60).stdout.split()}
    assert {int(re.match(r"packet (\d+)", x)[1]) for x in lines} <= tshark_packets


def test_report_redirected_to_a_file_is_not_empty(tmp_path):
    out = tmp_path / "report.txt"
    with open(out, "w") as f:
        r = subprocess.run([sys.executable, "-m", "wirefall", "crosscheck", str(H2C)], stdout=f, stderr=subprocess.PIPE,
                           text=True, timeout=300)
    assert r.returncode == 0
    text = out.read_text()
    assert text.startswith("protocol") and "frames matched" in text
