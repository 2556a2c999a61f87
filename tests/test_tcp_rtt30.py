"""tshark's fields from its list of unacknowledged TCP segments, against tshark 4.0 packet by
packet: ``tcp.analysis.acks_frame`` and ``tcp.analysis.ack_rtt`` (the segment an ACK
acknowledges and the time since it: Wireshark's RTT graph), ``tcp.analysis.bytes_in_flight``,
``tcp.analysis.push_bytes_sent``, a retransmission's ``tcp.analysis.rto`` and
``tcp.analysis.rto_frame``, and ``tcp.analysis.initial_rtt`` where tshark shows it (on the packets
with a SEQ/ACK tree) (analyzer/tcp_analysis.py through analyzer/fields/tcp.py).

Outside truth: ``tshark -r CAP -T fields -e frame.number -e tcp.analysis.…`` (every occurrence)
against each field's values on each packet (``Field.get``, tests/field_oracle.py), times as
whole nanoseconds (tshark prints nine decimals); ``tshark -Y`` against ``wirefall packets -Y``
for filters on them (tests/tshark_tap.py); tshark's JSON ``[SEQ/ACK analysis]`` against the
packet detail tree.  Captures: every bundled sample, the third-party ones with TCP (the Amazon
page load with its keys), the seeded hostile flows tests/test_tcp_diff29.py builds (losses,
reordering, duplicate ACKs with SACK and D-SACK, zero windows, keep-alives, ports reused,
sequence numbers wrapping), and segments written here for the corners those flows do not reach:
the 10,000-segment cap of tshark's list, an ACK number 2^31 past the segments, relative sequence
numbers wrapping inside the list, SACK options with four blocks, two SACK options in a segment,
a retransmission whose RTO counts from the highest segment.
"""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import tshark_tap
from conftest import sample_captures, unpack_amazon
from field_oracle import capture_file, tshark_values, wirefall_values
from test_tcp_diff29 import ACK, FIN, PSH, SEED, SYN, T0, _Script, flows, write

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wirefall.analyzer.capture import PacketSource  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

TIMES = ("tcp.analysis.ack_rtt", "tcp.analysis.rto")
FIELDS = ("tcp.analysis.ack_rtt", "tcp.analysis.acks_frame", "tcp.analysis.bytes_in_flight",
          "tcp.analysis.push_bytes_sent", "tcp.analysis.rto", "tcp.analysis.rto_frame")
COMMON = FIELDS[:4]  # (on every capture with TCP data both ways; the RTO only where segments are retransmitted)
# compared too: the initial RTT, which tshark shows only where its SEQ/ACK tree is (its
# per-packet record exists: a flag, an ACK of a listed segment, the bytes-in-flight count, an
# ACK past the peer's highest contiguous next seq even where no "ACKed unseen" flag is set)
COMPARED = FIELDS + ("tcp.analysis.initial_rtt",)
TIMES_COMPARED = TIMES + ("tcp.analysis.initial_rtt",)
M32 = 0xFFFFFFFF


def _ns(text: str) -> int:
    """A relative time as tshark prints it ("-0.000001000") in whole nanoseconds."""
    neg = text.startswith("-")
    sec, _, frac = text.lstrip("-").partition(".")
    v = int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])
    return -v if neg else v


def differences(cap: Path, keys: Path | None = None, fields: tuple[str, ...] = COMPARED, present=frozenset()):
    """Every packet of ``cap`` compared with tshark: ([(frame, field, tshark's, wirefall's)] where
    they differ, tshark's values per packet, the analysis).  The time fields come back as tshark
    prints them — "bytes" fields are kept as text — and become nanoseconds here; wirefall's
    seconds likewise.  ``present``: fields of no value (the analysis flags), compared as there or
    not (True or None: tshark repeats some of them on a packet)."""
    theirs = tshark_values(cap, keys, fields, bytes_fields=frozenset(TIMES_COMPARED) & set(fields), none_fields=frozenset(present))
    an = analyze(str(cap), keylogs=[str(keys)] if keys else [])
    ours = wirefall_values(an, cap, fields)
    out = []
    for n in range(1, an.packets + 1):
        t, o = theirs.get(n, {}), ours.get(n, {})
        for f in fields:
            a, b = t.get(f), o.get(f)
            if f in TIMES_COMPARED:
                a = [_ns(x) for x in a] if a else None
                b = [round(x * 1e9) for x in b] if b else None
            elif f in present:
                a, b = (True if a else None), (True if b else None)
            if a != b:
                out.append((n, f, a, b))
    return out, theirs, an


def compare(cap: Path, keys: Path | None = None, fields: tuple[str, ...] = COMPARED) -> tuple[int, dict[str, int], list[str]]:
    """(packets compared, values per field in tshark's output, disagreements) over every packet of ``cap``."""
    diffs, theirs, an = differences(cap, keys, fields)
    seen = {f: sum(len(v.get(f) or ()) for v in theirs.values()) for f in fields}
    return an.packets, seen, [f"{cap.name} frame {n} {f}: tshark {a} wirefall {b}" for n, f, a, b in diffs]


def _agrees(cap: Path, keys: Path | None = None, every: bool = True, fields: tuple[str, ...] = COMPARED) -> dict[str, int]:
    npk, seen, bad = compare(cap, keys, fields)
    assert not bad, (len(bad), bad[:8])
    if every:  # (a comparison that cannot fail is none)
        assert all(seen[f] for f in COMMON + fields[len(FIELDS):]), seen
    return seen


# ------------------------------------------------------------------ bundled and third-party captures


@needs_tshark
@pytest.mark.parametrize("cap", [p for p, _ in sample_captures()], ids=lambda p: str(p.relative_to(ROOT / "sample_captures")))
def test_sample_captures_equal_tshark(cap):
    keys = cap.with_suffix(".keys")
    _agrees(cap, keys if keys.exists() else None, every=False)


@needs_tshark
def test_lossy_page_loads_have_every_field(tmp_path):
    got = {f: 0 for f in FIELDS}
    for name in ("page-h1", "page-h2", "page-spdy"):
        seen = _agrees(capture_file(f"sample:lossy/{name}.pcapng", tmp_path))
        got = {f: got[f] + seen[f] for f in FIELDS}
    assert all(got.values()), got


@needs_tshark
def test_amazon_page_load_equals_tshark(tmp_path):
    cap, keys = unpack_amazon(tmp_path)
    seen = _agrees(cap, keys)
    assert seen["tcp.analysis.ack_rtt"] > 100 and seen["tcp.analysis.bytes_in_flight"] > 100, seen


@needs_tshark
@pytest.mark.parametrize("rel", ["tls12/capture.pcap", "tls13/capture.pcap", "retina/tls_ciphers.pcap"])
def test_third_party_captures_equal_tshark(tmp_path, rel):
    _agrees(capture_file(f"shared:{rel}", tmp_path))


@needs_tshark
@pytest.mark.slow
@pytest.mark.parametrize("name", ["spdy-mtu", "h2-small"])
def test_benchmark_captures_equal_tshark(name):
    cap = ROOT / "benchmarks" / "corpus" / f"{name}.pcap"
    if not cap.exists():
        pytest.skip(f"{cap.name} absent")
    _agrees(cap)


# ------------------------------------------------------------------ hostile flows


@needs_tshark
def test_thirty_hostile_flows_equal_tshark(tmp_path):
    p = tmp_path / "flows.pcap"
    write(p, flows(SEED, 30))
    seen = _agrees(p)
    assert seen["tcp.analysis.rto"] > 10, seen


@needs_tshark
@pytest.mark.slow
@pytest.mark.parametrize("seed", [SEED, 2029, 30])
def test_three_hundred_hostile_flows_equal_tshark(tmp_path, seed):
    p = tmp_path / f"flows-{seed}.pcap"
    write(p, flows(seed, 300))
    npk, seen, bad = compare(p)
    assert not bad, (len(bad), bad[:8])
    assert npk > 9000 and all(seen.values()), seen


@needs_tshark
def test_mangled_packets_equal_tshark(tmp_path):
    """Cut and corrupted packets (scripts/filters/dns_sample.py's, as tests/test_filter.py uses them)."""
    sys.path.insert(0, str(ROOT / "scripts" / "filters"))
    import dns_sample

    p = tmp_path / "mangled.pcap"
    p.write_bytes(dns_sample.mangled())
    _agrees(p)


def _sack(*blocks: tuple[int, int]) -> bytes:
    return bytes([5, 2 + 8 * len(blocks)]) + b"".join(struct.pack("!II", a & M32, b & M32) for a, b in blocks)


def corners(cap_segments: int = 10_004) -> list[tuple[float, bytes]]:
    """Conversations for the corners of tshark's list (one client port each)."""
    sc = _Script()
    t = T0
    # an ACK number 2^31 past the segments: those at the end of the list leave, the first stay
    cp, ci, si = 50002, 7000, 0x7FFFFF00
    sc.handshake(t, cp, ci, si)
    for k in range(6):
        sc.s(t + 0.02 + k * 1e-4, cp, si + 1 + 1000 * k, ci + 1, n=1000)
    sc.c(t + 0.03, cp, ci + 1, si + 1 + 3000 + 0x80000000)
    sc.c(t + 0.031, cp, ci + 1, si + 1 + 2500 - 0x80000000)
    sc.s(t + 0.032, cp, si + 1 + 6000, ci + 1, n=1000)
    sc.c(t + 0.033, cp, ci + 1, si + 1 + 7000)
    # segments before the base sequence number: relative numbers wrap inside the list
    t += 1
    cp, ci, si = 50003, 9000, 100000
    sc.handshake(t, cp, ci, si)
    for k in range(5):
        sc.s(t + 0.02 + k * 1e-4, cp, si - 2500 + 1000 * k, ci + 1, n=1000)
    sc.c(t + 0.03, cp, ci + 1, si - 1500)
    sc.s(t + 0.031, cp, si + 2500, ci + 1, n=1000)
    # SACK: four blocks (tshark keeps three), two options in one segment (the last counts), a
    # block going back, an option with a block and a half, then a segment without SACK
    t += 1
    cp, ci, si = 50004, 11000, 300000
    sc.handshake(t, cp, ci, si)
    for k in range(10):
        sc.s(t + 0.02 + k * 1e-4, cp, si + 1 + 1000 * k, ci + 1, n=1000, flags=ACK | (PSH if k % 3 == 2 else 0))
    a = si + 1
    sc.c(t + 0.03, cp, ci + 1, a + 1000, opts=b"\x01\x01" + _sack((a + 2000, a + 3000), (a + 4000, a + 5000), (a + 6000, a + 7000), (a + 8000, a + 9000)))
    sc.s(t + 0.031, cp, a + 10000, ci + 1, n=1000)
    sc.c(t + 0.032, cp, ci + 1, a + 1000, opts=_sack((a + 2000, a + 3000)) + _sack((a + 4000, a + 6000)))
    sc.s(t + 0.033, cp, a + 11000, ci + 1, n=1000)
    sc.c(t + 0.034, cp, ci + 1, a + 1000, opts=_sack((a + 9000, a + 2000)))
    sc.s(t + 0.035, cp, a + 12000, ci + 1, n=1000, flags=ACK | FIN)
    sc.c(t + 0.036, cp, ci + 1, a + 1000, opts=b"\x01\x01" + bytes([5, 14]) + struct.pack("!III", a + 2000, a + 3000, a + 5000))
    sc.s(t + 0.037, cp, a + 1000, ci + 1, n=1000)
    sc.c(t + 0.038, cp, ci + 1, a + 1000)
    sc.s(t + 0.039, cp, a + 1000, ci + 1, n=1000)
    sc.c(t + 0.040, cp, ci + 1, a + 13001)
    # a SYN/ACK with another ISN re-bases the server's side while its list is out of order
    t += 1
    cp, ci, si = 50007, 14000, 600000
    sc.handshake(t, cp, ci, si)
    sc.s(t + 0.02, cp, si + 1001, ci + 1, n=1000)
    sc.s(t + 0.021, cp, si + 1, ci + 1, n=1000)
    sc.s(t + 0.022, cp, si + 2001, ci + 1, n=1000)
    sc.s(t + 0.023, cp, si + 7777, ci + 1, flags=SYN | ACK)
    sc.s(t + 0.024, cp, si + 3001, ci + 1, n=1000)
    sc.c(t + 0.03, cp, ci + 1, si + 2001)
    sc.s(t + 0.031, cp, si + 4001, ci + 1, n=1000)
    # ACKs at the same instant as their segment: acks_frame without ack_rtt
    t += 1
    cp, ci, si = 50005, 12000, 400000
    sc.handshake(t, cp, ci, si)
    sc.s(t + 0.26, cp, si + 1, ci + 1, n=500)
    sc.s(t + 0.26, cp, si + 501, ci + 1, n=500)
    sc.c(t + 0.26, cp, ci + 1, si + 1001)
    # past the cap (10,000 unacknowledged segments a direction): the list emptied by an ACK of
    # what it held, a retransmission's RTO counts from the highest segment
    t += 1
    cp, ci, si = 50006, 13000, 500000
    sc.handshake(t, cp, ci, si)
    for k in range(cap_segments):
        sc.s(t + 0.02 + k * 1e-6, cp, si + 1 + 10 * k, ci + 1, n=10)
    sc.c(t + 0.5, cp, ci + 1, si + 1 + 10 * min(cap_segments, 10_000))
    sc.s(t + 1.5, cp, si + 1 + 10 * (cap_segments - 2), ci + 1, n=10)
    sc.c(t + 1.6, cp, ci + 1, si + 1 + 10 * cap_segments)
    return sc.out


@needs_tshark
def test_corners_of_the_list_equal_tshark(tmp_path):
    p = tmp_path / "corners.pcap"
    write(p, [corners(40)])
    _agrees(p)


@needs_tshark
@pytest.mark.slow
def test_the_ten_thousand_segment_cap_equals_tshark(tmp_path):
    p = tmp_path / "cap.pcap"
    write(p, [corners()])
    seen = _agrees(p)
    assert seen["tcp.analysis.rto"] >= 1, seen


def cut_corners() -> list[tuple[float, bytes]]:
    """Lists whose segments ACKs cut (tcp_analysis keeps the cuts lazily: a sorted list's run of
    cut segments, an unsorted list's groups) — with copies of one segment, ACKs 2^31 away and
    relative numbers wrapping inside the list — each segment followed by bytes in flight."""
    sc = _Script()
    t = T0
    # a sorted list with each segment sent three times: every ACK inside one cuts its copies
    cp, ci, si = 50010, 20000, 700000
    sc.handshake(t, cp, ci, si)
    for k in range(4):
        for r in range(3):
            sc.s(t + 0.02 + (3 * k + r) * 1e-4, cp, si + 1 + 100 * k, ci + 1, n=100)
    for j, a in enumerate((5, 50, 50, 20, 99, 150, 260, 255)):
        sc.c(t + 0.03 + j * 1e-4, cp, ci + 1, si + 1 + a)
        sc.s(t + 0.0301 + j * 1e-4, cp, si + 1 + 400 + 10 * j, ci + 1, n=10)
    sc.c(t + 0.04, cp, ci + 1, si + 1 + 270 + 0x80000000)  # 2^31 past: the last ones leave, cut ones stay
    sc.s(t + 0.041, cp, si + 1 + 290, ci + 1, n=100)
    sc.c(t + 0.042, cp, ci + 1, si + 1 + 300)
    sc.s(t + 0.043, cp, si + 1 + 390, ci + 1, n=10)
    sc.c(t + 0.044, cp, ci + 1, si + 1 + 500)
    # sorted, from before the base (relative numbers wrap inside it), cut while it wraps
    t += 1
    cp, ci, si = 50011, 21000, 800000
    sc.handshake(t, cp, ci, si)
    for k in range(6):
        sc.s(t + 0.02 + k * 1e-4, cp, si - 250 + 100 * k, ci + 1, n=100)
    for j, a in enumerate((-240, -240, -170, -30, 10, 120)):
        sc.c(t + 0.03 + j * 1e-4, cp, ci + 1, si + a)
        sc.s(t + 0.0301 + j * 1e-4, cp, si + 350 + 10 * j, ci + 1, n=10)
    # out of order around the base: groups of cut segments, new ones below them, ACKs 2^31 away
    t += 1
    cp, ci, si = 50012, 22000, 900000
    sc.handshake(t, cp, ci, si)
    for j, k in enumerate((3, 1, 4, -2, 0, 2, -1, 5, 1)):
        sc.s(t + 0.02 + j * 1e-4, cp, si + 1 + 50 * k, ci + 1, n=50 if k != 1 else 120)
    acks = (-90, -60, 10, 5, 30, 31, 60, 0x80000000 + 100, 70, 120, 0x80000000 + 40, 260, 300)
    for j, a in enumerate(acks):
        sc.c(t + 0.03 + j * 1e-4, cp, ci + 1, si + 1 + a)
        sc.s(t + 0.0301 + j * 1e-4, cp, si + 1 + 50 * (j % 4) - 80, ci + 1, n=30)
    # sorted, three segments from one seq cut together, the last of them left by an ACK 2^31
    # away, then one out of order: the list stops being sorted with cut segments in it
    t += 1
    cp, ci, si = 50013, 23000, 1000000
    sc.handshake(t, cp, ci, si)
    for j, (a, n) in enumerate(((0, 100), (0, 110), (0, 120), (120, 100), (399, 10))):
        sc.s(t + 0.02 + j * 1e-4, cp, si + 1 + a, ci + 1, n=n)
    for j, (a, seg) in enumerate(((49, None), (49 + 65 + 0x80000000, (20, 20)), (59, (300, 10)), (100, (309, 5)), (110, None), (119, (310, 10)))):
        sc.c(t + 0.03 + j * 1e-4, cp, ci + 1, si + 1 + a)
        if seg:
            sc.s(t + 0.0301 + j * 1e-4, cp, si + 1 + seg[0], ci + 1, n=seg[1])
    # a segment whose next seq is exactly 2^31 past the ACK that cuts the first one: the list
    # spans 2^31 after the ACK too (walked), a segment joins it, ACKs walk it back into order
    t += 1
    cp, ci, si = 50014, 24000, 1100000
    sc.handshake(t, cp, ci, si)
    sc.s(t + 0.02, cp, si + 1, ci + 1, n=100)
    sc.s(t + 0.0201, cp, si + 101, ci + 1, n=100)
    sc.s(t + 0.0202, cp, si + 1 + 50 + 0x80000000 - 10, ci + 1, n=10)
    for j, (a, seg) in enumerate(((50, (200, 100)), (40, (300, 10)), (60, (310, 10)), (55, None), (101, (320, 10)), (320, (330, 10)))):
        sc.c(t + 0.03 + j * 1e-4, cp, ci + 1, si + 1 + a)
        if seg:
            sc.s(t + 0.0301 + j * 1e-4, cp, si + 1 + seg[0], ci + 1, n=seg[1])
    return sc.out


@needs_tshark
def test_cut_lists_equal_tshark(tmp_path):
    p = tmp_path / "cuts.pcap"
    write(p, [cut_corners()])
    seen = _agrees(p)
    assert seen["tcp.analysis.bytes_in_flight"] > 30 and seen["tcp.analysis.acks_frame"] > 3, seen


@needs_tshark
def test_acks_past_the_peers_data_show_the_initial_rtt_as_tshark(tmp_path):
    """tshark 4.0.17 makes a packet's SEQ/ACK record wherever its ACK number passes the peer's
    highest contiguous next seq, though it flags "ACKed unseen segment" only the first time (the
    peer's dup-ACK count then -1): the ACK after it has a tree with the initial RTT alone."""
    sc = _Script()
    cp, ci, si = 50020, 1000, 5000
    sc.handshake(T0, cp, ci, si)
    sc.s(T0 + 0.02, cp, si + 1, ci + 1, n=100)
    sc.c(T0 + 0.03, cp, ci + 1, si + 201)  # past the server's data: flagged
    sc.c(T0 + 0.04, cp, ci + 1, si + 301)  # further past: no flag, the record all the same
    sc.c(T0 + 0.05, cp, ci + 1, si + 301)  # (a duplicate ACK)
    sc.s(T0 + 0.06, cp, si + 301, ci + 1, n=100)
    sc.c(T0 + 0.07, cp, ci + 1, si + 501)
    p = tmp_path / "past.pcap"
    write(p, [sc.out])
    _agrees(p, every=False)
    theirs = tshark_values(p, None, ("tcp.analysis.flags",) + COMPARED, bytes_fields=frozenset(TIMES_COMPARED),
                           none_fields=frozenset({"tcp.analysis.flags"}))
    assert [n for n in sorted(theirs) if list(theirs[n]) == ["tcp.analysis.initial_rtt"]] == [6], theirs


# ------------------------------------------------------------------ display filters


FILTERS = ["tcp.analysis.ack_rtt > 0.01", "tcp.analysis.bytes_in_flight >= 10000", "tcp.analysis.acks_frame",
           "tcp.analysis.ack_rtt < 0.001 && tcp.analysis.acks_frame", "tcp.analysis.push_bytes_sent > 4000",
           "tcp.analysis.rto > 0.1", "tcp.analysis.bytes_in_flight == tcp.len", "tcp.analysis.rto_frame && !tcp.analysis.rto"]
# the filters that select nothing in tshark on a capture (every other one must select something)
EMPTY = {"lossy-h2": {FILTERS[7]}, "amazon": {FILTERS[3], FILTERS[5], FILTERS[7]}, "flows": {FILTERS[1], FILTERS[7]}}


@needs_tshark
@pytest.mark.parametrize("which", sorted(EMPTY))
def test_filters_select_what_tshark_selects(tmp_path, which):
    if which == "amazon":
        cap, keys = unpack_amazon(tmp_path)
    elif which == "flows":
        cap, keys = tmp_path / "flows.pcap", None
        write(cap, flows(SEED, 30))
    else:
        cap, keys = ROOT / "sample_captures" / "lossy" / "page-h2.pcapng", None
    an = analyze(str(cap), keylogs=[str(keys)] if keys else [])
    theirs = tshark_tap.tap(cap, FILTERS, keys)
    assert all(not theirs[e] for e in EMPTY[which]), theirs
    tshark_tap.assert_same_packets(which, [(e, e not in EMPTY[which]) for e in FILTERS], theirs,
                                   lambda e: tshark_tap.wirefall_packets(an, cap, e))


# ------------------------------------------------------------------ the packet detail tree


def _json_fields(obj, out: list) -> list:
    """tshark's JSON items of the compared fields under ``obj``, in tree order."""
    for k, v in obj.items():
        if k in COMPARED:
            out.append((k, v))
        elif isinstance(v, dict):
            _json_fields(v, out)
    return out


@needs_tshark
@pytest.mark.parametrize("which", ["lossy/page-h1.pcapng", "flows"])
def test_seq_ack_analysis_tree_shows_them_as_tshark(tmp_path, which):
    from wirefall.analyzer.detail import packet_detail

    if which == "flows":
        cap = tmp_path / "flows.pcap"
        write(cap, flows(SEED, 30))
    else:
        cap = ROOT / "sample_captures" / which
    theirs = tshark_values(cap, None, ("tcp.analysis.flags",) + COMPARED, bytes_fields=frozenset(TIMES_COMPARED),
                           none_fields=frozenset({"tcp.analysis.flags"}))
    listed = [n for n in sorted(theirs) if any(f in theirs[n] for f in FIELDS)]
    # (and the packets whose tree holds the initial RTT alone, no flag: ACKs past the peer's data)
    alone = [n for n in sorted(theirs) if list(theirs[n]) == ["tcp.analysis.initial_rtt"]]
    want = listed[:40] + [n for n in listed if "tcp.analysis.rto" in theirs[n]][:20] + alone[:20]
    flt = " || ".join(f"frame.number == {n}" for n in sorted(set(want)))
    raw = subprocess.run(["tshark", "-n", "-r", str(cap), "-T", "json", "-Y", flt], capture_output=True, text=True, check=True).stdout
    pkts = {int(p["_source"]["layers"]["frame"]["frame.number"]): p["_source"]["layers"]["tcp"] for p in json.loads(raw)}
    an = analyze(str(cap))
    src = PacketSource(str(cap))
    try:
        for n in sorted(set(want)):
            exp = _json_fields(pkts[n].get("tcp.analysis", {}), [])
            got = []
            for root in packet_detail(an, src, n):
                sa = root.find("tcp.analysis")
                if sa is not None:
                    got += [(x.abbrev, x.value) for x in sa.walk() if x.abbrev in COMPARED]
            assert got == exp, (n, got, exp)
    finally:
        src.close()
    assert (any(k == "tcp.analysis.rto" for n in want for k in theirs[n]) and alone) or which != "flows"
