"""HTTP/2 (RFC 9113) sans-IO dissector.

``H2Connection`` is fed the in-order bytes of each direction of one connection together
with the packet that carried them (``receive(direction, data, packet)``) and returns the
frames those bytes completed, as ``H2Frame`` objects.  It never opens files or sockets.

What it does beyond splitting frames:

- the client connection preface is recognised and skipped (direction 0);
- header blocks (HEADERS / PUSH_PROMISE + CONTINUATION) are reassembled and decoded with
  the ``hpack`` library, one decoder per direction; SETTINGS_HEADER_TABLE_SIZE sent by an
  endpoint raises the table size its decoder accepts; a failing block is marked
  (``H2Frame.error``) and decoding goes on;
- wire and decoded sizes per header block: ``block_wire`` (header block fragment bytes, no
  padding / priority fields), ``block_decoded`` (sum of name + value lengths, as the bytes an
  HTTP/1 message would carry without ": " and CRLF) and ``block_hpack_size`` (RFC 7541
  section 4.1 size: + 32 per entry);
- flow control: the connection window and each stream's send window of both senders are
  tracked (initial window from SETTINGS, WINDOW_UPDATE increments); a DATA frame that
  exhausts a window gets ``fields["stalled"] = "connection" | "stream"``, one that overruns
  it is marked with an error;
- RST_STREAM / GOAWAY error codes by name, SETTINGS by name (``settings``: the last value of
  each, the one that applies) and in wire order (``settings_list``: every [id, value], an
  identifier repeated in one frame included, RFC 9113 section 6.5.3), PRIORITY fields, GOAWAY
  debug data (``debug_data``: its first ``MAX_DEBUG_DATA`` bytes as UTF-8; where they are not
  UTF-8, the bytes that are not as ``\\xNN`` escapes and ``debug_data_escaped``;
  ``debug_data_length``: all of its bytes; ``debug_data_truncated`` when cut),
  ALTSVC, ORIGIN, PRIORITY_UPDATE (RFC 9218) fields; unknown types are kept as ``UNKNOWN_0xNN``;
- a stream that does not start with a frame boundary (capture started after the preface,
  or bytes lost by the capture) is resynchronised: the dissector searches the first offset
  where two consecutive plausible frame headers (known type, valid flags, length within
  SETTINGS_MAX_FRAME_SIZE, stream id allowed for the type) chain; header blocks decoded
  after that are marked ``hpack_state = "unknown"`` because the dynamic table was not seen
  from its start;
- a frame header whose length exceeds the receiver's SETTINGS_MAX_FRAME_SIZE (16384 until
  its SETTINGS say more) is a FRAME_SIZE_ERROR (RFC 9113 section 4.2): the frame is kept with
  its header fields, the error and ``fields["max_frame_size"]``, its payload is not read
  (``unread``), and framing resynchronises after its header as after a gap (its length may be
  the damage: waiting for up to 16 MB that never come would lose the rest of the stream);
- decoded header fields are charged to a ``dissectors.budget.Budget`` (``header_budget``, in
  RFC 7541 section 4.1 sizes: name + value + 32 per field): a block decoded past it is kept
  undecoded (``headers == []``, ``fields["not_decoded"]`` = the budget's name); as a budget
  that ran out stays so, later blocks are not decoded at all (the table need not follow them).

The frame layout is parsed by hand with ``struct`` (the 9-byte header is trivial, and
``hyperframe`` raises on the malformed and unknown frames a protocol analyser must keep);
HPACK is the ``hpack`` library.
"""
from __future__ import annotations

import codecs
import logging
import struct
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import hpack

from wirefall.dissectors.budget import Budget
from wirefall.dissectors.dataclass_repr import dataclass_eq, dataclass_repr
from wirefall.dissectors.prefix_int import prefix_int
from hpack.exceptions import HPACKDecodingError
from hpack.huffman_table import decode_huffman
from hpack.table import HeaderTable

# -- protocol registry entry (dissectors/registry.py) --------------------------------------
# RFC 9113 §6 frame types (+ RFC 7838 ALTSVC, RFC 8336 ORIGIN, RFC 9218 PRIORITY_UPDATE and the
# draft-16 BLOCKED Wireshark still knows).  The bare ints and name dicts below are the same
# numbers (tests/test_registry.py holds them equal).
from enum import IntEnum

from wirefall.dissectors.registry import FrameKinds, OracleSpec, ProtocolDescriptor, names_of


class H2FrameType(IntEnum):
    DATA = 0x0
    HEADERS = 0x1
    PRIORITY = 0x2
    RST_STREAM = 0x3
    SETTINGS = 0x4
    PUSH_PROMISE = 0x5
    PING = 0x6
    GOAWAY = 0x7
    WINDOW_UPDATE = 0x8
    CONTINUATION = 0x9
    ALTSVC = 0xA
    BLOCKED = 0xB
    ORIGIN = 0xC
    PRIORITY_UPDATE = 0x10


DESCRIPTOR = ProtocolDescriptor(
    name="http2",
    display="HTTP2",
    protocols=("h2", "h2c"),
    frame_types=H2FrameType,
    type_names=names_of(H2FrameType),
    flags={  # RFC 9113 §6, with Wireshark's names (http2.flags.*)
        "DATA": ((0x1, "END_STREAM"), (0x8, "PADDED")),
        "HEADERS": ((0x1, "END_STREAM"), (0x4, "END_HEADERS"), (0x8, "PADDED"), (0x20, "PRIORITY")),
        "SETTINGS": ((0x1, "ACK"),),
        "PING": ((0x1, "ACK"),),
        "PUSH_PROMISE": ((0x4, "END_HEADERS"), (0x8, "PADDED")),
        "CONTINUATION": ((0x4, "END_HEADERS"),),
    },
    kinds=FrameKinds(
        reset=frozenset({"RST_STREAM"}),
        priority=frozenset({"PRIORITY", "PRIORITY_UPDATE"}),
        push=frozenset({"PUSH_PROMISE"}),
        headers=frozenset({"HEADERS", "PUSH_PROMISE", "CONTINUATION"}),
        data=frozenset({"DATA"}),
        settings=frozenset({"SETTINGS"}),
        goaway=frozenset({"GOAWAY"}),
        ping=frozenset({"PING"}),
        window=frozenset({"WINDOW_UPDATE"}),
        blocked=frozenset({"BLOCKED"}),
    ),
    fields_module="http2",
    long_name="HyperText Transfer Protocol 2", frame_header=9, hooks_module="http2",
    flow_control={"h2": "connection", "h2c": "connection"}, initial_window_setting=4,
    oracle=OracleSpec(layer="http2", type_field="http2.type",
                      fields={"stream_id": "http2.streamid", "length": "http2.length", "flags": "http2.flags"}),
)


def plausible_frame_end(buf, pos: int, max_frame: int = 1 << 14, *, block_middle: bool = False) -> int | None:
    """THE rule for a plausible HTTP/2 frame header at ``pos``: the end of its frame (may lie
    beyond ``buf``), or None.  Known type, only the flags that type defines, reserved bit clear,
    length within ``max_frame`` (and never below the 16384 every peer accepts), stream id zero
    or not as the type requires, fixed lengths (PRIORITY, RST_STREAM, PING, WINDOW_UPDATE),
    SETTINGS a multiple of 6 (empty when ACK), GOAWAY at least 8.  CONTINUATION is a header
    block's middle: only plausible with ``block_middle`` (a stream sniffed mid-connection may
    start with one; a resynchronisation point may not).  Used by the session sniffer
    (analyzer/sessions) and, through the same tables, by ``H2Connection._plausible``."""
    if len(buf) - pos < 9:
        return None
    hi, lo, t, flags, sid = _HDR.unpack_from(buf, pos)
    length = (hi << 16) | lo
    if t not in VALID_FLAGS or flags & ~VALID_FLAGS[t] & 0xFF:
        return None
    if sid & 0x80000000 or length > max(max_frame, DEFAULT_MAX_FRAME):
        return None
    if t in STREAM_ZERO and sid:
        return None
    if t in STREAM_NONZERO and not sid:
        return None
    if t in FIXED_LENGTH and length != FIXED_LENGTH[t]:
        return None
    if t == SETTINGS and (length % 6 or (flags & FLAG_ACK and length)):
        return None
    if t == GOAWAY and length < 8:
        return None
    if t == CONTINUATION and not block_middle:
        return None
    return pos + 9 + length
# -- end of the registry entry ---------------------------------------------------------------


STATIC_TABLE = HeaderTable.STATIC_TABLE  # RFC 7541 Appendix A, as (name, value) bytes

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
ALTSVC, ORIGIN, PRIORITY_UPDATE = 0x0A, 0x0C, 0x10

FRAME_NAMES = {
    0x0: "DATA",
    0x1: "HEADERS",
    0x2: "PRIORITY",
    0x3: "RST_STREAM",
    0x4: "SETTINGS",
    0x5: "PUSH_PROMISE",
    0x6: "PING",
    0x7: "GOAWAY",
    0x8: "WINDOW_UPDATE",
    0x9: "CONTINUATION",
    0xA: "ALTSVC",
    0xB: "BLOCKED",  # draft-ietf-httpbis-http2-16 (Wireshark still knows it)
    0xC: "ORIGIN",
    0x10: "PRIORITY_UPDATE",
}

FLAG_END_STREAM = 0x1
FLAG_ACK = 0x1
FLAG_END_HEADERS = 0x4
FLAG_PADDED = 0x8
FLAG_PRIORITY = 0x20

# flags each type defines (others must be ignored, but a resync candidate using them is suspicious)
VALID_FLAGS = {
    DATA: 0x09,
    HEADERS: 0x2D,
    PRIORITY: 0,
    RST_STREAM: 0,
    SETTINGS: 0x01,
    PUSH_PROMISE: 0x0C,
    PING: 0x01,
    GOAWAY: 0,
    WINDOW_UPDATE: 0,
    CONTINUATION: 0x04,
    ALTSVC: 0,
    ORIGIN: 0,
    PRIORITY_UPDATE: 0,
}
STREAM_ZERO = {SETTINGS, PING, GOAWAY, ORIGIN, PRIORITY_UPDATE}
STREAM_NONZERO = {DATA, HEADERS, PRIORITY, RST_STREAM, PUSH_PROMISE, CONTINUATION}
FIXED_LENGTH = {PRIORITY: 5, RST_STREAM: 4, PING: 8, WINDOW_UPDATE: 4}

ERROR_NAMES = {
    0x0: "NO_ERROR",
    0x1: "PROTOCOL_ERROR",
    0x2: "INTERNAL_ERROR",
    0x3: "FLOW_CONTROL_ERROR",
    0x4: "SETTINGS_TIMEOUT",
    0x5: "STREAM_CLOSED",
    0x6: "FRAME_SIZE_ERROR",
    0x7: "REFUSED_STREAM",
    0x8: "CANCEL",
    0x9: "COMPRESSION_ERROR",
    0xA: "CONNECT_ERROR",
    0xB: "ENHANCE_YOUR_CALM",
    0xC: "INADEQUATE_SECURITY",
    0xD: "HTTP_1_1_REQUIRED",
}

SETTINGS_NAMES = {
    0x1: "HEADER_TABLE_SIZE",
    0x2: "ENABLE_PUSH",
    0x3: "MAX_CONCURRENT_STREAMS",
    0x4: "INITIAL_WINDOW_SIZE",
    0x5: "MAX_FRAME_SIZE",
    0x6: "MAX_HEADER_LIST_SIZE",
    0x8: "ENABLE_CONNECT_PROTOCOL",
    0x9: "NO_RFC7540_PRIORITIES",
    0x10: "TLS_RENEG_PERMITTED",  # MS-HTTP2E
}

DEFAULT_WINDOW = 65535
MAX_WINDOW = 0x7FFFFFFF
DEFAULT_MAX_FRAME = 16384
MAX_HEADER_BLOCK = 1 << 20  # assembled header block bytes (HEADERS + CONTINUATION) before giving up
MAX_CONTINUATION = 1000
MAX_DEBUG_DATA = 1024  # GOAWAY debug data bytes kept in fields["debug_data"] (the rest: debug_data_truncated)
RESYNC_SCAN = 1 << 20  # bytes scanned for a frame boundary before the direction is given up

_HDR = struct.Struct(">BHBBI")  # length hi byte, length lo 16, type, flags, stream id


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"UNKNOWN_0x{code:x}")


def frame_name(t: int) -> str:
    return FRAME_NAMES.get(t) or f"UNKNOWN_0x{t:02x}"


@dataclass(slots=True, init=False, repr=False, eq=False)
class H2Frame:
    """One HTTP/2 frame as it was on the wire.  (Its ``__init__`` is written out: made for
    every frame, the generated one's 23 parameters cost a sixth more than these 8.)"""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)
    __eq__ = dataclass_eq  # (the generated comparison, not compiled at import: ~0.5 ms of every HTTP/2 run)

    direction: int
    type: int
    flags: int
    stream_id: int
    length: int  # payload length from the frame header
    offset: int  # stream offset of the first header byte (plaintext stream for h2 over TLS)
    first_packet: int
    packet: int  # packet that carried the last byte
    fields: dict[str, Any] = field(default_factory=dict)
    headers: list[tuple[str, str]] | None = None  # decoded header list when this frame ends a block
    block_wire: int = 0  # header block bytes (for the frame that ends the block: whole block)
    block_decoded: int = 0
    block_hpack_size: int = 0
    data_length: int = 0  # DATA payload without padding
    data: bytes | None = None  # DATA payload without padding (not kept by the session)
    block_start: H2Frame | None = None  # for the frame that ends a header block: the HEADERS / PUSH_PROMISE
    block_parts: list[H2Frame] | None = None  # for the frame that ends a block: all its frames, in order
    block_headers: list[tuple[str, str]] | None = None  # for the frame that ends a block: the whole list
    fragment: int = 0  # header block fragment bytes in this frame
    model: Any = None  # free for the session (its Frame for this one)
    pad_length: int = 0
    error: str | None = None
    unread: bool = False  # header only: its length was impossible (FRAME_SIZE_ERROR), payload not read

    def __init__(self, direction: int, type: int, flags: int, stream_id: int, length: int, offset: int,
                 first_packet: int, packet: int) -> None:
        self.direction = direction
        self.type = type
        self.flags = flags
        self.stream_id = stream_id
        self.length = length
        self.offset = offset
        self.first_packet = first_packet
        self.packet = packet
        self.fields = {}
        self.headers = None
        self.block_wire = self.block_decoded = self.block_hpack_size = self.data_length = self.fragment = self.pad_length = 0
        self.data = self.block_start = self.block_parts = self.block_headers = self.model = self.error = None
        self.unread = False

    @property
    def name(self) -> str:
        return frame_name(self.type)

    @property
    def end_stream(self) -> bool:
        return self.type in (DATA, HEADERS) and bool(self.flags & FLAG_END_STREAM)


_new = object.__new__
# the fields H2Connection._parse sets on each H2Frame it makes (a field added must be set there too)
_H2FRAME_SLOTS = ("direction", "type", "flags", "stream_id", "length", "offset", "first_packet", "packet", "fields",
                  "headers", "block_wire", "block_decoded", "block_hpack_size", "data_length", "data", "block_start",
                  "block_parts", "block_headers", "fragment", "model", "pad_length", "error", "unread")
assert H2Frame.__slots__ == _H2FRAME_SLOTS


def _str_end(b: bytes, i: int) -> int:
    n, i = prefix_int(b, i, 7)
    return i + n


class LenientHpack:
    """HPACK decoding when the dynamic table's earlier entries are unknown: a capture that
    starts inside a connection, lost bytes, or a block that failed.  The ``hpack`` library
    cannot serve here: a reference to an entry it lacks raises part-way through the block,
    after some of the block's insertions, and the table is wrong from then on.  So this is
    written by hand (RFC 7541 section 6; strings through the library's Huffman decoder).

    Entries inserted since are known, newest first: dynamic index 62 is the newest, so an
    index within them names the same entry the encoder meant (the real table still holds it,
    or the encoder could not refer to it), and one beyond them is unknown and shown as
    ``<unknown>``, as Wireshark shows it.  Eviction is therefore never needed to stay right:
    the entries are only bounded in bytes, oldest dropped first."""

    UNKNOWN = b"<unknown>"
    MAX_BYTES = 1 << 20

    __slots__ = ("entries", "size", "max_header_list")

    def __init__(self, max_header_list: int):
        self.entries: deque[tuple[bytes, bytes]] = deque()
        self.size = 0
        self.max_header_list = max_header_list

    def _field(self, idx: int) -> tuple[bytes, bytes] | None:
        if idx <= 0:
            raise ValueError("header field index 0")
        if idx <= len(STATIC_TABLE):
            return STATIC_TABLE[idx - 1]
        idx -= len(STATIC_TABLE) + 1
        return self.entries[idx] if idx < len(self.entries) else None

    @staticmethod
    def _str(b: bytes, i: int) -> tuple[bytes, int]:
        n, j = prefix_int(b, i, 7)
        if j + n > len(b):
            raise ValueError("string beyond the end of the header block")
        s = b[j : j + n]
        return (decode_huffman(s) if b[i] & 0x80 else s), j + n

    def decode(self, block: bytes) -> tuple[list[tuple[bytes, bytes]], int]:
        """(fields, how many of them have an unknown name); ValueError if the block is malformed."""
        out: list[tuple[bytes, bytes]] = []
        unknown = total = i = 0
        n = len(block)
        try:
            while i < n:
                c = block[i]
                if c & 0x80:  # indexed field
                    idx, i = prefix_int(block, i, 7)
                    hit = self._field(idx)
                    if hit is None:
                        hit = (self.UNKNOWN, b"")
                    out.append(hit)
                elif c & 0x20 and not c & 0x40:  # dynamic table size update
                    size, i = prefix_int(block, i, 5)
                    if size == 0:
                        self.entries.clear()  # the real table is empty now
                        self.size = 0
                    continue
                else:  # literal: with incremental indexing (6-bit prefix), without / never (4-bit)
                    incr = bool(c & 0x40)
                    idx, i = prefix_int(block, i, 6 if incr else 4)
                    if idx:
                        hit = self._field(idx)
                        name = hit[0] if hit is not None else self.UNKNOWN
                    else:
                        name, i = self._str(block, i)
                    value, i = self._str(block, i)
                    out.append((name, value))
                    if incr:
                        self.entries.appendleft((name, value))
                        self.size += len(name) + len(value) + 32
                        while self.size > self.MAX_BYTES:
                            a, b = self.entries.pop()
                            self.size -= len(a) + len(b) + 32
                name = out[-1][0]
                unknown += name is self.UNKNOWN  # an unknown entry, or one inserted with an unknown name
                total += len(name) + len(out[-1][1]) + 32
                if total > self.max_header_list:
                    raise ValueError(f"header list exceeds {self.max_header_list} bytes")
        except IndexError:
            raise ValueError("header block ends inside a field") from None
        except HPACKDecodingError as e:
            raise ValueError(f"Huffman: {e}") from None
        return out, unknown


def hpack_field_ends(block: bytes) -> list[int]:
    """End offset of each header field representation in an HPACK block (RFC 7541 s6): the
    representations' ends (``hpack_representations``), table size updates left out.  The
    ``hpack`` library decodes the block, this tells in which frame of a HEADERS + CONTINUATION
    sequence each field ended (the library does not expose offsets).  Stops at a truncated
    representation."""
    return [e for kind, _v, _s, e in hpack_representations(block, limit=len(block)) if kind is not HpackRepr.TABLE_SIZE_UPDATE]


class HpackRepr(IntEnum):
    """An HPACK representation (RFC 7541 s6), numbered as Wireshark's ``http2.header.repr``
    values (packet-http2.c ``http2_header_repr_type``); their words are the descriptor's
    ``HPACK_REPR_WORDS``."""

    INDEXED = 1
    INCREMENTAL_INDEXED_NAME = 2
    INCREMENTAL_NEW_NAME = 3
    WITHOUT_INDEXED_NAME = 4
    WITHOUT_NEW_NAME = 5
    NEVER_INDEXED_NAME = 6
    NEVER_NEW_NAME = 7
    TABLE_SIZE_UPDATE = 8


HPACK_REPR_WORDS = {
    HpackRepr.INDEXED: "Indexed Header Field",
    HpackRepr.INCREMENTAL_INDEXED_NAME: "Literal Header Field with Incremental Indexing - Indexed Name",
    HpackRepr.INCREMENTAL_NEW_NAME: "Literal Header Field with Incremental Indexing - New Name",
    HpackRepr.WITHOUT_INDEXED_NAME: "Literal Header Field without Indexing - Indexed Name",
    HpackRepr.WITHOUT_NEW_NAME: "Literal Header Field without Indexing - New Name",
    HpackRepr.NEVER_INDEXED_NAME: "Literal Header Field never Indexed - Indexed Name",
    HpackRepr.NEVER_NEW_NAME: "Literal Header Field never Indexed - New Name",
    HpackRepr.TABLE_SIZE_UPDATE: "Maximum Header Table Size Change",
}


def hpack_representations(block: bytes, limit: int = 4096) -> list[tuple[HpackRepr, int, int, int]]:
    """Each representation of a whole HPACK block in order: ``(kind, integer, start, end)`` —
    the integer is the index (0 for a new name) or a table size update's size; start and end
    its bytes in the block.  Only the integer and string-length prefixes are read (the ``hpack``
    library decodes, and does not say how each field was represented, nor where it ends).  Stops at a truncated
    representation, and after ``limit`` of them (the detail tree's budget)."""
    out: list[tuple[HpackRepr, int, int, int]] = []
    i, n = 0, len(block)
    try:
        while i < n and len(out) < limit:
            c, s = block[i], i
            if c & 0x80:
                v, i = prefix_int(block, i, 7)
                kind = HpackRepr.INDEXED
            elif c & 0x40:
                v, i = prefix_int(block, i, 6)
                kind = HpackRepr.INCREMENTAL_INDEXED_NAME if v else HpackRepr.INCREMENTAL_NEW_NAME
            elif c & 0x20:
                v, i = prefix_int(block, i, 5)
                kind = HpackRepr.TABLE_SIZE_UPDATE
            else:
                v, i = prefix_int(block, i, 4)
                if c & 0x10:
                    kind = HpackRepr.NEVER_INDEXED_NAME if v else HpackRepr.NEVER_NEW_NAME
                else:
                    kind = HpackRepr.WITHOUT_INDEXED_NAME if v else HpackRepr.WITHOUT_NEW_NAME
            if kind not in (HpackRepr.INDEXED, HpackRepr.TABLE_SIZE_UPDATE):
                if not v:
                    i = _str_end(block, i)
                i = _str_end(block, i)
            if i > n:
                break
            out.append((kind, v, s, i))
    except (IndexError, ValueError):  # (cut, or an integer past 62 bits: the representations before it)
        pass
    return out


class _PacketRuns:
    """Packets of the bytes buffered in one direction: (start offset, packet) runs."""

    __slots__ = ("starts", "packets")

    def __init__(self):
        self.starts: list[int] = []
        self.packets: list[int] = []

    def add(self, offset: int, packet: int) -> None:
        if self.packets and self.packets[-1] == packet:
            return
        self.starts.append(offset)
        self.packets.append(packet)

    def at(self, offset: int) -> int:
        s = self.starts
        if not s:
            return 0
        i = bisect_right(s, offset) - 1  # starts only grow
        return self.packets[i] if i >= 0 else self.packets[0]

    def drop_before(self, offset: int) -> None:
        s = self.starts
        i = 0
        while i + 1 < len(s) and s[i + 1] <= offset:
            i += 1
        if i:
            del s[:i]
            del self.packets[:i]


class _CountingTable(hpack.table.HeaderTable):
    """The hpack library's dynamic table, counting its changes so that a header block whose
    bytes and table state were seen before is not decoded again (h2load-style traffic repeats
    identical, fully indexed blocks tens of thousands of times).  ``generation`` is the state:
    every insertion and every change of the maximum size (the only ways the decoder changes
    the table, evictions included) makes a new one, so one number names one table content
    (read as an attribute: a tuple of the sizes per block was a tenth of the block's time)."""

    def __init__(self):
        super().__init__()
        self.generation = 0

    def add(self, name, value):
        self.generation += 1
        return super().add(name, value)

    @property
    def maxsize(self) -> int:
        return self._maxsize

    @maxsize.setter
    def maxsize(self, newmax: int) -> None:
        if int(newmax) != self._maxsize:
            self.generation += 1
        hpack.table.HeaderTable.maxsize.fset(self, newmax)  # type: ignore[attr-defined]

    def state(self) -> int:
        return self.generation


# hpack logs every decoded field at DEBUG level; the calls alone cost a quarter of HPACK
# decoding time, so the module's logger is replaced by one that drops DEBUG at once.
class _QuietLog(logging.Logger):
    def debug(self, *a, **k):
        pass


_quiet_log = _QuietLog("hpack.hpack")
_quiet_log.parent = logging.getLogger("hpack.hpack")  # (anything else goes where hpack's own would: hpack logs only DEBUG)
hpack.hpack.log = _quiet_log
HPACK_CACHE_ENTRIES = 512
FIELD_STRINGS_BYTES = 4 << 20  # decoded (name, value) pairs remembered per direction: bytes,
FIELD_STRINGS_ENTRIES = 4096  # and pairs
MAX_PENDING_SETTINGS = 256  # unacknowledged SETTINGS frames remembered per sender


class _Direction:
    __slots__ = ("buf", "base", "runs", "preface", "sync", "decoder", "table", "hpack_unknown", "hpack_failed", "lenient",
                 "block", "block_parts", "block_frames", "block_stream", "block_first", "block_type", "max_frame",
                 "max_frame_known", "dead", "scanned", "hcache", "strings", "strings_bytes")

    def __init__(self, need_preface: bool):
        self.buf = bytearray()
        self.base = 0  # stream offset of buf[0]
        self.runs = _PacketRuns()
        self.preface = need_preface  # still expecting the client preface
        self.sync = True  # at a frame boundary
        self.decoder = hpack.Decoder()  # decodes the header blocks this direction sends
        self.table = self.decoder.header_table = _CountingTable()  # (the decoder's, typed as ours)
        self.hcache: dict[tuple, tuple] = {}  # (block, table state) -> (headers, decoded size)
        # (name, value) bytes -> the str pair made for them: a field that blocks repeat (a table
        # reference costs one byte) is one object in every header list that holds it
        self.strings: dict[tuple, tuple[str, str]] = {}
        self.strings_bytes = 0
        self.hpack_unknown = False
        self.hpack_failed = False
        self.lenient: LenientHpack | None = None  # decodes once the table's earlier entries are unknown
        self.block: bytearray | bytes | None = None  # header block being assembled (bytes: one frame's, not extended)
        self.block_parts: list[H2Frame] = []
        self.block_frames = 0
        self.block_stream = 0
        self.block_first: H2Frame | None = None
        self.block_type = 0
        self.max_frame = DEFAULT_MAX_FRAME  # what the peer allows this direction to send
        self.max_frame_known = True  # False while the peer's SETTINGS may have said more unseen (mid-stream)
        self.dead = False
        self.scanned = 0


class _Window:
    """Send windows of one sender: its connection window and each stream's."""

    __slots__ = ("conn", "streams", "initial")

    def __init__(self):
        self.conn = DEFAULT_WINDOW
        self.streams: dict[int, int] = {}
        self.initial = DEFAULT_WINDOW  # SETTINGS_INITIAL_WINDOW_SIZE of the receiver

    def stream(self, sid: int) -> int:
        w = self.streams.get(sid)
        if w is None:
            w = self.streams[sid] = self.initial
        return w


class H2Connection:
    """Sans-IO HTTP/2 decoder for both directions of one connection.

    ``client_preface``: direction 0 starts with the 24-byte preface (False after an
    HTTP/1.1 Upgrade when the preface is fed anyway, it is still recognised).
    ``mid_stream``: the capture starts somewhere inside the connection; resynchronise.
    """

    def __init__(self, mid_stream: bool = False, max_header_list: int = 1 << 20,
                 max_continuation: int = MAX_CONTINUATION, header_budget: Budget | None = None):
        self.dirs = (_Direction(not mid_stream), _Direction(False))
        self.header_budget = header_budget  # decoded header fields kept, per connection (and capture)
        self.budget_error = f"header block not decoded: budget {header_budget.name} ran out" if header_budget else ""
        self.windows = (_Window(), _Window())  # by sender direction
        self.max_header_list = max_header_list
        self.max_continuation = max_continuation
        self.notes: list[str] = []  # "packet N: ..." decoding problems
        self.settings: tuple[dict[str, int], dict[str, int]] = ({}, {})  # last SETTINGS values sent by each direction
        self.overruns: tuple[list, list] = ([], [])  # (DATA frame, message) per sender, told at the end
        self.pending_settings: tuple[list, list] = ([], [])  # SETTINGS awaiting ACK, per sender
        self.settings_dropped = [0, 0]  # unacknowledged SETTINGS forgotten past MAX_PENDING_SETTINGS, per sender
        if mid_stream:
            for d in self.dirs:
                d.sync = False
                d.hpack_unknown = True
                d.max_frame_known = False  # the SETTINGS that set it came before the capture
        for d in self.dirs:
            d.decoder.max_header_list_size = max_header_list

    # -- input ----------------------------------------------------------------------
    def receive(self, direction: int, data: bytes, packet: int, offset: int | None = None) -> list[H2Frame]:
        d = self.dirs[direction]
        if d.dead or not data:
            return []
        if offset is not None and not d.buf:
            d.base = offset
        d.runs.add(d.base + len(d.buf), packet)
        d.buf += data
        return self._parse(direction, d)

    def incomplete(self) -> list[tuple[int, int]]:
        """Per direction, (frame size, bytes of it seen) of a frame the bytes so far began but did
        not finish (asked at the end: the capture stopped inside it), or (0, 0)."""
        out = []
        for d in self.dirs:
            buf = d.buf
            if d.sync and not d.dead and len(buf) >= 9:
                out.append((9 + int.from_bytes(buf[:3], "big"), len(buf)))
            else:
                out.append((0, 0))
        return out

    def take_overruns(self) -> list[tuple[H2Frame, str]]:
        """DATA frames that exceeded a flow-control window, with no gap in the capture that
        could hide the WINDOW_UPDATE that allowed them (asked once, when the connection ends)."""
        out = self.overruns[0] + self.overruns[1]
        self.overruns = ([], [])
        return sorted(out, key=lambda x: x[0].packet)

    def gap(self, direction: int, length: int, packet: int) -> None:
        """``length`` bytes of this direction were lost: drop the partial frame, resync."""
        d = self.dirs[direction]
        if d.buf or d.block is not None or length:
            self.notes.append(f"packet {packet}: {length} bytes lost in direction {direction}; HTTP/2 resynchronising, HPACK state unknown from here")
        d.base += len(d.buf) + length
        d.buf.clear()
        d.runs = _PacketRuns()
        self._lose_place(direction, d)
        if not self.settings[direction]:  # its first SETTINGS may have been lost: the peer's maximum is unknown
            self.dirs[1 - direction].max_frame_known = False

    def _lose_place(self, direction: int, d: _Direction) -> None:
        """Bytes of this direction were not read (lost by the capture, or skipped after a frame
        of impossible length): look for the next frame boundary; what they held is unknown."""
        self.overruns[1 - direction].clear()  # they may have opened the peer's windows
        d.sync = False
        d.preface = False
        d.hpack_unknown = True
        d.lenient = None  # entries they inserted are unknown: known entries start again
        d.block = None
        d.block_first = None

    def apply_upgrade_settings(self, payload: bytes) -> None:
        """The client's HTTP2-Settings header (h2c upgrade): SETTINGS sent by direction 0."""
        for i in range(0, len(payload) - 5, 6):
            ident, value = struct.unpack_from(">HI", payload, i)
            self._setting(0, ident, value, acked=True)

    # -- framing ----------------------------------------------------------------------
    def _parse(self, direction: int, d: _Direction) -> list[H2Frame]:
        out: list[H2Frame] = []
        buf = d.buf
        pos = 0
        n = len(buf)
        if d.preface:
            k = min(n, len(PREFACE))
            if buf[:k] != PREFACE[:k]:
                self.notes.append(f"packet {d.runs.at(d.base)}: client stream does not start with the HTTP/2 preface; resynchronising")
                d.preface = False
                d.sync = False
                d.hpack_unknown = True
            elif n < len(PREFACE):
                return out
            else:
                pos = len(PREFACE)
                d.preface = False
        mv = None
        base = d.base  # (constant in the loop; so are the packet runs: only receive() and gap() change them)
        runs = d.runs
        rs = runs.starts
        rp = runs.packets
        frame = self._frame
        append = out.append
        budget_error = self.budget_error
        while not d.dead:
            if not d.sync:
                p = self._resync(d, buf, pos)
                if p is None:
                    # keep the tail that may still hold a frame header start
                    keep = min(n - pos, 9 + 9 + d.max_frame)
                    d.scanned += max(0, n - pos - keep)
                    if d.scanned > RESYNC_SCAN:
                        d.dead = True
                        self.notes.append(f"packet {runs.at(base + n - 1)}: no HTTP/2 frame boundary found in direction {direction}; giving up")
                        if mv is not None:
                            mv.release()
                        buf.clear()
                        return out
                    pos = n - keep
                    break
                if p > pos:
                    self.notes.append(f"packet {runs.at(base + p)}: HTTP/2 resynchronised after skipping {p - pos} bytes in direction {direction}")
                pos = p
                d.sync = True
                d.scanned = 0
            if n - pos < 9:
                break
            hi, lo, t, flags, sid = _HDR.unpack_from(buf, pos)
            length = (hi << 16) | lo
            end = pos + 9 + length
            if length > d.max_frame and d.max_frame_known:
                out.append(self._oversized(direction, d, pos, t, flags, sid, length))
                pos += 9
                continue
            if end > n:
                break
            off = base + pos
            # the packets of its first and last byte (runs.at), the newest run's without a search
            if off >= rs[-1]:
                fp = lp = rp[-1]
            else:
                fp = runs.at(off)
                lp = rp[-1] if base + end - 1 >= rs[-1] else runs.at(base + end - 1)
            # H2Frame(direction, t, flags, sid & 0x7FFFFFFF, length, off, fp, lp), its fields set
            # here (all of them: _H2FRAME_SLOTS): calling the class runs its __init__ in a nested
            # run of the interpreter (type.__call__), ~1.3 k instructions a frame
            f = _new(H2Frame)
            f.direction = direction
            f.type = t
            f.flags = flags
            f.stream_id = sid & 0x7FFFFFFF
            f.length = length
            f.offset = off
            f.first_packet = fp
            f.packet = lp
            f.fields = {}
            f.headers = f.data = f.block_start = f.block_parts = f.block_headers = f.model = f.error = None
            f.block_wire = f.block_decoded = f.block_hpack_size = f.data_length = f.fragment = f.pad_length = 0
            f.unread = False
            if sid & 0x80000000:
                f.fields["reserved_bit"] = 1
            try:
                if mv is None:
                    mv = memoryview(buf)  # one view for the loop, released before buf changes size
                frame(d, f, mv[pos + 9 : end].tobytes())
            except (struct.error, IndexError, ValueError) as e:  # malformed payload
                f.error = f.error or f"malformed {f.name} frame: {e}"
            if f.error and f.error != budget_error:  # (a budget says so once, at the end)
                self.notes.append(f"packet {f.packet}: {f.error}")
            append(f)
            pos = end
        if mv is not None:
            mv.release()
        if pos:
            del buf[:pos]
            d.base += pos
            d.runs.drop_before(d.base)
        return out

    def _oversized(self, direction: int, d: _Direction, pos: int, t: int, flags: int, sid: int, length: int) -> H2Frame:
        """A frame header whose length exceeds what the receiver allows (RFC 9113 section 4.2:
        FRAME_SIZE_ERROR).  Damage or a broken peer: either way its end is unknown, so the
        frame is kept unread and framing resynchronises after its header (``_resync``)."""
        off = d.base + pos
        f = H2Frame(direction, t, flags, sid & 0x7FFFFFFF, length, off, d.runs.at(off), d.runs.at(off + 8))
        f.unread = True
        f.fields["max_frame_size"] = d.max_frame
        f.error = f"FRAME_SIZE_ERROR: frame length {length} exceeds the maximum frame size {d.max_frame}; payload not read"
        if d.block is not None:
            self._finish_block(d, f, failed="interrupted by a frame of impossible length")
        self.notes.append(f"packet {f.packet}: {f.name} {f.error}; HTTP/2 resynchronising in direction {direction}, HPACK state unknown from here")
        self._lose_place(direction, d)
        return f

    def _plausible(self, d: _Direction, buf, pos: int) -> int | None:
        """End of a plausible frame at ``pos`` (may lie beyond the buffer), or None: the
        registry's one rule (``plausible_frame_end``), a CONTINUATION never (a block's middle:
        its HEADERS is lost anyway)."""
        return plausible_frame_end(buf, pos, d.max_frame)

    def _resync(self, d: _Direction, buf, pos: int) -> int | None:
        n = len(buf)
        for p in range(pos, n - 8):
            e = self._plausible(d, buf, p)
            if e is None:
                continue
            if e + 9 <= n:
                if self._plausible(d, buf, e) is not None:
                    return p
                continue
            if e == n:
                return p  # frame ends exactly with the data so far
            if e > n and n - p >= 9 + 16:
                return None if n - p < 2 * 9 + d.max_frame else p  # wait for more to confirm
            return None
        return None

    # -- frame payloads -------------------------------------------------------------------
    def _frame(self, d: _Direction, f: H2Frame, p: bytes) -> None:
        t = f.type
        fl = f.fields
        direction = f.direction
        if d.block is not None and t != CONTINUATION:
            f.error = f"{f.name} frame inside a header block of stream {d.block_stream} (CONTINUATION expected)"
            self._finish_block(d, f, failed="interrupted by another frame")
            return
        if t == DATA:
            pad = 0
            body = p
            if f.flags & FLAG_PADDED:
                pad = p[0]
                if pad >= len(p):
                    f.error = "DATA padding exceeds the frame payload"
                    pad = max(len(p) - 1, 0)
                body = p[1 : len(p) - pad]
                fl["pad_length"] = pad
            f.pad_length = pad
            f.data_length = len(body)
            f.data = body
            self._flow(f)
        elif t == HEADERS or t == PUSH_PROMISE:
            pad = 0
            i = 0
            if f.flags & FLAG_PADDED:
                pad = p[0]
                i = 1
                fl["pad_length"] = pad
            if t == HEADERS and f.flags & FLAG_PRIORITY:
                dep, w = struct.unpack_from(">IB", p, i)
                fl["exclusive"] = bool(dep >> 31)
                fl["depends_on"] = dep & 0x7FFFFFFF
                fl["weight"] = w + 1
                i += 5
            if t == PUSH_PROMISE:
                (prom,) = struct.unpack_from(">I", p, i)
                fl["promised_stream_id"] = prom & 0x7FFFFFFF
                i += 4
            if i + pad > len(p):
                f.error = f"{f.name} padding exceeds the frame payload"
                pad = max(len(p) - i, 0)
            f.pad_length = pad
            frag = p[i : len(p) - pad]
            f.fragment = len(frag)
            d.block_stream = f.stream_id
            d.block_type = t
            if f.flags & FLAG_END_HEADERS:
                # a block in one frame (most) is decoded as it is, nothing assembled (no block
                # was in progress: see above)
                self._end_block(d, f, frag, f, [f])
            else:  # one that CONTINUATION frames extend is copied
                d.block = bytearray(frag)
                d.block_parts = [f]
                d.block_frames = 0
                d.block_first = f
        elif t == CONTINUATION:
            if d.block is None or f.stream_id != d.block_stream:
                f.error = "CONTINUATION without a header block in progress" if d.block is None else \
                    f"CONTINUATION on stream {f.stream_id} inside the header block of stream {d.block_stream}"
                if d.block is not None:
                    self._finish_block(d, f, failed="interrupted")
                return
            d.block_frames += 1
            if len(d.block) + len(p) > MAX_HEADER_BLOCK or d.block_frames > self.max_continuation:
                self._finish_block(d, f, failed="header block exceeds the limit (CONTINUATION flood?)")
                return
            d.block += p
            f.fragment = len(p)
            d.block_parts.append(f)
            if f.flags & FLAG_END_HEADERS:
                self._finish_block(d, f)
        elif t == PRIORITY:
            dep, w = struct.unpack_from(">IB", p, 0)
            fl["exclusive"] = bool(dep >> 31)
            fl["depends_on"] = dep & 0x7FFFFFFF
            fl["weight"] = w + 1
            if f.length != 5:
                f.error = f"PRIORITY frame of length {f.length} (5 expected)"
        elif t == RST_STREAM:
            (code,) = struct.unpack_from(">I", p, 0)
            fl["error_code"] = code
            fl["error"] = error_name(code)
            if f.length != 4:
                f.error = f"RST_STREAM frame of length {f.length} (4 expected)"
            for w in self.windows:
                w.streams.pop(f.stream_id, None)
        elif t == SETTINGS:
            if f.flags & FLAG_ACK:
                fl["ack"] = True
                if f.length:
                    f.error = "SETTINGS ACK with a payload"
                # the peer acknowledges the oldest pending SETTINGS sent by the other direction
                pend = self.pending_settings[1 - direction]
                if pend:
                    for ident, value in pend.pop(0):
                        self._setting(1 - direction, ident, value, acked=True)
                return
            if f.length % 6:
                f.error = f"SETTINGS frame length {f.length} is not a multiple of 6"
            items = []
            st = {}
            for i in range(0, len(p) - 5, 6):
                ident, value = struct.unpack_from(">HI", p, i)
                items.append((ident, value))
                st[SETTINGS_NAMES.get(ident, f"0x{ident:x}")] = value
                self._setting(direction, ident, value, acked=False)
            fl["settings"] = st  # by name, the last value of each (the one that applies, RFC 9113 section 6.5.3)
            fl["settings_list"] = [[ident, value] for ident, value in items]  # every one, in wire order, repeats included
            self.settings[direction].update(st)
            pend = self.pending_settings[direction]
            pend.append(items)
            if len(pend) > MAX_PENDING_SETTINGS:  # a SETTINGS flood: keep the newest only
                del pend[0]
                self.settings_dropped[direction] += 1
                if f.error is None and self.settings_dropped[direction] == 1:  # said once per direction (a note each was 200 k notes)
                    f.error = (f"more than {MAX_PENDING_SETTINGS} SETTINGS frames await acknowledgement (flood); the oldest "
                               f"are dropped from here on (later ones not marked)")
        elif t == PUSH_PROMISE:
            pass  # handled above
        elif t == PING:
            fl["opaque"] = bytes(p[:8]).hex()
            if f.flags & FLAG_ACK:
                fl["ack"] = True
            if f.length != 8:
                f.error = f"PING frame of length {f.length} (8 expected)"
        elif t == GOAWAY:
            last, code = struct.unpack_from(">II", p, 0)
            fl["last_stream_id"] = last & 0x7FFFFFFF
            fl["error_code"] = code
            fl["error"] = error_name(code)
            if len(p) > 8:
                dbg = bytes(p[8 : 8 + MAX_DEBUG_DATA])
                try:  # (a character the bound cuts in two is left out: debug_data_truncated says so)
                    fl["debug_data"] = codecs.getincrementaldecoder("utf-8")().decode(dbg, final=len(p) - 8 <= MAX_DEBUG_DATA)
                except UnicodeDecodeError:  # bytes that are not UTF-8 stay visible, as \xNN escapes
                    fl["debug_data"] = dbg.decode("utf-8", "backslashreplace")
                    fl["debug_data_escaped"] = True
                fl["debug_data_length"] = len(p) - 8
                if len(p) - 8 > MAX_DEBUG_DATA:
                    fl["debug_data_truncated"] = True
        elif t == WINDOW_UPDATE:
            (inc,) = struct.unpack_from(">I", p, 0)
            inc &= 0x7FFFFFFF
            fl["increment"] = inc
            if f.length != 4:
                f.error = f"WINDOW_UPDATE frame of length {f.length} (4 expected)"
            if inc == 0:
                f.error = "WINDOW_UPDATE with an increment of 0"
            # the receiver (this direction) opens the other direction's send window
            w = self.windows[1 - direction]
            if f.stream_id == 0:
                w.conn += inc
                fl["window"] = w.conn
            else:
                w.streams[f.stream_id] = w.stream(f.stream_id) + inc
                fl["window"] = w.streams[f.stream_id]
        elif t == ALTSVC:
            (olen,) = struct.unpack_from(">H", p, 0)
            fl["origin"] = bytes(p[2 : 2 + olen]).decode("latin-1")
            fl["alt_svc"] = bytes(p[2 + olen :]).decode("latin-1")
        elif t == ORIGIN:
            origins = []
            i = 0
            while i + 2 <= len(p):
                (ln,) = struct.unpack_from(">H", p, i)
                origins.append(bytes(p[i + 2 : i + 2 + ln]).decode("latin-1"))
                i += 2 + ln
            fl["origins"] = origins
        elif t == PRIORITY_UPDATE:
            (sid,) = struct.unpack_from(">I", p, 0)
            fl["prioritized_stream_id"] = sid & 0x7FFFFFFF
            fl["priority_field_value"] = bytes(p[4:]).decode("latin-1")
        else:
            fl["unknown_type"] = t

    def _setting(self, direction: int, ident: int, value: int, acked: bool) -> None:
        """Apply a setting sent by ``direction`` (it governs what the peer sends it)."""
        peer = 1 - direction
        if ident == 0x1:  # HEADER_TABLE_SIZE: the decoder of what the peer sends
            dec = self.dirs[peer].decoder
            # accept the larger of old and new until the ACK (either may be in force meanwhile)
            dec.max_allowed_table_size = value if acked else max(value, dec.max_allowed_table_size)
        elif ident == 0x4 and value <= MAX_WINDOW:  # INITIAL_WINDOW_SIZE: the peer's stream send windows
            w = self.windows[peer]
            delta = value - w.initial
            if delta:
                for sid in w.streams:
                    w.streams[sid] += delta
                w.initial = value
        elif ident == 0x5 and 16384 <= value < (1 << 24):
            self.dirs[peer].max_frame = value
            self.dirs[peer].max_frame_known = True

    def _flow(self, f: H2Frame) -> None:
        w = self.windows[f.direction]
        n = f.length  # padding counts against flow control
        sid = f.stream_id
        conn = w.conn = w.conn - n
        streams = w.streams
        sw = streams.get(sid)  # (w.stream(sid), inlined)
        sw = (w.initial if sw is None else sw) - n
        if f.flags & FLAG_END_STREAM:
            streams.pop(sid, None)  # (the stream's window is done with)
        else:
            streams[sid] = sw
        fl = f.fields
        fl["window_connection"] = conn
        fl["window_stream"] = sw
        if self.dirs[0].hpack_unknown or self.dirs[1].hpack_unknown:
            # bytes lost either way (the receiver's WINDOW_UPDATEs among them), or a capture that
            # starts inside the connection: the windows are unknown, so neither overrun nor stall
            fl["window_state"] = "unknown"
        elif conn < 0 or sw < 0:
            # an overrun, or a WINDOW_UPDATE of the peer's that the capture lost and TCP has not
            # shown missing yet (bytes acknowledged but unseen are a gap only at the end): told
            # by take_overruns() when the connection ends, unless a gap came first
            if len(self.overruns[f.direction]) < MAX_PENDING_SETTINGS * 4:
                self.overruns[f.direction].append((f, f"DATA exceeds the flow-control window ({'connection' if conn < 0 else 'stream'} window {min(conn, sw)})"))
        elif conn == 0 or sw == 0:
            fl["stalled"] = "connection" if conn == 0 else "stream"

    def _charge(self, f: H2Frame, parts: list[H2Frame], size: int) -> bool:
        """Take ``size`` from the header budget; False (the block marked, kept undecoded) if it
        has run out: decoded header lists kept on frames and exchanges are what a block of a few
        bytes referring to large table entries multiplies."""
        b = self.header_budget
        if b is None:
            return True
        # b.take(size) where it and every parent have room (the common case), inlined
        x: Budget | None = b
        while x is not None and not x.hit and x.used + size <= x.cap:
            x = x.parent
        if x is None and size >= 0:
            x = b
            while x is not None:
                x.used += size
                x = x.parent
            return True
        if b.take(size):
            return True
        f.error = f.error or self.budget_error
        f.fields["not_decoded"] = b.name
        f.block_headers = []
        for part in parts:
            part.headers = []
        return False

    def _finish_block(self, d: _Direction, f: H2Frame, failed: str | None = None) -> None:
        """The header block in progress ends at ``f`` (its last frame, or the frame that
        interrupted it: ``failed`` says how)."""
        block = d.block or b""
        first = d.block_first
        d.block = None
        d.block_first = None
        parts = d.block_parts if d.block_parts and d.block_parts[-1] is f else [f]
        d.block_parts = []
        self._end_block(d, f, block, first, parts, failed)

    def _end_block(self, d: _Direction, f: H2Frame, block: bytes | bytearray, first: H2Frame | None,
                   parts: list[H2Frame], failed: str | None = None) -> None:
        """Decode a complete header block ``block`` (or mark it ``failed``): ``first`` is its
        HEADERS / PUSH_PROMISE, ``parts`` its frames in order, ``f`` the last of them."""
        f.block_wire = len(block)
        f.block_start = first
        f.block_parts = parts
        if first is not None and first is not f:
            f.fields["block_stream"] = d.block_stream
            f.fields["block_first_offset"] = first.offset
        if failed:
            f.error = f.error or f"header block of stream {d.block_stream}: {failed}"
            d.hpack_failed = True  # its insertions are lost: lenient decoding from here on
            d.lenient = None
            return
        if self.header_budget is not None and self.header_budget.hit:
            # it stays run out (dissectors.budget): no later block will be decoded, so the
            # HPACK table need not be followed either (decoding is most of HTTP/2's time)
            self._charge(f, parts, 0)
            return
        block = bytes(block)
        table = before = None
        unknown = 0
        if d.hpack_unknown or d.hpack_failed:
            # the table's earlier entries are unknown: decode what can be known
            f.fields["hpack_state"] = "unknown"
            if d.lenient is None:
                d.lenient = LenientHpack(d.decoder.max_header_list_size)
            try:
                hdrs, unknown = d.lenient.decode(block)
            except ValueError as e:
                f.error = f.error or f"HPACK: {e}"
                d.lenient = None  # the block's later insertions are lost: known entries start again
                f.headers = []
                f.block_headers = []
                return
            if unknown:
                f.fields["hpack_unknown_fields"] = unknown
        else:
            table = d.table
            before = table.generation  # (table.state(), inlined)
            hit = d.hcache.get((block, before))
            if hit is not None:
                out, dec = hit
                f.block_decoded = dec
                f.block_hpack_size = dec + 32 * len(out)
                if not self._charge(f, parts, f.block_hpack_size):
                    return
                f.block_headers = out
                if len(parts) == 1:
                    f.headers = out
                    return
                hdrs = None
            else:
                try:
                    hdrs = d.decoder.decode(block, raw=True)  # type: ignore[assignment]  # hpack annotates Iterable; it returns a list
                except Exception as e:  # noqa: BLE001 - HPACKError, or the library failing: never stop the analysis
                    f.error = f.error or f"HPACK: {type(e).__name__}: {e}"
                    d.hpack_failed = True  # the table may hold part of this block: lenient from here on
                    d.lenient = None
                    f.headers = []
                    f.block_headers = []
                    return
        if hdrs is not None:
            dec = 0
            for name, value in hdrs:
                dec += len(name) + len(value)
            if unknown:  # a ``<unknown>`` field (an entry from before the capture) adds nothing: its size is not known
                unk = LenientHpack.UNKNOWN
                dec -= sum(len(name) + len(value) for name, value in hdrs if name == unk or value == unk)
            f.block_decoded = dec
            f.block_hpack_size = dec + 32 * len(hdrs)
            if not self._charge(f, parts, f.block_hpack_size):
                return  # (decoded all the same: its size is known)
            strings = d.strings
            out = []
            for hf in hdrs:
                pair = strings.get(hf)
                if pair is None:
                    pair = (hf[0].decode("latin-1"), hf[1].decode("latin-1"))
                    if len(strings) < FIELD_STRINGS_ENTRIES:
                        strings[hf] = pair
                        d.strings_bytes += len(hf[0]) + len(hf[1]) + 32
                out.append(pair)
            if d.strings_bytes > FIELD_STRINGS_BYTES or len(strings) >= FIELD_STRINGS_ENTRIES:
                strings.clear()
                d.strings_bytes = 0
            f.block_headers = out
            if table is not None and table.generation == before:  # the block left the table as it was
                if len(d.hcache) >= HPACK_CACHE_ENTRIES:
                    d.hcache.clear()
                d.hcache[(block, before)] = (out, dec)
        else:
            out = f.block_headers
        if len(parts) == 1:
            f.headers = out
            return
        # each field belongs to the frame its representation ended in (as Wireshark shows it)
        ends = hpack_field_ends(bytes(block))
        if len(ends) != len(out):
            f.headers = out
            for part in parts[:-1]:
                part.headers = []
            return
        k = 0
        limit = 0
        for part in parts:
            limit += part.fragment
            part.headers = []
            while k < len(out) and (ends[k] <= limit or part is f):
                part.headers.append(out[k])
                k += 1
