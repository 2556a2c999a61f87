"""A ``BrowserLog`` as the timeline model: an ``Analysis`` with connections and exchanges
and a ``PacketIndex`` of zero packets, so that the waterfall, statistics, exports and
compare read a HAR, NetLog or qlog as they read a capture.  Fields the log does not give
stay None (a HAR names no client port: the connection's client is ``("", 0)``, shown as
unknown; no log gives packet numbers); ``Analysis.source`` says which log it was."""
from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from wirefall.dissectors.registry import over_quic

from ..model import Analysis, Connection, Exchange, PacketIndex, QuicInfo, TlsInfo
from .har import MAX_SIZE
from .records import TIME_FIELDS, BrowserLog, LogConnection, LogRequest, NotSent, not_sent, not_sent_of

UNKNOWN_ADDR = ("", 0)
KIND_NAME = {"har": "a HAR", "netlog": "a Chrome NetLog", "qlog": "a qlog"}


# each phase of ``phases`` after ``blocked``: (name, the log's time it begins at, the one it ends at)
_SPANS = (("dns", "dns_start", "dns_end"), ("connect", "connect_start", "connect_end"), ("ssl", "ssl_start", "ssl_end"),
          ("send", "send_start", "send_end"), ("wait", "send_end", "response_start"), ("receive", "response_start", "response_end"))
PHASE_NAMES = ("blocked",) + tuple(n for n, _a, _b in _SPANS)


def sequential(spans: list[list]) -> list[list]:
    """``[name, begin, end]`` spans in order, made sequential as the waterfall makes a row's
    phases (``waterfall.exchange_phases``): a span never begins before the previous one began,
    where two overlap the earlier ends where the later begins, and none ends before it
    begins — so no length is negative.  In place; returns ``spans``."""
    for i, sp in enumerate(spans):
        if i:
            prev = spans[i - 1]
            sp[1] = max(sp[1], prev[1])
            if sp[1] < prev[2]:
                prev[2] = sp[1]
        sp[2] = max(sp[1], sp[2])
    return spans


def phases(r: LogRequest) -> dict[str, float | None]:
    """The browser's own phases in seconds (HAR's names and order; None: not in the log),
    between the log's own moments, sequential (``sequential``: never negative) as the wire's
    row phases are: a response that began before the request's end cuts the send there
    and leaves no wait (0)."""
    first = next((t for t in (r.dns_start, r.connect_start, r.send_start) if t is not None), None)
    # queueing: from the request's start to its first moment; none (None, not 0) where a HAR
    # says -1 ("does not apply") and leaves no gap
    queued = r.start is not None and first is not None and (first > r.start or not r.blocked_unknown)
    spans: list[list] = [["blocked", r.start, first]] if queued else []
    out: dict[str, float | None] = dict.fromkeys(PHASE_NAMES)
    for name, a, b in _SPANS:
        ta, tb = getattr(r, a), getattr(r, b)
        if ta is not None and tb is not None:
            if name == "wait" and tb < ta:  # the response began before the request ended: no wait (the send is cut there)
                out["wait"] = 0.0
                continue
            spans.append([name, ta, tb])
    for name, a, b in sequential(spans):
        out[name] = b - a
    return out


WIRE_LENGTHS = ("send", "wait", "receive")


def wire_lengths(e: Exchange) -> dict[str, float | None]:
    """The wire's send, wait and receive of ``e`` in seconds — its row's phases
    (``waterfall.exchange_phases``, the ``phases`` of ``requests --json``), the definition
    the browser's ``phases`` follow — None where the exchange has no such phase."""
    from ..waterfall import exchange_phases

    out: dict[str, float | None] = dict.fromkeys(WIRE_LENGTHS)
    for name, a, b in exchange_phases(e):
        if name in out:
            out[name] = (out[name] or 0.0) + (b - a)
    return out


def record(r: LogRequest, log: BrowserLog) -> dict:
    """The ``browser`` object of an exchange (docs/JSON.md): what the log says of the request."""
    return {
        "source": log.kind, "file": log.path, "id": r.id, "url": r.url, "method": r.method, "status": r.status,
        "protocol": r.protocol, "stream_id": r.stream_id, "priority": r.priority, "initiator": r.initiator,
        "initiator_type": r.initiator_type, "resource_type": r.resource_type, "cache": r.cache, "error": r.error,
        "times": {k: getattr(r, k) for k in TIME_FIELDS}, "phases": phases(r), "offsets": None, "durations": None,
        # a HAR's headersSize: the size of the header text the browser reports (for HTTP/2 and
        # HTTP/3 an HTTP/1-style reconstruction, uncompressed), not bytes on the wire
        "headers_size": {"request": r.request_header_bytes, "response": r.response_header_bytes},
        # the log's own word that the request is not its page's (a HAR entry without pageref in a
        # HAR of pages; wirefall's own ``_background_reason``): opened alone, a background row
        "background": r.background,
        # whose request it is, as the log's own facts (a NetLog's; null where the log gives
        # none): the reason above is text made from them
        "isolation": ({"browser_initiated": r.browser_initiated, "network_isolation_key": r.isolation_key,
                       "top_frame_site": r.top_frame_site, "frame_site": r.frame_site,
                       "site_for_cookies": r.site_for_cookies}
                      if r.isolation_key is not None or r.browser_initiated else None),
    }


def _suite_name(cid: int | None) -> str | None:
    if cid is None:
        return None
    try:
        from wirefall.dissectors.tls import suite_name

        return suite_name(cid)
    except Exception:  # noqa: BLE001 - a name is a nicety
        return None


def to_analysis(log: BrowserLog) -> Analysis:
    an = Analysis(path=log.path, index=PacketIndex(), capture_format=log.kind, compression=log.compression)
    an.source = log.kind
    an.warnings.extend(log.warnings)
    sent = [r for r in log.requests if r.sent and (r.send_start is not None or r.response_start is not None)]
    first_t: dict[str, float] = {}
    for r in sent:
        t = r.start if r.start is not None else r.send_start
        if r.connection is not None and t is not None:
            first_t[r.connection] = min(first_t.get(r.connection, t), t)
    conns: list[LogConnection] = sorted(
        log.connections.values(),
        key=lambda c: (c.connect_start if c.connect_start is not None else first_t.get(c.key, float("inf")), c.key))
    cid: dict[str, int] = {}
    model_conns: dict[int, Connection] = {}
    why = f"not a capture: {KIND_NAME.get(log.kind, log.kind)} holds no TLS record"
    for i, lc in enumerate(conns):
        c = Connection(i, lc.transport, lc.client or UNKNOWN_ADDR, lc.server or UNKNOWN_ADDR, protocol=lc.protocol,
                       connect_start=lc.connect_start, connect_end=lc.connect_end, tls_start=lc.tls_start, tls_end=lc.tls_end)
        if lc.transport == "udp":
            c.quic = QuicInfo(version=lc.quic_version, sni=lc.host, alpn=lc.alpn, scid=lc.scid, dcid=lc.dcid,
                              decrypted=False, reason=why.replace("TLS record", "QUIC packet"))
        elif lc.tls_version or lc.alpn or lc.tls_end is not None:
            c.tls = TlsInfo(version=lc.tls_version, cipher_suite=lc.cipher_suite or _suite_name(lc.cipher_suite_id),
                            cipher_suite_id=lc.cipher_suite_id, sni=lc.host, alpn=lc.alpn, resumed=bool(lc.resumed),
                            decrypted=False, reason=why)
        cid[lc.key] = i
        model_conns[i] = c
        an.connections.append(c)
    # the requests that never reached the network (served from a cache, failed or cancelled
    # before sending) are rows too, as DevTools lists them — on one connection of their own,
    # endpoints unknown (they had none) —, in start order among the others
    inf = float("inf")
    rows: list[tuple[float, str, LogRequest, NotSent | None]] = []
    for r in sent:
        t = r.send_start if r.send_start is not None else r.response_start
        rows.append((inf if t is None else t, r.id, r, None))
    for r in log.requests:
        ns = not_sent(r)
        if ns is not None and r.start is not None:  # (a request of no time cannot be placed)
            rows.append((r.start, r.id, r, ns))
    rows.sort(key=lambda x: (x[0], x[1]))
    no_net: int | None = None
    unsent_rows: dict[str, int] = {}  # the log's request id -> its row's
    for n, (_t, _id, r, ns) in enumerate(rows, 1):
        if ns is not None:
            if no_net is None:
                c = no_network_connection(an)
                no_net = c.id
                model_conns[no_net] = c
            e = exchange(n, no_net, r, log, ns)
            an.exchanges.append(e)
            unsent_rows[r.id] = n
            continue
        if r.connection in cid:
            conn = cid[r.connection]
        else:  # a request the log ties to no connection: one of its own, endpoints unknown
            conn = len(an.connections)
            c = Connection(conn, "udp" if over_quic(r.protocol) else "tcp", UNKNOWN_ADDR, UNKNOWN_ADDR, protocol=r.protocol)
            an.connections.append(c)
            model_conns[conn] = c
        e = exchange(n, conn, r, log)
        an.exchanges.append(e)
        c = model_conns[conn]
        if c.protocol is None:
            c.protocol = e.protocol
    of_conn: dict[int, list[Exchange]] = {}
    for e in an.exchanges:
        of_conn.setdefault(e.connection, []).append(e)
    seen = {cid[lc.key]: (lc.first_seen, lc.last_seen) for lc in conns if lc.first_seen is not None}
    for c in an.connections:
        span(c, of_conn.get(c.id, ()), seen.get(c.id))
    # (the analysis is on the log's own clock: its page timings need no placing)
    pages = [dict(p, source=log.kind, clock_offset=0.0, clock_offset_from="log") for p in log.pages]
    an.browser = {"logs": [summary(log, sent=len(sent), **not_sent_fields(log, unsent_rows))], "pages": pages}
    return an


# methods whose requests carry no body (RFC 9110 §9.3: a body has no defined meaning): a log's
# request of one of these without a body size is an empty one
BODILESS_METHODS = frozenset(("GET", "HEAD", "OPTIONS", "DELETE", "TRACE", "CONNECT"))


def no_network_connection(an: Analysis) -> Connection:
    """A new connection of ``an`` for the rows of a browser log's requests that never reached
    the network (served from a cache, failed or cancelled before sending): one of their own,
    endpoints unknown — they had none —, the next id (``model.no_network_connections``)."""
    c = Connection(len(an.connections), "tcp", UNKNOWN_ADDR, UNKNOWN_ADDR)
    an.connections.append(c)
    return c


def span(c: Connection, exs: Iterable[Exchange], seen: tuple | None = None) -> None:
    """``c.start`` and ``c.end``: its set-up's and its exchanges' first and last moment (as
    the log gives them); where it gives neither, ``seen``: the log's first and last event of
    the connection (a NetLog's QUIC session that began before the log and carried none of its
    requests: without it the connection read as started at the epoch, 1.7e9 s before the page);
    unchanged when there is nothing."""
    ts = [t for t in (c.connect_start, c.connect_end, c.tls_end) if t is not None]
    ts += [t for e in exs for t in (e.request_start, e.response_end, e.response_start) if t is not None]
    if not ts and seen is not None:
        ts = [t for t in seen if t is not None]
    if ts:
        c.start, c.end = min(ts), max(ts)


MAX_NOT_SENT = 50  # not-sent requests listed in a log's summary (all counted)


def not_sent_fields(log: BrowserLog, rows: dict[str, int]) -> dict:
    """A log's ``not_sent`` (count), ``not_sent_reasons`` (count per reason),
    ``not_sent_requests`` (the first ``MAX_NOT_SENT``: ``NotSent.to_json`` and ``row``, the id
    of its row or None) and ``not_sent_rows`` (how many are rows) for its summary; ``rows``:
    the log's request id -> the id of the exchange that is its row."""
    ns = not_sent_of(log)
    reasons: dict[str, int] = {}
    for n in ns:
        reasons[n.reason] = reasons.get(n.reason, 0) + 1
    return {"not_sent": len(ns), "not_sent_reasons": reasons,
            "not_sent_requests": [dict(n.to_json(), row=rows.get(n.id)) for n in ns[:MAX_NOT_SENT]],
            "not_sent_rows": sum(1 for n in ns if n.id in rows)}


def summary(log: BrowserLog, **kw) -> dict:
    """A log's entry in ``Analysis.browser["logs"]``; a HAR's also says which of its pages
    is shown (``page_shown``: null when all; ``pages.select``) and how many it has."""
    shown = log.page_shown
    others = shown["other_pages_entries"] if shown else 0
    out = {"kind": log.kind, "file": log.path, "creator": log.creator, "requests": len(log.requests) + others,
           "skipped": log.skipped, "warnings": list(log.warnings), **kw}
    if log.kind == "har":
        from .pages import notice

        out["pages_in_log"] = shown["of"] if shown else len(log.pages)
        out["page_shown"] = dict(shown, notice=notice(shown)) if shown else None
        out["other_pages"] = others
    return out


# the exchange's header byte counts; a browser log's exchange has them "unknown" in ``sources``
# (JSON null) unless it is wirefall's own HAR
HEADER_BYTE_FIELDS = ("request_header_bytes_wire", "request_header_bytes_decoded", "response_header_bytes_wire",
                      "response_header_bytes_decoded")

# an HTTP/3 exchange's QPACK encoder-stream byte counts: "unknown" in ``sources`` (JSON null)
QPACK_BYTE_FIELDS = ("request_qpack_encoder_bytes", "response_qpack_encoder_bytes")


def exchange(n: int, conn: int, r: LogRequest, log: BrowserLog, unsent: NotSent | None = None) -> Exchange:
    """The exchange of ``r``; ``unsent``: why it never reached the network (a row with no wire:
    from its start, the response where a cache served one; ``error`` the net error's name)."""
    # (a request that never reached the network spoke no protocol unless the log says one — a
    # cache hit's stored response —: "", not HTTP/1.1, which it was counted as before 2026-12-04)
    e = Exchange(id=n, connection=conn, protocol=r.protocol or ("http/1.1" if unsent is None else ""), stream_id=r.stream_id,
                 method=r.method, url=r.url, status=r.status, pushed=r.pushed)
    if r.url:
        try:
            u = urlsplit(r.url)
            e.scheme = u.scheme or None
            e.authority = u.netloc or None
            e.path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        except ValueError:
            pass
    e.request_headers = list(r.request_headers)
    e.response_headers = list(r.response_headers)
    # header bytes: a browser log does not know the wire's (a HAR's headersSize is the browser's
    # uncompressed HTTP/1-style header text: ``browser.headers_size``), so they stay 0 and
    # ``sources`` marks them "unknown" (JSON null) — but wirefall's own HAR carries its capture's
    # wire and decoded sizes (``_header_bytes_wire`` / ``_header_bytes_decoded``), read below
    sizes_known = False
    unknown_sizes: list[str] = []
    e.request_body_bytes = r.request_body_bytes or 0
    for k, v in e.response_headers:
        if k.lower() == "content-encoding":
            e.content_encoding = v
            break
    body = r.response_body_bytes
    if body is None and r.response_body_decoded_bytes is not None:
        from ..sessions import needs_decoder  # (here: a log opened alone does not load the sessions)

        if not needs_decoder(e.content_encoding):
            # (a NetLog of HTTP/1.1 counts only the bytes its filters passed on: with no
            # Content-Encoding they are the body's own — page-h1's hero.jpg 97,342, shown 0 before)
            body = r.response_body_decoded_bytes
    e.response_body_bytes = body or 0
    e.response_body_decoded_bytes = r.response_body_decoded_bytes
    e.content_type = r.content_type
    e.request_start, e.request_end = r.send_start, r.send_end
    e.response_start, e.response_end = r.response_start, r.response_end
    if unsent is not None:  # no send: the row begins where the request did
        e.request_start = e.request_end = r.start
        if e.response_start is not None and r.start is not None and e.response_start < r.start:
            e.response_start = r.start
        if e.response_end is not None and e.response_start is not None and e.response_end < e.response_start:
            e.response_end = e.response_start
        if unsent.reason in ("failed", "cancelled"):
            e.error = unsent.net_error_name or unsent.reason
    elif r.error:  # sent, then failed: the log's error (a HAR's ``_error``, wirefall's own included)
        e.error = r.error[:500]
    e.response_headers_end = e.response_start
    x = r.extra
    if x:  # wirefall's own HAR: what it wrote of the exchange
        wire = x.get("_priority_wire", x.get("_priority"))  # (``_priority`` held it until 2026-12-03)
        if isinstance(wire, dict):
            e.priority = wire
        pp = x.get("_push_parent")
        if isinstance(pp, int) and not isinstance(pp, bool) and 0 <= pp < 1 << 62:  # (the pushing stream's id)
            e.push_parent = pp
        if isinstance(x.get("_reset"), str):
            e.reset = x["_reset"][:200]
        hw, hb = x.get("_header_bytes_wire"), x.get("_header_bytes_decoded")
        if isinstance(hw, dict) and isinstance(hb, dict):
            sizes_known = True
            for attr, size in (("request_header_bytes_wire", hw.get("request")), ("response_header_bytes_wire", hw.get("response")),
                            ("request_header_bytes_decoded", hb.get("request")), ("response_header_bytes_decoded", hb.get("response"))):
                known = isinstance(size, int) and not isinstance(size, bool) and 0 <= size <= MAX_SIZE
                setattr(e, attr, size if known else 0)
                if not known:  # (null: wirefall's HAR of a browser log's exchange, whose sizes it did not know)
                    unknown_sizes.append(attr)
    e.browser = record(r, log)
    if unsent is not None:
        e.browser["not_sent"] = unsent.label
    src: dict[str, str] = {}
    val: object
    for f, val in (("url", e.url), ("method", e.method), ("status", e.status), ("stream_id", e.stream_id),
                 ("request_start", e.request_start), ("request_end", e.request_end), ("response_start", e.response_start),
                 ("response_end", e.response_end), ("priority_name", r.priority), ("initiator", r.initiator)):
        if val is not None:
            src[f] = "browser"
    if e.request_headers or e.response_headers:
        src["headers"] = "browser"
    for f in HEADER_BYTE_FIELDS if not sizes_known else unknown_sizes:
        src[f] = "unknown"
    if body is None and e.response_start is not None and unsent is None:
        src["response_body_bytes"] = "unknown"  # (a compressed HTTP/1.1 body in a NetLog: JSON null, not 0)
    if r.request_body_bytes is None and unsent is None and (e.method or "GET").upper() not in BODILESS_METHODS:
        # a request that may carry a body whose size the log does not give (WebPageTest's HAR: POSTs
        # with bodySize -1 and no postData text): unknown — JSON null, HAR -1 —, not an empty body
        src["request_body_bytes"] = "unknown"
    if e.protocol.startswith("h3"):  # the QPACK encoder-stream bytes: no log gives them (wirefall's HAR keeps none)
        for f in QPACK_BYTE_FIELDS:
            src[f] = "unknown"
    e.sources = src
    return e
