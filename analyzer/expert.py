"""Expert information, as Wireshark's: every note and warning of an analysis as one typed item.

``compute(analysis, source=None) -> list[ExpertItem]`` (memoised on the analysis) gathers:

- TCP, as tshark 4.0 makes them (``origin == WIRESHARK``): the ``tcp.analysis.*`` flags of
  ``analyzer.tcp_analysis`` (retransmissions, duplicate ACKs with their number, window
  problems, keep-alives…), the connection items of the TCP header (``tcp.connection.syn``,
  ``.synack``, ``.fin``, ``.fin_active``/``.fin_passive`` — who closed first, per tshark
  conversation —, ``.rst``) and the TCP options' items as the packet detail tree hangs them
  (``analyzer.fields.tcp.option_items``: D-SACK blocks ``tcp.options.sack.dsack``, a length wrong
  or running past the options ``tcp.option.len.invalid``, ``tcp.non_zero_bytes_after_eol``,
  ``tcp.options.mss.absent``/``.present``, ``tcp.nop``, ``tcp.options.wscale.shift.invalid``,
  ``tcp.suboption_malformed``, and the ``_ws.malformed.expert`` of a SACK option tshark throws on);
- HTTP/1.x request and response lines (``http.chat``: Chat/Sequence, on the packet where tshark
  shows the message: the request's, or the response body's last packet);
- wirefall's own facts (``origin == WIREFALL``, no tshark counterpart): where the TCP analysis
  stops knowing its fields (``wirefall.tcp.list_unknown``: a direction's unacknowledged-segment
  list given up past its walk budget; ``wirefall.tcp.analysis_unknown``: a SYN or FIN whose
  count in the sequence space is not known, the conversation's later flags left out), malformed frames
  (``Frame.error``), RST_STREAM / GOAWAY / RESET_STREAM / STOP_SENDING / CONNECTION_CLOSE with an
  error code, HTTP responses 4xx/5xx (Response code) on every protocol, each connection note
  (``Connection.notes``: gaps, decryption, budgets, resynchronisation…, with the packet the note
  names), the capture's warnings, undecoded packets, and the completeness facts that no note
  already states (connection joined mid-way, requests with unknown fields, not decrypted).

Items are data: a severity and a group (Wireshark's ``PI_*`` values), the protocol, the
Wireshark-style expert field name (``kind``), its arguments, the packet and connection.  The
text (``summary``) is made only when an item is displayed.  tshark compares: ``-T fields -e
_ws.expert.message -e _ws.expert.severity -e _ws.expert.group`` (tests/test_expert.py).

The TCP items need a pass over the TCP headers (``tcp_analysis`` re-reads them; the SYN ports,
FIN order and SACK options are read in a second pass of the same kind): about 1 s per 200 k
packets; the result holds one small object per item (at most a few per packet).
"""
from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from functools import partial
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any

from wirefall.dissectors.registry import find

from .model import Analysis, Frame, NoteKind, note_kind
from .packet import OPT_NO_LENGTH, OPT_PAST_END, OPT_TOO_SHORT

# ------------------------------------------------------------------ types


class Severity(IntEnum):
    """Wireshark's PI_* severities (``_ws.expert.severity`` values)."""

    COMMENT = 0x00100000
    CHAT = 0x00200000
    NOTE = 0x00400000
    WARN = 0x00600000
    ERROR = 0x00800000

    @property
    def label(self) -> str:  # as tshark prints it (_ws.expert.severity's value string)
        return _SEV_LABEL[self]


_SEV_LABEL = {Severity.COMMENT: "Comment", Severity.CHAT: "Chat", Severity.NOTE: "Note", Severity.WARN: "Warning",
              Severity.ERROR: "Error"}
# -z expert's section titles
SECTION = {Severity.ERROR: "Errors", Severity.WARN: "Warns", Severity.NOTE: "Notes", Severity.CHAT: "Chats",
           Severity.COMMENT: "Comments"}


class Group(IntEnum):
    """Wireshark's PI_* groups (``_ws.expert.group`` values)."""

    CHECKSUM = 0x01000000
    SEQUENCE = 0x02000000
    RESPONSE_CODE = 0x03000000
    REQUEST_CODE = 0x04000000
    UNDECODED = 0x05000000
    REASSEMBLE = 0x06000000
    MALFORMED = 0x07000000
    DEBUG = 0x08000000
    PROTOCOL = 0x09000000
    SECURITY = 0x0A000000
    COMMENTS = 0x0B000000
    DECRYPTION = 0x0C000000
    ASSUMPTION = 0x0D000000
    DEPRECATED = 0x0E000000

    @property
    def label(self) -> str:  # as tshark prints it (_ws.expert.group's value string)
        return _GROUP_LABEL[self]


_GROUP_LABEL = {Group.CHECKSUM: "Checksum", Group.SEQUENCE: "Sequence", Group.RESPONSE_CODE: "Response",
                Group.REQUEST_CODE: "Request", Group.UNDECODED: "Undecoded", Group.REASSEMBLE: "Reassemble",
                Group.MALFORMED: "Malformed", Group.DEBUG: "Debug", Group.PROTOCOL: "Protocol", Group.SECURITY: "Security",
                Group.COMMENTS: "Comment", Group.DECRYPTION: "Decryption", Group.ASSUMPTION: "Assumption",
                Group.DEPRECATED: "Deprecated"}


class Origin(StrEnum):
    WIRESHARK = "wireshark"  # an item tshark makes too (same packet, severity, group and text)
    WIREFALL = "wirefall"  # wirefall's own fact


@dataclass(slots=True, frozen=True)
class ExpertItem:
    severity: Severity
    group: Group
    protocol: str  # as Wireshark names the protocol column: TCP, HTTP, HTTP2, QUIC, TLS…
    kind: str  # the expert field (tcp.analysis.retransmission, http.chat, wirefall.note…)
    args: tuple = ()  # what the summary is made from (see MESSAGES)
    packet: int | None = None  # None: the capture (or a connection) as a whole
    connection: int | None = None
    origin: Origin = Origin.WIREFALL

    @property
    def summary(self) -> str:
        return message(self.kind, self.args)


def message(kind: str, args: tuple = ()) -> str:
    """The words of expert item ``kind`` with ``args`` (``MESSAGES``; a kind tshark words more
    than one way, by its first argument)."""
    fmt = MESSAGES.get(kind)
    if fmt is None:
        return str(args[0]) if args else kind
    if isinstance(fmt, dict):
        fmt = fmt[args[0]]
    return fmt.format(*args)


# expert field -> summary template (the fixed texts are tshark's), or {first argument: template}
MESSAGES: dict[str, str | dict[str, str]] = {
    "tcp.analysis.retransmission": "This frame is a (suspected) retransmission",
    "quic.retransmission": "This QUIC frame has a reused stream offset (retransmission?)",
    "tcp.analysis.fast_retransmission": "This frame is a (suspected) fast retransmission",
    "tcp.analysis.spurious_retransmission": "This frame is a (suspected) spurious retransmission",
    "tcp.analysis.out_of_order": "This frame is a (suspected) out-of-order segment",
    "tcp.analysis.reused_ports": "A new tcp session is started with the same ports as an earlier session in this trace",
    "tcp.analysis.lost_segment": "Previous segment(s) not captured (common at capture start)",
    "tcp.analysis.ack_lost_segment": "ACKed segment that wasn't captured (common at capture start)",
    "tcp.analysis.window_update": "TCP window update",
    "tcp.analysis.window_full": "TCP window specified by the receiver is now completely full",
    "tcp.analysis.keep_alive": "TCP keep-alive segment",
    "tcp.analysis.keep_alive_ack": "ACK to a TCP keep-alive segment",
    "tcp.analysis.duplicate_ack": "Duplicate ACK (#{0})",
    "tcp.analysis.zero_window_probe": "TCP Zero Window Probe",
    "tcp.analysis.zero_window": "TCP Zero Window segment",
    "tcp.analysis.zero_window_probe_ack": "ACK to a TCP Zero Window Probe",
    "tcp.connection.syn": "Connection establish request (SYN): server port {0}",
    "tcp.connection.synack": "Connection establish acknowledge (SYN+ACK): server port {0}",
    "tcp.connection.fin": "Connection finish (FIN)",
    "tcp.connection.fin_active": "This frame initiates the connection closing",
    "tcp.connection.fin_passive": "This frame undergoes the connection closing",
    "tcp.connection.rst": "Connection reset (RST)",
    "tcp.options.sack.dsack": "D-SACK Sequence",
    # the TCP options' (analyzer.fields.tcp.option_items; packet-tcp.c's words)
    "tcp.nop": "4 NOP in a row - a router may have removed some options",
    "tcp.options.mss.present": "The non-SYN packet does contain a MSS option",
    "tcp.options.mss.absent": "The SYN packet does not contain a MSS option",
    "tcp.options.wscale.shift.invalid": "Window scale shift exceeds 14",
    "tcp.suboption_malformed": "suboption would go past end of option",
    "tcp.non_zero_bytes_after_eol": "Non-zero header padding",
    "tcp.option.len.invalid": {  # (args: how, then the option's words, its length byte and "byte"/"bytes")
        "length": "option length should be {1}",
        OPT_NO_LENGTH: "{1} (length byte past end of options)",
        OPT_TOO_SHORT: "{1} (with too-short option length = {2} {3})",
        OPT_PAST_END: "{1} (option length = {2} {3} says option goes past end of options)",
    },
    "_ws.malformed.expert": "Malformed Packet (Exception occurred)",
    "http.chat": "{0}\\r\\n",  # the request or status line, as tshark shows it (with a literal \r\n)
    "wirefall.malformed": "{0} {1}: {2}",
    "wirefall.stream_error": "{0} {1}: {2}",
    "wirefall.response_code": "{0} response {1}: {2}",
    "wirefall.undecoded": "{0} packets not decoded: {1}",
    "wirefall.tcp.list_unknown": "TCP analysis (wirefall): the unacknowledged segments from port {0} to port {1} are no longer "
                                 "followed from this frame (walk budget ran out): their ACK RTT, bytes in flight and RTO unknown",
    "wirefall.tcp.analysis_unknown": "TCP analysis (wirefall): whether this {0} from port {1} counts in its sequence space is "
                                     "unknown (tshark's 10,000-segment list no longer followed): no analysis flags after it",
}

# ------------------------------------------------------------------ TCP (tshark's items)

_TCP_FLAG_ITEMS: list[tuple[int, str, Severity]] = []  # filled below from analyzer.tcp_analysis


def _tcp_tables():
    from . import tcp_analysis as ta

    sev = {"Chat": Severity.CHAT, "Note": Severity.NOTE, "Warning": Severity.WARN}
    if not _TCP_FLAG_ITEMS:
        for bit in ta.TREE_ORDER:
            if bit == ta.F_DUPLICATE_ACK:
                _TCP_FLAG_ITEMS.append((bit, "tcp.analysis.duplicate_ack", Severity.NOTE))
            else:
                _TCP_FLAG_ITEMS.append((bit, ta.NAMES[bit], sev[ta.EXPERT[bit][0]]))
    return ta


_FIN, _SYN, _RST, _ACK = 0x01, 0x02, 0x04, 0x10
_CHUNK = 1 << 20
_HALF = 0x80000000
M32 = 0xFFFFFFFF


def _sack_terms(ta, n: int, ack: int, has_ack: int):
    """The D-SACK test's terms on packet ``n`` (``analyzer.fields.tcp.sack_marks``): the
    blocks relative to the other side's base, the ACK too when the flag is set; tshark tests a
    segment without ACK too (an RST carrying SACK blocks), against its ACK field as it is
    (tests/test_tcp_diff29.py)."""
    rb = ta.relative(n, 0, 0)[1] or 0  # (minus that base; tshark's is 0 when it knows none)

    def rel(x: int) -> int:
        return (x + rb) & M32

    return (rel(ack) if has_ack else ack), rel


def _tcp_items(an: Analysis, source) -> list[ExpertItem]:
    from .fields.packet import decode_layers
    from .fields.tcp import option_items, plain_options

    ta_mod = _tcp_tables()
    ta = ta_mod.tcp_analysis(an, source)
    idx = an.index
    conn_of, offs, caplens, lts = idx.conn, idx.offset, idx.caplen, idx.linktype
    tf, flags, conv, fwd, dupack = ta.tcp_flags, ta.flags, ta.conv, ta.fwd, ta.dupack
    # wirefall's own: where the analysis stops knowing (TcpAnalysis.list_unknown, seq_unknown),
    # packet -> [(conversation, direction whose list is given up)] / the SYN or FIN in doubt
    gone: dict[int, list[tuple[int, int]]] = {}
    for cd, p in sorted(ta.list_unknown.items()):
        gone.setdefault(p, []).append(cd)
    doubt = set(ta.seq_unknown.values())
    out: list[ExpertItem] = []
    add = out.append
    initiator: set[tuple[int, int]] = set()  # (tshark conversation, direction) that sent a FIN first
    buf, buf_at = b"", 0
    read = source.read
    W, T = Origin.WIRESHARK, "TCP"
    SEQ = Group.SEQUENCE
    for i in range(min(len(tf), len(idx))):
        t = tf[i]
        if not t:
            continue
        n = i + 1
        c = conn_of[i]
        cid = c if c >= 0 else None
        off, ln = offs[i], caplens[i]
        j = off - buf_at
        if j < 0 or j + ln > len(buf):
            buf = read(off, max(_CHUNK, ln))
            buf_at, j = off, 0
        L = decode_layers(lts[i], buf[j : j + ln])
        h = L.tcp
        if t & _SYN:
            if h is not None:
                if t & _ACK:
                    add(ExpertItem(Severity.CHAT, SEQ, T, "tcp.connection.synack", (h[0],), n, cid, W))
                else:
                    add(ExpertItem(Severity.CHAT, SEQ, T, "tcp.connection.syn", (h[1],), n, cid, W))
        if t & _FIN:
            add(ExpertItem(Severity.CHAT, SEQ, T, "tcp.connection.fin", (), n, cid, W))
            cv, d = conv[i], fwd[i]
            if (cv, 1 - d) in initiator:
                add(ExpertItem(Severity.NOTE, SEQ, T, "tcp.connection.fin_passive", (), n, cid, W))
            else:
                initiator.add((cv, d))
                add(ExpertItem(Severity.NOTE, SEQ, T, "tcp.connection.fin_active", (), n, cid, W))
        if t & _RST:
            add(ExpertItem(Severity.WARN, SEQ, T, "tcp.connection.rst", (), n, cid, W))
        if h is not None and h[4] > 20:
            # the options' items (option_items: the tree's too), but for the common layouts
            # that raise none, told without a walk (plain_options)
            opts = buf[j + L.tcp_off + 20 : j + min(L.tcp_off + h[4], ln)]
            if opts and not plain_options(opts, t & _SYN):
                for it in option_items(opts, bool(t & _SYN), partial(_sack_terms, ta, n, h[3], t & _ACK)):
                    add(ExpertItem(it.severity, it.group, T, it.abbrev, it.args, n, cid, W))
        f = flags[i]
        if f:
            for bit, kind, sev in _TCP_FLAG_ITEMS:
                if not f & bit:
                    continue
                if kind == "tcp.analysis.duplicate_ack":
                    num = dupack.get(n, (0, 0))[0]
                    add(ExpertItem(sev, SEQ, T, kind, (num,), n, cid, W))
                    continue
                add(ExpertItem(sev, SEQ, T, kind, (), n, cid, W))
                if bit in (ta_mod.F_FAST_RETRANSMISSION, ta_mod.F_SPURIOUS_RETRANSMISSION):
                    add(ExpertItem(Severity.NOTE, SEQ, T, "tcp.analysis.retransmission", (), n, cid, W))
        if n in gone or n in doubt:
            sp, dp = (h[0], h[1]) if h is not None else ("?", "?")  # (a datagram reassembled from fragments)
            for _c, d in gone.get(n, ()):
                add(ExpertItem(Severity.WARN, SEQ, T, "wirefall.tcp.list_unknown", (sp, dp) if d == fwd[i] else (dp, sp), n, cid))
            if n in doubt:
                add(ExpertItem(Severity.WARN, SEQ, T, "wirefall.tcp.analysis_unknown", ("SYN" if t & _SYN else "FIN", sp), n, cid))
    return out


# ------------------------------------------------------------------ protocols (frames, exchanges)

def _proto_name(p: str | None) -> str:
    """Wireshark's protocol name of a ``Frame.protocol`` value (the registry's ``display``)."""
    if not p:
        return "?"
    d = find(p)
    return d.display if d is not None else p.upper()


# error codes that say nothing went wrong (a clean close) — Chat; CANCEL (a browser giving up a
# request it no longer needs) — Note; any other code — Warning
_CLEAN = {"NO_ERROR", "OK", "H3_NO_ERROR", "0x0", "0x100"}
_CANCEL = {"CANCEL", "H3_REQUEST_CANCELLED", "REFUSED_STREAM", "H3_REQUEST_REJECTED"}
_STREAM_ERRORS = ("RST_STREAM", "GOAWAY", "RESET_STREAM", "STOP_SENDING", "CONNECTION_CLOSE")


MAX_RANGES = 4096  # disjoint ranges kept per CRYPTO stream (a hostile stream of gaps: past it none is added)


def _seen_then_add(ranges: list[tuple[int, int]], a: int, b: int) -> bool:
    """Whether offset ``a`` lies in one of ``ranges`` (sorted, disjoint, not touching [start,
    end) pairs), then [a, b) merged into them: a bisection and the neighbours it overlaps,
    not a sort of the whole list per frame."""
    from bisect import bisect_right

    i = bisect_right(ranges, (a, float("inf")))  # ranges[:i] start at or before a
    hit = i > 0 and ranges[i - 1][1] > a
    if b <= a or len(ranges) >= MAX_RANGES:
        return hit
    lo = i - 1 if i > 0 and ranges[i - 1][1] >= a else i
    hi = i
    while hi < len(ranges) and ranges[hi][0] <= b:
        hi += 1
    if lo < hi:
        a, b = min(a, ranges[lo][0]), max(b, ranges[hi - 1][1])
    ranges[lo:hi] = [(a, b)]
    return hit


def _frame_items(an: Analysis, noted: set[tuple[int | None, int | None, Any]]) -> list[ExpertItem]:
    """``noted``: (connection, packet, text) of the connection notes, which a frame's error
    often repeats (a QUIC packet not decrypted is both): those are not listed twice."""
    out: list[ExpertItem] = []
    add = out.append
    bodies: dict[tuple[int, int], Frame] = {}  # HTTP/1 (exchange, direction) -> its message body
    for fr in an.frames:
        if fr.type == "BODY" and fr.protocol.startswith("http/1") and fr.fields:
            ex = fr.fields.get("exchange")
            if ex is not None:
                bodies[(ex, fr.direction)] = fr
    reach: dict[tuple, list] = {}  # (connection, direction, CRYPTO epoch) -> [start, end) ranges seen (_seen_then_add)
    for fr in an.frames:
        proto = _proto_name(fr.protocol)
        fl = fr.fields or {}
        if fr.protocol == "quic" and fr.type == "CRYPTO" and fr.offset >= 0:
            # tshark's quic.retransmission: a CRYPTO frame whose offset its epoch's stream already
            # carried (not one merely out of order: Chromium sends its ClientHello's CRYPTO frames
            # shuffled). tshark 4.0 marks CRYPTO frames only: amazon's client resends STREAM data
            # (packet 520, offset 7228, as packet 497) and tshark says nothing of it
            got = reach.setdefault((fr.connection, fr.direction, fl.get("packet_type")), [])
            if _seen_then_add(got, fr.offset, fr.offset + max(fr.length, 0)):
                add(ExpertItem(Severity.NOTE, Group.SEQUENCE, "QUIC", "quic.retransmission", (), fr.packet, fr.connection,
                               Origin.WIRESHARK))
            continue
        if fr.error and (fr.connection, fr.packet, fr.error) not in noted:
            sev, grp = classify(fr.error)
            if grp == Group.PROTOCOL:  # nothing more specific: a frame that does not parse
                sev, grp = Severity.ERROR, Group.MALFORMED
            add(ExpertItem(sev, grp, proto, "wirefall.malformed", (proto, fr.type, fr.error), fr.packet, fr.connection))
        if fr.protocol.startswith("http/1"):
            # tshark shows a message (and its chat item) where its body ends
            st = fl.get("status")
            if fr.type == "REQUEST" and fl.get("method"):
                line = f"{fl.get('method')} {fl.get('target', '')} {fl.get('version', '')}"
            elif fr.type == "RESPONSE" and st is not None:
                line = f"{fl.get('version', '')} {st} {fl.get('reason', '')}"
            else:
                continue
            body = None if isinstance(st, int) and st < 200 else bodies.get((fl.get("exchange", -1), fr.direction))
            pkt = body.packet if body is not None and body.packet >= fr.packet else fr.packet
            add(ExpertItem(Severity.CHAT, Group.SEQUENCE, "HTTP", "http.chat", (line,), pkt, fr.connection, Origin.WIRESHARK))
            continue
        if fr.type in _STREAM_ERRORS:
            name = fl.get("error", fl.get("status_name", fl.get("error_code")))
            if name is None:
                continue
            if isinstance(name, int):
                name = f"0x{name:x}"
            sev = Severity.CHAT if name in _CLEAN else Severity.NOTE if name in _CANCEL else Severity.WARN
            what = fr.type if fr.stream_id is None else f"{fr.type} stream {fr.stream_id}"
            text = str(name) if not fl.get("reason") else f"{name} ({fl.get('reason')})"
            add(ExpertItem(sev, Group.SEQUENCE if sev == Severity.CHAT else Group.PROTOCOL, proto, "wirefall.stream_error",
                           (proto, what, text), fr.packet, fr.connection))
    for e in an.exchanges:
        st = e.status
        if st is None or st < 400:
            continue
        at = e.response_headers_end_packet or e.response_start_packet
        proto = _proto_name(e.protocol)
        add(ExpertItem(Severity.WARN if st >= 500 else Severity.NOTE, Group.RESPONSE_CODE, proto, "wirefall.response_code",
                       (proto, st, e.url or e.path or "?"), at, e.connection))
    return out


# ------------------------------------------------------------------ notes, warnings, completeness

_PACKET = re.compile(r"packet (\d+): ")
# (pattern, severity, group), first match wins: what kind of fact a connection note or capture
# warning states (they are written in words by the sessions; docs/EXPERT.md lists them)
NOTE_RULES: list[tuple[re.Pattern, Severity, Group]] = [(re.compile(p, re.I), s, g) for p, s, g in [
    (r"internal error|decoding error", Severity.ERROR, Group.MALFORMED),
    (r"truncated|corrupt|cut off|damaged|malformed", Severity.ERROR, Group.MALFORMED),
    (r"budget .* ran out|limit|not kept|stopped", Severity.WARN, Group.UNDECODED),
    (r"bytes missing|lost by the capture|missing from the capture|records lost|fragments? missing", Severity.WARN, Group.SEQUENCE),
    (r"did not decrypt|decryption|not decrypted|no key|key log|secret", Severity.WARN, Group.DECRYPTION),
    (r"upgraded|switched to|tunnel established", Severity.CHAT, Group.SEQUENCE),
    (r"skipped|resynchronised|resync", Severity.WARN, Group.REASSEMBLE),
    (r"already under way|swapped|inferred|assumed|recognised|mid-way|midway|not in the capture|ends inside", Severity.NOTE, Group.ASSUMPTION),
    (r"overruns|window|PROTOCOL_VIOLATION|reuses|after it completed|may not carry", Severity.WARN, Group.PROTOCOL),
]]


# the typed notes whose kind says what they are (``Note.kind``; the others are matched by words)
KIND_RULES: dict[NoteKind, tuple[Severity, Group]] = {
    NoteKind.PROTOCOL_SWITCH: (Severity.CHAT, Group.SEQUENCE),
    NoteKind.FLOW_CONTROL: (Severity.WARN, Group.PROTOCOL),
    NoteKind.STREAM_UNSEEN: (Severity.NOTE, Group.ASSUMPTION),
    NoteKind.ENDS_IN_FRAME: (Severity.NOTE, Group.ASSUMPTION),
    NoteKind.STREAM_MISUSE: (Severity.WARN, Group.PROTOCOL),
    NoteKind.QUIC_RETRY: (Severity.CHAT, Group.SEQUENCE),  # a step of the handshake, as tshark's SYN is
}


def classify(text: str) -> tuple[Severity, Group]:
    """The severity and group of a note or warning written in words (``NOTE_RULES``)."""
    for rx, sev, grp in NOTE_RULES:
        if rx.search(text):
            return sev, grp
    return Severity.WARN, Group.PROTOCOL


def _note_protocol(text: str, conn_proto: str | None) -> str:
    t = text.lstrip()
    for word, name in (("TLS", "TLS"), ("QUIC", "QUIC"), ("HTTP/3", "HTTP3"), ("HTTP/2", "HTTP2"), ("SPDY", "SPDY"),
                       ("DNS", "DNS"), ("HTTP/1", "HTTP"), ("body", "HTTP")):
        if word in t:
            return name
    if "bytes missing" in t:
        return "TCP"
    return _proto_name(conn_proto)


def _note_items(an: Analysis) -> list[ExpertItem]:
    out: list[ExpertItem] = []
    for c in an.connections:
        for text in c.notes:
            m = _PACKET.match(text)
            pkt = int(m.group(1)) if m else None
            body = text[m.end():] if m else text
            sev, grp = KIND_RULES.get(note_kind(text)) or classify(body)
            out.append(ExpertItem(sev, grp, _note_protocol(body, c.protocol), "wirefall.note", (body,),
                                  pkt if pkt and 0 < pkt <= an.packets else None, c.id))
    for w in an.warnings:
        m = re.search(r"packet (\d+)", w)
        pkt = int(m.group(1)) if m else None
        sev, grp = classify(w)
        out.append(ExpertItem(sev, grp, "wirefall", "wirefall.warning", (w,), pkt if pkt and 0 < pkt <= an.packets else None))
    for reason, k in sorted(an.undecoded.items()):
        out.append(ExpertItem(Severity.NOTE, Group.UNDECODED, "wirefall", "wirefall.undecoded", (k, reason)))
    from . import completeness

    comp = completeness.compute(an)
    conns = {c.id: c for c in an.connections}
    for iss in comp.issues:
        if iss.kind in ("bytes_lost", "budget", "capture_damaged") or iss.kind.startswith("keylog_"):
            continue  # a connection note or capture warning above says each of these already (a key log's: its warning)
        sev, grp = {"joined_midway": (Severity.NOTE, Group.ASSUMPTION), "unknown_fields": (Severity.NOTE, Group.UNDECODED),
                    "not_decrypted": (Severity.WARN, Group.DECRYPTION), "no_packets": (Severity.NOTE, Group.ASSUMPTION)
                    }.get(iss.kind, (Severity.NOTE, Group.ASSUMPTION))
        conn = conns.get(iss.connection) if iss.connection is not None else None
        first = (conn.first_packet or None) if conn is not None else None
        out.append(ExpertItem(sev, grp, _proto_name(conn.protocol) if conn is not None else "wirefall",
                              "wirefall.completeness." + iss.kind, (iss.detail,), first, iss.connection))
    return out


# ------------------------------------------------------------------ the list

_LOCK = threading.Lock()


def compute(an: Analysis, source=None) -> list[ExpertItem]:
    """Every expert item of ``an``, in packet order (items of no packet first), computed once
    (kept in ``an.__dict__['_wf_expert']``, which the analysis cache does not store)."""
    with _LOCK:
        hit = an.__dict__.get("_wf_expert")
        if hit is not None and hit[0] == (an.packets, len(an.frames), len(an.warnings)):
            return hit[1]
    items: list[ExpertItem] = []
    if an.packets and an.path:
        own = source is None
        if own:
            from .capture import PacketSource

            source = PacketSource(an.path)
        try:
            items += _tcp_items(an, source)
        finally:
            if own:
                source.close()
    notes = _note_items(an)
    items += _frame_items(an, {(it.connection, it.packet, it.args[0]) for it in notes if it.kind == "wirefall.note"})
    items += notes
    items.sort(key=lambda it: it.packet or 0)  # stable: a packet's items stay in the order they were made
    with _LOCK:
        an.__dict__["_wf_expert"] = ((an.packets, len(an.frames), len(an.warnings)), items)
    return items


def filtered(an: Analysis, items: list[ExpertItem], packets: Iterable[int] | None) -> list[ExpertItem]:
    """The items on ``packets`` (a display filter's result); None: all of them."""
    if packets is None:
        return items
    keep = set(packets)
    return [it for it in items if it.packet is not None and it.packet in keep]


def counts(items: list[ExpertItem]) -> dict[Severity, int]:
    out = {s: 0 for s in sorted(Severity, reverse=True)}
    for it in items:
        out[it.severity] += 1
    return out


def grouped(items: list[ExpertItem]) -> list[tuple[Severity, list[tuple[int, Group, str, str]]]]:
    """tshark's ``-z expert`` table: per severity (Errors first), one row per (group,
    protocol, summary) with its frequency, in order of first appearance."""
    out = []
    for sev in sorted(Severity, reverse=True):
        rows: dict[tuple[Group, str, str], int] = {}
        for it in items:
            if it.severity == sev:
                k = (it.group, it.protocol, it.summary)
                rows[k] = rows.get(k, 0) + 1
        if rows:
            out.append((sev, [(n, g, p, s) for (g, p, s), n in rows.items()]))
    return out


def item_dict(it: ExpertItem) -> dict:
    """One item as ``wirefall expert --json`` writes it (docs/JSON.md "expert")."""
    return {"packet": it.packet, "connection": it.connection, "severity": it.severity.label.lower(),
            "group": it.group.label, "protocol": it.protocol, "summary": it.summary, "kind": it.kind,
            "origin": it.origin.value}


def to_dict(items: list[ExpertItem]) -> dict:
    return {"counts": {s.label.lower(): n for s, n in counts(items).items()},
            "items": [item_dict(it) for it in items]}


def render_text(items: list[ExpertItem]) -> str:
    """The text of ``wirefall expert``: tshark's ``-z expert`` sections, then the items."""
    from .safetext import printable

    lines: list[str] = []
    for sev, rows in grouped(items):
        lines += ["", f"{SECTION[sev]} ({sum(r[0] for r in rows)})", "=" * 13,
                  f"{'Frequency':>12}{'Group':>11}{'Protocol':>19}  Summary"]
        for n, g, p, s in rows:
            lines.append(f"{n:>12}{g.label:>11}{printable(p):>19}  {printable(s)}")
    lines += ["", f"{'packet':>7}  {'conn':>4}  {'severity':<7}  {'group':<10}  {'protocol':<8}  summary"]
    for it in items:
        lines.append(f"{'' if it.packet is None else it.packet:>7}  {'' if it.connection is None else it.connection:>4}  "
                     f"{it.severity.label:<7}  {it.group.label:<10}  {printable(it.protocol):<8}  {printable(it.summary)}")
    return "\n".join(lines)
