"""``tcp``: TCP header, with tshark's relative sequence numbers, calculated window and
stream numbers; ``tcp.analysis.*`` (retransmissions, duplicate ACKs, window problems, the
initial RTT, and from tshark's list of unacknowledged segments: the frame an ACK acknowledges
and its RTT, bytes in flight, bytes since the last PSH, a retransmission's RTO) from
analyzer/tcp_analysis.py, computed on first use as far as the packet asked about."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from ..expert import Group, Severity, message
from ..packet import OPT_PADDING, TcpOptions, tcp_options, wscale_option
from ._util import packet_field as P
from .packet import decode_layers
from .types import BOOL, BYTES, FLOAT, INT, NONE, PROTO, UINT, Protocol


def _t(pv):
    return pv.layers.tcp


def _f(i):
    def get(pv):
        t = pv.layers.tcp
        return [t[i]] if t is not None else []
    return get


def _bytes(pv):
    L = pv.layers
    return [pv.data[L.tcp_off : L.l4_end]] if L.tcp is not None else []


def _payload(pv):
    L = pv.layers
    t = L.tcp
    if t is None or not t[9]:
        return []
    return [pv.data[L.tcp_off + t[4] : L.l4_end]]


def _options(pv) -> list:
    """The segment's TCP options as tshark 4.0 dissects them, ``(kind, value, offset)`` each
    (``analyzer.packet.tcp_options``' walk, cut after a SACK option tshark throws on:
    ``sack_marks``); [] for a segment with none."""
    L = pv.layers
    t = L.tcp
    if t is None or t[4] <= 20:
        return []
    return dissected(tcp_options(pv.data[L.tcp_off + 20 : min(L.tcp_off + t[4], L.l4_end)]), lambda: _dsack_terms(pv))[0]


def _option(kind: int, size: int, part: slice):
    """An option's value (``part`` of its ``size`` bytes, big-endian), in each segment that carries one."""
    def get(pv):
        return [int.from_bytes(v[part], "big") for k, v, _ in _options(pv) if k == kind and len(v) == size]
    return get


_mss = _option(2, 2, slice(0, 2))  # (kind 2, length 4: a SYN's)


def _sack_perm(pv):
    """tcp.options.sack_perm (FT_PROTOCOL): the SACK-permitted option's bytes (kind 4), all of
    them whatever its length: tshark 4.0 adds the field before it finds a length other than 2
    wrong (``04 03 00``: tcp.options.sack_perm 04:03:00, "option length should be 2")."""
    return [bytes((4, len(v) + 2)) + v for k, v, _ in _options(pv) if k == 4]


def _sack(part: str):
    """The SACK option's blocks (kind 5) as tshark adds them: each block's left (``le``) and right
    (``re``) edge, relative to the peer's base sequence number (as tcp.ack), D-SACK blocks too;
    ``count`` the blocks in each SACK option.  An option whose length leaves a block short
    (tshark 4.0: "suboption would go past end of option") has that block's left edge when its
    four bytes are there, and no right edge; ``count`` counts whole blocks only (length 14:
    sack_le twice, sack_re once, count 1)."""
    def get(pv) -> list[int]:
        out: list[int] = []
        for k, v, _ in _options(pv):
            if k != 5:
                continue
            if part == "count":
                out.append(len(v) // 8)
                continue
            at = 0 if part == "le" else 4
            out.extend(_rel(pv, int.from_bytes(v[j : j + 4], "big"), True) for j in range(at, len(v) - 3, 8))
        return out
    return get


def _dsack_terms(pv):
    """The D-SACK test's ACK (tshark's th_ack: relative when the ACK flag is set, else the raw
    field) and its map of a raw edge to a relative one, on this segment."""
    t = pv.layers.tcp
    return (_rel(pv, t[3], True) if t[5] & 0x10 else t[3]), (lambda x: _rel(pv, x, True))


def _dsack(part: str):
    """The D-SACK block's edges (``le``, ``re``), relative, of each SACK option ``sack_marks``
    marks (tshark 4.0's test, RFC 2883 §4.1): that option's first block's.  (analyzer.expert's
    D-SACK item, ``tcp.options.sack.dsack``, is one per marked option with a whole first block,
    from the same function: tests/test_dsack29.py checks both against tshark on blocks
    straddling the ACK and the second block's left edge, tests/test_tcp_options37.py on
    several SACK options and short ones.)"""
    def get(pv) -> list[int]:
        if pv.layers.tcp is None:
            return []
        opts = _options(pv)
        if not any(k == 5 for k, _, _ in opts):
            return []
        ack, rel = _dsack_terms(pv)
        marks = sack_marks(opts, ack, rel)[0]
        sacks = [v for k, v, _ in opts if k == 5]
        at = 0 if part == "le" else 4
        return [rel(int.from_bytes(v[at : at + 4], "big")) for v, m in zip(sacks, marks) if m and len(v) >= at + 4]
    return get


def sack_marks(opts, ack: int, rel) -> tuple[list[bool], int | None]:
    """tshark 4.0's D-SACK test at the end of each SACK option among ``opts``
    (``analyzer.packet.tcp_options``' walk), in order: whether it marks that option, and the
    index in ``opts`` of the option it throws on, or None.  ``ack`` is the test's ACK and
    ``rel`` maps a raw edge to a relative one (``_dsack_terms``).

    The test is on the segment's blocks so far (its first four whole ones, as its tcpheader
    keeps them), not the option's own: the first block's right edge at or below the ACK (RFC
    2883 §4.1.1), or inside the second block (le2 < re1 <= re2, §4.1.2) — so a second SACK
    option is marked with the first, its own first block shown as the D-SACK.  Before any
    whole block tshark tests its tcpheader's zeros (an edge 0: at or below any relative ACK
    under 2^31), and a marked option without a whole first block makes it read that block's
    edges past the option's end: it throws ("Malformed Packet"), after the D-SACK left edge
    when its four bytes are there, and dissects nothing more of the segment — odd, but
    tshark's (``05 06 <edge>``: sack_le and dsack_le, no dsack_re, no D-SACK item, no option
    after it)."""
    les: list[int] = []
    res: list[int] = []
    marks: list[bool] = []
    for i, (k, v, _) in enumerate(opts):
        if k != 5:
            continue
        for j in range(0, len(v) - 7, 8):
            if len(les) < 4:
                les.append(rel(int.from_bytes(v[j : j + 4], "big")))
                res.append(rel(int.from_bytes(v[j + 4 : j + 8], "big")))
        mark = is_dsack(res[0] if res else 0, ack, *((les[1], res[1]) if len(les) > 1 else ()))
        marks.append(mark)
        if mark and len(v) < 8:
            return marks, i
    return marks, None


def dissected(walk, sack_terms) -> tuple[list, int | None]:
    """The options of ``walk`` (``tcp_options``) tshark dissects — all, or up to the SACK option
    it throws on (``sack_marks``) — and that option's index, or None.  ``sack_terms()`` gives
    the D-SACK test's ACK and edge map, asked for only where a SACK option is short (only such
    a one can make tshark throw)."""
    if any(k == 5 and len(v) < 8 for k, v, _ in walk):
        threw = sack_marks(walk, *sack_terms())[1]
        if threw is not None:
            return walk[: threw + 1], threw
    return walk, None


def is_dsack(re1: int, ack: int, le2: int | None = None, re2: int | None = None) -> bool:
    """tshark 4.0's D-SACK test (RFC 2883) on the first SACK block's right edge ``re1`` and the
    second block (``le2``, ``re2``) when there is one, in 32-bit sequence space: ``re1`` at or
    below the ACK (§4.1.1), or inside the second block, le2 < re1 <= re2 (§4.1.2).  The one
    test of the D-SACK fields here and of analyzer.expert's item."""
    return _le_seq(re1, ack) or (le2 is not None and re2 is not None and _lt_seq(le2, re1) and _le_seq(re1, re2))


# ------------------------------------------------------------------ the options' expert items

# the words tshark 4.0 names each option by (its dissectors': the "Options:" line, "TCP Option -
# …", a stop's note); a kind of none of these is its "Unknown (0xNN)"
OPT_WORDS = {0: "End of Option List (EOL)", 1: "No-Operation (NOP)", 2: "Maximum segment size", 3: "Window scale", 4: "SACK permitted",
             5: "SACK", 6: "Echo", 7: "Echo reply", 8: "Timestamps", 11: "CC", 12: "CC.NEW", 13: "CC.ECHO", 19: "TCP MD5 signature",
             20: "SCPS capabilities", 21: "Selective Negative Acknowledgment", 22: "SCPS record boundary",
             23: "SCPS corruption experienced", 27: "Quick-Start", 28: "User Timeout", 29: "TCP AO", 30: "MPTCP", 34: "TCP Fast Open",
             76: "Riverbed Probe", 78: "Riverbed Transparency", 172: "Accurate ECN", 174: "Accurate ECN", 253: "Experimental",
             254: "Experimental"}
# the length tshark's dissector of an option requires ("option length should be N", a Note;
# each kind's seen in tshark 4.0.17 on a 4-byte option of it)
OPT_LENGTH = {2: 4, 3: 3, 4: 2, 6: 6, 7: 6, 8: 10, 11: 6, 12: 6, 13: 6, 19: 18, 21: 6, 22: 2, 23: 2, 27: 8, 28: 4}


def opt_word(kind: int) -> str:
    return OPT_WORDS.get(kind) or f"Unknown (0x{kind:02x})"


# where tshark hangs an option item in its tree (OptionItem.where)
ON_OPTIONS = "options"  # the "Options:" line (4 NOPs in a row, a SYN without MSS)
ON_OPTION = "option"  # its option's "TCP Option - …" line, first (an MSS on a segment without SYN)
ON_LENGTH = "length"  # its option's "Length:" line (a length wrong for the kind)
ON_VALUE = "value"  # a line of its option's value (the shift, a cut SACK block, the D-SACK block)
OWN_LINE = "own line"  # a line of its own under "Options:", at the byte the walk stopped
AFTER_TCP = "after"  # "[Malformed Packet: TCP]" after the TCP tree (tshark threw in the option)


class OptionItem(NamedTuple):
    """An expert item tshark 4.0 raises on a segment's TCP options: its expert field, severity
    and group, the arguments its words are made from (``analyzer.expert.message``), the byte
    of the options it is about (the option's first — the fourth NOP's, where the walk stopped
    —, -1: the options as a whole) and where tshark hangs it (``ON_OPTIONS`` …)."""

    abbrev: str
    severity: Severity
    group: Group
    args: tuple
    offset: int
    where: str

    @property
    def text(self) -> str:
        return message(self.abbrev, self.args)


class OptionItems(list[OptionItem]):
    """``option_items``' answer: the items in tshark's tree order, and what they were decided
    on — ``walk`` (``tcp_options``), ``marks`` and ``threw`` (``sack_marks``; no SACK option:
    [] and None) — for the tree's lines."""

    walk: TcpOptions
    marks: list[bool]
    threw: int | None


_NOP_TS = b"\x01\x01\x08\x0a"
# the SYNs' usual options, which raise nothing: MSS, then Linux's SACK_PERM TS NOP WS, Windows'
# NOP WS NOP NOP SACK_PERM, macOS's NOP WS NOP NOP TS SACK_PERM EOL EOL, or MSS NOP NOP SACK_PERM
# NOP WS, or MSS alone (a shift of at most 14)
_PLAIN_SYN = re.compile(rb"\x02\x04..(?:\x04\x02\x08\x0a.{8}\x01\x03\x03[\x00-\x0e]|\x01\x03\x03[\x00-\x0e]\x01\x01\x04\x02"
                        rb"|\x01\x03\x03[\x00-\x0e]\x01\x01\x08\x0a.{8}\x04\x02\x00\x00|\x01\x01\x04\x02\x01\x03\x03[\x00-\x0e]|)",
                        re.S)


def plain_options(opts: bytes, syn: bool) -> bool:
    """Whether options ``opts`` are of a common layout that raises no item (``option_items``
    finds none), told without walking them: a segment's NOP NOP Timestamps (12 bytes, the
    usual data segment's), a SYN's usual MSS/SACK_PERM/TS/NOP/WS (``_PLAIN_SYN``).  False says
    nothing: walk them."""
    if syn:
        return _PLAIN_SYN.fullmatch(opts) is not None
    return len(opts) == 12 and opts.startswith(_NOP_TS)


def option_items(opts, syn: bool, sack_terms: Callable[[], tuple[int, Callable[[int], int]]]) -> OptionItems:
    """The expert items tshark 4.0 raises on TCP options ``opts`` of a segment (``syn``: its
    SYN flag), in its tree's order — the one decision of them, which the detail tree
    (analyzer.detail._options_node) hangs on its lines and ``wirefall expert``
    (analyzer.expert._tcp_items) lists.  ``sack_terms()`` gives the D-SACK test's ACK and its
    map of a raw edge to a relative one (``sack_marks``), asked for only when a SACK option is
    walked.  Each as packet-tcp.c raises it (checked on built segments: tests/test_tcp_options37.py
    (the tree), tests/test_tcp_expert37.py (the list)):

    - ``tcp.nop`` (Warning/Protocol): the fourth NOP in a row — counted within a 32-bit word of
      the header: a NOP at a word's start goes on counting only from 0, else the count starts
      again; other options do not end a row;
    - ``tcp.options.mss.present`` (Warning/Protocol): an MSS option on a segment without SYN;
    - ``tcp.option.len.invalid`` (Note/Sequence): "option length should be N" (``OPT_LENGTH``);
      and where the walk stops on a length byte missing, below 2 or running past the options;
    - ``tcp.options.wscale.shift.invalid`` (Warning/Protocol): a shift over 14;
    - ``tcp.suboption_malformed`` (Error/Malformed): a SACK option whose blocks are cut;
    - ``tcp.options.sack.dsack`` (Warning/Sequence): a SACK option the D-SACK test marks, with
      a whole first block; marked without one, tshark throws: ``_ws.malformed.expert``
      (Error/Malformed, "Malformed Packet") and nothing after it;
    - ``tcp.non_zero_bytes_after_eol`` (Error/Protocol): a byte other than EOL after an EOL;
    - ``tcp.options.mss.absent`` (Note/Protocol): a SYN without MSS — only after a walk that
      reached the options' end."""
    walk = tcp_options(opts)
    out = OptionItems()
    out.walk, out.marks, out.threw = walk, [], None
    add = out.append
    shown: list[tuple[int, bytes, int]] = walk
    for k, _, _ in walk:
        if k == 5:
            out.marks, out.threw = sack_marks(walk, *sack_terms())
            if out.threw is not None:
                shown = walk[: out.threw + 1]
            break
    W, N, E = Severity.WARN, Severity.NOTE, Severity.ERROR
    P, S = Group.PROTOCOL, Group.SEQUENCE
    nops = sacks = 0
    mss = False
    for kind, val, o in shown:
        if kind <= 1:
            if kind == 1:
                if nops == 0 or o % 4:
                    nops += 1
                    if nops == 4:
                        add(OptionItem("tcp.nop", W, P, (), o, ON_OPTIONS))
                else:
                    nops = 0
            continue
        if kind == 2:
            mss = True
            if not syn:
                add(OptionItem("tcp.options.mss.present", W, P, (), o, ON_OPTION))
        want = OPT_LENGTH.get(kind)
        if want is not None and want != len(val) + 2:
            add(OptionItem("tcp.option.len.invalid", N, S, ("length", want), o, ON_LENGTH))
        if kind == 3:
            if len(val) == 1 and val[0] > 14:
                add(OptionItem("tcp.options.wscale.shift.invalid", W, P, (), o, ON_VALUE))
        elif kind == 5:
            if len(val) % 8:
                add(OptionItem("tcp.suboption_malformed", E, Group.MALFORMED, (), o, ON_VALUE))
            if sacks < len(out.marks) and out.marks[sacks] and len(val) >= 8:
                add(OptionItem("tcp.options.sack.dsack", W, S, (), o, ON_VALUE))
            sacks += 1
    if out.threw is not None:
        add(OptionItem("_ws.malformed.expert", E, Group.MALFORMED, (), walk[out.threw][2], AFTER_TCP))
    elif walk.stop is not None:
        why, o = walk.stop
        if why == OPT_PADDING:
            add(OptionItem("tcp.non_zero_bytes_after_eol", E, P, (), o, OWN_LINE))
        else:
            olen = opts[o + 1] if o + 1 < len(opts) else 0
            add(OptionItem("tcp.option.len.invalid", N, S, (why, opt_word(opts[o]), olen, "byte" if olen == 1 else "bytes"), o, OWN_LINE))
    elif syn and not mss:
        add(OptionItem("tcp.options.mss.absent", N, P, (), -1, ON_OPTIONS))
    return out


def _lt_seq(a: int, b: int) -> bool:
    return (a - b) & 0xFFFFFFFF >= 0x80000000


def _le_seq(a: int, b: int) -> bool:
    return a == b or _lt_seq(a, b)


def _state(pv):
    c = pv.conn_id
    states = pv.ctx.tcp_states
    if c in states:
        return states[c]
    st = None
    if c >= 0 and pv.connection is not None and pv.connection.transport == "tcp":
        from wirefall.analyzer.detail import _tcp_state

        st = _tcp_state(pv.ctx.an, pv.ctx.source, c)
    states[c] = st
    return st


def _rel(pv, raw: int, other: bool) -> int:
    st = _state(pv)
    d = pv.direction
    if st is None or d is None:
        return raw
    base = st.base[1 - d if other else d]
    return (raw - base) & 0xFFFFFFFF if base is not None else raw


def _seq(pv):
    t = _t(pv)
    return [_rel(pv, t[2], False)] if t is not None else []


def _ack(pv):
    t = _t(pv)
    if t is None:
        return []
    return [_rel(pv, t[3], True) if t[5] & 0x10 else t[3]]


def _nxtseq(pv):
    t = _t(pv)
    if t is None:
        return []
    return [_rel(pv, t[2], False) + t[9] + (1 if t[5] & 0x03 else 0)]


def _window(pv):
    """tshark's calculated window, as the Info column shows it: scaled by the shift this
    direction's SYN announced once the scale is known (TcpAnalysis.window: a SYN-ACK lost, a
    SYN arriving after its ACK leave a direction unscaled or scaled as tshark does)."""
    t = _t(pv)
    if t is None:
        return []
    d = pv.direction
    st = _state(pv)
    if d is not None and st is not None and st.syn_seen[0] and st.syn_seen[1]:
        # each direction began with its SYN (the usual handshake): the connection's scales, no
        # TCP analysis pass needed (the same value: tests/test_filter_parity24.py)
        from wirefall.analyzer.detail import _window as calc

        return [calc(st, d, t[5], t[6])]
    ta = _ta(pv)
    return [ta.window(pv.n, t[6]) if ta is not None else t[6]]


def _stream(pv):
    if pv.layers.tcp is None:
        return []
    s = pv.ctx.stream_number(pv.conn_id)
    return [s] if s is not None else []


def _flag(bit):
    def get(pv):
        t = pv.layers.tcp
        return [1 if t[5] & bit else 0] if t is not None else []
    return get


# how far past a packet a filter asking for ``tcp.analysis.*`` has the analysis run: a filter
# walks the packets in order, so in steps, not one packet at a time; near the capture's start
# the step is the packet's own number (at least AHEAD_MIN): the first screen's rows (the TUI's
# colouring rules on packets 1-30) ran it 4,096 packets for 30, ~0.05 s of a reopened 1 M-packet
# capture's first screen, where a walk from packet 1 doubles its reach (6 calls more to 4,096)
AHEAD = 0xFFF
AHEAD_MIN = 0x3F


def ahead(n: int) -> int:
    """How far past packet ``n`` the TCP analysis is run for it (see AHEAD)."""
    return n + min(AHEAD, max(AHEAD_MIN, n))


def _ta(pv):
    """The capture's TcpAnalysis, run at least as far as this packet (None: not TCP)."""
    if pv.layers.tcp is None:
        return None
    cache = pv.ctx.cache
    ta = cache.get("tcp_analysis")
    if ta is None or ta.packets < pv.n:
        from wirefall.analyzer.tcp_analysis import tcp_analysis

        ta = cache["tcp_analysis"] = tcp_analysis(pv.ctx.an, pv.ctx.source, upto=ahead(pv.n))
    return ta


def _walk(pv, key: str, step) -> dict | None:
    """Per-packet values from a walk over tshark's TCP conversations (the TCP analysis's
    ``conv``) in packet order, as far as the analysis has run (a filter walks the packets in
    order: it goes on where it stopped).  ``step(i, conv, state)`` gives packet ``i + 1``'s
    value; ``state`` is the conversation's own dict.  None: not a TCP packet."""
    ta = _ta(pv)
    if ta is None:
        return None
    cache = pv.ctx.cache
    w = cache.get(key)
    if w is None:
        w = cache[key] = [0, {}, {}]  # packets walked, conversation -> its state, packet -> value
    if w[0] < ta.packets:
        conv, states, out = ta.conv, w[1], w[2]
        for i in range(w[0], min(ta.packets, len(conv))):
            c = conv[i]
            if c >= 0:
                st = states.get(c)
                if st is None:
                    st = states[c] = {}
                out[i + 1] = step(pv, i, st)
        w[0] = ta.packets
    return w[2]


def _time_step(pv, i, st):
    """(tcp.time_relative, tcp.time_delta): seconds since the conversation's first packet and
    its previous one (tshark's tcp.calculate_timestamps, on by default)."""
    t = pv.ctx.idx.ts[i]
    first = st.setdefault("first", t)
    prev = st.get("prev", t)
    st["prev"] = t
    return (_us(t - first), _us(t - prev))


def _us(x: float) -> float:
    return round(x, 6)  # (as frame.time_delta: microseconds, as tshark computes in integers)


def _times(i: int):
    def get(pv):
        out = _walk(pv, "tcp_times", _time_step)
        v = out.get(pv.n) if out is not None else None
        return [v[i]] if v is not None else []
    return get


# tshark 4.0's conversation completeness bits
C_SYN, C_SYNACK, C_ACK, C_DATA, C_FIN, C_RST = 1, 2, 4, 8, 16, 32


def _completeness_step(pv, i, st):
    """tcp.completeness as tshark 4.0 shows it in one pass: the bits the conversation's packets
    before this one set — SYN (1), SYN-ACK (2), a segment with ACK and no payload nor SYN (4),
    payload (8), FIN (16), RST (32).  The conversation's first packet sets only a SYN's bit, and
    only the first packet's SYN sets it (a SYN reusing a closed conversation's ports shows it on itself already); tshark's rules,
    measured on captures cut by editcap (tests/test_filter_fields24.py)."""
    ctx = pv.ctx
    first = "bits" not in st
    before = st.get("bits", 0)
    tf = ctx.cache["tcp_analysis"].tcp_flags
    if i < len(tf) and tf[i] & 0x8000:  # the TCP analysis's header flags and payload bit: no decode (0.4 s of 2 s on 243 k packets)
        f = tf[i]
        t = (0, 0, 0, 0, 0, f & 0x1FF, 0, 0, 0, 1 if f & 0x2000 else 0)
    elif pv.n == i + 1:
        t = pv.layers.tcp
    else:
        idx = ctx.idx
        t = decode_layers(idx.linktype[i], ctx.source.read(idx.offset[i], idx.caplen[i])).tcp
    bits = before
    if t is not None:
        f = t[5]
        if first:
            if f & 0x12 == 0x02:
                bits = C_SYN
                if ctx.cache["tcp_analysis"].has(i + 1, "tcp.analysis.reused_ports"):
                    before = C_SYN
        else:
            if f & 0x12 == 0x12:
                bits |= C_SYNACK
            elif f & 0x02:
                pass  # (a SYN after the first packet sets nothing: swap-syn's late SYN)
            elif f & 0x10 and not t[9]:
                bits |= C_ACK
            if f & 0x04:
                bits |= C_RST
            if f & 0x01:
                bits |= C_FIN
            if t[9]:
                bits |= C_DATA
    st["bits"] = bits
    return before


def _completeness(pv):
    out = _walk(pv, "tcp_completeness", _completeness_step)
    v = out.get(pv.n) if out is not None else None
    return [v] if v is not None else []


def _scalefactor(pv):
    """tcp.window_size_scalefactor on a segment without SYN: 2**shift once this direction's scale
    is known, -2 once a SYN without the option showed that neither side scales, else -1."""
    t = pv.layers.tcp
    if t is None or t[5] & 0x02:
        return []
    ta = _ta(pv)
    if ta is None or not 0 < pv.n <= len(ta.wshift):
        return []
    s = ta.wshift[pv.n - 1]
    if s >= 0:
        return [1 << s]
    out = _walk(pv, "tcp_noscale", _noscale_step)
    return [-2 if out and out.get(pv.n) else -1]


def _noscale_step(pv, i, st):
    """Whether a SYN without a window-scale option (``wscale_option``: the one the flow layer
    applies) came before packet ``i + 1`` in its conversation."""
    before = st.get("seen", False)
    ctx = pv.ctx
    ta = ctx.cache["tcp_analysis"]
    if not before and ta.tcp_flags[i] & 0x02:
        idx = ctx.idx
        data = ctx.source.read(idx.offset[i], idx.caplen[i])
        L = decode_layers(idx.linktype[i], data)
        t = L.tcp
        if t is not None:
            st["seen"] = wscale_option(data[L.tcp_off + 20 : min(L.tcp_off + t[4], L.l4_end)]) is None
    return before


def _analysis_flag(name):
    def get(pv):
        ta = _ta(pv)
        return [True] if ta is not None and ta.has(pv.n, name) else []
    return get


def _dupack(i):
    def get(pv):
        ta = _ta(pv)
        hit = ta.dupack.get(pv.n) if ta is not None else None
        return [hit[i]] if hit is not None else []
    return get


def _initial_rtt(pv):
    ta = _ta(pv)
    r = ta.initial_rtt(pv.n) if ta is not None else None
    return [r] if r is not None else []


def _acked(i):
    """(tcp.analysis.acks_frame, tcp.analysis.ack_rtt)[i]: the RTT only when not zero, as tshark."""
    def get(pv):
        ta = _ta(pv)
        a = ta.acked(pv.n) if ta is not None else None
        return [a[i]] if a is not None and a[i] is not None else []
    return get


def _in_flight(i):
    """(tcp.analysis.bytes_in_flight, tcp.analysis.push_bytes_sent)[i]: both only when bytes are in flight."""
    def get(pv):
        ta = _ta(pv)
        b = ta.in_flight(pv.n) if ta is not None else None
        return [b[i]] if b is not None else []
    return get


def _rto(i):
    def get(pv):
        ta = _ta(pv)
        r = ta.rto.get(pv.n) if ta is not None else None
        return [r[i]] if r is not None else []
    return get


def _analysis_fields():
    from wirefall.analyzer.tcp_analysis import EXPERT, FIELDS, NAMES

    out = []
    for name in FIELDS:
        bit = next((b for b, n in NAMES.items() if n == name), None)
        desc = EXPERT[bit][1] if bit in EXPERT else (
            "any TCP analysis flag (the expert items)" if name == "tcp.analysis.flags" else name.rsplit(".", 1)[1].replace("_", " "))
        if name == "tcp.analysis.retransmission":
            desc += " (fast and spurious retransmissions too, as in tshark)"
        out.append(P(name, NONE, _analysis_flag(name), desc))
    out += [
        P("tcp.analysis.duplicate_ack_num", UINT, _dupack(0), "this duplicate ACK's number (#N)", size=4),
        P("tcp.analysis.duplicate_ack_frame", UINT, _dupack(1), "the frame this duplicate ACK duplicates", size=4),
        P("tcp.analysis.initial_rtt", FLOAT, _initial_rtt, "the conversation's initial RTT (SYN to the ACK of SYN/ACK), seconds",
          note="from the packet that measured it, on packets where tshark prints a SEQ/ACK analysis tree (a flag, an ACK of "
               "a listed segment, an ACK past the peer's highest contiguous next sequence number, a segment the bytes-in-flight "
               "count ran on), as tshark (tests/test_tcp_rtt30.py)"),
    ]
    out += [
        P("tcp.analysis.acks_frame", UINT, _acked(0), "the frame of the segment this ACK acknowledges (its ACK number is "
          "that segment's next sequence number; the oldest such segment not yet acknowledged)", size=4),
        P("tcp.analysis.ack_rtt", FLOAT, _acked(1), "the RTT to ACK the segment (seconds since the acks_frame segment; "
          "absent when 0, negative when the capture's times go back)"),
        P("tcp.analysis.bytes_in_flight", UINT, _in_flight(0), "bytes in flight after this data segment: its direction's "
          "unacknowledged sequence span less the bytes the peer's last segment SACKed (not after a segment not captured "
          "until the peer's next ACK)", size=4),
        P("tcp.analysis.push_bytes_sent", UINT, _in_flight(1), "bytes sent since the last PSH flag (on segments with "
          "bytes_in_flight)", size=4),
        P("tcp.analysis.rto", FLOAT, _rto(0), "on a retransmission (not a fast or spurious one): seconds since the oldest "
          "unacknowledged segment (else the highest one); absent when 0"),
        P("tcp.analysis.rto_frame", UINT, _rto(1), "the frame the RTO is measured from", size=4),
    ]
    out.append(P("tcp.analysis", NONE, lambda pv: [], "SEQ/ACK analysis tree",
                 unsupported="tcp.analysis (the SEQ/ACK analysis tree itself) is not a filter field in wirefall; "
                             "use tcp.analysis.flags or one of its flags"))
    return out


FLAGS = [("fin", 0x001, "FIN"), ("syn", 0x002, "SYN"), ("reset", 0x004, "RST"), ("push", 0x008, "PSH"), ("ack", 0x010, "ACK"),
         ("urg", 0x020, "URG"), ("ece", 0x040, "ECN-Echo"), ("cwr", 0x080, "CWR"), ("ae", 0x100, "Accurate ECN (was NS)")]

PROTOCOL = Protocol("tcp", "Transmission Control Protocol", P("tcp", PROTO, _bytes, "the TCP segment (header and payload)"), [
    P("tcp.port", UINT, lambda pv: [t[0], t[1]] if (t := _t(pv)) else [], "source or destination port", size=2),
    P("tcp.srcport", UINT, _f(0), "source port", size=2),
    P("tcp.dstport", UINT, _f(1), "destination port", size=2),
    P("tcp.stream", UINT, _stream, "TCP conversation number, from 0 in order of first packet",
      note="counted over wirefall's connections (a reused port after FIN/RST or a new ISN is a new one, as in tshark)", size=4),
    P("tcp.len", UINT, _f(9), "payload length", size=4),
    P("tcp.seq", UINT, _seq, "sequence number, relative to the connection's first", size=4),
    P("tcp.seq_raw", UINT, _f(2), "sequence number as sent", size=4),
    P("tcp.ack", UINT, _ack, "acknowledgment number, relative (the raw value when ACK is not set)", size=4),
    P("tcp.ack_raw", UINT, _f(3), "acknowledgment number as sent", size=4),
    P("tcp.nxtseq", UINT, _nxtseq, "next sequence number (relative)", size=4),
    P("tcp.hdr_len", UINT, _f(4), "header length in bytes", size=1),
    P("tcp.flags", UINT, _f(5), "flags (12 bits): tcp.flags & 0x02 is a SYN", size=2),
    *[P(f"tcp.flags.{n}", BOOL, _flag(b), f"{label} flag") for n, b, label in FLAGS],
    P("tcp.flags.res", BOOL, lambda pv: [1 if t[5] & 0xE00 else 0] if (t := _t(pv)) else [], "reserved bits"),
    P("tcp.window_size_value", UINT, _f(6), "window as sent", size=2),
    P("tcp.window_size", UINT, _window, "calculated window (scaled by the window scale its direction's SYN announced, as the "
      "Info column's Win=: unscaled until that scale is known)", size=4),
    P("tcp.checksum", UINT, _f(7), "checksum", size=2),
    P("tcp.urgent_pointer", UINT, _f(8), "urgent pointer", size=2),
    P("tcp.payload", BYTES, _payload, "payload bytes"),
    P("tcp.options.mss_val", UINT, _mss, "maximum segment size option's value (in a SYN)", size=2),
    P("tcp.options.wscale.shift", UINT, _option(3, 1, slice(0, 1)), "window scale option's shift count (in a SYN)", size=1),
    P("tcp.options.timestamp.tsval", UINT, _option(8, 8, slice(0, 4)), "timestamps option's TSval", size=4),
    P("tcp.options.timestamp.tsecr", UINT, _option(8, 8, slice(4, 8)), "timestamps option's TSecr", size=4),
    P("tcp.options.sack_perm", PROTO, _sack_perm, "SACK-permitted option (its 2 bytes: tcp.options.sack_perm == 04:02)"),
    P("tcp.options.sack_le", UINT, _sack("le"), "SACK block's left edge, relative (every block, D-SACK too)", size=4),
    P("tcp.options.sack_re", UINT, _sack("re"), "SACK block's right edge, relative (every block, D-SACK too)", size=4),
    P("tcp.options.sack.count", UINT, _sack("count"), "SACK blocks in a SACK option", size=1),
    P("tcp.options.sack.dsack_le", UINT, _dsack("le"), "D-SACK block's left edge, relative (RFC 2883: the first SACK block, "
      "at or below the ACK number or inside the second block)", size=4),
    P("tcp.options.sack.dsack_re", UINT, _dsack("re"), "D-SACK block's right edge, relative", size=4),
    P("tcp.window_size_scalefactor", INT, _scalefactor, "window scale factor on a segment without SYN: 2**shift "
      "(-1 scale unknown, -2 no window scaling used)"),
    P("tcp.time_relative", FLOAT, _times(0), "seconds since the first packet of this TCP conversation"),
    P("tcp.time_delta", FLOAT, _times(1), "seconds since the previous packet of this TCP conversation"),
    P("tcp.completeness", UINT, _completeness, "conversation completeness so far: 1 SYN, 2 SYN-ACK, 4 ACK, 8 data, 16 FIN, "
      "32 RST seen on the conversation's packets before this one (tshark 4.0, one pass)", size=1),
    *_analysis_fields(),
    *[P(n, t, lambda pv: [], d, unsupported=f"{n} is not a filter field in wirefall: tshark adds it where its own TCP reassembly "
        "(the desegmenting dissectors' PDU requests) puts PDU boundaries and segment lists, which wirefall's stream reassembly "
        "does not reproduce packet for packet") for n, t, d in (
        ("tcp.pdu.size", UINT, "size of a PDU in the segment"), ("tcp.segment", UINT, "a segment of a reassembled PDU"),
        ("tcp.segments", NONE, "the segments of a reassembled PDU"))],
])
