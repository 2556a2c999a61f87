"""Relative times never print a negative zero (review 29).

A pcapng whose interface declares an extreme ``if_tsresol`` (10^-19 s, 10^-127 s, 2^-127 s)
and whose packets are out of order by one tick: tshark reads each timestamp to the nanosecond
(the same one for all of them) and prints ``frame.time_relative`` and ``frame.time_delta``
0.000000000; wirefall's doubles differ by float noise (-5.9e-39 s), and the packet list, its
``--json`` and the detail pane printed "-0.000000" / -0.0 / "-0.000000000".

Inputs: built here, block by block with struct (hostile input, not a committed blob).
Outside truth: ``tshark -r FILE -T fields -e frame.time_relative -e frame.time_delta``.
"""
from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_tool

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import packet_detail
from wirefall.analyzer.packet_record import packet_record, seconds_text, time_text
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]


def _block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def _opt(code: int, val: bytes) -> bytes:
    return struct.pack("<HH", code, len(val)) + val + b"\0" * (-len(val) % 4)


def _udp(i: int) -> bytes:
    payload = b"t%d" % i
    udp = struct.pack(">HHHH", 41000, 9, 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0, bytes([10, 29, 0, 1]), bytes([10, 29, 0, 2]))
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp


def pcapng(path: Path, tsresol: int, ticks: list[int]) -> Path:
    """One Ethernet interface with ``if_tsresol`` byte ``tsresol``, one UDP packet per tick count."""
    out = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + _opt(0, b""))
    out += _block(1, struct.pack("<HHI", 1, 0, 65535) + _opt(9, bytes([tsresol])) + _opt(0, b""))
    for i, t in enumerate(ticks):
        d = _udp(i)
        out += _block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(d), len(d)) + d)
    path.write_bytes(out)
    return path


# out of order by one tick, then after the first: every time within one tshark nanosecond
TICKS = [1_000_000, 999_999, 999_998, 1_000_001]
EXTREME = {"1e-19": 19, "1e-127": 0x7F, "2^-127": 0xFF}


def _tshark(path: Path) -> list[tuple[str, str]]:
    out = run_tool("tshark", "-r", str(path), "-T", "fields", "-e", "frame.time_relative", "-e", "frame.time_delta")
    return [tuple(ln.split("\t")) for ln in out.splitlines() if ln]  # type: ignore[misc]


def _detail(an, src, n: int) -> dict[str, str]:
    return {x.abbrev: x.value for root in packet_detail(an, src, n) for x in root.walk()
            if x.abbrev in ("frame.time_relative", "frame.time_delta")}


@pytest.mark.parametrize("resol", list(EXTREME))
def test_relative_times_of_an_extreme_tsresol_are_tsharks_zero(tmp_path, resol):
    path = pcapng(tmp_path / "tsresol.pcapng", EXTREME[resol], TICKS)
    truth = _tshark(path)
    assert truth == [("0.000000000", "0.000000000")] * len(TICKS)
    an = analyze(str(path))
    src = PacketSource(str(path))
    assert an.packets == len(TICKS)
    assert min(an.index.ts[n] - an.index.ts[0] for n in range(len(TICKS))) < 0  # (the doubles do differ: the case)
    for n, (rel, delta) in enumerate(truth, 1):
        # the detail pane's field values are tshark's text
        assert _detail(an, src, n) == {"frame.time_relative": rel, "frame.time_delta": delta}, n
        rec = packet_record(an, src, n)
        assert f"{rec.relative:.6f}" == f"{rec.delta:.6f}" == f"{float(rel):.6f}" == "0.000000"
        assert json.dumps(rec.json()["relative_time"]) == "0.0"
        for fmt in ("relative", "delta", "reference"):
            assert time_text(an, n, fmt) == "0.000000", (n, fmt)
    # the CLI: the text list's Time column and --json
    r = subprocess.run([sys.executable, "-m", "wirefall", "packets", str(path)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    times = [ln.split()[1] for ln in r.stdout.splitlines() if ln.strip()[:1].isdigit()]
    assert times == ["0.000000"] * len(TICKS), r.stdout
    r = subprocess.run([sys.executable, "-m", "wirefall", "packets", "--json", str(path)], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "-0.0" not in r.stdout
    assert [p["relative_time"] for p in json.loads(r.stdout)] == [float(rel) for rel, _ in truth]


def test_a_real_negative_relative_time_keeps_its_sign(tmp_path):
    """At 2^-15 s per tick the packets out of order are 30.5 µs before the first: tshark
    prints them negative, and so does wirefall (only a zero loses its sign)."""
    path = pcapng(tmp_path / "coarse.pcapng", 0x8F, TICKS)
    truth = _tshark(path)
    assert [rel[:1] == "-" for rel, _ in truth] == [False, True, True, False]
    an = analyze(str(path))
    src = PacketSource(str(path))
    for n, (rel, delta) in enumerate(truth, 1):
        rec = packet_record(an, src, n)
        assert f"{rec.relative:.6f}" == f"{float(rel):.6f}", n  # -0.000031, -0.000061 (to the µs: tshark truncates to the ns)
        assert time_text(an, n, "relative") == f"{float(rel):.6f}"
        assert f"{rec.delta:.6f}" == f"{float(delta):.6f}", n


def test_seconds_text_never_writes_a_negative_zero():
    assert seconds_text(-0.0) == seconds_text(-4.9e-7) == seconds_text(-1e-300) == "0.000000"
    assert seconds_text(-6e-7) == "-0.000001" and seconds_text(-4e-10, 9) == "0.000000000"
    assert seconds_text(-6e-10, 9) == "-0.000000001" and seconds_text(2.5e-7) == "0.000000"


def test_filter_field_frame_time_relative_is_never_a_negative_zero():
    """The display-filter field's value (analyzer/fields/frame.py, what a field column or "apply as
    filter" shows) of a difference below tshark's nanosecond: tshark's 0.000000000, not -0.0."""
    import math

    from wirefall.analyzer.fields.frame import _us

    assert math.copysign(1.0, _us(-5.9e-39)) == 1.0 and _us(-5.9e-39) == 0.0
    assert _us(-3.1e-5) == -3.1e-5  # (a real negative keeps its sign)
