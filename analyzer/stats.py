"""Statistics of a capture, per protocol and per connection, from the timeline model.

``compute(analysis) -> Stats``; ``to_dict(stats)`` is the ``wirefall stats --json`` form;
``render_text(stats)`` the tables ``wirefall stats`` prints.

Every pair ``[c2s, s2c]`` is client→server, server→client.  Header bytes: ``wire`` is what
the header block took on the wire (compressed: HPACK, QPACK, SPDY zlib; for HTTP/1 the
header section as sent), ``decoded`` the header list as text (name + value per header as the
dissector counts it); ``reduction`` = 1 − wire/decoded.  ``first``/``rest`` split the first
header block of each connection (per direction) from the later ones: the compression
dictionary (zlib for SPDY, the HPACK/QPACK dynamic table) only pays off after the first.
For HTTP/3, ``wire`` also counts the QPACK encoder stream: the dynamic-table insertions a
header block depends on travel there, not in its HEADERS frame (each request or response is
charged with the insertions below its Required Insert Count that no earlier block was:
``Exchange.request_qpack_encoder_bytes``); ``qpack_encoder_bytes`` says how much of ``wire``
that is.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wirefall.dissectors.dataclass_repr import FACTORY, dataclass_eq, dataclass_repr
from wirefall.dissectors.http1 import start_line_size
from wirefall.dissectors.quic_varint import quic_varint
from wirefall.dissectors.registry import REGISTRY, over_quic
from wirefall.dissectors.tls_suites import overhead_bound

from .jsonout import time_span, unknown_fields
from .model import PROTO_NAMES, Analysis, Connection, Exchange, no_network_connections
from .safetext import plural
from .waterfall import _exchange_end, _exchange_start

STATS_VERSION = 1
# framing overhead per frame of the HTTP framing layers whose frames do not say it themselves
# (HTTP/3's carry ``header_bytes``): the registry's ``frame_header`` of each protocol that
# carries header blocks (HTTP/2 9, SPDY 8; TLS record headers are the TLS overhead)
# the header pairs of a Block, by their JSON names
HDR_KEYS = ("request", "response", "request_first", "request_rest", "response_first", "response_rest")
HDR_ATTRS = dict(zip(HDR_KEYS, ("req_headers", "resp_headers", "req_headers_first", "req_headers_rest", "resp_headers_first",
                                "resp_headers_rest")))
UNKNOWN = "<unknown>"  # a header field the capture does not give (analyzer.completeness.UNKNOWN)
FRAME_HEADER_BYTES = {p: d.frame_header for d in REGISTRY.values() if d.frame_header and d.kinds.headers for p in d.protocols}


# (`stats` loads this module: its dataclasses' __init__ are written out, their __repr__ and __eq__
# are dataclass_repr and dataclass_eq, not compiled at every start, and each has a docstring,
# without which @dataclass formats one from inspect.signature)
@dataclass(init=False, repr=False, eq=False)
class Block:
    """One set of numbers: the capture, one protocol or one connection."""

    __repr__ = dataclass_repr
    __eq__ = dataclass_eq

    name: str
    connections: int = 0
    packets: list[int] = field(default_factory=lambda: [0, 0])
    bytes: list[int] = field(default_factory=lambda: [0, 0])
    payload: list[int] = field(default_factory=lambda: [0, 0])
    tls_record_overhead: list[int] = field(default_factory=lambda: [0, 0])
    framing_overhead: list[int] | None = None  # None where the protocol's framing is not known
    frames: int = 0
    retransmissions: list[int] = field(default_factory=lambda: [0, 0])
    retransmitted_bytes: list[int] = field(default_factory=lambda: [0, 0])
    gaps: list[int] = field(default_factory=lambda: [0, 0])
    # tshark's tcp.analysis.retransmission packets per direction (with the TCP analysis): fast and
    # spurious ones and the segments that filled a hole; ``retransmissions`` counts only segments
    # whose bytes the capture had already carried (the reassembler's duplicates)
    tcp_retransmissions: list[int] | None = None
    # QUIC (``_fill_quic``): QUIC connections of the row; per direction the STREAM and CRYPTO bytes the
    # capture carried a second time (quic_stats' stream_dup_bytes + crypto_dup_bytes), the packet
    # numbers of the application space (0-RTT and 1-RTT) missing between the lowest and highest
    # decrypted, and the QUIC connections with packets that way not decrypted (their numbers are
    # unknown: left out of the missing count; their data not seen: the bytes again a lower bound)
    quic_connections: int = 0
    quic_data_again: list[int] = field(default_factory=lambda: [0, 0])
    quic_packets_missing: list[int] = field(default_factory=lambda: [0, 0])
    quic_not_decrypted: list[int] = field(default_factory=lambda: [0, 0])
    requests: int = 0
    pushes: int = 0
    resets: int = 0
    # header bytes: [wire, decoded] for request/response, all and first/rest blocks
    req_headers: list[int] = field(default_factory=lambda: [0, 0])
    resp_headers: list[int] = field(default_factory=lambda: [0, 0])
    req_headers_first: list[int] = field(default_factory=lambda: [0, 0])
    resp_headers_first: list[int] = field(default_factory=lambda: [0, 0])
    req_headers_rest: list[int] = field(default_factory=lambda: [0, 0])
    resp_headers_rest: list[int] = field(default_factory=lambda: [0, 0])
    qpack_encoder: list[int] = field(default_factory=lambda: [0, 0])  # of the wire header bytes: [request, response]
    # header fields whose size the capture does not give (``<unknown>``: HPACK/QPACK entries inserted
    # before the capture), left out of ``decoded`` above: HDR_KEYS -> fields
    headers_unknown: dict = field(default_factory=lambda: dict.fromkeys(HDR_KEYS, 0))
    # connections whose start the capture missed: their first header block is not in it (all counted in rest)
    first_block_unseen: int = 0
    tls_connections: int = 0  # connections with TLS over TCP (whose records ``tls_record_overhead`` counts)
    # per direction: False where ``tls_record_overhead`` is only a lower bound (records not decrypted
    # whose overhead the cipher suite does not fix: analyzer.sessions.tls.TlsSession._overhead_estimate)
    tls_record_overhead_exact: list[bool] = field(default_factory=lambda: [True, True])
    # connections only: an h2c Upgrade's HTTP/1.1 heads [[request wire, decoded], [response wire, decoded]],
    # not in this block's header pairs (counted under HTTP/1.1's)
    upgrade_heads: list[list[int]] | None = None
    request_body: int = 0
    response_body: list[int] = field(default_factory=lambda: [0, 0])  # [encoded, decoded]
    max_streams_in_flight: int = 0
    ttfb: float | None = None
    page_load_time: float | None = None
    first_time: float | None = None
    last_time: float | None = None
    endpoints: str | None = None  # connections only
    protocol: str | None = None  # connections only

    # (@dataclass(init=False): written out, not compiled at every `stats`; tests/test_dataclass_init.py)
    def __init__(self, name: str, connections: int = 0, packets: list[int] = FACTORY, bytes: list[int] = FACTORY, payload: list[int] = FACTORY,
                 tls_record_overhead: list[int] = FACTORY, framing_overhead: list[int] | None = None, frames: int = 0,
                 retransmissions: list[int] = FACTORY, retransmitted_bytes: list[int] = FACTORY, gaps: list[int] = FACTORY,
                 tcp_retransmissions: list[int] | None = None, quic_connections: int = 0, quic_data_again: list[int] = FACTORY,
                 quic_packets_missing: list[int] = FACTORY, quic_not_decrypted: list[int] = FACTORY, requests: int = 0,
                 pushes: int = 0, resets: int = 0, req_headers: list[int] = FACTORY, resp_headers: list[int] = FACTORY,
                 req_headers_first: list[int] = FACTORY, resp_headers_first: list[int] = FACTORY, req_headers_rest: list[int] = FACTORY,
                 resp_headers_rest: list[int] = FACTORY, qpack_encoder: list[int] = FACTORY, headers_unknown: dict = FACTORY,
                 first_block_unseen: int = 0, tls_connections: int = 0, tls_record_overhead_exact: list[bool] = FACTORY,
                 upgrade_heads: list[list[int]] | None = None, request_body: int = 0,
                 response_body: list[int] = FACTORY, max_streams_in_flight: int = 0, ttfb: float | None = None,
                 page_load_time: float | None = None, first_time: float | None = None, last_time: float | None = None,
                 endpoints: str | None = None, protocol: str | None = None) -> None:
        self.name = name
        self.connections = connections
        self.packets = [0, 0] if packets is FACTORY else packets
        self.bytes = [0, 0] if bytes is FACTORY else bytes
        self.payload = [0, 0] if payload is FACTORY else payload
        self.tls_record_overhead = [0, 0] if tls_record_overhead is FACTORY else tls_record_overhead
        self.framing_overhead = framing_overhead
        self.frames = frames
        self.retransmissions = [0, 0] if retransmissions is FACTORY else retransmissions
        self.retransmitted_bytes = [0, 0] if retransmitted_bytes is FACTORY else retransmitted_bytes
        self.gaps = [0, 0] if gaps is FACTORY else gaps
        self.tcp_retransmissions = tcp_retransmissions
        self.quic_connections = quic_connections
        self.quic_data_again = [0, 0] if quic_data_again is FACTORY else quic_data_again
        self.quic_packets_missing = [0, 0] if quic_packets_missing is FACTORY else quic_packets_missing
        self.quic_not_decrypted = [0, 0] if quic_not_decrypted is FACTORY else quic_not_decrypted
        self.requests = requests
        self.pushes = pushes
        self.resets = resets
        self.req_headers = [0, 0] if req_headers is FACTORY else req_headers
        self.resp_headers = [0, 0] if resp_headers is FACTORY else resp_headers
        self.req_headers_first = [0, 0] if req_headers_first is FACTORY else req_headers_first
        self.resp_headers_first = [0, 0] if resp_headers_first is FACTORY else resp_headers_first
        self.req_headers_rest = [0, 0] if req_headers_rest is FACTORY else req_headers_rest
        self.resp_headers_rest = [0, 0] if resp_headers_rest is FACTORY else resp_headers_rest
        self.qpack_encoder = [0, 0] if qpack_encoder is FACTORY else qpack_encoder
        self.headers_unknown = dict.fromkeys(HDR_KEYS, 0) if headers_unknown is FACTORY else headers_unknown
        self.first_block_unseen = first_block_unseen
        self.tls_connections = tls_connections
        self.tls_record_overhead_exact = [True, True] if tls_record_overhead_exact is FACTORY else tls_record_overhead_exact
        self.upgrade_heads = upgrade_heads
        self.request_body = request_body
        self.response_body = [0, 0] if response_body is FACTORY else response_body
        self.max_streams_in_flight = max_streams_in_flight
        self.ttfb = ttfb
        self.page_load_time = page_load_time
        self.first_time = first_time
        self.last_time = last_time
        self.endpoints = endpoints
        self.protocol = protocol


@dataclass(init=False, repr=False, eq=False)
class Stats:
    """What `wirefall stats` shows: the capture's, each protocol's and each connection's numbers."""

    __repr__ = dataclass_repr
    __eq__ = dataclass_eq

    file: str
    capture: Block
    protocols: dict[str, Block]
    connections: list[Block]
    packets_total: int = 0
    bytes_total: int = 0
    duration: float = 0.0
    completeness: Any = None  # analyzer.completeness.Completeness
    background_requests: int = 0  # requests not the page's (analyzer.waterfall.page_of)
    tcp_analysis: dict | None = None  # analyzer.tcp_analysis.stats(): packets per tcp.analysis.* flag
    # the browser's page events of a HAR laid over the capture (analyzer.waterfall.browser_milestones):
    # milestone name -> (label, seconds from the page's start, as TTFB and page load)
    browser_events: dict | None = None
    # packets in no connection (ARP, ICMP, other IP protocols, IP fragments held for reassembly,
    # undecodable ones): {"packets", "bytes", "kinds": {kind: [packets, bytes]}, "undecoded": {reason: packets}}
    # (``_outside``); with the connections' rows they add up to the capture's packets and bytes
    outside: dict | None = None
    # packets cut by the snap length whose TCP/UDP length could not be read again (the capture file
    # gone): their captured payload is what ``payload`` counts
    payload_unread: int = 0
    # a browser log's requests that never reached the network (a cache, a failure before sending):
    # rows of the page, on no connection of it, counted in no protocol's row (``model.no_network_connections``)
    not_sent_requests: int = 0
    # the page's requests by content class (``content_breakdown``), as WebPageTest's breakdown
    content: dict[str, list[int]] | None = None
    # WebPageTest's TTFB (``webpagetest_ttfb``): (seconds from the page's start, exchange id), or None
    webpagetest_ttfb: tuple[float, int] | None = None
    # the page's requests WebPageTest's breakdown leaves out, and so ``content`` (``content_breakdown``):
    # why ("favicon") -> [requests, body bytes, decoded]
    content_left_out: dict[str, list[int]] | None = None
    # what is known to be off about a browser event of ``browser_events``: name -> "before_first_response_byte"
    # (it falls before the page's first response byte on the wire: the browser's value, not the wire's)
    browser_event_notes: dict[str, str] | None = None

    def __init__(self, file: str, capture: Block, protocols: dict[str, Block], connections: list[Block], packets_total: int = 0,
                 bytes_total: int = 0, duration: float = 0.0, completeness: Any = None, background_requests: int = 0,
                 tcp_analysis: dict | None = None, browser_events: dict | None = None, outside: dict | None = None,
                 payload_unread: int = 0, not_sent_requests: int = 0, content: dict[str, list[int]] | None = None,
                 webpagetest_ttfb: tuple[float, int] | None = None, content_left_out: dict[str, list[int]] | None = None,
                 browser_event_notes: dict[str, str] | None = None) -> None:
        self.file = file
        self.capture = capture
        self.protocols = protocols
        self.connections = connections
        self.packets_total = packets_total
        self.bytes_total = bytes_total
        self.duration = duration
        self.completeness = completeness
        self.background_requests = background_requests
        self.tcp_analysis = tcp_analysis
        self.browser_events = browser_events
        self.outside = outside
        self.payload_unread = payload_unread
        self.content = content
        self.not_sent_requests = not_sent_requests
        self.webpagetest_ttfb = webpagetest_ttfb
        self.content_left_out = content_left_out
        self.browser_event_notes = browser_event_notes


def _add2(a: list[int], b) -> None:
    a[0] += b[0]
    a[1] += b[1]


def _reduction(pair: list[int]) -> float | None:
    wire, dec = pair
    return None if dec <= 0 else 1.0 - wire / dec


# a request's first and last known times: the waterfall's own (one home for the rule)
_start = _exchange_start
_end = _exchange_end


def _spans(exs: list[Exchange]) -> tuple[list[float], list[float]]:
    """The starts and the ends (``_start``, ``_end``; the start again where no end is known) of
    the exchanges of ``exs`` that have a start, for ``_in_flight``."""
    starts: list[float] = []
    ends: list[float] = []
    for e in exs:
        a = _start(e)
        if a is None:
            continue
        b = _end(e)
        starts.append(a)
        ends.append(b if b is not None else a)
    return starts, ends


def _in_flight(starts: list[float], ends: list[float]) -> int:
    """``max_in_flight`` of the spans (``_spans``), either list in any order (sorted here).  The
    count only rises at a start, and an end at the same instant as a start counts after it: the
    most open at once is, over the starts in order, (starts so far) − (ends before this one)."""
    starts = sorted(starts)
    ends = sorted(ends)
    best = j = 0
    n = len(ends)
    for i, a in enumerate(starts, 1):
        while j < n and ends[j] < a:
            j += 1
        if i - j > best:
            best = i - j
    return best


def max_in_flight(exs: list[Exchange]) -> int:
    """Most exchanges open at once (from request start to response end)."""
    return _in_flight(*_spans(exs))


def conn_protocol(c: Connection, exs: list[Exchange]) -> str:
    if exs:
        return exs[0].protocol
    if c.protocol:
        return c.protocol
    if c.tls is not None:
        return "tls"
    return c.transport


def req_wire(e: Exchange) -> int:
    """Request header bytes on the wire: the header blocks, and for HTTP/3 the QPACK
    encoder-stream bytes charged to them."""
    return e.request_header_bytes_wire + e.request_qpack_encoder_bytes


def resp_wire(e: Exchange) -> int:
    return e.response_header_bytes_wire + e.response_qpack_encoder_bytes


# the ``<unknown>`` fields of a header list: entries inserted before the capture, whose real
# name and size the capture does not give (``decoded`` leaves them out); one rule with the JSON's
# ``*_header_fields_unknown``
_unknown = unknown_fields


# one side's header bytes of one exchange: (wire, decoded of the known fields, unknown fields)
Side = tuple[int, int, int]


def _sides(e: Exchange, h1: dict[int, list[list[int]]] | None = None) -> tuple[Side, Side]:
    """The request's and the response's header bytes of ``e``, ``<unknown>`` fields left out of
    ``decoded`` (and counted), and the HTTP/1.1 heads of an h2c Upgrade (``h1``: exchange id ->
    their [[wire, decoded], [wire, decoded]], counted under HTTP/1.1 instead) taken off."""
    nq, ns = _unknown(e.request_headers), _unknown(e.response_headers)
    # (decoded leaves the ``<unknown>`` fields out already: dissectors/http2.py, http3.py)
    rw, rd = req_wire(e), e.request_header_bytes_decoded
    sw, sd = resp_wire(e), e.response_header_bytes_decoded
    heads = h1.get(e.id) if h1 else None
    if heads is not None:
        rw, rd = rw - heads[0][0], rd - heads[0][1]
        sw, sd = sw - heads[1][0], sd - heads[1][1]
    return (max(rw, 0), max(rd, 0), nq), (max(sw, 0), max(sd, 0), ns)


def _add_side(b: Block, key: str, side: Side) -> None:
    pair = getattr(b, HDR_ATTRS[key])
    pair[0] += side[0]
    pair[1] += side[1]
    b.headers_unknown[key] += side[2]


def _fill_exchanges(b: Block, exs: list[Exchange], h1: dict[int, list[list[int]]] | None = None,
                    sides: list[tuple[Side, Side]] | None = None) -> None:
    """Add the exchanges' counts, header pairs, QPACK encoder bytes and bodies to ``b``.
    ``sides``: ``_sides`` of each of ``exs`` (in its order), when the caller has them."""
    if sides is None:
        sides = [_sides(e, h1) for e in exs]
    hdr_q, hdr_s, unk, qpe, rbody = b.req_headers, b.resp_headers, b.headers_unknown, b.qpack_encoder, b.response_body
    requests = pushes = resets = req_body = 0
    for e, (rq, rs) in zip(exs, sides):
        if e.pushed:
            pushes += 1
        else:
            requests += 1
        if e.reset:
            resets += 1
        hdr_q[0] += rq[0]
        hdr_q[1] += rq[1]
        unk["request"] += rq[2]
        hdr_s[0] += rs[0]
        hdr_s[1] += rs[1]
        unk["response"] += rs[2]
        qpe[0] += e.request_qpack_encoder_bytes
        qpe[1] += e.response_qpack_encoder_bytes
        req_body += e.request_body_bytes
        enc = e.response_body_bytes
        dec = e.response_body_decoded_bytes
        rbody[0] += enc
        rbody[1] += enc if dec is None else dec
    b.requests += requests
    b.pushes += pushes
    b.resets += resets
    b.request_body += req_body


def _first_rest(b: Block, exs: list[Exchange], h1: dict[int, list[list[int]]] | None = None, start_seen: bool = True,
                sides_list: list[tuple[Side, Side]] | None = None) -> None:
    """Split header bytes of one connection's exchanges into first block / rest.  A connection
    whose start the capture missed has no first block in it (the dictionary was not empty at
    the first block seen): all its blocks are counted in rest and ``first_block_unseen`` says so.
    ``sides_list``: ``_sides`` of each of ``exs`` (in its order), when the caller has them."""
    if sides_list is None:
        sides_list = [_sides(e, h1) for e in exs]
    reqs = [(e, sd[0]) for e, sd in zip(exs, sides_list) if sd[0][0] or sd[0][1] or sd[0][2]]
    resps = [(e, sd[1]) for e, sd in zip(exs, sides_list) if sd[1][0] or sd[1][1] or sd[1][2]]
    if not start_seen and (reqs or resps):
        b.first_block_unseen += 1
    # the first block of each direction: the first request in (pushed last, start, id) order, the
    # first response in (start, id) order (min: the first of equal keys, as a stable sort's first).
    # A pushed request's block is the server's PUSH_PROMISE, of the server's compression context:
    # never the client's first block, counted in rest
    inf = float("inf")
    first_q = first_s = None
    if start_seen and reqs:
        first_q = min(reqs, key=lambda p: (p[0].pushed, p[0].request_start if p[0].request_start is not None else inf, p[0].id))
        if first_q[0].pushed:
            first_q = None
    if start_seen and resps:
        first_s = min(resps, key=lambda p: (p[0].response_start if p[0].response_start is not None else inf, p[0].id))
    for key, blocks, first in (("request", reqs, first_q), ("response", resps, first_s)):
        w = d = u = 0  # the later blocks, added up
        for p in blocks:
            if p is first:
                _add_side(b, key + "_first", p[1])
            else:
                sd = p[1]
                w += sd[0]
                d += sd[1]
                u += sd[2]
        _add_side(b, key + "_rest", (w, d, u))


def _start_seen(c: Connection) -> bool:
    """Whether the capture holds the connection's start (its TCP SYN, its QUIC handshake): where
    it does not, the first header block seen is not the connection's first
    (analyzer.completeness: "joined mid-way")."""
    return c.connect_start is not None or not (c.transport == "tcp" or c.quic is not None or over_quic(c.protocol))


def _upgrade_heads(an: Analysis, exs_by_conn: dict[int, list[Exchange]]) -> dict[int, dict[int, list[list[int]]]]:
    """HTTP/1.x heads on connections whose exchanges are another protocol's (an h2c Upgrade: the
    request and the 101 travel as HTTP/1.1 before the connection speaks HTTP/2): connection id ->
    exchange id -> [[request wire, decoded], [response wire, decoded]] (the head's bytes as sent;
    names + values, the start line's as pseudo-header fields: ``dissectors.http1.start_line_size``),
    from the HTTP/1 message frames (``Frame.length`` is the head's size)."""
    other = {cid for cid, exs in exs_by_conn.items() if exs and not exs[0].protocol.startswith("http/1")}
    out: dict[int, dict[int, list[list[int]]]] = {}
    if not other:
        return out
    for f in an.frames:
        if f.connection not in other or not f.protocol.startswith("http/1") or f.type not in ("REQUEST", "RESPONSE"):
            continue
        fl = f.fields or {}
        ex = fl.get("exchange")
        if ex is None:
            continue
        pair = out.setdefault(f.connection, {}).setdefault(ex, [[0, 0], [0, 0]])[0 if f.type == "REQUEST" else 1]
        pair[0] += f.length
        pair[1] += sum(len(k) + len(v) for k, v in f.headers or ())
        # and the start line as the pseudo-header fields HTTP/2 would carry: the exchange's decoded size counts them
        if f.type == "REQUEST" and fl.get("method") is not None:
            pair[1] += start_line_size(fl["method"], fl.get("target") or "")
        elif f.type == "RESPONSE" and fl.get("status") is not None:
            pair[1] += start_line_size(status=fl["status"])
    return out


def _fill_connection(b: Block, c: Connection) -> None:
    b.connections += 1
    for d in (0, 1):
        s = c.stats[d]
        b.packets[d] += s.packets
        b.bytes[d] += s.bytes
        b.payload[d] += s.payload
        b.retransmissions[d] += s.retransmissions
        b.retransmitted_bytes[d] += s.retransmitted_bytes
        b.gaps[d] += s.gaps
    if c.tls is not None and c.transport == "tcp":
        b.tls_connections += 1
        _add2(b.tls_record_overhead, c.tls.record_overhead)
        for d, bound in enumerate(overhead_bound(c.tls)):
            if bound:
                b.tls_record_overhead_exact[d] = False
    b.first_time = c.start if b.first_time is None else min(b.first_time, c.start)
    b.last_time = c.end if b.last_time is None else max(b.last_time, c.end)


def _fill_quic(b: Block, c: Connection, q: Any, tabs: dict) -> None:
    """A QUIC connection's figures of what the capture shows carried again or missing (its
    ``quic_stats`` ``q``, its decrypted packets ``tabs``: ``Analysis.quic_packets``).  QUIC sends
    lost data again in new packets: data lost before the capture point leaves no second copy in
    it, so no figure here can count that loss; a packet number the capture lacks may be one lost
    before it, or one the sender skipped (RFC 9000 §12.3 allows it: Chrome skips one before a
    probe).  Not IETF QUIC's stats (an empty dict: no QUIC packet read) — not counted."""
    if not isinstance(q, dict) or not ("stream_dup_bytes" in q or q.get("kind") == "gquic"):
        return
    b.quic_connections += 1
    for d in (0, 1):
        if q.get("kind") == "gquic":  # (never decrypted: what its packets carry is not known)
            b.quic_not_decrypted[d] += bool(c.stats[d].packets)
            continue
        b.quic_data_again[d] += int(q["stream_dup_bytes"][d]) + int((q.get("crypto_dup_bytes") or (0, 0))[d])
        und = int((q.get("undecrypted") or (0, 0))[d])
        tab = tabs.get((c.id, d))
        n = len(tab) if tab is not None else 0  # (``packet`` is appended last: the other arrays are at least as long)
        if und or (not n and int((q.get("packets") or (0, 0))[d])):  # (a packet not opened, or none listed)
            b.quic_not_decrypted[d] += 1
            continue
        # the application space's numbers (0-RTT and 1-RTT share it, RFC 9000 §12.3): epochs 1 and 3, the odd ones
        pns = {pn for pn, fl in zip(tab.pn[:n], tab.flags[:n]) if fl & 1} if tab is not None and n else set()
        if pns:
            b.quic_packets_missing[d] += max(pns) - min(pns) + 1 - len(pns)


# WebPageTest's breakdown's classes, in its order (its MimeColors(); its "js" is "script", as
# analyzer.waterfall.content_class names it)
CONTENT_CLASSES = ("html", "script", "css", "image", "flash", "font", "video", "other")
# WebPageTest's classes by the URL path's extension, where the MIME type names none (ContentType()
# in its www/contentColors.inc, word for word: no .jpeg, .webp, .svg or .ico, and no .css — its
# branch for css tests ".js" again, so a CSS file without a MIME type is "other" there)
_WPT_EXT = {"js": "script", "htm": "html", "html": "html", "png": "image", "gif": "image", "jpg": "image", "avif": "image",
            "jxl": "image", "swf": "flash", "eot": "font", "ttf": "font", "woff": "font", "woff2": "font", "otf": "font",
            "mp4": "video", "f4v": "video", "flv": "video"}


def wpt_content_class(content_type: str | None, url: str | None) -> str:
    """WebPageTest's class of a response (its ContentType(), www/contentColors.inc): the MIME type
    up to ";" — javascript, ecmascript or text/js* → script; text/css* → css; text/html* → html;
    image/* → image; video/* → video; application/x-shockwave-flash → flash; any with "font" →
    font —, else the extension that ends the URL's path, else "other".  (Not
    ``waterfall.content_class``, which the waterfall's colours keep: it also reads .svg, .ico,
    .css, XHTML and HLS/DASH types, which WebPageTest's breakdown counts as "other".)"""
    m = (content_type or "").split(";", 1)[0].strip().lower()
    if "javascript" in m or "ecmascript" in m or m.startswith("text/js"):
        return "script"
    for prefix, k in (("text/css", "css"), ("text/html", "html"), ("image/", "image"), ("video/", "video")):
        if m.startswith(prefix):
            return k
    if m == "application/x-shockwave-flash":
        return "flash"
    if "font" in m:
        return "font"
    path = _url_path(url).split("?", 1)[0]
    last = path.rsplit("/", 1)[-1]
    ext = last.rsplit(".", 1)[1] if "." in last else ""
    return _WPT_EXT.get(ext.lower(), "other") if ext.isascii() and ext.isalnum() else "other"


def _url_path(url: str | None) -> str:
    """The URL from its path on (path, query, fragment cut at "#"): what WebPageTest's request
    ``url`` holds (its JSON's requests: "/favicon.ico", "/…/inputs?client=browser")."""
    u = (url or "").split("#", 1)[0]
    scheme, sep, rest = u.partition("://")
    if sep and "/" not in scheme:
        slash = rest.find("/")
        return rest[slash:] if slash >= 0 else ""
    return u


def wpt_left_out(url: str | None) -> str | None:
    """Why WebPageTest's breakdown leaves a request out, or None: "favicon" — its URL holds
    "favicon.ico", any case (www/breakdown.inc: ``stripos($object, 'favicon.ico') === FALSE``)."""
    return "favicon" if "favicon.ico" in _url_path(url).lower() else None


def content_breakdown(exs) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """(class -> [requests, response body bytes as transferred, decoded], why left out ->
    the same): WebPageTest's "Content Breakdown" (its ``breakdown``: requests, bytes,
    bytesUncompressed per class; www/breakdown.inc) of the exchanges given, by its rules: the
    class ``wpt_content_class``, a favicon.ico left out (``wpt_left_out``) and counted apart;
    the classes with none not listed, the rest in ``CONTENT_CLASSES``' order."""
    out: dict[str, list[int]] = {}
    left: dict[str, list[int]] = {}
    for e in exs:
        why = wpt_left_out(e.url)
        k = why or wpt_content_class(e.content_type, e.url)
        into = left if why else out
        v = into.get(k)
        if v is None:
            v = into[k] = [0, 0, 0]
        enc, dec = e.response_body_bytes, e.response_body_decoded_bytes
        v[0] += 1
        v[1] += enc
        v[2] += enc if dec is None else dec
    return {k: out[k] for k in (*CONTENT_CLASSES, *sorted(set(out) - set(CONTENT_CLASSES))) if k in out}, left


def compute(an: Analysis, tcp_analysis: bool = False) -> Stats:
    idx = an.index
    # the page's times from its first packet; a browser log opened alone (no packets), from the
    # log's page start (Analysis.start_time: a HAR page's startedDateTime, else its first request)
    t0 = idx.ts[0] if len(idx) else (an.start_time if an.exchanges else None)
    exs_by_conn: dict[int, list[Exchange]] = {}
    for e in an.exchanges:
        exs_by_conn.setdefault(e.connection, []).append(e)
    framing: dict[int, list[int]] = {}
    frames_n: dict[int, int] = {}
    for f in an.frames:
        cid = f.connection
        frames_n[cid] = frames_n.get(cid, 0) + 1
        fl = f.fields  # (a dict, a FrameFields shape — never empty — or None: .get, not a truth test, which is a __len__ call)
        hb = fl.get("header_bytes") if fl is not None else None
        if hb is None:
            hb = FRAME_HEADER_BYTES.get(f.protocol)
        if hb is not None:
            fr = framing.get(cid)
            if fr is None:
                fr = framing[cid] = [0, 0]
            fr[f.direction] += int(hb)

    cap = Block(name="capture")
    protos: dict[str, Block] = {}
    conns: list[Block] = []
    heads = _upgrade_heads(an, exs_by_conn)
    spans: dict[int, tuple[list[float], list[float]]] = {}  # connection id -> its exchanges' (_spans)
    no_net = no_network_connections(an)
    quic_stats = getattr(an, "quic_stats", None) or {}
    quic_tabs = (getattr(an, "quic_packets", None) or {}) if quic_stats else {}
    for c in an.connections:
        exs = exs_by_conn.get(c.id, [])
        proto = conn_protocol(c, exs)
        h1 = heads.get(c.id)
        cb = Block(name=f"connection {c.id}", endpoints=c.label, protocol=proto)
        _fill_connection(cb, c)
        if c.transport == "udp" and c.id in quic_stats:
            _fill_quic(cb, c, quic_stats[c.id], quic_tabs)
        sides = [_sides(e, h1) for e in exs]  # (once per exchange: the totals and the first/rest split)
        _fill_exchanges(cb, exs, h1, sides)
        _first_rest(cb, exs, h1, _start_seen(c), sides)
        cb.frames = frames_n.get(c.id, 0)
        if c.id in framing:
            cb.framing_overhead = list(framing[c.id])
        sp = spans[c.id] = _spans(exs)
        cb.max_streams_in_flight = _in_flight(*sp)
        rs = _first_response(exs)
        if rs is not None:
            base = c.connect_start if c.connect_start is not None else c.start
            cb.ttfb = rs - base
        end = _last_end(exs)
        if end is not None:
            cb.page_load_time = end - (c.connect_start if c.connect_start is not None else c.start)
        conns.append(cb)
        if c.id in no_net:  # the requests that never reached the network: a row of their own, no connection nor protocol
            cb.protocol, cb.endpoints, cb.connections = None, "none: not sent (a cache, or failed before sending)", 0
            cb.ttfb = cb.page_load_time = None  # (a cache read is no first byte of a connection)
            continue
        pb = protos.setdefault(proto, Block(name=proto))
        for blk in (cap, pb):  # (the connection's numbers added in, not computed again from its exchanges)
            _add_block(blk, cb)
        if h1:  # an h2c Upgrade's HTTP/1.1 heads: counted under HTTP/1.1 (the capture's row keeps them)
            hb = _heads_block(h1, _start_seen(c), name=next((f.protocol for f in an.frames if f.connection == c.id
                                                               and f.protocol.startswith("http/1")), "http/1.1"))
            cb.upgrade_heads = [list(hb.req_headers), list(hb.resp_headers)]
            for blk in (cap, protos.setdefault(hb.name, Block(name=hb.name))):
                _add_headers(blk, hb)
    # payload as the TCP/UDP headers give it where the snap length cut packets (tshark's tcp.len)
    src = _source(an)
    try:
        before = [list(cb.payload) for cb in conns]
        payload_unread = _wire_payload(an, src, conns)
        for cb, b0 in zip(conns, before):
            extra = [cb.payload[0] - b0[0], cb.payload[1] - b0[1]]
            if extra != [0, 0]:
                _add2(cap.payload, extra)
                _add2(protos[cb.protocol or ""].payload, extra)
        outside = _outside(an, src)
    finally:
        if src is not None:
            src.close()
    # TTFB and page load of every row: the page's requests (background apart: analyzer.waterfall.page_of),
    # from the page's first packet
    from . import completeness

    page = page_once(an)
    page_exs = [e for e in an.exchanges if e.id not in page.background] if page.background else an.exchanges
    p0 = page.start if page.start is not None else t0
    by_proto: dict[str, list[Exchange]] = {}
    conn_proto = {c.id: cb.protocol or "" for c, cb in zip(an.connections, conns)}
    for e in page_exs:
        by_proto.setdefault(conn_proto.get(e.connection, ""), []).append(e)
    # the most in flight of each protocol's connections together, and of the capture's (every
    # exchange: those of no listed connection too), from the connections' spans
    proto_spans: dict[str, tuple[list[float], list[float]]] = {}
    for c, cb in zip(an.connections, conns):
        ps = proto_spans.setdefault(cb.protocol or "", ([], []))
        ps[0].extend(spans[c.id][0])
        ps[1].extend(spans[c.id][1])
    for pname, pb in protos.items():
        pb.max_streams_in_flight = _in_flight(*proto_spans.get(pname, ([], [])))
        _times(pb, by_proto.get(pname, []), p0)
    listed = {c.id for c in an.connections}
    cap_starts: list[float] = []
    cap_ends: list[float] = []
    for cid, sp in spans.items():
        if cid in no_net:  # (no stream of any connection)
            continue
        cap_starts += sp[0]
        cap_ends += sp[1]
    if any(cid not in listed for cid in exs_by_conn):  # (exchanges of no listed connection)
        orphans = _spans([e for cid, exs in exs_by_conn.items() if cid not in listed for e in exs])
        cap_starts += orphans[0]
        cap_ends += orphans[1]
    cap.max_streams_in_flight = _in_flight(cap_starts, cap_ends)
    _times(cap, page_exs, p0)
    span = time_span(an)  # (latest - earliest: a capture out of time order gave a negative duration)
    dur = (span[1] - span[0]) if span is not None else 0.0
    from .tcp_analysis import finished, retransmissions_of, stats_or_none
    from .waterfall import browser_milestones

    events = None
    if p0 is not None and isinstance(an.browser, dict) and an.browser.get("pages"):  # (a HAR laid over: its page events)
        ends = [e.response_end for e in an.exchanges if e.response_end is not None]
        t_end = max([idx.ts[-1] if len(idx) else p0] + ends)
        events = {m.name: (m.label, m.time - p0) for m in browser_milestones(an, idx.ts[0] if len(idx) else p0, t_end)} or None

    ta_stats = stats_or_none(an) if tcp_analysis else None
    ta = finished(an) if ta_stats is not None else None
    if ta is not None:
        for c, cb in zip(an.connections, conns):
            cb.tcp_retransmissions = [0, 0]
            if c.transport == "tcp":
                for _k, d, _f in retransmissions_of(an, ta, c):
                    cb.tcp_retransmissions[d or 0] += 1  # (direction unknown: counted client's, rare)
            pb_ = protos.get(cb.protocol or "")
            for blk in (cap, pb_) if pb_ is not None else (cap,):
                blk.tcp_retransmissions = _plus(blk.tcp_retransmissions, cb.tcp_retransmissions)
    # (the page's requests that reached the network: a cache read transferred nothing)
    content, content_left_out = content_breakdown(e for e in page_exs if e.connection not in no_net)
    # a browser event before the page's first response byte on the wire cannot be what its name
    # says (nothing to render, no document to load yet): WebPageTest's run 1 of the amazon load gives
    # _startRender 100 ms — 67.2 ms on the wire's clock, the first byte at 123.8 ms — with its own
    # firstContentfulPaint at 2608 ms.  Shown as the browser gives it, and said to be unchecked.
    ev_notes = None if events is None else {k: "before_first_response_byte" for k, (_label, t) in events.items()
                                            if cap.ttfb is not None and t < cap.ttfb}
    return Stats(file=an.path, capture=cap, protocols=protos, connections=conns, packets_total=len(idx),
                 bytes_total=int(sum(idx.origlen)), duration=dur, completeness=completeness.compute(an),
                 background_requests=len(page.background), tcp_analysis=ta_stats, browser_events=events, outside=outside,
                 payload_unread=payload_unread, not_sent_requests=sum(len(exs_by_conn.get(i, ())) for i in no_net),
                 content=content, content_left_out=content_left_out, webpagetest_ttfb=webpagetest_ttfb(page_exs, p0),
                 browser_event_notes=ev_notes)


def _add_headers(blk: Block, cb: Block, keys: tuple[str, ...] = HDR_KEYS) -> None:
    """Add a connection's header pairs (``keys``) and their unknown-field counts to a protocol's or the capture's block."""
    for k in keys:
        _add2(getattr(blk, HDR_ATTRS[k]), getattr(cb, HDR_ATTRS[k]))
        blk.headers_unknown[k] += cb.headers_unknown[k]
    blk.first_block_unseen += cb.first_block_unseen


def _add_block(blk: Block, cb: Block) -> None:
    """Add a connection's block (``cb``, filled from its connection and exchanges) to its
    protocol's or the capture's: the same sums as filling ``blk`` from the connection and its
    exchanges again (every number an integer count; first/last time the min/max)."""
    blk.connections += cb.connections
    for name in ("packets", "bytes", "payload", "retransmissions", "retransmitted_bytes", "gaps", "tls_record_overhead",
                 "qpack_encoder", "response_body", "quic_data_again", "quic_packets_missing", "quic_not_decrypted"):
        _add2(getattr(blk, name), getattr(cb, name))
    blk.quic_connections += cb.quic_connections
    blk.tls_connections += cb.tls_connections
    for d in (0, 1):
        blk.tls_record_overhead_exact[d] = blk.tls_record_overhead_exact[d] and cb.tls_record_overhead_exact[d]
    if cb.first_time is not None:
        blk.first_time = cb.first_time if blk.first_time is None else min(blk.first_time, cb.first_time)
    if cb.last_time is not None:
        blk.last_time = cb.last_time if blk.last_time is None else max(blk.last_time, cb.last_time)
    blk.requests += cb.requests
    blk.pushes += cb.pushes
    blk.resets += cb.resets
    blk.request_body += cb.request_body
    _add_headers(blk, cb)  # (all six header pairs, their unknown fields, first_block_unseen)
    blk.frames += cb.frames
    if cb.framing_overhead is not None:
        if blk.framing_overhead is None:
            blk.framing_overhead = [0, 0]
        _add2(blk.framing_overhead, cb.framing_overhead)


def page_once(an: Analysis):
    """``waterfall.page_of(an)`` with the waterfall planned once and the phases made only for
    the rows that need them (``jsonout.PhasePlan``: a request sent, then answered, on a
    connection's later row starts at its request; ``phases_by_exchange``, which ``page_of``
    computes otherwise, made every row's phases — 15 % of ``stats`` on 60 k requests)."""
    from .jsonout import PhasePlan
    from .waterfall import page_of

    plan = PhasePlan(an)
    return page_of(an, plan.exs, starts=plan.starts())


def _heads_block(h1: dict[int, list[list[int]]], start_seen: bool, name: str) -> Block:
    """The header pairs of one connection's HTTP/1.x heads (an h2c Upgrade's): the first of each
    direction is its first block (HTTP/1 compresses nothing: first only by position)."""
    b = Block(name=name)
    for ex in sorted(h1):
        for key, pair in (("request", h1[ex][0]), ("response", h1[ex][1])):
            if pair == [0, 0]:
                continue
            _add_side(b, key, (pair[0], pair[1], 0))
            first = start_seen and getattr(b, HDR_ATTRS[key + "_first"]) == [0, 0]
            _add_side(b, key + ("_first" if first else "_rest"), (pair[0], pair[1], 0))
    if not start_seen:
        b.first_block_unseen = 1
    return b


# how many packets outside connections (or cut by the snap length) are read again from the file to
# say what they are (the rest are told by the packet index alone)
MAX_REREAD = 200_000
# IP protocol numbers by tshark's names, for packets in no connection
IP_PROTOCOLS = {1: "ICMP", 2: "IGMP", 4: "IPIP", 41: "IPv6 in IP", 47: "GRE", 50: "ESP", 51: "AH", 58: "ICMPv6", 89: "OSPF",
                103: "PIM", 112: "VRRP", 132: "SCTP"}
ETHERTYPES = {0x0806: "ARP", 0x8035: "RARP", 0x88CC: "LLDP", 0x888E: "EAPOL", 0x8864: "PPPoE", 0x8863: "PPPoE discovery"}


def _source(an: Analysis):
    """The capture read again, or None (no file behind the analysis)."""
    import os

    if not an.path or not os.path.isfile(an.path):
        return None
    from .capture import PacketSource

    return PacketSource(an.path)


def _kind_of(linktype: int, data: bytes) -> str | None:
    """What a packet in no connection is, from its own bytes: a protocol name, or None."""
    from .packet import layers

    lay = layers(linktype, data)
    if lay.ipver == 0:
        name = ETHERTYPES.get(lay.ethertype)
        return name or (f"not IP ({lay.error})" if lay.error else None)
    if lay.frag or lay.more:
        return f"IPv{lay.ipver} fragment (held for reassembly, or never completed)"
    if lay.proto < 0:
        return f"IPv{lay.ipver} ({lay.error or 'header not read'})"
    if lay.proto == 17:
        return "UDP past the flow budgets"
    if lay.proto == 6:
        return "TCP not in a connection"
    return IP_PROTOCOLS.get(lay.proto, f"IP protocol {lay.proto}")


def _where(arr, test) -> list[int]:
    """Indices where ``test(numpy, arr)`` holds (numpy, imported only when some packet needs it)."""
    from .numpy_lite import numpy

    np = numpy()
    return np.flatnonzero(test(np, arr)).tolist()


def _outside(an: Analysis, src) -> dict:
    """The packets in no connection (``PacketIndex.conn`` < 0), by kind: read again from the file
    (``src``, up to MAX_REREAD of them), else told by the index's protocol column."""
    from .model import PROTO_CODE

    idx = an.index
    conn, proto, orig = idx.conn, idx.proto, idx.origlen
    by_index = {PROTO_CODE["ICMP"]: "ICMP", PROTO_CODE["IPv4"]: "IPv4, not TCP or UDP, or a fragment held for reassembly",
                PROTO_CODE["IPv6"]: "IPv6, not TCP or UDP", PROTO_CODE["UDP"]: "UDP past the flow budgets", 0: "not decoded"}
    kinds: dict[str, list[int]] = {}
    n = size = reread = 0
    for i in _where(conn, lambda np, c: np.frombuffer(c, dtype=np.int32) < 0) if len(idx) and min(conn) < 0 else ():
        c = conn[i]
        n += 1
        size += orig[i]
        kind = None
        if c == -2:
            kind = "not assigned to a connection (parallel pass)"
        elif src is not None and reread < MAX_REREAD:
            reread += 1
            try:
                kind = _kind_of(idx.linktype[i], src.read(idx.offset[i], idx.caplen[i]))
            except OSError:
                kind = None
        if kind is None:
            p = proto[i]
            kind = by_index.get(p) or (PROTO_NAMES[p] if p < len(PROTO_NAMES) else f"protocol {p}")
        k = kinds.setdefault(kind, [0, 0])
        k[0] += 1
        k[1] += orig[i]
    from .pipeline import PLAIN_UDP, SESSION_UDP

    undecoded = {r: v for r, v in sorted(an.undecoded.items()) if r not in (PLAIN_UDP, SESSION_UDP)}
    return {"packets": n, "bytes": size, "kinds": dict(sorted(kinds.items(), key=lambda kv: (-kv[1][1], kv[0]))), "undecoded": undecoded}


def _wire_payload(an: Analysis, src, conns: list[Block]) -> int:
    """Payload as the TCP/UDP headers give it (tshark's ``tcp.len``, ``udp.length`` − 8), not as
    captured: for each packet of a connection cut by the snap length, add the bytes of its
    payload the capture does not hold to its connection's ``payload`` (and its protocol's and the
    capture's, by the caller).  Returns how many cut packets could not be read again (their
    captured payload stays counted)."""
    idx = an.index
    cut = []
    if len(idx) and sum(idx.caplen) != sum(idx.origlen):  # (a cut packet makes them differ)
        conn = idx.conn
        cut = [i for i in _where(idx, lambda np, x: np.frombuffer(x.caplen, dtype=np.uint32) < np.frombuffer(x.origlen, dtype=np.uint32))
               if conn[i] >= 0]
    if not cut:
        return 0
    if src is None:
        return len(cut)
    from .packet import addr_str, layers

    unread = 0
    by_id = {c.id: (c, cb) for c, cb in zip(an.connections, conns)}
    for k, i in enumerate(cut):
        hit = by_id.get(idx.conn[i])
        if hit is None or k >= MAX_REREAD:
            unread += 1
            continue
        c, cb = hit
        try:
            data = src.read(idx.offset[i], idx.caplen[i])
        except OSError:
            unread += 1
            continue
        lay = layers(idx.linktype[i], data)
        if lay.proto not in (6, 17) or lay.transport < 0 or lay.length_end < 0 or lay.frag or lay.more:
            unread += 1
            continue
        if lay.proto == 6:
            if len(data) < lay.transport + 13:
                unread += 1
                continue
            start = lay.transport + (data[lay.transport + 12] >> 4) * 4
            wire = lay.length_end - start
        else:
            if len(data) < lay.transport + 6:
                unread += 1
                continue
            start = lay.transport + 8
            wire = int.from_bytes(data[lay.transport + 4 : lay.transport + 6], "big") - 8
        have = max(0, min(len(data), lay.end) - start)
        sport = int.from_bytes(data[lay.transport : lay.transport + 2], "big")
        d = 0 if (addr_str(lay.src), sport) == tuple(c.client) else 1
        if wire > have:
            cb.payload[d] += wire - have
    return unread


def _plus(a: list[int] | None, b: list[int]) -> list[int]:
    return [x + y for x, y in zip(a or [0, 0], b)]


def _times(b: Block, exs: list[Exchange], t0: float | None) -> None:
    """Capture/protocol level: TTFB = first response byte of the first of ``exs`` (the page's
    requests of the row: background traffic apart, analyzer.waterfall.page_of) measured from
    ``t0``, the page's first packet (navigation as the wire sees it: DNS, connect, TLS
    included); page load = last byte of the last of them from the same start."""
    if t0 is None:
        return
    rs = _first_response(exs)
    if rs is not None:
        b.ttfb = rs - t0
    end = _last_end(exs)
    if end is not None:
        b.page_load_time = end - t0


def _first_response(exs: list[Exchange]) -> float | None:
    """The response start of the first of ``exs`` (by ``_start``, then id) that has one."""
    rs = best_t = best_id = None
    for e in exs:
        r = e.response_start
        if r is None:
            continue
        t = _start(e)  # (never None: the response's start is known)
        if rs is None or (t, e.id) < (best_t, best_id):  # (the first of equal keys, as min())
            rs, best_t, best_id = r, t, e.id
    return rs


# content types WebPageTest leaves out of its TTFB (certificate checks the browser makes)
_WPT_TTFB_SKIP = ("ocsp-response", "pkix-crl", "pkix-cert", "ca-cert")


def webpagetest_ttfb(exs: list[Exchange], t0: float | None) -> tuple[float, int] | None:
    """WebPageTest's TTFB of the page: the first response byte of the first of ``exs`` (by
    start, then id, as its requests are ordered) whose status is 200 or 304 and whose content
    type is no certificate check, from ``t0`` (WebPageTest's agent: the first such request's
    ``load_start + ttfb_ms``) — (seconds, exchange id), or None.  The page's own ``ttfb`` is its
    first response byte whatever the status: a 202 challenge page or a redirect comes earlier."""
    if t0 is None:
        return None
    ok = [e for e in exs if e.status in (200, 304) and e.response_start is not None
          and not any(x in (e.content_type or "") for x in _WPT_TTFB_SKIP)]
    e = min(ok, key=lambda e: (_start(e), e.id), default=None)
    return None if e is None or e.response_start is None else (e.response_start - t0, e.id)


def content_left_out_text(st: Stats) -> str | None:
    """"favicon.ico left out, as WebPageTest does: 1 request, 17,542 bytes" (``content_left_out``),
    or None: what the text's and the web's content tables say under their rows."""
    fav = (st.content_left_out or {}).get("favicon")
    return f"favicon.ico left out, as WebPageTest does: {plural(fav[0], 'request')}, {_n(fav[1])} bytes" if fav else None


def webpagetest_ttfb_apart(st: Stats) -> tuple[float, int] | None:
    """``st.webpagetest_ttfb`` where it is another moment than the page's TTFB (a 202 or a
    redirect first), else None: what the text and the web summary show beside the TTFB."""
    w, t = st.webpagetest_ttfb, st.capture.ttfb
    return w if w is not None and (t is None or round(w[0] * 1e4) != round(t * 1e4)) else None


def _last_end(exs: list[Exchange]) -> float | None:
    """The latest response end of ``exs`` (None: none has one)."""
    end = None
    for e in exs:
        t = e.response_end
        if t is not None and (end is None or t > end):
            end = t
    return end


# ------------------------------------------------------------------------------- output


def _retrans(b: Block) -> list[int] | None:
    """The text tables' "retrans" column: tshark's count when the TCP analysis ran; None ("-")
    on a row of QUIC connections only, whose retransmissions are no TCP segments (0 / 0 read as
    "nothing sent twice": the "QUIC again" column has what the capture shows)."""
    if b.quic_connections and b.quic_connections == b.connections:
        return None
    return b.tcp_retransmissions if b.tcp_retransmissions is not None else b.retransmissions


def _gaps(b: Block) -> list[int] | None:
    """The Connections table's "gaps" (holes in a TCP byte stream): "-" on a QUIC connection (its
    packet numbers missing are in "PN gaps")."""
    return None if b.quic_connections and b.quic_connections == b.connections else b.gaps


def _quic_pair(b: Block, pair: list[int]) -> str:
    """A QUIC cell: "-" without QUIC; per direction "?" where no connection's packets that way
    were all decrypted and nothing was counted, "≥N" where some were not (a lower bound)."""
    if not b.quic_connections:
        return "-"
    return " / ".join("?" if b.quic_not_decrypted[d] and not pair[d] else f"{'≥' if b.quic_not_decrypted[d] else ''}{pair[d]:,}"
                      for d in (0, 1))


QUIC_AGAIN_NOTE = ("QUIC again: the STREAM and CRYPTO bytes the capture carried a second time, per direction. QUIC sends "
                   "lost data again in new packets, so data lost before the capture point has no second copy in it: no "
                   "figure from the capture alone counts that loss")
QUIC_UNDECRYPTED_NOTE = ("QUIC ≥: packets that way not decrypted (no keys) — the data again a lower bound, the packet numbers "
                         "of those connections not known and left out; ?: none known")
QUIC_PN_NOTE = ("PN gaps: packet numbers of the QUIC application space (0-RTT, 1-RTT) missing from the capture between "
                "the lowest and the highest decrypted — a packet lost before the capture point, or a number the sender "
                "skipped (RFC 9000 §12.3 allows it)")


def _hdr_dict(pair: list[int], unknown: int = 0) -> dict[str, Any]:
    """One header pair as JSON: with ``<unknown>`` fields (not in ``decoded``), the reduction is not
    known — ``reduction`` is null and ``reduction_at_least`` its lower bound."""
    r = _reduction(pair)
    r = None if r is None else round(r, 4)
    return {"wire": pair[0], "decoded": pair[1], "reduction": None if unknown else r, "unknown_fields": unknown,
            "reduction_at_least": r if unknown else None}


def block_dict(b: Block) -> dict[str, Any]:
    d: dict[str, Any] = {"name": b.name}
    if b.endpoints is not None:
        d["endpoints"] = b.endpoints
        d["protocol"] = b.protocol
    d.update({
        "connections": b.connections,
        "packets": b.packets,
        "bytes": b.bytes,
        "payload_bytes": b.payload,
        "tls_record_overhead": b.tls_record_overhead,
        "tls_connections": b.tls_connections,
        # (added 2026-12-04, additive) per direction, false where tls_record_overhead is a lower bound; null without TLS over TCP
        "tls_record_overhead_exact": list(b.tls_record_overhead_exact) if b.tls_connections else None,
        "framing_overhead": b.framing_overhead,
        "frames": b.frames,
        "retransmissions": b.retransmissions,
        "retransmitted_bytes": b.retransmitted_bytes,
        "gaps": b.gaps,
        **({"tcp_retransmissions": b.tcp_retransmissions} if b.tcp_retransmissions is not None else {}),
        # (added 2026-12-05, additive) QUIC: `retransmissions` counts TCP segments only (0 on QUIC, which
        # carries lost data again in new packets); what the capture shows of QUIC's, null without QUIC
        "quic_connections": b.quic_connections,
        **{k: (list(getattr(b, k)) if b.quic_connections else None)
           for k in ("quic_data_again", "quic_packets_missing", "quic_not_decrypted")},
        "requests": b.requests,
        "pushes": b.pushes,
        "resets": b.resets,
        "headers": {
            **{k: _hdr_dict(getattr(b, HDR_ATTRS[k]), b.headers_unknown[k]) for k in HDR_KEYS},
            "qpack_encoder_bytes": list(b.qpack_encoder),
            "first_block_unseen": b.first_block_unseen,
            **({"http1_upgrade": {"request": {"wire": b.upgrade_heads[0][0], "decoded": b.upgrade_heads[0][1]},
                                  "response": {"wire": b.upgrade_heads[1][0], "decoded": b.upgrade_heads[1][1]}}}
               if b.upgrade_heads is not None else {}),
        },
        "request_body_bytes": b.request_body,
        "response_body_bytes": {"encoded": b.response_body[0], "decoded": b.response_body[1]},
        "max_streams_in_flight": b.max_streams_in_flight,
        "ttfb": b.ttfb,
        "page_load_time": b.page_load_time,
    })
    return d


def to_dict(st: Stats) -> dict[str, Any]:
    from . import completeness

    return {
        "version": STATS_VERSION,
        "file": st.file,
        "packets": st.packets_total,
        "bytes": st.bytes_total,
        "duration": st.duration,
        "capture": block_dict(st.capture),
        "protocols": {k: block_dict(v) for k, v in sorted(st.protocols.items())},
        "connections": [block_dict(b) for b in st.connections],
        "background_requests": st.background_requests,
        "not_sent_requests": st.not_sent_requests,  # (added 2026-12-04: a browser log's, in no protocol's or the capture's requests)
        # packets in no connection, by kind: with the connections' they add up to packets and bytes
        "not_in_connection": st.outside,
        "payload_unread": st.payload_unread,
        # a HAR laid over: its DOMContentLoaded / load event in seconds from the page's start (as ttfb, page_load_time)
        "browser_events": {k: t for k, (_label, t) in st.browser_events.items()} if st.browser_events else None,
        # (added 2026-12-05) of those, the ones known to be off: {name: "before_first_response_byte"}; null without browser_events
        "browser_event_notes": dict(st.browser_event_notes) if st.browser_events and st.browser_event_notes is not None else None,
        # (added 2026-12-05) the page's requests by content class, as WebPageTest's breakdown
        "content": {k: {"requests": v[0], "body_bytes": v[1], "decoded_bytes": v[2]} for k, v in (st.content or {}).items()},
        # (added 2026-12-05) the page's requests WebPageTest's breakdown leaves out, so ``content`` too: {"favicon": {…}}
        "content_left_out": {k: {"requests": v[0], "body_bytes": v[1], "decoded_bytes": v[2]}
                             for k, v in (st.content_left_out or {}).items()},
        # (added 2026-12-05) WebPageTest's TTFB: its first 200/304 response's first byte from the page's start
        "webpagetest_ttfb": ({"ttfb": st.webpagetest_ttfb[0], "exchange": st.webpagetest_ttfb[1]}
                             if st.webpagetest_ttfb is not None else None),
        "completeness": completeness.to_dict(st.completeness) if st.completeness is not None else None,
        **({"tcp_analysis": st.tcp_analysis} if st.tcp_analysis is not None else {}),
    }


def _n(x: int) -> str:
    return f"{x:,}"


def _pair(p: list[int] | None) -> str:
    return "-" if p is None else f"{p[0]:,} / {p[1]:,}"


def _pct(pair: list[int], unknown: int = 0) -> str:
    """The "saved" cell: with ``<unknown>`` fields (left out of decoded) a lower bound, marked ≥."""
    r = _reduction(pair)
    return "-" if r is None else f"{'≥' if unknown else ''}{r * 100:.1f}%"


def _ms(t: float | None) -> str:
    return "-" if t is None else f"{t * 1000:.1f} ms"


def _table(title: str, headers: list[str], rows: list[list[str]], right: set[int]) -> str:
    widths = [len(h) for h in headers]
    for r in rows:
        for i, v in enumerate(r):
            widths[i] = max(widths[i], len(v))

    def line(vals):
        return "  ".join(v.rjust(widths[i]) if i in right else v.ljust(widths[i]) for i, v in enumerate(vals)).rstrip()

    out = [title, line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]
    return "\n".join(out)


def _tls_pair(b: Block, protocol: str | None = None) -> str:
    """The TLS-overhead cell: "-" where no connection of the row is TLS over TCP (QUIC's packet
    protection is not TLS records and is not counted; 0 there would read as none)."""
    if not b.tls_connections:
        return "-"
    p, ex = b.tls_record_overhead, b.tls_record_overhead_exact
    return f"{'' if ex[0] else '≥'}{p[0]:,} / {'' if ex[1] else '≥'}{p[1]:,}"


TLS_BOUND_NOTE = ("≥: a lower bound — protected records not decrypted whose overhead the cipher suite does not fix "
                  "(CBC padding taken as one byte, except in a Finished or an alert without TLS compression, whose "
                  "length is known; TLS 1.3 padding unknown; the header only where the suite's record protection is "
                  "not known); the key log gives exact figures")


def _outside_text(st: Stats) -> str | None:
    o = st.outside
    if not o or not o["packets"]:
        return None
    kinds = ", ".join(f"{k} {v[0]:,} / {v[1]:,} B" for k, v in o["kinds"].items())
    und = "; not decoded: " + ", ".join(f"{r} {v:,}" for r, v in o["undecoded"].items()) if o["undecoded"] else ""
    c = st.capture
    return (f"Not in a connection: {o['packets']:,} packets, {o['bytes']:,} bytes ({kinds}{und}); with the rows above: "
            f"{sum(c.packets) + o['packets']:,} packets, {sum(c.bytes) + o['bytes']:,} bytes")


NOTES_WIDTH = 100  # the text tables' notes wrap at this many columns (the TUI's Statistics tab does not wrap)


def _notes(lines: list[str], width: int = NOTES_WIDTH) -> str:
    """Notes under a table, each wrapped at ``width`` columns (continuation lines indented)."""
    import textwrap

    return "\n".join(textwrap.fill(ln, width, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)
                     for ln in lines)


def _not_sent(st: Stats) -> str:
    n = st.not_sent_requests
    return f" (and {n} that never reached the network: a cache, or failed before sending)" if n else ""


def page_line(st: Stats) -> str:
    """The page's moments, named for what they are: its first response byte (TTFB) and its last
    response byte from the page's first packet — the last response byte is not the browser's
    load event (a beacon sent after onload ends later), which is given beside it where a browser
    log laid over the capture places it (``browser_events``)."""
    c = st.capture
    if c.ttfb is None and c.page_load_time is None:
        return "Page: no response of a page request in the capture (no TTFB, no last response byte)"
    whence = "its first packet" if st.packets_total else "its start in the browser log (no packets)"
    s = f"Page, from {whence}: TTFB {_ms(c.ttfb)} (first response byte"
    w = webpagetest_ttfb_apart(st)
    if w is not None:
        # (the wire's moment by WebPageTest's rule, not WebPageTest's figure: its browser waited longer
        # than the wire, 355 ms for this 320.4 on the amazon load; web review 31)
        s += f"; by WebPageTest's rule — its first 200 or 304 response, request {w[1]} — {_ms(w[0])} " + (
            "on the wire" if st.packets_total else "in the browser log")
    s += f"), last response byte {_ms(c.page_load_time)}"
    if st.browser_events:
        notes = st.browser_event_notes or {}
        s += "; the browser's " + ", ".join(f"{label} {_ms(t)}" + (" (before the page's first response byte: the browser's value, "
                                                                   "not checked)" if notes.get(k) == "before_first_response_byte" else "")
                                            for k, (label, t) in st.browser_events.items())
    elif c.page_load_time is not None:
        s += " — not the browser's load event (a HAR of the load gives it: --har; a NetLog or a qlog has no page events)"
    if st.background_requests:
        s += f"; {st.background_requests} background request{'s' * (st.background_requests != 1)} not counted in the page"
    return s


def render_text(st: Stats) -> str:
    c = st.capture
    parts = []
    # a browser log opened alone: no packet, so what the wire would give (packets, bytes, payload,
    # TLS records, framing, retransmissions, gaps, header bytes) is unknown — "–", not 0
    log_alone = st.packets_total == 0 and c.requests > 0
    wire = (lambda _p: "–") if log_alone else _pair
    # the QUIC columns only where the capture has QUIC connections (a TCP capture's tables as they were)
    has_quic = bool(c.quic_connections) and not log_alone

    def quic_again(b: Block) -> list[str]:
        return [_quic_pair(b, b.quic_data_again)] if has_quic else []
    tls = (lambda _b: "–") if log_alone else _tls_pair
    head = (f"{st.file}: a browser log, no packets (what only the wire gives is unknown: –)" if log_alone
            else f"{st.file}: {st.packets_total:,} packets, {st.bytes_total:,} bytes, {st.duration:.3f} s")
    parts.append(
        f"{head}; "
        f"{c.connections} connections, {c.requests} requests{_not_sent(st)}, {c.pushes} pushed, {c.resets} reset; "
        f"max {c.max_streams_in_flight} in flight\n" + _notes([page_line(st)])
    )
    order = sorted(st.protocols.values(), key=lambda b: (-b.requests, b.name))
    rows = []
    for b in order + [c]:
        if b is not c and not b.connections:  # (header bytes only: an h2c Upgrade's HTTP/1.1 heads)
            continue
        rows.append([b.name if b is not c else "all", str(b.connections), str(b.requests), str(b.pushes),
                     wire(b.packets), wire(b.bytes), wire(b.payload), tls(b),
                     wire(b.framing_overhead), wire(_retrans(b)), *quic_again(b), _ms(b.ttfb), _ms(b.page_load_time)])
    traffic = _table("Traffic (client→server / server→client)",
                     ["protocol", "conns", "reqs", "push", "packets", "wire bytes", "payload", "TLS overhead", "framing", "retrans",
                      *(["QUIC again"] if has_quic else []), "first byte", "last byte"],
                     rows, set(range(1, 12 + has_quic)))
    traffic_notes = _notes([
        "first byte, last byte: the first and the last response byte of the row's page requests (background apart), "
        f"from the page's {'start in the browser log' if log_alone else 'first packet'} — on the 'all' row the page's TTFB and its last response byte (not the browser's "
        "load event); on a protocol's row, when that protocol's first response came, not its requests' own TTFB (the "
        "Connections table has each connection's)",
        # (the wire columns' notes only where the columns have numbers: a browser log alone shows "–" in each)
        *(() if log_alone else (
            "payload: TCP/UDP length from the headers, as tshark's tcp.len",
            "TLS overhead: every TLS record's header, and of protected records the MAC or tag, explicit nonce, padding and "
            "inner content type; '-' without TLS over TCP (QUIC)",
            *([TLS_BOUND_NOTE] if c.tls_connections and not all(c.tls_record_overhead_exact) else []),
            "retrans: " + ("the TCP segments tshark flags tcp.analysis.retransmission (fast and spurious ones in)"
                           if c.tcp_retransmissions is not None else "the TCP segments whose bytes the capture had already carried")
            + ("; '-' on rows of QUIC connections only (see QUIC again)" if has_quic else ""),
            *([QUIC_AGAIN_NOTE] if has_quic else []),
            *([QUIC_UNDECRYPTED_NOTE] if has_quic and any(c.quic_not_decrypted) else []))),
    ])
    extra = [x for x in (_outside_text(st),
                         f"{st.payload_unread:,} packets cut by the snap length could not be read again: their captured payload "
                         f"is counted" if st.payload_unread else None) if x]
    parts.append("\n".join([traffic] + extra))
    parts.append(traffic_notes)
    rows = []
    for b in order + [c]:
        if log_alone or not (b.req_headers[1] or b.resp_headers[1] or b.req_headers[0] or b.resp_headers[0]):
            continue  # (a log alone: no header block on the wire to weigh)
        name = b.name if b is not c else "all"
        u = b.headers_unknown
        for label in ("request", "response"):
            allp, first, rest = (getattr(b, HDR_ATTRS[k]) for k in (label, label + "_first", label + "_rest"))
            uf, ur = u[label + "_first"], u[label + "_rest"]
            rows.append([name, label, _n(allp[0]), _n(allp[1]), _n(u[label]), _pct(allp, u[label]),
                         "-" if first == [0, 0] and not uf else _pair(first), _pct(first, uf), _pair(rest), _pct(rest, ur)])
    if rows:
        notes = []
        if any(c.headers_unknown.values()):
            notes.append("unknown = header fields shown <unknown> (HPACK/QPACK entries inserted before the capture): their size "
                         "is not in decoded, and saved is then a lower bound (≥)")
        if c.first_block_unseen:
            notes.append(f"{c.first_block_unseen} connection{'s' * (c.first_block_unseen != 1)} joined mid-way: "
                         "the first header block is not in the capture, all their blocks are counted as later blocks")
        if any(b.upgrade_heads for b in st.connections):
            notes.append("an h2c Upgrade's HTTP/1.1 request and 101 heads are counted under HTTP/1.1, its first HPACK block as h2c's first")
        notes[:0] = ["wire: the header block on the wire, for HTTP/3 with the QPACK encoder-stream insertions it uses; "
                     "decoded: header names + values; saved: 1 − wire/decoded, negative = framing costs more than it saves"]
        parts.append("\n".join([_table("Header bytes",
                                        ["protocol", "", "wire", "decoded", "unknown", "saved", "first block w/d", "saved", "later blocks w/d",
                                         "saved"], rows, {2, 3, 4, 5, 6, 7, 8, 9}), _notes(notes)]))
    rows = []
    for b in order + [c]:
        if not (b.response_body[0] or b.request_body):
            continue
        enc, dec = b.response_body
        rows.append([b.name if b is not c else "all", _n(b.request_body), _n(enc), _n(dec),
                     "-" if not dec else f"{(1 - enc / dec) * 100:.1f}%"])
    if rows:
        parts.append(_table("Bodies (response encoded = as transferred, decoded = after Content-Encoding)",
                            ["protocol", "request", "response encoded", "decoded", "saved"], rows, {1, 2, 3, 4}))
    rows = [[k, _n(v[0]), _n(v[1]), _n(v[2])] for k, v in (st.content or {}).items()]
    if rows and len(rows) > 1 or rows and rows[0][0] != "other":
        left = content_left_out_text(st)
        parts.append(_table("Content (the page's requests by type, as WebPageTest's breakdown: MIME type, else the "
                            "URL's extension; response bodies as transferred and decoded" + (f"; {left}" if left else "") + ")",
                            ["type", "requests", "bytes", "decoded"], rows, {1, 2, 3}))
    rows = []
    dns = [b for b in st.connections if b.protocol == "dns"]
    for b in st.connections:
        if b.protocol == "dns":
            continue
        rows.append([b.name.split()[-1], b.protocol or "", b.endpoints or "", wire(b.packets), wire(b.bytes),
                     tls(b), wire(b.framing_overhead), wire(_retrans(b)), wire(_gaps(b)), *quic_again(b),
                     *([_quic_pair(b, b.quic_packets_missing)] if has_quic else []),
                     str(b.requests), str(b.pushes), str(b.max_streams_in_flight), _ms(b.ttfb)])
    if rows:
        parts.append(_table("Connections (TTFB: its first response byte from its own start, "
                            + ("its connect start in the browser log)" if log_alone else "the TCP SYN or QUIC Initial, else its first packet)"),
                            ["id", "protocol", "endpoints", "packets", "wire bytes", "TLS overhead", "framing", "retrans", "gaps",
                             *(["QUIC again", "PN gaps"] if has_quic else []), "reqs", "push", "max inflight", "TTFB"],
                            rows, {0, *range(3, 13 + 2 * has_quic)}))
        if has_quic:
            parts.append(_notes(["retrans, gaps: TCP's; '-' on a QUIC connection", QUIC_PN_NOTE]))
    if dns:
        parts.append(f"({len(dns)} DNS flows not listed; see --json)")
    if st.tcp_analysis and st.tcp_analysis["capture"]["tcp.analysis.flags"]:
        from .tcp_analysis import render_text as tcp_text

        parts.append(tcp_text(st.tcp_analysis))
    if st.completeness is not None:
        from . import completeness

        parts.append("Completeness\n" + "\n".join(completeness.render_text(st.completeness)))
    return "\n\n".join(parts)


# ------------------------------------------------------------------ protocol hierarchy (tshark -z io,phs)

PHS_RULE = "=" * 67


def protocol_hierarchy(an: Analysis, source: Any = None) -> list[dict[str, Any]] | None:
    """Wireshark's Statistics → Protocol Hierarchy (``tshark -q -z io,phs``): a tree of layer
    paths, each node ``{"protocol", "frames", "bytes", "children"}``, children in the order
    first seen (as tshark lists them).  A packet counts once in every node of its path, with
    its length on the wire (``frame.len``).

    The path is the packet's ``frame.protocols`` (analyzer.fields.frame.protocols: wirefall's
    layers by tshark's names) without ``ethertype`` (not a tree item in tshark).  It names each
    layer once: tshark's tree repeats a layer per PDU (``tls:http2:http2`` for two HTTP/2
    frames, ``quic:quic`` for coalesced QUIC packets) and names items wirefall does not
    decode (``tcp.segments``, ``data``, ``data-text-lines``, ``media``): below the first
    application layer tshark's nodes can differ (tests/test_phs32b.py lists where).  None
    without packets to read (a browser log alone, or the capture file gone); ``source``: an
    open PacketSource to read the packets from (else the file is opened and closed here).

    One pass over the packets, reading each one's link/IP/TCP/UDP headers (as the display
    filter does); a path string is resolved to its nodes once."""
    from .fields.frame import protocols
    from .fields.packet import PacketContext, PacketView

    if an.source != "capture":
        return None
    idx = an.index
    if not len(idx):
        return []
    src = source if source is not None else _source(an)
    if src is None:
        return None
    ctx = PacketContext(an, src)
    roots: list[dict[str, Any]] = []
    paths: dict[tuple[str, int], list[dict[str, Any]]] = {}
    orig = idx.origlen
    try:
        for n in range(1, len(idx) + 1):
            pv = PacketView(ctx, n)
            fp = protocols(pv)
            key = (fp, _quic_count(pv) if "quic" in fp else 1)
            nodes = paths.get(key)
            if nodes is None:
                nodes = []
                level = roots
                names: list[str] = []
                for name in key[0].split(":"):
                    if name == "ethertype" or not name:
                        continue
                    if name == "tls" and names and names[-1] in ("quic", "gquic"):
                        continue  # (QUIC's handshake is dissected inside its quic item: no tls item in tshark's tree)
                    names += [name] * (key[1] if name == "quic" else 1)
                for name in names:
                    node = next((c for c in level if c["protocol"] == name), None)
                    if node is None:
                        node = {"protocol": name, "frames": 0, "bytes": 0, "children": []}
                        level.append(node)
                    nodes.append(node)
                    level = node["children"]
                paths[key] = nodes
            size = orig[n - 1]
            for node in nodes:
                node["frames"] += 1
                node["bytes"] += size
    finally:
        if source is None:
            src.close()
    return roots


def _quic_count(pv) -> int:
    """QUIC packets in the packet's UDP datagram (RFC 9000 section 12.2: long-header packets
    coalesced by their Length field, a short-header one last), read from the headers as
    tshark does, whether or not they could be decrypted: tshark's tree has a quic item each."""
    L = pv.layers
    if L.udp is None:
        return 1
    data, p, end = pv.data, L.udp_off + 8, L.l4_end
    count = 0
    while p < end:
        count += 1
        b = data[p]
        if not b & 0x80 or end - p < 7:
            break  # (a short header runs to the datagram's end)
        version = int.from_bytes(data[p + 1 : p + 5], "big")
        q = p + 5
        q += 1 + data[q]  # DCID
        if q >= end:
            break
        q += 1 + data[q]  # SCID
        if version == 0 or q > end or (b >> 4) & 3 == 3:
            break  # version negotiation and Retry take the rest
        if (b >> 4) & 3 == 0:  # Initial: a token
            tlen, q = _varint(data, q)
            q += tlen
        length, q = _varint(data, q)
        if q > end:
            break
        p = q + length
    return max(count, 1)


def _varint(data: bytes, q: int) -> tuple[int, int]:
    """A QUIC variable-length integer at ``q``, and the offset after it (``quic_varint``); past
    the end a huge value (1 << 62), with ``q`` where it starts past the end, else the offset its
    first byte says it ends at."""
    try:
        return quic_varint(data, q)
    except IndexError:
        return 1 << 62, (q + (1 << (data[q] >> 6)) if q < len(data) else q)


def phs_rows(tree: list[dict[str, Any]] | None) -> list[tuple[int, dict[str, Any]]]:
    """``protocol_hierarchy``'s nodes in tree order, each with its depth (0: a top node): what
    the text, the TUI and the web page list, one row a node."""
    out: list[tuple[int, dict[str, Any]]] = []
    stack = [(0, nd) for nd in reversed(tree or [])]
    while stack:
        depth, nd = stack.pop()
        out.append((depth, nd))
        stack.extend((depth + 1, ch) for ch in reversed(nd["children"]))
    return out


def render_phs(tree: list[dict[str, Any]] | None, filt: str = "") -> str:
    """The tree as ``tshark -q -z io,phs`` prints it (two spaces per level, the name in 40
    columns)."""
    lines = ["", PHS_RULE, "Protocol Hierarchy Statistics", f"Filter: {filt}", ""]
    if tree is None:
        lines.append("(no packets to count: the input is a browser log, or its capture file cannot be read)")
    lines += [f"{'  ' * depth + nd['protocol']:<40} frames:{nd['frames']} bytes:{nd['bytes']}" for depth, nd in phs_rows(tree)]
    lines.append(PHS_RULE)
    return "\n".join(lines)
