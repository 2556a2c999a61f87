"""HTTP/3 (RFC 9114, RFC 9218 PRIORITY_UPDATE) and QPACK (RFC 9204) dissector, sans-IO.

Fed the in-order bytes of each QUIC stream (``stream_data(direction, stream_id, data,
packet, fin)``), it returns ``H3Frame`` objects: one per HTTP/3 frame, with the packet of
its first and of its last byte, the decoded header list for HEADERS / PUSH_PROMISE (QPACK
through ``pylsqpack``), the settings for SETTINGS.  HEADERS and DATA frames may span any
number of STREAM frames; DATA payloads are counted, not kept.

Unidirectional streams: control (0x00), push (0x01), QPACK encoder (0x02) and decoder
(0x03); any other type (GREASE 0x1f*N+0x21 included) is skipped.  Encoder-stream
instructions are fed to the decoder of their direction in stream order; a header block
that refers to entries not yet received is held (blocked) and returned once the encoder
stream unblocks it.  The frame layer is parsed by hand: aioquic's ``H3Connection`` is an
endpoint (it answers, enforces and raises), not a dissector of both directions.
"""
from __future__ import annotations

from pylsqpack import Decoder, DecompressionFailed, DecoderStreamError, EncoderStreamError, StreamBlocked

FRAME_TYPES = {
    0x00: "DATA", 0x01: "HEADERS", 0x03: "CANCEL_PUSH", 0x04: "SETTINGS", 0x05: "PUSH_PROMISE",
    0x07: "GOAWAY", 0x0D: "MAX_PUSH_ID", 0xF0700: "PRIORITY_UPDATE", 0xF0701: "PRIORITY_UPDATE",
    0x02: "PRIORITY", 0x06: "PING", 0x08: "WINDOW_UPDATE", 0x09: "CONTINUATION",  # HTTP/2 types, reserved in HTTP/3
}
H2_RESERVED = {0x02, 0x06, 0x08, 0x09}
SETTINGS_NAMES = {
    0x01: "QPACK_MAX_TABLE_CAPACITY", 0x06: "MAX_FIELD_SECTION_SIZE", 0x07: "QPACK_BLOCKED_STREAMS",
    0x08: "ENABLE_CONNECT_PROTOCOL", 0x33: "H3_DATAGRAM", 0x276: "H3_DRAFT04_DATAGRAM", 0xFFD277: "H3_DATAGRAM_DRAFT",
    0x2B603742: "ENABLE_WEBTRANSPORT",
}
STREAM_TYPES = {0x00: "control", 0x01: "push", 0x02: "qpack_encoder", 0x03: "qpack_decoder"}
MAX_FRAME_PAYLOAD = 1 << 20  # payload bytes buffered for non-DATA frames (headers are capped separately)
MAX_PENDING_BLOCKS = 1000  # header blocks waiting for peer SETTINGS or encoder instructions
# pylsqpack decodes a whole header block into memory and has no header-list limit, so a block
# of N one-byte references to a large dynamic-table entry (a QPACK bomb) would cost N times
# the entry.  Before decoding, a block's decoded size is bounded from its field lines and the
# largest entry the encoder stream inserted (tracked below); a block whose bound exceeds
# QPACK_DECODE_FACTOR x the header-list limit is not decoded (its frame is marked).
QPACK_DECODE_FACTOR = 16
STATIC_ENTRY_MAX = 128  # largest RFC 9204 Appendix A entry (name + value) is under 100 bytes


def _qint(buf, p: int, n: int):
    """QPACK/HPACK prefixed integer at buf[p] with an n-bit prefix: (value, next) or None."""
    if p >= len(buf):
        return None
    m = (1 << n) - 1
    v = buf[p] & m
    p += 1
    if v < m:
        return v, p
    shift = 0
    while p < len(buf):
        b = buf[p]
        p += 1
        v += (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, p
        if shift > 62:
            raise ValueError("QPACK integer too long")
    return None


def _qstr(buf, p: int, n: int):
    """String literal with its H bit just above an n-bit length prefix: (decoded size bound, next) or None."""
    if p >= len(buf):
        return None
    huff = buf[p] & (1 << n)
    r = _qint(buf, p, n)
    if r is None or r[1] + r[0] > len(buf):
        return None
    ln, q = r
    return (ln * 8 // 5 + 1 if huff else ln), q + ln


def block_size_bound(block, max_entry: int) -> int:
    """Upper bound of the decoded header-list size (name + value + 32 per field) of one QPACK
    field section, given the largest dynamic-table entry; stops early past 2^40."""
    r = _qint(block, 0, 8)
    r = r and _qint(block, r[1], 7)
    if r is None:
        return 0
    p, total = r[1], 0
    while p < len(block) and total < 1 << 40:
        b = block[p]
        if b & 0x80:  # indexed field line (T: static)
            r = _qint(block, p, 6)
            if r is None:
                break
            total += STATIC_ENTRY_MAX if b & 0x40 else max_entry
            p = r[1]
        elif b & 0x40:  # literal with name reference
            r = _qint(block, p, 4)
            v = r and _qstr(block, r[1], 7)
            if not v:
                break
            total += (STATIC_ENTRY_MAX if b & 0x10 else max_entry) + v[0]
            p = v[1]
        elif b & 0x20:  # literal with literal name
            nm = _qstr(block, p, 3)
            v = nm and _qstr(block, nm[1], 7)
            if not v:
                break
            total += nm[0] + v[0] + 32
            p = v[1]
        elif b & 0x10:  # indexed field line with post-base index
            r = _qint(block, p, 4)
            if r is None:
                break
            total += max_entry
            p = r[1]
        else:  # literal with post-base name reference
            r = _qint(block, p, 3)
            v = r and _qstr(block, r[1], 7)
            if not v:
                break
            total += max_entry + v[0]
            p = v[1]
    return total


def is_grease(v: int) -> bool:
    return v >= 0x21 and (v - 0x21) % 0x1F == 0


class H3Frame:
    __slots__ = ("direction", "stream_id", "type", "code", "length", "first_packet", "packet", "headers",
                 "fields", "error", "push_id", "decoded_size", "offset")

    def __init__(self, direction, stream_id, code, length, first_packet, packet):
        self.direction = direction
        self.stream_id = stream_id
        self.code = code
        self.type = FRAME_TYPES.get(code) or ("GREASE" if is_grease(code) else f"UNKNOWN_0x{code:x}")
        self.length = length
        self.first_packet = first_packet
        self.packet = packet
        self.headers: list[tuple[str, str]] | None = None
        self.fields: dict | None = None
        self.error: str | None = None
        self.push_id: int | None = None
        self.decoded_size = 0
        self.offset = -1  # QUIC stream offset of the frame's first byte (its type)

    def __repr__(self):
        return f"<H3 {self.type} sid={self.stream_id} len={self.length} pk={self.first_packet}-{self.packet}>"


def _varint(buf, p: int):
    """(value, next position) or None if buf ends inside the integer."""
    if p >= len(buf):
        return None
    b = buf[p]
    ln = 1 << (b >> 6)
    if p + ln > len(buf):
        return None
    v = b & 0x3F
    for i in range(1, ln):
        v = (v << 8) | buf[p + i]
    return v, p + ln


class _Stream:
    __slots__ = ("kind", "head", "push_id", "cur", "need", "payload", "first", "done", "skip", "bytes")

    def __init__(self, kind):
        self.kind = kind  # request | control | push | qpack_encoder | qpack_decoder | unknown | None (type not read yet)
        self.head = bytearray()  # bytes of a frame header / stream type not complete yet
        self.push_id = None
        self.cur: H3Frame | None = None  # frame whose payload is being read
        self.need = 0  # payload bytes still to come for cur
        self.payload: bytearray | None = None
        self.first = 0  # packet of the first byte of the frame header being read
        self.done = False
        self.skip = False  # rest of the stream is ignored
        self.bytes = 0


class Http3Dissector:
    """Both directions of one HTTP/3 connection."""

    def __init__(self, max_header_list: int = 1 << 20):
        self.max_header_list = max_header_list
        self.streams: dict[tuple[int, int], _Stream] = {}
        self.settings: list[dict | None] = [None, None]  # SETTINGS sent by each direction
        self.decoders: list[Decoder | None] = [None, None]  # decoder of header blocks sent in direction d
        self.pending_encoder: list[list] = [[], []]  # encoder bytes waiting for the receiver's SETTINGS
        self.pending_blocks: list[list] = [[], []]  # (frame, block) waiting for SETTINGS
        self.blocked: dict[tuple[int, int], H3Frame] = {}
        self.blocked_blocks: dict[tuple[int, int], bytes] = {}
        self.max_entry = [32, 32]  # largest dynamic-table entry inserted by each direction's encoder (bound)
        self.enc_rest = [b"", b""]  # an encoder instruction split across chunks
        self.stream_types: dict[tuple[int, int], str] = {}
        self.errors: list[tuple[int, str]] = []  # (packet, message)
        self.out: list[H3Frame] = []

    # -- public ---------------------------------------------------------------------
    def stream_data(self, direction: int, stream_id: int, data, packet: int, fin: bool = False) -> list[H3Frame]:
        st = self.streams.get((direction, stream_id))
        if st is None:
            kind = "request" if stream_id & 2 == 0 else None
            st = self.streams[(direction, stream_id)] = _Stream(kind)
        st.bytes += len(data)
        if not st.skip and data:
            try:
                self._feed(direction, stream_id, st, memoryview(bytes(data)), packet)
            except Exception as e:  # never let bad input stop the connection
                st.skip = True
                self.errors.append((packet, f"stream {stream_id}: HTTP/3 decoding stopped: {e.__class__.__name__}: {e}"))
        if fin and not st.done:
            st.done = True
            if st.cur is not None:
                f = st.cur
                f.error = f"stream ended {st.need} bytes before the end of the {f.type} frame"
                f.packet = packet
                st.cur = None
                self.out.append(f)
            elif st.head and st.kind not in (None, "unknown"):
                self.errors.append((packet, f"stream {stream_id}: stream ended inside a frame header"))
        out, self.out = self.out, []
        return out

    def stream_reset(self, direction: int, stream_id: int) -> None:
        st = self.streams.get((direction, stream_id))
        if st is not None:
            st.skip = True
            st.cur = None
        dec = self.decoders[direction]
        if (direction, stream_id) in self.blocked and dec is not None:
            try:
                dec.cancel_stream(stream_id)
            except Exception:
                pass
            self.blocked.pop((direction, stream_id), None)
            self.blocked_blocks.pop((direction, stream_id), None)

    def finish(self) -> list[H3Frame]:
        """End of capture: decode what waited for SETTINGS with defaults, report the rest."""
        for d in (0, 1):
            if self.pending_encoder[d] or self.pending_blocks[d]:
                self._make_decoder(d, {})
        for (d, sid), st in self.streams.items():
            if st.cur is not None:
                f = st.cur
                f.error = f"capture ends {st.need} bytes before the end of the {f.type} frame"
                st.cur = None
                self.out.append(f)
        for (d, sid), f in list(self.blocked.items()):
            f.error = "header block still blocked on QPACK encoder instructions at the end of the capture"
            self.out.append(f)
        self.blocked.clear()
        self.blocked_blocks.clear()
        out, self.out = self.out, []
        return out

    # -- stream parsing ----------------------------------------------------------------
    def _feed(self, d, sid, st: _Stream, mv: memoryview, packet: int):
        pos = 0
        n = len(mv)
        base = st.bytes - n  # stream offset of mv[0]
        while pos < n and not st.skip:
            if st.kind is None:  # unidirectional stream type
                before = len(st.head)
                st.head += mv[pos : pos + 8]
                r = _varint(st.head, 0)
                if r is None:
                    return
                t, used = r
                pos += used - before
                st.head.clear()
                st.kind = STREAM_TYPES.get(t, "unknown")
                self.stream_types[(d, sid)] = st.kind if st.kind != "unknown" else ("grease" if is_grease(t) else f"unknown_0x{t:x}")
                if st.kind == "unknown":
                    st.skip = True
                    return
                if st.kind == "push":
                    st.push_id = -1
                continue
            if st.kind == "push" and st.push_id == -1:
                before = len(st.head)
                st.head += mv[pos : pos + 8]
                r = _varint(st.head, 0)
                if r is None:
                    return
                st.push_id, used = r
                pos += used - before
                st.head.clear()
                continue
            if st.kind == "qpack_encoder":
                self._encoder(d, bytes(mv[pos:]), packet)
                return
            if st.kind == "qpack_decoder":
                return  # decoder instructions (acknowledgements) are not needed to decode
            if st.cur is not None:
                take = min(st.need, n - pos)
                if st.payload is not None:
                    st.payload += mv[pos : pos + take]
                st.cur.packet = packet  # the last packet with its bytes, should the capture end here
                pos += take
                st.need -= take
                if st.need == 0:
                    self._complete(d, sid, st, packet)
                continue
            # frame header: type and length varints
            before = len(st.head)
            if not before:
                st.first = packet  # the header may complete in a later chunk
            st.head += mv[pos : pos + 16]
            r = _varint(st.head, 0)
            r2 = _varint(st.head, r[1]) if r is not None else None
            if r2 is None:
                pos = n
                if len(st.head) > 16:
                    st.skip = True
                return
            code, _ = r
            length, hend = r2
            pos += hend - before
            st.head.clear()
            f = H3Frame(d, sid, code, length, st.first, packet)
            f.offset = base + pos - hend  # the header began ``before`` bytes back, in an earlier chunk
            if st.kind == "push":
                f.push_id = st.push_id
            st.cur = f
            st.need = length
            if code == 0x00 or code not in FRAME_TYPES:
                st.payload = None  # DATA and unknown frames: counted, not kept
            else:
                if length > max(MAX_FRAME_PAYLOAD, self.max_header_list):
                    f.error = f"{f.type} frame of {length} bytes exceeds the buffer limit; payload skipped"
                    st.payload = None
                else:
                    st.payload = bytearray()
            if length == 0:
                self._complete(d, sid, st, packet)

    def _complete(self, d, sid, st: _Stream, packet: int):
        f = st.cur
        st.cur = None
        f.packet = packet
        payload = st.payload
        st.payload = None
        code = f.code
        if code in H2_RESERVED:
            f.error = f"HTTP/2 frame type 0x{code:x} is reserved in HTTP/3 (H3_FRAME_UNEXPECTED)"
        elif payload is None:
            pass
        elif code == 0x01:
            if st.kind == "control":
                f.error = "HEADERS on the control stream (H3_FRAME_UNEXPECTED)"
            self._headers(d, sid, f, bytes(payload))
            return  # appended by _headers (maybe later, if blocked)
        elif code == 0x05:
            r = _varint(payload, 0)
            if r is None:
                f.error = "PUSH_PROMISE without a push ID"
            else:
                f.push_id = r[0]
                self._headers(d, sid, f, bytes(payload[r[1] :]))
                return
        elif code == 0x04:
            settings: dict = {}
            p = 0
            while p < len(payload):
                a = _varint(payload, p)
                b = _varint(payload, a[1]) if a else None
                if b is None:
                    f.error = "SETTINGS frame truncated"
                    break
                name = SETTINGS_NAMES.get(a[0]) or ("GREASE" if is_grease(a[0]) else f"0x{a[0]:x}")
                if name != "GREASE":
                    settings[name] = b[0]
                p = b[1]
            f.fields = settings
            if st.kind != "control":
                f.error = "SETTINGS outside the control stream (H3_FRAME_UNEXPECTED)"
            elif self.settings[d] is None:
                self.settings[d] = settings
                self._make_decoder(1 - d, settings)
        elif code in (0x03, 0x07, 0x0D):
            r = _varint(payload, 0)
            key = {0x03: "push_id", 0x07: "id", 0x0D: "push_id"}[code]
            if r is None:
                f.error = f"{f.type} frame without its ID"
            else:
                f.fields = {key: r[0]}
        elif code in (0xF0700, 0xF0701):
            r = _varint(payload, 0)
            if r is None:
                f.error = "PRIORITY_UPDATE without an element ID"
            else:
                f.fields = {"prioritized_element_id": r[0], "push": code == 0xF0701,
                            "priority_field_value": bytes(payload[r[1] :]).decode("ascii", "replace")}
        self.out.append(f)

    # -- QPACK ------------------------------------------------------------------------
    def _make_decoder(self, d, receiver_settings: dict):
        """Decoder for header blocks sent in direction d; its table size is what the
        receiver (1 - d) advertised in SETTINGS."""
        if self.decoders[d] is not None:
            return
        cap = receiver_settings.get("QPACK_MAX_TABLE_CAPACITY", 0)
        blocked = max(receiver_settings.get("QPACK_BLOCKED_STREAMS", 0), 16)
        try:
            self.decoders[d] = Decoder(min(cap, 1 << 20), min(blocked, 1 << 16))
        except Exception as e:
            self.errors.append((0, f"QPACK decoder not created: {e}"))
            return
        enc, self.pending_encoder[d] = self.pending_encoder[d], []
        for data, packet in enc:
            self._encoder(d, data, packet)
        blocks, self.pending_blocks[d] = self.pending_blocks[d], []
        for f, block in blocks:
            self._headers(d, f.stream_id, f, block)

    def _encoder(self, d, data: bytes, packet: int):
        dec = self.decoders[d]
        if dec is None:
            self.pending_encoder[d].append((data, packet))
            return
        try:
            self._scan_encoder(d, data)
            unblocked = dec.feed_encoder(data)
        except (EncoderStreamError, ValueError) as e:
            self.errors.append((packet, f"QPACK encoder stream error: {e}"))
            return
        for sid in unblocked:
            f = self.blocked.pop((d, sid), None)
            block = self.blocked_blocks.pop((d, sid), b"")
            if f is None:
                continue
            if self._too_big(d, f, block):
                self.out.append(f)
                continue
            try:
                _, headers = dec.resume_header(sid)
            except (DecompressionFailed, DecoderStreamError, StreamBlocked) as e:
                f.error = f"QPACK: {e.__class__.__name__}: {e}"
                self.out.append(f)
                continue
            self._set_headers(f, headers)
            self.out.append(f)

    def _scan_encoder(self, d, data: bytes) -> None:
        """Track the largest entry the encoder stream of direction d inserts (RFC 9204 §4.3)."""
        buf = self.enc_rest[d] + data if self.enc_rest[d] else data
        p, n = 0, len(buf)
        cap = self.max_header_list * QPACK_DECODE_FACTOR
        while p < n:
            b = buf[p]
            if b & 0x80:  # insert with name reference (T: static)
                r = _qint(buf, p, 6)
                v = r and _qstr(buf, r[1], 7)
                if not v:
                    break
                size = (STATIC_ENTRY_MAX if b & 0x40 else self.max_entry[d]) + v[0] + 32
            elif b & 0x40:  # insert with literal name
                nm = _qstr(buf, p, 5)
                v = nm and _qstr(buf, nm[1], 7)
                if not v:
                    break
                size = nm[0] + v[0] + 32
            else:  # set dynamic table capacity (001) / duplicate (000)
                v = _qint(buf, p, 5)
                if v is None:
                    break
                size = 0
            self.max_entry[d] = max(self.max_entry[d], min(size, 1 << 20))
            p = v[1]
        rest = buf[p:]
        if len(rest) > cap:  # an instruction longer than any entry can be: stop tracking, assume the worst
            self.max_entry[d] = 1 << 20
            rest = b""
        self.enc_rest[d] = bytes(rest)

    def _too_big(self, d, f: H3Frame, block: bytes) -> bool:
        limit = self.max_header_list * QPACK_DECODE_FACTOR
        bound = block_size_bound(block, self.max_entry[d])
        if bound > limit:
            f.error = (f"QPACK header block of {len(block)} bytes could decode to {bound} bytes "
                       f"(over {QPACK_DECODE_FACTOR} x the {self.max_header_list}-byte header list limit); not decoded")
            return True
        return False

    def _headers(self, d, sid, f: H3Frame, block: bytes):
        if self._too_big(d, f, block):
            self.out.append(f)
            return
        dec = self.decoders[d]
        if dec is None:
            if block[:1] == b"\0" or not block:  # Required Insert Count 0: static table only
                try:
                    tmp = Decoder(0, 0)
                    _, headers = tmp.feed_header(sid, block)
                    self._set_headers(f, headers)
                except (DecompressionFailed, DecoderStreamError, StreamBlocked) as e:
                    f.error = f"QPACK: {e.__class__.__name__}: {e}"
                self.out.append(f)
                return
            if len(self.pending_blocks[d]) < MAX_PENDING_BLOCKS:
                self.pending_blocks[d].append((f, block))
            else:
                f.error = "QPACK: header block refers to the dynamic table but the peer's SETTINGS were not seen"
                self.out.append(f)
            return
        try:
            _, headers = dec.feed_header(sid, block)
        except StreamBlocked:
            self.blocked[(d, sid)] = f
            self.blocked_blocks[(d, sid)] = bytes(block)
            return
        except (DecompressionFailed, DecoderStreamError) as e:
            f.error = f"QPACK: {e.__class__.__name__}: {e}"
            self.out.append(f)
            return
        self._set_headers(f, headers)
        self.out.append(f)

    def _set_headers(self, f: H3Frame, headers):
        out = []
        size = 0
        for k, v in headers:
            size += len(k) + len(v) + 32
            if size > self.max_header_list:
                f.error = f"header list larger than {self.max_header_list} bytes; truncated"
                break
            out.append((k.decode("latin-1"), v.decode("latin-1")))
        f.headers = out
        f.decoded_size = sum(len(k) + len(v) for k, v in out)
