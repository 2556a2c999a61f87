"""Chromium's NetLog (``--log-net-log=FILE``, chrome://net-export) as a ``BrowserLog``.

A NetLog is ``{"constants": {...}, "events": [{...}, ...]}``: every event names its source
(a URL_REQUEST, an HTTP_STREAM_JOB, a SOCKET, an HTTP2_SESSION, a QUIC_SESSION …) by id and
type, its type and phase by the numbers ``constants`` maps to names, and its time in
milliseconds of Chromium's TimeTicks (``constants.timeTickOffset`` makes them epoch
milliseconds).  Chromium writes one event a line and the closing ``]}`` only when logging
stops: a browser that crashed or was killed leaves a log cut anywhere, even inside an event.
``load_json`` reads such a log to its last whole event (``json.JSONDecoder.raw_decode`` one
event at a time — a hand-written loop around the standard parser, because no JSON library
reads a document that never closes).

What each request's record holds (``LogRequest``): URL_REQUEST_START_JOB gives method, URL
(a redirect starts a new job on the same source: a new record), initiator and request type,
and whose request it is — the initiator "not an origin" (``browser_initiated``), the network
isolation key and its sites, site_for_cookies — from which ``_mark_background`` sets apart the
requests Chrome made for itself or for another site's page;
REQUEST_ALIVE and URL_REQUEST_SET_PRIORITY the priority; HTTP_TRANSACTION_SEND_REQUEST the
send phase, its *_SEND_REQUEST_HEADERS event the request headers (and for QUIC the stream
id); HTTP_TRANSACTION_READ_RESPONSE_HEADERS the status and response headers (response
start); the last HTTP_TRANSACTION_READ_BODY the end.

The send ends where the browser had sent the request's last byte: the end of
HTTP_TRANSACTION_SEND_REQUEST (HTTP/1 and HTTP/2: when the body's last write to the socket
completed — UPLOAD_DATA_STREAM_READ, HTTP2_STREAM_UPDATE_SEND_WINDOW and the session's
HTTP2_SESSION_SEND_DATA come before it), or, when later, the frame that ended the request's
stream (HTTP2_SESSION_SEND_HEADERS/SEND_DATA with ``fin``, QUIC_SESSION_STREAM_FRAME_SENT
with ``fin``: QUIC sends what the transaction buffered as its congestion window allows).  A
response the transaction never read to its end (a 204 to a beacon whose request was still
alive when logging stopped: no READ_BODY, no REQUEST_ALIVE end) ends where its stream did:
HTTP2_SESSION_RECV_HEADERS/RECV_DATA or QUIC_SESSION_STREAM_FRAME_RECEIVED with ``fin``.
UPLOAD_DATA_STREAM_INIT's ``total_size`` is the request body's size.  The connection: the request's
HTTP_STREAM_JOB bound to a SOCKET (TCP_CONNECT's local and remote address, SSL_CONNECT),
or to an HTTP2_SESSION on a socket (HTTP2_SESSION_SEND_HEADERS names the job and the
stream id), or the request bound to a QUIC_SESSION (its packets' self and peer address).
A request without *_SEND_REQUEST_HEADERS never reached the network (a cache hit, a DNS
failure): ``sent`` is False.  DNS: the lookup of the connect job that opened the request's
connection, or, for a request its main job served while the QUIC job racing it resolved the
name (the main job held back for it), that QUIC job's lookup, as Chrome's load timing has it
(``_raced_dns``).
"""
from __future__ import annotations

import json
import re
from typing import Any
from collections.abc import Callable, Iterator

from .detect import BrowserLogError, read_text
from .records import BrowserLog, LogConnection, LogRequest, integer, net_error_name, num, split_host_port, text

_CONSTANTS = re.compile(r'\s*\{\s*"constants"\s*:\s*')
_EVENTS = re.compile(r'\s*,\s*"events"\s*:\s*\[\s*')
_SEP = re.compile(r"\s*(,|\])\s*")
MAX_EVENTS = 20_000_000  # limits["browserlog_events"]


def load_json(path: str, limit: int | None = None, max_events: int = MAX_EVENTS) -> dict:
    """The NetLog at ``path`` as a dict (``constants``, ``events``, ``cut``: None or why the
    events end early), compressed or not, cut short or not.  Raises ``BrowserLogError``."""
    text_, _comp, warnings = read_text(path, **({"limit": limit} if limit else {}))
    d = parse(text_, path, max_events)
    d["warnings"] = warnings + d.get("warnings", [])
    d["compression"] = _comp
    return d


def parse(s: str, path: str = "NetLog", max_events: int = MAX_EVENTS) -> dict:
    try:
        d = json.loads(s)
    except RecursionError:
        raise BrowserLogError(f"{path}: NetLog nested too deeply to read") from None
    except ValueError:
        d = None
    if isinstance(d, dict):
        if not isinstance(d.get("constants"), dict) or not isinstance(d.get("events"), list):
            raise BrowserLogError(f"{path}: not a NetLog: no constants and events")
        ev = d["events"]
        warnings = []
        if len(ev) > max_events:
            warnings.append(f"NetLog has {len(ev)} events; read the first {max_events} (limits['browserlog_events'])")
            ev = ev[:max_events]
        return {"constants": d["constants"], "events": ev, "cut": None, "warnings": warnings}
    # cut short: read the constants, then one event at a time to the last whole one
    dec = json.JSONDecoder()
    m = _CONSTANTS.match(s)
    if not m:
        raise BrowserLogError(f"{path}: not a NetLog (JSON that does not open with \"constants\")")
    try:
        constants, pos = dec.raw_decode(s, m.end())
    except (ValueError, RecursionError):
        raise BrowserLogError(f"{path}: NetLog cut off inside its constants: no event can be named") from None
    if not isinstance(constants, dict):
        raise BrowserLogError(f"{path}: NetLog constants are not an object")
    m = _EVENTS.match(s, pos)
    if not m:
        raise BrowserLogError(f"{path}: NetLog has no events after its constants")
    pos = m.end()
    events: list = []
    cut = None
    n = len(s)
    while pos < n:
        if s[pos] == "]":
            break
        try:
            e, pos = dec.raw_decode(s, pos)
        except RecursionError:
            cut = f"event {len(events) + 1} nested too deeply"
            break
        except ValueError:
            cut = f"cut off after {len(events)} events (at byte {pos} of {n}): the browser did not close the log"
            break
        events.append(e)
        if len(events) >= max_events:
            cut = f"{max_events} events read (limits['browserlog_events']); the rest left out"
            break
        m = _SEP.match(s, pos)
        if not m:
            cut = f"cut off after {len(events)} events (at byte {pos} of {n}): the browser did not close the log"
            break
        pos = m.end()
        if m.group(1) == "]":
            break
    else:
        cut = f"cut off after {len(events)} events: the browser did not close the log"
    return {"constants": constants, "events": events, "cut": cut, "warnings": [f"NetLog {cut}"] if cut else []}


def _names(c: Any) -> dict[int, str]:
    if not isinstance(c, dict):
        return {}
    return {v: k for k, v in c.items() if isinstance(v, int) and not isinstance(v, bool) and isinstance(k, str)}


def _dep(p: dict) -> int | None:
    d = p.get("source_dependency")
    return integer(d.get("id")) if isinstance(d, dict) else None


def _header_list(v: Any) -> list[tuple[str, str]]:
    """NetLog headers: ``["name: value", ...]`` (HTTP/2, QUIC: ``":method: GET"``)."""
    out: list[tuple[str, str]] = []
    if isinstance(v, dict):  # older logs: {"name": "value"}
        return [(k, x) for k, x in v.items() if isinstance(k, str) and isinstance(x, str)]
    if not isinstance(v, list):
        return out
    for h in v:
        if not isinstance(h, str):
            continue
        start = 1 if h.startswith(":") else 0
        i = h.find(":", start)
        if i < 0:
            continue
        out.append((h[:i], h[i + 1:].lstrip(" ")))
    return out


def _status_line(line: str) -> int | None:
    parts = line.split()
    if len(parts) >= 2 and parts[1].isdigit() and len(parts[1]) == 3:
        return int(parts[1])
    return None


def read(path: str, limits: dict | None = None) -> BrowserLog:
    lim = limits or {}
    d = load_json(path, limit=lim.get("browserlog_bytes"), max_events=lim.get("browserlog_events", MAX_EVENTS))
    log = BrowserLog("netlog", path, creator="Chromium NetLog", compression=d.get("compression", ""))
    log.warnings.extend(d.get("warnings", []))
    fill(log, d["constants"], d["events"])
    return log


class _Fill:
    """What ``fill`` gathers from the events before it binds requests to connections: the
    records, and the links between NetLog sources (request → job → socket / session)."""

    def __init__(self, log: BrowserLog, neterr: dict) -> None:
        self.log, self.neterr = log, neterr
        self.reqs: dict[int, LogRequest] = {}  # URL_REQUEST source -> its current record
        self.alive: dict[int, tuple[float, str | None]] = {}  # URL_REQUEST -> (REQUEST_ALIVE begin, priority)
        self.redirects: dict[int, int] = {}
        self.job_of: dict[int, int] = {}  # URL_REQUEST -> HTTP_STREAM_JOB
        self.job_sock: dict[int, int] = {}  # job -> SOCKET
        self.job_h2: dict[int, int] = {}  # job -> HTTP2_SESSION
        self.job_quic: dict[int, int] = {}
        self.h2_sock: dict[int, int] = {}  # HTTP2_SESSION -> SOCKET
        self.h2_stream: dict[int, tuple[int, int]] = {}  # job -> (session, stream id)
        self.h2_data: dict[tuple[int, int], int] = {}  # (session, stream) -> DATA payload bytes received
        # (session, stream) -> when the browser sent its last frame (fin), when it received the peer's
        self.h2_sent_fin: dict[tuple[int, int], float] = {}
        self.h2_recv_fin: dict[tuple[int, int], float] = {}
        self.quic_sent_fin: dict[tuple[int, int], float] = {}
        self.quic_recv_fin: dict[tuple[int, int], float] = {}
        self.quic_data: dict[tuple[int, int], int] = {}  # (session, stream) -> HTTP/3 DATA payload bytes received
        # QUIC_SESSION -> the client's first CRYPTO frame at the Handshake level (its Finished: the
        # TLS handshake complete, Chrome's connect_end), the first HANDSHAKE_DONE it received
        self.quic_finished: dict[int, float] = {}
        self.quic_done: dict[int, float] = {}
        self.req_quic: dict[int, int] = {}  # URL_REQUEST -> QUIC_SESSION
        self.socks: dict[int, LogConnection] = {}
        self.quics: dict[int, LogConnection] = {}
        self.h2_alpn: dict[int, str] = {}
        # DNS: a connect job (TCP/SSL, a QUIC session pool job) attaches to a resolver job
        # (HOST_RESOLVER_MANAGER_JOB_ATTACH) and then sets its socket (CONNECT_JOB_SET_SOCKET)
        # or creates its QUIC session (QUIC_SESSION_CREATED); the resolver job's begin and end
        # are the lookup, from the moment this connect job attached to it
        self.cj_resolver: dict[int, tuple[int, float]] = {}  # connect job -> (resolver job, attach time)
        self.resolver: dict[int, list] = {}  # resolver job -> [begin, end, failed]
        self.sock_cj: dict[int, int] = {}  # SOCKET -> connect job
        self.quic_cj: dict[int, int] = {}  # QUIC_SESSION -> connect job
        self.cj_lookup: dict[int, list] = {}  # connect job -> [begin, end] of its own HOST_RESOLVER_MANAGER_REQUEST
        # a request's race (HTTP_STREAM_JOB_CONTROLLER): its jobs, the QUIC ones' session pool
        # jobs (BOUND_TO_QUIC_SESSION_POOL_JOB) and when they bound to them
        self.job_ctl: dict[int, tuple[int, bool, str | None]] = {}  # job -> (controller, a QUIC job racing the main, destination)
        self.job_pool: dict[int, tuple[int, float]] = {}  # QUIC job -> (QUIC session pool job, bind time)


def fill(log: BrowserLog, constants: dict, events: list) -> None:
    ev = _names(constants.get("logEventTypes"))
    src = _names(constants.get("logSourceType"))
    ph = _names(constants.get("logEventPhase"))
    if not ev or not src:
        raise BrowserLogError(f"{log.path}: NetLog constants name no event or source types")
    neterr = _names(constants.get("netError"))
    client_info = constants.get("clientInfo")
    if isinstance(client_info, dict) and isinstance(client_info.get("version"), str):
        log.creator = f"Chromium {client_info['version'][:40]} NetLog"
    off = num(constants.get("timeTickOffset"))
    if off is None:
        log.warnings.append("NetLog without timeTickOffset: times are Chromium ticks, not wall-clock time")
        off = 0.0

    st = _Fill(log, neterr)
    bad = 0
    for e in events:
        if not isinstance(e, dict):
            bad += 1
            continue
        s = e.get("source")
        if not isinstance(s, dict):
            bad += 1
            continue
        sid, stype = integer(s.get("id")), integer(s.get("type"))
        t_raw = num(e.get("time")) if not isinstance(e.get("time"), str) else integer(e.get("time"))
        tnum = integer(e.get("type"))
        etype = ev.get(tnum) if tnum is not None else None  # (type 0 is CANCELLED: a real event)
        if sid is None or stype is None or t_raw is None or etype is None:
            bad += 1
            continue
        t = (t_raw + off) / 1000.0
        handler = _SOURCE_HANDLERS.get(src.get(stype, ""))
        if handler is None:
            continue
        phase = ph.get(integer(e.get("phase")) or 0, "PHASE_NONE")
        p = e.get("params")
        if not isinstance(p, dict):
            p = {}
        handler(st, sid, etype, phase, t, p)
    log.skipped += bad
    if bad:
        log.warnings.append(f"NetLog: {bad} malformed events left out")
    _bind(st)
    _mark_background(log)


def isolation_sites(key: str) -> tuple[str | None, str | None]:
    """The top-frame and frame sites of a NetLog ``network_isolation_key`` (Chrome's
    ``NetworkIsolationKey::ToDebugString``: the two sites space-separated, "null" for one not
    set, an opaque one as "null [internally: …]", then " (with nonce …)" when it has one);
    None for a site that is not a scheme://host one."""
    sites: list[str | None] = []
    inside = False  # within an opaque site's "[internally: …]" (its precursor may hold spaces)
    for t in key.split()[:64]:
        if inside or t.startswith("[internally:"):
            inside = not t.endswith("]")
            continue
        if t.startswith("("):  # " (with nonce …)": no site follows
            break
        sites.append(t.lower() if "://" in t and t != "null" else None)
        if len(sites) == 2:
            break
    return (sites[0] if sites else None), (sites[1] if len(sites) > 1 else None)


_COOKIE_SITE = re.compile(r"site=([^;}\s]+)")


def _cookie_site(v: Any) -> str | None:
    """The site of a NetLog ``site_for_cookies`` ("SiteForCookies: {site=https://amazon.com;
    schemefully_same=true}"); None for "site=null" or another form."""
    m = _COOKIE_SITE.search(v[:1024]) if isinstance(v, str) else None
    return m.group(1).lower() if m and "://" in m.group(1) else None


# why a request of the log is not its page's (``LogRequest.background``), from the log's own
# facts: Chrome's own request (no initiator, an isolation key of no page the log navigated to),
# or one of a page of another site (a tab the log did not see navigate)
BG_BROWSER = "the browser's own request (NetLog: initiator \"not an origin\", isolation key \"{key}\"; {pages})"
BG_OTHER_SITE = "another site's page's request (NetLog: isolation key \"{key}\", top-frame site {site}; {pages})"


def _mark_background(log: BrowserLog) -> None:
    """Set ``background`` on the requests the NetLog itself shows are no page's: the top-frame
    sites of its main-frame requests (Chrome's own site of each page it navigated to:
    ``https://amazon.com`` for www.amazon.com, ``https://127.0.0.1`` for 127.0.0.1:59887) are
    its pages' sites; a request with an isolation key whose top-frame site is none of them is
    the browser's own when no origin initiated it (GMS check-in, accounts.google.com's
    ListAccounts, the component updater's "null null"), else another site's page's.  A log
    without a main-frame request (logging began after the navigation; an embedder such as
    Cronet, whose requests are all "not an origin") names no page: nothing is set.  A request
    without an isolation key (an older Chrome's log) is left to the page rules."""
    sites = list(dict.fromkeys(r.top_frame_site for r in log.requests if r.resource_type == "main frame" and r.top_frame_site))
    if not sites:
        return
    pages = f"the page's site {sites[0]}" if len(sites) == 1 else f"the pages' sites {', '.join(sites[:4])}"
    for r in log.requests:
        if r.isolation_key is None or r.background is not None or r.resource_type == "main frame" or r.top_frame_site in sites:
            continue
        if r.browser_initiated:
            r.background = BG_BROWSER.format(key=r.isolation_key[:200], pages=pages)
        elif r.top_frame_site is not None:
            r.background = BG_OTHER_SITE.format(key=r.isolation_key[:200], site=r.top_frame_site, pages=pages)


def _set_error(st: _Fill, r: LogRequest, p: dict) -> None:
    """The request's net error (``net_error`` < 0), named from the log's own table, else Chrome's."""
    err = integer(p.get("net_error"))
    if err is not None and err < 0 and r.error is None:
        r.error_code = err if err > -(1 << 20) else None
        r.error = net_error_name(r.error_code, st.neterr) or f"net error {err}"[:40]


# the HTTP cache's events on a request: an entry opened and read (a hit, unless the request then
# went to the network to validate it)
_CACHE_READS = ("HTTP_CACHE_READ_INFO", "HTTP_CACHE_READ_DATA")


def _url_request(st: _Fill, sid: int, etype: str, phase: str, t: float, p: dict) -> None:
    """An event of a URL_REQUEST source: the request's record, its times, headers and links."""
    r = st.reqs.get(sid)
    if etype == "REQUEST_ALIVE":
        if phase == "PHASE_BEGIN":
            st.alive[sid] = (t, text(p.get("priority"), 40))
        elif phase == "PHASE_END" and r is not None:
            if r.response_end is None and r.response_start is not None:
                r.response_end = t
            _set_error(st, r, p)
    elif etype == "URL_REQUEST_START_JOB" and phase == "PHASE_BEGIN" and isinstance(p.get("url"), str):
        n: int = st.redirects.get(sid, 0)
        st.redirects[sid] = n + 1
        start, prio = st.alive.get(sid, (t, None))
        if r is not None:  # a redirect: the new job starts now
            start, prio = t, r.priority
            r.redirected = True
        r = st.reqs[sid] = LogRequest(id=str(sid) if n == 0 else f"{sid}.{n}", method=text(p.get("method"), 40),
                                      url=text(p.get("url")), start=start, priority=prio, sent=False,
                                      initiator=text(p.get("initiator"), 2048), resource_type=text(p.get("request_type"), 80))
        if r.initiator == "not an origin":  # (Chrome's word for no initiator: no document started it)
            r.initiator, r.browser_initiated = None, True
        key = text(p.get("network_isolation_key"), 1024)
        if key is not None:
            r.isolation_key = key
            r.top_frame_site, r.frame_site = isolation_sites(key)
        r.site_for_cookies = _cookie_site(p.get("site_for_cookies"))
        st.log.requests.append(r)
    elif r is None:
        if etype == "HTTP_STREAM_REQUEST_BOUND_TO_JOB" and _dep(p) is not None:
            st.job_of[sid] = _dep(p)  # type: ignore[assignment]
    elif etype == "URL_REQUEST_SET_PRIORITY":
        r.priority = text(p.get("priority"), 40) or r.priority
    elif etype == "HTTP_STREAM_REQUEST_BOUND_TO_JOB":
        if _dep(p) is not None:
            st.job_of[sid] = _dep(p)  # type: ignore[assignment]
    elif etype == "HTTP_STREAM_REQUEST_BOUND_TO_QUIC_SESSION":
        if _dep(p) is not None:
            st.req_quic[sid] = _dep(p)  # type: ignore[assignment]
    elif etype == "HTTP_TRANSACTION_SEND_REQUEST":
        if phase == "PHASE_BEGIN":
            r.send_start = t
        elif phase == "PHASE_END":
            r.send_end = t
    elif etype in ("HTTP_TRANSACTION_SEND_REQUEST_HEADERS", "HTTP_TRANSACTION_HTTP2_SEND_REQUEST_HEADERS",
                   "HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS", "HTTP_TRANSACTION_SPDY_SEND_REQUEST_HEADERS"):
        r.sent = True
        if r.send_start is None:
            r.send_start = t
        hs = _header_list(p.get("headers"))
        if etype == "HTTP_TRANSACTION_SEND_REQUEST_HEADERS":
            line = text(p.get("line"), 8192) or ""
            r.protocol = "http/1.0" if line.rstrip().endswith("HTTP/1.0") else "http/1.1"
        elif etype == "HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS":
            r.protocol = "h3"
            r.stream_id = integer(p.get("quic_stream_id"))
            u = integer(p.get("quic_priority_urgency"))
            if u is not None:
                r.extra["urgency"] = u
        else:
            r.protocol = "h2"
        r.request_headers = hs
    elif etype == "HTTP_TRANSACTION_READ_RESPONSE_HEADERS":
        rh = p.get("headers")
        if isinstance(rh, list) and rh and isinstance(rh[0], str):
            status = _status_line(rh[0])
            if status is not None and (status >= 200 or r.status is None):
                if status >= 200 or r.response_start is None:
                    r.response_start = t
                r.status = status
                r.response_headers = _header_list(rh[1:])
                ct = next((v for k, v in r.response_headers if k.lower() == "content-type"), None)
                r.content_type = ct.split(";")[0].strip() if ct else None
    elif etype == "HTTP_TRANSACTION_READ_BODY" and phase == "PHASE_END":
        if r.response_start is not None:
            r.response_end = t
    elif etype == "UPLOAD_DATA_STREAM_INIT" and phase == "PHASE_END":
        size = integer(p.get("total_size"))
        if size is not None and size >= 0 and p.get("is_chunked") is not True:
            r.request_body_bytes = size
    elif etype == "URL_REQUEST_JOB_FILTERED_BYTES_READ":
        nb = integer(p.get("byte_count"))
        if nb is not None and nb > 0:
            r.response_body_decoded_bytes = (r.response_body_decoded_bytes or 0) + nb
    elif etype == "URL_REQUEST_START_JOB" and phase == "PHASE_END":
        _set_error(st, r, p)
        if not r.sent and r.cache and r.error is None and r.response_start is None:
            r.response_start = t  # served from the cache: its headers read, the body follows
    elif etype in _CACHE_READS:
        if not r.sent:
            r.cache = "disk"  # Chrome's HTTP cache (DevTools' "(disk cache)"); the renderer's memory cache is not in a NetLog


def _stream_job(st: _Fill, sid: int, etype: str, phase: str, t: float, p: dict) -> None:
    """An event of an HTTP_STREAM_JOB: the socket, HTTP/2 or QUIC session it was bound to."""
    dep = _dep(p)
    if dep is None:
        return
    if etype == "HTTP_STREAM_JOB" and phase == "PHASE_BEGIN":  # (its dependency: the job controller)
        racing = p.get("using_quic") is True and p.get("type") in ("alternative", "dns_alpn_h3")
        st.job_ctl.setdefault(sid, (dep, racing, text(p.get("destination"), 300)))
    elif etype == "BOUND_TO_QUIC_SESSION_POOL_JOB":
        st.job_pool.setdefault(sid, (dep, t))
    elif etype == "SOCKET_POOL_BOUND_TO_SOCKET":
        st.job_sock[sid] = dep
    elif etype in ("HTTP2_SESSION_POOL_IMPORTED_SESSION_FROM_SOCKET", "HTTP2_SESSION_POOL_FOUND_EXISTING_SESSION",
                   "HTTP2_SESSION_POOL_CREATED_SESSION_FROM_SOCKET"):
        st.job_h2[sid] = dep
    elif etype == "QUIC_SESSION_POOL_USE_EXISTING_SESSION":
        st.job_quic[sid] = dep
    elif etype == "HTTP_STREAM_JOB_HTTP2_SESSION_AVAILABLE":  # (a session another job opened: bg-mixed's static.test/img/logo.png)
        st.job_h2.setdefault(sid, dep)
    elif etype == "HTTP_STREAM_JOB_BOUND_TO_REQUEST":  # (the job's side of the binding; the request's may not be logged)
        st.job_of.setdefault(dep, sid)


def _connect_job(st: _Fill, sid: int, etype: str, phase: str, t: float, p: dict) -> None:
    """An event of a connect job (TCP, SSL, a QUIC session pool job): the resolver job it
    waited for, the socket or QUIC session it made."""
    if etype in ("HOST_RESOLVER_MANAGER_REQUEST", "HOST_RESOLVER_IMPL_REQUEST"):  # (its own lookup, a cache hit too: Chrome's domain_lookup_*)
        lk = st.cj_lookup.setdefault(sid, [None, None])
        i = 0 if phase == "PHASE_BEGIN" else 1 if phase == "PHASE_END" else None
        if i is not None and lk[i] is None:
            lk[i] = t
        return
    dep = _dep(p)
    if dep is None:
        return
    if etype in ("HOST_RESOLVER_MANAGER_JOB_ATTACH", "HOST_RESOLVER_IMPL_JOB_ATTACH"):
        st.cj_resolver.setdefault(sid, (dep, t))
    elif etype == "CONNECT_JOB_SET_SOCKET":
        st.sock_cj.setdefault(dep, sid)
    elif etype == "QUIC_SESSION_CREATED":
        st.quic_cj.setdefault(dep, sid)


def _resolver_job(st: _Fill, sid: int, etype: str, phase: str, t: float, p: dict) -> None:
    """An event of a host resolver job: its begin and end (the lookup), and whether it failed."""
    if etype not in ("HOST_RESOLVER_MANAGER_JOB", "HOST_RESOLVER_IMPL_JOB"):
        return
    r = st.resolver.setdefault(sid, [None, None, False])
    if phase == "PHASE_BEGIN" and r[0] is None:
        r[0] = t
    elif phase == "PHASE_END" and r[1] is None:
        r[1] = t
        err = integer(p.get("net_error"))
        r[2] = err is not None and err < 0


def _socket(st: _Fill, sid: int, etype: str, phase: str, t: float, p: dict) -> None:
    """An event of a SOCKET: its TCP connect and TLS handshake."""
    c = st.socks.get(sid)
    if c is None:
        c = st.socks[sid] = LogConnection(f"socket {sid}", "tcp")
    if c.first_seen is None or t < c.first_seen:
        c.first_seen = t
    if c.last_seen is None or t > c.last_seen:
        c.last_seen = t
    if etype == "TCP_CONNECT":
        if phase == "PHASE_BEGIN":
            c.connect_start = t
        elif phase == "PHASE_END":
            c.connect_end = t
            c.client = split_host_port(p.get("local_address"))
            c.server = split_host_port(p.get("remote_address"))
    elif etype == "SSL_CONNECT":
        if phase == "PHASE_BEGIN":
            c.tls_start = t
        elif phase == "PHASE_END" and integer(p.get("net_error")) is None:
            c.tls_end = t
            c.tls_version = text(p.get("version"), 40)
            c.cipher_suite_id = integer(p.get("cipher_suite"))
            c.alpn = text(p.get("next_proto"), 40) or None
            c.resumed = p.get("is_resumed") if isinstance(p.get("is_resumed"), bool) else None


def _h2_session(st: _Fill, sid: int, etype: str, phase: str, t: float, p: dict) -> None:
    """An event of an HTTP2_SESSION: its socket, the stream of each job, DATA bytes per stream."""
    if etype == "HTTP2_SESSION_INITIALIZED":
        dep = _dep(p)
        if dep is not None:
            st.h2_sock[sid] = dep
        st.h2_alpn[sid] = text(p.get("protocol"), 20) or "h2"
    elif etype == "HTTP2_SESSION_SEND_HEADERS":
        dep, stream = _dep(p), integer(p.get("stream_id"))
        if dep is not None and stream is not None:
            st.h2_stream[dep] = (sid, stream)
        if stream is not None and p.get("fin") is True:
            st.h2_sent_fin.setdefault((sid, stream), t)
    elif etype == "HTTP2_SESSION_SEND_DATA":
        stream = integer(p.get("stream_id"))
        if stream is not None and p.get("fin") is True:
            st.h2_sent_fin.setdefault((sid, stream), t)
    elif etype in ("HTTP2_SESSION_RECV_HEADERS", "HTTP2_SESSION_RECV_DATA"):
        stream = integer(p.get("stream_id"))
        if etype == "HTTP2_SESSION_RECV_DATA":
            sz = integer(p.get("size"))
            if stream is not None and sz is not None and sz >= 0:
                st.h2_data[(sid, stream)] = st.h2_data.get((sid, stream), 0) + sz
        if stream is not None and p.get("fin") is True:
            st.h2_recv_fin.setdefault((sid, stream), t)


def _quic_session(st: _Fill, sid: int, etype: str, phase: str, t: float, p: dict) -> None:
    """An event of a QUIC_SESSION: the connection's addresses, ids, version, handshake, HTTP/3 DATA bytes."""
    c = st.quics.get(sid)
    if c is None:
        c = st.quics[sid] = LogConnection(f"quic session {sid}", "udp", protocol="h3", alpn="h3")
    if c.first_seen is None or t < c.first_seen:
        c.first_seen = t
    if c.last_seen is None or t > c.last_seen:
        c.last_seen = t
    if etype == "QUIC_SESSION" and phase == "PHASE_BEGIN":
        c.connect_start = t
        c.host = text(p.get("host"), 300)
        c.dcid = text(p.get("connection_id"), 80)
        c.isolation_key = text(p.get("network_anonymization_key") or p.get("network_isolation_key"), 1024)
    elif etype == "QUIC_SESSION_PACKET_RECEIVED" and c.client is None:
        c.client = split_host_port(p.get("self_address"))
        c.server = split_host_port(p.get("peer_address"))
    elif etype == "QUIC_SESSION_VERSION_NEGOTIATED" and c.quic_version is None:
        c.quic_version = text(p.get("version"), 40)
    elif etype == "QUIC_SESSION_UNAUTHENTICATED_PACKET_HEADER_RECEIVED" and c.scid is None:
        c.scid = text(p.get("source_connection_id"), 80)
    elif etype == "QUIC_SESSION_CRYPTO_HANDSHAKE_COMPLETE" and c.connect_end is None:
        c.connect_end = t
    elif etype == "QUIC_SESSION_CRYPTO_FRAME_SENT" and p.get("encryption_level") == "ENCRYPTION_HANDSHAKE":
        st.quic_finished.setdefault(sid, t)
    elif etype == "QUIC_SESSION_HANDSHAKE_DONE_FRAME_RECEIVED":
        st.quic_done.setdefault(sid, t)
    elif etype == "QUIC_SESSION_STREAM_FRAME_SENT" and p.get("fin") is True:
        stream = integer(p.get("stream_id"))
        if stream is not None:
            st.quic_sent_fin.setdefault((sid, stream), t)  # (the first: a retransmission is not the send)
    elif etype == "QUIC_SESSION_STREAM_FRAME_RECEIVED" and p.get("fin") is True:
        stream = integer(p.get("stream_id"))
        if stream is not None:
            st.quic_recv_fin.setdefault((sid, stream), t)
    elif etype == "HTTP3_DATA_FRAME_RECEIVED":
        stream, sz = integer(p.get("stream_id")), integer(p.get("payload_length"))
        if stream is not None and sz is not None and sz >= 0:
            st.quic_data[(sid, stream)] = st.quic_data.get((sid, stream), 0) + sz


_SOURCE_HANDLERS: dict[str, Callable[[_Fill, int, str, str, float, dict], None]] = {
    "URL_REQUEST": _url_request, "HTTP_STREAM_JOB": _stream_job, "SOCKET": _socket,
    "HTTP2_SESSION": _h2_session, "QUIC_SESSION": _quic_session,
    "HOST_RESOLVER_IMPL_JOB": _resolver_job,
    # (the connect jobs' source types over Chromium's versions)
    **dict.fromkeys(("CONNECT_JOB", "TRANSPORT_CONNECT_JOB", "TCP_CONNECT_JOB", "SSL_CONNECT_JOB", "SOCKS_CONNECT_JOB",
                     "HTTP_PROXY_CONNECT_JOB", "WEB_SOCKET_TRANSPORT_CONNECT_JOB", "QUIC_SESSION_POOL_DIRECT_JOB",
                     "QUIC_SESSION_POOL_JOB", "QUIC_STREAM_FACTORY_JOB"), _connect_job),
}


def _not_before(t: float | None, start: float) -> float | None:
    return None if t is None else max(t, start)


def _dns_of(st: _Fill, cj: int | None) -> tuple[float, float] | None:
    """(start, end) of the lookup connect job ``cj`` waited for: from when it attached to the
    resolver job (or the job's begin, if later) to the job's end; None without one (a cached
    or literal address) or when the lookup failed."""
    at = st.cj_resolver.get(cj) if cj is not None else None
    r = st.resolver.get(at[0]) if at is not None else None
    if at is None or r is None or r[1] is None or r[2]:
        return None
    start = max(at[1], r[0]) if r[0] is not None else at[1]
    return (start, r[1]) if r[1] >= start else None


def _raced_dns(st: _Fill, job: int | None, ctl_jobs: dict[int, list[int]]) -> tuple[float, float] | None:
    """The lookup the QUIC jobs racing ``job`` (the main job that served the request) waited
    for: Chrome's ``JobController::OnQuicHostResolution`` — a QUIC job (alternative, DNS ALPN
    H3) of the same controller and destination bound to a session pool job whose lookup (not
    a cache hit: it attached to a resolver job) was still running gives the request that
    job's DNS times (its HOST_RESOLVER_MANAGER_REQUEST, where Chrome stamps
    ``dns_resolution_start/end_time``; ``SetDnsResolutionTimeOverrides`` keeps the earliest
    start and the earliest end), while the main job waits for them.  None without one."""
    info = st.job_ctl.get(job) if job is not None else None
    if info is None:
        return None
    found = []
    for j in ctl_jobs.get(info[0], ()):
        ji, bound = st.job_ctl[j], st.job_pool.get(j)
        if j == job or not ji[1] or ji[2] != info[2] or bound is None or bound[0] not in st.cj_resolver:
            continue
        lk = st.cj_lookup.get(bound[0])
        # (bound while the lookup ran — Chrome's WaitForHostResolution; else no override)
        if lk is not None and lk[0] is not None and lk[1] is not None and lk[0] <= lk[1] and bound[1] <= lk[1]:
            found.append((lk[0], lk[1]))
    if not found:
        return None
    return min(a for a, _b in found), min(b for _a, b in found)


def _stream_ends(r: LogRequest, sent_fin: float | None, recv_fin: float | None) -> None:
    """The request's send end and (when the transaction never read its response to the end)
    its response end from its stream's own ends at the session: the frame with ``fin`` the
    browser sent, the one it received."""
    if r.send_start is not None and sent_fin is not None and sent_fin >= r.send_start and (r.send_end is None or sent_fin > r.send_end):
        r.send_end = sent_fin
    if r.response_end is None and r.response_start is not None and recv_fin is not None:
        r.response_end = max(recv_fin, r.response_start)


def _bind(st: _Fill) -> None:
    """Bind each request to its connection (through its job's socket or session), keep the
    connections that connected."""
    log, quics, socks = st.log, st.quics, st.socks
    used: dict[str, LogConnection] = {}
    first_on: dict[str, LogRequest] = {}
    srcid = lambda r: int(r.id.split(".", 1)[0])
    ctl_jobs: dict[int, list[int]] = {}
    for j, info in st.job_ctl.items():
        ctl_jobs.setdefault(info[0], []).append(j)
    for k, c in socks.items():
        d = _dns_of(st, st.sock_cj.get(k))
        if d is not None:
            c.dns_start, c.dns_end = d
    for k, c in quics.items():
        if c.connect_end is None:  # (no QUIC_SESSION_CRYPTO_HANDSHAKE_COMPLETE: Chrome logs it no more)
            end = st.quic_finished.get(k, st.quic_done.get(k))
            if end is not None and c.connect_start is not None and end >= c.connect_start:
                c.connect_end = end
        d = _dns_of(st, st.quic_cj.get(k))
        if d is not None:
            c.dns_start, c.dns_end = d
    for r in log.requests:
        if r.sent:
            r.cache = None  # (the cache entry read was validated over the network: not served from it)
        sid = srcid(r)
        conn = None
        q = st.req_quic.get(sid)
        job = st.job_of.get(sid)
        if q is None and job is not None:
            q = st.job_quic.get(job)
        if q is not None and q in quics:
            conn = quics[q]
            if r.stream_id is not None and (q, r.stream_id) in st.quic_data:
                r.response_body_bytes = st.quic_data[(q, r.stream_id)]
            if r.stream_id is not None:
                _stream_ends(r, st.quic_sent_fin.get((q, r.stream_id)), st.quic_recv_fin.get((q, r.stream_id)))
        sock = None
        if conn is None and job is not None:
            sess = st.job_h2.get(job)
            sock = st.job_sock.get(job)
            if sess is not None:
                sock = st.h2_sock.get(sess, sock)
                ss = st.h2_stream.get(job)
                if ss is not None:
                    r.stream_id = ss[1]
                    r.response_body_bytes = st.h2_data.get(ss)
                    _stream_ends(r, st.h2_sent_fin.get(ss), st.h2_recv_fin.get(ss))
            if sock is not None and sock in socks:
                conn = socks[sock]
                if sess is not None:
                    conn.protocol = "h2"
        if conn is None:
            continue
        r.connection = conn.key
        used[conn.key] = conn
        if r.sent and conn.key not in first_on:
            first_on[conn.key] = r
            first = conn.dns_start if conn.dns_start is not None else conn.connect_start
            if first is not None and r.start is not None and first >= r.start - 0.001:
                # the request opened the connection (or bound to its connect job within the
                # millisecond it began): its set-up, each step from the request's start at the
                # earliest — a job begun a moment before is not a negative "blocked"
                s0 = r.start
                if conn.dns_start is not None:
                    r.dns_start, r.dns_end = _not_before(conn.dns_start, s0), _not_before(conn.dns_end, s0)
                # served by the main job while a racing QUIC job looked the name up: Chrome's load
                # timing (HttpNetworkTransaction::GetLoadTimingInfo) takes the QUIC job's lookup
                # where it began and ended before the connection's own (a cache hit once the main
                # job, held back for it, resumed) — the wait was DNS, not queueing
                raced = _raced_dns(st, job, ctl_jobs) if sock is not None else None
                own = st.cj_lookup.get(st.sock_cj.get(sock, -1)) if sock is not None else None
                if raced is not None and (own is None or None in own or (raced[0] <= own[0] and raced[1] <= own[1])):
                    r.dns_start, r.dns_end = _not_before(raced[0], s0), _not_before(raced[1], s0)
                r.connect_start, r.connect_end = _not_before(conn.connect_start, s0), _not_before(conn.connect_end, s0)
                if conn.tls_end is not None:
                    r.ssl_start, r.ssl_end = _not_before(conn.tls_start, s0), _not_before(conn.tls_end, s0)
    for c in list(socks.values()) + list(quics.values()):
        if c.server is None:
            continue  # never connected (a name that did not resolve, a refused connection)
        if c.protocol is None:
            c.protocol = {"h2": "h2", "http/1.1": "http/1.1"}.get(c.alpn or "", None)
        log.connections[c.key] = c
    for r in log.requests:
        if r.connection is not None and r.connection not in log.connections:
            r.connection = None
        rc = log.connections.get(r.connection) if r.connection else None
        if r.protocol is None and rc is not None:
            r.protocol = rc.protocol


def iter_requests(log: BrowserLog) -> Iterator[LogRequest]:
    return iter(log.requests)
