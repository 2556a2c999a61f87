"""Application sessions: what a connection's reassembled bytes (TCP) or datagrams (UDP)
are handed to.  A session adapts a sans-IO dissector from ``dissectors/`` to the timeline
model: it feeds the dissector bytes with the packet that carried them, and turns the
dissector's frames and events into ``Frame`` and ``Exchange`` objects through ``Context``.

Byte-stream session interface (TCP, and TLS plaintext)::

    data(direction, data, offset, packet)   # in-order bytes of one direction
    gap(direction, offset, length, packet)  # bytes the capture lost
    end()                                   # end of capture / connection

Datagram session interface (UDP)::

    datagram(direction, data, packet)
    end()

Sessions are found by kind in ``KINDS``; a kind whose module is missing falls back to
``RawSession`` so that the pipeline never depends on every dissector being present.
"""
from __future__ import annotations

import importlib
from typing import Any

from wirefall.dissectors.budget import Budget

from ..model import PROTO_CODE, Analysis, Connection, Exchange, Frame

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HTTP_METHODS = (b"GET ", b"POST ", b"HEAD ", b"PUT ", b"DELETE ", b"OPTIONS ", b"PATCH ", b"CONNECT ", b"TRACE ", b"PRI ")

# kind -> (module, class).  Byte-stream kinds take (ctx, conn, **kw); datagram kinds too.
KINDS = {
    "tls": ("wirefall.analyzer.sessions.tls", "TlsSession"),
    "http1": ("wirefall.analyzer.sessions.http1", "Http1Session"),
    "h2": ("wirefall.analyzer.sessions.http2", "H2Session"),
    "spdy": ("wirefall.analyzer.sessions.spdy", "SpdySession"),
    "quic": ("wirefall.analyzer.sessions.quic", "QuicSession"),
    "dns": ("wirefall.analyzer.sessions.dns", "DnsSession"),
}

DEFAULT_LIMITS = {
    "tcp_pending_bytes": 64 << 20,  # out-of-order bytes held per direction before a gap is declared
    "spdy_header_block": 1 << 20,  # decompressed bytes per SPDY header block
    "hpack_header_list": 1 << 20,  # decoded header list size (HPACK, QPACK)
    "http1_header_bytes": 1 << 20,  # HTTP/1.x header section size
    "http1_header_count": 1000,
    "http1_chunk_line": 4096,  # bytes of one chunk-size line (chunk extensions included)
    "body_decoded_bytes": 64 << 20,  # Content-Encoding decoding cap per body
    "decompress_bytes": 256 << 20,  # decompressed bytes per connection (all bodies, every coding stage)
    "decompress_bytes_capture": 1 << 30,
    "body_decoder_memory": 64 << 20,  # memory reserved by live body decoders (windows), given back at body end
    "body_decoder_memory_capture": 256 << 20,
    "body_held_bytes": 16 << 20,  # compressed bytes of bodies waiting for decoder memory
    "body_held_bytes_capture": 64 << 20,
    "udp_plain_flows_capture": 10000,  # UDP flows no dissector reads modelled as connections; later ones are counted
    "udp_session_flows_capture": 20_000,  # UDP flows given a QUIC or DNS session (~12 KB each); later ones are counted
    "quic_stream_buffer": 16 << 20,  # out-of-order bytes per QUIC stream
    "continuation_frames": 1000,  # CONTINUATION frames per header block
    "ipv4_fragment_datagrams": 1024,  # IPv4 datagrams being reassembled at once
    "ipv4_fragment_bytes": 32 << 20,  # bytes held in IPv4 fragments
    "header_decoded_bytes": 64 << 20,  # decoded header bytes (name + value + 32 per field) per connection
    "header_decoded_bytes_capture": 128 << 20,  # tiny distinct fields cost ~4.5 bytes of model per unit
    "quic_frames_listed": 10_000,  # data-free QUIC frames listed one by one per connection (then counted)
    "quic_frames_listed_capture": 100_000,
    "quic_trial": 16384,  # AEAD attempts finding the keys of a QUIC connection joined mid-way (~10 per secret in the key log)
    "quic_trial_capture": 1 << 18,
    "h3_resync": 1 << 20,  # candidate frame headers examined framing HTTP/3 request streams seen mid-stream (~2 s)
    "h3_resync_capture": 1 << 22,
    "tls_trial": 64 << 20,  # AES blocks computed finding the TLS 1.3 keys of a TCP connection joined mid-way (~1 s)
    "tls_trial_capture": 256 << 20,
    "object_bytes": 512 << 20,  # body bytes kept by `wirefall objects` / the body view (analyzer/objects.py), per connection
    "object_bytes_capture": 2 << 30,
    "keylog_bytes": 64 << 20,  # key-log text read, all key logs of one analysis together (analyzer/keylog.py)
    "keylog_lines": 1_000_000,
    # a compressed capture (gzip, xz, bzip2, zstd; analyzer/capture.py) is read no further than
    # max(NAME, NAME_per_byte x its file size) decompressed bytes / packets: a bomb's output stays
    # linear in the file, whatever the compression ratio (a real capture compresses 1-20x)
    "inflated_bytes": 1 << 30,
    "inflated_bytes_per_byte": 100,
    "inflated_records": 1 << 18,  # a packet costs the pass ~5-10 us whatever its size: a few seconds
    "inflated_records_per_byte": 1,  # >= 2x real captures: <= 0.032 packets per compressed byte, headers-only <= 0.19 (docs/ROBUSTNESS.md)
}
# Budgets (docs/ROBUSTNESS.md): a key NAME in DEFAULT_LIMITS caps one connection's use, and
# NAME + "_capture" the whole capture's; ``Context.budget(NAME, conn)`` hands out the pair.
CAPTURE_SUFFIX = "_capture"
# limits that are one per capture already (no NAME_capture form): the key logs are read once
CAPTURE_WIDE = {"keylog_bytes", "keylog_lines", "inflated_bytes", "inflated_bytes_per_byte", "inflated_records",
                "inflated_records_per_byte"}
# capture budgets whose reader writes its own warning (where it stopped): report_budgets only lists them
SELF_REPORTED = {"inflated_bytes", "inflated_records"}
CAPTURE_ID = -1  # the capture's budgets, apart from connection 0's (connection ids start at 0)


class Context:
    """What sessions may touch: the analysis being built, the key log, the limits."""

    def __init__(self, analysis: Analysis, keylog, limits: dict | None = None):
        self.analysis = analysis
        self.keylog = keylog
        self.limits = dict(DEFAULT_LIMITS, **(limits or {}))
        self.ts = analysis.index.ts
        self.proto = analysis.index.proto
        self.shared: dict = {}  # per-capture state shared between sessions (e.g. QUIC CIDs)
        self._tp = 0  # last packet asked for, and its time: frames of one packet share one float
        self._tv = 0.0
        self._budgets: dict[tuple[str, int], Budget] = {}  # (name, conn id or CAPTURE_ID)
        self._limits_hit: dict[tuple[str, int], int] = {}  # (name, conn id) -> times a per-block limit cut work
        # body bytes after transfer framing, for the objects export and body view
        # (analyzer/objects.py): sink(conn, exchange or HTTP/3 stream id, direction, data); None: not kept
        self.body_sink: Any = None
        # False: the pass lists no HTTP/1, HTTP/2, QUIC or HTTP/3 frame as a Frame (but the QUIC frames
        # counted together past quic_frames_listed), no TLS record decrypted on the fast path, and
        # no decrypted QUIC packet in analysis.quic_packets: the per-packet listing that only the
        # frame and packet lists, the waterfall's markers and the detail panes read, for a command
        # that prints exchanges only (`requests`).  Budgets, notes, connections, exchanges and the
        # packet index are the same (tests/test_requests_lean.py).
        self.listing = True

    def budget(self, name: str, conn: Connection | None = None, cap: int | None = None) -> Budget:
        """The budget ``name`` of ``conn`` (charging the capture's too), or the capture's.
        Caps come from ``limits[name]`` (per connection) and ``limits[name + "_capture"]``;
        ``cap``, if given, is the capture's cap when it is first asked for (one computed from
        the limits, e.g. relative to the file's size)."""
        key = (name, conn.id if conn is not None else CAPTURE_ID)
        b = self._budgets.get(key)
        if b is None:
            top = self._budgets.get((name, CAPTURE_ID))
            if top is None:
                if cap is None:
                    cap = self.limits.get(name + CAPTURE_SUFFIX, self.limits.get(name, 1 << 62))
                top = self._budgets[(name, CAPTURE_ID)] = Budget(name, cap)
            b = top if conn is None else top.child(self.limits.get(name, top.cap))
            self._budgets[key] = b
        return b

    def limit_hit(self, name: str, conn: Connection, n: int = 1) -> None:
        """A per-block limit (a ``DEFAULT_LIMITS`` key, e.g. ``http1_header_bytes``) cut
        ``n`` blocks of ``conn`` undecoded; the decoder noted each at its packet, so
        ``report_budgets`` only lists it in ``analysis.budgets_hit`` (no second note)."""
        key = (name, conn.id)
        self._limits_hit[key] = self._limits_hit.get(key, 0) + n

    def report_budgets(self) -> None:
        """At the end of the pass: each budget that refused work says so once, on its
        connection (a note) and for the capture (a warning), and ``analysis.budgets_hit``
        lists them as data ({name: [conn ids]}, CAPTURE_ID (-1) for the capture)."""
        conns = {c.id: c for c in self.analysis.connections}
        hit: dict[str, list[int]] = {}
        for (name, cid), b in sorted(self._budgets.items()):
            if not b.hit:
                continue
            hit.setdefault(name, []).append(cid)
            if cid == CAPTURE_ID:
                if name in SELF_REPORTED:
                    continue
                self.analysis.warnings.append(
                    f"budget {name} for the capture ({b.cap} units) ran out: later work of this kind was not "
                    f"done on any connection (raise it with --limit {name}{'' if name in CAPTURE_WIDE else CAPTURE_SUFFIX}=N)")
            elif cid in conns:
                conns[cid].notes.append(
                    f"budget {name} ({b.cap} units per connection) ran out: {b.refused} units of work over it were refused "
                    f"(the notes above say what was left undecoded or counted instead) "
                    f"(raise it with --limit {name}=N)")
        for (name, cid) in sorted(self._limits_hit):
            ids = hit.setdefault(name, [])
            if cid not in ids:
                ids.append(cid)
        self.analysis.budgets_hit = hit

    def time(self, packet: int) -> float:
        if packet == self._tp:
            return self._tv
        t = self._tv = self.ts[packet - 1]
        self._tp = packet
        return t

    def set_proto(self, packet: int, name: str) -> None:
        code = PROTO_CODE[name]
        if code > self.proto[packet - 1] or name in ("HTTP2", "SPDY", "HTTP", "HTTP3"):
            self.proto[packet - 1] = code

    def add_frame(self, frame: Frame, proto: str | None = None) -> Frame:
        self.analysis.frames.append(frame)
        if proto:
            self.set_proto(frame.packet, proto)
        return frame

    def new_exchange(self, conn: Connection, protocol: str, stream_id: int | None = None) -> Exchange:
        ex = Exchange(len(self.analysis.exchanges) + 1, conn.id, protocol, stream_id)  # (id, connection, protocol, stream_id)
        self.analysis.exchanges.append(ex)
        return ex

    def note(self, conn: Connection, msg: str) -> None:
        conn.notes.append(msg)

    def make(self, kind: str, conn: Connection, **kw):
        mod, cls = KINDS[kind]
        try:
            klass = getattr(importlib.import_module(mod), cls)
        except (ImportError, AttributeError):
            return RawSession(self, conn)
        return klass(self, conn, **kw)

    def sniffer(self, conn: Connection, tls_inside: bool = False) -> Sniffer:
        return Sniffer(self, conn, tls_inside)


def lower_bound(ex: Exchange, key: str) -> None:
    """The size ``key`` of ``ex`` counts only what was seen or decoded (a body cut by the
    capture's end or by a limit): ``exchange.sources[key] = "lower_bound"`` (docs/JSON.md;
    shown "≥N", counted by analyzer.completeness)."""
    src = dict(ex.sources or {})
    src[key] = "lower_bound"
    ex.sources = src


def note_gap(gapped: dict, streams: dict, direction: int) -> None:
    """Bytes of ``direction`` lost by the capture (HTTP/2, SPDY: framing resynchronised after
    them): every stream whose message in that direction is not finished may have had frames in
    them.  ``gapped`` keeps (stream id, direction) -> (stream, whether its message had begun)
    for ``bound_gapped`` at the end; the streams' order of frames is the byte stream's, so
    "begun" is before the hole whatever the packets' order."""
    for sid, st in streams.items():
        if not (st.resp_done if direction else st.req_done) and (sid, direction) not in gapped:
            ex = st.ex
            gapped[(sid, direction)] = (st, (ex.response_start if direction else ex.request_start) is not None)


def bound_gapped(gapped: dict) -> None:
    """At the end of the capture: a body that may have lost frames in a hole of the capture
    (``note_gap``) counts only the bytes that came — a lower bound (``lower_bound``; lossy
    page-h2 cut at packet 300: vendor.js read complete at 65,293 of its 89,869 bytes) — unless
    its message began after the hole (its head seen after it: nothing of it was lost), it has
    no body by definition (HEAD, 204, 304), or its Content-Length equals the bytes counted."""
    for (_sid, d), (st, begun) in gapped.items():
        ex = st.ex
        if d:
            head_seen, key, n = ex.status is not None, "response_body_bytes", ex.response_body_bytes
            if ex.method == "HEAD" or ex.status in (204, 304):
                continue
        else:
            head_seen, key, n = ex.method is not None, "request_body_bytes", ex.request_body_bytes
        if not begun and head_seen:
            continue  # (its head came after the hole, so did the rest)
        if (ex.response_start if d else ex.request_start) is None:
            continue  # (nothing of it came at all: no size to bound)
        cl = ex.header("content-length", response=bool(d))
        if cl is not None and cl.strip().isdigit() and int(cl) == n:
            continue  # every byte of it counted
        lower_bound(ex, key)
        if d and ex.response_body_decoded_bytes is not None:
            lower_bound(ex, "response_body_decoded_bytes")  # (decoded from the bytes that came)


def finish_body(conn: Connection, ex: Exchange, body) -> None:
    """Close a response's ``analyzer.content.BodyDecoder``: the decoded size goes on the
    exchange; a cap reached or a decoding error is noted (HTTP/2, SPDY, HTTP/3 streams)."""
    ex.response_body_decoded_bytes = body.finish()
    if getattr(body, "budget", None) or body.capped:
        lower_bound(ex, "response_body_decoded_bytes")
    if getattr(body, "budget", None):  # said once per connection by Context.report_budgets
        ex.error = ex.error or body.error
    elif body.capped:
        conn.notes.append(f"stream {ex.stream_id}: decoded body reached the {body.cap}-byte limit; size counted up to it")
        ex.error = ex.error or "decoded body size capped"
    elif body.error:
        conn.notes.append(f"stream {ex.stream_id}: body: {body.error}")


class IdentityBody:
    """A body without a content coding: what ``analyzer.content.BodyDecoder`` does for one
    (its decoded size is the bytes fed, nothing is decoded, so nothing is bounded), without
    its set-up — a request-heavy capture makes one per response (measured: BodyDecoder's
    constructor was 4 % of an HTTP/2 capture of 63 k small responses).  ``finish_body``
    reads it as a BodyDecoder."""

    __slots__ = ("decoded",)
    budget = error = None
    capped = False

    def __init__(self) -> None:
        self.decoded = 0

    def feed(self, data: bytes) -> None:
        self.decoded += len(data)

    def finish(self) -> int:
        return self.decoded


_CODED: dict[str, bool] = {}  # Content-Encoding value -> does it name a coding to undo (bounded)


def needs_decoder(content_encoding: str | None) -> bool:
    """Whether a body with this Content-Encoding needs a ``BodyDecoder`` (a coding other than
    identity; BodyDecoder's own parsing of the value), else ``IdentityBody`` serves."""
    if content_encoding is None:
        return False
    v = _CODED.get(content_encoding)
    if v is None:
        v = any(c.strip() and c.strip().lower() != "identity" for c in content_encoding.split(","))
        if len(_CODED) < 1024:
            _CODED[content_encoding] = v
    return v


def end_unfinished(ctx: Context, ex: Exchange, resp_done: bool, last_s2c: int | None) -> None:
    """At the end of the capture, a stream's response not finished: it ends, for now, at its
    last packet seen (``last_s2c``), its body a lower bound, and says so; with no response
    byte at all, that it had none (HTTP/2 and SPDY; page-spdy cut at packet 100: hero.jpg,
    40,960 of 97,342 bytes, read as a finished response with no end before SPDY did this)."""
    if resp_done:
        return
    if ex.response_end is None and last_s2c:
        ex.response_end_packet = last_s2c
        ex.response_end = ctx.time(last_s2c)
        if ex.reset is None:
            lower_bound(ex, "response_body_bytes")
        if ex.error is None and ex.reset is None:
            ex.error = "response incomplete at the end of the capture"
    elif ex.response_start is None and ex.error is None and ex.reset is None:
        ex.error = "no response in the capture"


def end_response(conn: Connection, st, time: float, packet: int) -> None:
    """The last byte of a stream's response arrived (``st`` has ``ex``, ``body``, ``resp_done``)."""
    ex = st.ex
    st.resp_done = True
    ex.response_end = time
    ex.response_end_packet = packet
    if st.body is not None:
        body, st.body = st.body, None
        finish_body(conn, ex, body)
    elif ex.response_body_decoded_bytes is None and ex.response_body_bytes == 0:
        ex.response_body_decoded_bytes = 0


class RawSession:
    """Bytes of a protocol wirefall does not dissect: counted, not decoded."""

    def __init__(self, ctx: Context, conn: Connection, **kw):
        self.ctx = ctx
        self.conn = conn

    def data(self, direction, data, offset, packet):
        pass

    def gap(self, direction, offset, length, packet):
        pass

    def datagram(self, direction, data, packet):
        pass

    def end(self):
        pass


def sniff_stream(head: bytes, direction: int) -> str | None:
    """Guess the protocol of a byte stream from its first bytes; None = need more."""
    if not head:
        return None
    b0 = head[0]
    if len(head) < 3:
        return None
    if b0 == 0x16 and head[1] == 3 and head[2] <= 4:
        return "tls"
    if b0 & 0x80 and len(head) >= 3 and head[2] == 1 and direction == 0 and b0 != 0x80:
        return "tls"  # SSLv2-compatible ClientHello
    if direction == 0 and len(head) >= 5 and b0 & 0x80 and head[2] == 1 and head[3] == 3:
        return "tls"  # SSLv2-compatible ClientHello offering SSL 3 / TLS (not a SPDY frame)
    if b0 == 0x80 and head[1] in (2, 3) and len(head) >= 4:
        return "spdy"
    if head.startswith(H2_PREFACE[: len(head)]):
        return "h2" if len(head) >= len(H2_PREFACE) else None
    if head.startswith(b"HTTP/1.") or any(head.startswith(m) for m in HTTP_METHODS):
        return "http1"
    if len(head) < 8 and any(m.startswith(head) for m in HTTP_METHODS + (b"HTTP/1.",)):
        return None
    if b0 in (0x14, 0x15, 0x17) and head[1] == 3:
        return "tls"  # capture started mid-connection
    if direction == 0 and looks_like_h2_frames(head):
        return "h2-mid"  # capture started inside an h2c connection
    return "raw"


TLS_MID_SCAN = 2 * (5 + (1 << 14) + 2048) + 8  # room for one whole record (dissectors.tls.MAX_RECORD) and the next header


def tls_record_chain(buf: bytes) -> bool:
    """A capture that starts inside a TLS record: somewhere in ``buf`` a record header whose
    record ends where another record header begins (or exactly at the end of ``buf``)."""
    from wirefall.dissectors.tls import record_chain  # (the TLS reader's own resynchronisation)

    p = 0
    while True:
        q, found = record_chain(buf, p)
        if found:
            return True
        if q + 5 > len(buf):
            return False
        p = q + 1  # a header whose record runs past these bytes: look further

def _h2_chain(buf, block_middle: bool = False) -> tuple[int, int | None]:
    """HTTP/2 frame headers chained from ``buf``'s start (the HTTP/2 dissector's one rule,
    ``plausible_frame_end``): how many, and where the last one's frame ends (past ``buf`` if
    it is cut), or None where a header in ``buf`` is not plausible."""
    from wirefall.dissectors.http2 import plausible_frame_end

    pos, seen = 0, 0
    while pos + 9 <= len(buf):
        end = plausible_frame_end(buf, pos, block_middle=block_middle)
        if end is None:
            return seen, None
        seen += 1
        pos = end
    return seen, pos


def looks_like_h2_frames(head: bytes) -> bool:
    """Plausible chained HTTP/2 frame headers from the first bytes of a stream."""
    seen, end = _h2_chain(head, block_middle=True)
    return end is not None and (seen >= 2 or (seen == 1 and end == len(head)))


def h2_frames_fill(data) -> bool:
    """``data`` (a TLS record's plaintext) is one or more plausible HTTP/2 frames that end
    exactly where it ends: a chance of about 2**-24 a record for bytes that are not (the
    length alone must land on the end).  A CONTINUATION may not open it."""
    seen, end = _h2_chain(data)
    return seen >= 1 and end == len(data)


class Sniffer:
    """Holds the first bytes of a stream until the protocol is known, then hands
    everything to the right session and steps aside."""

    def __init__(self, ctx: Context, conn: Connection, tls_inside: bool = False, alpn: str | None = None):
        self.ctx = ctx
        self.conn = conn
        self.tls_inside = tls_inside
        self.held: list[tuple] = []
        self.head = [b"", b""]
        self.held_bytes = 0
        self.target: Any = None  # the session the bytes go to once decided (any session class)
        self.scan: list[bytearray] | None = None  # per direction, the first bytes searched for TLS record headers
        self.owner = None  # the flow whose ``app`` this is: once decided, the target takes its place

    MAX_HELD = 256 * 1024  # bytes held while the client has not spoken

    def _decide(self, kind: str):
        if kind == "raw":
            self.target = RawSession(self.ctx, self.conn)
        elif kind == "h2-mid":
            self.target = self.ctx.make("h2", self.conn, cleartext=not self.tls_inside, mid_stream=True)
        else:
            self.target = self.ctx.make(kind, self.conn, **({"cleartext": not self.tls_inside} if kind in ("h2", "spdy") else {}))
        for ev in self.held:
            call = getattr(self.target, ev[0], None)  # (a "close" only where the session listens)
            if call is not None:
                call(*ev[1:])
        self.held = []
        if self.owner is not None and self.owner.app is self:
            self.owner.app = self.target  # no call through the sniffer per segment from here on

    def data(self, direction, data, offset, packet):
        if self.target is not None:
            return self.target.data(direction, data, offset, packet)
        ev = ("data", direction, data, offset, packet)
        self.held.append(ev)
        self.held_bytes += len(data)
        scan = self.scan
        if scan is not None:
            self._scan_add(scan, ev)
        if len(self.head[direction]) < 256:
            self.head[direction] += bytes(data[:256])
        # The client's first bytes decide; a server that speaks first (an h2c server's
        # SETTINGS, a banner) decides only when its bytes are unmistakable.
        kind = sniff_stream(self.head[0], 0) if self.head[0] else None
        if kind is None and self.head[1]:
            k1 = sniff_stream(self.head[1], 1)
            if k1 in ("tls", "http1", "spdy") or self.held_bytes > self.MAX_HELD:
                kind = k1
        if kind == "raw" and self.conn.connect_start is None:  # no SYN: the capture may have begun mid-record
            kind = self._raw_or_tls(final=False)
        if kind is None and self.tls_inside and h2_frames_fill(data):
            # a record's plaintext that is HTTP/2 frames end to end, from either peer: a TLS
            # connection joined mid-way (no ALPN seen) whose client has not spoken, or not from
            # a frame's start (a server's DATA on a download the capture joined: amazon cut)
            kind = "h2-mid"
        if kind is not None:
            self._decide(kind)

    def _raw_or_tls(self, final: bool) -> str | None:
        """Bytes no protocol recognised from their start, in a connection whose SYN the capture
        did not show: TLS if either direction holds a chain of record headers (the capture began
        inside a record), else raw once each direction has held enough bytes to show one (None:
        hold on).  With the SYN seen, the first bytes are the stream's own and decide at once."""
        scan = self.scan
        if scan is None:
            scan = self.scan = [bytearray(), bytearray()]
            self.scanned = [0, 0]
            self.scan_end = [False, False]  # full, or a gap: bytes on either side of it do not chain
            for ev in self.held:
                self._scan_add(scan, ev)
        enough = True
        for d in (0, 1):
            buf = scan[d]
            if len(buf) >= self.scanned[d] + 2048 or (final or self.scan_end[d]) and len(buf) > self.scanned[d]:
                self.scanned[d] = len(buf)  # scan again only once 2 KB more have come
                if tls_record_chain(bytes(buf)):
                    return "tls"
            if not self.scan_end[d]:
                enough = False
        return "raw" if enough or final or self.held_bytes > self.MAX_HELD else None

    def _scan_add(self, scan: list[bytearray], ev: tuple) -> None:
        d = ev[1]
        if self.scan_end[d]:
            return
        if ev[0] != "data":
            self.scan_end[d] = True
            return
        buf = scan[d]
        buf += ev[2][: TLS_MID_SCAN - len(buf)]
        if len(buf) >= TLS_MID_SCAN:
            self.scan_end[d] = True

    def gap(self, direction, offset, length, packet):
        if self.target is not None:
            return self.target.gap(direction, offset, length, packet)
        ev = ("gap", direction, offset, length, packet)
        self.held.append(ev)
        scan = self.scan
        if scan is not None:
            self._scan_add(scan, ev)

    def close(self, direction, packet):
        if self.target is not None:
            close = getattr(self.target, "close", None)
            if close is not None:
                close(direction, packet)
            return
        ev = ("close", direction, packet)
        self.held.append(ev)
        if self.scan is not None:
            self._scan_add(self.scan, ev)  # (no byte after it: the direction's scan ends)

    def end(self):
        if self.target is None:
            kind = sniff_stream(self.head[0], 0) if self.head[0] else None
            if kind is None and self.head[1]:
                kind = sniff_stream(self.head[1], 1)
                if kind == "raw" and not self.head[0] and looks_like_h2_frames(self.head[1]):
                    kind = "h2"  # an h2c server's SETTINGS; the capture ended before the client's preface
            if kind in (None, "raw") and self.conn.connect_start is None:
                kind = self._raw_or_tls(final=True)
            self._decide(kind or "raw")
        self.target.end()
