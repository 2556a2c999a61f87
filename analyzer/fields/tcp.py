"""``tcp``: TCP header, with tshark's relative sequence numbers, calculated window and
stream numbers, and tshark's ``tcp.analysis.*`` flags (``analyzer.tcp_analysis``: retransmissions,
duplicate ACKs, window problems; the pass runs as far as the packet asked for)."""
from __future__ import annotations

from ._util import packet_field as P
from .types import BOOL, BYTES, NONE, PROTO, UINT, Protocol


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
    t = _t(pv)
    if t is None:
        return []
    from wirefall.analyzer.detail import _window as calc

    d = pv.direction
    return [calc(_state(pv), d, t[5], t[6]) if d is not None else t[6]]


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


def _ta(pv):
    """The TCP analysis, run at least to this packet (in steps: a filter walks the packets in order)."""
    from wirefall.analyzer.tcp_analysis import tcp_analysis

    an = pv.ctx.an
    ta = an.__dict__.get("_wf_tcp_analysis")
    if ta is None or ta.packets < pv.n:
        ta = tcp_analysis(an, pv.ctx.source, pv.n + 0xFFF)
    return ta


def _analysis_flag(name):
    from wirefall.analyzer.tcp_analysis import FIELDS as TA_FIELDS

    mask = TA_FIELDS[name]

    def get(pv):
        fl = _ta(pv).flags
        n = pv.n
        return [True] if n <= len(fl) and fl[n - 1] & mask else []
    return get


def _dupack(i):
    def get(pv):
        d = _ta(pv).dupack.get(pv.n)
        return [d[i]] if d is not None else []
    return get


_ANALYSIS = ["retransmission", "fast_retransmission", "spurious_retransmission", "out_of_order", "lost_segment", "ack_lost_segment",
             "duplicate_ack", "zero_window", "zero_window_probe", "zero_window_probe_ack", "window_full", "keep_alive",
             "keep_alive_ack", "window_update", "reused_ports", "flags"]
_NOT_COMPUTED = "is not yet supported (it needs the timing of each unacknowledged segment: docs/TCP_ANALYSIS.md)"

FLAGS = [("fin", 0x001, "FIN"), ("syn", 0x002, "SYN"), ("reset", 0x004, "RST"), ("push", 0x008, "PSH"), ("ack", 0x010, "ACK"),
         ("urg", 0x020, "URG"), ("ece", 0x040, "ECN-Echo"), ("cwr", 0x080, "CWR"), ("ae", 0x100, "Accurate ECN (was NS)")]

PROTOCOL = Protocol("tcp", "Transmission Control Protocol", P("tcp", PROTO, _bytes, "the TCP segment (header and payload)"), [
    P("tcp.port", UINT, lambda pv: [t[0], t[1]] if (t := _t(pv)) else [], "source or destination port"),
    P("tcp.srcport", UINT, _f(0), "source port", size=2),
    P("tcp.dstport", UINT, _f(1), "destination port", size=2),
    P("tcp.stream", UINT, _stream, "TCP conversation number, from 0 in order of first packet",
      note="counted over wirefall's connections (a reused port after FIN/RST or a new ISN is a new one, as in tshark)"),
    P("tcp.len", UINT, _f(9), "payload length"),
    P("tcp.seq", UINT, _seq, "sequence number, relative to the connection's first"),
    P("tcp.seq_raw", UINT, _f(2), "sequence number as sent", size=4),
    P("tcp.ack", UINT, _ack, "acknowledgment number, relative (the raw value when ACK is not set)"),
    P("tcp.ack_raw", UINT, _f(3), "acknowledgment number as sent", size=4),
    P("tcp.nxtseq", UINT, _nxtseq, "next sequence number (relative)"),
    P("tcp.hdr_len", UINT, _f(4), "header length in bytes"),
    P("tcp.flags", UINT, _f(5), "flags (12 bits): tcp.flags & 0x02 is a SYN"),
    *[P(f"tcp.flags.{n}", BOOL, _flag(b), f"{label} flag") for n, b, label in FLAGS],
    P("tcp.flags.res", BOOL, lambda pv: [1 if t[5] & 0xE00 else 0] if (t := _t(pv)) else [], "reserved bits"),
    P("tcp.window_size_value", UINT, _f(6), "window as sent", size=2),
    P("tcp.window_size", UINT, _window, "calculated window (scaled by the SYNs' window scale)"),
    P("tcp.checksum", UINT, _f(7), "checksum", size=2),
    P("tcp.urgent_pointer", UINT, _f(8), "urgent pointer", size=2),
    P("tcp.payload", BYTES, _payload, "payload bytes"),
    *[P(f"tcp.analysis.{n}", NONE, _analysis_flag(f"tcp.analysis.{n}"), f"TCP analysis: {n.replace('_', ' ')} (as tshark flags it)")
      for n in _ANALYSIS],
    P("tcp.analysis.duplicate_ack_num", UINT, _dupack(0), "TCP analysis: number of this duplicate ACK"),
    P("tcp.analysis.duplicate_ack_frame", UINT, _dupack(1), "TCP analysis: the frame this ACK duplicates"),
], unsupported_prefixes={f"tcp.analysis.{n}": f"tcp.analysis.{n} {_NOT_COMPUTED}"
                         for n in ("acks_frame", "ack_rtt", "initial_rtt", "bytes_in_flight", "push_bytes_sent", "rto", "rto_frame")})
