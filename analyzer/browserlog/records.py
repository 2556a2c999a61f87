"""What every browser log reader returns: the log's connections and requests, with the
browser's own times (float epoch seconds, None where the log does not say), before they
become the model (``build.to_analysis``) or are laid over a capture (``matching.apply``)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

# wirefall's protocol names (analyzer.model Exchange.protocol) for the versions logs write
PROTOCOLS = {
    "http/1.0": "http/1.0", "http/1.1": "http/1.1", "http/1": "http/1.1", "h1": "http/1.1",
    "h2": "h2", "http/2": "h2", "http/2.0": "h2", "h2c": "h2c",
    "h3": "h3", "http/3": "h3", "http/3.0": "h3", "h3-29": "h3-29", "quic": "h3", "http/2+quic/46": "gquic",
    "spdy": "spdy/3.1", "spdy/3": "spdy/3", "spdy/3.1": "spdy/3.1", "spdy/2": "spdy/2",
}


def protocol_name(v: Any) -> str | None:
    if not isinstance(v, str) or not v:
        return None
    return PROTOCOLS.get(v.strip().lower())


@dataclass(slots=True)
class LogConnection:
    key: str  # the log's own name for it (NetLog socket/session id, HAR "connection", qlog group)
    transport: str = "tcp"  # tcp | udp
    client: tuple[str, int] | None = None  # None: the log does not say (a HAR names no client port)
    server: tuple[str, int] | None = None
    host: str | None = None  # the host name it was opened for (SNI)
    protocol: str | None = None
    dns_start: float | None = None  # the host resolution it waited for (NetLog: its connect job's resolver job)
    dns_end: float | None = None
    connect_start: float | None = None
    connect_end: float | None = None
    tls_start: float | None = None
    tls_end: float | None = None
    tls_version: str | None = None
    cipher_suite: str | None = None
    cipher_suite_id: int | None = None
    alpn: str | None = None
    quic_version: str | None = None
    scid: str | None = None
    dcid: str | None = None
    resumed: bool | None = None
    group: bool = False  # the log does not tell its connections apart (a HAR without "connection"): all to one server
    # the log's first and last event of the socket or session (NetLog): its span where nothing
    # else times it — a session that began before the log and carried no request of it
    first_seen: float | None = None
    last_seen: float | None = None
    # the key the browser opened it under (a NetLog QUIC session's ``network_anonymization_key``,
    # "https://amazon.com same_site"): whose it is where it carried no request of the log
    isolation_key: str | None = None


@dataclass(slots=True)
class LogRequest:
    id: str  # the log's id of the request (NetLog source id, HAR entry index, qlog stream)
    method: str | None = None
    url: str | None = None
    status: int | None = None
    protocol: str | None = None
    connection: str | None = None  # LogConnection.key
    stream_id: int | None = None
    sent: bool = True  # reached the network (False: served from a cache, failed before sending)
    start: float | None = None  # the browser's request start (queued)
    blocked_unknown: bool = False  # a HAR's timings.blocked -1 (or none): queueing "does not apply" (NetLog, qlog: from their times)
    dns_start: float | None = None
    dns_end: float | None = None
    connect_start: float | None = None
    connect_end: float | None = None
    ssl_start: float | None = None
    ssl_end: float | None = None
    send_start: float | None = None
    send_end: float | None = None
    response_start: float | None = None  # response headers received
    response_end: float | None = None
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    request_header_bytes: int | None = None
    response_header_bytes: int | None = None
    request_body_bytes: int | None = None
    response_body_bytes: int | None = None  # on the wire (encoded)
    response_body_decoded_bytes: int | None = None
    content_type: str | None = None
    priority: str | None = None  # the browser's priority name (HIGHEST, High, u=1 …)
    initiator: str | None = None
    initiator_type: str | None = None
    resource_type: str | None = None
    error: str | None = None
    error_code: int | None = None  # the log's net error code (NetLog ``net_error``; a HAR's Chrome name's code)
    redirected: bool = False  # a later job of the same request followed it (NetLog: a redirect, also one the browser made itself)
    pushed: bool = False
    cache: str | None = None  # memory | disk | … when the log says it came from a cache
    page: str | None = None  # the id of the log's page it belongs to (HAR ``pageref``; None: the log names none)
    # why the log says it is not its page's (a HAR entry without pageref where the HAR names
    # pages; wirefall's own ``_background_reason``); None: the log does not say so
    background: str | None = None
    extra: dict = field(default_factory=dict)  # wirefall's own HAR extensions, read back
    # whose request it is, as Chrome's NetLog says (URL_REQUEST_START_JOB; None: the log does not say).
    # ``browser_initiated``: its initiator is "not an origin" — no document started it: the browser
    # itself, or a navigation typed in the address bar.  ``isolation_key``: the network isolation
    # key as logged ("https://amazon.com https://amazon.com": top-frame site, frame site, nonce),
    # ``top_frame_site`` / ``frame_site`` its sites (None: "null", opaque or absent),
    # ``site_for_cookies`` the site of "SiteForCookies: {site=…}" (None: null)
    browser_initiated: bool = False
    isolation_key: str | None = None
    top_frame_site: str | None = None
    frame_site: str | None = None
    site_for_cookies: str | None = None


@dataclass
class BrowserLog:
    kind: str  # har | netlog | qlog
    path: str
    creator: str | None = None
    compression: str = ""
    connections: dict[str, LogConnection] = field(default_factory=dict)
    requests: list[LogRequest] = field(default_factory=list)
    pages: list[dict] = field(default_factory=list)  # {"id", "title", "start", "on_content_load", "on_load", "start_render"} (epoch)
    # a HAR of several pages cut to one (``pages.select``): which page, of how many (``summary.page_shown``)
    page_shown: dict | None = None
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0  # malformed records left out
    cids: dict = field(default_factory=dict)  # qlog: connection key -> the connection IDs its packets carry (lower-case hex)


TIME_FIELDS = ("start", "dns_start", "dns_end", "connect_start", "connect_end", "ssl_start", "ssl_end",
               "send_start", "send_end", "response_start", "response_end")  # a LogRequest's times
_CONNECTION_TIMES = ("dns_start", "dns_end", "connect_start", "connect_end", "tls_start", "tls_end")
_PAGE_TIMES = ("start", "on_content_load", "on_load", "start_render")


def to_microseconds(log: BrowserLog) -> BrowserLog:
    """Every time of ``log`` (epoch seconds) rounded to the microsecond, in place: a log's times
    are sums of milliseconds (a HAR's start plus its fractional-ms timings, a NetLog's base plus
    its ticks), whose float noise (1796119088.7096932) went out in the JSON, whose times are
    documented to the microsecond (docs/JSON.md) as a capture's are.  Durations stay differences."""
    def r(o, names):
        for k in names:
            v = getattr(o, k)
            if type(v) is float:
                setattr(o, k, round(v, 6))
    for c in log.connections.values():
        r(c, _CONNECTION_TIMES)
    for q in log.requests:
        r(q, TIME_FIELDS)
    for p in log.pages:
        for k in _PAGE_TIMES:
            if type(p.get(k)) is float:
                p[k] = round(p[k], 6)
    return log


# Chrome's net errors (net/base/net_error_list.h) a NetLog without its own ``constants.netError``
# table, or a HAR's ``_error`` text, may name: the NetLog's own table comes first
NET_ERRORS = {
    -2: "ERR_FAILED", -3: "ERR_ABORTED", -7: "ERR_TIMED_OUT", -20: "ERR_BLOCKED_BY_CLIENT", -21: "ERR_NETWORK_CHANGED",
    -27: "ERR_BLOCKED_BY_RESPONSE", -100: "ERR_CONNECTION_CLOSED", -101: "ERR_CONNECTION_RESET",
    -102: "ERR_CONNECTION_REFUSED", -103: "ERR_CONNECTION_ABORTED", -104: "ERR_CONNECTION_FAILED",
    -105: "ERR_NAME_NOT_RESOLVED", -106: "ERR_INTERNET_DISCONNECTED", -107: "ERR_SSL_PROTOCOL_ERROR",
    -109: "ERR_ADDRESS_UNREACHABLE", -118: "ERR_CONNECTION_TIMED_OUT", -137: "ERR_NAME_RESOLUTION_FAILED",
    -200: "ERR_CERT_COMMON_NAME_INVALID", -201: "ERR_CERT_DATE_INVALID", -202: "ERR_CERT_AUTHORITY_INVALID",
    -310: "ERR_TOO_MANY_REDIRECTS", -324: "ERR_EMPTY_RESPONSE", -356: "ERR_QUIC_PROTOCOL_ERROR",
}
_NET_CODES = {v: k for k, v in NET_ERRORS.items()}
MAX_NET_ERROR = 1 << 20  # a code beyond ±this is no net error (Chrome's are −1 … −1000s)

# why a request of the log never reached the network (``NotSent.reason``), and how a row says it
NOT_SENT_REASONS = ("cache", "failed", "cancelled", "redirected", "unfinished")


def net_error_name(code: int | None, table: dict[int, str] | None = None) -> str | None:
    """Chrome's name of net error ``code`` (``ERR_CONNECTION_REFUSED``): the log's own table
    (``constants.netError``) first, else ``NET_ERRORS``; None for no code or an unknown one."""
    if code is None:
        return None
    name = (table or {}).get(code) or NET_ERRORS.get(code)
    return name[:80] if isinstance(name, str) and name else None


def net_error_code(name: str | None) -> int | None:
    """The code of a Chrome net error named in text (``net::ERR_ABORTED``), None if none."""
    if not name:
        return None
    m = re.search(r"ERR_[A-Z0-9_]+", name[:200])
    return _NET_CODES.get(m.group(0)) if m else None


@dataclass(frozen=True, slots=True)
class NotSent:
    """A request of the log that never reached the network: served from a cache, failed or
    cancelled before sending, redirected by the browser itself, or not finished when logging
    stopped.  ``start``: epoch seconds on the log's clock."""
    id: str
    url: str | None
    method: str | None
    reason: str  # one of NOT_SENT_REASONS
    cache: str | None = None  # reason "cache": which ("disk", "memory", … as the log says)
    net_error_code: int | None = None
    net_error_name: str | None = None
    start: float | None = None

    @property
    def label(self) -> str:
        """How a row says it (DevTools writes "(disk cache)" in its size column)."""
        if self.reason == "cache":
            return f"{self.cache} cache" if self.cache else "cache"
        return self.reason

    def to_json(self) -> dict:
        err = None
        if self.net_error_code is not None or self.net_error_name is not None:
            err = {"code": self.net_error_code, "name": self.net_error_name}
        return {"id": self.id, "url": self.url, "method": self.method, "reason": self.reason, "cache": self.cache,
                "net_error": err, "start": self.start}

    @classmethod
    def from_json(cls, d: Any) -> NotSent | None:
        """Back from ``to_json`` (a summary's ``not_sent_requests``); None if it is not one."""
        if not isinstance(d, dict) or d.get("reason") not in NOT_SENT_REASONS:
            return None
        err = obj(d.get("net_error"))
        code = integer(err.get("code"))
        return cls(str(d.get("id"))[:80], text(d.get("url")), text(d.get("method"), 40), d["reason"], text(d.get("cache"), 40),
                   code if code is not None and abs(code) < MAX_NET_ERROR else None, text(err.get("name"), 80), num(d.get("start")))


def not_sent(r: LogRequest) -> NotSent | None:
    """Why ``r`` never reached the network (None: it did)."""
    if r.sent:
        return None
    code = r.error_code if r.error_code is not None and abs(r.error_code) < MAX_NET_ERROR else net_error_code(r.error)
    name = net_error_name(code) if r.error is None else r.error[:80]
    if r.cache and r.error is None:
        reason = "cache"
    elif code == -3 or (r.error is not None and "ERR_ABORTED" in r.error[:200]):
        reason = "cancelled"
    elif r.error is not None or code is not None:
        reason = "failed"
    elif r.redirected:
        reason = "redirected"
    else:
        reason = "unfinished"
    return NotSent(r.id, r.url, r.method, reason, (r.cache or "")[:40] or None if reason == "cache" else None,
                   code, name, r.start)


def not_sent_of(log: BrowserLog) -> list[NotSent]:
    """The requests of ``log`` that never reached the network, in the log's order."""
    return [n for n in map(not_sent, log.requests) if n is not None]


# -- small typed readers: a log is outside input, every field may be of any type ---------


def obj(v: Any) -> dict:
    """``v`` if it is a JSON object, else an empty one."""
    return v if isinstance(v, dict) else {}


def num(v: Any) -> float | None:
    """A finite number, or None (bools, strings, NaN and infinities are not times, nor is an
    integer too large for a float: JSON's 10**400)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def nonneg(v: Any) -> float | None:
    f = num(v)
    return f if f is not None and f >= 0 else None


def integer(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit() and len(v) < 20:
        return int(v)
    return None


def text(v: Any, limit: int = 1 << 16) -> str | None:
    if isinstance(v, str):
        return v[:limit]
    return None


def sane_epoch(t: float | None) -> float | None:
    """Epoch seconds within years 1..9999 (as the capture reader clamps packet times)."""
    if t is None or not (-62135596800.0 <= t <= 253402300799.0):
        return None
    return t


def split_host_port(s: Any) -> tuple[str, int] | None:
    """``"127.0.0.1:443"``, ``"[::1]:443"`` -> (address, port); None when not of that form."""
    if not isinstance(s, str) or not s or len(s) > 300:
        return None
    s = s.strip()
    if s.startswith("["):
        host, sep, rest = s[1:].partition("]")
        if not sep or not rest.startswith(":"):
            return None
        port = rest[1:]
    else:
        host, sep, port = s.rpartition(":")
        if not sep or ":" in host:
            return None
    if not port.isdigit() or not host or int(port) > 65535:
        return None
    return host, int(port)


def strip_brackets(a: Any) -> str | None:
    if not isinstance(a, str) or not a:
        return None
    a = a.strip()
    return a[1:-1] if a.startswith("[") and a.endswith("]") else a
