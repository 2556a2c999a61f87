"""Content-Encoding: the decoded size of a body, counted without keeping it.

``BodyDecoder(content_encoding, cap)`` is fed the body bytes as they arrive (after
transfer framing: HTTP/1 chunking, HTTP/2 / SPDY / HTTP/3 DATA frames) and counts what the
Content-Encoding chain decodes to: gzip / x-gzip, deflate (zlib, or raw deflate as some
servers send), br (``brotli``), zstd (``zstandard``), identity.  Decompression is streaming
and bounded: every step produces at most ``STEP`` bytes at a time, output is counted and
dropped, and decoding stops once ``cap`` decoded bytes were produced (``capped``), so a
decompression bomb costs at most ``cap`` bytes of work and ``STEP`` bytes of memory.  A body
with no content coding (or only ``identity``) is counted, not decoded, so the cap does not
apply to it: its decoded size is its size on the wire.

A stacked encoding (``Content-Encoding: gzip, br``) is undone right to left.  A body that
does not decode is marked (``error``) with the size decoded so far; an unknown coding gives
``decoded = None``.
"""
from __future__ import annotations

import zlib

import importlib
from functools import lru_cache


@lru_cache(maxsize=None)
def _lib(name: str):
    """brotli / zstandard, imported on the first body that needs them (start-up stays small)."""
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - declared dependencies
        return None

STEP = 64 * 1024  # largest piece of decoded output held at once
DEFAULT_CAP = 64 << 20
SUPPORTED = ("gzip", "x-gzip", "deflate", "br", "zstd", "identity")


class _Stop(Exception):
    pass


class _Zlib:
    def __init__(self, coding: str):
        self.coding = coding
        self.obj = None
        self.head = b""
        self.done = False

    def _new(self, first: bytes):
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
    def __init__(self):
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
    def __init__(self):
        self.sink = _Sink()
        self.w = _lib("zstandard").ZstdDecompressor().stream_writer(self.sink, write_size=STEP, write_return_read=True)

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


def _stage(coding: str):
    if coding in ("gzip", "x-gzip", "deflate"):
        return _Zlib(coding)
    if coding == "br" and _lib("brotli") is not None:
        return _Brotli()
    if coding == "zstd" and _lib("zstandard") is not None:
        return _Zstd()
    return None


class BodyDecoder:
    """Counts the decoded size of one body; see the module docstring."""

    __slots__ = ("encoding", "cap", "stages", "wire", "decoded", "capped", "error", "finished")

    def __init__(self, content_encoding: str | None, cap: int = DEFAULT_CAP):
        self.encoding = content_encoding
        self.cap = cap
        self.wire = 0
        self.decoded = 0
        self.capped = False
        self.error: str | None = None
        self.finished = False
        codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        self.stages = []
        for c in reversed(codings):  # applied left to right, undone right to left
            st = _stage(c)
            if st is None:
                self.error = f"unsupported content-encoding {c!r}"
                self.stages = None
                break
            self.stages.append(st)

    @property
    def result(self) -> int | None:
        """Decoded size (bytes so far if capped or broken), None for an unknown coding."""
        return None if self.stages is None else self.decoded

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self.wire += len(data)
        if self.stages is None or self.capped or (self.error and self.stages):
            return
        if not self.stages:  # no content coding: nothing is decoded, so nothing to bound
            self.decoded += len(data)
            return
        try:
            self._push(0, data, final=False)
        except _Stop:
            pass
        except Exception as e:  # noqa: BLE001 - corrupt input must never stop the analysis
            self.error = f"{self.encoding}: {type(e).__name__}: {e}"

    def finish(self) -> int | None:
        if self.finished:
            return self.result
        self.finished = True
        if self.stages and not self.capped and not self.error and self.wire:
            try:
                for i in range(len(self.stages)):
                    for out in self.stages[i].finish():
                        self._push(i + 1, out, final=False)
            except _Stop:
                pass
            except Exception as e:  # noqa: BLE001
                self.error = f"{self.encoding}: {type(e).__name__}: {e}"
        return self.result

    def _count(self, n: int) -> None:
        self.decoded += n
        if self.decoded > self.cap:
            self.decoded = self.cap
            self.capped = True
            raise _Stop

    def _push(self, i: int, data: bytes, final: bool) -> None:
        if i == len(self.stages):
            self._count(len(data))
            return
        for out in self.stages[i].feed(data):
            self._push(i + 1, out, final)


def decoded_size(content_encoding: str | None, chunks, cap: int = DEFAULT_CAP) -> BodyDecoder:
    """Convenience: run a whole body (an iterable of byte strings) through a decoder."""
    d = BodyDecoder(content_encoding, cap)
    for c in chunks:
        d.feed(c)
    d.finish()
    return d
