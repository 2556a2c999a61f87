"""``http``: HTTP/1.x messages.  tshark shows a message (its headers and fields) on the
packet where the whole message ends, body included; so does this filter: the request or
response line's fields are on the packet of the message's last byte."""
from __future__ import annotations

from ._util import header_values
from .types import BOOL, FLOAT, PROTO_OPAQUE, STRING, UINT, Field, Protocol


def _is_h1(fr) -> bool:
    return fr.protocol.startswith("http/") and fr.protocol[5:6].isdigit() and fr.type in ("REQUEST", "RESPONSE")


def _messages_at(ctx) -> dict[int, list]:
    """packet -> the HTTP/1 messages (their REQUEST/RESPONSE frame) that end there."""
    m = ctx.cache.get("h1_at")
    if m is None:
        known = getattr(ctx.frames, "protocols", None)  # (frames reopened from the cache: analyzer.cache.FrameChunks)
        if known is not None and not any(p.startswith("http/") and p[5:6].isdigit() for p in known):
            m = ctx.cache["h1_at"] = {}
            return m
        bodies = {}
        heads = []
        for f in ctx.frames:
            if f.protocol.startswith("http/") and f.protocol[5:6].isdigit():
                if f.type == "BODY" and f.fields:
                    bodies[(f.connection, f.fields.get("exchange"), f.direction)] = f
                elif f.type in ("REQUEST", "RESPONSE"):
                    heads.append(f)
        m = {}
        requests = {}  # (connection, exchange) -> (its request's frame, the packet where the request ends)
        ends = {}  # id(message frame) -> the packet where the message ends
        for f in heads:
            fl = f.fields or {}
            pkt = f.packet
            body = None if fl.get("interim") else bodies.get((f.connection, fl.get("exchange"), f.direction))
            if body is not None:
                pkt = max(pkt, body.packet)
            m.setdefault(pkt, []).append(f)
            ends[id(f)] = pkt
            if f.type == "REQUEST":
                requests[(f.connection, fl.get("exchange"))] = (f, pkt)
        ctx.cache["h1_at"] = m
        ctx.cache["h1_requests"] = requests
        ctx.cache["h1_ends"] = ends
    return m


def messages_ending_at(ctx, n: int) -> list:
    """The HTTP/1 messages (REQUEST/RESPONSE frames) that end on packet ``n``, where tshark shows
    their headers (and what it decodes from them: an HTTP2-Settings header's settings)."""
    return [fr for fr in _messages_at(ctx).get(n, ()) if _is_h1(fr)]


def _request_of(ctx, fr):
    """(request frame, the packet where it ends) of a response frame's exchange, or None when
    the request ends after the response (a 100 Continue before the upload it asked for)."""
    _messages_at(ctx)
    r = ctx.cache.get("h1_requests", {}).get((fr.connection, (fr.fields or {}).get("exchange")))
    if r is None or r[1] > ctx.cache["h1_ends"].get(id(fr), 0):
        return None
    return r


def _full_uri(ctx, fr) -> list[str]:
    """tshark's http.request.full_uri: scheme (https over TLS), Host, target; an absolute
    target as it is."""
    target = (fr.fields or {}).get("target")
    if not isinstance(target, str):
        return []
    if not target.startswith("/"):
        return [target]
    host = header_values(fr.headers, "host")
    if not host:
        return []
    conns = ctx.conns
    c = conns[fr.connection] if 0 <= fr.connection < len(conns) else None
    scheme = "https" if c is not None and c.tls is not None else "http"
    return [f"{scheme}://{host[0]}{target}"]


def _packet_field(name: str, type_: str, fn, desc: str, only: str, **kw) -> Field:
    """A field of the messages ending on a packet that needs the capture (``fn(ctx, frame)``:
    its request, the connection): packets only, not ``frames -Y``."""
    def get(pv) -> list:
        out: list = []
        ctx = pv.ctx
        for fr in _messages_at(ctx).get(pv.n, ()):
            if _is_h1(fr) and fr.type == only:
                out.extend(fn(ctx, fr))
        return out

    return Field(name, type_, get, desc, **kw)


def _request_in(ctx, fr) -> list:
    r = _request_of(ctx, fr)
    return [r[1]] if r is not None else []


def _response_in(ctx, fr) -> list:
    """On a request: the packet where its first response ending after it ends (tshark's
    two-pass value: a 100 Continue answered before the upload ends is not its response)."""
    _messages_at(ctx)
    first = ctx.cache.get("h1_first_response")
    if first is None:
        first = {}
        requests = ctx.cache["h1_requests"]
        for pkt, frs in ctx.cache["h1_at"].items():
            for f in frs:
                if f.type == "RESPONSE" and _is_h1(f):
                    key = (f.connection, (f.fields or {}).get("exchange"))
                    r = requests.get(key)
                    if r is not None and pkt >= r[1] and pkt < first.get(key, 1 << 62):
                        first[key] = pkt
        ctx.cache["h1_first_response"] = first
    v = first.get((fr.connection, (fr.fields or {}).get("exchange")))
    return [v] if v is not None else []


def _lines(fr) -> list[str]:
    """Each header line as sent, with its CRLF (http.request.line / http.response.line)."""
    return [f"{k}: {v}\r\n" for k, v in fr.headers or ()]


def _time(ctx, fr) -> list:
    r = _request_of(ctx, fr)
    if r is None:
        return []
    ts = ctx.idx.ts
    return [ts[ctx.cache["h1_ends"][id(fr)] - 1] - ts[r[1] - 1]]


def _response_for(ctx, fr) -> list:
    r = _request_of(ctx, fr)
    return _full_uri(ctx, r[0]) if r is not None else []


def _field(name: str, type_: str, fn, desc: str, only: str | None = None, **kw) -> Field:
    def match(fr):
        return _is_h1(fr) and (only is None or fr.type == only)

    def get(pv) -> list:
        out: list = []
        for fr in _messages_at(pv.ctx).get(pv.n, ()):
            if match(fr):
                out.extend(fn(fr))
        return out

    def frame(fr) -> list:
        return list(fn(fr)) if match(fr) else []

    return Field(name, type_, get, desc, frame=frame, **kw)


def _f(key):
    return lambda fr: [v] if (v := (fr.fields or {}).get(key)) is not None else []


def _hdr(name):
    return lambda fr: header_values(fr.headers, name)


def _hdr_int(name):
    def fn(fr):
        out = []
        for v in header_values(fr.headers, name):
            try:
                out.append(int(v.strip()))
            except ValueError:
                pass
        return out
    return fn


PROTOCOL = Protocol("http", "Hypertext Transfer Protocol (HTTP/1.x)", _field("http", PROTO_OPAQUE, lambda fr: [True], "an HTTP/1.x message ends here",
                    note="tshark 4.0 shows responses after a pipelined HEAD one message late, and never completes a close-delimited "
                         "response over TLS; wirefall shows each message where it ends"), [
    _field("http.request", BOOL, lambda fr: [1], "a request", only="REQUEST"),
    _field("http.response", BOOL, lambda fr: [1], "a response", only="RESPONSE"),
    _field("http.request.method", STRING, _f("method"), "request method", only="REQUEST"),
    _field("http.request.uri", STRING, _f("target"), "request target as sent", only="REQUEST"),
    _field("http.request.version", STRING, _f("version"), "request version (HTTP/1.1)", only="REQUEST"),
    _field("http.response.version", STRING, _f("version"), "response version", only="RESPONSE"),
    _field("http.response.code", UINT, _f("status"), "status code", only="RESPONSE", size=2),
    _field("http.response.phrase", STRING, _f("reason"), "reason phrase", only="RESPONSE"),
    _packet_field("http.request.full_uri", STRING, _full_uri, "scheme, host and target of a request", only="REQUEST"),
    _packet_field("http.request_in", UINT, _request_in, "on a response: the packet where its request ended", only="RESPONSE",
                  note="wirefall pairs every response with its request by the exchange (an interim 1xx and the final one; "
                       "pipelining included); tshark 4.0 only a request's first response, and pipelined responses with the "
                       "last request of their packet", size=4),
    _packet_field("http.response_in", UINT, _response_in, "on a request: the packet where its first response (ending after "
                  "it) ends", only="REQUEST",
                  note="Wireshark's value (tshark -2): tshark's one pass (-Y without -2) never has it, the response being later", size=4),
    _packet_field("http.time", FLOAT, _time, "on a response: seconds from the packet where its request ended to this one",
                  only="RESPONSE", note="as http.request_in"),
    _packet_field("http.response_for.uri", STRING, _response_for, "on a response: its request's full URI", only="RESPONSE",
                  note="as http.request_in"),
    _field("http.request.line", STRING, _lines, "each request header line (\"Host: example.com\\r\\n\")", only="REQUEST",
           note="rebuilt as name, ': ', value, CRLF (a line sent with other spacing around the colon reads differently)"),
    _field("http.response.line", STRING, _lines, "each response header line", only="RESPONSE", note="as http.request.line"),
    _field("http.host", STRING, _hdr("host"), "Host header", only="REQUEST"),
    _field("http.user_agent", STRING, _hdr("user-agent"), "User-Agent header", only="REQUEST"),
    _field("http.referer", STRING, _hdr("referer"), "Referer header", only="REQUEST"),
    _field("http.cookie", STRING, _hdr("cookie"), "Cookie header", only="REQUEST"),
    _field("http.server", STRING, _hdr("server"), "Server header", only="RESPONSE"),
    _field("http.location", STRING, _hdr("location"), "Location header", only="RESPONSE"),
    _field("http.set_cookie", STRING, _hdr("set-cookie"), "Set-Cookie header", only="RESPONSE"),
    _field("http.content_type", STRING, _hdr("content-type"), "Content-Type header"),
    _field("http.content_encoding", STRING, _hdr("content-encoding"), "Content-Encoding header"),
    _field("http.content_length", UINT, _hdr_int("content-length"), "Content-Length header", size=8),
    _field("http.connection", STRING, _hdr("connection"), "Connection header"),
    _field("http.accept_encoding", STRING, _hdr("accept-encoding"), "Accept-Encoding header", only="REQUEST"),
    _field("http.transfer_encoding", STRING, _hdr("transfer-encoding"), "Transfer-Encoding header"),
    _field("http.upgrade", STRING, _hdr("upgrade"), "Upgrade header"),
    _field("http.http2_settings", STRING, _hdr("http2-settings"), "HTTP2-Settings header (h2c upgrade), as sent: its settings are "
           "http2.settings.*"),
    _field("http.accept", STRING, _hdr("accept"), "Accept header"),
    _field("http.accept_language", STRING, _hdr("accept-language"), "Accept-Language header"),
    _field("http.authorization", STRING, _hdr("authorization"), "Authorization header"),
    _field("http.cache_control", STRING, _hdr("cache-control"), "Cache-Control header"),
    _field("http.content_length_header", STRING, _hdr("content-length"), "Content-Length header, as written"),
    _field("http.date", STRING, _hdr("date"), "Date header"),
    _field("http.last_modified", STRING, _hdr("last-modified"), "Last-Modified header"),
    _field("http.www_authenticate", STRING, _hdr("www-authenticate"), "WWW-Authenticate header"),
    _field("http.x_forwarded_for", STRING, _hdr("x-forwarded-for"), "X-Forwarded-For header"),
    _field("http.file_data", STRING, lambda fr: [], "the message body (de-chunked, decoded)",
           unsupported="http.file_data is not a filter field in wirefall yet: tshark's value is the de-chunked, decompressed "
                       "body on the packet where the message ends, and wirefall's filter does not read bodies again"),
])
