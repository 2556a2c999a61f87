"""Lay a browser log over a capture's analysis: match each request the browser sent to its
wire exchange, fill in what the wire cannot know, and put the two timings side by side.

Matching, most certain first:

1. Connections.  A log connection with both endpoints (NetLog: TCP_CONNECT's local and
   remote address, a QUIC session's self and peer address; qlog ``connection_started``) is
   the wire connection of the same transport and 4-tuple (nearest in time if a port was
   reused); a qlog trace is the QUIC connection whose connection IDs its packets carry; a
   HAR connection (server address, no client port) is the wire connection to that server
   whose handshake began nearest the log's, each wire connection taken once; without an
   address, the SNI of the URL's host.
2. Requests: first, every request on a matched connection whose stream id (HTTP/2,
   HTTP/3) both sides know, to the exchange of that stream; then the others in the order
   the browser sent them, to the unmatched exchange on that connection (of no other known
   stream id; a request over before the capture's first packet is not matched) (or, when the log's connection was not matched, on any connection,
   within ``TOLERANCE`` seconds) with the same method and URL nearest in time, an exchange
   whose URL the capture does not know (None, ``<unknown>`` in it: HPACK/QPACK entries the
   capture never saw, or only a path: the authority was such an entry) matching any URL
   with that path after exact ones.

Filled from the log where the wire lacks them: the URL (scheme, authority, path), the
method, the status, header lists holding ``<unknown>``, the content type.  Added to every
matched exchange: ``browser`` (``build.record``: the log's times, phases, priority name,
initiator, plus ``offsets`` — browser minus wire, seconds, at each phase boundary:
request_start, request_end, response_start, response_end and, for the request that opened
the connection, connect_start, connect_end, tls_end — and ``durations``: browser minus
wire length of send, wait and receive) and ``sources`` (each field: "wire", "browser", or
"inferred" for the match itself when it rests on time alone).  The analysis gets a summary
of the overlay in ``browser["logs"]`` and the log's page timings in ``browser["pages"]``.
"""
from __future__ import annotations

import ipaddress
import statistics
from typing import Any
from urllib.parse import urlsplit

from ..model import Analysis, Connection, Exchange
from .build import record
from .records import BrowserLog, LogRequest

TOLERANCE = 10.0  # seconds between a log request and a wire exchange on unmatched connections
UNKNOWN = "<unknown>"
MAX_LISTED = 50  # unmatched requests named in the summary
OFFSET_POINTS = ("request_start", "request_end", "response_start", "response_end", "connect_start", "connect_end", "tls_end")
DURATIONS = ("send", "wait", "receive")


def _addr(a: Any) -> str:
    try:
        return str(ipaddress.ip_address(a))
    except ValueError:
        return str(a).lower()


def _ep(t: tuple[str, int] | None) -> tuple[str, int] | None:
    return None if t is None or not t[0] else (_addr(t[0]), t[1])


def _norm_url(u: str | None) -> str | None:
    if not u or UNKNOWN in u:
        return None
    try:
        p = urlsplit(u)
        host = (p.hostname or "").lower()
        port = p.port
    except ValueError:
        return u
    scheme = p.scheme.lower()
    if port is None or (scheme, port) in (("https", 443), ("http", 80)):
        netloc = host
    else:
        netloc = f"{host}:{port}"
    return f"{scheme}://{netloc}{p.path or '/'}{'?' + p.query if p.query else ''}"


def _wire_url(e: Exchange) -> str | None:
    """The exchange's URL if the capture knows all of it (else None: any log URL may match)."""
    if e.url and UNKNOWN not in e.url and "://" in e.url:
        return _norm_url(e.url)
    return None


def _path(u: str | None) -> str | None:
    if not u:
        return None
    try:
        p = urlsplit(u)
    except ValueError:
        return None
    return (p.path or "/") + (f"?{p.query}" if p.query else "")


def _url_fits(e: Exchange, r: LogRequest) -> int | None:
    """0: same URL; 1: the capture does not know the exchange's URL (or only its path,
    which fits); None: different."""
    ru = _norm_url(r.url)
    wu = _wire_url(e)
    if wu is not None and ru is not None:
        if wu == ru:
            return 0
        # the capture's authority may differ in form (Host without port, an IP for a name)
        return 1 if (e.authority is None or UNKNOWN in (e.authority or "")) and _path(wu) == _path(ru) else None
    wp = e.path if e.path and UNKNOWN not in e.path else None
    if wp is not None and ru is not None:
        return 0 if wp == _path(r.url) else None
    return 1


def _t_wire(e: Exchange) -> float | None:
    return next((t for t in (e.request_start, e.request_end, e.response_start, e.response_end) if t is not None), None)


def _t_log(r: LogRequest) -> float | None:
    return next((t for t in (r.send_start, r.send_end, r.response_start, r.response_end, r.start) if t is not None), None)


def _tls_end(c: Connection) -> float | None:
    if c.tls_end is not None:
        return c.tls_end
    t = c.tls
    if t is None:
        return None
    ends = [x for x in (t.client_finished_time, t.server_finished_time) if x is not None]
    return max(ends) if ends else None


def match_connections(an: Analysis, log: BrowserLog) -> dict[str, list[int]]:
    """Log connection key -> the wire connection ids it may be: one, or — for a log that
    does not tell its connections apart (``LogConnection.group``) — all to its server."""
    out: dict[str, list[int]] = {}
    taken: set[int] = set()
    by_tuple: dict[tuple, list[Connection]] = {}
    by_server: dict[tuple, list[Connection]] = {}
    for wc in an.connections:
        cl, sv = _ep(wc.client), _ep(wc.server)
        by_tuple.setdefault((wc.transport, cl, sv), []).append(wc)
        by_server.setdefault((wc.transport, sv), []).append(wc)
        if sv is not None:
            by_server.setdefault((None, sv), []).append(wc)
    # the connections that carried requests of the log come first (a HAR connection is
    # matched by time: the busy ones should not lose their wire connection to a preconnect)
    users: dict[str, int] = {}
    for r in log.requests:
        if r.sent and r.connection:
            users[r.connection] = users.get(r.connection, 0) + 1
    order = sorted(log.connections.values(), key=lambda lc: (-users.get(lc.key, 0), lc.connect_start or 0.0, lc.key))

    def nearest(cands: list[Connection], t: float | None) -> Connection | None:
        cands = [c for c in cands if c.id not in taken]
        if not cands:
            return None
        if t is None:
            return cands[0] if len(cands) == 1 else None
        return min(cands, key=lambda c: abs((c.connect_start if c.connect_start is not None else c.start) - t))

    for lc in order:
        t = lc.connect_start
        c: Connection | None = None
        if lc.group:
            sv = _ep(lc.server)
            cands = (by_server.get((lc.transport, sv), []) or by_server.get((None, sv), [])) if sv is not None else [
                x for x in an.connections if lc.host and ((x.tls and x.tls.sni) or (x.quic and x.quic.sni) or "").lower() == lc.host.lower()]
            if cands:
                out[lc.key] = [x.id for x in cands]
            continue
        cl, sv = _ep(lc.client), _ep(lc.server)
        if cl is not None and sv is not None:
            c = nearest(by_tuple.get((lc.transport, cl, sv), []), t)
        if c is None and lc.key in log.cids:
            ids = log.cids[lc.key]
            cands = [x for x in an.connections if x.quic is not None and
                     ((x.quic.scid or "").lower() in ids or (x.quic.dcid or "").lower() in ids)]
            c = nearest(cands, t)
        if c is None and cl is None and sv is not None:
            cands = by_server.get((lc.transport, sv), []) or by_server.get((None, sv), [])
            if t is None and len(cands) > 1:
                # no handshake in the log (a connection opened before it): the one in use at its first request
                ts = [t for t in (_t_log(r) for r in log.requests if r.connection == lc.key) if t is not None]
                first = min(ts) if ts else None
                cands = [x for x in cands if first is not None and x.start <= first <= (x.end or x.start)]
            c = nearest(cands, t)
        if c is None and cl is None and sv is None and lc.host:
            h = lc.host.lower()
            cands = [x for x in an.connections if ((x.tls and x.tls.sni) or (x.quic and x.quic.sni) or "").lower() == h]
            c = nearest(cands, t)
        if c is not None:
            out[lc.key] = [c.id]
            taken.add(c.id)
    return out


def apply(an: Analysis, log: BrowserLog) -> dict:
    cmap = match_connections(an, log)
    conns = {c.id: c for c in an.connections}
    by_conn: dict[int, list[Exchange]] = {}
    by_stream: dict[tuple[int, int], Exchange] = {}
    for x in an.exchanges:
        by_conn.setdefault(x.connection, []).append(x)
        if x.stream_id is not None and not x.pushed:
            by_stream.setdefault((x.connection, x.stream_id), x)
    matched: set[int] = set()
    pairs: list[tuple[LogRequest, Exchange, str]] = []
    unmatched: list[dict] = []
    sent = [r for r in log.requests if r.sent]
    sent.sort(key=lambda r: (_t_log(r) or 0.0, r.id))
    got: dict[str, tuple[Exchange, str]] = {}

    def one_conn(r: LogRequest) -> int | None:
        ids = cmap.get(r.connection) if r.connection else None
        return ids[0] if ids and len(ids) == 1 else None

    # first every request both sides know by connection and stream: a request the capture
    # missed (sent before it began) must not take, by time, the exchange of a later one
    for r in sent:
        wc = one_conn(r)
        if wc is None or r.stream_id is None:
            continue
        hit = by_stream.get((wc, r.stream_id))
        if hit is not None and hit.id not in matched and _url_fits(hit, r) is not None and (
                not hit.method or not r.method or hit.method == r.method):
            matched.add(hit.id)
            got[r.id] = (hit, "connection+stream")
    t0 = an.start_time if an.packets else None
    for r in sent:
        if r.id in got:
            pairs.append((r, *got[r.id]))
            continue
        last = next((t for t in (r.response_end, r.response_start, r.send_end, r.send_start) if t is not None), None)
        if t0 is not None and last is not None and last < t0:  # not on the wire: it must not take a later one's exchange
            unmatched.append({"id": r.id, "method": r.method, "url": r.url, "reason": "it was over before the capture began"})
            continue
        pool_ids = cmap.get(r.connection) if r.connection else None
        wc = one_conn(r)
        e: Exchange | None = None
        how = ""
        pool = [x for i in pool_ids for x in by_conn.get(i, ())] if pool_ids else an.exchanges
        tl = _t_log(r)
        best = None
        for x in pool:
            if x.id in matched or x.pushed != r.pushed:
                continue
            if x.method and r.method and x.method != r.method:
                continue
            if wc is not None and r.stream_id is not None and x.stream_id is not None and x.stream_id != r.stream_id:
                continue  # one connection, both know the stream: another request
            fit = _url_fits(x, r)
            if fit is None:
                continue
            tw = _t_wire(x)
            dt = abs(tw - tl) if tw is not None and tl is not None else float("inf")
            if not pool_ids and dt > TOLERANCE:
                continue
            key = (fit, dt)
            if best is None or key < best[0]:
                best = (key, x)
        if best is not None:
            e = best[1]
            how = ("connection+" if wc is not None else "server+" if pool_ids else "") + (
                "url+time" if best[0][0] == 0 else "time")
        if e is None:
            why = ("its connection is not in the capture" if r.connection and not pool_ids and r.connection in log.connections
                   else "no exchange on its connection fits" if pool_ids else "no exchange in the capture fits")
            unmatched.append({"id": r.id, "method": r.method, "url": r.url, "reason": why})
            continue
        matched.add(e.id)
        pairs.append((r, e, how))
    filled = {"url": 0, "method": 0, "status": 0, "headers": 0, "content_type": 0}
    first_of: dict[int, int] = {}
    for e in sorted(an.exchanges, key=lambda x: (_t_wire(x) or 0.0, x.id)):
        first_of.setdefault(e.connection, e.id)
    offs: dict[str, list[float]] = {k: [] for k in OFFSET_POINTS}
    durs: dict[str, list[float]] = {k: [] for k in DURATIONS}
    lconn_of = {v[0]: log.connections[k] for k, v in cmap.items() if len(v) == 1}
    for r, e, how in pairs:
        src = dict(e.sources or {})
        _fill(e, r, src, filled)
        src["match_by"] = how
        if how.endswith("time") and "url" not in how:
            src["match"] = "inferred"  # the capture knows no URL of it: matched by connection and time alone
        for f in ("priority_name", "initiator"):
            if getattr(r, "priority" if f == "priority_name" else f) is not None:
                src[f] = "browser"
        for f in ("request_start", "request_end", "response_start", "response_end"):
            if getattr(e, f) is not None:
                src.setdefault(f, "wire")
        rec = record(r, log)
        o = {
            "request_start": _minus(r.send_start, e.request_start),
            "request_end": _minus(r.send_end, e.request_end),
            "response_start": _minus(r.response_start, e.response_start),
            "response_end": _minus(r.response_end, e.response_end),
        }
        c, lc = conns.get(e.connection), lconn_of.get(e.connection)
        if c is not None and lc is not None and first_of.get(e.connection) == e.id:
            o["connect_start"] = _minus(lc.connect_start, c.connect_start)
            o["connect_end"] = _minus(lc.connect_end, c.connect_end)
            o["tls_end"] = _minus(lc.tls_end, _tls_end(c)) if c.transport == "tcp" else None
        d = {
            "send": _minus(_len(r.send_start, r.send_end), _len(e.request_start, e.request_end)),
            "wait": _minus(_len(r.send_end, r.response_start), _len(e.request_end, e.response_start)),
            "receive": _minus(_len(r.response_start, r.response_end), _len(e.response_start, e.response_end)),
        }
        rec["offsets"], rec["durations"] = o, d
        for k, v in o.items():
            if v is not None:
                offs[k].append(v)
        for k, v in d.items():
            if v is not None:
                durs[k].append(v)
        e.browser = rec
        e.sources = src
    offsets = {k: _stats(v) for k, v in offs.items()}
    summary = {
        "kind": log.kind, "file": log.path, "creator": log.creator, "requests": len(log.requests), "sent": len(sent),
        "matched": len(pairs), "unmatched": len(unmatched), "unmatched_requests": unmatched[:MAX_LISTED],
        "wire_only": len(an.exchanges) - len(matched), "connections_matched": len(cmap), "connections": len(log.connections),
        "not_sent": len(log.requests) - len(sent),
        "filled": filled, "offsets": offsets, "durations": {k: _stats(v) for k, v in durs.items()},
        "skipped": log.skipped, "warnings": list(log.warnings),
    }
    b = an.browser if isinstance(an.browser, dict) else {"logs": [], "pages": []}
    b.setdefault("logs", []).append(summary)
    b.setdefault("pages", []).extend(placed_pages(log, offsets))
    an.browser = b
    for w in log.warnings:
        an.warnings.append(f"{log.kind} {log.path}: {w}")
    _forget_completeness(an)
    return summary


def _fill(e: Exchange, r: LogRequest, src: dict, filled: dict) -> None:
    # no URL, a part of it unknown, or only its path (the capture lost the :authority/Host)
    url_unknown = not e.url or UNKNOWN in e.url or "://" not in e.url
    if url_unknown and r.url and "://" in r.url:
        e.url = r.url
        try:
            u = urlsplit(r.url)
            if not e.scheme or UNKNOWN in e.scheme:
                e.scheme = u.scheme or e.scheme
            if not e.authority or UNKNOWN in e.authority:
                e.authority = u.netloc or e.authority
            if not e.path or UNKNOWN in e.path:
                e.path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        except ValueError:
            pass
        src["url"] = "browser"
        filled["url"] += 1
    elif e.url:
        src.setdefault("url", "wire")
    if not e.method and r.method:
        e.method = r.method
        src["method"] = "browser"
        filled["method"] += 1
    elif e.method:
        src.setdefault("method", "wire")
    if e.status is None and r.status is not None:
        e.status = r.status
        src["status"] = "browser"
        filled["status"] += 1
    elif e.status is not None:
        src.setdefault("status", "wire")
    for name, attr in (("request_headers", "request_headers"), ("response_headers", "response_headers")):
        hs = getattr(e, attr)
        theirs = getattr(r, attr)
        if theirs and (not hs or any(k == UNKNOWN or v == UNKNOWN for k, v in hs)):
            setattr(e, attr, list(theirs))
            src[name] = "browser"
            filled["headers"] += 1
        elif hs:
            src.setdefault(name, "wire")
    if e.content_type is None and r.content_type:
        e.content_type = r.content_type
        src["content_type"] = "browser"
        filled["content_type"] += 1


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _len(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


# The page timings (DOMContentLoaded, load) are the browser's own moments, on its clock: they
# are put on the capture's by the median browser-minus-wire offset of the log's matched
# requests at the response's end (the browser saw the last byte that much after the capture
# point, its clock and the delivery together), else at its start, else at the request's.
PLACE_BY = ("response_end", "response_start", "request_start")


def placed_pages(log: BrowserLog, offsets: dict[str, dict]) -> list[dict]:
    """``log.pages`` with ``source`` (the log's kind), ``clock_offset`` (browser minus
    capture, seconds: subtract it from the page's times to place them on the capture's
    clock; None when no matched request gives one) and ``clock_offset_from`` (the offset's
    name in ``PLACE_BY``); ``offsets``: the summary's (``_stats`` per offset name)."""
    by = next((k for k in PLACE_BY if offsets[k]["count"]), None)
    off = offsets[by]["median"] if by is not None else None
    return [dict(p, source=log.kind, clock_offset=off, clock_offset_from=by) for p in log.pages]


def _stats(v: list[float]) -> dict:
    if not v:
        return {"count": 0, "median": None, "mean": None, "min": None, "max": None}
    return {"count": len(v), "median": statistics.median(v), "mean": statistics.fmean(v), "min": min(v), "max": max(v)}


def _forget_completeness(an: Analysis) -> None:
    d = getattr(an, "__dict__", None)
    if d is not None:
        d.pop("_completeness", None)  # URLs filled in: what the capture lacks is computed again
