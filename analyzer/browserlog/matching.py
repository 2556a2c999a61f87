"""Lay a browser log over a capture's analysis: match each request the browser sent to its
wire exchange, fill in what the wire cannot know, and put the two timings side by side.

Matching, most certain first:

1. Connections.  A log connection with both endpoints (NetLog: TCP_CONNECT's local and
   remote address, a QUIC session's self and peer address; qlog ``connection_started``) is
   the wire connection of the same transport and 4-tuple (nearest in time if a port was
   reused); a qlog trace is the QUIC connection whose connection IDs its packets carry; a
   HAR connection (server address, no client port) is the wire connection to that server
   that carried the most of its requests' URLs (``carriers``; Chrome opens two sockets to one
   server milliseconds apart, one of which may carry nothing), of those the one whose
   handshake began nearest the log's, each wire connection taken once; without an address,
   the SNI of the URL's host.
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
the connection, connect_start, connect_end, tls_end — and ``durations``: the browser's
length of send, wait and receive (its ``phases``) minus the wire's (``build.wire_lengths``:
the exchange's own row phases), each length of one definition and never negative, their
difference signed) and ``sources`` (each field: "wire", "browser", or "inferred" for the
match itself when it rests on time alone).  The analysis gets a summary of the overlay in
``browser["logs"]`` and the log's page timings in ``browser["pages"]``.

The log's requests that never reached the network (served from a cache, failed or cancelled
before sending: ``records.not_sent``) are not looked for in the capture: each becomes a row of
its own (``_not_sent_rows``), made as the log alone makes it, after the capture's exchanges and
on the capture's clock; they are no wire exchange (``wire_only``, ``matched``) and no candidate
for a later log's requests.

A HAR of several pages (``pages``) is laid over with one page: the one asked for, else the
one whose requests the capture holds (``_page``: the most matched in a trial over the whole
log); the others' entries are not looked for in the capture (``other_pages``).
"""
from __future__ import annotations

import ipaddress
import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

from ..model import Analysis, Connection, Exchange, no_network_connections, not_sent_of
from .build import exchange, no_network_connection, not_sent_fields, record, span, wire_lengths
from .build import summary as summary_of
from .records import BrowserLog, LogConnection, LogRequest, not_sent
from .netlog import isolation_sites

TOLERANCE = 10.0  # seconds between a log request and a wire exchange on unmatched connections
UNKNOWN = "<unknown>"
MAX_LISTED = 50  # unmatched requests named in the summary
SAME_NOT_SENT = 1.0  # seconds between two logs' placings of one request that never reached the network (one row)
OFFSET_POINTS = ("request_start", "request_end", "response_start", "response_end", "connect_start", "connect_end", "tls_end")
DURATIONS = ("send", "wait", "receive")
SPREAD = 64  # wire connections one URL may be on and still tell a HAR connection's apart (match_connections)


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


OK, SKIP, GONE = 0, 1, 2  # a candidate: fits; does not fit this query; is taken (for good)
T = TypeVar("T")


def _root(nxt: list[int], i: int) -> int:
    """The first index still in from ``i`` on (``nxt``: a union-find of removed ones, halved on the way)."""
    while nxt[i] != i:
        nxt[i] = nxt[nxt[i]]
        i = nxt[i]
    return i


class _Nearest(Generic[T]):
    """Candidates for "nearest in time, first in their list's order among equals" — the
    ``min(key=(abs(t - at), position))`` of a scan of the list — answered without walking
    the list: sorted by time once, the ones taken (``GONE``) unlinked as they are met.
    ``items``: (time or None, item) in the list's order; a time of None is infinitely far."""

    __slots__ = ("times", "tpos", "titems", "right", "left", "items", "every", "untimed")

    def __init__(self, items: Sequence[tuple[float | None, T]]) -> None:
        timed = sorted((t, i) for i, (t, _) in enumerate(items) if t is not None)
        self.times = [t for t, _ in timed]
        self.tpos = [i for _, i in timed]
        self.items = [it for _, it in items]
        self.titems = [self.items[i] for i in self.tpos]
        n = len(timed)
        self.right = list(range(n + 1))  # right[i]: i if in, else on towards the end (n)
        self.left = list(range(n + 1))  # left[i + 1]: i + 1 if i is in, else on towards the start (0: none)
        # in the list's order: every position, and those of no time (each with its union-find)
        every = list(range(len(items)))
        untimed = [i for i, (t, _) in enumerate(items) if t is None]
        self.every = (every, list(range(len(every) + 1)))
        self.untimed = (untimed, list(range(len(untimed) + 1)))

    def nearest(self, at: float | None, check: Callable[[T], int], limit: float | None = None) -> tuple[float, int, T] | None:
        """(distance, position, item) of the candidate ``check`` says fits (``OK``) nearest
        ``at`` (ties: first in the list), none further than ``limit``; None if there is none."""
        if at is None:  # every candidate infinitely far: the first that fits
            return None if limit is not None else self.first(check)
        best: tuple[float, int, T] | None = None
        times, tpos, titems, right, left, n = self.times, self.tpos, self.titems, self.right, self.left, len(self.times)
        k = bisect_left(times, at)
        i = _root(right, k)
        while i < n:  # at or after ``at``: the distance grows (or stays) on the way
            it = titems[i]
            st = check(it)
            if st == GONE:
                right[i], left[i + 1] = i + 1, i
            else:
                dt = abs(times[i] - at)
                if (limit is not None and dt > limit) or (best is not None and dt > best[0]):
                    break
                if st == OK and (best is None or (dt, tpos[i]) < (best[0], best[1])):
                    best = (dt, tpos[i], it)
            i = _root(right, i + 1)
        j = _root(left, k) - 1
        while j >= 0:  # before it, nearest first
            it = titems[j]
            st = check(it)
            if st == GONE:
                right[j], left[j + 1] = j + 1, j
            else:
                dt = abs(times[j] - at)
                if (limit is not None and dt > limit) or (best is not None and dt > best[0]):
                    break
                if st == OK and (best is None or (dt, tpos[j]) < (best[0], best[1])):
                    best = (dt, tpos[j], it)
            j = _root(left, j) - 1
        if best is None and limit is None:  # only those of no time may be left: the first that fits
            best = self._first(self.untimed, check)
        return best

    def first(self, check: Callable[[T], int]) -> tuple[float, int, T] | None:
        """The first candidate in the list's order that fits (distance: infinite)."""
        return self._first(self.every, check)

    def ones(self, check: Callable[[T], int], most: int) -> list[T]:
        """The first ``most`` candidates in the list's order that fit."""
        out: list[T] = []
        pos, nxt = self.every
        i = _root(nxt, 0)
        while i < len(pos) and len(out) < most:
            it = self.items[pos[i]]
            st = check(it)
            if st == GONE:
                nxt[i] = i + 1
            elif st == OK:
                out.append(it)
            i = _root(nxt, i + 1)
        return out

    def _first(self, which: tuple[list[int], list[int]], check: Callable[[T], int]) -> tuple[float, int, T] | None:
        pos, nxt = which
        i = _root(nxt, 0)
        while i < len(pos):
            it = self.items[pos[i]]
            st = check(it)
            if st == GONE:
                nxt[i] = i + 1
            elif st == OK:
                return (float("inf"), pos[i], it)
            i = _root(nxt, i + 1)
        return None


class _InUse:
    """Connections by start, with the latest end among each range (a max segment tree): the
    ones in use at a moment (``start <= t <= (end or start)``) found without walking all."""

    __slots__ = ("starts", "conns", "size", "ends")

    def __init__(self, conns: list[Connection]) -> None:
        cs = sorted(conns, key=lambda c: c.start)
        self.starts = [c.start for c in cs]
        self.conns = cs
        self.size = 1 << max(0, (len(cs) - 1).bit_length())
        self.ends = [float("-inf")] * (2 * self.size)
        for j, c in enumerate(cs):
            self.ends[self.size + j] = c.end or c.start
        for n in range(self.size - 1, 0, -1):
            self.ends[n] = max(self.ends[2 * n], self.ends[2 * n + 1])

    def at(self, t: float, gone: Callable[[Connection], bool], most: int) -> list[Connection]:
        """Up to ``most`` connections in use at ``t`` that are not ``gone`` (those met are
        left out for good)."""
        out: list[Connection] = []
        ends, size = self.ends, self.size
        k = bisect_right(self.starts, t)  # started at or before t
        stack = [(1, 0, size)]
        while stack and len(out) < most:
            n, lo, hi = stack.pop()
            if lo >= k or ends[n] < t:
                continue
            if n >= size:
                c = self.conns[n - size]
                if not gone(c):
                    out.append(c)
                    continue
                ends[n] = float("-inf")
                while n > 1:
                    n //= 2
                    ends[n] = max(ends[2 * n], ends[2 * n + 1])
                continue
            mid = (lo + hi) // 2
            stack.append((2 * n + 1, mid, hi))
            stack.append((2 * n, lo, mid))
        return out


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
    no_net = no_network_connections(an)
    wire = [wc for wc in an.connections if wc.id not in no_net] if no_net else an.connections
    wire_ex = _wire_exchanges(an)
    for wc in wire:
        cl, sv = _ep(wc.client), _ep(wc.server)
        by_tuple.setdefault((wc.transport, cl, sv), []).append(wc)
        by_server.setdefault((wc.transport, sv), []).append(wc)
        if sv is not None:
            by_server.setdefault((None, sv), []).append(wc)
    # the connections that carried requests of the log come first (a HAR connection is
    # matched by time: the busy ones should not lose their wire connection to a preconnect)
    users: dict[str, int] = {}
    raw_urls: dict[str, list[str]] = {}  # (for ``carriers``, in the same walk of the requests)
    for r in log.requests:
        if r.sent and r.connection:
            users[r.connection] = users.get(r.connection, 0) + 1
            if r.url:
                raw_urls.setdefault(r.connection, []).append(r.url)
    order = sorted(log.connections.values(), key=lambda lc: (-users.get(lc.key, 0), lc.connect_start or 0.0, lc.key))
    by_sni: dict[str, list[Connection]] = {}
    by_cid: dict[str, list[int]] = {}
    for n, x in enumerate(an.connections):
        if x.id in no_net:
            continue
        by_sni.setdefault(((x.tls and x.tls.sni) or (x.quic and x.quic.sni) or "").lower(), []).append(x)
        if x.quic is not None:
            for v in {(x.quic.scid or "").lower(), (x.quic.dcid or "").lower()}:
                by_cid.setdefault(v, []).append(n)
    first_t: dict[str, float] | None = None  # log connection key -> the log's time of its first request
    ranked: dict[int, tuple[list[Connection], _Nearest[Connection]]] = {}  # id(candidate list) -> it, sorted by time

    def rank(cands: list[Connection]) -> _Nearest[Connection]:
        got = ranked.get(id(cands))
        if got is None or got[0] is not cands:
            got = ranked[id(cands)] = (cands, _Nearest([(c.connect_start if c.connect_start is not None else c.start, c)
                                                        for c in cands]))
        return got[1]

    stabbed: dict[int, tuple[list[Connection], _InUse]] = {}  # id(candidate list) -> it, by start and end

    def using(cands: list[Connection]) -> _InUse:
        got = stabbed.get(id(cands))
        if got is None or got[0] is not cands:
            got = stabbed[id(cands)] = (cands, _InUse(cands))
        return got[1]

    def free(c: Connection) -> int:
        return GONE if c.id in taken else OK

    def nearest(cands: list[Connection], t: float | None) -> Connection | None:
        """The candidate not taken whose handshake began nearest ``t`` (first of equals); with
        no ``t``, the only one not taken (None if more are)."""
        if not cands:
            return None
        if t is None:
            left = rank(cands).ones(free, 2)
            return left[0] if len(left) == 1 else None
        hit = rank(cands).nearest(t, free)
        return hit[2] if hit is not None else None

    url_conns: dict[str, set[int]] = {}  # a URL as the capture knows it -> the wire connections that carried it
    cand_ids: dict[int, tuple[list[Connection], set[int]]] = {}  # id(candidate list) -> it, its ids

    def carriers(lc: LogConnection, cands: list[Connection]) -> set[int]:
        """The ids of ``cands`` not taken carrying the most of ``lc``'s requests' URLs (none:
        empty).  A URL on more than ``SPREAD`` connections tells none apart and is passed over
        (so that the work stays linear)."""
        want = {u for u in map(_norm_url, raw_urls.get(lc.key, ())) if u is not None}
        if not want:
            return set()
        if not url_conns:
            for x in wire_ex:
                wu = _wire_url(x)
                if wu is not None:
                    url_conns.setdefault(wu, set()).add(x.connection)
        got = cand_ids.get(id(cands))
        if got is None or got[0] is not cands:
            got = cand_ids[id(cands)] = (cands, {x.id for x in cands})
        ids = got[1]
        score: dict[int, int] = {}
        for u in want:
            on = url_conns.get(u, ())
            if len(on) <= SPREAD:
                for i in on:
                    if i in ids and i not in taken:
                        score[i] = score.get(i, 0) + 1
        best = max(score.values(), default=0)
        return {i for i, n in score.items() if n == best} if best else set()

    for lc in order:
        t = lc.connect_start
        c: Connection | None = None
        if lc.group:
            sv = _ep(lc.server)
            cands = (by_server.get((lc.transport, sv), []) or by_server.get((None, sv), [])) if sv is not None else (
                by_sni.get(lc.host.lower(), []) if lc.host else [])
            if cands:
                out[lc.key] = [x.id for x in cands]
            continue
        cl, sv = _ep(lc.client), _ep(lc.server)
        if cl is not None and sv is not None:
            c = nearest(by_tuple.get((lc.transport, cl, sv), []), t)
        if c is None and lc.key in log.cids:
            ids = log.cids[lc.key]
            c = nearest([an.connections[n] for n in sorted({n for v in ids for n in by_cid.get(v, ())})], t)
        if c is None and cl is None and sv is not None:
            cands = by_server.get((lc.transport, sv), []) or by_server.get((None, sv), [])
            fit = carriers(lc, cands) if len(cands) > 1 else None
            if fit:
                # the wire connections that carried its requests' URLs, nearest in time: a
                # HAR's connect time alone chose, between Chrome's two sockets to one server
                # opened 2.7 ms apart, the one that carried nothing (amazon: wirefall's own HAR
                # read back matched 13 of 15)
                def fits(x: Connection, fit: set[int] = fit) -> int:
                    return GONE if x.id in taken else OK if x.id in fit else SKIP

                hit = rank(cands).nearest(t, fits) if t is not None else rank(cands).first(fits)
                c = hit[2] if hit is not None else None
            if c is None and t is None and len(cands) > 1:
                # no handshake in the log (a connection opened before it): the one in use at its first request
                if first_t is None:
                    first_t = {}
                    for r in log.requests:
                        tr = _t_log(r)
                        if r.connection is not None and tr is not None:
                            first_t[r.connection] = min(first_t.get(r.connection, tr), tr)
                first = first_t.get(lc.key)

                left = using(cands).at(first, lambda x: x.id in taken, 2) if first is not None else []
                c = left[0] if len(left) == 1 else None
            elif c is None:
                c = nearest(cands, t)
        if c is None and cl is None and sv is None and lc.host:
            c = nearest(by_sni.get(lc.host.lower(), []), t)
        if c is not None:
            out[lc.key] = [c.id]
            taken.add(c.id)
    return out


Cand = tuple[int, Exchange]  # (position in its pool, exchange)


class _Pools:
    """The exchanges a log request may be, by pool (the exchanges of its connection's wire
    connections, or of the whole capture), indexed by the URL keys ``_url_fits`` compares
    (each URL normalised once), by pushed and method, and within each by time: the request
    finds its exchange without walking the pool — the same one ``_url_fits`` over the pool
    in order would choose (least fit, then nearest in time, then first in the pool)."""

    def __init__(self, exchanges: list[Exchange], by_conn: dict[int, list[Exchange]], matched: set[int]) -> None:
        self.exchanges, self.by_conn, self.matched = exchanges, by_conn, matched
        self.keys: dict[int, tuple[Hashable, ...]] = {}  # id(exchange) -> the URL keys it is a candidate under
        self.pools: dict[tuple[int, ...] | None, dict[Hashable, dict[tuple[bool, str], list[tuple[float | None, Cand]]]]] = {}
        self.ranked: dict[tuple[tuple[int, ...] | None, Hashable, tuple[bool, str]], _Nearest[Cand]] = {}

    def _keys(self, x: Exchange) -> tuple[Hashable, ...]:
        """As ``_url_fits`` sees an exchange: a request URL fits it at 0 under ("u", its URL)
        or ("p", its path: the capture knows only that); at 1 under ("ap", the path of its URL:
        its authority unknown) or ("any",) (the capture knows no path); a request of no URL
        fits every exchange at 1 (("all",))."""
        k = self.keys.get(id(x))
        if k is None:
            wu = _wire_url(x)
            if wu is not None:
                k = (("u", wu), ("ap", _path(wu))) if x.authority is None or UNKNOWN in (x.authority or "") else (("u", wu),)
            else:
                wp = x.path if x.path and UNKNOWN not in x.path else None
                k = (("p", wp),) if wp is not None else (("any",),)
            k += (("all",),)
            self.keys[id(x)] = k
        return k

    def _pool(self, pk: tuple[int, ...] | None) -> dict[Hashable, dict[tuple[bool, str], list[tuple[float | None, Cand]]]]:
        lists = self.pools.get(pk)
        if lists is None:
            pool = [x for i in pk for x in self.by_conn.get(i, ())] if pk else self.exchanges
            lists = self.pools[pk] = {}
            for n, x in enumerate(pool):
                sub, tw = (x.pushed, x.method or ""), _t_wire(x)
                for key in self._keys(x):
                    lists.setdefault(key, {}).setdefault(sub, []).append((tw, (n, x)))
        return lists

    def find(self, pool_ids: list[int] | None, r: LogRequest, one_stream: bool, tl: float | None) -> tuple[int, Exchange] | None:
        """(fit, exchange) for ``r`` among the unmatched exchanges of the pool (None: none
        fits); ``one_stream``: one wire connection and ``r``'s stream id known, so an exchange
        of another known stream id is not it; ``tl``: ``r``'s time."""
        pk = tuple(pool_ids) if pool_ids else None
        lists = self._pool(pk)
        limit = None if pool_ids else TOLERANCE
        ru = _norm_url(r.url)
        levels: tuple[tuple[Hashable, ...], ...] = (
            (("u", ru), ("p", _path(r.url))), (("ap", _path(ru)), ("any",))) if ru is not None else ((), (("all",),))
        matched, sid = self.matched, r.stream_id

        def check(c: Cand) -> int:
            x = c[1]
            if x.id in matched:
                return GONE
            return SKIP if one_stream and x.stream_id is not None and x.stream_id != sid else OK

        for fit, keys in enumerate(levels):
            best: tuple[float, int, Exchange] | None = None
            for key in keys:
                subs = lists.get(key)
                if not subs:
                    continue
                for sub in ((r.pushed, ""), (r.pushed, r.method)) if r.method else [s for s in subs if s[0] == r.pushed]:
                    if sub not in subs:
                        continue
                    nr = self.ranked.get((pk, key, sub))
                    if nr is None:
                        nr = self.ranked[(pk, key, sub)] = _Nearest(subs[sub])
                    hit = nr.nearest(tl, check, limit)
                    if hit is not None and (best is None or (hit[0], hit[2][0]) < (best[0], best[1])):
                        best = (hit[0], hit[2][0], hit[2][1])
            if best is not None:
                return fit, best[2]
        return None


def _pair(an: Analysis, log: BrowserLog) -> tuple[dict[str, list[int]], list[tuple[LogRequest, Exchange, str]], list[dict], list[LogRequest]]:
    """(connection map, (request, exchange, how) pairs, the unmatched requests, the requests
    sent) — the matching alone: nothing of ``an`` is changed."""
    cmap = match_connections(an, log)
    by_conn: dict[int, list[Exchange]] = {}
    by_stream: dict[tuple[int, int], Exchange] = {}
    wire = _wire_exchanges(an)
    for x in wire:
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
    pools = _Pools(wire, by_conn, matched)
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
        found = pools.find(pool_ids, r, wc is not None and r.stream_id is not None, _t_log(r))
        if found is not None:
            fit, e = found
            how = ("connection+" if wc is not None else "server+" if pool_ids else "") + (
                "url+time" if fit == 0 else "time")
        if e is None:
            why = ("its connection is not in the capture" if r.connection and not pool_ids and r.connection in log.connections
                   else "no exchange on its connection fits" if pool_ids else "no exchange in the capture fits")
            unmatched.append({"id": r.id, "method": r.method, "url": r.url, "reason": why})
            continue
        matched.add(e.id)
        pairs.append((r, e, how))
    return cmap, pairs, unmatched, sent


def _page(an: Analysis, log: BrowserLog, page: int | None) -> BrowserLog:
    """``log`` cut to the one of its pages laid over the capture (a HAR of several pages,
    ``pages``): ``page`` when asked (1-based; ``pages.ALL``: every page), else the page whose
    requests the capture holds — the most matched in a trial over the whole log (ties: the
    first); the whole log when it names fewer than two pages or none of them matched."""
    if log.kind != "har":
        return log
    from .pages import ALL, page_of, select, split

    pgs = split(log)
    if page is not None:
        return select(log, page, "asked", pgs)
    if not pgs:
        return log
    _cmap, trial, _unmatched, _sent = _pair(an, log)
    of = page_of(pgs)
    tally: dict[int, int] = {}
    for r, _e, _how in trial:
        tally[of[id(r)]] = tally.get(of[id(r)], 0) + 1
    if not tally:
        return select(log, ALL, "matched", pgs)
    return select(log, min(tally, key=lambda n: (-tally[n], n)), "matched", pgs)


def apply(an: Analysis, log: BrowserLog, page: int | None = None) -> dict:
    """Lay ``log`` over ``an`` (in place) and return the overlay's summary; ``page``: of a HAR
    of several pages, the one to lay over (None: the page the capture holds; ``_page``)."""
    log = _page(an, log, page)
    cmap, pairs, unmatched, sent = _pair(an, log)
    conns = {c.id: c for c in an.connections}
    matched = {e.id for _r, e, _how in pairs}
    wire = _wire_exchanges(an)
    n_wire = len(wire)  # (before this log's own rows are added to the exchanges)
    filled = {"url": 0, "method": 0, "status": 0, "headers": 0, "content_type": 0}
    first_of: dict[int, int] = {}
    for e in sorted(wire, key=lambda x: (_t_wire(x) or 0.0, x.id)):
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
            # (QUIC: TLS ends with the connection's set-up — Chrome's connect timing sets ssl_end =
            # connect_end, and the capture's QUIC tls_end is its connect_end, the client's Finished)
            o["tls_end"] = _minus(lc.tls_end if c.transport == "tcp" else lc.connect_end, _tls_end(c))
        # each side's own length of the phase, of one definition (sequential phases between
        # its own moments: never negative); their difference may be (a browser that handed a
        # request body to its socket at once, which the network carried for longer)
        wl, bl = wire_lengths(e), rec["phases"]
        d = {k: _minus(bl[k], wl[k]) for k in DURATIONS}
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
    rows = _not_sent_rows(an, log, clock_offset(offsets)[0])
    summary = {
        "kind": log.kind, "file": log.path, "creator": log.creator, "requests": len(log.requests), "sent": len(sent),
        "matched": len(pairs), "unmatched": len(unmatched), "unmatched_requests": unmatched[:MAX_LISTED],
        "wire_only": n_wire - len(matched), "connections_matched": len(cmap), "connections": len(log.connections),
        **not_sent_fields(log, rows),
        "filled": filled, "offsets": offsets, "durations": {k: _stats(v) for k, v in durs.items()},
        "skipped": log.skipped, "warnings": list(log.warnings),
    }
    summary["matched_connections"] = matched_connections(log, cmap, sent)
    if log.kind == "har":  # (after the others: the fields a HAR adds, as build.summary gives them)
        page_fields = summary_of(log)
        summary["requests"] = page_fields["requests"]
        for k in ("pages_in_log", "page_shown", "other_pages"):
            summary[k] = page_fields[k]
    b = an.browser if isinstance(an.browser, dict) else {"logs": [], "pages": []}
    b.setdefault("logs", []).append(summary)
    b.setdefault("pages", []).extend(placed_pages(log, offsets))
    an.browser = b
    for w in log.warnings:
        an.warnings.append(f"{log.kind} {log.path}: {w}")
    _forget_completeness(an)
    return summary


MAX_KEYS = 8  # isolation keys and sites listed per log connection


def _page_sites(log: BrowserLog) -> list[str]:
    """The log's pages' sites: the top-frame sites of its main-frame requests (a NetLog's; as
    netlog ``_mark_background`` takes them)."""
    return list(dict.fromkeys(r.top_frame_site for r in log.requests if r.resource_type == "main frame" and r.top_frame_site))


def _source_id(key: str) -> int | None:
    """A NetLog connection's source id ("quic session 220", "socket 165": its last word)."""
    last = key.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else None


def matched_connections(log: BrowserLog, cmap: dict[str, list[int]], sent: list[LogRequest]) -> list[dict]:
    """Each log connection matched to the capture, with whose it is by the log's own word (for
    ``completeness``: a connection the capture joined mid-way with no request seen, whose
    requests the log holds; ``sent``: the log's requests that reached the network, ``_pair``'s).
    ``whose`` "page": a request of it in the log is the page's — keyed
    to a page's site (NetLog: its isolation key's top-frame site is that of a main-frame request),
    or of the HAR page shown (``pageref``), and not set apart as background; "background": it
    carried requests and the log sets every one apart (``LogRequest.background``: ``reason``, the
    first's words); None: the log does not say (no request of it; a qlog; a log of no page).
    Listed in the log's connection order; a HAR connection of no id (``group``) names all the
    wire connections to its server."""
    by_conn: dict[str, list[LogRequest]] = {}
    for r in sent:
        if r.connection is not None and r.connection in cmap:
            by_conn.setdefault(r.connection, []).append(r)
    # (the log's requests walked again only where a site can matter: a HAR's thousands are not)
    keyed = (any(r.top_frame_site is not None for reqs in by_conn.values() for r in reqs)
             or any(lc.isolation_key for k, lc in log.connections.items() if k in cmap))
    sites = _page_sites(log) if keyed else []
    out = []
    for key, lc in log.connections.items():
        wire = cmap.get(key)
        if not wire:
            continue
        reqs = by_conn.get(key, [])
        page = [r for r in reqs if r.background is None and ((r.top_frame_site is not None and r.top_frame_site in sites)
                                                             or (log.kind == "har" and r.page is not None))]
        bg = [r for r in reqs if r.background is not None]
        whose = "page" if page else "background" if reqs and len(bg) == len(reqs) else None
        # a session that carried no request of the log: the key it was opened under (a NetLog QUIC
        # session's network anonymization key, its top-frame site) says whose it is — a page's
        # preconnect (amazon's session 265, "https://amazon.com same_site"), or another site's
        skey = lc.isolation_key or ""
        session_site = isolation_sites(skey)[0] if skey else None
        reason = bg[0].background if whose == "background" else None
        if whose is None and not reqs and session_site is not None and sites:
            whose = "page" if session_site in sites else "background"
            if whose == "background":
                reason = (f"another site's connection (NetLog: its session's key \"{skey[:200]}\", top-frame site "
                          f"{session_site}; the page's site{'s' if len(sites) > 1 else ''} {', '.join(sites[:4])})")
        out.append({
            "log_connection": key, "source_id": _source_id(key) if log.kind == "netlog" else None, "wire": list(wire),
            "group": lc.group, "requests": len(reqs), "request_ids": [r.id for r in reqs[:MAX_LISTED]],
            "page_requests": len(page), "background_requests": len(bg),
            "isolation_keys": list(dict.fromkeys(r.isolation_key for r in reqs if r.isolation_key is not None))[:MAX_KEYS],
            "top_frame_sites": list(dict.fromkeys(r.top_frame_site for r in reqs if r.top_frame_site is not None))[:MAX_KEYS],
            "page_sites": sites[:MAX_KEYS], "whose": whose, "reason": reason,
            "session_key": lc.isolation_key, "session_site": session_site,
        })
    return out


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


# The page timings (DOMContentLoaded, load) are the browser's own moments, on its clock: they
# are put on the capture's by the median browser-minus-wire offset of the log's matched
# requests at the response's end (the browser saw the last byte that much after the capture
# point, its clock and the delivery together), else at its start, else at the request's.
PLACE_BY = ("response_end", "response_start", "request_start")


def clock_offset(offsets: dict[str, dict]) -> tuple[float | None, str | None]:
    """(browser minus capture in seconds, the name in ``PLACE_BY`` it is the median offset of)
    by which the log's own moments are placed on the capture's clock; (None, None) when no
    matched request gives one.  ``offsets``: the summary's (``_stats`` per offset name)."""
    by = next((k for k in PLACE_BY if offsets[k]["count"]), None)
    return (offsets[by]["median"] if by is not None else None), by


def placed_pages(log: BrowserLog, offsets: dict[str, dict]) -> list[dict]:
    """``log.pages`` with ``source`` (the log's kind), ``clock_offset`` (browser minus
    capture, seconds: subtract it from the page's times to place them on the capture's
    clock; None when no matched request gives one) and ``clock_offset_from`` (the offset's
    name in ``PLACE_BY``); ``offsets``: the summary's (``_stats`` per offset name)."""
    off, by = clock_offset(offsets)
    return [dict(p, source=log.kind, clock_offset=off, clock_offset_from=by) for p in log.pages]


def _wire_exchanges(an: Analysis) -> list[Exchange]:
    """The capture's exchanges: not the rows an earlier overlay added for its log's requests
    that never reached the network."""
    no_net = no_network_connections(an)
    return [e for e in an.exchanges if e.connection not in no_net] if no_net else an.exchanges


_ROW_TIMES = ("request_start", "request_end", "response_start", "response_end", "response_headers_end")


def _not_sent_rows(an: Analysis, log: BrowserLog, off: float | None) -> dict[str, int]:
    """Add a row for each request of ``log`` that never reached the network (served from a
    cache, failed or cancelled before sending), as the log opened alone makes it
    (``build.exchange``): no wire, on a connection of their own (``build.no_network_connection``),
    ids after the capture's exchanges, in the log's start order; its times the log's placed on
    the capture's clock as its page's are (minus ``off``, ``clock_offset``: ``browser.clock_offset``).
    Not placed, so no row: a request of no time, every request of a log none of whose
    requests matched (no ``off``: it may be another load's; its page events are not placed
    either), one placed outside the capture's time (as its page's events: from
    ``BROWSER_START_SLACK`` before the first packet to ``BROWSER_EVENT_SLACK`` after the last),
    and one an earlier log laid over gave a row (same method, URL and why, placed within
    ``SAME_NOT_SENT``).  Returns the log's request id -> its row's id."""
    idx = an.index
    if off is None or not len(idx):
        return {}
    from ..waterfall import BROWSER_EVENT_SLACK, BROWSER_START_SLACK

    lo, hi = idx.ts[0] - BROWSER_START_SLACK, idx.ts[-1] + BROWSER_EVENT_SLACK
    todo = sorted(((r, ns) for r in log.requests if (ns := not_sent(r)) is not None and r.start is not None
                   and lo <= r.start - off <= hi), key=lambda x: (x[0].start, x[0].id))
    if not todo:
        return {}
    no_net = no_network_connections(an)
    earlier: dict[tuple, list[Exchange]] = {}  # the rows of logs laid over before, by what they were
    for e in an.exchanges:
        if e.connection in no_net:
            earlier.setdefault((e.method, e.url, not_sent_of(e.browser)), []).append(e)
    out: dict[str, int] = {}
    new: list[Exchange] = []
    conn: Connection | None = None
    n = max((e.id for e in an.exchanges), default=0)
    for r, ns in todo:
        assert r.start is not None
        at = r.start - off
        cands = earlier.get((r.method, r.url, ns.label), [])
        same = next((e for e in cands if e.request_start is not None and abs(e.request_start - at) <= SAME_NOT_SENT), None)
        if same is not None:  # (each taken once)
            cands.remove(same)
            out[r.id] = same.id
            continue
        if conn is None:
            conn = next((c for c in an.connections if c.id in no_net), None) or no_network_connection(an)
        n += 1
        e = exchange(n, conn.id, r, log, ns)
        for k in _ROW_TIMES:
            t = getattr(e, k)
            if t is not None:
                setattr(e, k, round(t - off, 6))  # (to the µs, as every time: records.to_microseconds)
        assert e.browser is not None
        # (its offsets and durations stay null, as alone: no wire to be minus — and every view
        # shows only the log's side of it, comparison.from_log_alone)
        e.browser["clock_offset"] = off
        new.append(e)
        out[r.id] = e.id
    if conn is not None:
        an.exchanges.extend(new)
        span(conn, [e for e in an.exchanges if e.connection == conn.id])
    return out


def _stats(v: list[float]) -> dict:
    if not v:
        return {"count": 0, "median": None, "mean": None, "min": None, "max": None}
    return {"count": len(v), "median": statistics.median(v), "mean": statistics.fmean(v), "min": min(v), "max": max(v)}


def _forget_completeness(an: Analysis) -> None:
    d = getattr(an, "__dict__", None)
    if d is not None:
        d.pop("_completeness", None)  # URLs filled in: what the capture lacks is computed again
