"""Content-Encoding: the decoded size of a body, counted without keeping it.

``BodyDecoder(content_encoding, cap, ctx=, conn=)`` is fed the body bytes as they arrive (after
transfer framing: HTTP/1 chunking, HTTP/2 / SPDY / HTTP/3 DATA frames) and counts what the
Content-Encoding chain decodes to: gzip / x-gzip, deflate (zlib, or raw deflate as some
servers send), br (``brotli``), zstd (``zstandard``), identity.  A body with no content
coding (or only ``identity``) is counted, not decoded: its decoded size is its size on the
wire.  A stacked encoding (``Content-Encoding: gzip, br``) is undone right to left; more than
``MAX_CODINGS`` codings are not decoded (``result`` None, ``error`` "not decoded: N codings").
A body that does not decode is marked (``error``) with the size decoded so far; an unknown
coding gives ``result`` None.  No exception of a decoder (constructor or call) escapes.

Bounds, so that hostile bodies cost time and memory linear in the capture:

- output: every step produces at most ``STEP`` bytes (zstd: about 1 MiB), counted and
  dropped; decoding stops once ``cap`` decoded bytes were produced (``capped``);
- work: with ``ctx``/``conn`` given, every stage's output is charged to the budget
  ``decompress_bytes`` (per connection and per capture, ``Context.budget``); once it is
  exhausted, bodies are not decoded (``result`` None, so their wire size counts;
  ``error`` "decoded size unknown: budget decompress_bytes");
- memory: a live decoder reserves what its window can cost (zstd: the frame's window, at
  most ``ZSTD_MAX_WINDOW`` = 8 MiB as RFC 9659 allows, enforced by ``max_window_size``;
  brotli: 2**WBITS from the stream header, up to 16 MiB: the Python ``brotli`` module cannot
  cap its window, so the cap is on how many such decoders live at once; zlib: 64 KiB) from
  the budget ``body_decoder_memory``, given back when the body ends.  A body that finds no
  room holds its compressed bytes (budget ``body_held_bytes``, also given back) and is
  decoded when room frees or at its end, one such body at a time; a body that can do
  neither is not decoded (``result`` None, ``error`` "not decoded: budget ...").
  Live decoder memory is therefore at most ``body_decoder_memory_capture`` plus one decoder.

Notes and errors never repeat a long captured value: ``short`` cuts it to ``SHORT`` chars.
"""
from __future__ import annotations

import zlib

import importlib
from functools import cache


@cache
def _lib(name: str):
    """brotli / zstandard, imported on the first body that needs them (start-up stays small)."""
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - declared dependencies
        return None

STEP = 64 * 1024  # largest piece of decoded output held at once
DEFAULT_CAP = 64 << 20
SUPPORTED = ("gzip", "x-gzip", "deflate", "br", "zstd", "identity")
MAX_CODINGS = 4  # content codings undone per body (RFC 9110 sets no limit; browsers use 1, rarely 2)
ZSTD_MAX_WINDOW = 8 << 20  # RFC 9659 section 3: zstd Content-Encoding windows are at most 8 MB
ZSTD_MIN_RESERVE = 1 << 20  # smallest window a zstd body reserves (max_window_size is set to it)
BROTLI_MAX_WINDOW = 1 << 24  # WBITS 24 (RFC 7932); large-window streams are refused by the module
ZLIB_MEMORY = 64 << 10  # 32 KiB window + inflate state
OVERHEAD = 512 << 10  # decoder state beyond the window (zstd block buffers, brotli tables)
HEADER_BYTES = 18  # enough of a body to read a zstd frame header / brotli stream header
SHORT = 200

BUDGET_WORK = "decompress_bytes"
BUDGET_MEMORY = "body_decoder_memory"
BUDGET_HELD = "body_held_bytes"


def short(value, n: int = SHORT) -> str:
    """``value`` as text of at most about ``n`` characters: a captured header value, an
    exception message, cut with the original size said."""
    s = value if isinstance(value, str) else repr(value)
    if len(s) <= n:
        return s
    return f"{s[:n]}… ({len(s)} bytes)"


class _Stop(Exception):
    pass


class _Zlib:
    credit = 0  # work paid for in advance (see _Brotli)

    def __init__(self, coding: str):
        self.coding = coding
        self.obj: zlib._Decompress | None = None
        self.head = b""
        self.done = False

    def _new(self, first: bytes) -> zlib._Decompress:
        if self.coding in ("gzip", "x-gzip"):
            return zlib.decompressobj(31)
        # deflate: RFC 9110 says zlib format; raw deflate is common in the wild
        if len(first) >= 2 and first[0] & 0x0F == 8 and ((first[0] << 8) | first[1]) % 31 == 0:
            return zlib.decompressobj(15)
        return zlib.decompressobj(-15)

    def feed(self, data: bytes):
        if self.obj is None:
            self.head += data
            if len(self.head) < 2:
                return
            data, self.head = self.head, b""
            self.obj = self._new(data)
        while data:
            if self.done:
                # concatenated gzip members
                if self.coding in ("gzip", "x-gzip") and data[:2] == b"\x1f\x8b":
                    self.obj = zlib.decompressobj(31)
                    self.done = False
                else:
                    return  # trailing garbage is ignored, like browsers do
            out = self.obj.decompress(data, STEP)
            if out:
                yield out
            data = self.obj.unconsumed_tail
            if self.obj.eof:
                self.done = True
                data = self.obj.unused_data
            elif not out and data:
                break  # no progress possible (should not happen)

    def finish(self):
        if self.obj is None and self.head:
            self.obj = self._new(self.head + b"\0")
            data, self.head = self.head, b""
            out = self.obj.decompress(data, STEP)
            if out:
                yield out
        if self.obj is not None and not self.done:
            out = self.obj.flush(STEP)
            if out:
                yield out
            if not self.obj.eof:
                raise ValueError(f"{self.coding} stream truncated")


class _Brotli:
    # One call decodes up to a whole ring buffer (the window) whatever output_buffer_limit
    # says (measured: 46 ms for the first 64 KiB of output of a 16 MiB-window stream), so the
    # window's worth of work is charged when the decoder starts, and output pays it back.
    def __init__(self, window: int = BROTLI_MAX_WINDOW):
        self.credit = window
        self.obj = _lib("brotli").Decompressor()

    def feed(self, data: bytes):
        obj = self.obj
        if obj.is_finished():
            return
        out = obj.process(data, output_buffer_limit=STEP)
        # with a limit, pending output comes from further calls with empty input (the
        # library's can_accept_more_data() does not always say so): drain until empty
        while out:
            yield out
            if obj.is_finished():
                break
            out = obj.process(b"", output_buffer_limit=STEP)

    def finish(self):
        if not self.obj.is_finished():
            raise ValueError("br stream truncated")
        return
        yield  # pragma: no cover


class _Sink:
    """Writer for zstandard's stream_writer: collects one step's output."""

    def __init__(self):
        self.chunks: list[bytes] = []

    def write(self, data):
        self.chunks.append(bytes(data))
        return len(data)


class _Zstd:
    credit = 0

    def __init__(self, window: int = ZSTD_MAX_WINDOW):
        self.sink = _Sink()
        dctx = _lib("zstandard").ZstdDecompressor(max_window_size=window or ZSTD_MAX_WINDOW)
        self.w = dctx.stream_writer(self.sink, write_size=STEP, write_return_read=True)

    # An RLE block is 4 bytes on the wire and up to 128 KiB decoded, so one input byte can
    # become 32 KiB: pieces of PIECE bytes keep each step's output near 1 MiB, and the cap
    # check between pieces stops a bomb before it costs memory.
    PIECE = 32

    def feed(self, data: bytes):
        mv = memoryview(data)
        piece = self.PIECE
        for i in range(0, len(mv), piece):
            self.w.write(mv[i : i + piece])
            if self.sink.chunks:
                chunks, self.sink.chunks = self.sink.chunks, []
                yield from chunks

    def finish(self):
        self.w.flush()
        chunks, self.sink.chunks = self.sink.chunks, []
        yield from chunks


def brotli_window(first: bytes) -> int | None:
    """The window of a brotli stream from its first byte (RFC 7932 section 9.1: WBITS), None
    for a large-window stream or no byte."""
    if not first:
        return None
    b = first[0]
    if not b & 1:
        return 1 << 16
    n = (b >> 1) & 7
    if n:
        return 1 << (17 + n)
    m = (b >> 4) & 7
    if m == 1:
        return None  # large window (RFC 7932 + draft-vandevenne-shared-brotli-format)
    return 1 << (8 + m if m else 17)


def zstd_window(first: bytes) -> int | None:
    """The window a zstd frame needs, from its header (RFC 8878 section 3.1.1.1); None if
    ``first`` does not start with a whole frame header."""
    if len(first) < 6 or first[:4] != b"\x28\xb5\x2f\xfd":
        return None
    fhd = first[4]
    if not fhd & 0x20:  # not single segment: Window_Descriptor
        wd = first[5]
        base = 1 << (10 + (wd >> 3))
        return base + (base >> 3) * (wd & 7)
    n = (1, 2, 4, 8)[fhd >> 6]
    pos = 5 + (0, 1, 2, 4)[fhd & 3]
    if len(first) < pos + n:
        return None
    v = int.from_bytes(first[pos : pos + n], "little")
    return v + 256 if n == 2 else v


def _window(coding: str, first: bytes | None) -> int:
    """The window the decoder of ``coding`` may use: read from the body's first bytes for the
    outermost coding, the largest allowed for inner ones (``first`` None)."""
    if coding == "br":
        w = brotli_window(first) if first is not None else None
        return min(w or BROTLI_MAX_WINDOW, BROTLI_MAX_WINDOW)
    if coding == "zstd":
        w = zstd_window(first) if first is not None else None
        if w is None:
            return ZSTD_MAX_WINDOW
        p = ZSTD_MIN_RESERVE
        while p < w and p < ZSTD_MAX_WINDOW:
            p <<= 1
        return p  # a larger frame is refused by the decoder (max_window_size)
    return 0


def _memory(coding: str, window: int) -> int:
    return ZLIB_MEMORY if coding in ("gzip", "x-gzip", "deflate") else window + OVERHEAD


def _stage(coding: str, window: int = 0):
    if coding in ("gzip", "x-gzip", "deflate"):
        return _Zlib(coding)
    if coding == "br":
        return _Brotli(window)
    if coding == "zstd":
        return _Zstd(window)
    raise ValueError(coding)  # pragma: no cover - checked in BodyDecoder


def _available(coding: str) -> bool:
    if coding in ("gzip", "x-gzip", "deflate"):
        return True
    if coding == "br":
        return _lib("brotli") is not None
    if coding == "zstd":
        return _lib("zstandard") is not None
    return False


def _try_take(b, n: int) -> bool:
    """``b.take(n)`` if ``b`` and its parents have room, else nothing (and, unlike ``take``,
    not marked: room for a decoder may free later).  Walks the chain twice, no recursion:
    this runs for every body and every step of output."""
    x = b
    while x is not None:
        if x.hit or x.used + n > x.cap:
            return False
        x = x.parent
    while b is not None:
        b.used += n
        b = b.parent
    return True


def _give_back(b, n: int) -> None:
    """Return ``n`` units of a reservation to budget ``b`` and its parents."""
    while b is not None:
        b.used -= n
        b = b.parent


class BodyDecoder:
    """Counts the decoded size of one body; see the module docstring."""

    __slots__ = ("encoding", "cap", "codings", "stages", "wire", "decoded", "capped", "error", "finished",
                 "unknown", "work", "memory", "held_budget", "held", "mem_reserved", "held_reserved", "budget")

    def __init__(self, content_encoding: str | None, cap: int = DEFAULT_CAP, ctx=None, conn=None):
        self.encoding = content_encoding
        self.cap = cap
        self.wire = 0
        self.decoded = 0
        self.capped = False
        self.error: str | None = None
        self.finished = False
        self.unknown = False  # decoded size not known (unsupported coding, too many, budget)
        self.budget: str | None = None  # the budget that stopped decoding (said once per connection)
        self.stages: list | None = None  # live decoders (undoing right to left) once started
        # compressed bytes waiting for the decoders (feed's own bytes while _start reads them)
        self.held: bytes | bytearray | None = None
        self.mem_reserved = self.held_reserved = 0
        codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if ctx is not None and codings:
            self.work = ctx.budget(BUDGET_WORK, conn)
            self.memory = ctx.budget(BUDGET_MEMORY, conn)
            self.held_budget = ctx.budget(BUDGET_HELD, conn)
        else:
            self.work = self.memory = self.held_budget = None
        self.codings = codings[::-1]  # applied left to right, undone right to left
        if len(codings) > MAX_CODINGS:
            self._unknown(f"not decoded: {len(codings)} codings (at most {MAX_CODINGS} are undone)")
            return
        for c in self.codings:
            if not _available(c):
                self._unknown(f"unsupported content-encoding {short(c)!r}")
                return
        if self.codings and self.work is not None and self.work.exhausted:
            self.work.take(1)  # counted as refused work
            self.budget = BUDGET_WORK
            self._unknown(f"decoded size unknown: budget {BUDGET_WORK}")

    @property
    def result(self) -> int | None:
        """Decoded size (bytes so far if capped or broken), None when it is not known."""
        return None if self.unknown else self.decoded

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self.wire += len(data)
        if self.unknown or self.capped or self.error is not None:
            return
        if not self.codings:  # no content coding: nothing is decoded, so nothing to bound
            self.decoded += len(data)
            return
        try:
            if self.stages is None and self.held is None and len(data) >= HEADER_BYTES:
                self.held = data  # (read by _start; not copied, not charged)
                started = self._start(force=False)
                self.held = None
                if started:
                    self._push(0, data)
                    return
            if self.stages is None:
                held = self._hold(data)
                if held is None or len(held) < HEADER_BYTES or not self._start(force=False):
                    return
                data = self._unhold()
            self._push(0, data)
        except _Stop:
            self._close()
        except Exception as e:  # noqa: BLE001 - corrupt input must never stop the analysis
            self._fail(e)

    def finish(self) -> int | None:
        if self.finished:
            return self.result
        self.finished = True
        try:
            if not (self.unknown or self.capped or self.error) and self.codings and self.wire:
                if self.stages is None:  # still held: decoded now (one such body at a time)
                    self._start(force=True)
                    self._push(0, self._unhold())
                assert self.stages is not None  # made by _start(force=True) (once per body)
                for i, st in enumerate(self.stages):
                    for out in st.finish():
                        self._paid(st, len(out))
                        self._push(i + 1, out)
        except _Stop:
            pass
        except Exception as e:  # noqa: BLE001
            self._fail(e)
        self._close()
        return self.result

    # -- internals --------------------------------------------------------------------------
    def _unknown(self, why: str) -> None:
        self.unknown = True
        self.error = self.error or why
        self._close()

    def _fail(self, e: Exception) -> None:
        self.error = self.error or f"{short(self.encoding)}: {type(e).__name__}: {short(str(e))}"
        self._close()

    def _hold(self, data: bytes) -> bytes | bytearray | None:
        """Keep compressed bytes until the decoders start: the bytes held, None when there is
        no room (not decoded)."""
        b = self.held_budget
        if b is not None:
            if not _try_take(b, len(data)):
                b.take(len(data))  # refused: the budget is marked hit for the end-of-pass report
                self.budget = BUDGET_HELD
                self._unknown(f"not decoded: budget {BUDGET_MEMORY} and {BUDGET_HELD} (decoders live at once)")
                return None
            self.held_reserved += len(data)
        if self.held is None:
            self.held = bytearray()
        self.held += data
        return self.held

    def _unhold(self) -> bytes:
        data = bytes(self.held or b"")
        self.held = None
        if self.held_reserved:
            _give_back(self.held_budget, self.held_reserved)
            self.held_reserved = 0
        return data

    def _start(self, force: bool) -> bool:
        """Make the decoders once their memory can be reserved (``force``, at the body's end:
        whatever the room, so that at most one decoder lives beyond the budget)."""
        first = bytes(self.held[:HEADER_BYTES]) if self.held else b""
        windows = [_window(c, first if i == 0 else None) for i, c in enumerate(self.codings)]
        mem = self.memory
        if mem is not None:
            need = sum(_memory(c, w) for c, w in zip(self.codings, windows))
            if _try_take(mem, need):
                self.mem_reserved = need
            elif not force:
                return False  # (forced, beyond the budget: freed before finish returns)
        ahead = sum(w for c, w in zip(self.codings, windows) if c == "br")
        if ahead:
            self._charge(ahead)  # a brotli decoder's first call works through a whole window
        self.stages = [_stage(c, w) for c, w in zip(self.codings, windows)]
        return True

    def _close(self) -> None:
        """Free the decoders and the held bytes, and give back what they reserved."""
        if self.stages:
            self.stages = []
        if self.held is not None:
            self._unhold()
        if self.mem_reserved:
            _give_back(self.memory, self.mem_reserved)
            self.mem_reserved = 0

    def _charge(self, n: int) -> None:
        w = self.work
        if w is not None and not _try_take(w, n) and not w.take(n):
            self.unknown = True
            self.budget = BUDGET_WORK
            self.error = self.error or f"decoded size unknown: budget {BUDGET_WORK}"
            raise _Stop

    def _count(self, n: int) -> None:
        self.decoded += n
        if self.decoded > self.cap:
            self.decoded = self.cap
            self.capped = True
            raise _Stop

    def _push(self, i: int, data: bytes) -> None:
        stages = self.stages
        assert stages is not None  # pushes follow _start (one attribute read fewer than before)
        if i == len(stages):
            self._count(len(data))
            return
        st = stages[i]
        for out in st.feed(data):
            self._paid(st, len(out))
            self._push(i + 1, out)

    def _paid(self, st, n: int) -> None:
        """``n`` bytes of output of stage ``st``: charged, less what was paid in advance."""
        c = st.credit
        if c:
            if c >= n:
                st.credit = c - n
                return
            st.credit = 0
            n -= c
        self._charge(n)


def decoded_size(content_encoding: str | None, chunks, cap: int = DEFAULT_CAP, ctx=None, conn=None) -> BodyDecoder:
    """Convenience: run a whole body (an iterable of byte strings) through a decoder."""
    d = BodyDecoder(content_encoding, cap, ctx=ctx, conn=conn)
    for c in chunks:
        d.feed(c)
    d.finish()
    return d
