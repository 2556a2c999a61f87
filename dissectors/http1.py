"""HTTP/1.0 and HTTP/1.1 (RFC 9112) sans-IO dissector.

``H1Connection.receive(direction, data, packet, offset)`` is fed each direction's in-order
bytes with the packet that carried them and returns events:

- ``H1Head``: a request or response head (start line + header fields), with its size on the
  wire (``wire``: start line, fields, CRLFs, as sent) and its first / last packets;
- ``H1Body``: some body payload bytes (after chunked decoding), to be counted or decoded;
- ``H1End``: end of a message body: payload bytes, wire bytes (with chunk framing), chunks,
  trailers, first / last packet; sent for every message that has a body (possibly empty); a
  body delimited by the connection's close ends at ``close(direction, packet)`` (the TCP FIN
  or TLS close_notify the caller saw, once every byte before it was in), or, without one, is
  cut at ``end()``;
- ``H1Switch``: the connection leaves HTTP/1 (101 Switching Protocols, a 2xx answer to
  CONNECT): the bytes of both directions after the switch point, with their packets, are
  in ``pending[direction]`` as (data, offset, packet) chunks; later bytes are not parsed.

Message framing follows RFC 9112 section 6: responses to HEAD, 1xx, 204 and 304 have no body;
Transfer-Encoding chunked, then Content-Length, otherwise a response body runs to the end of
the connection (close-delimited) and a request has none.  Pipelined requests are queued so
each response knows its request.  After a request that asks to Upgrade (or a CONNECT) the
client direction is held until the response says whether the protocol changes.

Parsed by hand: no maintained sans-IO HTTP/1 library gives byte offsets per message and
tolerates the malformed traffic an analyser must keep going through (h11 raises and stops).
Bad input never raises: the direction is marked (``notes``) and its bytes are skipped.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable

from wirefall.dissectors.registry import FrameKinds, OracleSpec, ProtocolDescriptor

DESCRIPTOR = ProtocolDescriptor(  # HTTP/1.x has no frame-type numbers: its "frames" are heads and bodies
    name="http1",
    display="HTTP",
    protocols=("http/1.1", "http/1.0", "http/0.9"),
    kinds=FrameKinds(headers=frozenset({"REQUEST", "RESPONSE"}), data=frozenset({"BODY"})),
    fields_module="http",
    oracle=OracleSpec(layer="http"),
    long_name="Hypertext Transfer Protocol", hooks_module="http1",
)

MAX_HEAD = 1 << 20
MAX_FIELDS = 1000
MAX_CHUNK_LINE = 4096

REQUEST, RESPONSE = 0, 1


class _Event:
    """What ``@dataclass(slots=True)`` gave the event classes below (``repr``, ``==`` over the
    fields in ``_compared``, unhashable), written out: making the four dataclasses cost ~16 M
    instructions (1.5 ms) at every import, a share of each small capture's run."""

    __slots__ = ()
    _compared: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in self._compared)})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self._compared)

    __hash__ = None  # type: ignore[assignment]


class H1Head(_Event):
    __slots__ = ("direction", "offset", "first_packet", "packet", "wire", "version", "headers", "method", "target", "status",
                 "reason", "request", "body", "content_length", "error", "names", "decoded")
    _compared = tuple(k for k in __slots__ if k != "names")

    def __init__(self, direction: int, offset: int, first_packet: int, packet: int, wire: int, version: str,
                 headers: list[tuple[str, str]], method: str | None = None, target: str | None = None, status: int | None = None,
                 reason: str | None = None, request: H1Head | None = None, body: str = "none", content_length: int | None = None,
                 error: str | None = None, names: dict | None = None, decoded: int = 0) -> None:
        self.direction = direction
        self.offset = offset  # stream offset of the first byte of the start line
        self.first_packet = first_packet
        self.packet = packet  # packet of the last byte of the head (the blank line)
        self.wire = wire  # bytes of the head on the wire
        self.version = version  # "HTTP/1.1"
        self.headers = headers
        self.method = method  # requests
        self.target = target
        self.status = status  # responses
        self.reason = reason
        self.request = request  # for a response: the request it answers (None if not seen)
        self.body = body  # none | length | chunked | close | tunnel
        self.content_length = content_length
        self.error = error
        self.names = names  # lower-case name -> first value (not shown, not compared)
        self.decoded = decoded  # the decoded header size: sum of name + value lengths of the fields and of the
        # start line as HTTP/2's pseudo-header fields (``start_line_fields``)

    @property
    def is_request(self) -> bool:
        return self.method is not None

    def header(self, name: str) -> str | None:
        """The first value of the field ``name`` (case-insensitive)."""
        ix = self.names
        if ix is None:
            ix = self.names = _names(self.headers)
        return ix.get(name.lower())


def _names(headers: list[tuple[str, str]]) -> dict[str, str]:
    ix: dict[str, str] = {}
    for k, v in headers:
        ix.setdefault(k.lower(), v)
    return ix


class H1Body(_Event):
    __slots__ = _compared = ("direction", "head", "data", "packet")

    def __init__(self, direction: int, head: H1Head, data: bytes, packet: int) -> None:
        self.direction = direction
        self.head = head
        self.data = data
        self.packet = packet


class H1End(_Event):
    __slots__ = _compared = ("direction", "head", "payload", "wire", "first_packet", "packet", "offset", "chunks", "trailers",
                             "complete", "error", "seen")

    def __init__(self, direction: int, head: H1Head, payload: int, wire: int, first_packet: int, packet: int, offset: int,
                 chunks: int = 0, trailers: list[tuple[str, str]] | None = None, complete: bool = True, error: str | None = None,
                 seen: int = 0) -> None:
        self.direction = direction
        self.head = head
        self.payload = payload  # body bytes after removing chunk framing
        self.wire = wire  # body bytes on the wire (chunk sizes and CRLFs included)
        self.first_packet = first_packet
        self.packet = packet  # packet of the body's last byte (the head's packet for an empty body); of a
        # close-delimited body, the packet of the close (``H1Connection.close``)
        self.offset = offset  # stream offset of the first body byte
        self.chunks = chunks
        self.trailers = [] if trailers is None else trailers
        self.complete = complete  # False: the connection or the capture ended first
        self.error = error
        self.seen = seen  # payload bytes the capture held (``payload`` less the bytes of gaps)


# _Dir.head before the first head of a direction: the body states (length, chunked, close)
# are entered only after a head is parsed, so code that frames a body always sees a real one
# and needs no None check per segment
_NO_HEAD = H1Head(0, 0, 0, 0, 0, "", [])


class H1Switch(_Event):
    __slots__ = _compared = ("protocol", "request", "response", "pending")

    def __init__(self, protocol: str, request: H1Head, response: H1Head, pending: tuple[list, list]) -> None:
        self.protocol = protocol  # "h2c", "websocket", "tunnel", or the Upgrade token
        self.request = request
        self.response = response
        self.pending = pending  # per direction: [(data, offset, packet), ...] after the switch


class _Dir:
    __slots__ = ("buf", "base", "starts", "packets", "state", "head", "remaining", "chunk_state",
                 "body_payload", "body_wire", "body_first", "body_last", "body_offset", "chunks",
                 "trailers", "dead", "why", "hold", "version", "scan", "lscan", "body_seen", "emit")

    def __init__(self):
        self.buf = bytearray()
        self.base = 0
        self.starts: list[int] = []
        self.packets: list[int] = []
        self.state = "head"  # head | length | chunked | close | switched
        self.head: H1Head = _NO_HEAD  # the message being framed
        self.remaining = 0
        self.chunk_state = "size"  # size | data | crlf | trailer
        self.body_payload = 0
        self.body_wire = 0
        self.body_first = 0
        self.body_last = 0
        self.body_offset = 0
        self.chunks = 0
        self.trailers: list[tuple[str, str]] = []
        self.dead = False
        self.why: str | None = None  # why parsing stopped (_die), for the messages it left unread
        self.hold = False  # client waits for the answer to an Upgrade / CONNECT
        self.version = None
        # stream offsets up to which the buffer holds no end of head / no newline: a head or
        # line arriving a byte per segment is searched once, not again per segment
        self.scan = 0
        self.lscan = 0
        self.body_seen = 0  # payload bytes of the body the capture held (gaps excluded)
        self.emit = True  # H1Body events for the message being framed (H1Connection.want_body)

    def packet_at(self, off: int) -> int:
        s = self.starts
        if not s:
            return 0
        i = bisect_right(s, off) - 1  # starts only grow
        return self.packets[i] if i >= 0 else self.packets[0]

    def consume(self, n: int) -> None:
        if n <= 0:
            return
        del self.buf[:n]
        self.base += n
        s = self.starts
        i = 0
        while i + 1 < len(s) and s[i + 1] <= self.base:
            i += 1
        if i:
            del s[:i]
            del self.packets[:i]

    def find_line(self) -> int:
        """Index of the first newline in the buffer, or -1 (searching only new bytes)."""
        buf = self.buf
        nl = buf.find(b"\n", max(0, self.lscan - self.base))
        if nl < 0:
            self.lscan = self.base + len(buf)
        return nl

    def chunks_from(self, start: int = 0) -> list:
        """Buffered bytes from buffer index ``start`` as (data, offset, packet) pieces."""
        out = []
        s, p = self.starts, self.packets
        pos = start
        n = len(self.buf)
        while pos < n:
            off = self.base + pos
            i = len(s) - 1
            while i > 0 and s[i] > off:
                i -= 1
            nxt = s[i + 1] - self.base if i + 1 < len(s) else n
            nxt = min(max(nxt, pos + 1), n)
            out.append((bytes(self.buf[pos:nxt]), off, p[i] if p else 0))
            pos = nxt
        return out


def _template(raw: bytes, max_fields: int) -> tuple:
    """Everything a head's bytes (up to the blank line) alone decide, worked out once per
    distinct head (``H1Connection.head_cache``): load generators and keep-alive clients repeat
    identical heads.  (kind, a, b, version, headers, error, names, decoded size, framing):
    kind 0 request (a = method, b = target), 1 response (a = status, b = reason), -1 a bad
    start line (a = the message); framing = (body, content length, framing error) from
    ``_framing_of``; the header list is shared, like HPACK's: nothing changes a decoded list."""
    lines = raw.replace(b"\r\n", b"\n").split(b"\n")
    hdrs, err = _parse_fields(lines[1:], max_fields)
    names = _names(hdrs)
    decoded = sum(len(k) + len(v) for k, v in hdrs)  # (a bad start line: the fields alone)
    framing = _framing_of(hdrs, names)
    start = lines[0].decode("latin-1")
    parts = start.split(" ", 2)
    if start.startswith("HTTP/"):
        if len(parts) < 2 or not (parts[1][:3].isascii() and parts[1][:3].isdigit()):
            return (-1, f"bad status line {start[:60]!r}", None, "", hdrs, err, names, decoded, framing)
        decoded += start_line_size(status=parts[1][:3])
        return (1, int(parts[1][:3]), parts[2] if len(parts) > 2 else "", parts[0], hdrs, err, names, decoded, framing)
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return (-1, f"bad request line {start[:60]!r}", None, "", hdrs, err, names, decoded, framing)
    decoded += start_line_size(parts[0], parts[1])  # (the target's bytes as sent)
    target = parts[1] if parts[1].isascii() else _utf8_target(parts[1])
    return (0, parts[0], target, parts[2], hdrs, err, names, decoded, framing)


def start_line_fields(method: str | None = None, target: str = "", status: str | None = None) -> list[tuple[str, str]]:
    """The pseudo-header fields HTTP/2 carries for an HTTP/1 start line (RFC 9113 §8.3.1), so
    that HTTP/1's decoded header size counts what HPACK's and QPACK's do: a response's
    ``:status`` (its 3-digit code); a request's ``:method`` and — origin form
    (``/a?b``) or asterisk form (``*``) — ``:path`` the request-target; absolute form
    (``http://h:8080/a?b``) ``:scheme``, ``:authority`` (userinfo dropped) and ``:path`` (its path
    and query, ``/`` when empty); CONNECT's authority form ``:authority`` alone (§8.5).  The
    message's own fields (Host…) are counted as they are, on top."""
    if status is not None:
        return [(":status", status)]
    out = [(":method", method or "")]
    if method == "CONNECT" and "/" not in target:
        return out + [(":authority", target)]
    scheme, sep, rest = target.partition("://")
    if sep and scheme and scheme[0].isalpha() and all(c.isalnum() or c in "+-." for c in scheme):
        cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
        authority, path = rest[:cut], rest[cut:].split("#", 1)[0]
        return out + [(":scheme", scheme), (":authority", authority.rpartition("@")[2]),
                      (":path", path if path.startswith("/") else "/" + path)]
    return out + [(":path", target)]


def start_line_size(method: str | None = None, target: str = "", status: int | str | None = None) -> int:
    """Name + value lengths of ``start_line_fields`` (a status as its 3 digits): the start
    line's share of an HTTP/1 head's decoded size."""
    st = None if status is None else (f"{status:03d}" if isinstance(status, int) else status)
    return sum(len(k) + len(v) for k, v in start_line_fields(method, target, st))


def _framing_of(headers: list[tuple[str, str]], names: dict[str, str]) -> tuple[str, int | None, str | None]:
    """RFC 9112 section 6 from the fields alone: (body: "chunked" | "length" | "unknown",
    Content-Length, the first framing error or None)."""
    te = names.get("transfer-encoding")
    cl = None
    err = None
    for k, v in headers:
        if k.lower() == "content-length":
            try:
                n = int(v.split(",")[0].strip())
                if n < 0:
                    raise ValueError
            except ValueError:
                # (the value cut: it may be up to http1_header_bytes long, and it is repeated in
                # the exchange's error, the expert list and every note that quotes it)
                err = err or f"bad Content-Length {v[:60]!r}" + (f"… ({len(v)} bytes)" if len(v) > 60 else "")
                continue
            if cl is not None and n != cl:
                err = err or "conflicting Content-Length values"
            if cl is None:
                cl = n
    if te is not None and te.lower().split(",")[-1].strip() == "chunked":
        return "chunked", None, err
    if cl is not None:
        return "length", cl, err
    return "unknown", None, err


def _parse_fields(lines: list[bytes], max_fields: int = 0) -> tuple[list[tuple[str, str]], str | None]:
    max_fields = max_fields or MAX_FIELDS
    out: list[tuple[str, str]] = []
    err = None
    for line in lines:
        if not line:
            continue
        if line[:1] in (b" ", b"\t") and out:  # obsolete line folding
            name, value = out[-1]
            out[-1] = (name, value + " " + line.strip().decode("latin-1"))
            continue
        k, sep, v = line.partition(b":")
        if not sep:
            err = err or f"header line without a colon: {line[:40]!r}"
            continue
        if len(out) >= max_fields:
            err = f"more than {max_fields} header fields; the rest are not kept"
            break
        out.append((k.strip().decode("latin-1"), v.strip().decode("latin-1")))
    return out, err


_BAD_BYTES = {0xDC00 + b: b for b in range(0x80, 0x100)}  # surrogateescape'd bytes -> their Latin-1 characters


def _utf8_target(t: str) -> str:
    """A request target with octets beyond ASCII (decoded Latin-1 with the start line): UTF-8,
    what browsers and servers mean by them (RFC 3986 §2.5; RFC 9110 §4.2.3 compares
    percent-decoded octets), so ``/caf\\xc3\\xa9`` is ``/café``, not ``/cafÃ©``; a byte that is
    not part of valid UTF-8 stays its Latin-1 character (RFC 9110 §5.5 obs-text; a C1 control is
    then shown escaped, ``\\x9b``, by every text output).  tshark's ``http.request.uri`` shows
    every such octet as U+FFFD, the ASCII between them the same."""
    return t.encode("latin-1").decode("utf-8", "surrogateescape").translate(_BAD_BYTES)


HEAD_CACHE_ENTRIES = 256  # parsed heads remembered per connection (bounded: 256 x 8 KiB)
HEAD_CACHE_BYTES = 8192  # larger heads are parsed every time


class H1Connection:
    """Sans-IO HTTP/1.x decoder for both directions of one connection."""

    def __init__(self, max_head: int = MAX_HEAD, max_fields: int = MAX_FIELDS, max_chunk_line: int = MAX_CHUNK_LINE):
        self.dirs = (_Dir(), _Dir())
        self.max_chunk_line = max_chunk_line
        # typed facts for the completeness summary: limit name -> times it cut a head or
        # chunk (its bytes not decoded); heads the capture ended inside: (direction, packet, bytes)
        self.limits_hit: dict[str, int] = {}
        self.cut_heads: list[tuple[int, int, int]] = []
        self.requests: deque[H1Head] = deque()  # requests waiting for their response
        self.max_head = max_head
        self.max_fields = max_fields
        self.notes: list[str] = []
        self.switched: H1Switch | None = None
        self.head_cache: dict[bytes, tuple] = {}  # head bytes -> its _template
        self.upgrade_request: H1Head | None = None
        # want_body(head) -> bool, asked as each message's body starts: False, no H1Body events
        # for it (the H1End still counts every byte); None: events for every body
        self.want_body: Callable[[H1Head], bool] | None = None

    # -- input -------------------------------------------------------------------------
    def receive(self, direction: int, data: bytes, packet: int, offset: int | None = None) -> list:
        d = self.dirs[direction]
        if not data or d.dead or self.switched is not None:
            return []
        if offset is not None and not d.buf:
            d.base = offset
        if not d.packets or d.packets[-1] != packet:
            d.starts.append(d.base + len(d.buf))
            d.packets.append(packet)
        d.buf += data
        out: list = []
        self._run(direction, out)
        return out

    def gap(self, direction: int, length: int, packet: int) -> list:
        """Bytes lost: a body with known length just loses them, anything else goes dead."""
        d = self.dirs[direction]
        out: list = []
        if self.switched is not None or d.dead:
            return out
        if d.state == "length" and not d.buf and length <= d.remaining:
            d.remaining -= length
            d.body_wire += length
            d.body_payload += length
            d.base += length
            if d.remaining == 0:
                self._end_body(direction, d, out, packet)
            return out
        if d.state == "close":
            d.body_wire += length
            d.body_payload += length
            d.base += len(d.buf) + length
            d.buf.clear()
            return out
        self.notes.append(f"packet {packet}: {length} bytes lost in direction {direction}; HTTP/1 parsing of this direction stops")
        d.dead = True
        return out

    def close(self, direction: int, packet: int) -> list:
        """The direction's stream closed at ``packet`` (its TCP FIN, or a TLS close_notify,
        once every byte before it is in): a body delimited by the close ends there, complete
        (RFC 9112 section 6.3 item 8) — at the close, not at its last byte: only the close
        tells the receiver that it was the last (tshark ends the message at the FIN too)."""
        out: list = []
        d = self.dirs[direction]
        if self.switched is None and not d.dead and d.state == "close":
            self._end_body(direction, d, out, packet, closed=True)
        return out

    def end(self) -> list:
        """End of the connection / capture: bodies not ended yet are cut — a close-delimited
        one included: without the close (``close``) the capture does not show its end."""
        out: list = []
        if self.switched is not None:
            return out
        for direction, d in enumerate(self.dirs):
            if d.dead or d.head is _NO_HEAD:
                continue
            if d.state == "close":
                self._end_body(direction, d, out, d.body_last or d.head.packet, complete=False,
                               why="body incomplete: delimited by the connection's close, which the capture does not show")
            elif d.state in ("length", "chunked"):
                self._end_body(direction, d, out, d.body_last or d.head.packet, complete=False)
        for direction, d in enumerate(self.dirs):
            if not d.dead and d.state == "head" and not d.hold and d.buf.strip(b"\r\n"):
                self.cut_heads.append((direction, d.packet_at(d.base + len(d.buf) - 1), len(d.buf)))
        for direction, d in enumerate(self.dirs):
            if d.hold and d.buf and not d.dead:  # upgrade never answered: parse what was held
                d.hold = False
                self._run(direction, out)
        return out

    # -- parsing -------------------------------------------------------------------------
    def _run(self, direction: int, out: list) -> None:
        d = self.dirs[direction]
        while d.buf and not d.dead and self.switched is None:
            if d.state == "head":
                if d.hold:
                    return
                if not self._head(direction, d, out):
                    return
            elif d.state == "length":
                n = min(d.remaining, len(d.buf))
                self._body_bytes(direction, d, 0, n, n, out)
                d.remaining -= n
                d.consume(n)
                if d.remaining == 0:
                    self._end_body(direction, d, out, d.body_last)
            elif d.state == "chunked":
                if not self._chunked(direction, d, out):
                    return
            elif d.state == "close":
                n = len(d.buf)
                self._body_bytes(direction, d, 0, n, n, out)
                d.consume(n)
            elif d.state == "resync":
                buf = d.buf
                best = -1
                for tok in self._STARTS:
                    k = buf.find(b"\n" + tok)
                    if k >= 0 and (best < 0 or k < best):
                        best = k
                if best < 0:
                    d.consume(max(0, len(buf) - 16))
                    return
                d.consume(best + 1)
                d.state = "head"
            else:
                return

    def _body_bytes(self, direction, d: _Dir, start: int, n: int, wire: int, out: list) -> None:
        """Body bytes buf[0:wire] are consumed; buf[start:start+n] of them are payload."""
        if wire:
            last = d.packet_at(d.base + wire - 1)
            if d.body_wire == 0:
                d.body_first = d.packet_at(d.base)
            d.body_last = last
            d.body_wire += wire
        if n:
            d.body_payload += n
            d.body_seen += n
            if d.emit:
                out.append(H1Body(direction, d.head, bytes(d.buf[start : start + n]), d.body_last))

    def _head(self, direction: int, d: _Dir, out: list) -> bool:
        buf = d.buf
        # tolerate CRLFs between messages (RFC 9112 section 2.2)
        k = 0
        while k < len(buf) and buf[k] in (13, 10):
            k += 1
        if k:
            d.consume(k)
            if not buf:
                return False
        # only bytes after the previous search can hold the end (3 bytes of overlap): linear
        # in the head's size however it was segmented
        seen = d.scan - d.base
        end = buf.find(b"\r\n\r\n", max(0, seen - 3))
        sep = 4
        if end < 0:
            end = buf.find(b"\n\n", max(0, seen - 1))
            sep = 2
        if end < 0:
            d.scan = d.base + len(buf)
            if len(buf) > self.max_head:
                self._hit("http1_header_bytes")
                self._die(direction, d, f"HTTP/1 head longer than {self.max_head} bytes")
            elif len(buf) >= 8 and not self._looks_like_start(direction, bytes(buf[:16])):
                return self._resync(direction, d, f"not an HTTP/1 message start: {bytes(buf[:24])!r}")
            return False
        wire = end + sep
        raw = bytes(buf[:end])
        t = self.head_cache.get(raw)
        if t is None:
            t = _template(raw, self.max_fields)
            if len(raw) <= HEAD_CACHE_BYTES:
                if len(self.head_cache) >= HEAD_CACHE_ENTRIES:
                    self.head_cache.clear()
                self.head_cache[raw] = t
        kind, a, b, version, hdrs, err, names, decoded, framing = t
        base = d.base
        if len(d.starts) == 1:  # the head's bytes came in one piece (packet_at's answer for both)
            first_packet = packet = d.packets[0]
        else:
            first_packet = d.packet_at(base)
            packet = d.packet_at(base + wire - 1)
        noted = None  # the error a note above already says (one note per cause)
        if err and err.startswith("more than"):
            self._hit("http1_header_count")
            self.notes.append(f"packet {packet}: HTTP/1 head has {err}")
            noted = err
        if wire > self.max_head:
            err = err or f"head of {wire} bytes, longer than {self.max_head} bytes"
            self.notes.append(f"packet {packet}: HTTP/1 head of {wire} bytes is longer than {self.max_head} bytes; decoded anyway")
            noted = noted or err
        if kind < 0:
            return self._resync(direction, d, a)
        if kind:
            h = H1Head(direction, base, first_packet, packet, wire, version, hdrs, None, None, a, b, None, "none", None, err, names, decoded)
            if direction == 0:
                h.error = err or "response sent by the client"
        else:
            h = H1Head(direction, base, first_packet, packet, wire, version, hdrs, a, b, None, None, None, "none", None, err, names, decoded)
            if direction == 1:
                h.error = err or "request sent by the server"
        if h.error and h.error != noted:
            self.notes.append(f"packet {packet}: {h.error}")
        d.consume(wire)
        d.version = d.version or version
        d.head = h
        out.append(h)
        if kind:
            self._response_framing(direction, d, h, out, framing)
        else:
            self._request_framing(direction, d, h, out, framing)
        return True

    def _hit(self, name: str) -> None:
        self.limits_hit[name] = self.limits_hit.get(name, 0) + 1

    @staticmethod
    def _looks_like_start(direction: int, b: bytes) -> bool:
        if b.startswith(b"HTTP/"):
            return True
        sp = b.find(b" ")
        return 0 < sp <= 12 and b[:sp].isalpha() and b[:sp].isupper()

    _STARTS = (b"HTTP/1.", b"GET ", b"POST ", b"HEAD ", b"PUT ", b"DELETE ", b"OPTIONS ", b"PATCH ", b"CONNECT ", b"TRACE ")

    def _resync(self, direction: int, d: _Dir, msg: str) -> bool:
        """Skip to the next line that starts like a message (bounded work, no raising)."""
        buf = d.buf
        best = -1
        for tok in self._STARTS:
            k = buf.find(b"\n" + tok, 0)
            if k >= 0 and (best < 0 or k < best):
                best = k
        pkt = d.packet_at(d.base)
        if best >= 0:
            self.notes.append(f"packet {pkt}: {msg}; skipped {best + 1} bytes to the next HTTP/1 message")
            d.consume(best + 1)
            return True
        keep = min(len(buf), 16)
        self.notes.append(f"packet {pkt}: {msg}; skipping bytes until an HTTP/1 message starts")
        d.consume(len(buf) - keep)
        d.state = "resync"
        return False

    def _die(self, direction: int, d: _Dir, msg: str, out: list | None = None) -> None:
        self.notes.append(f"packet {d.packet_at(d.base)}: {msg}; HTTP/1 parsing of this direction stops")
        if out is not None and d.state in ("length", "chunked", "close") and d.head is not _NO_HEAD:
            # inside a body: it ends here, incomplete, so that its exchange says why (not a silent 0)
            self._end_body(direction, d, out, d.body_last or d.head.packet, complete=False)
            out[-1].error = f"{msg}: the body was not read further"
        d.dead = True
        d.why = msg
        d.buf.clear()

    @staticmethod
    def _framing(h: H1Head, framing: tuple) -> None:
        """The body framing the head's fields decide (``_framing_of``, worked out with its template)."""
        h.body, h.content_length, err = framing
        if err:
            h.error = h.error or err

    def _request_framing(self, direction: int, d: _Dir, h: H1Head, out: list, framing: tuple) -> None:
        self._framing(h, framing)
        if h.body == "unknown":
            h.body = "none"
        self.requests.append(h)
        upgrade = h.header("upgrade")
        conn_hdr = (h.header("connection") or "").lower()
        if h.method == "CONNECT" or (upgrade and "upgrade" in conn_hdr):
            d.hold = True  # wait for the answer before parsing more client bytes
            self.upgrade_request = h
        self._start_body(direction, d, h, out)

    def _response_framing(self, direction: int, d: _Dir, h: H1Head, out: list, framing: tuple) -> None:
        st = h.status
        assert st is not None  # _head sets the status of every response (once per message)
        req = self.requests[0] if self.requests else None
        h.request = req
        if 100 <= st < 200:
            if st == 101 and req is not None and req is self.upgrade_request:
                self.requests.popleft()
                proto = (h.header("upgrade") or req.header("upgrade") or "").strip()
                self._switch(proto.lower() if proto else "unknown", req, h)
                return
            h.body = "none"  # interim: the request keeps waiting
            return
        if req is not None:
            self.requests.popleft()
        self._framing(h, framing)
        if req is not None and req.method == "HEAD" or st in (204, 304):
            h.body = "none"
        elif req is not None and req.method == "CONNECT" and 200 <= st < 300:
            self._switch("tunnel", req, h)
            return
        elif h.body == "unknown":
            h.body = "close"
        if req is not None and req is self.upgrade_request:
            self.upgrade_request = None  # upgrade refused: go on parsing the client's bytes
            c = self.dirs[0]
            c.hold = False
        self._start_body(direction, d, h, out)
        if req is not None and not self.dirs[0].hold and self.dirs[0].buf and self.dirs[0].state == "head":
            self._run(0, out)

    def _start_body(self, direction: int, d: _Dir, h: H1Head, out: list) -> None:
        d.body_payload = d.body_wire = d.chunks = d.body_seen = 0
        d.body_first = d.body_last = h.packet
        d.body_offset = d.base
        d.trailers = []
        if h.body == "none" or (h.body == "length" and h.content_length == 0):
            if h.body == "length":
                self._end_body(direction, d, out, h.packet)
            d.state = "head"
            return
        d.emit = self.want_body is None or self.want_body(h)
        if h.body == "length":
            d.state = "length"
            d.remaining = h.content_length
        elif h.body == "chunked":
            d.state = "chunked"
            d.chunk_state = "size"
        else:
            d.state = "close"

    def _end_body(self, direction: int, d: _Dir, out: list, packet: int, complete: bool = True, closed: bool = False,
                  why: str = "body incomplete: the connection or the capture ended first") -> None:
        """``closed``: ended by the stream's close at ``packet``, where the body ends even
        when empty (else an empty body ends with its head)."""
        h = d.head
        out.append(H1End(direction, h, d.body_payload, d.body_wire, d.body_first if d.body_wire else h.packet,
                         packet if d.body_wire or closed else h.packet, d.body_offset, d.chunks, d.trailers, complete,
                         None if complete else why, d.body_seen))
        d.state = "head"

    def _chunked(self, direction: int, d: _Dir, out: list) -> bool:
        buf = d.buf
        while buf:
            cs = d.chunk_state
            if cs == "size":
                nl = d.find_line()
                if nl < 0:
                    if len(buf) > self.max_chunk_line:
                        self._hit("http1_chunk_line")
                        self._die(direction, d, "chunk size line too long", out)
                    return False
                line = bytes(buf[:nl]).split(b";", 1)[0].strip()
                try:
                    size = int(line, 16)
                    if size < 0 or b"_" in line:  # (int() reads "1_0" as 16: tshark calls it malformed, as RFC 9112's HEXDIG does)
                        raise ValueError
                except ValueError:
                    self._end_body(direction, d, out, d.body_last, complete=False)
                    d.head.error = d.head.error or f"bad chunk size {line[:20]!r}"
                    return self._resync(direction, d, f"bad chunk size {line[:20]!r}")
                self._body_bytes(direction, d, 0, 0, nl + 1, out)
                d.consume(nl + 1)
                if size == 0:
                    d.chunk_state = "trailer"
                else:
                    d.chunks += 1
                    d.remaining = size
                    d.chunk_state = "data"
            elif cs == "data":
                n = min(d.remaining, len(buf))
                self._body_bytes(direction, d, 0, n, n, out)
                d.consume(n)
                d.remaining -= n
                if d.remaining == 0:
                    d.chunk_state = "crlf"
            elif cs == "crlf":
                if len(buf) < 2 and buf[:1] == b"\r":
                    return False
                k = 2 if buf[:2] == b"\r\n" else (1 if buf[:1] == b"\n" else 0)
                if k == 0:
                    d.head.error = d.head.error or "chunk data not followed by CRLF"
                if k:
                    self._body_bytes(direction, d, 0, 0, k, out)
                    d.consume(k)
                d.chunk_state = "size"
            else:  # trailer section: lines until an empty one
                nl = d.find_line()
                if nl < 0:
                    if len(buf) > self.max_head:
                        self._hit("http1_header_bytes")
                        self._die(direction, d, "trailer section too long", out)
                    return False
                line = bytes(buf[:nl]).rstrip(b"\r")
                self._body_bytes(direction, d, 0, 0, nl + 1, out)
                d.consume(nl + 1)
                if line:
                    t, _ = _parse_fields([line])
                    d.trailers.extend(t)
                else:
                    self._end_body(direction, d, out, d.body_last)
                    return True
        return False

    def _switch(self, proto: str, req: H1Head, resp: H1Head) -> None:
        c, s = self.dirs
        self.switched = H1Switch(proto, req, resp, (c.chunks_from(), s.chunks_from()))
        for d in self.dirs:
            d.state = "switched"
            d.buf.clear()
