"""D-SACK (RFC 2883) as tshark 4.0 marks it, on TCP segments built here whose first SACK block
lies where the two rules wirefall had disagreed: the expert item (``tcp.options.sack.dsack``)
tested the first block's *left* edge below the ACK, or the whole block inside the second; the
D-SACK edge fields (``dsack_le``/``dsack_re``) tshark's own test — the first block's *right*
edge at or below the ACK, or le2 < re1 <= re2.  tshark marks none for a block straddling the
ACK, and one for a block straddling the second block's left edge: the expert item said the
opposite on both.  Outside truth: tshark on the same files (built with dpkt: a handshake with
SACK permitted, 20 data segments, then the receiver's ACK with the SACK option)."""
from __future__ import annotations

import json
import struct
import subprocess
import sys

import pytest

from conftest import ROOT, need_tool, run_tool

CASES = {
    "below_ack": [(100, 200)],
    "straddle_ack": [(900, 1100)],  # (the ACK is at 1000)
    "inside_second": [(1500, 1600), (1400, 1700)],
    "straddle_second_left": [(1350, 1450), (1400, 1700)],
    "equal_second_left": [(1400, 1450), (1400, 1700)],
    "above_ack_alone": [(1500, 1600)],
}


def _capture(path, blocks) -> None:
    import dpkt

    c, s = b"\x0a\x00\x00\x02", b"\x0a\x00\x00\x01"

    def pkt(src, dst, sport, dport, seq, ack, flags, opts=b"", data=b""):
        while len(opts) % 4:
            opts += b"\x01"
        tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, win=60000, opts=opts, data=data)
        tcp.off = 5 + len(opts) // 4
        ip = dpkt.ip.IP(src=src, dst=dst, p=6, data=tcp, ttl=64)
        ip.len = len(ip)
        return bytes(dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x00" * 6, type=0x0800, data=ip))

    sack = b"\x01\x01" + bytes([5, 2 + 8 * len(blocks)]) + b"".join(struct.pack(">II", 1001 + a, 1001 + b) for a, b in blocks)
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f)
        t = 1.0
        w.writepkt(pkt(c, s, 5000, 80, 100, 0, dpkt.tcp.TH_SYN, b"\x04\x02"), ts=t)
        w.writepkt(pkt(s, c, 80, 5000, 1000, 101, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, b"\x04\x02"), ts=t + 0.01)
        w.writepkt(pkt(c, s, 5000, 80, 101, 1001, dpkt.tcp.TH_ACK), ts=t + 0.02)
        for i in range(20):
            w.writepkt(pkt(s, c, 80, 5000, 1001 + 100 * i, 101, dpkt.tcp.TH_ACK, data=bytes(100)), ts=t + 0.03 + i / 1000)
        w.writepkt(pkt(c, s, 5000, 80, 101, 2001, dpkt.tcp.TH_ACK, sack), ts=t + 0.06)


def _wf(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "wirefall.ui.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("case", list(CASES))
def test_dsack_as_tshark_marks_it(tmp_path, case):
    need_tool("tshark")
    cap = tmp_path / f"{case}.pcap"
    _capture(cap, CASES[case])
    out = run_tool("tshark", "-r", str(cap), "-Y", "frame.number == 24", "-T", "fields", "-e", "tcp.options.sack.dsack",
                   "-e", "tcp.options.sack.dsack_le", "-e", "tcp.options.sack.dsack_re")
    flag, le, re_ = (out.strip("\n").split("\t") + ["", "", ""])[:3]
    # wirefall: the expert item, and the filter fields, on the same packet
    items = json.loads(_wf("expert", str(cap), "--json"))
    items = items["items"] if isinstance(items, dict) else items
    mine_flag = any(i.get("field") == "tcp.options.sack.dsack" or "tcp.options.sack.dsack" in json.dumps(i) for i in items)
    assert mine_flag == bool(flag), (case, flag)
    for f, want in (("tcp.options.sack.dsack", bool(flag)), ("tcp.options.sack.dsack_le", bool(le))):
        rows = json.loads(_wf("packets", str(cap), "--json", "--filter", f))
        assert [r["packet"] for r in rows] == ([24] if want else []), (case, f)
    if le:
        got = json.loads(_wf("packets", str(cap), "--json", "--filter", f"tcp.options.sack.dsack_le == {le} && "
                                                                        f"tcp.options.sack.dsack_re == {re_}"))
        assert [r["packet"] for r in got] == [24]
