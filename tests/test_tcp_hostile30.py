"""tshark's list of unacknowledged segments on hostile flows (scripts/hostile/tcp_unacked30_inputs.py):
the work per ACK stays O(log n) — out-of-order lists are kept indexed by sequence number, not
walked — and the six fields from the list stay tshark's (analyzer/tcp_analysis.py).

- Linearity, not absolute time: ``tcp_analysis``'s CPU per packet on an input 4x larger stays
  within 2x of the smaller one's (the list walked per ACK took ~1000x on the nibble flow).
- Outside truth: ``tshark -T fields -e tcp.analysis.acks_frame … rto_frame`` on every packet
  of each input at a size tshark itself walks quickly (tests/test_tcp_rtt30.py's ``compare``):
  no disagreement.  The one shape the list cannot be indexed in (segments 2^31 apart: walked,
  under a budget) agrees with tshark until the budget runs out; from then on the direction's
  fields are absent, never different, and ``TcpAnalysis.list_unknown`` says from which packet.
"""
from __future__ import annotations

import re
import shutil
import sys
import time
from pathlib import Path

import pytest
from test_tcp_rtt30 import FIELDS, compare, differences

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.hostile import tcp_unacked30_inputs as hi  # noqa: E402
from wirefall.analyzer import tcp_analysis as tcp  # noqa: E402
from wirefall.analyzer.capture import PacketSource  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

# (scale of the smaller input for the linearity test: ~0.05 s of analysis or more)
SCALES = {"nibble": 2.5, "backforth": 2.5, "sack": 4, "many_flows": 1, "wrap": 2.5, "dup_nibble": 2.5, "spread": 1}
# the fields a direction's list gives: on the peer's packets (an ACK of it), on its own packets
ACK_SIDE = {"tcp.analysis.acks_frame", "tcp.analysis.ack_rtt"}
OWN_SIDE = {"tcp.analysis.bytes_in_flight", "tcp.analysis.push_bytes_sent", "tcp.analysis.rto", "tcp.analysis.rto_frame"}


def _cap(tmp: Path, name: str, scale: float) -> Path:
    p = tmp / f"{name}-{scale}.pcap"
    hi.write(p, hi.INPUTS[name](scale))
    return p


def _cpu(cap: Path) -> tuple[float, int]:
    """(best CPU seconds of ``tcp_analysis`` over three runs, packets)."""
    an = analyze(str(cap))
    best = float("inf")
    for _ in range(3):
        an.__dict__.pop("_wf_tcp_analysis", None)
        src = PacketSource(str(cap))
        try:
            t = time.process_time()
            tcp.tcp_analysis(an, src)
            best = min(best, time.process_time() - t)
        finally:
            src.close()
    return best, an.packets


def test_inputs_are_deterministic():
    for name, fn in hi.INPUTS.items():
        assert fn(0.5) == fn(0.5), name


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(hi.INPUTS))
def test_cpu_per_packet_stays_flat_on_a_4x_input(tmp_path, name):
    s = SCALES[name]
    small, big = _cap(tmp_path, name, s), _cap(tmp_path, name, 4 * s)
    (ts, ns), (tb, nb) = _cpu(small), _cpu(big)
    assert nb > 3.5 * ns
    assert tb / nb <= 2 * ts / ns, (name, ts, ns, tb, nb)


@needs_tshark
@pytest.mark.parametrize("name", sorted(set(hi.INPUTS) - {"spread"}))
def test_hostile_lists_equal_tshark(tmp_path, name):
    cap = _cap(tmp_path, name, 1)
    npk, seen, bad = compare(cap)
    assert not bad, (len(bad), bad[:8])
    assert npk > 1800 and seen["tcp.analysis.bytes_in_flight"] >= 400, seen
    if name in ("backforth", "sack", "wrap", "many_flows"):
        assert seen["tcp.analysis.acks_frame"] > 0, seen
    an = analyze(str(cap))
    src = PacketSource(str(cap))
    try:
        assert not tcp.tcp_analysis(an, src).list_unknown
    finally:
        src.close()


@needs_tshark
def test_a_list_spread_over_2_31_equals_tshark_within_its_budget(tmp_path):
    npk, seen, bad = compare(_cap(tmp_path, "spread", 0.25))
    assert not bad, (len(bad), bad[:8])
    assert seen["tcp.analysis.bytes_in_flight"] > 200, seen


def _differences(cap: Path) -> tuple[list[tuple[int, str, list | None, list | None]], dict, object]:
    diffs, theirs, an = differences(cap, fields=FIELDS)
    return diffs, theirs, an.__dict__["_wf_tcp_analysis"]


def _walk(nodes):
    for nd in nodes:
        yield nd
        yield from _walk(nd.children)


@needs_tshark
def test_past_its_walk_budget_a_list_is_unknown_not_wrong(tmp_path):
    cap = _cap(tmp_path, "spread", 1)
    diffs, theirs, ta = _differences(cap)
    assert ta.list_unknown == {(0, 1): ta.list_unknown.get((0, 1))}, ta.list_unknown  # (the server's side)
    start = ta.list_unknown[(0, 1)]
    assert 1000 < start < 3000
    assert diffs
    for n, f, a, b in diffs:
        # absent on our side only, from that packet on, only the fields the server's list gives
        assert b is None and a is not None and n >= start, (n, f, a, b)
        side = ta.fwd[n - 1]
        assert (f in OWN_SIDE) if side == 1 else (f in ACK_SIDE), (n, f, side)
    # before it every packet agrees, tshark's fields present there too
    assert sum(1 for n, v in theirs.items() if n < start and v) > 500
    # the detail tree says they are unknown, and from which frame, where they are missing
    n = min(n for n, *_ in diffs)
    assert ta.list_unknown_at(n) == start and ta.list_unknown_at(start - 1) is None
    from wirefall.analyzer import detail
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.pipeline import analyze

    an = analyze(str(cap))
    src = PacketSource(str(cap))
    try:
        texts = [nd.label for nd in _walk(detail.packet_detail(an, src, n))]
    finally:
        src.close()
    assert any(f"no longer followed from frame {start}" in t for t in texts), texts


@needs_tshark
def test_the_capture_budget_is_shared_by_its_flows(tmp_path, monkeypatch):
    # two conversations, each within its own budget but not within the capture's
    frames = hi.spread(0.25)
    one = tmp_path / "one.pcap"
    hi.write(one, frames)
    an = analyze(str(one))
    src = PacketSource(str(one))
    try:
        ta = tcp.tcp_analysis(an, src)
    finally:
        src.close()
    assert not ta.list_unknown
    spent = tcp.WALK_BUDGET - ta._convs[0].a.ubud[0]
    assert spent > 10_000
    monkeypatch.setattr(tcp, "WALK_BUDGET", spent * 3 // 2)
    later = [(ts + 100, fr.replace(b"\x9c\x45", b"\x9c\x46")) for ts, fr in frames]  # (port 40005 -> 40006)
    cap = tmp_path / "two.pcap"
    hi.write(cap, frames + later)
    diffs, _, ta = _differences(cap)
    assert list(ta.list_unknown) == [(1, 1)], ta.list_unknown
    start = ta.list_unknown[(1, 1)]
    assert diffs and all(b is None and n >= start for n, _, _, b in diffs), diffs[:5]


def test_the_budgets_are_counted_in_segments_visited():
    assert re.search(r"WALK_BUDGET_FLOW = [\d_]+", Path(tcp.__file__).read_text())
    assert 0 < tcp.WALK_BUDGET_FLOW <= tcp.WALK_BUDGET
