"""What every browser log reader returns: the log's connections and requests, with the
browser's own times (float epoch seconds, None where the log does not say), before they
become the model (``build.to_analysis``) or are laid over a capture (``matching.apply``)."""
from __future__ import annotations

import math
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
    pushed: bool = False
    cache: str | None = None  # memory | disk | … when the log says it came from a cache
    page: str | None = None  # the id of the log's page it belongs to (HAR ``pageref``; None: the log names none)
    extra: dict = field(default_factory=dict)  # wirefall's own HAR extensions, read back


@dataclass
class BrowserLog:
    kind: str  # har | netlog | qlog
    path: str
    creator: str | None = None
    compression: str = ""
    connections: dict[str, LogConnection] = field(default_factory=dict)
    requests: list[LogRequest] = field(default_factory=list)
    pages: list[dict] = field(default_factory=list)  # {"id", "title", "start", "on_content_load", "on_load"} (epoch)
    # a HAR of several pages cut to one (``pages.select``): which page, of how many (``summary.page_shown``)
    page_shown: dict | None = None
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0  # malformed records left out
    cids: dict = field(default_factory=dict)  # qlog: connection key -> the connection IDs its packets carry (lower-case hex)


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
