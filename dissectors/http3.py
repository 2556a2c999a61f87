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

Each header block is charged (``H3Frame.table_bytes``) with the encoder-stream bytes of the
insertions it depends on (those below its Required Insert Count) that no earlier block of
its direction was charged with: the header bytes a request or response really cost.

``lenient=True`` (a capture that joined the connection mid-way, see ``h3_evidence``):
streams first seen at a stream offset > 0 began before the capture.  A unidirectional one
has lost its type byte: its kind is inferred from its bytes (``infer_uni_kind``: control
frames, encoder or decoder instructions; each kind once per direction), and header blocks
are decoded by ``dissectors.qpack_lenient.LenientQpack`` (entries inserted before the
capture are ``<unknown>``).  A request stream seen mid-stream has lost the header of the frame
its first captured bytes belong to: its bytes are held (bounded) until the stream's FIN, and
``resync_request_stream`` then finds the first frame boundary the stream's end proves (every
chain of plausible frame headers that lands exactly on the final size passes through it);
the frames from there are parsed as usual, the bytes before it are counted apart
(``mid_sync``), never as DATA.  Without a FIN, or when no boundary is sure, nothing of the
stream is framed (``mid_sync`` says so): its body size is unknown, never a number that
includes frame headers.
"""
from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Mapping
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from pylsqpack import Decoder, DecompressionFailed, DecoderStreamError, EncoderStreamError, StreamBlocked

from .prefix_int import prefix_int
from .quic_varint import quic_varint

if TYPE_CHECKING:
    from . import qpack_lenient as ql  # (imported where used: only a connection joined mid-way needs it)



# RFC 9114 §7.2 / §11.2.1, RFC 9218 §7.2 PRIORITY_UPDATE (request and push stream): wire type by
# name.  The IntEnums ``H3FrameType``, ``H3StreamType`` and ``DESCRIPTOR`` (for the protocol
# registry and the views) are made of these on first use (module ``__getattr__``), not at import:
# making the enums was ~0.5 ms of every start that decodes HTTP/3, and the analysis needs only
# the tables below.
_FRAME_TYPES = {
    "DATA": 0x00,
    "HEADERS": 0x01,
    "CANCEL_PUSH": 0x03,
    "SETTINGS": 0x04,
    "PUSH_PROMISE": 0x05,
    "GOAWAY": 0x07,
    "MAX_PUSH_ID": 0x0D,
    "PRIORITY_UPDATE": 0xF0700,
    "PRIORITY_UPDATE_PUSH": 0xF0701,
    # HTTP/2 frame types, reserved in HTTP/3 (RFC 9114 §7.2.8): an error when received
    "H2_PRIORITY": 0x02,
    "H2_PING": 0x06,
    "H2_WINDOW_UPDATE": 0x08,
    "H2_CONTINUATION": 0x09,
}
_STREAM_TYPES = {"CONTROL": 0x00, "PUSH": 0x01, "QPACK_ENCODER": 0x02, "QPACK_DECODER": 0x03}  # RFC 9114 §6.2, RFC 9204 §4.2


# wire type -> Frame.type (the reserved HTTP/2 types show under their HTTP/2 names; what
# names_of(H3FrameType, ...) gives)
FRAME_TYPES = {v: k for k, v in _FRAME_TYPES.items()}
FRAME_TYPES.update({0xF0701: "PRIORITY_UPDATE", 0x02: "PRIORITY", 0x06: "PING", 0x08: "WINDOW_UPDATE", 0x09: "CONTINUATION"})
H2_RESERVED = {_FRAME_TYPES["H2_PRIORITY"], _FRAME_TYPES["H2_PING"], _FRAME_TYPES["H2_WINDOW_UPDATE"], _FRAME_TYPES["H2_CONTINUATION"]}
SETTINGS_NAMES = {
    0x01: "QPACK_MAX_TABLE_CAPACITY", 0x06: "MAX_FIELD_SECTION_SIZE", 0x07: "QPACK_BLOCKED_STREAMS",
    0x08: "ENABLE_CONNECT_PROTOCOL", 0x33: "H3_DATAGRAM", 0x276: "H3_DRAFT04_DATAGRAM", 0xFFD277: "H3_DATAGRAM_DRAFT",
    0x2B603742: "ENABLE_WEBTRANSPORT",
}
STREAM_TYPES = {v: k.lower() for k, v in _STREAM_TYPES.items()}
SETTINGS_IDS = {v: k for k, v in SETTINGS_NAMES.items()}


def setting_key(ident: int) -> str:
    """A SETTINGS frame's ``fields`` key for identifier ``ident``: its name, ``GREASE_0x21``
    for a reserved (GREASE, RFC 9114 §7.2.4.1) one, else ``0x4d44``."""
    name = SETTINGS_NAMES.get(ident)
    if name is not None:
        return name
    return f"GREASE_0x{ident:x}" if ident >= 0x21 and (ident - 0x21) % 0x1F == 0 else f"0x{ident:x}"


def settings_items(fields: Mapping | None) -> list[tuple[int, str, int]]:
    """``(identifier, key, value)`` of every setting of a SETTINGS frame's ``fields``, in wire
    order: each key is ``setting_key(identifier)``, a repeat of an identifier ``KEY#2``,
    ``KEY#3`` … (other keys, such as the analysis' ``stream_type``, are not settings)."""
    out = []
    for k, v in (fields or {}).items():
        if not isinstance(k, str) or not isinstance(v, int) or isinstance(v, bool):
            continue
        base = k.split("#", 1)[0]
        ident = SETTINGS_IDS.get(base)
        if ident is None:
            h = base[9:] if base.startswith("GREASE_0x") else base[2:] if base.startswith("0x") else ""
            try:
                ident = int(h, 16) if h else None
            except ValueError:
                ident = None
        if ident is not None and setting_key(ident) == base:
            out.append((ident, k, v))
    return out


def _descriptor() -> None:
    """Make ``H3FrameType``, ``H3StreamType`` and ``DESCRIPTOR`` (see _FRAME_TYPES)."""
    from wirefall.dissectors.registry import FrameKinds, OracleSpec, ProtocolDescriptor

    ft = IntEnum("H3FrameType", list(_FRAME_TYPES.items()), module=__name__, qualname="H3FrameType")  # type: ignore[misc]
    ft.__doc__ = "RFC 9114 §7.2 / §11.2.1, RFC 9218 §7.2 PRIORITY_UPDATE (request and push stream)."
    st = IntEnum("H3StreamType", list(_STREAM_TYPES.items()), module=__name__, qualname="H3StreamType")  # type: ignore[misc]
    globals()["DESCRIPTOR"] = ProtocolDescriptor(
        name="http3",
        display="HTTP3",
        protocols=("h3", "h3-29"),
        draft_prefix="h3-",  # (any draft's ALPN: the connection keeps the one negotiated)
        over_quic=True,
        frame_types=ft,
        type_names=FRAME_TYPES,
        kinds=FrameKinds(
            reset=frozenset({"CANCEL_PUSH"}),
            priority=frozenset({"PRIORITY_UPDATE"}),
            push=frozenset({"PUSH_PROMISE"}),
            headers=frozenset({"HEADERS", "PUSH_PROMISE"}),
            data=frozenset({"DATA"}),
            settings=frozenset({"SETTINGS"}),
            goaway=frozenset({"GOAWAY"}),
        ),
        fields_module="http3",
        long_name="Hypertext Transfer Protocol Version 3", hooks_module="http3",
        flow_control={"h3": "blocked", "h3-29": "blocked"},
        oracle=OracleSpec(layer="http3", type_field="http3.frame_type", fields={"length": "http3.frame_length"}),
    )
    globals()["H3FrameType"] = ft
    globals()["H3StreamType"] = st


def __getattr__(name: str) -> Any:
    if name in ("H3FrameType", "H3StreamType", "DESCRIPTOR"):
        _descriptor()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    """QPACK/HPACK prefixed integer at buf[p] with an n-bit prefix: (value, next) or None if
    cut; ValueError past 62 bits (``prefix_int``)."""
    try:
        return prefix_int(buf, p, n)
    except IndexError:
        return None


def _qstr(buf, p: int, n: int):
    """String literal with its H bit just above an n-bit length prefix: (decoded size bound, next) or None."""
    r = _qlit(buf, p, n)
    if r is None:
        return None
    ln, huff, q = r
    return (ln * 8 // 5 + 1 if huff else ln), q + ln


def _qlit(buf, p: int, n: int):
    """String literal: (encoded length, Huffman?, position of its bytes) or None if cut."""
    if p >= len(buf):
        return None
    huff = bool(buf[p] & (1 << n))
    r = _qint(buf, p, n)
    if r is None or r[1] + r[0] > len(buf):
        return None
    return r[0], huff, r[1]


LSQPACK_MAX_STRLEN = 0xFFFF  # ls-qpack (pylsqpack) keeps name and value lengths in 16 bits


def literal_length(buf, lit) -> int:
    """Exact decoded length of a string literal ``(encoded length, huffman, position)``; a
    Huffman string is decoded (by hpack's decoder) only if it could be longer than ls-qpack
    represents (the shortest Huffman code is 5 bits)."""
    ln, huff, p = lit
    if not huff or ln * 8 // 5 <= LSQPACK_MAX_STRLEN:
        return ln if not huff else min(ln * 8 // 5, LSQPACK_MAX_STRLEN)
    from hpack.huffman_table import decode_huffman  # (the same Huffman code as HPACK, RFC 9204 §4.1.2)

    try:
        return len(decode_huffman(bytes(buf[p : p + ln])))
    except Exception:
        return ln * 8 // 5  # not valid Huffman: pylsqpack refuses it anyway


# field line kinds (RFC 9204 §4.5.2-4.5.6)
INDEXED, INDEXED_POST, LITERAL_REF, LITERAL_POST, LITERAL = range(5)


def field_lines(block):
    """Parse one QPACK field section: ((encoded Required Insert Count, sign, delta base),
    [(kind, static, index, name literal or None, value literal or None)], complete) where a
    literal is ``(encoded length, huffman, position)``; stops at the first malformed line."""
    r = _qint(block, 0, 8)
    r2 = r and _qint(block, r[1], 7)
    if r2 is None:
        return None, [], False
    prefix = (r[0], bool(block[r[1]] & 0x80), r2[0])
    p, out = r2[1], []
    n = len(block)
    while p < n:
        b = block[p]
        if b & 0x80:  # indexed field line (T: static)
            r = _qint(block, p, 6)
            if r is None:
                return prefix, out, False
            out.append((INDEXED, bool(b & 0x40), r[0], None, None))
            p = r[1]
        elif b & 0x40:  # literal with name reference
            r = _qint(block, p, 4)
            v = r and _qlit(block, r[1], 7)
            if not v:
                return prefix, out, False
            out.append((LITERAL_REF, bool(b & 0x10), r[0], None, v))
            p = v[2] + v[0]
        elif b & 0x20:  # literal with literal name
            nm = _qlit(block, p, 3)
            v = nm and _qlit(block, nm[2] + nm[0], 7)
            if not v:
                return prefix, out, False
            out.append((LITERAL, False, None, nm, v))
            p = v[2] + v[0]
        elif b & 0x10:  # indexed field line with post-base index
            r = _qint(block, p, 4)
            if r is None:
                return prefix, out, False
            out.append((INDEXED_POST, False, r[0], None, None))
            p = r[1]
        else:  # literal with post-base name reference
            r = _qint(block, p, 3)
            v = r and _qlit(block, r[1], 7)
            if not v:
                return prefix, out, False
            out.append((LITERAL_POST, False, r[0], None, v))
            p = v[2] + v[0]
    return prefix, out, True


def _bound(lit) -> int:
    return lit[0] * 8 // 5 + 1 if lit[1] else lit[0]


def block_size_bound(block, max_entry: int) -> int:
    """Upper bound of the decoded header-list size (name + value + 32 per field) of one QPACK
    field section, given the largest dynamic-table entry."""
    total = 0
    for kind, static, _i, name, value in field_lines(block)[1]:
        if kind == LITERAL:
            total += _bound(name) + _bound(value) + 32
        elif kind == INDEXED or kind == INDEXED_POST:
            total += STATIC_ENTRY_MAX if static else max_entry
        else:
            total += (STATIC_ENTRY_MAX if static else max_entry) + _bound(value)
    return total


MAX_CHARGE_POINTS = 1 << 16  # per-entry byte counts kept for charging (older ones merged; also qpack_lenient's)


def required_insert_count(enc: int, max_entries: int, total_inserts: int) -> int | None:
    """RFC 9204 §4.5.1.1 (None: invalid for this MaxEntries); one copy for the exact and the
    lenient decoder (qpack_lenient imports it from here)."""
    if enc == 0:
        return 0
    full = 2 * max_entries
    if full == 0 or enc > full:
        return None
    max_value = total_inserts + max_entries
    ric = (max_value // full) * full + enc - 1
    if ric > max_value:
        if ric <= full:
            return None
        ric -= full
    return ric if ric > 0 else None


def is_grease(v: int) -> bool:
    return v >= 0x21 and (v - 0x21) % 0x1F == 0


# a header block the capture ends blocked on (its Required Insert Count above the entries the
# encoder stream gave): its frame's and exchange's error, which analyzer.completeness recognises
BLOCKED_AT_END = "header block still blocked on QPACK encoder instructions at the end of the capture"


class H3Frame:
    __slots__ = ("direction", "stream_id", "type", "code", "length", "first_packet", "packet", "headers",
                 "fields", "error", "push_id", "decoded_size", "offset", "cut", "table_bytes", "missing")

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
        self.cut: dict | None = None  # field line -> (name, value length) pylsqpack would return cut
        self.table_bytes = 0  # encoder-stream bytes charged to this header block (see the module docstring)
        # payload bytes of the frame that never came (the capture or the stream ended inside it):
        # its payload in the capture is length - missing
        self.missing = 0

    def __repr__(self):
        return f"<H3 {self.type} sid={self.stream_id} len={self.length} pk={self.first_packet}-{self.packet}>"


def _varint(buf, p: int):
    """QUIC variable-length integer at buf[p]: (value, next position) or None if buf ends
    inside it or before it (``quic_varint``'s IndexError)."""
    try:
        return quic_varint(buf, p)
    except IndexError:
        return None


class _Stream:
    __slots__ = ("kind", "head", "push_id", "cur", "need", "payload", "first", "done", "skip", "bytes", "held", "resync",
                 "head_last")

    def __init__(self, kind):
        self.kind = kind  # request | control | push | qpack_encoder | qpack_decoder | unknown | None (type not read yet)
        self.head = bytearray()  # bytes of a frame header / stream type not complete yet
        self.push_id = None
        self.cur: H3Frame | None = None  # frame whose payload is being read
        self.need = 0  # payload bytes still to come for cur
        self.payload: bytearray | None = None
        self.first = 0  # packet of the first byte of the frame header being read
        self.head_last = 0  # packet of the last byte of a frame header not complete yet (``head``)
        self.done = False
        self.skip = False  # rest of the stream is ignored
        self.bytes = 0
        self.held: list[tuple[bytes, int]] | None = None  # lenient: (data, packet) of a mid-stream unidirectional stream not yet typed
        self.resync: list[tuple[bytes, int]] | None = None  # lenient: (data, packet) of a mid-stream request stream, until its FIN


class Http3Dissector:
    """Both directions of one HTTP/3 connection."""

    def __init__(self, max_header_list: int = 1 << 20, budget=None, lenient: bool = False, resync_budget=None):
        """``budget``: a ``dissectors.budget.Budget`` of decoded header bytes (name + value +
        32 per field) for the connection (``header_decoded_bytes``); None: unlimited.
        ``resync_budget``: a Budget of candidate frame headers examined resynchronising request
        streams seen mid-stream (``h3_resync``); None: unlimited.
        ``lenient``: the capture joined the connection mid-way (module docstring)."""
        self.max_header_list = max_header_list
        self.budget = budget
        self.lenient = lenient
        self.resync_budget = resync_budget
        # set iff lenient
        if lenient:
            from . import qpack_lenient as ql  # (only a connection joined mid-way needs it)
        self.lq = (ql.LenientQpack(max_header_list), ql.LenientQpack(max_header_list)) if lenient else None
        self.lenient_blocked: list[list] = [[], []]  # lenient: (frame, block) ahead of the captured entries
        self.lenient_held_bytes = 0  # their blocks' bytes, and the bytes of mid-stream streams not typed yet
        self.mid_streams: dict[tuple[int, int], int] = {}  # lenient: (d, sid) -> stream offset first seen
        # lenient: (d, sid) of a request stream seen mid-stream -> (stream offset of the first
        # frame parsed, or None: none is sure; bytes captured before it; why)
        self.mid_sync: dict[tuple[int, int], tuple[int | None, int, str]] = {}
        self.inferred: set[tuple[int, int]] = set()  # lenient: unidirectional streams typed by their bytes
        # encoder-stream bytes per insertion, for charging header blocks: (inserts so far,
        # stream offset after that insertion), per direction; the bytes charged so far
        self.enc_points: list[deque] = [deque(), deque()]
        self.enc_charged = [0, 0]
        self.enc_bytes = [0, 0]  # encoder-stream bytes seen per direction (type byte included)
        self.streams: dict[tuple[int, int], _Stream] = {}
        self.settings: list[dict | None] = [None, None]  # SETTINGS sent by each direction
        self.decoders: list[Decoder | None] = [None, None]  # decoder of header blocks sent in direction d
        self.pending_encoder: list[list] = [[], []]  # encoder bytes waiting for the receiver's SETTINGS
        self.pending_blocks: list[list] = [[], []]  # (frame, block) waiting for SETTINGS
        self.blocked: dict[tuple[int, int], H3Frame] = {}
        self.blocked_blocks: dict[tuple[int, int], bytes] = {}
        self.max_entry = [32, 32]  # largest dynamic-table entry inserted by each direction's encoder (bound)
        # what pylsqpack cannot represent: entries (absolute index) with a name or value over
        # 65 535 bytes, as (name length or None, value length or None), per direction
        self.inserts = [0, 0]  # entries each direction's encoder stream inserted (as scanned)
        self.oversize: list[dict[int, tuple]] = [{}, {}]
        self.table_cap = [0, 0]  # the decoder's maximum table capacity (for Required Insert Count)
        self.enc_rest = [b"", b""]  # an encoder instruction split across chunks
        self.stream_types: dict[tuple[int, int], str] = {}
        self.errors: list[tuple[int, str]] = []  # (packet, message)
        self.out: list[H3Frame] = []
        self.data_sink: Callable | None = None  # (direction, stream_id, payload) for each DATA payload; None: counted only
        # set by finish(): each frame (or frame header) the capture ends inside, on a stream not
        # ended, reset nor given up: (direction, stream id, frame type or None for a header,
        # frame length (the header's bytes seen for a header), payload bytes seen, last packet)
        self.ends_inside: list[tuple[int, int, str | None, int, int, int]] = []

    # -- public ---------------------------------------------------------------------
    def stream_data(self, direction: int, stream_id: int, data, packet: int, fin: bool = False,
                    offset: int = 0) -> list[H3Frame]:
        """``offset``: the stream offset of ``data`` (only the first chunk's matters: on a
        lenient dissector a stream first seen at offset > 0 began before the capture)."""
        st = self.streams.get((direction, stream_id))
        cur = st.cur if st is not None else None
        if cur is not None and st is not None and data and st.payload is None and len(data) < st.need and not fin and \
                not st.skip and st.held is None and st.resync is None and not self.out and \
                (cur.code != 0 or self.data_sink is None):
            # the middle of a DATA frame's payload (most chunks): what _feed does with it, without
            # the calls and copies (counted, not kept)
            st.bytes += len(data)
            st.need -= len(data)
            cur.packet = packet  # the last packet with its bytes, should the capture end here
            return []
        if st is None:
            kind = "request" if stream_id & 2 == 0 else None
            st = self.streams[(direction, stream_id)] = _Stream(kind)
            if self.lenient and offset > 0:
                st.bytes = offset
                self.mid_streams[(direction, stream_id)] = offset
                if kind == "request":
                    st.resync = []  # frame boundaries unknown: held until the FIN proves one
                else:
                    st.kind = "mid"
                    st.held = []
        st.bytes += len(data)
        chunks = st.held
        if st.resync is not None:
            self._hold_request(direction, stream_id, st, bytes(data), packet, fin)
        elif chunks is not None and data and not st.skip:
            self._hold_mid(direction, stream_id, st, chunks, bytes(data), packet)
        elif not st.skip and data:
            try:
                self._feed(direction, stream_id, st, memoryview(data if type(data) is bytes else bytes(data)), packet)
            except Exception as e:  # never let bad input stop the connection
                st.skip = True
                self.errors.append((packet, f"stream {stream_id}: HTTP/3 decoding stopped: {e.__class__.__name__}: {e}"))
        if fin and not st.done:
            st.done = True
            if st.cur is not None:
                f = st.cur
                f.error = f"stream ended {st.need} bytes before the end of the {f.type} frame"
                f.missing = st.need
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
        ends = self.ends_inside
        for (d, sid), st in self.streams.items():
            if st.cur is not None:
                f = st.cur
                f.error = f"capture ends {st.need} bytes before the end of the {f.type} frame"
                f.missing = st.need
                st.cur = None
                self.out.append(f)
                if not st.skip:
                    ends.append((d, sid, f.type, f.length, f.length - st.need, f.packet))
            elif st.head and st.head_last and not st.skip and not st.done and st.kind in ("request", "push", "control"):
                ends.append((d, sid, None, len(st.head), 0, st.head_last))
        lq = self.lq
        for d in (0, 1):
            held, self.lenient_blocked[d] = self.lenient_blocked[d], []
            self.lenient_held_bytes -= sum(len(b) for _, b in held)
            if lq is not None:  # (blocks are held only when lenient)
                for f, block in held:
                    self._lenient_headers(lq[d], d, f, block, force=True)
        for (d, sid), st in self.streams.items():
            if st.resync is not None:
                nheld = sum(len(x) for x, _ in st.resync)
                self.lenient_held_bytes -= nheld
                st.resync = None
                st.skip = True
                self.mid_sync[(d, sid)] = (None, nheld, "the stream's end is not in the capture")
            if st.held is not None:
                st.held = None
                st.skip = True
                self.errors.append((0, f"stream {sid}: unidirectional stream seen mid-stream; its type could not be "
                                       f"inferred from its bytes, not decoded"))
        for f in list(self.blocked.values()):
            f.error = BLOCKED_AT_END
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
            cur = st.cur
            if cur is not None:  # (first: the payload of a frame being read is the common case)
                take = st.need
                if take > n - pos:
                    take = n - pos
                if st.payload is not None:
                    st.payload += mv[pos : pos + take]
                elif cur.code == 0 and take and self.data_sink is not None:
                    self.data_sink(d, sid, mv[pos : pos + take])
                cur.packet = packet  # the last packet with its bytes, should the capture end here
                pos += take
                st.need -= take
                if st.need == 0:
                    self._complete(d, sid, st, cur, packet)
                continue
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
                if st.kind == "qpack_encoder":
                    self.enc_bytes[d] += used
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
                self.enc_bytes[d] += n - pos
                lq = self.lq
                if lq is not None:  # (lenient)
                    lq[d].feed_encoder(mv[pos:])
                    held, self.lenient_blocked[d] = self.lenient_blocked[d], []
                    self.lenient_held_bytes -= sum(len(b) for _, b in held)
                    for f, block in held:  # (in order; each blocks again if still ahead)
                        self._lenient_headers(lq[d], d, f, block)
                    return
                self._encoder(d, bytes(mv[pos:]), packet, base + pos)
                return
            if st.kind == "qpack_decoder":
                return  # decoder instructions (acknowledgements) are not needed to decode
            # frame header: type and length varints
            before = len(st.head)
            if not before:
                st.first = packet  # the header may complete in a later chunk
            st.head += mv[pos : pos + 16]
            r = _varint(st.head, 0)
            r2 = _varint(st.head, r[1]) if r is not None else None
            if r2 is None:
                pos = n
                st.head_last = packet  # (should the capture end inside this header)
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
                self._complete(d, sid, st, f, packet)

    def _complete(self, d, sid, st: _Stream, f: H3Frame, packet: int):
        """``f`` (st.cur) has all its payload."""
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
            # every setting in wire order (as tshark shows them), GREASE ones too (GREASE_0x21);
            # a repeated identifier (H3_SETTINGS_ERROR, RFC 9114 §7.2.4) keeps its first value
            # under its name and each repeat as NAME#2, NAME#3 …; the QPACK decoder reads the
            # first value of each, as tshark's first field
            fields: dict = {}
            settings: dict = {}
            seen: dict = {}
            p = 0
            while p < len(payload):
                a = _varint(payload, p)
                b = _varint(payload, a[1]) if a else None
                if b is None:
                    f.error = "SETTINGS frame truncated"
                    break
                name = setting_key(a[0])
                k = seen[name] = seen.get(name, 0) + 1
                if k == 1:
                    fields[name] = b[0]
                    if not name.startswith("GREASE_"):
                        settings[name] = b[0]
                else:
                    fields[f"{name}#{k}"] = b[0]
                    if f.error is None:
                        f.error = f"setting {name} repeated (H3_SETTINGS_ERROR)"
                p = b[1]
            f.fields = fields
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
        self.table_cap[d] = min(cap, 1 << 20)
        try:
            self.decoders[d] = Decoder(self.table_cap[d], min(blocked, 1 << 16))
        except Exception as e:
            self.errors.append((0, f"QPACK decoder not created: {e}"))
            return
        enc, self.pending_encoder[d] = self.pending_encoder[d], []
        for data, packet, off in enc:
            self._encoder(d, data, packet, off)
        blocks, self.pending_blocks[d] = self.pending_blocks[d], []
        for f, block in blocks:
            self._headers(d, f.stream_id, f, block)

    def _encoder(self, d, data: bytes, packet: int, off: int = 0):
        """``off``: the encoder-stream offset of ``data``."""
        dec = self.decoders[d]
        if dec is None:
            self.pending_encoder[d].append((data, packet, off))
            return
        try:
            self._scan_encoder(d, data, off)
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
            self._charge(d, f, block)
            self.out.append(f)

    def _scan_encoder(self, d, data: bytes, off: int = 0) -> None:
        """Track, for the encoder stream of direction d (RFC 9204 §4.3), the largest entry it
        inserts, how many it inserted, which have a name or value over 65 535 bytes, and the
        stream offset where each insertion ends (``off``: the stream offset of ``data``)."""
        buf = self.enc_rest[d] + data if self.enc_rest[d] else data
        at = off - len(self.enc_rest[d])  # stream offset of buf[0]
        points = self.enc_points[d]
        p, n = 0, len(buf)
        cap = self.max_header_list * QPACK_DECODE_FACTOR
        over = self.oversize[d]
        while p < n:
            b = buf[p]
            name_len = None  # (None: not over the ls-qpack limit, or not known to be)
            if b & 0x80:  # insert with name reference (T: static)
                r = _qint(buf, p, 6)
                v = r and _qlit(buf, r[1], 7)
                if not v:
                    break
                size = (STATIC_ENTRY_MAX if b & 0x40 else self.max_entry[d]) + _bound(v) + 32
                if not b & 0x40:
                    name_len = over.get(self.inserts[d] - 1 - r[0], (None,))[0]
            elif b & 0x40:  # insert with literal name
                nm = _qlit(buf, p, 5)
                v = nm and _qlit(buf, nm[2] + nm[0], 7)
                if not v:
                    break
                size = _bound(nm) + _bound(v) + 32
                if _bound(nm) > LSQPACK_MAX_STRLEN:
                    name_len = literal_length(buf, nm)
            else:  # set dynamic table capacity (001) / duplicate (000)
                v = _qint(buf, p, 5)
                if v is None:
                    break
                size = 0
                if not b & 0x20:  # duplicate: a copy of an entry, oversized or not
                    src = over.get(self.inserts[d] - 1 - v[0])
                    if src is not None:
                        over[self.inserts[d]] = src
                    self.inserts[d] += 1
                    points.append((self.inserts[d], at + v[1]))
                p = v[1]
                continue
            value_len = literal_length(buf, v) if _bound(v) > LSQPACK_MAX_STRLEN else None
            if (name_len or 0) > LSQPACK_MAX_STRLEN or (value_len or 0) > LSQPACK_MAX_STRLEN:
                over[self.inserts[d]] = (name_len if (name_len or 0) > LSQPACK_MAX_STRLEN else None,
                                         value_len if (value_len or 0) > LSQPACK_MAX_STRLEN else None)
            self.inserts[d] += 1
            self.max_entry[d] = max(self.max_entry[d], min(size, 1 << 20))
            p = v[2] + v[0]
            points.append((self.inserts[d], at + p))
        while len(points) > MAX_CHARGE_POINTS:
            points.popleft()  # (coarser charging of old insertions, never lost bytes: see _charge)
        rest = buf[p:]
        if len(rest) > cap:  # an instruction longer than any entry can be: stop tracking, assume the worst
            self.max_entry[d] = 1 << 20
            rest = b""
        self.enc_rest[d] = bytes(rest)

    def _unrepresentable(self, d, block) -> tuple[str | None, dict]:
        """What pylsqpack cannot decode whole in this block: (a reason not to decode it, e.g.
        a literal over 65 535 bytes, which pylsqpack refuses; or None) and {field line index:
        (name length, value length)} for references to entries it would return cut."""
        prefix, lines, _ = field_lines(block)
        refs: dict = {}
        if prefix is None:
            return None, refs
        over = self.oversize[d]
        base = None
        if over:
            ric = required_insert_count(prefix[0], self.table_cap[d] // 32, self.inserts[d])
            if ric is not None:
                base = ric - prefix[2] - 1 if prefix[1] else ric + prefix[2]
        for i, (kind, static, idx, name, value) in enumerate(lines):
            for what, lit in (("name", name), ("value", value)):
                if lit is not None and _bound(lit) > LSQPACK_MAX_STRLEN:
                    ln = literal_length(block, lit)
                    if ln > LSQPACK_MAX_STRLEN:
                        return (f"QPACK: field line {i + 1} has a {ln}-byte {what}; pylsqpack cannot represent strings "
                                f"over {LSQPACK_MAX_STRLEN} bytes; header block not decoded"), refs
            if base is None or static or kind == LITERAL:
                continue
            ent = over.get(base + idx if kind in (INDEXED_POST, LITERAL_POST) else base - 1 - idx)
            if ent is not None:
                refs[i] = ent if kind in (INDEXED, INDEXED_POST) else (ent[0], None)
        return None, refs

    def _too_big(self, d, f: H3Frame, block: bytes) -> bool:
        """Not to be decoded: it could decode beyond QPACK_DECODE_FACTOR x the header-list
        limit, the connection's (or capture's) budget of decoded header bytes has no room for
        it, or it holds a string pylsqpack cannot represent.  Marks the frame."""
        limit = self.max_header_list * QPACK_DECODE_FACTOR
        b = self.budget
        # fast path (every block of an ordinary connection): a field line of k bytes decodes
        # to at most k x (largest entry + 34) bytes (a reference byte: one entry; a literal:
        # 1.6 x its bytes + 32), so a block whose rough bound fits the limit and the budget
        # needs neither field_lines pass; with no entry over 65 535 bytes and a block too
        # short to hold a literal that long, nothing in it is unrepresentable either
        n = len(block)
        rough = n * (max(self.max_entry[d], STATIC_ENTRY_MAX) + 34)
        if rough <= limit and n * 8 // 5 + 1 <= LSQPACK_MAX_STRLEN and not self.oversize[d] and \
                (b is None or not b.hit and b.room() >= rough):
            f.cut = {}
            return False
        bound = block_size_bound(block, self.max_entry[d])
        if bound > limit:
            f.error = (f"QPACK header block of {len(block)} bytes could decode to {bound} bytes "
                       f"(over {QPACK_DECODE_FACTOR} x the {self.max_header_list}-byte header list limit); not decoded")
            return True
        if b is not None and (b.hit or b.room() < bound):
            b.take(bound)  # (refused: counted, and the budget says so at the end)
            f.error = f"QPACK header block not decoded: budget {b.name} ran out"
            return True
        why, f.cut = self._unrepresentable(d, block)
        if why:
            f.error = why
            return True
        return False

    def _charge(self, d, f: H3Frame, block: bytes) -> None:
        """f.table_bytes: the encoder-stream bytes (up to the end of the last insertion below
        the block's Required Insert Count) no earlier block of direction d was charged with."""
        r = _qint(block, 0, 8)
        if r is None or r[0] == 0:
            return
        ric = required_insert_count(r[0], self.table_cap[d] // 32, self.inserts[d])
        if not ric:
            return
        end = None
        pts = self.enc_points[d]
        while pts and pts[0][0] <= ric:
            end = pts.popleft()[1]
        if end is not None and end > self.enc_charged[d]:
            f.table_bytes = end - self.enc_charged[d]
            self.enc_charged[d] = end

    def _lenient_headers(self, lq: ql.LenientQpack, d, f: H3Frame, block: bytes, force: bool = False) -> None:
        """A header block of a connection joined mid-way: ``LenientQpack``.  A block that
        refers beyond the entries captured so far waits (as a blocked stream does) for the
        encoder stream; at the end of the capture it is decoded as it is (its pin raised)."""
        from . import qpack_lenient as ql

        b = self.budget
        if b is not None and b.hit:
            b.take(len(block))
            f.error = f"QPACK header block not decoded: budget {b.name} ran out"
            self.out.append(f)
            return
        try:
            headers, unknown, count = lq.decode(block, force)
        except ql.Blocked:
            held = self.lenient_blocked[d]
            held.append((f, block))
            self.lenient_held_bytes += len(block)
            while len(held) > MAX_PENDING_BLOCKS or self.lenient_held_bytes > self.LENIENT_HOLD:
                hf, hb = held.pop(0)
                self.lenient_held_bytes -= len(hb)
                self._lenient_headers(lq, d, hf, hb, force=True)
            return
        except (ql.QpackError, IndexError) as e:
            f.error = f"QPACK (lenient): header block not decoded: {e or 'cut short'}"
            self.out.append(f)
            return
        if b is not None:
            b.charge(sum(len(k) + len(v) + 32 for k, v in headers))
        out = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
        f.headers = out
        # decoded = names + values of the fields decoded: a ``<unknown>`` field (an entry from
        # before the capture, or a name reference to one) adds nothing, its size is not known;
        # ``qpack_unknown_refs`` counts them (as analyzer.stats counts them per exchange)
        f.decoded_size = sum(len(k) + len(v) for k, v in headers if k != ql.UNKNOWN and v != ql.UNKNOWN)
        f.fields = dict(f.fields or {}, qpack_lenient=True)
        if unknown:
            f.fields["qpack_unknown_refs"] = unknown
        f.table_bytes = lq.charge(count)
        self.out.append(f)

    def _headers(self, d, sid, f: H3Frame, block: bytes):
        lq = self.lq
        if lq is not None:  # (lenient)
            self._lenient_headers(lq[d], d, f, block)
            return
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
        self._charge(d, f, block)
        self.out.append(f)

    def _set_headers(self, f: H3Frame, headers):
        out: list[tuple[str, str]] = []
        size = 0
        limit = self.max_header_list
        for k, v in headers:
            size += len(k) + len(v) + 32
            if size > limit:
                f.error = f"header list larger than {self.max_header_list} bytes; truncated"
                size = sum(len(name) + len(value) + 32 for name, value in headers)
                decoded = sum(len(name) + len(value) for name, value in out)
                break
            out.append((k.decode("latin-1"), v.decode("latin-1")))
        else:  # all shown: one pass gives both sizes (latin-1 keeps the lengths)
            decoded = size - 32 * len(out)
        if self.budget is not None:  # what pylsqpack decoded, all of it
            self.budget.charge(size)
        cut = f.cut
        if cut:  # fields pylsqpack returned shorter than the entries they refer to
            marked = []
            for i, (nl, vl) in sorted(cut.items()):
                if i < len(headers) and (nl is not None and len(headers[i][0]) != nl or vl is not None and len(headers[i][1]) != vl):
                    marked.append(i)
            if marked:
                i = marked[0]
                nl, vl = cut[i]
                what = f"value of {vl} bytes cut to {len(headers[i][1])}" if vl is not None and len(headers[i][1]) != vl \
                    else f"name of {nl} bytes cut to {len(headers[i][0])}"
                f.error = (f"QPACK: field {i + 1}: {what} by pylsqpack (string lengths over {LSQPACK_MAX_STRLEN} bytes "
                           f"wrap); {len(marked)} field{'s' if len(marked) > 1 else ''} not shown whole")
                f.fields = dict(f.fields or {}, qpack_truncated_fields=marked)
        f.headers = out
        f.decoded_size = decoded

    # -- lenient: streams seen mid-stream -------------------------------------------------
    MID_HOLD = 64 << 10  # bytes of a mid-stream unidirectional stream held until its kind is known
    MID_CHUNKS = 16
    LENIENT_HOLD = 4 << 20  # bytes held in all (blocked header blocks, untyped mid-stream streams)

    MID_REQUEST_HOLD = 1 << 20  # bytes of a mid-stream request stream held until its FIN

    def _hold_request(self, d, sid, st: _Stream, data: bytes, packet: int, fin: bool) -> None:
        """A request stream seen mid-stream (lenient): hold its bytes until the FIN, then frame
        it from the first boundary the FIN proves (``resync_request_stream``)."""
        chunks = st.resync
        assert chunks is not None
        if data:
            chunks.append((data, packet))
            self.lenient_held_bytes += len(data)
        held = sum(len(x) for x, _ in chunks)
        if not fin and held <= self.MID_REQUEST_HOLD and self.lenient_held_bytes <= self.LENIENT_HOLD:
            return
        st.resync = None
        self.lenient_held_bytes -= held
        if not fin:
            st.skip = True
            self.mid_sync[(d, sid)] = (None, held, f"more than {min(self.MID_REQUEST_HOLD, self.LENIENT_HOLD)} bytes "
                                                   "before its end (not held)")
            return
        buf = b"".join(x for x, _ in chunks)
        rb = self.resync_budget
        start = resync_request_stream(buf, d == 1, rb)
        base = st.bytes - len(buf)  # stream offset of buf[0]
        if start is None or start >= len(buf):
            st.skip = True
            self.mid_sync[(d, sid)] = (None, len(buf), "budget h3_resync ran out" if rb is not None and rb.hit
                                       else "no frame boundary is sure")
            return
        self.mid_sync[(d, sid)] = (base + start, start, "proved by the stream's end")
        st.kind = "request"
        st.bytes = base + start
        pos = 0
        for x, p in chunks:  # replayed from the boundary, each chunk with its packet
            lo = max(0, start - pos)
            pos += len(x)
            if lo >= len(x) or st.skip:
                continue
            st.bytes += len(x) - lo
            try:
                self._feed(d, sid, st, memoryview(x)[lo:], p)
            except Exception as e:  # never let bad input stop the connection
                st.skip = True
                self.errors.append((p, f"stream {sid}: HTTP/3 decoding stopped: {e.__class__.__name__}: {e}"))

    def _hold_mid(self, d, sid, st: _Stream, chunks: list[tuple[bytes, int]], data: bytes, packet: int) -> None:
        """``chunks``: st.held."""
        chunks.append((data, packet))
        self.lenient_held_bytes += len(data)
        taken = {k for (dd, s), k in self.stream_types.items() if dd == d}
        held = b"".join(x for x, _ in chunks)
        kind = infer_uni_kind(held, taken)
        if kind is not None:
            self.lenient_held_bytes -= len(held)
        if kind is None:
            if len(held) > self.MID_HOLD or len(chunks) > self.MID_CHUNKS or self.lenient_held_bytes > self.LENIENT_HOLD:
                self.lenient_held_bytes -= len(held)
                st.held = None
                st.skip = True
                self.stream_types[(d, sid)] = "unknown_mid_stream"
                self.errors.append((packet, f"stream {sid}: unidirectional stream seen mid-stream; its type could not "
                                            f"be inferred from its first {len(held)} bytes, not decoded"))
            return
        st.held = None
        st.kind = kind
        self.stream_types[(d, sid)] = kind
        self.inferred.add((d, sid))
        st.bytes -= len(held)  # replayed below, each chunk with its packet
        for x, p in chunks:
            st.bytes += len(x)
            if not st.skip:
                self._feed(d, sid, st, memoryview(x), p)


# Where a frame header may begin on a request stream seen mid-stream: a one-byte type (DATA,
# HEADERS, a server's PUSH_PROMISE, the reserved 0x21) or a two-byte reserved (GREASE) type.
# Longer reserved types are not looked for (half of all bytes would have to be read one by
# one): a frame of such a type ends the chains through it, and the bytes before it are
# counted as unframed, never as DATA.
_ONE_BYTE_TYPES: dict[bool, re.Pattern[bytes]] = {}  # compiled on first use (~0.1 ms of every start)
# per first byte of a two-byte varint, the second bytes that make it a reserved type (each
# pattern starts with a literal byte, so the scan runs at the regular expression engine's speed);
# built on first use (64 patterns: a tenth of the HTTP/3 dissector's import otherwise)
_GREASE2: list[re.Pattern[bytes]] | None = None


def _grease2() -> list[re.Pattern[bytes]]:
    global _GREASE2
    if _GREASE2 is None:  # (two threads at once both build it; each gets a whole list)
        _GREASE2 = [re.compile(re.escape(bytes([b0])) + b"(?=[" + b"".join(re.escape(bytes([b1])) for b1 in range(256)
                                                                           if is_grease(((b0 & 0x3F) << 8) | b1)) + b"])")
                    for b0 in range(0x40, 0x80) if any(is_grease(((b0 & 0x3F) << 8) | b1) for b1 in range(256))]
    return _GREASE2


MID_DISTRUSTED = 2  # frames of the first candidate's chain not trusted (they may be read by chance)
MID_MIN_FRAMES = 2  # frames a chain from the boundary to the end must hold (or one whole QPACK field section)


MID_CANDIDATES = 4096  # candidate headers examined per stream beyond one in four bytes (zeros: one per byte)


def resync_request_stream(buf, server: bool, budget=None) -> int | None:
    """The first frame boundary in ``buf`` — the captured end of a request stream, its FIN
    included, seen from its middle — that its end proves, or None.  Each position whose bytes
    read as a frame header a request stream may hold starts a chain of frames (header,
    payload, the next header...); a chain is possible only if it lands exactly on the stream's
    end.  The stream's true frames after the cut form one such chain, so a boundary every
    possible chain passes through is a true one — unless the captured bytes are all the tail
    of one frame: a chain of one frame landing on the end by chance is too likely for that,
    so the chain from the boundary must hold ``MID_MIN_FRAMES`` frames, or be one HEADERS
    frame whose payload reads as one whole QPACK field section (trailers).  Linear in
    ``len(buf)`` (candidates found by regular expressions, at most ``MID_CANDIDATES`` + one in
    four bytes, each charged to ``budget`` — a ``dissectors.budget.Budget`` or None —, chains
    memoised); hand-written:
    no library frames a stream it did not see begin."""
    n = len(buf)
    nxt: dict[int, int] = {}  # p -> the next header of the chain from p, for chains landing on n
    if not _ONE_BYTE_TYPES:  # (two threads at once both fill it, with equal patterns)
        _ONE_BYTE_TYPES.update({True: re.compile(b"[\\x00\\x01\\x05!]"), False: re.compile(b"[\\x00\\x01!]")})
    cands = [m.start() for m in _ONE_BYTE_TYPES[server].finditer(buf)]
    for pat in _grease2():
        cands.extend(m.start() for m in pat.finditer(buf))
    if len(cands) > MID_CANDIDATES + n // 4 or (budget is not None and not budget.take(len(cands))):
        return None  # bytes that read as headers almost everywhere prove nothing (and would cost)
    cands.sort()
    for p in reversed(cands):
        b0 = buf[p]
        q = p + (2 if b0 >= 0x40 else 1)
        r = _varint(buf, q)
        if r is None:
            continue
        e = r[1] + r[0]
        if e == n or (e < n and e in nxt):
            nxt[p] = e
    if not nxt:
        return None
    starts = sorted(nxt)
    chain: dict[int, int] = {}  # the chain of the first start: node -> its rank
    p = starts[0]
    while p < n:
        chain[p] = len(chain)
        p = nxt[p]
    chain[n] = len(chain)
    merge: dict[int, int] = {}  # node -> where its chain meets the first one
    first = 0  # rank of the latest meeting point
    for q in starts[1:]:
        if q in chain:
            continue  # the same chain, begun later: it agrees
        path = []
        while q not in chain and q not in merge:
            path.append(q)
            q = nxt[q]
        m = q if q in chain else merge[q]
        for x in path:
            merge[x] = m
        first = max(first, chain[m])
    # the first candidate's own frames are not trusted: a header read by chance in the tail
    # of the frame cut by the capture lands on a true boundary after it about once in a
    # hundred streams, two such in a row about once in a thousand (chains into it from many
    # earlier positions); with two frames distrusted, once in about 20 000 framed streams of
    # random bytes (200 000 aioquic-encoded streams cut at random points: 1 wrong of 19 969)
    first = max(first, MID_DISTRUSTED)
    nodes = sorted(chain, key=chain.__getitem__)[first:]
    if len(nodes) - 1 >= MID_MIN_FRAMES:
        return nodes[0]
    if len(nodes) == 2 and buf[nodes[0]] == 0x01:  # one HEADERS frame: trailers?
        r = _varint(buf, nodes[0] + 1)
        if r is not None:
            prefix, lines, complete = field_lines(bytes(buf[r[1]:n]))
            if prefix is not None and complete and lines:
                return nodes[0]
    return n


CONTROL_MID_TYPES = frozenset({0x03, 0x07, 0x0D, 0xF0700, 0xF0701})


def _looks_like_control(data) -> bool:
    """HTTP/3 frames a control stream carries after its SETTINGS (CANCEL_PUSH, GOAWAY,
    MAX_PUSH_ID, PRIORITY_UPDATE, reserved GREASE types), from a frame boundary: at least one
    whole frame, every frame of a known control type, the last one possibly cut."""
    p, n, whole = 0, len(data), 0
    while p < n:
        a = _varint(data, p)
        b = _varint(data, a[1]) if a else None
        if b is None:
            return whole > 0
        code, (length, q) = a[0], b
        if code not in CONTROL_MID_TYPES and not is_grease(code):
            return False
        if length > 1 << 14:
            return False
        if q + length > n:
            return whole > 0
        if code in (0xF0700, 0xF0701):
            r = _varint(data, q)
            if r is None or r[1] > q + length or any(c < 0x20 or c > 0x7E for c in data[r[1] : q + length]):
                return False
        p = q + length
        whole += 1
    return whole > 0


def infer_uni_kind(data, taken=()) -> str | None:
    """The kind of a unidirectional stream seen from its middle (its type byte was before the
    capture), from its bytes: ``control``, ``qpack_encoder`` or ``qpack_decoder``, when
    exactly one of the kinds not ``taken`` yet in its direction reads them whole; None if
    none does, or more than one (more bytes may tell)."""
    from . import qpack_lenient as ql

    fits = []
    if "control" not in taken and _looks_like_control(data):
        fits.append("control")
    if "qpack_encoder" not in taken and ql.looks_like_encoder(data):
        fits.append("qpack_encoder")
    if "qpack_decoder" not in taken and ql.looks_like_decoder(data):
        fits.append("qpack_decoder")
    return fits[0] if len(fits) == 1 else None


def h3_evidence(stream_id: int, offset: int, data) -> str | None:
    """Why the bytes at the start of a QUIC stream are HTTP/3, or None (for a connection
    whose ALPN the capture did not show; as Wireshark's heuristic dissectors do): a
    client-initiated bidirectional stream opening with a whole HEADERS frame whose payload
    reads as one QPACK field section, or a unidirectional stream opening with the control
    type and a SETTINGS frame."""
    if offset != 0 or not data:
        return None
    if stream_id & 3 == 0:
        a = _varint(data, 0)
        b = _varint(data, a[1]) if a else None
        if b is None or a[0] != 0x01 or not 2 <= b[0] <= 1 << 16 or b[1] + b[0] > len(data):
            return None
        block = bytes(data[b[1] : b[1] + b[0]])
        prefix, lines, complete = field_lines(block)
        if prefix is None or not complete or not lines:
            return None
        return f"stream {stream_id} opens with a HEADERS frame ({b[0]} bytes, {len(lines)} QPACK field lines)"
    if stream_id & 2:
        a = _varint(data, 0)
        b = _varint(data, a[1]) if a else None
        c = _varint(data, b[1]) if b else None
        if a and b and c and a[0] == 0x00 and b[0] == 0x04 and c[0] <= 1 << 12:
            return f"unidirectional stream {stream_id} opens as a control stream with SETTINGS"
    return None
