"""HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) as a ``BrowserLog``: Chrome and
Firefox DevTools exports, WebPageTest, Playwright's ``record_har_path`` and wirefall's own
export (whose ``_``-extensions — ``_exchange``, ``_connection``, ``_stream_id``,
``_protocol``, ``_priority``, ``_pushed``, ``_reset``, ``_error``, ``_packets``,
``_background``, ``_not_sent`` — are read back, so that a capture exported to HAR reads back
as the same requests: tests/test_har_roundtrip24.py).

Times: ``startedDateTime`` (ISO 8601, any offset) is the request's start; the ``timings``
follow in the spec's order — blocked, dns, connect (which includes ssl), send, wait,
receive; −1 (or absent) is "does not apply" and adds nothing.  So ``send_start`` = start +
blocked + dns + connect, ``response_start`` (headers received) = send_end + wait,
``response_end`` = that + receive.  A HAR gives no client port and no packet: connections
are named by the entry's ``_connectionId`` (Chrome DevTools' socket id; its ``connection`` is
the server's port, not an id), else ``connection`` (wirefall: its connection id), else
WebPageTest's ``_socket``, with ``serverIPAddress`` and the URL's port (or ``_server_port``/``_serverPort``).
Entries served from a cache (``_fromCache``, ``cache.beforeRequest`` hit with no timings)
or that failed before sending (status 0 with ``_error``, nothing sent or waited for) did not
reach the network; one that shows its request went out (``_packets``, a reset, time in send
or wait) did, answered or not.  On QUIC ``ssl`` = ``connect`` is the handshake (the model's
connect, no TLS span).  An entry without ``pageref`` in a HAR whose entries name pages, or
with wirefall's ``_background``, is not the page's (``LogRequest.background``).

WebPageTest writes an entry's ``startedDateTime`` at the request's *send* — its page's start
plus the entry's ``_load_start`` (ms) — with the ``blocked``/``dns``/``connect`` before it
(its ``_all_start`` < ``_load_start``): laid after it, as the spec reads, they put the first
request of each connection 100-200 ms late (amazon run 1: the HTML's first byte at 258 ms
from the page's start where WebPageTest's ``_ttfb_end`` says 144).  Where an entry's own
fields show it (``startedDateTime`` = page start + ``_load_start`` within the HAR's
millisecond, ``_all_start`` < ``_load_start``), its start is taken back by those timings, so
that the send begins at ``startedDateTime``.

A HAR may hold several pages (``log.pages``; WebPageTest: one per run, DevTools with
"preserve log": one per navigation): each entry's ``pageref`` is kept
(``LogRequest.page``); ``pages.select`` shows one page at a time.
"""
from __future__ import annotations

import datetime as _dt
import json
from typing import Any
from urllib.parse import urlsplit

from wirefall.dissectors.registry import over_quic

from .detect import BrowserLogError, read_text
from .records import (BrowserLog, obj, LogConnection, LogRequest, integer, nonneg, num, protocol_name, sane_epoch,
                      strip_brackets, text)

MAX_ENTRIES = 1_000_000  # limits["browserlog_entries"]
# the longest phase or page time (ms) taken as a time: 30 days (a value beyond — 1e308, 1e15 —
# is no time of a page load; laid end to end such values overflowed to infinity)
MAX_PHASE_MS = 30 * 86_400_000.0
# the largest byte count taken as a size: 2**53 - 1, exact in every JSON reader (10**400 is
# valid JSON, and overflowed every float conversion)
MAX_SIZE = (1 << 53) - 1


def phase_ms(v: Any) -> float | None:
    """A phase's or page time's length in ms: finite, 0 to ``MAX_PHASE_MS``; else None."""
    f = nonneg(v)
    return f if f is not None and f <= MAX_PHASE_MS else None


def stream_id(v: Any) -> int | None:
    """A stream id: an integer 0 to 2**62 - 1 (QUIC's largest; HTTP/2's are below 2**31)."""
    n = integer(v)
    return n if n is not None and 0 <= n < 1 << 62 else None


def size(v: Any) -> int | None:
    """A byte count: an integer 0 to ``MAX_SIZE`` (HAR's -1, "unknown", and the rest: None)."""
    n = integer(v)
    return n if n is not None and 0 <= n <= MAX_SIZE else None


def parse_time(v: Any) -> float | None:
    """ISO 8601 date-time -> epoch seconds (a time without offset is taken as UTC)."""
    if not isinstance(v, str) or not (10 <= len(v) <= 64):
        return None
    s = v.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        d = _dt.datetime.fromisoformat(s)
    except ValueError:
        # fromisoformat (3.11) takes 1-6 fraction digits in most forms; cut longer fractions
        if "." in s:
            head, _, frac = s.partition(".")
            digits = "".join(ch for ch in frac[:9] if ch.isdigit())
            rest = frac[len(digits):]
            try:
                d = _dt.datetime.fromisoformat(f"{head}.{digits[:6].ljust(6, '0')}{rest}")
            except ValueError:
                return None
        else:
            return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.UTC)
    try:
        return sane_epoch(d.timestamp())
    except (OverflowError, OSError, ValueError):
        return None


# what wirefall's HAR export writes for a header value it leaves out reads back as not known,
# counted as such (requests' unknown fields), never the placeholder taken for what was sent
from ..completeness import UNKNOWN as _UNKNOWN  # noqa: E402
from ..export import LEFT_OUT as _LEFT_OUT  # noqa: E402
from ..export import SENSITIVE as _SENSITIVE  # noqa: E402


def _headers(v: Any) -> list[tuple[str, str]]:
    out = []
    if isinstance(v, list):
        for h in v:
            if isinstance(h, dict):
                k, x = h.get("name"), h.get("value")
                if isinstance(k, str) and isinstance(x, (str, int, float)) and not isinstance(x, bool):
                    x = _UNKNOWN if x == _LEFT_OUT and k.lower() in _SENSITIVE else str(x)
                    out.append((k[:8192], x[:1 << 16]))
    return out


def _initiator(v: Any) -> tuple[str | None, str | None]:
    """(initiator, its type): Chrome ``{"type": "parser", "url": …}`` (or a stack), WebPageTest a URL."""
    if isinstance(v, str):
        return v[:2048] or None, None
    if isinstance(v, dict):
        typ = text(v.get("type"), 40)
        url = text(v.get("url"), 2048)
        if url is None:
            st = v.get("stack")
            frames = st.get("callFrames") if isinstance(st, dict) else None
            if isinstance(frames, list):
                url = next((text(f.get("url"), 2048) for f in frames if isinstance(f, dict) and f.get("url")), None)
        return url, typ
    return None, None


def read(path: str, limits: dict | None = None) -> BrowserLog:
    lim = limits or {}
    s, comp, warnings = read_text(path, **({"limit": lim["browserlog_bytes"]} if lim.get("browserlog_bytes") else {}))
    try:
        d = json.loads(s)
    except RecursionError:
        raise BrowserLogError(f"{path}: HAR nested too deeply to read") from None
    except ValueError as e:
        raise BrowserLogError(f"{path}: HAR is not valid JSON ({e})") from None
    log = BrowserLog("har", path, compression=comp)
    log.warnings.extend(warnings)
    fill(log, d, lim.get("browserlog_entries", MAX_ENTRIES))
    return log


def fill(log: BrowserLog, d: Any, max_entries: int = MAX_ENTRIES) -> None:
    if not isinstance(d, dict) or not isinstance(d.get("log"), dict):
        raise BrowserLogError(f"{log.path}: not a HAR: no \"log\" object")
    hl = d["log"]
    entries = hl.get("entries")
    if not isinstance(entries, list):
        raise BrowserLogError(f"{log.path}: not a HAR: log.entries is not a list")
    cr = hl.get("creator")
    if isinstance(cr, dict):
        log.creator = " ".join(x for x in (text(cr.get("name"), 80), text(cr.get("version"), 40)) if x) or None
    wirefall = (log.creator or "").startswith("wirefall")
    devtools = (log.creator or "").startswith("WebInspector")  # (Chrome DevTools' creator name)
    pages = hl.get("pages")
    if isinstance(pages, list):
        for p in pages:
            if not isinstance(p, dict):
                continue
            start = parse_time(p.get("startedDateTime"))
            pt = obj(p.get("pageTimings"))
            ocl, ol = phase_ms(pt.get("onContentLoad")), phase_ms(pt.get("onLoad"))
            # WebPageTest's Start Render (its waterfall's green line: the first paint of content),
            # pageTimings._startRender, else its page's _render; wirefall's own HAR writes the former
            sr = phase_ms(pt.get("_startRender"))
            sr = phase_ms(p.get("_render")) if sr is None else sr
            log.pages.append({"id": text(p.get("id"), 200), "title": text(p.get("title"), 500), "start": start,
                              "on_content_load": None if ocl is None or start is None else start + ocl / 1000.0,
                              "on_load": None if ol is None or start is None else start + ol / 1000.0,
                              "start_render": None if not sr or start is None else start + sr / 1000.0})
    if len(entries) > max_entries:
        log.warnings.append(f"HAR has {len(entries)} entries; read the first {max_entries} (limits['browserlog_entries'])")
        entries = entries[:max_entries]
    bad = 0
    page_start: dict[str, float] = {}
    for pg in log.pages:
        if pg["id"] is not None and pg["start"] is not None:
            page_start.setdefault(pg["id"], pg["start"])
    # a HAR that names pages and ties entries to them: an entry it ties to none is not the page's
    paged = bool(log.pages) and any(isinstance(en, dict) and isinstance(en.get("pageref"), str) and en["pageref"] for en in entries)
    for i, en in enumerate(entries):
        r = _entry(log, i, en, wirefall, page_start, has_pages=paged, devtools=devtools)
        if r is None:
            bad += 1
            continue
        log.requests.append(r)
    log.skipped += bad
    if bad:
        log.warnings.append(f"HAR: {bad} malformed entries left out")


def _wpt_sent_at_start(en: dict, start: float, page_start: float | None) -> bool:
    """Whether ``startedDateTime`` is, as WebPageTest writes it, the request's send (its
    page's start + ``_load_start`` ms, within the HAR's millisecond) with its set-up before
    (``_all_start`` < ``_load_start``)."""
    load_start, all_start = num(en.get("_load_start")), num(en.get("_all_start"))
    if page_start is None or load_start is None or all_start is None or not all_start < load_start:
        return False
    return abs(page_start + load_start / 1000.0 - start) <= 0.0015


# WebPageTest's own set-up times of an entry (ms from its page's start; −1: none): the model's
# (start, end) fields each pair sets
_WPT_SPANS = (("_dns_start", "_dns_end", "dns_start", "dns_end"), ("_connect_start", "_connect_end", "connect_start", "connect_end"),
              ("_ssl_start", "_ssl_end", "ssl_start", "ssl_end"))


def _wpt_setup(r: LogRequest, en: dict, page_start: float, send: float) -> None:
    """Where WebPageTest gives an entry's DNS, connect and TLS as times from its page's start
    (``_dns_start``/``_dns_end``, ``_connect_*``, ``_ssl_*``), those times, not the
    ``timings`` laid back to back before the send: WebPageTest's ``timings`` are lengths
    without the gaps between them (amazon run 1, fls-na: DNS 2338–2425 ms, connect from
    2451, the send at 2560 — the capture's DNS query at 2335 and SYN at 2450 on the same
    clock —, where the lengths back to back put the DNS at 2366).  A pair is taken only
    when whole and in order before the send; the request's start is then ``_all_start``."""
    lim = (send - page_start) * 1000.0 + 1.0
    for a, b, fa, fb in _WPT_SPANS:
        ta, tb = num(en.get(a)), num(en.get(b))
        if ta is not None and tb is not None and 0 <= ta <= tb <= lim:
            setattr(r, fa, page_start + ta / 1000.0)
            setattr(r, fb, page_start + tb / 1000.0)
    first = min((x for x in (r.dns_start, r.connect_start, r.ssl_start) if x is not None), default=None)
    all_start = num(en.get("_all_start"))
    if all_start is not None and 0 <= all_start <= lim and (first is None or page_start + all_start / 1000.0 <= first + 0.0005):
        r.start = page_start + all_start / 1000.0
    elif first is not None and r.start is not None and first < r.start:
        r.start = first


# why an entry is not its HAR's page (``LogRequest.background``) when the HAR says no more
NO_PAGEREF = "the HAR gives it no pageref: not one of its pages' requests"


def _went_out(en: dict, send: float | None, wait: float | None) -> bool:
    """Whether the entry shows its request on the network: wirefall's ``_packets`` with the
    request's first packet, a stream reset (``_reset``, or an ``_error`` naming one: the
    request was sent, the answer cut), or time spent sending or waiting (Chrome writes
    send 0, wait 0 for a request that failed before it was sent)."""
    pk = en.get("_packets")
    if isinstance(pk, dict) and integer(pk.get("request_start")) is not None:
        return True
    if isinstance(en.get("_reset"), str) and en["_reset"]:
        return True
    err = en.get("_error")
    if isinstance(err, str) and ("reset by the" in err[:200] or "RST_STREAM" in err[:200]):
        return True
    return (send or 0.0) + (wait or 0.0) > 0.0


def _entry(log: BrowserLog, i: int, en: Any, wirefall: bool, page_start: dict[str, float] | None = None,
           has_pages: bool = False, devtools: bool = False) -> LogRequest | None:
    if not isinstance(en, dict):
        return None
    req, resp = en.get("request"), en.get("response")
    if not isinstance(req, dict):
        return None
    if not isinstance(resp, dict):
        resp = {}
    start = parse_time(en.get("startedDateTime"))
    url = text(req.get("url"))
    if start is None or not url:
        return None
    r = LogRequest(id=str(i), method=text(req.get("method"), 40) or None, url=url, start=start)
    pref = en.get("pageref")
    r.page = text(pref, 200) if isinstance(pref, str) and pref else None
    st = integer(resp.get("status"))
    r.status = st if st is not None and 0 < st < 1000 else None
    tm = obj(en.get("timings"))
    ms = lambda k: phase_ms(tm.get(k))
    blocked, dns, connect, ssl = ms("blocked"), ms("dns"), ms("connect"), ms("ssl")
    send, wait, receive = ms("send"), ms("wait"), ms("receive")
    before = sum(x for x in (blocked, dns, connect) if x is not None)
    p0 = (page_start or {}).get(r.page or "")
    wpt = bool(before) and _wpt_sent_at_start(en, start, p0)
    if wpt:
        start = r.start = start - before / 1000.0  # (WebPageTest: the set-up came before startedDateTime)
    t = start
    if blocked is not None:
        t += blocked / 1000.0
    else:
        r.blocked_unknown = True
    if dns is not None:
        r.dns_start, t = t, t + dns / 1000.0
        r.dns_end = t
    hv = text(resp.get("httpVersion"), 40) or text(req.get("httpVersion"), 40)
    r.protocol = protocol_name(en.get("_protocol")) if wirefall else None
    r.protocol = r.protocol or protocol_name(hv) or protocol_name(en.get("_protocol"))
    if connect is not None:
        r.connect_start, t = t, t + connect / 1000.0
        r.connect_end = t
        # HAR: connect includes ssl; the model's connect is TCP alone.  On QUIC the handshake
        # is the TLS handshake: ssl = connect (Chrome, WebPageTest and wirefall's own HAR write
        # it so) is the connect phase, with no TLS phase of its own — as the wire's QUIC rows
        quic_hs = over_quic(r.protocol) and ssl is not None and abs(ssl - connect) <= 0.0005
        if ssl is not None and ssl <= connect and not quic_hs:
            r.ssl_start, r.ssl_end = t - ssl / 1000.0, t
            r.connect_end = r.ssl_start
    if wpt and p0 is not None:
        _wpt_setup(r, en, p0, t)
    # wirefall's own HAR counts in send the connection's idle before the request went out
    # (``_send_idle``, as DevTools puts that gap in send): the request's first byte is after it
    idle = phase_ms(tm.get("_send_idle")) if wirefall else None
    if idle is not None and send is not None and 0 < idle <= send:
        t += idle / 1000.0
        send -= idle
    r.send_start = t
    if send is not None:
        t += send / 1000.0
    r.send_end = t
    fc = en.get("_fromCache") or (en.get("_cached") if isinstance(en.get("_cached"), str) else None)
    r.cache = text(fc, 40) if isinstance(fc, str) else None
    err = en.get("_error") or resp.get("_error") or resp.get("_failureText")
    r.error = text(err, 500) if err else None
    # a response came: a status, a body received — or a cache hit (a response from the cache,
    # whose bodySize is 0 by HAR 1.2: nothing received; a NetLog's has no status either).  Status 0
    # with no body and no cache is none (its wait, if any, ran to the end)
    cache_hit = r.cache is not None and r.error is None
    seen = r.status is not None or (integer(resp.get("bodySize")) or -1) > 0 or cache_hit
    if seen:  # a response came (status 0 with no body: none did; its wait, if any, ran to the end)
        if wait is not None:
            t += wait / 1000.0
        r.response_start = t
        if receive is not None:
            t += receive / 1000.0
        r.response_end = t
    r.request_headers = _headers(req.get("headers"))
    r.response_headers = _headers(resp.get("headers"))
    # headersSize: the size of the header text the browser reports (HTTP/2, HTTP/3: an
    # uncompressed HTTP/1-style reconstruction; Playwright's responses 0), not the wire's
    # compressed header block; kept as the log's (``browser.headers_size``), never as wire bytes
    # (build.exchange: wirefall's own HAR gives those in ``_header_bytes_wire``)
    r.request_header_bytes, r.response_header_bytes = size(req.get("headersSize")), size(resp.get("headersSize"))
    r.request_body_bytes, r.response_body_bytes = size(req.get("bodySize")), size(resp.get("bodySize"))
    content = obj(resp.get("content"))
    # HAR 1.2's content.size is the decoded length; WebPageTest writes there the bytes as
    # transferred (its ``_objectSize``, = bodySize: amazon's HTML 2007 of 5070 decoded) and the
    # decoded length in ``_objectSizeUncompressed`` (its breakdown's "bytesUncompressed")
    unc = size(en.get("_objectSizeUncompressed"))
    r.response_body_decoded_bytes = unc if unc is not None else size(content.get("size"))
    if cache_hit and not r.response_body_bytes:
        # (bodySize 0: none over the network, HAR 1.2's rule for a cache hit — not an empty body:
        # the body's size is content.size, as a NetLog's cache hit reads its bytes: build.exchange)
        r.response_body_bytes = None
    mt = text(content.get("mimeType"), 200)
    r.content_type = mt.strip() or None if mt else None  # (with its parameters, as the Content-Type: HAR 1.2 keeps the charset)
    pr = en.get("_priority")
    r.priority = text(pr, 40) if isinstance(pr, str) else None
    r.initiator, r.initiator_type = _initiator(en.get("_initiator"))
    r.initiator_type = r.initiator_type or text(en.get("_initiator_type"), 40)
    r.resource_type = text(en.get("_resourceType"), 80) or text(en.get("_request_type"), 80)
    # did it reach the network?  a cache hit, a failure before sending or a request with no
    # time at all (all timings −1) did not — unless the entry shows it went out: the packets
    # wirefall's own HAR names for its request, a stream reset (the server's or the client's:
    # the request was on the wire), or time spent sending or waiting for an answer
    # (a cache hit's own read time is no send: Chrome writes a wait for it)
    ns = en.get("_not_sent") if wirefall else None
    if isinstance(ns, str) and ns:  # wirefall's HAR of a browser log's request that never reached the network
        r.sent = False
        r.redirected = ns == "redirected"
        if ns == "cancelled" and r.error_code is None:
            r.error_code = -3  # (ERR_ABORTED: what not_sent reads as cancelled)
    elif r.cache and not _went_out(en, None, None):
        r.sent = False
    elif not _went_out(en, send, wait) and ((r.status is None and r.error) or (send is None and wait is None and receive is None
                                                                                and connect is None)):
        r.sent = False
    # wirefall's own HAR says which entries are not the page's (``_background``, with its
    # reason); any HAR that names pages does so by leaving an entry without ``pageref``
    if wirefall and en.get("_background") is True:
        why = en.get("_background_reason")
        r.background = text(why, 500) if isinstance(why, str) and why else NO_PAGEREF
    elif r.page is None and has_pages:
        r.background = NO_PAGEREF
    # the connection: Chrome _connectionId (socket id), wirefall's and others' "connection",
    # WebPageTest _socket; server address and port
    ip = strip_brackets(en.get("serverIPAddress")) or strip_brackets(en.get("_ip_addr"))
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname
        scheme = parts.scheme
    except ValueError:
        port, host, scheme = None, None, ""
    sp = integer(en.get("_server_port")) or integer(en.get("_serverPort"))
    port = sp if sp and 0 < sp < 65536 else port or {"https": 443, "http": 80}.get(scheme)
    # Chrome DevTools writes its socket id as ``_connectionId`` and, in ``connection``, the
    # server's port ("443": the remote address after its last colon, HARLog.ts): taken as an id,
    # that port made every connection to one address one (its h2 and h3, its six HTTP/1.1
    # sockets), whose requests then found no exchange on the one wire connection it matched.  A
    # DevTools HAR without _connectionId (older DevTools) names no socket: grouped by server
    key = en.get("_connectionId")
    if key is None or isinstance(key, bool) or str(key) in ("", "0"):
        key = en.get("connection")
        if devtools and isinstance(key, str) and key.isdigit() and port is not None and int(key) == port:
            key = None
    if key is None or isinstance(key, bool):
        key = en.get("_socket")
    group = False
    ck: str | None
    if isinstance(key, (str, int)) and not isinstance(key, bool) and str(key):
        ck = f"{ip or host}|{key}"
    else:  # Playwright, Firefox: no connection id; one group per server (and protocol)
        ck = f"{ip or host}|{port}|{r.protocol or ''}" if (ip or host) else None
        group = True
    if wirefall:
        r.extra = {k: en[k] for k in ("_exchange", "_connection", "_stream_id", "_pushed", "_push_parent", "_priority", "_priority_wire",
                                      "_header_bytes_wire", "_header_bytes_decoded", "_reset") if k in en}
        r.stream_id = stream_id(en.get("_stream_id"))
        r.pushed = en.get("_pushed") is True
        r.priority = None
    else:
        r.stream_id = stream_id(en.get("_http2_stream_id")) or None  # (0: none)
    transport = "udp" if over_quic(r.protocol) else "tcp"
    if ck is not None and r.sent:
        c = log.connections.get(ck)
        if c is None:
            c = log.connections[ck] = LogConnection(ck, transport, server=(ip, port) if ip and port else None, host=host,
                                                    protocol=r.protocol, group=group)
        if c.connect_start is None and r.connect_start is not None:
            c.connect_start, c.connect_end = r.connect_start, r.connect_end
            c.tls_start, c.tls_end = r.ssl_start, r.ssl_end
        sec = en.get("_securityDetails")
        if isinstance(sec, dict) and c.tls_version is None:
            c.tls_version = text(sec.get("protocol"), 40)
            c.cipher_suite = text(sec.get("cipher"), 80)
        if c.tls_version is None and isinstance(en.get("_tls_version"), str):
            c.tls_version = text(en.get("_tls_version"), 40)
        r.connection = ck
    return r
