"""Where the TCP analysis stops knowing (analyzer/tcp_analysis.py, analyzer/expert.py), and its
per-packet tables grown with the pass.

- A direction's list of unacknowledged segments given up past its walk budget
  (``TcpAnalysis.list_unknown``): one expert item of wirefall's own (``wirefall.tcp.list_unknown``,
  Warning / Sequence) per direction, on the packet ``list_unknown_at`` names — the first from
  which the fields tshark shows (``tshark -T fields -e tcp.analysis.acks_frame …``) are absent on
  our side —, none on the bundled captures.
- A FIN sent once that list is given up while it may hold tshark's 10,000 segments: whether
  tshark counts it in the sequence space is unknown, and so are the conversation's later
  analysis flags (``seq_unknown``).  Outside truth: ``tshark -T fields -e tcp.analysis.*`` on every
  packet of the hostile flows of scripts/hostile/tcp_unacked30_inputs.py (``spread_fin``: tshark's
  list full, it does not count the FIN; ``spread_fin_room``: it does; ``spread_fin_short``: far
  from the cap, counted and known): wirefall's fields are tshark's or absent, never different
  (the code before counted the FIN always: its sending again was a "retransmission" tshark
  does not show).
- ``_grow``: a pass run to packet k allocates the tables for about k packets, not the whole
  capture; a packet past them reads as not analysed yet (no IndexError), as one past
  ``packets`` did.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import sample_captures
from test_tcp_rtt30 import FIELDS, differences

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.hostile import tcp_unacked30_inputs as hi  # noqa: E402
from wirefall.analyzer import expert  # noqa: E402
from wirefall.analyzer import tcp_analysis as tcp  # noqa: E402
from wirefall.analyzer.capture import PacketSource  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

FLAGS = tuple(sorted(tcp.FIELDS))
LIST = ("tcp.analysis.acks_frame", "tcp.analysis.bytes_in_flight", "tcp.analysis.push_bytes_sent", "tcp.analysis.rto_frame")
DUP = ("tcp.analysis.duplicate_ack_num", "tcp.analysis.duplicate_ack_frame")
SAMPLES = ROOT / "sample_captures"


def _cap(tmp: Path, name: str, frames=None) -> Path:
    p = tmp / f"{name}.pcap"
    hi.write(p, frames if frames is not None else {**hi.INPUTS, **hi.EXTRA}[name](1))
    return p


def _analysis(cap: Path):
    an = analyze(str(cap))
    src = PacketSource(str(cap))
    try:
        return an, tcp.tcp_analysis(an, src), expert.compute(an, src)
    finally:
        src.close()


def _own(items, kind: str):
    return [it for it in items if it.kind == kind]


def _against_tshark(cap: Path):
    """([(packet, field, tshark's, wirefall's)] that differ — flags as present or not, per packet
    —, tshark's values, the analysis): every ``tcp.analysis`` flag, the duplicate-ACK number and
    frame, and the fields from the list (``test_tcp_rtt30.differences``)."""
    diffs, theirs, an = differences(cap, None, FLAGS + DUP + LIST, present=frozenset(FLAGS))
    return diffs, theirs, an.__dict__["_wf_tcp_analysis"]


# ------------------------------------------------------------------ (1) the expert item of a list given up


@needs_tshark
def test_a_list_given_up_has_one_expert_item_where_its_fields_stop(tmp_path):
    cap = _cap(tmp_path, "spread")
    diffs, theirs, ta = differences(cap, fields=FIELDS)
    an, ta, items = _analysis(cap)
    assert list(ta.list_unknown) == [(0, 1)], ta.list_unknown
    got = _own(items, "wirefall.tcp.list_unknown")
    assert len(got) == 1, got
    it = got[0]
    # on the packet list_unknown_at names for the first packet whose fields tshark shows and we
    # no longer do — and before it every field agrees (tshark shows hundreds)
    first = min(n for n, *_ in diffs)
    assert it.packet == ta.list_unknown[(0, 1)] == ta.list_unknown_at(first) and it.packet <= first
    assert all(b is None for _n, _f, _a, b in diffs)
    assert sum(1 for n, v in theirs.items() if n < it.packet and v) > 500
    # typed: wirefall's, Warning / Sequence, its connection; its args the given-up direction's
    # ports: the server's segments (port 80 to the client's)
    assert (it.origin, it.severity, it.group, it.protocol) == (expert.Origin.WIREFALL, expert.Severity.WARN,
                                                              expert.Group.SEQUENCE, "TCP")
    assert it.connection == an.index.conn[it.packet - 1] and it.args == (80, 40005)
    assert "no longer followed from this frame" in it.summary and "port 80 to port 40005" in it.summary
    assert expert.item_dict(it)["kind"] == "wirefall.tcp.list_unknown"
    # not among the items tshark makes (the _ws.expert filter fields): wirefall's own
    from wirefall.analyzer.fields.packet import PacketContext
    from wirefall.analyzer.fields.wsexpert import items_by_packet

    src = PacketSource(str(cap))
    try:
        assert all(x.kind != it.kind for xs in items_by_packet(PacketContext(an, src)).values() for x in xs)
    finally:
        src.close()


def test_one_item_per_direction_given_up(tmp_path):
    # two conversations whose server lists are both given up (each within the capture's budget)
    frames = hi.spread(1)
    later = [(ts + 100, fr.replace(b"\x9c\x45", b"\x9c\x46")) for ts, fr in frames]  # (port 40005 -> 40006)
    cap = _cap(tmp_path, "two", frames + later)
    an, ta, items = _analysis(cap)
    assert set(ta.list_unknown) == {(0, 1), (1, 1)}, ta.list_unknown
    got = _own(items, "wirefall.tcp.list_unknown")
    assert sorted(it.packet for it in got) == sorted(ta.list_unknown.values())
    assert sorted(it.args for it in got) == [(80, 40005), (80, 40006)]
    # every later packet of theirs is unknown too, and carries no item of its own
    assert sum(1 for n in range(1, an.packets + 1) if ta.list_unknown_at(n) is not None) > 1000


def test_no_such_item_on_the_bundled_captures():
    for path, keys in sample_captures():
        an = analyze(str(path), keylogs=keys)
        src = PacketSource(str(path))
        try:
            ta = tcp.tcp_analysis(an, src)
            items = expert.compute(an, src)
        finally:
            src.close()
        assert not ta.list_unknown and not ta.seq_unknown, path
        assert not [it for it in items if it.kind.startswith("wirefall.tcp.")], path


# ------------------------------------------------------------------ (2) a FIN past the cap of a list given up


@needs_tshark
@pytest.mark.slow
@pytest.mark.parametrize("name", ["spread_fin", "spread_fin_room"])
def test_a_fin_that_may_not_count_leaves_the_flags_after_it_unknown_not_wrong(tmp_path, name):
    cap = _cap(tmp_path, name)
    diffs, theirs, ta = _against_tshark(cap)
    fin = _server_fins(cap)[0]
    # never different from tshark: absent on our side only (the FIN counted always, as before,
    # made its sending again a retransmission where tshark's list was full)
    assert diffs
    for n, f, a, b in diffs:
        assert b is None and a is not None, (n, f, a, b)
    # the flags only after the FIN, the list's fields only from where it was given up
    assert ta.list_unknown == {(0, 1): ta.list_unknown[(0, 1)]} and ta.list_unknown[(0, 1)] < fin
    assert ta.seq_unknown == {0: fin}, ta.seq_unknown
    for n, f, _a, _b in diffs:
        assert n > fin if f in FLAGS + DUP else n >= ta.list_unknown[(0, 1)], (n, f)
    # the FIN's own flags are known, and it is where the expert item says so
    assert ta.seq_unknown_at(fin) is None and ta.seq_unknown_at(fin + 1) == fin
    an, _, items = _analysis(cap)
    got = _own(items, "wirefall.tcp.analysis_unknown")
    assert [(it.packet, it.args, it.severity, it.group) for it in got] == [(fin, ("FIN", 80), expert.Severity.WARN, expert.Group.SEQUENCE)]
    # the packet detail says so from the packet after the FIN (not on the FIN, whose flags are known)
    assert [_flags_unknown_line(an, cap, n) for n in (fin, fin + 1, fin + 2)] == [
        None, f"frame {fin}'s SYN/FIN", f"frame {fin}'s SYN/FIN"]
    # the FIN sent again (fin + 2): tshark says "retransmission" only where it counted the first
    again = theirs.get(fin + 2, {})
    assert ("tcp.analysis.retransmission" in again) == (name == "spread_fin_room")
    assert not ta.has(fin + 2, "tcp.analysis.retransmission") and not ta.fields(fin + 2)
    # tshark has flags there that we leave out (a comparison that cannot fail is none)
    assert any(f in FLAGS for n, f, _a, _b in diffs), diffs


def _flags_unknown_line(an, cap: Path, n: int) -> str | None:
    """What packet ``n``'s SEQ/ACK tree says of flags it cannot know: "frame F's SYN/FIN", or None."""
    from wirefall.analyzer.detail import packet_detail

    src = PacketSource(str(cap))
    try:
        nodes = packet_detail(an, src, n)
    finally:
        src.close()
    stack, lines = list(nodes), []
    while stack:
        nd = stack.pop()
        lines.append(nd.label)
        stack += nd.children
    got = [ln for ln in lines if ln.startswith("[TCP analysis flags: unknown")]
    assert len(got) <= 1
    return got[0].split("whether ", 1)[1].split(" counts", 1)[0] if got else None


def _server_fins(cap: Path) -> list[int]:
    out = subprocess.run(["tshark", "-n", "-r", str(cap), "-Y", "tcp.srcport == 80 && tcp.flags.fin == 1", "-T", "fields",
                          "-e", "frame.number"], capture_output=True, text=True, check=True, timeout=300).stdout
    return [int(x) for x in out.split()]


@needs_tshark
def test_a_fin_below_the_cap_counts_as_before(tmp_path):
    # the list given up while it held 2,000 segments: its count stays known to be below the cap,
    # so the FIN counts, and every flag after it is tshark's
    cap = _cap(tmp_path, "spread_fin_short")
    diffs, theirs, ta = _against_tshark(cap)
    assert ta.list_unknown and not ta.seq_unknown
    assert diffs and all(f in LIST and b is None and n >= ta.list_unknown[(0, 1)] for n, f, _a, b in diffs), diffs[:5]
    fin = _server_fins(cap)[0]
    assert fin > ta.list_unknown[(0, 1)] and ta.seq_unknown_at(fin + 1) is None
    assert any("tcp.analysis.flags" in v for n, v in theirs.items() if n > fin)  # (compared, and equal)


def test_the_upper_bound_of_a_list_given_up():
    budget = [tcp.WALK_BUDGET]
    fl = tcp._Flow(budget)
    fl.umode = 2
    fl.useq, fl.unxt, fl.ufr = [1, 2, 3], [2, 3, 4], [1, 2, 3]
    fl.uh = 1
    tcp._give_up(fl)
    assert fl.umode == 3 and fl.ubound == 2
    tcp._append(fl, 5, 6, 9)
    assert fl.ubound == 3 and not fl.unxt


# ------------------------------------------------------------------ (3) the tables grow with the pass


def _readers(ta, n: int):
    """Every answer the analysis gives for packet ``n`` (its public readers)."""
    return (ta.has(n, "tcp.analysis.flags"), ta.fields(n), ta.info_prefix(n), ta.relative(n, 5, 7), ta.list_unknown_at(n),
            ta.seq_unknown_at(n), ta.colour_rule(n), ta.initial_rtt(n), ta.window(n, 100), ta.acked(n), ta.in_flight(n))


@needs_tshark
def test_a_pass_to_the_first_rows_allocates_for_them_only(tmp_path):
    path = SAMPLES / "lossy" / "page-spdy.pcapng"
    an = analyze(str(path))
    npk = an.packets
    fresh = tcp.TcpAnalysis()
    src = PacketSource(str(path))
    try:
        ta = tcp.tcp_analysis(an, src, upto=40)
        tables = ("flags", "tcp_flags", "conv", "fwd", "wshift", "acks_frame", "ack_rtt", "bytes_in_flight", "push_bytes_sent")
        assert npk > 300 and ta.packets == 40
        assert {len(getattr(ta, k)) for k in tables} == {40}  # (was npk: every packet's, at the first call)
        # a packet past the tables reads as one not analysed yet, as a packet past ``packets`` did
        for n in (41, 42, npk, npk + 1):
            assert _readers(ta, n) == _readers(fresh, n)
        assert ta.counts(an.index.conn, 0) == fresh.counts(an.index.conn, 0)
        # the packet detail and the filter fields run it as far as they need
        from wirefall.analyzer import detail

        assert detail.packet_detail(an, src, 100) and ta.packets >= 100
        steps = []
        for n in range(101, npk + 1, 7):
            tcp.tcp_analysis(an, src, upto=n)
            steps.append(len(ta.flags))
        assert len(steps) > 30 and len(set(steps)) <= 3  # (doubled: a few extensions, not one per call)
        tcp.tcp_analysis(an, src)
        assert {len(getattr(ta, k)) for k in tables} == {npk}
    finally:
        src.close()
    # the first rows' flags are tshark's
    out = subprocess.run(["tshark", "-n", "-r", str(path), "-Y", "tcp.analysis.flags", "-T", "fields", "-e", "frame.number"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    assert {i + 1 for i, f in enumerate(ta.flags) if f} == {int(x) for x in out.split()}


def test_grow_doubles_up_to_the_capture():
    ta = tcp.TcpAnalysis()
    tcp._grow(ta, 10, 1000)
    assert len(ta.flags) == 10 and list(ta.conv) == [-1] * 10 and list(ta.wshift) == [-1] * 10
    tcp._grow(ta, 11, 1000)
    assert len(ta.flags) == len(ta.ack_rtt) == len(ta.fwd) == 20
    tcp._grow(ta, 15, 1000)
    assert len(ta.flags) == 20
    tcp._grow(ta, 700, 1000)
    assert len(ta.flags) == 700
    tcp._grow(ta, 701, 1000)
    assert len(ta.flags) == len(ta.push_bytes_sent) == 1000
