"""SPDY/2, SPDY/3 and SPDY/3.1 sans-IO dissector.

``SpdyConnection`` is fed the in-order bytes of each direction of one connection
(``receive(direction, data)``; ``gap(direction, length)`` for bytes the capture lost) and
returns the frames those bytes completed, as ``SpdyFrame`` objects carrying the offsets of
their first and last bytes in that direction's stream (the session maps offsets to packets).
It never opens files or sockets.

- Framing (draft-mbelshe-httpbis-spdy-00 section 2.2 and the SPDY/2 draft): control frames
  SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS (frame flag CLEAR_SETTINGS, per-entry
  PERSIST_VALUE / PERSISTED; SPDY/2 entries use the historical little-endian 24-bit id),
  NOOP (v2), PING, GOAWAY (v3 adds a status), HEADERS, WINDOW_UPDATE (stream 0 = SPDY/3.1
  session window), CREDENTIAL (v3); unknown control types are skipped by their length and kept
  as ``UNKNOWN_0xNNNN``; DATA frames with FIN and (v2) COMPRESS flags.  DATA payloads are
  counted, never buffered.
- Header blocks: zlib (RFC 1950) with the version's dictionary, one inflate stream per
  direction kept across frames (``zlib.decompressobj(zdict=...)``); name/value lengths are
  16-bit in v2 and 32-bit in v3.  Sizes per block: ``block_wire`` (compressed bytes as in
  the frame), ``block_raw`` (inflated name/value block, length fields included) and
  ``block_decoded`` (sum of name + value lengths, values as on the wire with their NUL
  separators: the bytes an HTTP/1 message would carry without ": " and CRLF).
  Inflated output per block is capped (``header_limit``); a block over the cap is marked and
  the rest of its input is still inflated (output discarded) so the zlib stream stays in
  step and later blocks decode, up to ``OVER_CAP_WORK`` (16 x the cap, at least 16 MiB): a
  block that inflates beyond that is no header block, and that direction's zlib stream is
  not inflated further (later blocks ``fields["not_decoded"] = "spdy_header_block"``).  Inflating is work charged to ``decompress_budget`` (a
  ``dissectors.budget.Budget``, bytes inflated, in bounded steps): once it runs out, that
  direction's zlib stream is no longer inflated, and its later blocks are marked not decoded
  (``fields["not_decoded"]`` = the budget's name); framing and DATA go on.  Decoded fields
  kept are charged to ``header_budget`` (name + value + 32 per field, as HPACK counts them):
  a block past it is marked the same way, and as a budget that ran out stays so, later blocks
  are not even inflated.  A zlib error leaves the inflater unusable: later
  blocks of that direction are marked.
- A value holding several NUL-separated values is split into several (name, value) pairs.
- After a gap inside a DATA payload framing continues; a gap anywhere else loses the frame
  boundary: the dissector resynchronises on the first offset where a plausible control frame
  header chains to another one (or ends the received bytes), and header blocks are marked
  from then on because the zlib stream lost bytes.

Frames are parsed by hand with ``struct``: no maintained Python library parses SPDY (the
protocol was retired in 2016), and zlib is the standard library's.
"""
from __future__ import annotations

import struct
import zlib
from enum import IntEnum
from typing import Any

from wirefall.dissectors.budget import Budget
from wirefall.dissectors.registry import FrameKinds, OracleSpec, ProtocolDescriptor, names_of

# SPDY/2 header dictionary: the string of the SPDY/2 draft with its terminating NUL
# (907 bytes, Adler-32 0xdfa251b2).  Source: Chromium net/spdy/spdy_protocol.h kV2Dictionary
# (whose size, arraysize(), includes the NUL); identical in spray/spray
# spray-spdy/.../Spdy2.scala and in spdy-transport 3.0.0 protocol/spdy/dictionary.js.
DICT_V2 = (
    b"optionsgetheadpostputdeletetraceacceptaccept-charsetaccept-encodingaccept-la"
    b"nguageauthorizationexpectfromhostif-modified-sinceif-matchif-none-matchif-ra"
    b"ngeif-unmodifiedsincemax-forwardsproxy-authorizationrangerefererteuser-agent"
    b"1001012002012022032042052063003013023033043053063074004014024034044054064074"
    b"08409410411412413414415416417500501502503504505accept-rangesageetaglocationp"
    b"roxy-authenticatepublicretry-afterservervarywarningwww-authenticateallowcont"
    b"ent-basecontent-encodingcache-controlconnectiondatetrailertransfer-encodingu"
    b"pgradeviawarningcontent-languagecontent-lengthcontent-locationcontent-md5con"
    b"tent-rangecontent-typeetagexpireslast-modifiedset-cookieMondayTuesdayWednesd"
    b"ayThursdayFridaySaturdaySundayJanFebMarAprMayJunJulAugSepOctNovDecchunkedtex"
    b"t/htmlimage/pngimage/jpgimage/gifapplication/xmlapplication/xhtmltext/plainp"
    b"ublicmax-agecharset=iso-8859-1utf-8gzipdeflateHTTP/1.1statusversionurl\x00"
)

# SPDY/3 header dictionary (1423 bytes, Adler-32 0xe3c6a7c2): draft-mbelshe-httpbis-spdy-00
# section 2.6.10.1 (../shared/specs beside the repository), byte for byte.
DICT_V3 = (
    b"\x00\x00\x00\x07options\x00\x00\x00\x04head\x00\x00\x00\x04post\x00\x00\x00"
    b"\x03put\x00\x00\x00\x06delete\x00\x00\x00\x05trace\x00\x00\x00\x06accept\x00"
    b"\x00\x00\x0eaccept-charset\x00\x00\x00\x0faccept-encoding\x00\x00\x00\x0facc"
    b"ept-language\x00\x00\x00\raccept-ranges\x00\x00\x00\x03age\x00\x00\x00\x05al"
    b"low\x00\x00\x00\rauthorization\x00\x00\x00\rcache-control\x00\x00\x00\nconne"
    b"ction\x00\x00\x00\x0ccontent-base\x00\x00\x00\x10content-encoding\x00\x00"
    b"\x00\x10content-language\x00\x00\x00\x0econtent-length\x00\x00\x00\x10conten"
    b"t-location\x00\x00\x00\x0bcontent-md5\x00\x00\x00\rcontent-range\x00\x00\x00"
    b"\x0ccontent-type\x00\x00\x00\x04date\x00\x00\x00\x04etag\x00\x00\x00\x06expe"
    b"ct\x00\x00\x00\x07expires\x00\x00\x00\x04from\x00\x00\x00\x04host\x00\x00"
    b"\x00\x08if-match\x00\x00\x00\x11if-modified-since\x00\x00\x00\rif-none-match"
    b"\x00\x00\x00\x08if-range\x00\x00\x00\x13if-unmodified-since\x00\x00\x00\rlas"
    b"t-modified\x00\x00\x00\x08location\x00\x00\x00\x0cmax-forwards\x00\x00\x00"
    b"\x06pragma\x00\x00\x00\x12proxy-authenticate\x00\x00\x00\x13proxy-authorizat"
    b"ion\x00\x00\x00\x05range\x00\x00\x00\x07referer\x00\x00\x00\x0bretry-after"
    b"\x00\x00\x00\x06server\x00\x00\x00\x02te\x00\x00\x00\x07trailer\x00\x00\x00"
    b"\x11transfer-encoding\x00\x00\x00\x07upgrade\x00\x00\x00\nuser-agent\x00\x00"
    b"\x00\x04vary\x00\x00\x00\x03via\x00\x00\x00\x07warning\x00\x00\x00\x10www-au"
    b"thenticate\x00\x00\x00\x06method\x00\x00\x00\x03get\x00\x00\x00\x06status"
    b"\x00\x00\x00\x06200 OK\x00\x00\x00\x07version\x00\x00\x00\x08HTTP/1.1\x00"
    b"\x00\x00\x03url\x00\x00\x00\x06public\x00\x00\x00\nset-cookie\x00\x00\x00\nk"
    b"eep-alive\x00\x00\x00\x06origin100101201202205206300302303304305306307402405"
    b"406407408409410411412413414415416417502504505203 Non-Authoritative Informati"
    b"on204 No Content301 Moved Permanently400 Bad Request401 Unauthorized403 Forb"
    b"idden404 Not Found500 Internal Server Error501 Not Implemented503 Service Un"
    b"availableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue,"
    b" Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif"
    b",application/xml,application/xhtml+xml,text/plain,text/javascript,publicpriv"
    b"atemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)



class SpdyControlType(IntEnum):
    """Control frame types (SPDY/3 draft §2.6; SPDY/2 has the same numbers up to 9, NOOP=5
    only in SPDY/2, CREDENTIAL=10 only in SPDY/3).  DATA frames carry no type."""

    SYN_STREAM = 1
    SYN_REPLY = 2
    RST_STREAM = 3
    SETTINGS = 4
    NOOP = 5
    PING = 6
    GOAWAY = 7
    HEADERS = 8
    WINDOW_UPDATE = 9
    CREDENTIAL = 10


CONTROL_NAMES = names_of(SpdyControlType)
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, NOOP, PING, GOAWAY, HEADERS, WINDOW_UPDATE, CREDENTIAL = SpdyControlType

DESCRIPTOR = ProtocolDescriptor(
    name="spdy",
    display="SPDY",
    protocols=("spdy/2", "spdy/3", "spdy/3.1"),
    frame_types=SpdyControlType,
    type_names=CONTROL_NAMES,
    flags={  # Wireshark's names (spdy.flags.*)
        "SYN_STREAM": ((0x1, "FLAG_FIN"), (0x2, "FLAG_UNIDIRECTIONAL")),
        "SYN_REPLY": ((0x1, "FLAG_FIN"),),
        "HEADERS": ((0x1, "FLAG_FIN"),),
        "DATA": ((0x1, "FLAG_FIN"), (0x2, "FLAG_COMPRESS")),
        "SETTINGS": ((0x1, "FLAG_SETTINGS_CLEAR_SETTINGS"),),
    },
    kinds=FrameKinds(
        reset=frozenset({"RST_STREAM"}),
        headers=frozenset({"SYN_STREAM", "SYN_REPLY", "HEADERS"}),
        data=frozenset({"DATA"}),
        settings=frozenset({"SETTINGS"}),
        goaway=frozenset({"GOAWAY"}),
        ping=frozenset({"PING"}),
        window=frozenset({"WINDOW_UPDATE"}),
    ),
    fields_module="spdy",
    oracle=OracleSpec(layer="spdy", type_field="spdy.type", clears_info=True,  # (dissect_spdy: col_clear, tcp_dissect_pdus)
                      fields={"stream_id": "spdy.streamid", "length": "spdy.length", "flags": "spdy.flags"}),
    frame_header=8, hooks_module="spdy",
    flow_control={"spdy/3": "stream", "spdy/3.1": "connection"}, initial_window_setting=7,  # (SPDY/2 has none)
)

FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02  # SYN_STREAM
FLAG_COMPRESS = 0x02  # DATA (SPDY/2)
FLAG_CLEAR_SETTINGS = 0x01  # SETTINGS frame (v2 calls it CLEAR_PREVIOUSLY_PERSISTED_SETTINGS)
SETTING_PERSIST_VALUE = 0x01
SETTING_PERSISTED = 0x02

SETTING_NAMES = {
    1: "UPLOAD_BANDWIDTH",
    2: "DOWNLOAD_BANDWIDTH",
    3: "ROUND_TRIP_TIME",
    4: "MAX_CONCURRENT_STREAMS",
    5: "CURRENT_CWND",
    6: "DOWNLOAD_RETRANS_RATE",
    7: "INITIAL_WINDOW_SIZE",
    8: "CLIENT_CERTIFICATE_VECTOR_SIZE",
}
SETTINGS_INITIAL_WINDOW_SIZE = 7

RST_STATUS = {
    1: "PROTOCOL_ERROR",
    2: "INVALID_STREAM",
    3: "REFUSED_STREAM",
    4: "UNSUPPORTED_VERSION",
    5: "CANCEL",
    6: "INTERNAL_ERROR",  # v2: FLOW_CONTROL_ERROR is 7 as in v3
    7: "FLOW_CONTROL_ERROR",
    8: "STREAM_IN_USE",
    9: "STREAM_ALREADY_CLOSED",
    10: "INVALID_CREDENTIALS",
    11: "FRAME_TOO_LARGE",
}
GOAWAY_STATUS = {0: "OK", 1: "PROTOCOL_ERROR", 11: "INTERNAL_ERROR"}

DEFAULT_HEADER_LIMIT = 1 << 20
FIELD_STRINGS_BYTES = 4 << 20  # decoded (name, value) pairs remembered per direction: bytes,
FIELD_STRINGS_ENTRIES = 4096  # and values
OVER_CAP_WORK = 16  # x the cap (at least 16 MiB): bytes inflated to keep an over-cap block's stream in step
MAX_CONTROL_FRAME = 1 << 24  # the 24-bit length field's range: a control frame is buffered whole
_INFLATE_IN = 1 << 16  # compressed bytes handed to zlib at once (its unconsumed tail is copied per call)
_INFLATE_OUT = 1 << 20  # inflated bytes asked of zlib at once

_HDR = struct.Struct(">HHI")  # control: C|version, type, flags|length ; data: stream id (2 halves)
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_2U32 = struct.Struct(">II")


class SpdyFrame:
    """One frame: what a ``@dataclass(slots=True)`` with these fields and defaults would be
    (its ``repr`` and ``==`` too), written out because making the dataclass cost ~6 M
    instructions (0.6 ms) at every import, a share of each small capture's run."""

    __slots__ = ("offset", "end", "version", "type", "type_code", "flags", "length", "stream_id", "headers", "fields",
                 "error", "block_wire", "block_raw", "block_decoded", "data")

    def __init__(self, offset: int, end: int, version: int | None, type: str, type_code: int | None, flags: int, length: int,
                 stream_id: int | None = None, headers: list[tuple[str, str]] | None = None, fields: dict[str, Any] | None = None,
                 error: str | None = None, block_wire: int = 0, block_raw: int = 0, block_decoded: int = 0,
                 data: bytes | None = None) -> None:
        self.offset = offset  # offset of the frame's first byte in its direction's stream
        self.end = end  # offset just past its last byte
        self.version = version  # control frames: their version field; DATA: None
        self.type = type  # SYN_STREAM ... / DATA / UNKNOWN_0xNNNN
        self.type_code = type_code  # control type, None for DATA
        self.flags = flags
        self.length = length  # as the frame header states it
        self.stream_id = stream_id
        self.headers = headers
        self.fields = fields
        self.error = error
        self.block_wire = block_wire
        self.block_raw = block_raw
        self.block_decoded = block_decoded
        self.data = data  # DATA payload (keep_data)

    def __repr__(self) -> str:
        return f"SpdyFrame({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__)})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not SpdyFrame:
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # (as the dataclass: mutable, compared by value)

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


def dictionary(version: int) -> bytes:
    return DICT_V2 if version == 2 else DICT_V3


def parse_nv_block(raw: bytes, version: int, strings: dict[bytes, list[tuple[str, str]]] | None = None) -> tuple[list[tuple[str, str]], int, str | None]:
    """Parse an inflated name/value block.  Returns (pairs, decoded size, error).  ``strings``
    (a pair's bytes as in the block -> its pairs, filled here) makes a pair that blocks repeat
    one object in every list that holds it."""
    if version == 2:
        unpack, w = _U16.unpack_from, 2
    else:
        unpack, w = _U32.unpack_from, 4
    n = len(raw)
    if n < w:
        return [], 0, "header block shorter than its pair count"
    (count,) = unpack(raw, 0)
    pos = w
    pairs: list[tuple[str, str]] = []
    decoded = 0
    if strings is None:
        strings = {}  # (then only the pairs this block repeats are shared)
    get = strings.get
    i = 0
    try:
        for i in range(count):  # noqa: B007 - (the except clause names the pair)
            start = pos
            (nl,) = unpack(raw, pos)  # (struct.error when the length field runs past the end)
            pos += w + nl
            (vl,) = unpack(raw, pos)
            pos += w
            end = pos + vl
            if end > n:
                raise struct.error
            decoded += nl + vl
            key = raw[start:end]
            hit = get(key)
            if hit is not None:
                pairs += hit
                pos = end
                continue
            name = raw[start + w : start + w + nl].decode("utf-8", "replace")
            value = raw[pos:end]
            pos = end
            if b"\0" in value:
                new = [(name, v.decode("utf-8", "replace")) for v in value.split(b"\0")]
            else:
                new = [(name, value.decode("utf-8", "replace"))]
            pairs += new
            if len(strings) < FIELD_STRINGS_ENTRIES:
                strings[key] = new
    except struct.error:
        return pairs, decoded, f"header block truncated at pair {i + 1} of {count}"
    err = None
    if pos != n:
        err = f"{n - pos} bytes after the last header pair"
    return pairs, decoded, err


class HeaderInflater:
    """One direction's zlib stream of header blocks (kept across frames)."""

    __slots__ = ("version", "limit", "z", "broken", "blocks", "budget", "stopped")

    def __init__(self, version: int, limit: int = DEFAULT_HEADER_LIMIT, budget: Budget | None = None):
        self.version = version
        self.limit = limit
        self.z = zlib.decompressobj(zdict=dictionary(version))
        self.broken: str | None = None
        self.blocks = 0
        self.budget = budget  # bytes inflated (decompression work)
        self.stopped: str | None = None  # the budget or limit that stopped this zlib stream

    def inflate(self, block: bytes | bytearray) -> tuple[bytes | None, str | None]:
        """Inflate one block.  (raw, None) or (None, reason).  Over the cap the rest of the block
        is still inflated (output discarded), so that the zlib stream stays in step; every step
        is charged to the budget, and once that runs out the stream stops (``stopped``)."""
        self.blocks += 1
        if self.broken:
            return None, self.broken
        z = self.z
        budget = self.budget
        first = None
        if len(block) <= _INFLATE_IN and (budget is None or budget.room() >= _INFLATE_OUT):
            # the common block: its input is one step and its output one call of zlib, within
            # the cap; what the loop of _steps does in its first turn, without the loop
            try:
                first = z.decompress(block, _INFLATE_OUT)
            except zlib.error as e:
                return self._failed(block, e)
            if len(first) <= self.limit and len(first) < _INFLATE_OUT and not z.unconsumed_tail:
                if budget is not None and first:
                    budget.charge(len(first))
                return first, None
        try:
            return self._steps(block, first)
        except zlib.error as e:
            return self._failed(block, e)

    def _steps(self, block: bytes | bytearray, first: bytes | None) -> tuple[bytes | None, str | None]:
        """``inflate``'s loop: ``first``, if given, is the output of its first call to zlib
        (the whole block, ``_INFLATE_OUT`` bytes asked)."""
        z = self.z
        limit = self.limit
        work = max(OVER_CAP_WORK * limit, OVER_CAP_WORK << 20)
        budget = self.budget
        parts: list[bytes] = []
        total = 0
        for i in range(0, max(len(block), 1), _INFLATE_IN):
            data = block[i : i + _INFLATE_IN]
            while True:
                n = _INFLATE_OUT
                if first is not None:
                    piece, first = first, None
                else:
                    if budget is not None:
                        room = budget.room()
                        if room <= 0:
                            budget.take(n)  # refused: the budget (and the capture's) knows it was hit
                            self.stopped = budget.name
                            self.broken = f"header block not decoded: budget {budget.name} ran out (header decompression stopped)"
                            return None, self.broken
                        n = min(n, room)
                    piece = z.decompress(data, n)
                if budget is not None and piece:
                    budget.charge(len(piece))
                total += len(piece)
                if total <= limit:
                    parts.append(piece)
                elif parts:
                    parts = []  # over the cap: only counted from here
                elif total > work:
                    self.stopped = "spdy_header_block"
                    self.broken = f"header block not decoded: a header block inflated beyond {work} bytes (header decompression stopped)"
                    return None, f"header block inflates beyond {work} bytes; header decompression stopped in this direction"
                data = z.unconsumed_tail
                if not data and len(piece) < n:
                    break  # (a full output buffer may leave output pending in zlib: ask again)
        if total > limit:
            return None, f"header block inflates beyond {limit} bytes (cap); discarded"
        return b"".join(parts), None

    def _failed(self, block: bytes | bytearray, e: zlib.error) -> tuple[None, str]:
        if self.blocks == 1 and not (len(block) >= 2 and block[0] & 0x0F == 8 and (block[0] << 8 | block[1]) % 31 == 0):
            # the first block has no zlib header (RFC 1950): the stream began before the capture did
            self.broken = "header compression context unknown: the zlib stream began before the capture"
            return None, self.broken
        self.broken = f"zlib stream unusable since header block {self.blocks}: {e}"
        return None, f"zlib error: {e}"


class _Direction:
    __slots__ = ("pos", "buf", "data_frame", "data_left", "chunks", "lost", "inflater", "version", "strings", "strings_bytes")

    def __init__(self) -> None:
        self.pos = 0  # stream offset of buf[0] (or of the next byte when buf is empty)
        self.buf: bytes | bytearray = b""  # bytearray while a frame is incomplete
        self.data_frame: SpdyFrame | None = None  # DATA frame whose payload is being skipped
        self.data_left = 0  # > 0 exactly while data_frame is set
        self.chunks: list[bytes] = []  # payload so far of data_frame
        self.lost = False  # frame boundary lost (gap): resynchronising
        self.inflater: HeaderInflater | None = None
        self.version: int | None = None
        self.strings: dict[bytes, list[tuple[str, str]]] = {}  # (name, value) bytes -> pairs, see parse_nv_block
        self.strings_bytes = 0


class SpdyConnection:
    """Both directions of one SPDY session (direction 0 = client to server)."""

    def __init__(self, header_limit: int = DEFAULT_HEADER_LIMIT, start_offsets: tuple[int, int] = (0, 0), keep_data: bool = True,
                 header_budget: Budget | None = None, decompress_budget: Budget | None = None):
        self.header_limit = header_limit
        self.header_budget = header_budget  # decoded fields kept (name + value + 32 each)
        self.decompress_budget = decompress_budget  # bytes inflated
        self.keep_data = keep_data  # hand DATA payloads over (bounded by the 24-bit frame length)
        self.dirs = [_Direction(), _Direction()]
        self.dirs[0].pos, self.dirs[1].pos = start_offsets
        self.version: int | None = None  # first control frame's version

    # -- input
    def set_offset(self, direction: int, offset: int) -> None:
        """Where this direction's first byte sits in its stream (before the first receive)."""
        d = self.dirs[direction]
        if not d.buf and d.data_frame is None:
            d.pos = offset

    def receive(self, direction: int, data) -> list[SpdyFrame]:
        d = self.dirs[direction]
        out: list[SpdyFrame] = []
        if type(data) is not bytes:  # (immutable bytes are parsed as they came: no copy)
            data = bytes(data)
        df = d.data_frame
        if df is not None:  # fast path: the rest of a DATA payload (d.data_left > 0)
            n = min(d.data_left, len(data))
            if self.keep_data:
                d.chunks.append(data[:n])
            d.data_left -= n
            d.pos += n
            if n:
                data = data[n:]
            if not d.data_left:
                out.append(self._data_done(d, df))
            if not data:
                return out
        if d.buf:
            d.buf += data  # bytearray: amortised growth while a large control frame arrives
            buf = d.buf
        else:
            buf = data
        d.buf = b""
        self._parse(d, direction, buf, out)
        return out

    def gap(self, direction: int, length: int) -> list[SpdyFrame]:
        """``length`` bytes of this direction were lost by the capture."""
        d = self.dirs[direction]
        out: list[SpdyFrame] = []
        if d.data_left and not d.buf:
            n = min(d.data_left, length)
            f = d.data_frame
            assert f is not None  # set while data_left > 0 (once per gap, not per frame)
            f.error = (f.error + "; " if f.error else "") + f"{n} payload bytes lost by the capture"
            d.data_left -= n
            d.pos += n
            length -= n
            d.chunks = []
            f.data = None
            if not d.data_left:
                out.append(self._data_done(d, f))
            if not length:
                return out
        if d.data_frame is not None:
            out.append(self._data_done(d, d.data_frame))
            d.data_left = 0
        d.pos += len(d.buf) + length
        d.buf = b""
        d.lost = True
        if d.inflater is not None and not d.inflater.broken:
            d.inflater.broken = "header bytes lost by the capture: zlib stream out of step"
        return out

    # -- parsing
    def _parse(self, d: _Direction, direction: int, buf: bytes | bytearray, out: list[SpdyFrame]) -> None:
        pos = 0
        n = len(buf)
        base = d.pos
        while True:
            if d.lost:
                k = self._resync(buf, pos)
                if k is None:
                    keep = max(pos, n - 7)  # a header may start in the last 7 bytes
                    buf, pos, base = buf[keep:], 0, base + keep
                    n = len(buf)
                    break
                pos = k
                d.lost = False
            if n - pos < 8:
                break
            w0, w1, w2 = _HDR.unpack_from(buf, pos)
            flags = w2 >> 24
            length = w2 & 0xFFFFFF
            if w0 & 0x8000:
                if n - pos < 8 + length:
                    break
                version = w0 & 0x7FFF
                f = self._control(d, base + pos, version, w1, flags, length, buf, pos + 8)
                out.append(f)
                pos += 8 + length
            else:
                sid = (w0 << 16 | w1) & 0x7FFFFFFF
                f = SpdyFrame(base + pos, base + pos + 8 + length, None, "DATA", None, flags, length, sid)
                if flags & FLAG_COMPRESS and (d.version or self.version) == 2:
                    f.fields = {"compressed": True}
                avail = n - pos - 8
                if avail >= length:
                    if self.keep_data:
                        f.data = bytes(buf[pos + 8 : pos + 8 + length])
                    out.append(f)
                    pos += 8 + length
                else:
                    d.data_frame = f
                    d.data_left = length - avail
                    if self.keep_data:
                        f.data = b""  # payload kept (a gap sets None)
                        d.chunks = [bytes(buf[pos + 8 : n])]
                    pos = n
                    break
        d.pos = base + pos
        if pos < n:
            d.buf = buf if pos == 0 and type(buf) is bytearray else bytearray(buf[pos:])
        else:
            d.buf = b""

    @staticmethod
    def _data_done(d: _Direction, f: SpdyFrame) -> SpdyFrame:
        """``f`` (d.data_frame) is complete."""
        d.data_frame = None
        if f.data is not None:
            f.data = b"".join(d.chunks)
        d.chunks = []
        return f

    @staticmethod
    def _plausible(buf: bytes | bytearray, i: int) -> int | None:
        """Length of a plausible control frame header at i, else None."""
        if len(buf) - i < 8 or buf[i] != 0x80 or buf[i + 1] not in (2, 3) or buf[i + 2] != 0 or not 1 <= buf[i + 3] <= 10:
            return None
        return _U32.unpack_from(buf, i + 4)[0] & 0xFFFFFF

    def _resync(self, buf: bytes | bytearray, start: int) -> int | None:
        i = buf.find(b"\x80", start)
        while i >= 0:
            ln = self._plausible(buf, i)
            if ln is not None:
                j = i + 8 + ln
                if j == len(buf) or self._plausible(buf, j) is not None or (j < len(buf) and not buf[j] & 0x80):
                    if j <= len(buf):
                        return i
            i = buf.find(b"\x80", i + 1)
        return None

    def _inflate(self, d: _Direction, version: int, block: bytes | bytearray, f: SpdyFrame, fl: dict[str, Any]) -> None:
        """Decode ``block`` into ``f``; ``fl`` is ``f.fields``."""
        f.block_wire = len(block)
        inf = d.inflater
        if inf is None:
            inf = d.inflater = HeaderInflater(version, self.header_limit, self.decompress_budget)
        b = self.header_budget
        if b is not None and b.hit:
            # it stays run out (dissectors.budget): no later block will be decoded, so there is
            # no zlib stream to keep in step either
            inf.blocks += 1
            fl["first_block"] = inf.blocks == 1
            f.error = f"header block not decoded: budget {b.name} ran out"
            fl["not_decoded"] = b.name
            return
        raw, err = inf.inflate(block)
        if raw is None:
            f.error = err
            fl["first_block"] = inf.blocks == 1
            if inf.stopped:
                fl["not_decoded"] = inf.stopped
            return
        f.block_raw = len(raw)
        fl["first_block"] = inf.blocks == 1
        if d.strings_bytes > FIELD_STRINGS_BYTES or len(d.strings) >= FIELD_STRINGS_ENTRIES:
            d.strings.clear()
            d.strings_bytes = 0
        pairs, decoded, err = parse_nv_block(raw, version, d.strings)
        d.strings_bytes += len(raw)  # (at most: the pairs it remembered)
        f.block_decoded = decoded
        if b is not None and not b.take(decoded + 32 * len(pairs)):
            f.error = f"header block not decoded: budget {b.name} ran out"
            fl["not_decoded"] = b.name
            return
        f.headers = pairs
        if err:
            f.error = err

    def _control(self, d: _Direction, off: int, version: int, type_: int, flags: int, length: int, buf: bytes | bytearray, p: int) -> SpdyFrame:
        name = CONTROL_NAMES.get(type_) or f"UNKNOWN_0x{type_:04x}"
        fl: dict[str, Any] = {}
        f = SpdyFrame(off, off + 8 + length, version, name, type_, flags, length, None, None, fl)
        if version not in (2, 3):
            f.error = f"unsupported SPDY version {version}"
            return f
        if self.version is None:
            self.version = version
        if d.version is None:
            d.version = version
        end = p + length
        try:
            if type_ == SYN_STREAM:
                if length < 10:
                    raise ValueError("SYN_STREAM shorter than 10 bytes")
                sid, assoc = _2U32.unpack_from(buf, p)
                f.stream_id = sid & 0x7FFFFFFF
                fl["associated_stream_id"] = assoc & 0x7FFFFFFF
                pb = buf[p + 8]
                fl["priority"] = pb >> 6 if version == 2 else pb >> 5
                if version >= 3:
                    fl["slot"] = buf[p + 9]
                fl["unidirectional"] = bool(flags & FLAG_UNIDIRECTIONAL)
                self._inflate(d, version, buf[p + 10 : end], f, fl)
            elif type_ in (SYN_REPLY, HEADERS):
                hl = 6 if version == 2 else 4
                if length < hl:
                    raise ValueError(f"{name} shorter than {hl} bytes")
                f.stream_id = _U32.unpack_from(buf, p)[0] & 0x7FFFFFFF
                self._inflate(d, version, buf[p + hl : end], f, fl)
            elif type_ == RST_STREAM:
                if length < 8:
                    raise ValueError("RST_STREAM shorter than 8 bytes")
                sid, status = _2U32.unpack_from(buf, p)
                f.stream_id = sid & 0x7FFFFFFF
                fl["status"] = status
                fl["status_name"] = RST_STATUS.get(status, f"UNKNOWN_{status}")
            elif type_ == SETTINGS:
                if length < 4:
                    raise ValueError("SETTINGS shorter than 4 bytes")
                (count,) = _U32.unpack_from(buf, p)
                fl["clear_settings"] = bool(flags & FLAG_CLEAR_SETTINGS)
                entries: list[dict[str, Any]] = []
                q = p + 4
                for _ in range(count):
                    if q + 8 > end:
                        f.error = f"SETTINGS announces {count} entries, holds {len(entries)}"
                        break
                    if version == 2:  # SPDY/2 wrote the id little-endian (Chromium's, kept by all)
                        sid_ = buf[q] | buf[q + 1] << 8 | buf[q + 2] << 16
                        sflags = buf[q + 3]
                    else:
                        sflags = buf[q]
                        sid_ = buf[q + 1] << 16 | buf[q + 2] << 8 | buf[q + 3]
                    (value,) = _U32.unpack_from(buf, q + 4)
                    entries.append(
                        {
                            "id": sid_,
                            "name": SETTING_NAMES.get(sid_, f"UNKNOWN_{sid_}"),
                            "flags": sflags,
                            "persist_value": bool(sflags & SETTING_PERSIST_VALUE),
                            "persisted": bool(sflags & SETTING_PERSISTED),
                            "value": value,
                        }
                    )
                    q += 8
                fl["settings"] = entries
            elif type_ == NOOP:
                pass
            elif type_ == PING:
                if length < 4:
                    raise ValueError("PING shorter than 4 bytes")
                fl["ping_id"] = _U32.unpack_from(buf, p)[0]
            elif type_ == GOAWAY:
                if length < 4:
                    raise ValueError("GOAWAY shorter than 4 bytes")
                fl["last_good_stream_id"] = _U32.unpack_from(buf, p)[0] & 0x7FFFFFFF
                if version >= 3 and length >= 8:
                    st = _U32.unpack_from(buf, p + 4)[0]
                    fl["status"] = st
                    fl["status_name"] = GOAWAY_STATUS.get(st, f"UNKNOWN_{st}")
            elif type_ == WINDOW_UPDATE:
                if length < 8:
                    raise ValueError("WINDOW_UPDATE shorter than 8 bytes")
                sid, delta = _2U32.unpack_from(buf, p)
                f.stream_id = sid & 0x7FFFFFFF
                fl["window_size_increment"] = delta & 0x7FFFFFFF
            elif type_ == CREDENTIAL:
                if length < 6:
                    raise ValueError("CREDENTIAL shorter than 6 bytes")
                fl["slot"] = _U16.unpack_from(buf, p)[0]
                (plen,) = _U32.unpack_from(buf, p + 2)
                q = p + 6 + plen
                if q > end:
                    raise ValueError("CREDENTIAL proof longer than the frame")
                fl["proof_length"] = plen
                certs = []
                while q + 4 <= end:
                    (cl,) = _U32.unpack_from(buf, q)
                    if q + 4 + cl > end:
                        f.error = "CREDENTIAL certificate longer than the frame"
                        break
                    certs.append(cl)
                    q += 4 + cl
                fl["certificate_lengths"] = certs
            else:
                fl["skipped"] = length
        except ValueError as e:
            f.error = str(e)
        return f
