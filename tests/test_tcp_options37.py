"""TCP options walked as tshark 4.0 walks them (``analyzer.packet.tcp_options``, the one walk of
them: the detail tree, the tcp.options.* filter fields, the Info column, the window scale the
flow layer and TCP analysis apply, the D-SACK expert item), held to tshark field by field on
segments built here: an EOL with options after it, NOP runs, a length byte missing, lengths 0
and 1, a length past the options' end, window scale shifts over 14, two window scale options,
options of a wrong length, SACK options cut short, several SACK options, D-SACK blocks.

Before (session 37) three walks disagreed with tshark and with each other: the tree and the
fields went on after an EOL (``00 01 03 03 07``: a window scale tshark does not see, the
connection's scale factor -1 where tshark says -2) and took an option running past the
options' end for a whole one; the flow layer's walk applied the first of two window scale
options (tshark the last) and one whose length ran past the end; the tree multiplied by
2**shift past 14, and the D-SACK item came once per segment (tshark: once per SACK option).

Outside truth: tshark 4.0 (``-T pdml``, ``-T fields``) on the same file: one capture, one
connection per case (SYN, SYN/ACK, ACK, ten bytes from the server, the client's ACK carrying
the case's data-segment options)."""
from __future__ import annotations

import collections
import re
import struct
from pathlib import Path

import pytest
from dpkt import in_cksum  # (the Internet checksum, RFC 1071)

import pdml
from conftest import need_tool, run_tool
from field_oracle import tshark_expert_items, tshark_values, wirefall_values
from wirefall.analyzer.packet import OPT_NO_LENGTH, OPT_PADDING, OPT_PAST_END, OPT_TOO_SHORT, tcp_options, wscale_option

SYN, ACK = 0x02, 0x10
CLIENT, SERVER = bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1])
SPORT0, DPORT = 50000, 42424  # (no dissector of tshark's on these ports)
CISN, SISN = 100, 1000
T0 = 1_700_000_000

MSS = b"\x02\x04\x05\xb4"
SYN_SACK = MSS + b"\x04\x02\x03\x03\x07\x00\x00\x00"  # MSS, SACK permitted, window scale 7, EOL padding
SYNACK = b"\x03\x03\x07\x01"  # window scale 7, NOP (no MSS: tshark's note on it)
TS = b"\x08\x0a\x00\x00\x00\x01\x00\x00\x00\x02"


def _sack(*blocks: tuple[int, int]) -> bytes:
    """A SACK option of ``blocks`` given relative to the server's ISN (the ACK is at 11)."""
    return bytes((5, 2 + 8 * len(blocks))) + b"".join(struct.pack("!II", SISN + a, SISN + b) for a, b in blocks)


# case -> (the SYN's options, the SYN/ACK's, the client's last ACK's); each a multiple of 4 bytes
CASES: dict[str, tuple[bytes, bytes, bytes]] = {
    "eol_then_options": (b"\x00\x01\x03\x03\x07\x00\x00\x00", SYNACK, b""),
    "eol_zeros": (MSS + b"\x00\x00\x00\x00", SYNACK, b""),
    "eol_eol_nop": (MSS + b"\x00\x00\x01\x00", SYNACK, b""),
    "eol_last_byte": (MSS + b"\x00\x00\x00\x01", SYNACK, b""),
    "ws_after_eol": (MSS + b"\x00\x03\x03\x07", SYNACK, b""),
    "nop_run": (MSS + b"\x01\x01\x01\x01\x03\x03\x07\x00", SYNACK, b""),
    "nop_run_of_8": (b"\x01" * 8 + MSS, SYNACK, b""),
    "nop_run_of_5": (MSS + b"\x01\x01\x01\x01\x01\x03\x03\x07", SYNACK, b""),
    "nops_around_mss": (b"\x01\x01" + MSS + b"\x01\x01", SYNACK, b""),
    "nops_3_mss_nop": (b"\x01\x01\x01" + MSS + b"\x01", SYNACK, b""),
    "no_length_byte": (MSS + b"\x01\x01\x01\x03", SYNACK, b""),
    "no_length_no_mss": (b"\x01\x01\x01\x03", SYNACK, b""),
    "no_mss": (b"\x01\x01\x01\x00", SYNACK, b""),
    "length_0": (MSS + b"\x03\x00\x07\x01", SYNACK, b""),
    "length_1": (MSS + b"\x03\x01\x07\x01", SYNACK, b""),
    "past_end_ws": (MSS + b"\x01\x03\x04\x07", SYNACK, b""),
    "past_end_nothing_left": (MSS + b"\x01\x01\x03\x03", SYNACK, b""),
    "past_end_ts": (MSS + b"\x01\x01\x08\x0a", SYNACK, b""),
    "ws_15": (MSS + b"\x03\x03\x0f\x00", SYNACK, b""),
    "ws_255": (MSS + b"\x03\x03\xff\x00", SYNACK, b""),
    "two_ws": (MSS + b"\x03\x03\x02\x03\x03\x05\x00\x00", SYNACK, b""),
    "ws_length_4": (MSS + b"\x03\x04\x07\x00", SYNACK, b""),
    "ws_length_2": (MSS + b"\x01\x01\x03\x02", SYNACK, b""),
    "ws_then_no_length": (MSS + b"\x03\x03\x05\x09", SYNACK, b""),
    "ws_then_padding": (MSS + b"\x03\x03\x05\x00\x01\x00\x00\x00", SYNACK, b""),
    "synack_ws_after_eol": (SYN_SACK, b"\x00\x03\x03\x07", b""),
    "unknown_kind": (MSS + b"\x99\x04\xaa\xbb\x03\x03\x07\x00", SYNACK, b""),
    "unknown_empty": (MSS + b"\x99\x02\x01\x00", SYNACK, b""),
    "echo_kind": (MSS + b"\x06\x02\x01\x00", SYNACK, b""),
    "mss_length_3": (b"\x02\x03\x05\x01\x03\x03\x07\x00", SYNACK, b""),
    "sack_perm_length_3": (MSS + b"\x04\x03\x00\x00", SYNACK, b""),
    "ts_length_9": (MSS + b"\x08\x09" + bytes(7) + b"\x01\x01\x01\x00\x00\x00\x00", SYNACK, b""),
    "sack": (SYN_SACK, SYNACK, b"\x01\x01" + _sack((12, 14))),
    "sack_after_eol": (SYN_SACK, SYNACK, b"\x00\x01" + _sack((12, 14))),
    "sack_length_14": (SYN_SACK, SYNACK, b"\x05\x0e" + _sack((12, 14), (16, 18))[2:14] + b"\x01\x01"),
    "sack_length_13": (SYN_SACK, SYNACK, b"\x05\x0d" + _sack((12, 14), (16, 18))[2:13] + b"\x01\x01\x01"),
    "sack_past_end": (SYN_SACK, SYNACK, b"\x01\x01\x05\x12" + _sack((12, 14))[2:]),
    "sack_then_short": (SYN_SACK, SYNACK, _sack((12, 14)) + b"\x05\x06" + _sack((1, 2))[2:6] + b"\x01\x01\x00\x00"),
    "dsack_below_ack": (SYN_SACK, SYNACK, b"\x01\x01" + _sack((1, 3))),
    "dsack_in_second_block": (SYN_SACK, SYNACK, _sack((15, 18), (14, 20)) + b"\x01\x01"),
    "dsack_not_in_second_option": (SYN_SACK, SYNACK, _sack((12, 14)) + _sack((1, 3)) + b"\x01\x01\x00\x00"),
    "dsack_in_two_options": (SYN_SACK, SYNACK, _sack((1, 3)) + _sack((12, 14)) + b"\x01\x01\x00\x00"),
    # a SACK option tshark marks D-SACK without a whole first block: it throws (Malformed Packet)
    "sack_length_6": (SYN_SACK, SYNACK, b"\x01\x01\x05\x06" + _sack((12, 14))[2:6]),
    "sack_length_7": (SYN_SACK, SYNACK, b"\x05\x07" + _sack((12, 14))[2:7] + b"\x01\x01\x01\x00\x00"),
    "sack_length_2": (SYN_SACK, SYNACK, b"\x01\x01\x05\x02"),
    "short_then_ts": (SYN_SACK, SYNACK, b"\x05\x06" + _sack((22, 24))[2:6] + TS + b"\x01\x01\x01\x01"),
    "dsack_then_short": (SYN_SACK, SYNACK, _sack((1, 3)) + b"\x05\x06" + _sack((1, 2))[2:6] + TS + b"\x01\x01"),
    "timestamps": (SYN_SACK, SYNACK, b"\x01\x01" + TS),
    "mss_on_data": (SYN_SACK, SYNACK, MSS),
    "mss_length_3_on_data": (SYN_SACK, SYNACK, b"\x02\x03\x05\x01"),
}
NAMES = list(CASES)


# ------------------------------------------------------------------ the capture


def _frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, opts: bytes = b"", data: bytes = b"") -> bytes:
    """Ethernet, IPv4 and TCP (checksums right), options as given."""
    assert len(opts) % 4 == 0 and len(opts) <= 40
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, (5 + len(opts) // 4) << 4, flags, 1000, 0, 0) + opts + data
    tcp = tcp[:16] + struct.pack("!H", in_cksum(src + dst + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", in_cksum(ip)) + ip[12:]
    return b"\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x01\x08\x00" + ip + tcp


def _write(path: Path) -> None:
    """Five packets per case, case k's from client port SPORT0 + k: frames 5k+1 … 5k+5."""
    frames = []
    for k, (syn, synack, last) in enumerate(CASES.values()):
        sp = SPORT0 + k
        frames += [_frame(CLIENT, SERVER, sp, DPORT, CISN, 0, SYN, syn),
                   _frame(SERVER, CLIENT, DPORT, sp, SISN, CISN + 1, SYN | ACK, synack),
                   _frame(CLIENT, SERVER, sp, DPORT, CISN + 1, SISN + 1, ACK),
                   _frame(SERVER, CLIENT, DPORT, sp, SISN + 1, CISN + 1, ACK, data=b"x" * 10),
                   _frame(CLIENT, SERVER, sp, DPORT, CISN + 1, SISN + 11, ACK, last)]
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", T0 + i, 0, len(fr), len(fr)) + fr)


def _opts_of(case: str, frame: int) -> bytes:
    """The options of frame ``frame`` (1-5) of ``case``'s connection."""
    return {1: CASES[case][0], 2: CASES[case][1], 5: CASES[case][2]}.get(frame, b"")


def _packet(case: str, frame: int) -> int:
    return 5 * NAMES.index(case) + frame


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    need_tool("tshark")
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.pipeline import analyze

    path = tmp_path_factory.mktemp("tcpopt37") / "options.pcap"
    _write(path)
    an = analyze(str(path))
    src = PacketSource(str(path))
    yield path, an, src
    src.close()


# ------------------------------------------------------------------ the walker itself


WALKS = [
    # (options, [(kind, value, offset)], stop)
    (b"", [], None),
    (b"\x01\x01\x01\x01", [(1, b"", 0), (1, b"", 1), (1, b"", 2), (1, b"", 3)], None),
    (b"\x00\x00\x00\x00", [(0, b"", 0), (0, b"", 1), (0, b"", 2), (0, b"", 3)], None),
    (b"\x00\x01\x03\x03\x07", [(0, b"", 0)], (OPT_PADDING, 1)),  # nothing after an EOL
    (b"\x02\x04\x05\xb4\x00\x00\x01\x00", [(2, b"\x05\xb4", 0), (0, b"", 4), (0, b"", 5)], (OPT_PADDING, 6)),
    (b"\x00\x05\x0a" + bytes(8), [(0, b"", 0)], (OPT_PADDING, 1)),  # (a SACK after EOL: none)
    (b"\x01\x01\x01\x03", [(1, b"", 0), (1, b"", 1), (1, b"", 2)], (OPT_NO_LENGTH, 3)),
    (b"\x03\x00\x07\x01", [], (OPT_TOO_SHORT, 0)),
    (b"\x01\x03\x01\x07", [(1, b"", 0)], (OPT_TOO_SHORT, 1)),
    (b"\x01\x03\x04\x07", [(1, b"", 0)], (OPT_PAST_END, 1)),
    (b"\x01\x01\x03\x03", [(1, b"", 0), (1, b"", 1)], (OPT_PAST_END, 2)),
    (b"\x03\x03\x07", [(3, b"\x07", 0)], None),  # (exactly to the end)
    (b"\x03\x03\x05\x09", [(3, b"\x05", 0)], (OPT_NO_LENGTH, 3)),  # (what came before a bad option stands)
    (b"\x99\x02\x05\x06" + bytes(4), [(0x99, b"", 0), (5, bytes(4), 2)], None),
    (b"\x03\x04\x07\x00", [(3, b"\x07\x00", 0)], None),  # (a length wrong for the kind is the dissector's to find)
]


@pytest.mark.parametrize("opts, want, stop", WALKS)
def test_walker_edge_cases(opts, want, stop):
    got = tcp_options(opts)
    assert list(got) == want
    assert got.stop == stop
    assert list(tcp_options(memoryview(opts))) == want  # (any bytes-like: a view of a packet too)


@pytest.mark.parametrize("opts, shift", [
    (b"\x03\x03\x07", 7), (b"\x03\x03\x0f\x00", 14), (b"\x03\x03\xff\x00", 14), (b"\x03\x03\x02\x03\x03\x05", 5),
    (b"\x00\x01\x03\x03\x07", None), (b"\x01\x03\x04\x07", None), (b"\x03\x04\x07\x00", None), (b"\x03\x02", None),
    (b"\x03\x03\x05\x09", 5), (b"\x03\x03\x05\x00\x01", 5), (b"", None), (b"\x03", None)])
def test_wscale_option(opts, shift):
    """The last well-formed window scale option walked, its shift capped at 14 (RFC 7323 §2.3)."""
    assert wscale_option(opts) == shift


# ------------------------------------------------------------------ against tshark

_STOPS = {OPT_PADDING: "Non-zero header padding", OPT_NO_LENGTH: "(length byte past end of options)",
          OPT_TOO_SHORT: "(with too-short option length", OPT_PAST_END: "says option goes past end of options)"}
# a SACK option tshark throws on (it dissects nothing after it): the walk goes on there
_THROWS = {"sack_length_6", "sack_length_7", "sack_length_2", "short_then_ts", "dsack_then_short"}


def _tshark_fields(path: Path, *names: str) -> dict[int, list[str]]:
    out = run_tool("tshark", "-n", "-r", str(path), "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=\x1f",
                   "-e", "frame.number", *(x for f in names for x in ("-e", f)))
    return {int(r.split("\t")[0]): r.split("\t")[1:] for r in out.splitlines()}


@pytest.mark.parametrize("case", NAMES)
def test_walk_is_tsharks(built, case):
    """The walk's options are tshark's (tcp.option_kind, tcp.option_len in order), and where it
    stops early tshark says why (its note's words)."""
    path = built[0]
    rows = _tshark_fields(path, "tcp.option_kind", "tcp.option_len", "_ws.expert.message")
    for frame in (1, 2, 5):
        opts = _opts_of(case, frame)
        if not opts or (frame == 5 and case in _THROWS):
            continue
        kinds, lens, notes = rows[_packet(case, frame)]
        walked = tcp_options(opts)
        assert [str(k) for k, _, _ in walked] == [k for k in kinds.split("\x1f") if k], (case, frame)
        assert [str(len(v) + 2) for k, v, _ in walked if k > 1] == [x for x in lens.split("\x1f") if x], (case, frame)
        said = [w for w in _STOPS.values() if w in notes]
        assert said == ([_STOPS[walked.stop[0]]] if walked.stop else []), (case, frame, notes)


FIELDS = ("tcp.options.mss_val", "tcp.options.wscale.shift", "tcp.options.timestamp.tsval", "tcp.options.timestamp.tsecr",
          "tcp.options.sack_perm", "tcp.options.sack_le", "tcp.options.sack_re", "tcp.options.sack.count",
          "tcp.options.sack.dsack_le", "tcp.options.sack.dsack_re", "tcp.window_size_scalefactor", "tcp.window_size")


@pytest.fixture(scope="module")
def field_values(built):
    path, an, _src = built
    return (tshark_values(path, None, FIELDS, bytes_fields={"tcp.options.sack_perm"}),
            wirefall_values(an, path, FIELDS, bytes_fields={"tcp.options.sack_perm"}))


@pytest.mark.parametrize("case", NAMES)
def test_fields_are_tsharks(field_values, case):
    """The tcp.options.* fields on every packet of the case, and the window scale applied to the
    client's segments after the handshake (tcp.window_size_scalefactor, tcp.window_size)."""
    theirs, ours = field_values
    for n in range(_packet(case, 1), _packet(case, 5) + 1):
        assert ours.get(n, {}) == theirs.get(n, {}), (case, n - _packet(case, 1) + 1)


def test_fields_compare_something(field_values):
    """(the comparison above is not of empty maps: tshark shows each field somewhere)"""
    theirs = field_values[0]
    assert {f for v in theirs.values() for f in v} == set(FIELDS)
    assert theirs[_packet("two_ws", 5)]["tcp.window_size_scalefactor"] == [32]  # (the second option's 2**5)
    assert theirs[_packet("eol_then_options", 5)]["tcp.window_size_scalefactor"] == [-2]
    assert theirs[_packet("ws_15", 5)]["tcp.window_size_scalefactor"] == [16384]


@pytest.mark.parametrize("case", NAMES)
def test_flow_layer_window_scale(built, field_values, case):
    """The shift the flow layer recorded for the client (``Connection.tcp.wscale``: the tree's
    and the filter's calculated window) is the one tshark applies: 2**shift is its scale factor
    (the server always offers one here), none where tshark says no scaling (-2)."""
    an = built[1]
    factor = field_values[0][_packet(case, 3)].get("tcp.window_size_scalefactor")
    conn = an.connections[an.index.conn[_packet(case, 1) - 1]]
    assert factor == [-2] or factor and factor[0] > 0, (case, factor)  # (every case is one of the two)
    if factor[0] > 0:
        assert 1 << conn.tcp.wscale[0] == factor[0], case
    elif wscale_option(CASES[case][1]) is not None:  # no scaling, though the server offers it: the client's is none
        assert conn.tcp.wscale[0] is None, case
    else:  # no scaling, the server's option not taken (one after its EOL): the server's is none
        assert conn.tcp.wscale[1] is None, case


def test_dsack_items_are_tsharks(built):
    """The D-SACK expert item: one per SACK option tshark marks (two options, two items), none
    where it throws before it."""
    from wirefall.analyzer import expert

    path, an, src = built
    ours: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for it in expert.compute(an, src):
        if it.kind == "tcp.options.sack.dsack":
            ours[it.packet][(it.summary, int(it.severity), int(it.group))] += 1
    theirs = tshark_expert_items(["tshark", "-n", "-r", str(path)], re.compile("^D-SACK"))
    assert dict(ours) == dict(theirs)
    assert sum(theirs[_packet("dsack_in_two_options", 5)].values()) == 2
    assert {n for n in theirs} == {_packet(c, 5) for c in ("dsack_below_ack", "dsack_in_second_block", "dsack_in_two_options",
                                                            "dsack_then_short")}


def _tcp_layer(pkt) -> list[pdml.Line]:
    tcp = next(p for p in pkt.findall("proto") if p.get("name") == "tcp")
    rows = [pdml.proto_line(tcp), *(r[:3] for r in pdml.field_lines(tcp))]
    mal = [pdml.proto_line(p) for p in pkt.findall("proto") if p.get("name") == "_ws.malformed"]
    mal += [r[:3] for p in pkt.findall("proto") if p.get("name") == "_ws.malformed" for r in pdml.field_lines(p)]
    return rows + mal


def _options_lines(lines: list[pdml.Line]) -> list[pdml.Line]:
    """The ``Options:`` line and those under it (tshark's: up to the next line of the TCP tree
    that is not one of the options')."""
    at = next((i for i, x in enumerate(lines) if x[0].startswith("Options: (")), None)
    if at is None:
        return []
    end = next((i for i in range(at + 1, len(lines)) if lines[i][0].startswith(("[Timestamps]", "Timestamps", "SEQ/ACK analysis",
                                                                                  "TCP payload"))), len(lines))
    return lines[at:end]


@pytest.fixture(scope="module")
def tshark_trees(built):
    return dict(pdml.packets("-n", "-r", str(built[0])))


@pytest.mark.parametrize("case", NAMES)
def test_tree_is_tsharks(built, tshark_trees, case):
    """The detail tree's TCP layer on each packet of the case: the options' lines exactly
    tshark's (words, offset, length, in order), the rest of the layer in tshark's order with
    nothing of its left out."""
    from wirefall.analyzer.detail import packet_detail

    path, an, src = built
    first = _packet(case, 1)
    for n in range(first, first + 5):
        pkt = tshark_trees[n]
        theirs = _tcp_layer(pkt)
        tree = packet_detail(an, src, n)
        i = next(k for k, node in enumerate(tree) if node.label.startswith("Transmission Control Protocol"))
        ours = [pdml.line(x.label, x.start, x.end - x.start if x.start >= 0 else -1)
                for node in tree[i:] for x in node.walk() if not x.label.startswith("[Connection: ")]
        assert _options_lines(ours) == _options_lines(theirs), (case, n - first + 1)
        pdml.in_order(ours, theirs, f"{case} frame {n - first + 1}")
        assert [t for t in theirs if t not in ours] == [], (case, n - first + 1)


@pytest.mark.parametrize("case", NAMES)
def test_info_is_tsharks(built, case):
    from wirefall.analyzer.detail import packet_row

    path, an, src = built
    info = _tshark_fields(path, "_ws.col.Info")
    for n in range(_packet(case, 1), _packet(case, 5) + 1):
        assert packet_row(an, src, n)[6] == info[n][0], (case, n - _packet(case, 1) + 1)
