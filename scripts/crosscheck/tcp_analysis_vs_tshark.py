"""Compare wirefall's TCP analysis flags (analyzer.tcp_analysis) with tshark's, packet by packet.

    PYTHONPATH=. python scripts/crosscheck/tcp_analysis_vs_tshark.py CAPTURE...

For each capture: tshark (default preferences, one pass) prints, per frame, the
``tcp.analysis.*`` flag fields present, the duplicate ACK number and frame, and the Info
column; wirefall computes the same from the packet index.  Prints the packets where they
differ and a summary line; exits 1 if any differs.  ``tshark_flags`` and ``compare`` are
imported by tests/test_tcp_analysis.py.
"""
from __future__ import annotations

import subprocess
import sys

FLAG_FIELDS = (
    "tcp.analysis.retransmission", "tcp.analysis.fast_retransmission", "tcp.analysis.spurious_retransmission",
    "tcp.analysis.out_of_order", "tcp.analysis.lost_segment", "tcp.analysis.ack_lost_segment",
    "tcp.analysis.duplicate_ack", "tcp.analysis.zero_window", "tcp.analysis.zero_window_probe",
    "tcp.analysis.zero_window_probe_ack", "tcp.analysis.window_full", "tcp.analysis.keep_alive",
    "tcp.analysis.keep_alive_ack", "tcp.analysis.window_update", "tcp.analysis.reused_ports", "tcp.analysis.flags",
)


def tshark_flags(path: str, prefs: tuple[str, ...] = (), timeout: float = 600) -> dict[int, tuple[set[str], tuple | None, str]]:
    """frame -> (flag fields present, (dup ack num, dup ack frame) or None, Info) for every TCP
    frame tshark gives analysis flags, from one tshark run."""
    cmd = ["tshark", "-n", "-r", path, "-Y", "tcp.analysis.flags", "-T", "fields", "-E", "separator=\t", "-e", "frame.number"]
    for f in FLAG_FIELDS:
        cmd += ["-e", f]
    cmd += ["-e", "tcp.analysis.duplicate_ack_num", "-e", "tcp.analysis.duplicate_ack_frame", "-e", "_ws.col.Info"]
    for p in prefs:
        cmd += ["-o", p]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True).stdout
    res: dict[int, tuple[set[str], tuple | None, str]] = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) < len(FLAG_FIELDS) + 4:
            continue
        n = int(parts[0])
        present = {f for f, v in zip(FLAG_FIELDS, parts[1:]) if v}
        num, frame = parts[1 + len(FLAG_FIELDS)], parts[2 + len(FLAG_FIELDS)]
        dup = (int(num.split(",")[0]), int(frame.split(",")[0])) if num else None
        res[n] = (present, dup, parts[3 + len(FLAG_FIELDS)])
    return res


def compare(path: str, analysis=None, limit: int = 30) -> tuple[int, int, list[str]]:
    """(packets compared with flags on either side, packets that differ, first ``limit``
    differences as text)."""
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.pipeline import analyze
    from wirefall.analyzer.tcp_analysis import tcp_analysis

    an = analysis if analysis is not None else analyze(path)
    src = PacketSource(path)
    try:
        ta = tcp_analysis(an, src)
    finally:
        src.close()
    theirs = tshark_flags(path)
    ours = {i + 1 for i, f in enumerate(ta.flags) if f}
    diffs: list[str] = []
    bad = 0
    for n in sorted(ours | set(theirs)):
        t_fields, t_dup, info = theirs.get(n, (set(), None, ""))
        o_fields = ta.fields(n)
        o_dup = ta.dupack.get(n)
        o_prefix = ta.info_prefix(n)
        ok = o_fields == t_fields and o_dup == t_dup and (not info or info.startswith(o_prefix))
        if not ok:
            bad += 1
            if len(diffs) < limit:
                diffs.append(f"{path}: frame {n}: tshark {sorted(t_fields)} {t_dup} | wirefall {sorted(o_fields)} {o_dup} | {info[:100]}")
    return len(ours | set(theirs)), bad, diffs


def main(argv: list[str]) -> int:
    rc = 0
    for p in argv:
        total, bad, diffs = compare(p)
        for d in diffs:
            print(d)
        print(f"{p}: {total} flagged packets, {bad} differ")
        rc |= bool(bad)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
