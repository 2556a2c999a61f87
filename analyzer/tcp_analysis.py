"""TCP sequence analysis as Wireshark does it: retransmissions, duplicate ACKs, windows.

``tcp_analysis(analysis, source, upto=None) -> TcpAnalysis`` re-reads the TCP headers of the capture
once (through the packet index: offsets and link types; ``analyzer.packet.Decoder`` decodes
link, IP and TCP headers) and runs the per-segment rules of Wireshark's
``tcp_analyze_sequence_number`` (epan/dissectors/packet-tcp.c) with tshark 4.0's default
preferences (``tcp.analyze_sequence_numbers: TRUE``, ``tcp.fastrt_supersedes_ooo: TRUE``,
``tcp.default_window_scaling: Not known``, ``tcp.relative_sequence_numbers: TRUE``), in its
order of checks:

  port reuse (a SYN on a known 4-tuple), zero window probe, zero window, previous segment
  not captured, keep-alive, window update, window full, keep-alive ACK, zero window probe
  ACK, duplicate ACK (with its number and the frame it duplicates), ACKed unseen segment,
  then — for segments with data, SYN or FIN — spurious retransmission, fast retransmission
  (two or more duplicate ACKs asking for this sequence number within 20 ms), out-of-order
  (arrived within the connection's initial RTT, or 3 ms without one, of the highest segment
  and not exactly filling up to it), retransmission.

Where tshark 4.0.17 differs from later packet-tcp.c, this follows 4.0.17 (checked packet by
packet, see docs/TCP_ANALYSIS.md): ACKed unseen jumps with ``LT_SEQ``, a retransmitted SYN is
no port reuse, the duplicate-ACK counter is unsigned (its -1 counts as >= 2), a SYN sent again
(same ISN) takes the flow's highest sequence number back to its highest contiguous one.  Times
compare in whole microseconds (nanoseconds for finer captures), as tshark's integers do.

Conversations are tshark's: by 4-tuple, a new one when a SYN on a known 4-tuple carries
another initial sequence number than the conversation's (tshark's "port numbers reused").
All sequence arithmetic is modulo 2^32 as in C (``GT_SEQ`` and friends).

Result (cached on the analysis, ``analysis.__dict__["_wf_tcp_analysis"]``; ``_wf_`` fields
are derived indexes the analysis cache does not pickle, so reopening a cached analysis
recomputes it on first use):

- ``flags``: ``array('H')``, one entry per packet (index ``n - 1``), bits ``F_*`` below (0 for
  packets without flags and for non-TCP packets);
- ``FIELDS``: tshark field name -> bit mask; a packet has field ``name`` iff
  ``flags[n - 1] & FIELDS[name]`` (``tcp.analysis.retransmission`` is set on fast and
  spurious retransmissions too, as tshark's expert items are; ``tcp.analysis.flags`` on any);
- ``dupack``: packet -> ``(tcp.analysis.duplicate_ack_num, tcp.analysis.duplicate_ack_frame)``;
- ``info_prefix(n)``: the Info column prefix tshark prints (``[TCP Dup ACK 110#3] ``, …);
- for the Info column: per packet the tshark conversation (``conv``), its direction
  (``fwd``) and the window shift tshark applied (``wshift``), per conversation the base
  sequence numbers (``base``) for relative sequence numbers;
- ``counts(conn_ids, conn)`` / ``stats(analysis)``: counts per flag name, per connection
  (wirefall's connection ids) and for the capture;
- ``colour_rule(n)``: Wireshark's default colouring rule for TCP (Bad TCP, TCP RST, TCP SYN/FIN);
- from tshark's list of unacknowledged segments per direction (``tcp_unacked_t``: seq, next
  seq, frame, time; at most 10 000, ``MAX_UNACKED``, past which a segment is not listed and a
  FIN's sequence number not counted), per packet in arrays (0: absent): ``acks_frame`` and
  ``ack_rtt`` (``acked(n)``: the oldest listed segment whose next seq is this packet's ACK
  number, and the seconds since it, shown only when not 0; every segment the ACK number
  reaches leaves the list, one it ends within is cut to it — whether the ACK flag is set or
  not, as in tshark), ``bytes_in_flight`` and ``push_bytes_sent`` (``in_flight(n)``: on a
  segment with data, the span of its direction's list — lowest relative seq to highest
  relative next seq, compared unsigned — less the bytes the first three blocks of the peer's
  last segment's SACK option cover, less one for a SYN or FIN, shown when between 0 and 2e9;
  not after a segment not captured until the peer's next ACK; the bytes since the last PSH,
  shown with it), and ``rto`` (packet -> (seconds, frame) of a plain retransmission: since the
  oldest listed segment, else the highest one; absent when 0).

The list is kept so that no ACK and no segment walks it (``_Flow.umode``): while its segments'
seq and next seq never go back (the usual case) as parallel lists in arrival order — the
segments an ACK removes are a run at its start (or, for an ACK number 2^31 away, at its end),
the ones it cuts the run after them (kept cut lazily), the span its first seq to its last next
seq, all found by bisection; otherwise (retransmissions, reordering) in an index ordered by
sequence number (``_Index``: O(log n) per ACK and segment, amortised).  Only a list spread over
2^31 or more cannot be ordered: it is walked as tshark walks it, the segments visited counted
against budgets (``WALK_BUDGET_FLOW`` a direction, ``WALK_BUDGET`` a capture); past one its
direction's list is no longer followed and its fields are unknown from that packet
(``list_unknown``: (conversation, direction) -> packet; they are then absent).  Whether tshark's
list then holds its 10,000 segments is known only while an upper bound of its count (``ubound``)
stays below that: a SYN or FIN sent past it may or may not count in the sequence space, so the
analysis flags of its conversation's later packets are unknown and left absent
(``seq_unknown``: conversation -> that packet).
tshark 4.0.17's SACK count is its segment's own: a segment without SACK clears it (checked
against tshark on captures whose SACK blocks stop; tests/test_tcp_rtt30.py).

Not computed: MPTCP or TCP Fast Open analysis.
"""
from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right, insort
from _thread import allocate_lock  # (threading.Lock itself, without loading threading: as analyzer.model)
from array import array
from dataclasses import dataclass, field
from _weakref import ref as _weakref  # (the builtin: no import of the weakref module)

from wirefall.dissectors.dataclass_repr import FACTORY, dataclass_eq, dataclass_repr

from .model import PROTO_CODE, Analysis
from .packet import Decoded, Decoder, tcp_options
from .packet import wscale_option as _wscale

_IP4_TCP = struct.Struct("!2xH2xH4x4s4sHHIIBBH").unpack_from  # IPv4 (no options) + TCP header
_RAW = frozenset((101, 228, 12, 14))  # raw IP link types (IPv4 checked by the version nibble)

M32 = 0xFFFFFFFF
_HALF = 0x80000000

# TCP header flag bits
_FIN, _SYN, _RST, _PSH, _ACK = 0x01, 0x02, 0x04, 0x08, 0x10
# ``tcp_flags`` bit 14 (above the header's nine): the ACK number passed the peer's highest
# contiguous next seq (tshark's "ACKed unseen segment" check), where tshark 4.0.17 makes the
# packet's record (``struct tcp_acked``: its SEQ/ACK tree) whether or not it sets the flag —
# it does not when the peer's dup-ACK count is not 0 (an earlier such ACK made it -1)
_ACKED_PAST = 0x4000
# ``tcp_flags`` bit 13: the segment carries payload (tcp.len > 0), which tcp.completeness's
# walk reads (analyzer/fields/tcp.py) instead of decoding every packet again
_DATA = 0x2000

# analysis flag bits (tshark's TCP_A_*), one uint16 per packet
F_RETRANSMISSION = 1 << 0
F_FAST_RETRANSMISSION = 1 << 1
F_SPURIOUS_RETRANSMISSION = 1 << 2
F_OUT_OF_ORDER = 1 << 3
F_LOST_SEGMENT = 1 << 4
F_ACK_LOST_SEGMENT = 1 << 5
F_DUPLICATE_ACK = 1 << 6
F_ZERO_WINDOW = 1 << 7
F_ZERO_WINDOW_PROBE = 1 << 8
F_ZERO_WINDOW_PROBE_ACK = 1 << 9
F_WINDOW_FULL = 1 << 10
F_KEEP_ALIVE = 1 << 11
F_KEEP_ALIVE_ACK = 1 << 12
F_WINDOW_UPDATE = 1 << 13
F_REUSED_PORTS = 1 << 14
F_ANY = (1 << 15) - 1

# bit -> tshark field name (the flag's own field)
NAMES: dict[int, str] = {
    F_RETRANSMISSION: "tcp.analysis.retransmission",
    F_FAST_RETRANSMISSION: "tcp.analysis.fast_retransmission",
    F_SPURIOUS_RETRANSMISSION: "tcp.analysis.spurious_retransmission",
    F_OUT_OF_ORDER: "tcp.analysis.out_of_order",
    F_LOST_SEGMENT: "tcp.analysis.lost_segment",
    F_ACK_LOST_SEGMENT: "tcp.analysis.ack_lost_segment",
    F_DUPLICATE_ACK: "tcp.analysis.duplicate_ack",
    F_ZERO_WINDOW: "tcp.analysis.zero_window",
    F_ZERO_WINDOW_PROBE: "tcp.analysis.zero_window_probe",
    F_ZERO_WINDOW_PROBE_ACK: "tcp.analysis.zero_window_probe_ack",
    F_WINDOW_FULL: "tcp.analysis.window_full",
    F_KEEP_ALIVE: "tcp.analysis.keep_alive",
    F_KEEP_ALIVE_ACK: "tcp.analysis.keep_alive_ack",
    F_WINDOW_UPDATE: "tcp.analysis.window_update",
    F_REUSED_PORTS: "tcp.analysis.reused_ports",
}

# field name -> mask: the packet has the field iff flags & mask (one lookup for a filter)
FIELDS: dict[str, int] = {name: bit for bit, name in NAMES.items()}
FIELDS["tcp.analysis.retransmission"] = F_RETRANSMISSION | F_FAST_RETRANSMISSION | F_SPURIOUS_RETRANSMISSION
FIELDS["tcp.analysis.flags"] = F_ANY

# Expert items as Wireshark's tree shows them: bit -> (severity, text)
EXPERT: dict[int, tuple[str, str]] = {
    F_REUSED_PORTS: ("Note", "A new tcp session is started with the same ports as an earlier session in this trace"),
    F_RETRANSMISSION: ("Note", "This frame is a (suspected) retransmission"),
    F_FAST_RETRANSMISSION: ("Note", "This frame is a (suspected) fast retransmission"),
    F_SPURIOUS_RETRANSMISSION: ("Note", "This frame is a (suspected) spurious retransmission"),
    F_OUT_OF_ORDER: ("Warning", "This frame is a (suspected) out-of-order segment"),
    F_LOST_SEGMENT: ("Warning", "Previous segment(s) not captured (common at capture start)"),
    F_ACK_LOST_SEGMENT: ("Warning", "ACKed segment that wasn't captured (common at capture start)"),
    F_WINDOW_UPDATE: ("Chat", "TCP window update"),
    F_WINDOW_FULL: ("Warning", "TCP window specified by the receiver is now completely full"),
    F_KEEP_ALIVE: ("Note", "TCP keep-alive segment"),
    F_KEEP_ALIVE_ACK: ("Note", "ACK to a TCP keep-alive segment"),
    F_ZERO_WINDOW_PROBE: ("Note", "TCP Zero Window Probe"),
    F_ZERO_WINDOW: ("Warning", "TCP Zero Window segment"),
    F_ZERO_WINDOW_PROBE_ACK: ("Note", "ACK to a TCP Zero Window Probe"),
}

# Wireshark's default colouring rules that TCP decides (/usr/share/wireshark/colorfilters, in
# their order; the first that matches wins): name -> (foreground, background)
BAD_TCP = F_ANY & ~(F_WINDOW_UPDATE | F_KEEP_ALIVE | F_KEEP_ALIVE_ACK)
COLOURS = {"Bad TCP": ("#f78787", "#12272e"), "TCP RST": ("#fffc9c", "#a40000"), "TCP SYN/FIN": ("#12272e", "#a0a0a0")}

# Info column: tshark prepends each marker in this order (tcp_print_sequence_number_analysis),
# so the last one prepended is shown first
_PREPEND_ORDER = (
    (F_REUSED_PORTS, "[TCP Port numbers reused] "),
    (F_RETRANSMISSION, "[TCP Retransmission] "),
    (F_FAST_RETRANSMISSION, "[TCP Fast Retransmission] "),
    (F_SPURIOUS_RETRANSMISSION, "[TCP Spurious Retransmission] "),
    (F_OUT_OF_ORDER, "[TCP Out-Of-Order] "),
    (F_LOST_SEGMENT, "[TCP Previous segment not captured] "),
    (F_ACK_LOST_SEGMENT, "[TCP ACKed unseen segment] "),
    (F_WINDOW_UPDATE, "[TCP Window Update] "),
    (F_WINDOW_FULL, "[TCP Window Full] "),
    (F_KEEP_ALIVE, "[TCP Keep-Alive] "),
    (F_KEEP_ALIVE_ACK, "[TCP Keep-Alive ACK] "),
    (F_DUPLICATE_ACK, None),  # "[TCP Dup ACK <frame>#<num>] "
    (F_ZERO_WINDOW_PROBE, "[TCP ZeroWindowProbe] "),
    (F_ZERO_WINDOW, "[TCP ZeroWindow] "),
    (F_ZERO_WINDOW_PROBE_ACK, "[TCP ZeroWindowProbeAck] "),
)
# the order the tree lists the expert items in (the same calls)
TREE_ORDER = tuple(b for b, _ in _PREPEND_ORDER)

MAX_UNACKED = 10_000  # TCP_MAX_UNACKED_SEGMENTS: tshark keeps at most this many per direction
# segments visited walking lists spread over 2^31 (_Flow.umode 2): per direction, per capture
WALK_BUDGET_FLOW = 1_000_000  # (~0.6 s)
WALK_BUDGET = 5_000_000
_CHUNK = 1 << 20
_FAST_RT_WINDOW = 0.020  # fast retransmission: within 20 ms of the last duplicate ACK
_OOO_DEFAULT = 0.003  # out-of-order threshold without an initial RTT: 3 ms


def _ticks_per_second(analysis: Analysis) -> float:
    """The unit the pass counts time in: microseconds when every interface's timestamps are
    whole microseconds (pcap, pcapng's default), nanoseconds otherwise.  tshark compares whole
    nanoseconds, so a duplicate ACK exactly 20 ms before a retransmission is not "within 20 ms";
    differences of float seconds near 1.7e9 are off by up to 0.2 µs either way, which made
    such ties fall on either side (tests/test_tcp_diff29.py)."""
    for itf in getattr(analysis, "interfaces", None) or ():
        r = getattr(itf, "tsresol", 1e-6) * 1e6
        if r < 1 - 1e-9 or abs(r - round(r)) > 1e-9:
            return 1e9
    return 1e6


class _Flow:
    """One direction of a tshark conversation (tcp_flow_t + tcp_analyze_seq_flow_info_t)."""

    __slots__ = ("base_seq", "base_set", "win_scale", "window", "is_first_ack", "lastsegmentflags",
                 "nextseq", "nextseqframe", "nextseqtime", "lastack", "lastacktime", "maxseqtobeacked", "dupacknum",
                 "lastnondupack", "valid_bif", "push_bytes", "push_last", "sack",
                 "useq", "unxt", "ufr", "uh", "umode", "ucut", "ix", "uref", "umind", "umaxd", "ulohi", "quiet",
                 "uleft", "ubud", "ubound")

    def __init__(self, budget: list[int]) -> None:
        self.base_seq = 0
        self.base_set = False
        self.win_scale = -1  # -1 unknown, -2 no scaling, else the shift
        self.window = M32  # last raw window seen (G_MAXUINT32 before any)
        self.is_first_ack = False
        self.lastsegmentflags = 0
        self.nextseq = 0  # highest next sequence number seen (0: none, as tshark)
        self.nextseqframe = 0  # the packet that set it
        self.nextseqtime = 0  # (times in the pass's ticks: _ticks_per_second)
        self.lastack = 0
        self.lastacktime = 0
        self.maxseqtobeacked = 0
        self.dupacknum = 0  # guint32 in tshark: its -1 (after an ACKed unseen segment) counts as >= 2
        self.lastnondupack = 0
        self.valid_bif = True  # bytes in flight counted (off from a lost segment to the peer's next ACK)
        self.push_bytes = 0  # bytes sent since the last PSH (tshark's push_bytes_sent, push_set_last)
        self.push_last = 0  # (the last one's PSH bit)
        self.sack = 0  # the bytes the SACK blocks of this side's last SACK option cover (its first 3 blocks)
        # tshark's list of unacknowledged segments, oldest first from index ``uh`` (tcp_unacked_t:
        # seq — moved up by a partial ACK —, next seq, frame; its time is the frame's), as parallel lists
        self.useq: list[int] = []
        self.unxt: list[int] = []
        self.ufr: list[int] = []
        self.uh = 0
        # how the list is kept (``umode``):
        # 0 "sorted": seq and next seq never go back along it, all within 2^31 of the first
        #   segment's seq — an ACK removes a run at its start (or, 2^31 away, at its end) and cuts
        #   the run after it, both found by bisection; the segments from ``uh`` up to ``ucut``
        #   have been cut to the first one's seq (``useq[uh]``, the only one written);
        # 1 "indexed": not in order but within 2^31 of each other: the lists are empty and ``ix``
        #   (_Index) keeps the segments ordered by sequence number;
        # 2 "walked": spread over 2^31 or more (only hostile or broken captures): each ACK walks
        #   the list as tshark does, unless it can touch no segment (all lie at or after ``uref``,
        #   an ACK number, their seqs at least ``umind`` and next seqs at most ``umaxd`` past it),
        #   the segments visited counted against ``uleft`` and the capture's ``ubud[0]``;
        # 3 "unknown": a budget ran out: the list is no longer followed (TcpAnalysis.list_unknown)
        self.umode = 0
        self.ucut = 0
        self.ix: _Index | None = None
        self.uref: int | None = None
        self.umind = 0
        self.umaxd = 0
        self.ulohi: tuple[int, int] | None = None  # walked list: (lowest seq, highest next seq), relative, unsigned
        self.uleft = WALK_BUDGET_FLOW
        self.ubud = budget  # (one list per capture, shared by its flows)
        self.quiet = -1  # the ACK number last walked: walking again for it changes nothing (until a segment joins)
        # once the list is no longer followed (``umode`` 3): at least as many segments as it holds
        # (it held that many when given up, and each segment tshark may have listed since adds
        # one; an ACK may remove some, which is not known), so that tshark's 10,000-segment cap
        # is known not to be reached while it stays below MAX_UNACKED
        self.ubound = 0


class _Conv:
    __slots__ = ("a", "b", "mru_syn", "first_rtt", "index", "unknown")

    def __init__(self, index: int, budget: list[int]):
        self.a = _Flow(budget)  # the flow of the conversation's first packet's sender
        self.b = _Flow(budget)
        self.mru_syn = 0  # time of the most recent SYN, in ticks (0: none)
        self.first_rtt = 0  # SYN -> first ACK, in ticks (0: not yet)
        self.index = index
        self.unknown = 0  # the SYN/FIN after which the analysis flags are unknown (TcpAnalysis.seq_unknown), 0: none


@dataclass(init=False, repr=False, eq=False)  # (written out, not compiled at every start, as analyzer/stats.py's)
class TcpAnalysis:
    """tshark's tcp.analysis.* of a capture's TCP packets, per packet, made as the packets are read."""

    __repr__ = dataclass_repr
    __eq__ = dataclass_eq

    flags: array = field(default_factory=lambda: array("H"))
    dupack: dict = field(default_factory=dict)  # packet -> (dup ack number, frame it duplicates)
    conv: array = field(default_factory=lambda: array("i"))  # packet -> tshark conversation index, -1
    fwd: bytearray = field(default_factory=bytearray)  # packet -> 0: sent by the conversation's "a" side
    wshift: array = field(default_factory=lambda: array("b"))  # packet -> window shift in Info (-1: none)
    tcp_flags: array = field(default_factory=lambda: array("H"))  # packet -> TCP header flags, bit 15 (0: not analysed), 14 (_ACKED_PAST), 13 (_DATA)
    base: array = field(default_factory=lambda: array("q"))  # 2 per conversation: a's, b's base seq (-1: unset)
    rtt: array = field(default_factory=lambda: array("d"))  # per conversation: initial RTT (SYN -> first ACK), 0: none
    rtt_at: array = field(default_factory=lambda: array("i"))  # per conversation: the packet that measured it
    # from the unacknowledged-segment lists, per packet (0: the field is absent)
    acks_frame: array = field(default_factory=lambda: array("I"))  # tcp.analysis.acks_frame
    ack_rtt: array = field(default_factory=lambda: array("d"))  # tcp.analysis.ack_rtt, seconds (0: absent)
    bytes_in_flight: array = field(default_factory=lambda: array("I"))  # tcp.analysis.bytes_in_flight
    push_bytes_sent: array = field(default_factory=lambda: array("I"))  # tcp.analysis.push_bytes_sent (with bytes_in_flight)
    rto: dict = field(default_factory=dict)  # retransmission -> (tcp.analysis.rto seconds, tcp.analysis.rto_frame)
    # (conversation, direction) -> the packet from which that direction's list is no longer
    # followed (a walk budget ran out): from it on, its ACK-side fields (acks_frame, ack_rtt on the
    # peer's packets) and its own (bytes_in_flight, push_bytes_sent, rto) are unknown, not absent
    list_unknown: dict = field(default_factory=dict)
    # conversation -> the SYN or FIN packet from which its analysis flags are unknown: sent while
    # its direction's list was no longer followed and may have held tshark's 10,000 segments,
    # so whether tshark counts its sequence number (and so that side's next sequence number,
    # which nearly every flag compares with) is not known.  The packet's own flags are known;
    # the conversation's later packets carry none (nor a duplicate-ACK number, an RTO, an "ACK
    # past" bit): absent, not possibly different from tshark's (``seq_unknown_at``)
    seq_unknown: dict = field(default_factory=dict)
    # (conversation, direction) -> [(packet, base before it)]: a SYN/ACK with another ISN re-bases
    # its side; the packets before it keep the base they were shown with (tshark's one pass)
    rebased: dict = field(default_factory=dict)
    packets: int = 0  # packets analysed so far
    _state: dict = field(default_factory=dict, repr=False)  # 4-tuple -> (conv, dir) to go on with
    _convs: list = field(default_factory=list, repr=False)
    _decoder: Decoder | None = field(default=None, repr=False)

    def __init__(self, flags: array = FACTORY, dupack: dict = FACTORY, conv: array = FACTORY, fwd: bytearray = FACTORY, wshift: array = FACTORY,
                 tcp_flags: array = FACTORY, base: array = FACTORY, rtt: array = FACTORY, rtt_at: array = FACTORY,
                 acks_frame: array = FACTORY, ack_rtt: array = FACTORY, bytes_in_flight: array = FACTORY,
                 push_bytes_sent: array = FACTORY, rto: dict = FACTORY, list_unknown: dict = FACTORY, seq_unknown: dict = FACTORY,
                 rebased: dict = FACTORY, packets: int = 0, _state: dict = FACTORY, _convs: list = FACTORY, _decoder: Decoder | None = None) -> None:
        self.flags = array("H") if flags is FACTORY else flags
        self.dupack = {} if dupack is FACTORY else dupack
        self.conv = array("i") if conv is FACTORY else conv
        self.fwd = bytearray() if fwd is FACTORY else fwd
        self.wshift = array("b") if wshift is FACTORY else wshift
        self.tcp_flags = array("H") if tcp_flags is FACTORY else tcp_flags
        self.base = array("q") if base is FACTORY else base
        self.rtt = array("d") if rtt is FACTORY else rtt
        self.rtt_at = array("i") if rtt_at is FACTORY else rtt_at
        self.acks_frame = array("I") if acks_frame is FACTORY else acks_frame
        self.ack_rtt = array("d") if ack_rtt is FACTORY else ack_rtt
        self.bytes_in_flight = array("I") if bytes_in_flight is FACTORY else bytes_in_flight
        self.push_bytes_sent = array("I") if push_bytes_sent is FACTORY else push_bytes_sent
        self.rto = {} if rto is FACTORY else rto
        self.list_unknown = {} if list_unknown is FACTORY else list_unknown
        self.seq_unknown = {} if seq_unknown is FACTORY else seq_unknown
        self.rebased = {} if rebased is FACTORY else rebased
        self.packets = packets
        self._state = {} if _state is FACTORY else _state
        self._convs = [] if _convs is FACTORY else _convs
        self._decoder = _decoder

    def has(self, n: int, name: str) -> bool:
        """Whether packet ``n`` has tshark field ``name`` (``tcp.analysis.*``)."""
        m = FIELDS.get(name)
        if m is None:
            if name in ("tcp.analysis.duplicate_ack_num", "tcp.analysis.duplicate_ack_frame"):
                return n in self.dupack
            return False
        return 0 < n <= len(self.flags) and bool(self.flags[n - 1] & m)

    def fields(self, n: int) -> set[str]:
        """The ``tcp.analysis.*`` flag fields packet ``n`` has, as tshark would show them."""
        if not 0 < n <= len(self.flags):
            return set()
        f = self.flags[n - 1]
        return {name for name, m in FIELDS.items() if f & m}

    def info_prefix(self, n: int) -> str:
        """The text tshark puts before the TCP Info of packet ``n`` ('' when none)."""
        if not 0 < n <= len(self.flags):
            return ""
        f = self.flags[n - 1]
        if not f:
            return ""
        out = ""
        for bit, text in _PREPEND_ORDER:
            if f & bit:
                if text is None:
                    num, frame = self.dupack.get(n, (0, 0))
                    text = f"[TCP Dup ACK {frame}#{num}] "
                out = text + out
        return out

    def relative(self, n: int, seq: int, ack: int) -> tuple[int | None, int | None]:
        """Relative (seq, ack) of packet ``n`` as tshark shows them, or None where unknown."""
        if not 0 < n <= len(self.conv):
            return None, None
        c = self.conv[n - 1]
        if c < 0:
            return None, None
        d = self.fwd[n - 1]
        bs, br = self.base[2 * c + d], self.base[2 * c + 1 - d]
        if self.rebased:
            bs, br = self._base_at(n, c, d, bs), self._base_at(n, c, 1 - d, br)
        return ((seq - bs) & M32 if bs >= 0 else None), ((ack - br) & M32 if br >= 0 else None)

    def list_unknown_at(self, n: int) -> int | None:
        """The packet from which the list fields packet ``n`` would carry are unknown (its own
        direction's bytes in flight and RTO, the peer's list for its ACK's frame and RTT: a
        walk budget ran out, ``list_unknown``), or None (known)."""
        if not self.list_unknown or not 0 < n <= len(self.conv) or self.conv[n - 1] < 0:
            return None
        c, d = self.conv[n - 1], self.fwd[n - 1]
        at = [p for p in (self.list_unknown.get((c, d)), self.list_unknown.get((c, 1 - d))) if p is not None and p <= n]
        return min(at) if at else None

    def seq_unknown_at(self, n: int) -> int | None:
        """The SYN or FIN packet after which packet ``n``'s analysis flags are unknown (its
        conversation's ``seq_unknown``; ``n`` after it), or None (known)."""
        if not self.seq_unknown or not 0 < n <= len(self.conv) or self.conv[n - 1] < 0:
            return None
        at = self.seq_unknown.get(self.conv[n - 1])
        return at if at is not None and at < n else None

    def _base_at(self, n: int, c: int, d: int, base: int) -> int:
        """Side ``d`` of conversation ``c``'s base as packet ``n`` was shown with it."""
        for at, before in self.rebased.get((c, d), ()):
            if at > n:
                return before
        return base

    def colour_rule(self, n: int) -> str | None:
        """The Wireshark colouring rule TCP gives packet ``n`` ("Bad TCP", "TCP RST",
        "TCP SYN/FIN", see ``COLOURS``), or None (the protocol's own rule applies)."""
        if not 0 < n <= len(self.tcp_flags):
            return None
        if self.flags[n - 1] & BAD_TCP:
            return "Bad TCP"
        t = self.tcp_flags[n - 1]
        if t & _RST:
            return "TCP RST"
        if t & (_SYN | _FIN):
            return "TCP SYN/FIN"
        return None

    def closing(self, n: int) -> bool | None:
        """On a FIN: whether it comes from the side that sent its conversation's first FIN —
        tshark's expert items ``tcp.connection.fin_active`` ("This frame initiates the connection
        closing", True) and ``tcp.connection.fin_passive`` ("… undergoes …", False); None: not an
        analysed FIN.  The first FIN of each conversation is found by one walk, resumed as later
        packets are asked for (``_closers``: packets walked, conversation -> its direction)."""
        if not 0 < n <= len(self.tcp_flags) or self.tcp_flags[n - 1] & 0x8001 != 0x8001 or self.conv[n - 1] < 0:
            return None
        memo = self.__dict__.setdefault("_closers", [0, {}])
        first = memo[1]
        tf, conv, fwd = self.tcp_flags, self.conv, self.fwd
        for k in range(memo[0], n):
            if tf[k] & 0x8001 == 0x8001 and conv[k] >= 0 and conv[k] not in first:
                first[conv[k]] = fwd[k]
        memo[0] = max(memo[0], n)
        return first.get(conv[n - 1]) == fwd[n - 1]

    def initial_rtt(self, n: int) -> float | None:
        """The conversation's initial RTT as tshark shows it on packet ``n``, or None: from the
        packet that measured it on, where tshark prints a SEQ/ACK analysis tree — its per-packet
        record exists: an analysis flag, an ACK past the peer's highest contiguous next seq
        (``_ACKED_PAST``: tshark makes the record there even when it sets no "ACKed unseen"
        flag), an ACK of a listed segment, an RTO, or a segment the bytes-in-flight and PSH
        count ran on (``push_bytes_sent`` set; it is, whenever that count runs) — and on every
        such packet once the list is no longer followed (``list_unknown``: whether tshark's
        record exists is not known there)."""
        if not 0 < n <= len(self.conv):
            return None
        c = self.conv[n - 1]
        if c < 0 or not self.rtt_at[c] or n < self.rtt_at[c]:
            return None
        i = n - 1
        if not (self.flags[i] or self.tcp_flags[i] & _ACKED_PAST or (i < len(self.acks_frame) and self.acks_frame[i]) or (i < len(self.push_bytes_sent) and self.push_bytes_sent[i])
                or n in self.rto or self.list_unknown_at(n) is not None):
            return None
        return self.rtt[c]

    def window(self, n: int, raw: int) -> int:
        """The window tshark shows for packet ``n`` (scaled when the scale is known)."""
        if not 0 < n <= len(self.wshift):
            return raw
        s = self.wshift[n - 1]
        return raw << s if s > 0 else raw

    def acked(self, n: int) -> tuple[int, float | None] | None:
        """(tcp.analysis.acks_frame, tcp.analysis.ack_rtt) of packet ``n``: the segment its ACK
        number acknowledges exactly (the oldest such still unacknowledged) and the time since it
        (None when zero: tshark shows no RTT then); None when it acknowledges none that way."""
        if not 0 < n <= len(self.acks_frame):
            return None
        fr = self.acks_frame[n - 1]
        if not fr:
            return None
        r = self.ack_rtt[n - 1]
        return fr, (r if r else None)

    def in_flight(self, n: int) -> tuple[int, int] | None:
        """(tcp.analysis.bytes_in_flight, tcp.analysis.push_bytes_sent) of packet ``n``, or None."""
        if not 0 < n <= len(self.bytes_in_flight):
            return None
        b = self.bytes_in_flight[n - 1]
        return (b, self.push_bytes_sent[n - 1]) if b else None

    def counts(self, conn_ids=None, conn: int | None = None) -> dict[str, int]:
        """Packets per flag field name (tshark's field semantics), over the capture or one
        connection (``conn``: wirefall's connection id; ``conn_ids``: the PacketIndex.conn
        array)."""
        out = {name: 0 for name in FIELDS}
        per_bit: dict[int, int] = {}
        fl = self.flags
        if conn is None:
            for f in fl:
                if f:
                    per_bit[f] = per_bit.get(f, 0) + 1
        else:
            for i, f in enumerate(fl):
                if f and conn_ids[i] == conn:
                    per_bit[f] = per_bit.get(f, 0) + 1
        for f, k in per_bit.items():
            for name, m in FIELDS.items():
                if f & m:
                    out[name] += k
        return out


def finished(analysis: Analysis) -> TcpAnalysis | None:
    """The analysis's TCP analysis if it has been computed over every packet (no pass made here)."""
    ta = analysis.__dict__.get("_wf_tcp_analysis")
    return ta if ta is not None and ta.packets >= len(analysis.index) else None


def retransmissions_of(analysis: Analysis, ta: TcpAnalysis, conn, field: str = "tcp.analysis.retransmission") -> list[tuple[int, int | None, int]]:
    """(packet, direction, flags) of each ``tcp.analysis.retransmission`` packet (or of another
    flag ``field``: ``tcp.analysis.out_of_order``) of wirefall's connection ``conn`` (fast and
    spurious ones included), in packet order; the direction (0 client to server) from the
    connection's TCP payload maps (a segment that filled a hole carried new bytes) or its
    duplicate lists, None when neither holds the packet."""
    bit = FIELDS[field]
    flags, cids = ta.flags, analysis.index.conn
    first, last = max(conn.first_packet, 1), min(conn.last_packet, len(flags), len(cids))
    hits = [k for k in _flagged_by_conn(ta, cids, bit).get(conn.id, ()) if first <= k <= last]
    if not hits:
        return []
    by_dir = [set(m.packets) if (m := analysis.maps.get((conn.id, d))) is not None else set() for d in (0, 1)]
    for d in (0, 1):
        by_dir[d].update(conn.stats[d].retransmission_packets)
    return [(k, 0 if k in by_dir[0] else 1 if k in by_dir[1] else None, flags[k - 1]) for k in hits]


def _flagged_by_conn(ta: TcpAnalysis, cids, bit: int) -> dict[int, list[int]]:
    """wirefall connection id -> its packets (in order) whose flags have a bit of ``bit``: one
    walk of the capture's flags per mask, kept on ``ta`` (``_wf_by_conn``) while neither the
    analysis nor the connection array has grown — not a walk per connection (a capture of many
    long-lived connections walked each one's span again)."""
    flags = ta.flags
    key = (ta.packets, len(flags), len(cids), id(cids))
    memo = ta.__dict__.get("_wf_by_conn")
    if memo is None or memo[0] != key:
        memo = (key, {})
        ta.__dict__["_wf_by_conn"] = memo
    per_mask: dict[int, dict[int, list[int]]] = memo[1]
    got = per_mask.get(bit)
    if got is None:
        got = {}
        n = min(len(flags), len(cids))
        for i, f in enumerate(flags):
            if f & bit and i < n:
                got.setdefault(cids[i], []).append(i + 1)
        per_mask[bit] = got
    return got


_LOCK = allocate_lock()


def tcp_analysis(analysis: Analysis, source, upto: int | None = None) -> TcpAnalysis:
    """The TCP analysis of ``analysis`` (computed on first use, then cached).  The pass is
    sequential, so a packet's flags depend only on the packets before it: with ``upto`` the
    pass goes at least to packet ``upto`` (a packet list showing its first rows does not wait
    for the whole capture); later calls go on from there, as they do for packets added since
    (a capture still loading)."""
    with _LOCK:
        ta = analysis.__dict__.get("_wf_tcp_analysis")
        if ta is None:
            ta = TcpAnalysis()
            analysis.__dict__["_wf_tcp_analysis"] = ta
        npk = len(analysis.index)
        stop = npk if upto is None else min(npk, max(upto, ta.packets))
        if ta.packets < stop:
            _run(analysis, source, ta, stop)
        return ta


class ChildRun:
    """The child process of a ``tcp_analysis_in_child`` call, to end it early (``cancel``: the
    TUI quitting, which would otherwise wait seconds for the thread that waits for it)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.cancelled = False
        self._lock = allocate_lock()

    def cancel(self) -> None:
        import os
        import signal

        with self._lock:  # (never a pid already reaped: the call clears it under this lock first)
            self.cancelled = True
            if self.pid is not None:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass


def tcp_analysis_in_child(analysis: Analysis, path: str, run: ChildRun | None = None) -> bool:
    """The whole capture's TCP analysis made in a forked child process and installed here, for
    a view that wants it ready without this process running it: the TUI after its first screen
    (the pass is sequential, ~5 µs a packet; run in a thread it held the GIL so that keys took
    seconds).  True when the analysis reaches the capture's last packet; False when it could not
    be made so (no ``fork``, the child failed or was cancelled through ``run``, the capture grew
    meanwhile: the views go on running it up to what they show, as before)."""
    import os
    import pickle

    npk = len(analysis.index)
    with _LOCK:
        ta = analysis.__dict__.get("_wf_tcp_analysis")
        if ta is not None and ta.packets >= npk:
            return True
    if not hasattr(os, "fork"):
        return False
    run = run or ChildRun()
    r, w = os.pipe()
    with run._lock:
        try:
            pid = -1 if run.cancelled else os.fork()
        except OSError:  # (no process to spare: the views run the analysis as far as they show)
            pid = -1
        if pid < 0:
            os.close(r)
            os.close(w)
            return False
        run.pid = pid
    if pid == 0:  # the child: nothing but the pass and its pickled result (no lock of ours taken)
        code = 1
        try:
            os.close(r)
            from .capture import PacketSource

            fresh = TcpAnalysis()
            _run(analysis, PacketSource(path), fresh, npk)
            fresh._decoder = None  # (its IPv4 reassembly state: the parent makes its own if the capture grows)
            fresh.__dict__.pop("_wf_tcp_conn", None)  # (derived, per process: not sent)
            fresh.__dict__.pop("_wf_buf", None)
            fresh.__dict__.pop("_wf_by_conn", None)
            with os.fdopen(w, "wb") as f:
                f.write(pickle.dumps(fresh, protocol=5))
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    with run._lock:
        run.pid = None
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return False
    got = pickle.loads(data)
    if not isinstance(got, TcpAnalysis) or got.packets != npk:
        return False
    with _LOCK:
        if len(analysis.index) != npk:
            return False
        ta = analysis.__dict__.get("_wf_tcp_analysis")
        if ta is None or ta.packets < npk:
            analysis.__dict__["_wf_tcp_analysis"] = got
    return True


def _tcp_conns(analysis: Analysis, ta: TcpAnalysis) -> bytearray:
    """Per wirefall connection id, 1 for a TCP one (made once per connection list, not per call:
    a packet list advances the pass one packet a call)."""
    conns = analysis.connections
    got = ta.__dict__.get("_wf_tcp_conn")
    if got is not None and got[0] is conns and got[1] == len(conns):
        return got[2]
    tcp_conn = bytearray(len(conns) + 1)
    for c in conns:
        if c.transport == "tcp":
            tcp_conn[c.id] = 1
    ta.__dict__["_wf_tcp_conn"] = (conns, len(conns), tcp_conn)
    return tcp_conn


def _run(analysis: Analysis, source, ta: TcpAnalysis, stop: int) -> None:
    """The pass from packet ``ta.packets + 1`` to ``stop``.  The file is read in chunks of
    ``_CHUNK`` bytes; the chunk last read stays on ``ta`` (``_wf_buf``: with the source it came
    from, weakly) for the next call, so that a packet list advancing the pass a packet at a time
    reads each chunk once, not one chunk per packet.  It is dropped when the pass reaches the
    capture's last packet (at most one chunk is held, only while the pass is unfinished)."""
    idx = analysis.index
    npk = len(idx)
    start = ta.packets
    tcp_conn = _tcp_conns(analysis, ta)
    P_IPV4 = PROTO_CODE["IPv4"]
    flags_out, conv_out, fwd_out, ws_out, tf_out = ta.flags, ta.conv, ta.fwd, ta.wshift, ta.tcp_flags
    _grow(ta, stop, npk)
    acked_out, rtt_out, bif_out, push_out, rto = ta.acks_frame, ta.ack_rtt, ta.bytes_in_flight, ta.push_bytes_sent, ta.rto
    dupack = ta.dupack
    state = ta._state
    base = ta.base
    dec = ta._decoder
    if dec is None:
        dec = ta._decoder = Decoder()
    decode = dec.decode
    conn_of, offs, caplens, origlens, lts, protos, tss = idx.conn, idx.offset, idx.caplen, idx.origlen, idx.linktype, idx.proto, idx.ts
    tick = ta.__dict__.get("_tick")  # (chosen once: the flows' times are kept in it)
    if tick is None:
        tick = ta.__dict__["_tick"] = _ticks_per_second(analysis)
    fast_rt, ooo_default = round(_FAST_RT_WINDOW * tick), round(_OOO_DEFAULT * tick)
    buf = b""
    buf_at = 0
    kept = ta.__dict__.pop("_wf_buf", None)
    if kept is not None and kept[0]() is source:
        _, buf_at, buf = kept
    read = source.read
    ntcp = len(tcp_conn)
    for i in range(start, stop):
        c = conn_of[i]
        if c >= 0:
            if c >= ntcp or not tcp_conn[c]:
                continue
        elif protos[i] != P_IPV4:
            continue  # only IPv4 fragments held for reassembly are worth feeding the decoder
        off = offs[i]
        ln = caplens[i]
        j = off - buf_at
        if j < 0 or j + ln > len(buf):
            buf = read(off, max(_CHUNK, ln))
            buf_at = off
            j = 0
        data = buf[j : j + ln]
        ln = len(data)  # fewer than captured if the file ends early
        flen = origlens[i]  # the frame's length on the wire: tshark's reported length
        lt = lts[i]
        # Ethernet or raw IP, IPv4 without options, not a fragment: the bulk of captures, in
        # one unpack; everything else through Decoder (VLANs, cooked, IPv6, fragments)
        l3 = 14 if lt == 1 else 0 if lt in _RAW else -1
        if l3 >= 0 and ln >= l3 + 40 and data[l3] == 0x45 and data[l3 + 9] == 6 and (l3 == 0 or (data[12] == 8 and data[13] == 0)):
            total, frag, src, dst, sport, dport, seq, ack, doff, flags, win = _IP4_TCP(data, l3)
            if frag & 0x3FFF or doff < 0x50:
                l3 = -1
            else:
                toff = l3 + 20
                flags |= (doff & 1) << 8
                end = l3 + total if total >= 20 else flen
        else:
            l3 = -1
        if l3 < 0:
            hd = _slow_header(decode, lt, data, flen)
            if hd is None:
                continue
            src, dst, sport, dport, seq, ack, flags, win, toff, doff, end, flen = hd
        hl = (doff >> 4) * 4
        data_bit = _DATA if end - toff - hl > 0 else 0  # (the IP header's payload, as tcp.len: before a snap length's cut)
        if end > flen:
            end = flen
        seglen = end - toff - hl
        if seglen < 0:
            continue  # shorter than its TCP header: tshark does not analyse it either
        ws = None
        sack = -1
        if hl > 20:
            opts = data[toff + 20 : toff + hl]
            if b"\x03\x03" in opts:
                ws = _wscale(opts)
            if b"\x05" in opts:
                sack = _sack_covered(opts)
        pkt = i + 1
        now = round(tss[i] * tick)
        key = (src, sport, dst, dport)
        hit = state.get(key)
        if hit is None:
            cv = _new_conv(ta, key, (dst, dport, src, sport))
            di = 0
        else:
            cv, di = hit
        fwd, rev = (cv.a, cv.b) if di == 0 else (cv.b, cv.a)
        f = 0
        synack = flags & (_SYN | _ACK)
        # a SYN on a known conversation with another ISN: a new conversation (ports reused)
        if synack == _SYN and fwd.base_set:
            if seq != fwd.base_seq:
                cv = _new_conv(ta, key, (dst, dport, src, sport))
                di = 0
                fwd, rev = cv.a, cv.b
                f |= F_REUSED_PORTS
            else:
                # the SYN again (same ISN, a retransmission): tshark 4.0.17 takes the flow's
                # highest sequence number back to its highest contiguous one (maxseqtobeacked),
                # so that data after it is "previous segment not captured", not retransmitted
                # (probed on built flows, tests/test_tcp_diff29.py; a SYN/ACK again does not)
                fwd.nextseq = fwd.maxseqtobeacked
        elif synack == (_SYN | _ACK) and fwd.base_set and seq != fwd.base_seq:
            ta.rebased.setdefault((cv.index, di), []).append((pkt, fwd.base_seq))
            fwd.base_seq = seq
            fwd.ulohi = None  # (relative to the base)
            f |= F_REUSED_PORTS

        # ---- tcp_analyze_sequence_number
        if not fwd.base_set:
            fwd.base_seq = seq if flags & _SYN else (seq - 1) & M32
            fwd.base_set = True
        if not rev.base_set and flags & _ACK:
            rev.base_seq = (ack - 1) & M32
            rev.base_set = True
        if flags & _ACK:
            rev.valid_bif = True
        nextseq = fwd.nextseq
        noflag = not flags & (_SYN | _FIN | _RST)
        while True:  # one pass; "break" is tshark's goto finished_fwd
            if seglen == 1 and seq == nextseq and rev.window == 0:
                f |= F_ZERO_WINDOW_PROBE
                break
            if win == 0 and noflag:
                f |= F_ZERO_WINDOW
            if nextseq and ((nextseq - seq) & M32) >= _HALF and not flags & _RST:
                f |= F_LOST_SEGMENT
                fwd.valid_bif = False  # until the peer's next ACK
            if seglen <= 1 and seq == ((nextseq - 1) & M32) and noflag:
                f |= F_KEEP_ALIVE
            if seglen == 0 and noflag and seq == nextseq and ack == fwd.lastack:
                if win and win != fwd.window:
                    f |= F_WINDOW_UPDATE
            if seglen > 0 and rev.win_scale != -1 and noflag:
                sh = 0 if rev.is_first_ack or rev.win_scale == -2 else rev.win_scale
                if ((seq + seglen) & M32) == ((rev.lastack + ((rev.window << sh) & M32)) & M32):
                    f |= F_WINDOW_FULL
            if seglen == 0 and noflag and seq == nextseq and ack == fwd.lastack:
                if win and win == fwd.window and rev.lastsegmentflags & F_KEEP_ALIVE:
                    f |= F_KEEP_ALIVE_ACK
                    break
                if win == 0 and fwd.window == 0 and rev.lastsegmentflags & F_ZERO_WINDOW_PROBE:
                    f |= F_ZERO_WINDOW_PROBE_ACK
                    break
                if win and win == fwd.window:
                    fwd.dupacknum = 1 if fwd.dupacknum == -1 else fwd.dupacknum + 1
                    f |= F_DUPLICATE_ACK
                    dupack[pkt] = (fwd.dupacknum, fwd.lastnondupack)
            break
        # finished_fwd:
        if ack != fwd.lastack:
            fwd.lastnondupack = pkt
            fwd.dupacknum = 0
        rmax = rev.maxseqtobeacked
        if rmax and flags & _ACK and ((rmax - ack) & M32) >= _HALF:
            flags |= _ACKED_PAST  # (kept in tcp_flags below; no header flag test sees bit 14)
            if ((rmax - rev.nextseq) & M32) >= _HALF:  # LT_SEQ(max, nextseq): jump to nextseq
                rev.maxseqtobeacked = rev.nextseq
                f |= F_ACK_LOST_SEGMENT
            else:
                if rev.dupacknum == 0:
                    f |= F_ACK_LOST_SEGMENT
                rev.dupacknum = -1
        synfin = flags & (_SYN | _FIN)
        if (seglen > 0 or synfin) and not f & F_KEEP_ALIVE:
            not_adv = bool(nextseq) and ((seq - nextseq) & M32) >= _HALF
            if seglen > 1 and ((nextseq - 1) & M32) == seq:
                not_adv = False
            rla = rev.lastack
            if seglen > 0 and rla and (((seq + seglen) - rla) & M32 == 0 or ((seq + seglen) - rla) & M32 >= _HALF):
                f |= F_SPURIOUS_RETRANSMISSION
            else:
                t = now - rev.lastacktime
                if not_adv and (rev.dupacknum >= 2 or rev.dupacknum == -1) and rla == seq and 0 <= t < fast_rt:
                    f |= F_FAST_RETRANSMISSION
                else:
                    t = now - fwd.nextseqtime
                    thres = cv.first_rtt or ooo_default
                    # tshark compares unsigned nanoseconds: a negative time is a huge one
                    soon = (0 <= t < thres) if thres > 0 else (t >= 0 or t < thres)
                    if not_adv and soon and nextseq != ((seq + seglen + (1 if synfin else 0)) & M32):
                        f |= F_OUT_OF_ORDER
                    elif not_adv:
                        f |= F_RETRANSMISSION
                        # the RTO: since the oldest unacknowledged segment, else since the
                        # highest one (tshark shows none when it is 0)
                        fr = _oldest(fwd)
                        if fr > 0:
                            t = now - round(tss[fr - 1] * tick)
                        elif not fr:
                            t, fr = now - fwd.nextseqtime, fwd.nextseqframe
                        if t and fr > 0:  # (-1: the list is no longer followed)
                            rto[pkt] = (t / tick, fr)
        # finished_checking_retransmission_type:
        nxt = (seq + seglen) & M32
        span = -1  # (the list's span, when the segment joined a sorted list the usual way)
        if seglen or synfin:
            unxt = fwd.unxt
            h = fwd.uh
            um = fwd.umode
            # (a list no longer followed: its upper bound, ``ubound``)
            if (len(unxt) - h if um == 0 or um == 2 else fwd.ubound if um == 3 else len(fwd.ix.N)) >= MAX_UNACKED:  # type: ignore[union-attr]
                if synfin and um == 3 and not cv.unknown:
                    # tshark counts a SYN's or FIN's sequence number only while the list has room:
                    # whether it did is not known, so neither is this side's next sequence number
                    # from here (the flags of the conversation's later packets: seq_unknown). The
                    # pass goes on as if it counted; what depends on it is not output
                    cv.unknown = pkt
                    ta.seq_unknown[cv.index] = pkt
                    nxt = (nxt + 1) & M32
            else:
                if synfin:
                    nxt = (nxt + 1) & M32
                fwd.quiet = -1
                # (the usual segment: right after the last one, the list sorted and within 2^31)
                if not fwd.umode and h < len(unxt) and seq == unxt[-1]:
                    useq = fwd.useq
                    a = useq[h]
                    span = (nxt - a) & M32
                    if span < _HALF and ((a - fwd.base_seq) & M32) + span <= M32:
                        useq.append(seq)
                        unxt.append(nxt)
                        fwd.ufr.append(pkt)
                    else:
                        span = -1
                        _append(fwd, seq, nxt, pkt)
                else:
                    _append(fwd, seq, nxt, pkt)
        zwp = f & F_ZERO_WINDOW_PROBE
        if not nextseq or ((nextseq - nxt) & M32) >= _HALF:
            if not zwp:
                fwd.nextseq = nxt
                fwd.nextseqframe = pkt
                fwd.nextseqtime = now
        if seq == fwd.maxseqtobeacked or not fwd.maxseqtobeacked:
            if not zwp:
                fwd.maxseqtobeacked = fwd.nextseq
        fwd.window = win
        fwd.lastack = ack
        fwd.lastacktime = now
        fwd.lastsegmentflags = f
        # the segments this ACK number covers leave the reverse list (whether ACK is set or not,
        # as in tshark); the one it ends exactly is the segment it acknowledges
        if ack != rev.quiet and (rev.uh < len(rev.unxt) or rev.umode == 1):
            fr = _ack_walk(rev, ack)
            rev.quiet = ack
            if fr:
                acked_out[i] = fr
                t = now - round(tss[fr - 1] * tick)
                if t:
                    rtt_out[i] = t / tick
        # bytes in flight after this segment: its direction's unacknowledged span (from the
        # lowest seq to the highest next seq, relative, unsigned) less the peer's SACKed bytes
        if seglen and fwd.valid_bif and (span >= 0 or fwd.uh < len(fwd.unxt) or fwd.umode == 1):
            if span < 0:
                span = _span(fwd)
            if span >= 0:  # (else the list is no longer followed: neither is known)
                inf = (span - rev.sack) & M32
                if 0 < inf < 2_000_000_000:
                    bif_out[i] = inf - 1 if synfin else inf  # (the SYN's, the FIN's sequence number is no byte)
                # (tshark's push_bytes_sent and push_set_last)
                fwd.push_bytes = push_out[i] = seglen if fwd.push_last else (fwd.push_bytes + seglen) & M32
                fwd.push_last = flags & _PSH
        if fwd.umode == 3 or rev.umode == 3:
            _unknown(ta, cv.index, di, fwd, rev, pkt)
        if sack > 0:
            fwd.sack = sack
        elif fwd.sack:
            fwd.sack = 0  # (a segment without SACK blocks clears its side's count)
        # ---- after the analysis (dissect_tcp): SYN bookkeeping, initial RTT, options
        if flags & _SYN:
            if not flags & _ACK:
                cv.mru_syn = now
            fwd.is_first_ack = True
        if synack == _ACK:
            if cv.mru_syn and not cv.first_rtt:
                cv.first_rtt = now - cv.mru_syn
                if cv.first_rtt:
                    ta.rtt[cv.index] = cv.first_rtt / tick
                    ta.rtt_at[cv.index] = pkt
            fwd.is_first_ack = False
        ws_out[i] = fwd.win_scale if not flags & _SYN and fwd.win_scale >= 0 else -1
        if ws is not None:
            fwd.win_scale = ws
        if flags & _SYN:  # verify_tcp_window_scaling
            if fwd.win_scale == -1:
                fwd.win_scale = rev.win_scale = -2
            elif flags & _ACK and rev.win_scale == -2:
                fwd.win_scale = -2
        if cv.unknown and cv.unknown < pkt:  # (after a SYN/FIN whose count is unknown: seq_unknown)
            f &= F_REUSED_PORTS  # (ISNs only: known)
            flags &= ~_ACKED_PAST
            dupack.pop(pkt, None)
            rto.pop(pkt, None)
        ci = cv.index
        tf_out[i] = flags | data_bit | 0x8000  # (bit 15: analysed, so that a packet without flags is not 0)
        conv_out[i] = ci
        fwd_out[i] = di
        base[2 * ci + di] = fwd.base_seq
        if rev.base_set:
            base[2 * ci + 1 - di] = rev.base_seq
        if f:
            flags_out[i] = f
    ta.packets = stop
    if stop < npk and buf:
        try:
            ta.__dict__["_wf_buf"] = (_weakref(source), buf_at, buf)
        except TypeError:  # (a source that cannot be referred to weakly: read again next call)
            pass


def _unknown(ta: TcpAnalysis, ci: int, di: int, fwd: _Flow, rev: _Flow, pkt: int) -> None:
    """Note the directions of conversation ``ci`` whose list is no longer followed, from ``pkt``."""
    for fl, d in ((fwd, di), (rev, 1 - di)):
        if fl.umode == 3 and (ci, d) not in ta.list_unknown:
            ta.list_unknown[(ci, d)] = pkt


def _grow(ta: TcpAnalysis, stop: int, npk: int) -> None:
    """The per-packet tables made at least ``stop`` long, at most ``npk`` (the capture's
    packets): doubled, so that a pass run in steps extends them O(log n) times, and a pass run
    only to the first screen's rows does not allocate and zero 30 bytes for every packet of the
    capture (37 MB for 1.24 M packets).  A packet past their end reads as one not analysed yet,
    as a packet past ``packets`` always did: every reader checks the length of the table it
    reads (``0 < n <= len(...)``) or reads only below ``packets``."""
    have = len(ta.flags)
    if have >= stop:
        return
    grow = min(npk, max(stop, 2 * have)) - have
    if grow > 0:
        ta.flags.frombytes(bytes(2 * grow))
        ta.tcp_flags.frombytes(bytes(2 * grow))
        ta.conv.extend(array("i", [-1]) * grow)
        ta.fwd.extend(bytes(grow))
        ta.wshift.extend(array("b", [-1]) * grow)
        ta.acks_frame.frombytes(bytes(4 * grow))
        ta.ack_rtt.frombytes(bytes(8 * grow))
        ta.bytes_in_flight.frombytes(bytes(4 * grow))
        ta.push_bytes_sent.frombytes(bytes(4 * grow))


def _new_conv(ta: TcpAnalysis, key: tuple, rkey: tuple) -> _Conv:
    """A new conversation, ``key`` its first packet's direction, ``rkey`` the other."""
    cv = _Conv(len(ta._convs), ta._convs[0].a.ubud if ta._convs else [WALK_BUDGET])
    ta._convs.append(cv)
    ta.base.extend((-1, -1))
    ta.rtt.append(0.0)
    ta.rtt_at.append(0)
    ta._state[key] = (cv, 0)
    ta._state[rkey] = (cv, 1)
    return cv


def _slow_header(decode, lt: int, data: bytes, flen: int) -> tuple | None:
    """The TCP header fields of a packet off ``_run``'s fast path (VLANs, cooked, IPv6,
    fragments), through Decoder: (src, dst, sport, dport, seq, ack, flags, win, TCP header
    offset, data offset byte, datagram end, frame length), or None if it is not TCP."""
    try:
        d = decode(lt, data)
    except (IndexError, ValueError):  # a malformed header is skipped, not fatal
        return None
    if d is None or type(d) is not Decoded or d.proto != 6:  # (a str: the reason it is not decoded)
        return None
    toff = d.l4_off  # (analyzer.packet.layers walked the headers)
    if toff < 0:  # a datagram reassembled from IPv4 fragments: all of it is here
        toff, doff, end, flen = 0, 0x50, len(d.payload) + 20, 1 << 62
    else:
        doff = data[toff + 12]
        # the datagram's end by its length field: tshark's reported length (a snapped
        # packet has fewer bytes; a zero length, as TSO writes, means the frame)
        end = d.l3_end if d.l3_end >= 0 else flen
    return d.src, d.dst, d.sport, d.dport, d.seq, d.ack, d.flags, d.win, toff, doff, end, flen


def _sack_covered(opts: bytes) -> int:
    """The bytes the blocks of the last SACK option among TCP options ``opts`` cover (right edge
    less left edge, modulo 2^32), as tshark 4.0 keeps them for bytes in flight: each SACK option
    starts the count again and only its first three complete blocks are kept; -1 without a SACK
    option (the side's previous count stays).  The options as tshark walks them
    (``analyzer.packet.tcp_options``: none after an EOL or a bad length)."""
    out = -1
    for k, v, _ in tcp_options(opts):
        if k == 5:
            out = 0
            for b in range(min(len(v) // 8, 3)):
                le, re_ = struct.unpack_from("!II", v, 8 * b)
                out = (out + re_ - le) & M32
    return out


_JM = 1 << 40  # an _Index key: position * _JM + segment id (ids stay far below it)


def _neg(v: int) -> int:
    return -v


class _Index:
    """An unsorted list of unacknowledged segments within 2^31 of each other, ordered by
    sequence number, so that an ACK finds what it removes and what it cuts by bisection.

    Positions are sequence numbers unwrapped to integers (``_ix_build``, ``_ix_add``: congruent
    modulo 2^32, the highest next seq less than 2^31 past the lowest seq), so tshark's
    comparisons within the list (GT_SEQ, LE_SEQ) become integer ones: an ACK at position A
    removes the segments whose next seq is at most A and cuts those it ends within to A — or, at
    2^31 or more past the lowest seq, removes those whose next seq is more than A - 2^31 and
    cuts none.  A cut moves every segment whose seq is below A up to A, so the segments cut
    stay in groups (one per ACK that cut, merged when a later ACK cuts past them), their
    positions decreasing from the oldest group to the newest: a cut visits the segments it
    moves for the first time and the groups it merges, never the others."""

    __slots__ = ("seg", "cut", "N", "S", "cst", "cv", "cc", "tau", "j0", "nid", "ops")

    def __init__(self) -> None:
        self.seg: dict[int, tuple[int, int, int]] = {}  # id (arrival order) -> (seq position, next seq position, frame)
        self.cut: dict[int, int] = {}  # id -> the ACK (``tau``) that cut it first: its group
        self.N: list[int] = []  # next seq position * _JM + id, sorted
        self.S: list[int] = []  # seq position * _JM + id of the segments not cut, sorted
        self.cst: list[int] = []  # the cut groups, oldest first: the first ACK merged into each,
        self.cv: list[int] = []  # its position (decreasing along the stack),
        self.cc: list[int] = []  # its segments still listed (a group without any is dropped)
        self.tau = 0  # ACKs seen
        self.j0 = 0  # no listed segment has a lower id
        self.nid = 0
        self.ops = 0  # segments and ACKs since the last check for order (_ix_sorted)


def _ix_build(useq: list[int], unxt: list[int], ufr: list[int], h: int) -> _Index | None:
    """The index of the list from ``h`` (its seqs as ACKs have cut them), None when its
    segments do not lie within 2^31 of each other."""
    if h == len(unxt):
        return None
    a = useq[h]
    ix = _Index()
    seg = ix.seg
    lo = hi = a
    for j in range(h, len(unxt)):
        s = useq[j]
        u = a + ((s - a + _HALF) & M32) - _HALF
        v = u + ((unxt[j] - s) & M32)
        seg[j - h] = (u, v, ufr[j])
        if u < lo:
            lo = u
        if v > hi:
            hi = v
    if hi - lo >= _HALF:
        return None
    ix.N = sorted([v * _JM + j for j, (_, v, _f) in seg.items()])
    ix.S = sorted([u * _JM + j for j, (u, _, _f) in seg.items()])
    ix.nid = len(seg)
    return ix


def _ix_low(ix: _Index) -> int:
    """The lowest seq position listed."""
    c = ix.cv
    if ix.S:
        s = ix.S[0] // _JM
        return c[-1] if c and c[-1] < s else s
    return c[-1]


def _ix_seq(ix: _Index, j: int) -> int:
    """Segment ``j``'s seq position as tshark has it (cut or not)."""
    t = ix.cut.get(j)
    return ix.seg[j][0] if t is None else ix.cv[bisect_right(ix.cst, t) - 1]


def _ix_add(ix: _Index, seq: int, nxt: int, pkt: int) -> bool:
    """A segment joins the index; False (nothing done) when it would not lie within 2^31 of the others."""
    lo = _ix_low(ix)
    hi = ix.N[-1] // _JM
    u = lo + ((seq - lo + _HALF) & M32) - _HALF
    v = u + ((nxt - seq) & M32)
    if (v if v > hi else hi) - (u if u < lo else lo) >= _HALF:
        return False
    j = ix.nid
    ix.nid = j + 1
    ix.seg[j] = (u, v, pkt)
    insort(ix.N, v * _JM + j)
    insort(ix.S, u * _JM + j)
    ix.ops += 1
    return True


def _ix_drop(ix: _Index, j: int) -> None:
    """Segment ``j`` leaves the list (its entry in ``ix.N`` is the caller's; in ``ix.S``, when
    not cut, too)."""
    t = ix.cut.pop(j, None)
    if t is not None:
        g = bisect_right(ix.cst, t) - 1
        ix.cc[g] -= 1
        if not ix.cc[g]:
            del ix.cst[g], ix.cv[g], ix.cc[g]
    del ix.seg[j]


def _ix_ack(ix: _Index, ack: int) -> int:
    """tshark's walk of the list for ACK number ``ack``, on the index: the frame of the oldest
    segment it ends exactly (0: none)."""
    lo = _ix_low(ix)
    oa = (ack - lo) & M32
    N, S, seg = ix.N, ix.S, ix.seg
    ix.ops += 1
    if oa >= _HALF:  # (2^31 or more past every seq: those ending more than A - 2^31 leave, none is cut)
        k = bisect_right(N, (lo + oa - _HALF + 1) * _JM - 1)
        for e in N[k:]:
            j = e % _JM
            if j not in ix.cut:
                del S[bisect_left(S, seg[j][0] * _JM + j)]
            _ix_drop(ix, j)
        del N[k:]
        return 0
    A = lo + oa
    hit = 0
    k = bisect_right(N, (A + 1) * _JM - 1)
    if k:
        e = bisect_left(N, A * _JM, 0, k)
        if e < k:
            hit = seg[N[e] % _JM][2]  # (same position: the lowest id, the oldest)
        for e in N[:k]:
            _ix_drop(ix, e % _JM)  # (one not cut is in ix.S below A: dropped from it next)
        del N[:k]
    # every segment left whose seq is below A is cut to A: those not cut yet join a new group,
    # the groups below A merge into it
    m = bisect_left(S, A * _JM)
    moved = 0
    if m:
        tau, cut = ix.tau, ix.cut
        for e in S[:m]:
            j = e % _JM
            if j in seg:
                cut[j] = tau
                moved += 1
        del S[:m]
    cst, cv, cc = ix.cst, ix.cv, ix.cc
    start = ix.tau
    while cv and cv[-1] <= A:
        cv.pop()
        moved += cc.pop()
        start = cst.pop()
    if moved:
        cst.append(start)
        cv.append(A)
        cc.append(moved)
    ix.tau += 1
    return hit


def _ix_oldest(ix: _Index) -> int:
    """The frame of the oldest segment listed."""
    seg, j = ix.seg, ix.j0
    while j not in seg:
        j += 1
    ix.j0 = j
    return seg[j][2]


def _ix_lists(ix: _Index) -> tuple[list[int], list[int], list[int]]:
    """The list in arrival order: seqs (cut), next seqs, frames (modulo 2^32)."""
    cut = ix.cut
    cv, cst = ix.cv, ix.cst
    useq, unxt, ufr = [], [], []
    for j, (u, v, fr) in ix.seg.items():  # (ids in arrival order)
        t = cut.get(j)
        useq.append((u if t is None else cv[bisect_right(cst, t) - 1]) & M32)
        unxt.append(v & M32)
        ufr.append(fr)
    return useq, unxt, ufr


def _ix_span(ix: _Index, base: int) -> int:
    """Bytes in flight before SACK over the index: highest relative next seq less lowest
    relative seq, both compared unsigned as tshark does — relative numbers wrapping inside the
    list (a segment before the base) make the lowest the first at or after the wrap."""
    lo = _ix_low(ix)
    N = ix.N
    hi = N[-1] // _JM
    c = (lo - base) & M32
    if c + hi - lo <= M32:
        return hi - lo
    w = lo + (1 << 32) - c  # the position of relative 0
    S, cv = ix.S, ix.cv
    first = None
    k = bisect_left(S, w * _JM)
    if k < len(S):
        first = S[k] // _JM
    k = bisect_right(cv, -w, key=_neg) - 1  # (the lowest group at or past it)
    if k >= 0 and (first is None or cv[k] < first):
        first = cv[k]
    k = bisect_left(N, w * _JM) - 1
    last = c + N[k] // _JM - lo if k >= 0 else hi - w
    return (last - (c if first is None else first - w)) & M32


def _ix_sorted(fl: _Flow, ix: _Index) -> None:
    """Back to a sorted list when the index's segments are in order again (checked once per as
    many segments and ACKs as it lists: linear overall)."""
    n = len(ix.N)
    if ix.ops <= n + 64:
        return
    ix.ops = 0
    ps = pn = _ix_low(ix)  # (so the oldest segment's seq is the lowest)
    for j, (_, v, _f) in ix.seg.items():
        u = _ix_seq(ix, j)
        if u < ps or v < pn:
            return
        ps, pn = u, v
    fl.useq, fl.unxt, fl.ufr = _ix_lists(ix)
    fl.uh = fl.ucut = 0
    fl.umode = 0
    fl.ix = None


def _give_up(fl: _Flow) -> None:
    """A walk budget ran out: the list is no longer followed (fields from it absent); how many
    segments it held is kept as the start of ``ubound``."""
    fl.ubound = len(fl.unxt) - fl.uh if fl.ix is None else len(fl.ix.N)
    fl.umode = 3
    fl.useq, fl.unxt, fl.ufr = [], [], []
    fl.uh = fl.ucut = 0
    fl.ix = None
    fl.ulohi = None


def _spend(fl: _Flow, cost: int) -> bool:
    """Charge ``cost`` segments visited to the flow's and the capture's walk budgets; False
    (and the list given up) when either would run out."""
    if cost > fl.uleft or cost > fl.ubud[0]:
        _give_up(fl)
        return False
    fl.uleft -= cost
    fl.ubud[0] -= cost
    return True


def _unsorted(fl: _Flow) -> None:
    """The list (``useq[uh:]``, its cuts written out) no longer sorted: indexed, else walked."""
    ix = _ix_build(fl.useq, fl.unxt, fl.ufr, fl.uh)
    if ix is not None:
        fl.umode = 1
        fl.ix = ix
        fl.useq, fl.unxt, fl.ufr = [], [], []
        fl.uh = fl.ucut = 0
        return
    fl.umode = 2
    fl.uref = None
    fl.ulohi = None
    if _spend(fl, 2 * (len(fl.unxt) - fl.uh)):  # (the index tried, the span scanned)
        fl.ulohi = _lohi_scan(fl)


def _append(fl: _Flow, seq: int, nxt: int, pkt: int) -> None:
    """A segment joins ``fl``'s unacknowledged list (tshark puts it at its head: newest first)."""
    mode = fl.umode
    if mode == 1:
        ix = fl.ix
        assert ix is not None
        if _ix_add(ix, seq, nxt, pkt):
            _ix_sorted(fl, ix)
            return
        fl.useq, fl.unxt, fl.ufr = _ix_lists(ix)
        fl.uh = 0
        fl.ix = None
        fl.useq.append(seq)
        fl.unxt.append(nxt)
        fl.ufr.append(pkt)
        _unsorted(fl)
        return
    if mode == 3:
        fl.ubound += 1  # (tshark listed it: the caller found room, ``ubound`` below the cap)
        return
    unxt = fl.unxt
    h = fl.uh
    if h == len(unxt):  # empty: start again, sorted
        if h:
            fl.useq, fl.unxt, fl.ufr = [seq], [nxt], [pkt]
            fl.uh = 0
        else:
            fl.useq.append(seq)
            unxt.append(nxt)
            fl.ufr.append(pkt)
        fl.umode = 0
        fl.ucut = 0
        return
    useq = fl.useq
    if mode == 0:
        a = useq[h]
        os_, on = (seq - a) & M32, (nxt - a) & M32
        last = a if len(useq) <= fl.ucut else useq[-1]
        useq.append(seq)
        unxt.append(nxt)
        fl.ufr.append(pkt)
        if not (os_ >= (last - a) & M32 and on >= (unxt[-2] - a) & M32 and os_ <= on < _HALF):
            for k in range(h + 1, fl.ucut):  # (the cuts written out)
                useq[k] = a
            fl.ucut = 0
            _unsorted(fl)
        return
    r = fl.uref
    if r is not None:
        ds, dn = (seq - r) & M32, (nxt - r) & M32
        if ds < dn <= _HALF:
            if ds < fl.umind:
                fl.umind = ds
            if dn > fl.umaxd:
                fl.umaxd = dn
        else:
            fl.uref = None
    if fl.ulohi is None:  # (after a re-base)
        if not _spend(fl, len(unxt) - h):
            fl.ubound += 1  # (given up before this segment joined: tshark listed it)
            return
        fl.ulohi = _lohi_scan(fl)
    lo, hi = fl.ulohi
    b = fl.base_seq
    x, y = (seq - b) & M32, (nxt - b) & M32
    fl.ulohi = (x if x < lo else lo, y if y > hi else hi)
    useq.append(seq)
    unxt.append(nxt)
    fl.ufr.append(pkt)


def _ack_walk(fl: _Flow, ack: int) -> int:
    """tshark's walk of ``fl``'s (non-empty) unacknowledged list for the peer's ACK number
    ``ack``: a segment whose next seq is at or before it leaves; one it ends within has its seq
    moved up to it.  Returns the frame of the oldest segment it ends exactly (0: none)."""
    mode = fl.umode
    if mode == 1:
        ix = fl.ix
        assert ix is not None
        hit = _ix_ack(ix, ack)
        if not ix.N:
            fl.umode = 0
            fl.ix = None
        else:
            _ix_sorted(fl, ix)
        return hit
    useq, unxt = fl.useq, fl.unxt
    h, n = fl.uh, len(unxt)
    if mode == 0:
        # next seqs, as offsets from the first seq, never go back and stay under 2^31: those at or
        # before the ACK number (LE_SEQ: acknowledged) are the first ones, found by bisection —
        # unless the ACK number is 2^31 or more past the first seq: then those more than 2^31
        # before it are the last ones
        a = useq[h]
        oa = (ack - a) & M32
        key = lambda x: (x - a) & M32  # noqa: E731
        if oa >= _HALF:
            j = bisect_right(unxt, oa - _HALF, h, n, key=key)
            if j == h:
                fl.useq, fl.unxt, fl.ufr = [], [], []
                fl.uh = fl.ucut = 0
            else:
                del useq[j:], unxt[j:], fl.ufr[j:]
                if fl.ucut > j:
                    fl.ucut = j
            return 0
        hit = 0
        j = bisect_right(unxt, oa, h, n, key=key)
        if j > h and unxt[j - 1] == ack:
            hit = fl.ufr[bisect_left(unxt, oa, h, j, key=key)]
        if j == n:
            fl.useq, fl.unxt, fl.ufr = [], [], []
            fl.uh = fl.ucut = 0
            return hit
        # the segments left whose seq is before the ACK number (GT_SEQ(ack, seq)) are cut to it:
        # the ones already cut (to the first seq, below it) and a run after them
        cu = fl.ucut
        if j < cu:
            useq[j] = a
        if oa:
            k = bisect_left(useq, oa, j if j > cu else cu, n, key=key)
            if k > j:
                useq[j] = ack
                cu = k
        if j > 4096 and j * 2 > n:
            del useq[:j], unxt[:j], fl.ufr[:j]
            fl.uh = 0
            fl.ucut = cu - j if cu > j else 0
        else:
            fl.uh = j
            fl.ucut = cu
        return hit
    if mode == 3:
        return 0
    r = fl.uref
    if r is not None:  # an ACK that can touch none of the segments: nothing to walk
        d = (ack - r) & M32
        if (d <= fl.umind) if d < _HALF else (fl.umaxd + (1 << 32) - d <= _HALF):
            return 0
    if not _spend(fl, n - h):
        return 0
    hit = 0
    ks, kn, kf = [], [], []
    ufr = fl.ufr
    mind, maxd = _HALF, 0
    for j in range(h, n):
        x = unxt[j]
        d = (ack - x) & M32
        if d < _HALF:
            if not hit and not d:
                hit = ufr[j]
            continue
        s = useq[j]
        if ((s - ack) & M32) >= _HALF:
            s = ack
        ks.append(s)
        kn.append(x)
        kf.append(ufr[j])
        if (s - ack) & M32 < mind:
            mind = (s - ack) & M32
        if (x - ack) & M32 > maxd:
            maxd = (x - ack) & M32
    fl.useq, fl.unxt, fl.ufr = ks, kn, kf
    fl.uh = fl.ucut = 0
    fl.uref, fl.umind, fl.umaxd = ack, mind, maxd
    if _is_sorted(ks, kn):
        fl.umode = 0
    elif _spend(fl, len(ks)):  # (the index, or the span, made again: as long as a walk)
        ix = _ix_build(ks, kn, kf, 0)
        if ix is not None:
            fl.umode = 1
            fl.ix = ix
            fl.useq, fl.unxt, fl.ufr = [], [], []
        else:
            fl.ulohi = _lohi_scan(fl)
    return hit


def _is_sorted(useq: list[int], unxt: list[int]) -> bool:
    """Whether a list's seqs and next seqs never go back, all within 2^31 of the first seq."""
    if not useq:
        return True
    a = useq[0]
    ps = pn = 0
    for s, x in zip(useq, unxt):
        os_, on = (s - a) & M32, (x - a) & M32
        if os_ < ps or on < pn or not os_ <= on < _HALF:
            return False
        ps, pn = os_, on
    return True


def _lohi_scan(fl: _Flow) -> tuple[int, int]:
    """(lowest seq, highest next seq) of ``fl``'s list, relative to its base, compared unsigned (tshark's)."""
    b = fl.base_seq
    h = fl.uh
    return min((s - b) & M32 for s in fl.useq[h:]), max((x - b) & M32 for x in fl.unxt[h:])


def _oldest(fl: _Flow) -> int:
    """The frame of the oldest segment in ``fl``'s list (0: empty, -1: not followed)."""
    m = fl.umode
    if m == 1:
        assert fl.ix is not None
        return _ix_oldest(fl.ix)
    if m == 3:
        return -1
    return fl.ufr[fl.uh] if fl.uh < len(fl.ufr) else 0


def _span(fl: _Flow) -> int:
    """tshark's bytes in flight before SACK: highest relative next seq less lowest relative seq
    over ``fl``'s (non-empty) unacknowledged list; -1 when the list is not followed."""
    m = fl.umode
    if m == 1:
        assert fl.ix is not None
        return _ix_span(fl.ix, fl.base_seq)
    if m == 3:
        return -1
    useq, unxt = fl.useq, fl.unxt
    h = fl.uh
    if m == 0:
        a = useq[h]
        c, last = (a - fl.base_seq) & M32, (unxt[-1] - a) & M32
        if c + last <= M32:  # (relative numbers do not wrap inside the list: the first seq is the lowest)
            return last
        # they wrap at offset w from the first seq: the lowest is the first seq at or past it (the
        # cut ones are at offset 0), the highest the last next seq before it
        w = (1 << 32) - c
        key = lambda x: (x - a) & M32  # noqa: E731
        n = len(unxt)
        k = bisect_left(useq, w, max(h, fl.ucut), n, key=key)
        lo = key(useq[k]) - w if k < n else c
        k = bisect_left(unxt, w, h, n, key=key) - 1
        hi = c + key(unxt[k]) if k >= h else last - w
        return (hi - lo) & M32
    lh = fl.ulohi
    if lh is None:
        if not _spend(fl, len(unxt) - h):
            return -1
        lh = fl.ulohi = _lohi_scan(fl)
    lo, hi = lh
    return (hi - lo) & M32


# ------------------------------------------------------------------ statistics

def stats(analysis: Analysis, source=None) -> dict:
    """Counts of packets per ``tcp.analysis.*`` flag, for the capture and per TCP connection
    (wirefall's connection ids, as strings: JSON keys; connections without flags are left
    out): ``{"capture": {field: n}, "connections": {"conn_id": {field: n}}}``."""
    own = source is None
    if own:
        from .capture import PacketSource

        source = PacketSource(analysis.path)
    try:
        ta = tcp_analysis(analysis, source)
    finally:
        if own:
            source.close()
    conn_of = analysis.index.conn
    per_conn: dict[int, dict[int, int]] = {}
    for i, f in enumerate(ta.flags):
        if f:
            c = conn_of[i]
            d = per_conn.setdefault(c, {})
            d[f] = d.get(f, 0) + 1

    def expand(hist: dict[int, int]) -> dict[str, int]:
        out = {name: 0 for name in FIELDS}
        for f, k in hist.items():
            for name, m in FIELDS.items():
                if f & m:
                    out[name] += k
        return out

    total: dict[int, int] = {}
    for hist in per_conn.values():
        for f, k in hist.items():
            total[f] = total.get(f, 0) + k
    return {"capture": expand(total), "connections": {str(c): expand(h) for c, h in sorted(per_conn.items()) if c >= 0}}


def stats_or_none(analysis: Analysis) -> dict | None:
    """``stats()`` reading the capture at ``analysis.path``, or None when it cannot be read
    (an analysis built in memory, a file gone since)."""
    import os

    if not analysis.path or not os.path.isfile(analysis.path):
        return None
    try:
        return stats(analysis)
    except (OSError, ValueError, EOFError) as e:  # the capture changed or went away under us
        analysis.warnings.append(f"TCP analysis statistics not computed: {e.__class__.__name__}: {e}")
        return None


_SHORT = (
    ("tcp.analysis.retransmission", "retrans"), ("tcp.analysis.fast_retransmission", "fast"),
    ("tcp.analysis.spurious_retransmission", "spurious"), ("tcp.analysis.out_of_order", "ooo"),
    ("tcp.analysis.lost_segment", "lost"), ("tcp.analysis.ack_lost_segment", "ack unseen"),
    ("tcp.analysis.duplicate_ack", "dup ack"), ("tcp.analysis.zero_window", "zero win"),
    ("tcp.analysis.window_full", "win full"), ("tcp.analysis.window_update", "win upd"),
    ("tcp.analysis.keep_alive", "keep-alive"),
)


def render_text(st: dict) -> str:
    """The ``wirefall stats`` table of ``stats()``: one row per connection with flags, then all."""
    rows = [[str(c), *(str(d[k]) for k, _ in _SHORT)] for c, d in st["connections"].items()]
    rows.append(["all", *(str(st["capture"][k]) for k, _ in _SHORT)])
    headers = ["conn", *(s for _, s in _SHORT)]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = lambda vals: "  ".join(v.rjust(widths[i]) for i, v in enumerate(vals))  # noqa: E731
    return "\n".join(["TCP analysis (packets per tcp.analysis flag, as tshark counts them)", line(headers),
                      line(["-" * w for w in widths]), *(line(r) for r in rows)])
