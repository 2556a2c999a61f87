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
from wirefall.dissectors.registry import REGISTRY, over_quic

from .model import Analysis, Connection, Exchange

STATS_VERSION = 1
# framing overhead per frame of the HTTP framing layers whose frames do not say it themselves
# (HTTP/3's carry ``header_bytes``): the registry's ``frame_header`` of each protocol that
# carries header blocks (HTTP/2 9, SPDY 8; TLS record headers are the TLS overhead)
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
                 tcp_retransmissions: list[int] | None = None, requests: int = 0,
                 pushes: int = 0, resets: int = 0, req_headers: list[int] = FACTORY, resp_headers: list[int] = FACTORY,
                 req_headers_first: list[int] = FACTORY, resp_headers_first: list[int] = FACTORY, req_headers_rest: list[int] = FACTORY,
                 resp_headers_rest: list[int] = FACTORY, qpack_encoder: list[int] = FACTORY, request_body: int = 0,
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

    def __init__(self, file: str, capture: Block, protocols: dict[str, Block], connections: list[Block], packets_total: int = 0,
                 bytes_total: int = 0, duration: float = 0.0, completeness: Any = None, background_requests: int = 0,
                 tcp_analysis: dict | None = None, browser_events: dict | None = None) -> None:
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


def _add2(a: list[int], b) -> None:
    a[0] += b[0]
    a[1] += b[1]


def _reduction(pair: list[int]) -> float | None:
    wire, dec = pair
    return None if dec <= 0 else 1.0 - wire / dec


def _start(e: Exchange) -> float | None:
    return next((t for t in (e.request_start, e.request_end, e.response_start, e.response_end) if t is not None), None)


def _end(e: Exchange) -> float | None:
    return next((t for t in (e.response_end, e.response_start, e.request_end, e.request_start) if t is not None), None)


def max_in_flight(exs: list[Exchange]) -> int:
    """Most exchanges open at once (from request start to response end)."""
    ev = []
    for e in exs:
        a, b = _start(e), _end(e)
        if a is None:
            continue
        ev.append((a, 1))
        ev.append((b if b is not None else a, -1))
    ev.sort(key=lambda x: (x[0], -x[1]))  # starts before ends at the same instant
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best


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


def _fill_exchanges(b: Block, exs: list[Exchange]) -> None:
    for e in exs:
        if e.pushed:
            b.pushes += 1
        else:
            b.requests += 1
        if e.reset:
            b.resets += 1
        _add2(b.req_headers, (req_wire(e), e.request_header_bytes_decoded))
        _add2(b.resp_headers, (resp_wire(e), e.response_header_bytes_decoded))
        _add2(b.qpack_encoder, (e.request_qpack_encoder_bytes, e.response_qpack_encoder_bytes))
        b.request_body += e.request_body_bytes
        b.response_body[0] += e.response_body_bytes
        b.response_body[1] += e.response_body_bytes if e.response_body_decoded_bytes is None else e.response_body_decoded_bytes


def _first_rest(b: Block, exs: list[Exchange]) -> None:
    """Split header bytes of one connection's exchanges into first block / rest."""
    reqs = sorted((e for e in exs if e.request_header_bytes_decoded or req_wire(e)),
                  key=lambda e: (e.request_start if e.request_start is not None else float("inf"), e.id))
    resps = sorted((e for e in exs if e.response_header_bytes_decoded or resp_wire(e)),
                   key=lambda e: (e.response_start if e.response_start is not None else float("inf"), e.id))
    for i, e in enumerate(reqs):
        _add2(b.req_headers_first if i == 0 else b.req_headers_rest, (req_wire(e), e.request_header_bytes_decoded))
    for i, e in enumerate(resps):
        _add2(b.resp_headers_first if i == 0 else b.resp_headers_rest, (resp_wire(e), e.response_header_bytes_decoded))


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
    if c.tls is not None:
        _add2(b.tls_record_overhead, c.tls.record_overhead)
    b.first_time = c.start if b.first_time is None else min(b.first_time, c.start)
    b.last_time = c.end if b.last_time is None else max(b.last_time, c.end)


def compute(an: Analysis, tcp_analysis: bool = False) -> Stats:
    idx = an.index
    t0 = idx.ts[0] if len(idx) else None
    exs_by_conn: dict[int, list[Exchange]] = {}
    for e in an.exchanges:
        exs_by_conn.setdefault(e.connection, []).append(e)
    framing: dict[int, list[int]] = {}
    frames_n: dict[int, int] = {}
    for f in an.frames:
        frames_n[f.connection] = frames_n.get(f.connection, 0) + 1
        hb = (f.fields or {}).get("header_bytes") if f.fields else None
        if hb is None:
            hb = FRAME_HEADER_BYTES.get(f.protocol)
        if hb is not None:
            fr = framing.setdefault(f.connection, [0, 0])
            fr[f.direction] += int(hb)

    cap = Block(name="capture")
    protos: dict[str, Block] = {}
    conns: list[Block] = []
    for c in an.connections:
        exs = exs_by_conn.get(c.id, [])
        proto = conn_protocol(c, exs)
        cb = Block(name=f"connection {c.id}", endpoints=c.label, protocol=proto)
        _fill_connection(cb, c)
        _fill_exchanges(cb, exs)
        _first_rest(cb, exs)
        cb.frames = frames_n.get(c.id, 0)
        if c.id in framing:
            cb.framing_overhead = list(framing[c.id])
        cb.max_streams_in_flight = max_in_flight(exs)
        firsts = [(e, e.response_start) for e in exs if e.response_start is not None]
        if firsts:
            _, rs = min(firsts, key=lambda er: (_start(er[0]), er[0].id))
            base = c.connect_start if c.connect_start is not None else c.start
            cb.ttfb = rs - base
        ends = [e.response_end for e in exs if e.response_end is not None]
        if ends:
            cb.page_load_time = max(ends) - (c.connect_start if c.connect_start is not None else c.start)
        conns.append(cb)
        pb = protos.setdefault(proto, Block(name=proto))
        for blk in (cap, pb):
            _fill_connection(blk, c)
            _fill_exchanges(blk, exs)
            for k in ("req_headers_first", "resp_headers_first", "req_headers_rest", "resp_headers_rest"):
                _add2(getattr(blk, k), getattr(cb, k))
            blk.frames += cb.frames
            if cb.framing_overhead is not None:
                if blk.framing_overhead is None:
                    blk.framing_overhead = [0, 0]
                _add2(blk.framing_overhead, cb.framing_overhead)
    by_proto: dict[str, list[Exchange]] = {}
    for c, cb in zip(an.connections, conns):
        by_proto.setdefault(cb.protocol or "", []).extend(exs_by_conn.get(c.id, []))
    for pname, pb in protos.items():
        pexs = by_proto.get(pname, [])
        pb.max_streams_in_flight = max_in_flight(pexs)
        _times(pb, pexs, t0)
    cap.max_streams_in_flight = max_in_flight(an.exchanges)
    # the capture's TTFB and page load count the page, not background traffic beside it
    from . import completeness
    from .waterfall import page_of

    page = page_of(an)
    page_exs = [e for e in an.exchanges if e.id not in page.background] if page.background else an.exchanges
    p0 = page.start if page.start is not None else t0
    _times(cap, page_exs, p0)
    dur = (idx.ts[-1] - idx.ts[0]) if len(idx) else 0.0
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
    return Stats(file=an.path, capture=cap, protocols=protos, connections=conns, packets_total=len(idx),
                 bytes_total=int(sum(idx.origlen)), duration=dur, completeness=completeness.compute(an),
                 background_requests=len(page.background), tcp_analysis=ta_stats, browser_events=events)


def _plus(a: list[int] | None, b: list[int]) -> list[int]:
    return [x + y for x, y in zip(a or [0, 0], b)]


def _times(b: Block, exs: list[Exchange], t0: float | None) -> None:
    """Capture/protocol level: TTFB = first response byte of the first exchange measured from
    the first packet of the capture (navigation as the wire sees it: DNS, connect, TLS
    included); page load = last byte of the last response from the first packet.  For the
    capture block, the page's exchanges from the page's first packet (background traffic
    apart: analyzer.waterfall.page_of)."""
    if t0 is None:
        return
    firsts = [(e, e.response_start) for e in exs if e.response_start is not None and _start(e) is not None]
    if firsts:
        _, rs = min(firsts, key=lambda er: (_start(er[0]), er[0].id))
        b.ttfb = rs - t0
    ends = [e.response_end for e in exs if e.response_end is not None]
    if ends:
        b.page_load_time = max(ends) - t0


# ------------------------------------------------------------------------------- output


def _retrans(b: Block) -> list[int]:
    """The text tables' "retrans" column: tshark's count when the TCP analysis ran."""
    return b.tcp_retransmissions if b.tcp_retransmissions is not None else b.retransmissions


def _hdr_dict(pair: list[int]) -> dict[str, Any]:
    r = _reduction(pair)
    return {"wire": pair[0], "decoded": pair[1], "reduction": None if r is None else round(r, 4)}


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
        "framing_overhead": b.framing_overhead,
        "frames": b.frames,
        "retransmissions": b.retransmissions,
        "retransmitted_bytes": b.retransmitted_bytes,
        "gaps": b.gaps,
        **({"tcp_retransmissions": b.tcp_retransmissions} if b.tcp_retransmissions is not None else {}),
        "requests": b.requests,
        "pushes": b.pushes,
        "resets": b.resets,
        "headers": {
            "request": _hdr_dict(b.req_headers),
            "response": _hdr_dict(b.resp_headers),
            "request_first": _hdr_dict(b.req_headers_first),
            "request_rest": _hdr_dict(b.req_headers_rest),
            "response_first": _hdr_dict(b.resp_headers_first),
            "response_rest": _hdr_dict(b.resp_headers_rest),
            "qpack_encoder_bytes": list(b.qpack_encoder),
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
        # a HAR laid over: its DOMContentLoaded / load event in seconds from the page's start (as ttfb, page_load_time)
        "browser_events": {k: t for k, (_label, t) in st.browser_events.items()} if st.browser_events else None,
        "completeness": completeness.to_dict(st.completeness) if st.completeness is not None else None,
        **({"tcp_analysis": st.tcp_analysis} if st.tcp_analysis is not None else {}),
    }


def _n(x: int) -> str:
    return f"{x:,}"


def _pair(p: list[int] | None) -> str:
    return "-" if p is None else f"{p[0]:,} / {p[1]:,}"


def _pct(pair: list[int]) -> str:
    r = _reduction(pair)
    return "-" if r is None else f"{r * 100:.1f}%"


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


def _tls_pair(b: Block, protocol: str | None) -> str:
    """The TLS-overhead cell: "-" on QUIC (its packet protection is not TLS records and is not
    counted; 0 there would read as none)."""
    return "-" if over_quic(protocol) else _pair(b.tls_record_overhead)


def render_text(st: Stats) -> str:
    c = st.capture
    parts = []
    parts.append(
        f"{st.file}: {st.packets_total:,} packets, {st.bytes_total:,} bytes, {st.duration:.3f} s; "
        f"{c.connections} connections, {c.requests} requests, {c.pushes} pushed, {c.resets} reset; "
        f"max {c.max_streams_in_flight} in flight; TTFB {_ms(c.ttfb)}, page load {_ms(c.page_load_time)} "
        f"(from the {'page' + chr(39) + 's ' if st.background_requests else ''}first packet)"
        + (f"; {st.background_requests} background request{'s' * (st.background_requests != 1)} not counted in the page"
           if st.background_requests else "")
        + ("; " + ", ".join(f"{label} {_ms(t)}" for label, t in st.browser_events.values()) if st.browser_events else "")
    )
    order = sorted(st.protocols.values(), key=lambda b: (-b.requests, b.name))
    rows = []
    for b in order + [c]:
        rows.append([b.name if b is not c else "all", str(b.connections), str(b.requests), str(b.pushes),
                     _pair(b.packets), _pair(b.bytes), _pair(b.payload), _tls_pair(b, b.name if b is not c else None),
                     _pair(b.framing_overhead), _pair(_retrans(b)), _ms(b.ttfb), _ms(b.page_load_time)])
    parts.append(_table("Traffic (client→server / server→client; TLS overhead: TLS records' headers, MACs or tags and padding; "
                        "'-' on QUIC)",
                        ["protocol", "conns", "reqs", "push", "packets", "wire bytes", "payload", "TLS overhead", "framing", "retrans", "TTFB", "load"],
                        rows, set(range(1, 12))))
    rows = []
    for b in order + [c]:
        if not (b.req_headers[1] or b.resp_headers[1] or b.req_headers[0] or b.resp_headers[0]):
            continue
        name = b.name if b is not c else "all"
        for label, allp, first, rest in (("request", b.req_headers, b.req_headers_first, b.req_headers_rest),
                                         ("response", b.resp_headers, b.resp_headers_first, b.resp_headers_rest)):
            rows.append([name, label, _n(allp[0]), _n(allp[1]), _pct(allp), _pair(first), _pct(first), _pair(rest), _pct(rest)])
    if rows:
        parts.append(_table("Header bytes (wire = header block on the wire, for HTTP/3 with the QPACK encoder-stream insertions it uses; decoded = header names + values; saved = 1 − wire/decoded, negative = framing costs more than it saves)",
                            ["protocol", "", "wire", "decoded", "saved", "first block w/d", "saved", "later blocks w/d", "saved"],
                            rows, {2, 3, 4, 5, 6, 7, 8}))
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
    rows = []
    dns = [b for b in st.connections if b.protocol == "dns"]
    for b in st.connections:
        if b.protocol == "dns":
            continue
        rows.append([b.name.split()[-1], b.protocol or "", b.endpoints or "", _pair(b.packets), _pair(b.bytes),
                     _tls_pair(b, b.protocol), _pair(b.framing_overhead), _pair(_retrans(b)), _pair(b.gaps),
                     str(b.requests), str(b.pushes), str(b.max_streams_in_flight), _ms(b.ttfb)])
    if rows:
        parts.append(_table("Connections",
                            ["id", "protocol", "endpoints", "packets", "wire bytes", "TLS overhead", "framing", "retrans", "gaps",
                             "reqs", "push", "max inflight", "TTFB"], rows, {0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
    if dns:
        parts.append(f"({len(dns)} DNS flows not listed; see --json)")
    if st.tcp_analysis and st.tcp_analysis["capture"]["tcp.analysis.flags"]:
        from .tcp_analysis import render_text as tcp_text

        parts.append(tcp_text(st.tcp_analysis))
    if st.completeness is not None:
        from . import completeness

        parts.append("Completeness\n" + "\n".join(completeness.render_text(st.completeness)))
    return "\n\n".join(parts)
