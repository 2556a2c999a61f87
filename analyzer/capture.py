"""Streaming capture readers: pcap and pcapng, optionally gzip/xz/bzip2/zstd compressed.

Why not dpkt's readers: the pipeline needs, for every packet, the byte offset of its
data in the (decompressed) file so that detail can be re-read on demand, and it needs
pcapng Decryption Secrets Blocks, per-interface timestamp resolution and offsets, and
a truncated tail reported with the packet number where it stopped.  dpkt's readers
give none of these and build one object per packet; the loops below unpack headers
with ``struct`` from large buffered reads, which is several times faster.

A reader is an iterator of ``Record`` tuples:
``(ts, caplen, origlen, linktype, data_offset, data, interface)``.
``ts`` is float epoch seconds (microsecond precision survives at today's epoch).
"""
from __future__ import annotations

import io
import os
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO, NamedTuple
from collections.abc import Callable, Generator, Iterator

from wirefall.dissectors.dataclass_repr import FACTORY, dataclass_repr

if TYPE_CHECKING:
    from wirefall.dissectors.budget import Budget

CHUNK = 1 << 20
UNKNOWN_INTERFACE = 0xFFFFFFFF  # Record.interface of a packet naming an interface no IDB declared


class CaptureError(Exception):
    """The file is not a capture wirefall can read (exit code 2)."""


# (NamedTuple's functional form, here and in analyzer/packet.py: its types are objects, where
# the class form's string annotations (from __future__ import annotations) each cost typing a
# compile() at every start)
Record = NamedTuple("Record", [  # noqa: UP014 (see above)
    ("ts", float),
    ("caplen", int),
    ("origlen", int),
    ("linktype", int),
    ("offset", int),  # offset of the packet data in the decompressed file
    ("data", bytes),
    ("interface", int),
])


_tuple_new = tuple.__new__  # Record without NamedTuple's Python-level __new__ (once per packet)


@dataclass(init=False, eq=False, repr=False)  # (nothing compares two by value: see analyzer.model)
class Interface:
    """A capture interface (pcapng IDB, or pcap's one): link type, snap length, time resolution and offset, name."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    linktype: int
    snaplen: int = 0
    tsresol: float = 1e-6
    tsoffset: int = 0
    name: str = ""
    tsdiv: float = 1e6  # ticks per second: a time is ticks / tsdiv, correctly rounded (ticks * 1e-6 is not: 1 ulp off tshark's)

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, linktype: int, snaplen: int = 0, tsresol: float = 1e-6, tsoffset: int = 0, name: str = "", tsdiv: float = 1e6) -> None:
        self.linktype = linktype
        self.snaplen = snaplen
        self.tsresol = tsresol
        self.tsoffset = tsoffset
        self.name = name
        self.tsdiv = tsdiv


@dataclass(init=False, eq=False, repr=False)
class CaptureInfo:
    """What the reader learns besides packets."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    format: str = ""  # pcap | pcapng
    compression: str = ""  # '', gzip, xz, bzip2, zstd
    interfaces: list[Interface] = field(default_factory=list)
    secrets: list[tuple[int, bytes]] = field(default_factory=list)  # DSB (type, data)
    warnings: list[str] = field(default_factory=list)
    truncated: bool = False
    interface_stats: list[dict] = field(default_factory=list)
    stream_error: str = ""  # the compressed stream is cut short or damaged: why and where
    stream_error_offset: int = -1  # compressed bytes read when the damage was found
    clamped_timestamps: dict[int, int] = field(default_factory=dict)  # interface -> packets whose time was clamped
    _cut: tuple | None = None  # (packet, offset, what) where a broken compressed stream ended the capture
    _unknown_iface: list | None = None  # [packets, first packet, first interface id] naming no declared interface
    _clamped: dict = field(default_factory=dict)  # interface -> [packets, first packet, Interface] with clamped times
    # bytes of secrets-block data the reader may still keep (None: all): the analysis pass sets
    # it to the key-log budget's room + 1, so secrets the key log could never read are not held
    # (1 MB of gzip held 1 GB of zero-filled DSBs) while the budget still sees its excess and says so
    secrets_room: int | None = None

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, format: str = "", compression: str = "", interfaces: list[Interface] = FACTORY, secrets: list[tuple[int, bytes]] = FACTORY,
                 warnings: list[str] = FACTORY, truncated: bool = False, interface_stats: list[dict] = FACTORY, stream_error: str = "",
                 stream_error_offset: int = -1, clamped_timestamps: dict[int, int] = FACTORY, _cut: tuple | None = None,
                 _unknown_iface: list | None = None, _clamped: dict = FACTORY, secrets_room: int | None = None) -> None:
        self.format = format
        self.compression = compression
        self.interfaces = [] if interfaces is FACTORY else interfaces
        self.secrets = [] if secrets is FACTORY else secrets
        self.warnings = [] if warnings is FACTORY else warnings
        self.truncated = truncated
        self.interface_stats = [] if interface_stats is FACTORY else interface_stats
        self.stream_error = stream_error
        self.stream_error_offset = stream_error_offset
        self.clamped_timestamps = {} if clamped_timestamps is FACTORY else clamped_timestamps
        self._cut = _cut
        self._unknown_iface = _unknown_iface
        self._clamped = {} if _clamped is FACTORY else _clamped
        self.secrets_room = secrets_room


MAGIC_GZIP = b"\x1f\x8b"
MAGIC_XZ = b"\xfd7zXZ\x00"
MAGIC_BZ2 = b"BZh"
MAGIC_ZSTD = b"\x28\xb5\x2f\xfd"
# zstd skippable frames (RFC 8878 §3.1.2): magic 0x184D2A50-0x184D2A5F little-endian, a 32-bit
# length, that many bytes of user data; pzstd starts each frame with one, the seekable format
# ends with one.  zstd(1) skips them wherever a frame may start; so does the reader (the
# zstandard decompressor reads one as a frame of no output: its declared length, within the file)
ZSTD_SKIPPABLE = tuple(bytes([0x50 + i]) + b"\x2a\x4d\x18" for i in range(16))

PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
DSB_TLS_KEYLOG = 0x544C534B  # 'TLSK'


def _sniff_compression(head: bytes) -> str:
    if head.startswith(MAGIC_GZIP):
        return "gzip"
    if head.startswith(MAGIC_XZ):
        return "xz"
    if head.startswith(MAGIC_BZ2):
        return "bzip2"
    if head.startswith(MAGIC_ZSTD) or head.startswith(ZSTD_SKIPPABLE):
        return "zstd"
    return ""


def spool_stream(path: str, into: str) -> str | None:
    """A capture (or browser log) given as a pipe — a FIFO, ``/dev/stdin`` fed by a pipe,
    ``<(…)`` — copied into the folder ``into`` (under its own name) so that it can be read by
    offset and more than once, as every reader here does; returns the copy's path, or None
    where ``path`` is a file to read as it is (a regular file, a directory, a missing path).
    Opening a FIFO twice waited for ever for a writer that had gone, and a pipe on stdin
    failed with "not seekable" (tshark reads both; review 26).  A stream that does not begin
    as a capture, a compressed file or a JSON log (``/dev/zero``: endless) is not copied: a
    ``CaptureError`` says so."""
    import stat as _stat

    try:
        st = os.stat(path)
    except OSError:
        return None
    if _stat.S_ISREG(st.st_mode) or _stat.S_ISDIR(st.st_mode):
        return None
    try:
        src = open(path, "rb")
    except OSError as e:
        raise CaptureError(f"{path}: cannot open: {e.strerror or e}") from None
    with src:
        head = src.read(8)
        if not (head[:4] in PCAP_MAGICS or head[:4] == PCAPNG_SHB or _sniff_compression(head) or head.lstrip()[:1] in (b"{", b"[")):
            raise CaptureError(f"{path}: not a capture (pcap, pcapng, optionally compressed) nor a browser log: a stream that "
                               f"begins {head[:8].hex() or 'with nothing'}")
        out = os.path.join(into, os.path.basename(path.rstrip("/")) or "stream")
        with open(out, "wb") as dst:
            dst.write(head)
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    return out


def open_decompressed(path: str, inflate_budget: Callable[[int], Budget] | None = None) -> tuple[BinaryIO, str]:
    """Open ``path`` and undo any compression, chosen by magic bytes, not by name.

    A compressed file comes back as an ``Inflate`` stream: reads never raise, and a stream
    that is cut short or damaged ends there with ``.error`` saying where it broke.
    ``inflate_budget(compressed size)``, if given, is the budget of decompressed bytes the
    stream may deliver (``Inflate.budget``)."""
    try:
        raw = open(path, "rb")
    except OSError as e:
        raise CaptureError(f"{path}: cannot open: {e.strerror or e}") from None
    head = raw.read(8)
    raw.seek(0)
    comp = _sniff_compression(head)
    if comp:
        inf = Inflate(raw, comp)
        if inflate_budget is not None:
            inf.budget = inflate_budget(inf.size)
        return inf, comp  # type: ignore[return-value]
    return raw, ""


IN_CHUNK = 16 << 10  # compressed bytes given to a decompressor at a time
ZSTD_IN_CHUNK = 1 << 10  # zstandard's decompressobj has no output bound: 1 KiB of input makes at most 32 MiB
FINE_STEP = 8  # input and output per call when the bytes just before a damage are recovered
_MAGIC = {"gzip": (MAGIC_GZIP,), "xz": (MAGIC_XZ,), "bzip2": (MAGIC_BZ2,), "zstd": (MAGIC_ZSTD, *ZSTD_SKIPPABLE)}


class Inflate:
    """Streaming decompression (gzip, xz, bzip2, zstd) with bounded output per read.

    Why not ``gzip.GzipFile`` & co: they raise at the point where a stream is cut short or
    damaged, and the buffered reader above them drops everything decompressed in that read
    (up to 4 MiB of packets before the damage); zstandard's stream reader ends a cut-short
    frame silently.  Here each library's incremental decompressor is fed ``IN_CHUNK`` bytes
    at a time with an output bound, so the bytes before the damage are delivered, and the
    damage is reported once, as data (``error``, ``error_offset``: compressed bytes read
    when it was found, ``error_out``: decompressed bytes before it).  A decompressor that
    raises loses the output of that call, so on damage the stream is decompressed once more
    from its start up to that point, then ``FINE_STEP`` bytes at a time: what comes before
    the damage matches what ``gzip -dc`` (xz, zstd) writes out, and more for bzip2, whose
    tool drops a whole block whose checksum failed.
    Concatenated streams (``cat a.gz b.gz``) are read as one; null padding after a gzip or
    xz stream is skipped, and zstd skippable frames (``ZSTD_SKIPPABLE``: before, between and
    after frames, as pzstd and the seekable format write them) are read as frames of no
    output: their declared length, the file cut short if it ends inside one; other bytes
    after the last stream end reading with ``trailing``.
    ``budget`` (a ``dissectors.budget.Budget`` of decompressed bytes, the analysis pass's
    ``inflated_bytes``): delivering more ends the stream there, with ``stopped`` saying so.
    """

    def __init__(self, raw: BinaryIO, comp: str):
        self.raw = raw
        self.comp = comp
        try:
            self.size = os.fstat(raw.fileno()).st_size
        except (OSError, AttributeError, io.UnsupportedOperation):
            self.size = 0
        self.fed = 0  # compressed bytes read from the file
        self.out = 0  # decompressed bytes delivered by read()
        self.produced = 0  # decompressed bytes made (delivered, or waiting in _buf)
        self.error: str | None = None  # the stream is cut short or damaged (why and where)
        self.error_offset = 0
        self.error_out = 0
        self.trailing: str | None = None  # bytes after the end of the last stream (ignored)
        self.budget: Budget | None = None  # decompressed bytes read() may deliver
        self.stopped: str | None = None  # why reading stopped before the end (the budget ran out)
        self._pending = b""  # compressed bytes read but not yet given to the decompressor
        self._last = (0, 0)  # compressed range last given to the decompressor
        self._buf = b""  # decompressed bytes not yet delivered (zstd makes more than asked)
        self._done = False
        self._redone = False
        self._stream = (0, 0)  # (compressed offset, decompressed offset) where the current stream began
        self._errors: tuple = (EOFError, OSError, ValueError)
        self._head = b""  # zstd: the first bytes of the current frame (a skippable frame's magic?)
        self._d = self._new()

    def _new(self):
        c = self.comp
        if c == "gzip":
            import zlib

            self._errors = (EOFError, OSError, ValueError, zlib.error)
            return zlib.decompressobj(31)
        if c == "xz":
            import lzma

            self._errors = (EOFError, OSError, ValueError, lzma.LZMAError)
            return lzma.LZMADecompressor()
        if c == "bzip2":
            import bz2

            return bz2.BZ2Decompressor()
        import zstandard

        self._errors = (EOFError, OSError, ValueError, zstandard.ZstdError)
        self._head = b""
        return zstandard.ZstdDecompressor().decompressobj()

    def _input(self, n: int) -> bytes:
        if self._pending:
            data, self._pending = self._pending[:n], self._pending[n:]
        else:
            try:
                data = self.raw.read(n)
            except OSError as e:
                self._fail(f"cannot read the file: {e.strerror or e}")
                return b""
            self.fed += len(data)
        if data:
            end = self.fed - len(self._pending)
            self._last = (end - len(data), end)
        return data

    def _fail(self, why: str) -> None:
        self._done = True
        if self.error is None:
            self.error = why
            self.error_offset = self._last[1] if self._last[1] else self.fed
            self.error_out = self.produced  # every byte before the damage, delivered or not yet

    def _after_end(self, rest: bytes) -> None:
        """One stream ended: start the next one, if the file goes on with one (zstd: a frame or
        a skippable frame, which the next decompressor skips)."""
        magics = _MAGIC[self.comp]
        need = len(magics[0])
        while True:
            if self.comp in ("gzip", "xz"):
                rest = rest.lstrip(b"\0")  # padding, as gzip(1) and xz(1) accept it
            if len(rest) >= need or (rest and not any(m.startswith(rest) for m in magics)):
                break
            try:
                more = self.raw.read(IN_CHUNK)
            except OSError:
                more = b""
            self.fed += len(more)
            if not more:
                if rest:
                    break
                self._done = True  # clean end of the last stream
                return
            rest += more
        at = self.fed - len(rest)
        if rest.startswith(magics):
            self._d = self._new()
            self._pending = rest
            self._stream = (at, self.produced)
            return
        self._done = True
        self.trailing = (f"{self.size - at if self.size else len(rest)} bytes after the end of the {self.comp} stream "
                         f"(compressed byte {at}) are not {self.comp} data; ignored")

    def _cut_short(self, what: str) -> str:
        return f"the file is cut short: it ends (compressed byte {self.fed}) inside the {what}, before the stream's end"

    def _step(self, room: int, step: int = IN_CHUNK) -> bytes:
        """One decompressor call: at most ``room`` bytes out (zstd: from ``step`` bytes in)."""
        d = self._d
        if self.comp == "zstd":
            data = self._input(min(step, ZSTD_IN_CHUNK))
            if not data:
                self._fail(self._cut_short("zstd skippable frame" if self._head.startswith(ZSTD_SKIPPABLE) else "zstd frame"))
                return b""
            if len(self._head) < 4:
                self._head += data[: 4 - len(self._head)]
            out = d.decompress(data)
        elif self.comp == "gzip":
            data = self._input(step)
            if not data:
                self._fail(self._cut_short("gzip stream"))
                return b""
            out = d.decompress(data, room)
            if not d.eof:  # at the end, unused_data holds what unconsumed_tail may hold too
                self._pending = d.unconsumed_tail + self._pending
        else:
            if d.needs_input:
                data = self._input(step)
                if not data:
                    self._fail(self._cut_short(f"{self.comp} stream"))
                    return b""
            else:
                data = b""
            out = d.decompress(data, room)
        self.produced += len(out)
        if d.eof:
            rest, self._pending = d.unused_data + self._pending, b""
            self._after_end(rest)
        return out

    def _damaged(self, e: Exception) -> None:
        lo, hi = self._last
        self._fail(f"the {self.comp} stream is damaged in compressed bytes {lo}-{hi} ({str(e) or e.__class__.__name__})")

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` decompressed bytes (fewer only at the end); never raises."""
        if n is None or n < 0:
            n = 1 << 62
        parts = []
        have = 0
        while have < n:
            if self._buf:
                chunk, self._buf = self._buf[: n - have], self._buf[n - have :]
            elif self._done:
                break
            else:
                try:
                    chunk = self._step(min(n - have, 4 * CHUNK))
                except self._errors as e:
                    self._recover(e)
                    continue
                if len(chunk) > n - have:
                    chunk, self._buf = chunk[: n - have], chunk[n - have :]
            if self.budget is not None and chunk:
                chunk = self._charge(chunk, have)
            parts.append(chunk)
            have += len(chunk)
        self.out += have
        return b"".join(parts)

    def _charge(self, chunk: bytes, have: int) -> bytes:
        """Charge delivered bytes to ``budget``; past it, the stream ends here (``stopped``)."""
        b = self.budget
        assert b is not None
        room = b.room()
        if len(chunk) <= room:
            b.take(len(chunk))
            return chunk
        b.charge(room)
        b.take(len(chunk) - room)  # refused: marks the budget (and the capture's completeness) hit
        self._buf = b""
        self._done = True
        self.stopped = (f"stopped reading after {self.out + have + room} decompressed bytes (compressed byte {self._last[1]} "
                        f"of {self.size}): budget {b.name} ({b.cap} bytes for this file) ran out, the rest was not read "
                        f"(a decompression bomb? raise it with --limit {b.name}=N)")
        return chunk[:room]

    def _recover(self, e: Exception) -> None:
        if self._redone:
            self._damaged(e)
            return
        self._redone = True
        pending = self._buf
        self._buf = b""
        keep: list[bytes] = []
        try:
            self._redo_into(keep)
        except self._errors as e2:
            self._damaged(e2)
        else:
            if not self._done:
                self._damaged(e)
        self._buf = pending + b"".join(keep)

    def _redo_into(self, keep: list[bytes]) -> None:
        """The last call raised, losing its output: decompress the current stream again up to
        where that call began, then FINE_STEP bytes at a time up to the damage (into ``keep``)."""
        target = self.produced
        start, out0 = self._stream
        try:
            self.raw.seek(start)
        except (OSError, AttributeError, io.UnsupportedOperation):
            return
        self.fed, self._pending, self.produced, self._d = start, b"", out0, self._new()
        got = out0
        while got < target and not self._done:  # as before, never past the point reached then
            chunk = self._step(min(4 * CHUNK, target - got))
            if got + len(chunk) > target:  # zstd makes what it makes
                keep.append(chunk[target - got :])
            got += len(chunk)
        # gzip: one input byte a step, so that a damaged trailer (CRC, length) fails a call
        # that reads only trailer bytes and no decompressed byte is lost (gzip -dc writes them)
        step = 1 if self.comp == "gzip" else FINE_STEP
        while not self._done:
            chunk = self._step(FINE_STEP, step)
            if chunk:
                keep.append(chunk)

    def tell(self) -> int:
        return self.out

    def close(self) -> None:
        self.raw.close()


class _Buf:
    """A forward-only buffered reader over a stream, tracking the absolute offset.

    The bytes are read into one reused ``bytearray`` (``buf``; ``n`` of them valid, from
    ``pos`` on unread) through a ``memoryview`` (``mv``) with ``readinto``: the file's bytes
    are copied once by the kernel, then once more into each packet's ``bytes`` (the readers'
    ``bytes(b.mv[a:b])``), not joined into a new buffer per read and sliced again.  The
    buffer is never resized (a bigger one replaces it, for a record longer than it), so the
    views the readers hold never meet a ``BufferError``; every slice the readers take lies
    below ``n`` (each behind a ``need``), and ``view()`` is the valid bytes only, for the
    general paths whose unpacks must fail past the data as they do on ``bytes``."""

    __slots__ = ("f", "buf", "mv", "n", "pos", "base", "eof", "error", "_into")

    def __init__(self, f: BinaryIO, initial: bytes = b""):
        self.f = f
        self.buf = bytearray(max(CHUNK, len(initial)))
        self.mv = memoryview(self.buf)
        self.n = len(initial)  # valid bytes in buf
        self.mv[: self.n] = initial
        self.pos = 0
        self.base = 0  # absolute offset of buf[0]
        self.eof = False
        self.error: str | None = None  # why the file ended early (a broken compressed stream, an I/O error)
        self._into = getattr(f, "readinto", None)  # (Inflate and a live capture's FollowFile have only read)

    def view(self) -> memoryview:
        """The valid bytes of the buffer (offsets as in ``buf``)."""
        return self.mv[: self.n]

    def need(self, n: int) -> bool:
        """Make sure n bytes are available at pos; False at end of file."""
        have = self.n - self.pos
        if have >= n:
            return True
        if self.eof:
            return False
        mv = self.mv
        cap = len(mv)
        # the unread rest to the front (at most one record: a few KiB, not the buffer)
        if self.pos:
            mv[:have] = mv[self.pos : self.n]
            self.base += self.pos
            self.pos = 0
            self.n = have
        while have < n:
            if have == cap:
                # a record longer than the buffer: a bigger one, at most twice what was read
                # (a damaged length field claiming 64 MiB must not allocate 64 MiB before the
                # end of a small file is found)
                cap = min(2 * cap, max(n, cap))
                buf = bytearray(cap)
                new = memoryview(buf)
                new[:have] = mv[:have]
                self.buf, self.mv, mv = buf, new, new
            try:
                if self._into is not None:
                    got = self._into(mv[have:cap])
                else:
                    chunk = self.f.read(cap - have)
                    got = len(chunk)
                    mv[have : have + got] = chunk
            except OSError as e:  # an I/O error on a plain file (Inflate never raises)
                got = 0
                self.error = f"cannot read the file: {e.strerror or e}"
            if not got:
                self.eof = True
                self.error = self.error or getattr(self.f, "error", None)
                break
            have += got
            self.n = have
        return have >= n


def read_capture(path: str, info: CaptureInfo | None = None, opener=None,
                 inflate_budget: Callable[[int], Budget] | None = None) -> Generator[Record, None, None]:
    """Yield every packet of the capture at ``path`` in file order.

    Raises CaptureError at once if the file is not a pcap/pcapng capture.  A truncated
    file (or a compressed one whose stream is cut short or damaged) ends the iteration
    early with ``info.truncated`` set and one warning saying where.  ``opener(path)``, if
    given, opens the file instead (a live capture's growing file: ``analyzer.live.FollowFile``,
    uncompressed, whose reads wait for more bytes until the capture stops).
    ``inflate_budget(compressed size)``: the budget of decompressed bytes a compressed
    capture is read to (``open_decompressed``); past it the capture ends there, marked as cut.
    """
    batches = read_batches(path, info, opener, inflate_budget)
    try:
        for batch in batches:
            yield from batch
    finally:
        batches.close()


BATCH = 1024  # records per list read_batches yields, at most


def read_batches(path: str, info: CaptureInfo | None = None, opener=None,
                 inflate_budget: Callable[[int], Budget] | None = None) -> Generator[list[Record], None, None]:
    """``read_capture``'s packets as lists of consecutive records (those the reader's buffer
    holds whole, at most ``BATCH``): the analysis pass iterates them through
    ``itertools.chain.from_iterable``, in C, instead of resuming two generators per packet.
    A list is made only when the previous one was consumed, so whatever the reader learns
    between packets (a pcapng secrets block, the end of the file) comes when it did."""
    if info is None:
        info = CaptureInfo()
    if opener is not None:
        f, comp = opener(path), ""
    else:
        f, comp = open_decompressed(path, inflate_budget)
    info.compression = comp
    try:
        try:
            head = f.read(4)
        except OSError as e:
            raise CaptureError(f"{path}: cannot read: {e.strerror or e}") from None
        err = getattr(f, "error", None)
        if len(head) < 4 and err:
            raise CaptureError(f"{path}: cannot read ({comp}): {err}, before the capture's first 4 bytes")
        if err and head not in PCAP_MAGICS and head != PCAPNG_SHB:  # (a damaged bzip2 block: garbage from its start)
            raise CaptureError(f"{path}: cannot read ({comp}): {err}; what it decompressed to does not start as a "
                               f"capture (found {head.hex()})")
        if head in PCAP_MAGICS:
            info.format = "pcap"
            yield from _read_pcap(f, head, info, path)
        elif head == PCAPNG_SHB:
            info.format = "pcapng"
            yield from _read_pcapng(f, head, info, path)
        else:
            what = f"{comp}-compressed data" if comp else "data"
            raise CaptureError(
                f"{path}: not a capture file: expected pcap or pcapng (optionally gzip, xz, bzip2 or zstd compressed), found {what} starting {head.hex() or 'empty'}"
            )
    finally:
        f.close()
        _summarise(info, path, f)


def _summarise(info: CaptureInfo, path: str, f) -> None:
    """The warnings a reader counts rather than repeats: once per capture (or interface)."""
    err = getattr(f, "error", None)
    if err:
        info.truncated = True
        info.stream_error = err
        info.stream_error_offset = f.error_offset
        number, offset, what = info._cut or (None, f.error_out, "")
        where = ""
        if number is not None:
            where = f"; the capture ends inside packet {number} (decompressed offset {offset}: {what}), {number - 1} complete packets read"
        info.warnings.append(f"{path}: {err}, after {f.error_out} decompressed bytes{where}")
    elif getattr(f, "stopped", None):
        info.truncated = True
        number, offset, what = info._cut or (None, f.out, "")
        where = ""
        if number is not None:
            where = f"; the capture ends inside packet {number} (decompressed offset {offset}: {what}), {number - 1} complete packets read"
        info.warnings.append(f"{path}: {f.stopped}{where}")
    elif getattr(f, "trailing", None):
        info.warnings.append(f"{path}: {f.trailing}")
    info._cut = None
    if info._unknown_iface:
        n, first, iid = info._unknown_iface
        info.warnings.append(f"{n} packets name an interface no Interface Description Block declared (the first: "
                             f"packet {first}, unknown interface {iid}); their link type is unknown")
        info._unknown_iface = None
    for iid, (n, first, itf) in sorted(info._clamped.items(), key=lambda kv: kv[0]):
        info.clamped_timestamps[iid] = info.clamped_timestamps.get(iid, 0) + n
        info.warnings.append(f"interface {iid}: {n} packet timestamps (the first: packet {first}) are outside the years "
                             f"1-9999 (if_tsresol {itf.tsresol:g} s, if_tsoffset {itf.tsoffset} s); clamped to the nearest representable time")
    info._clamped = {}


def _truncated(info: CaptureInfo, path: str, number: int, offset: int, what: str, b: _Buf) -> None:
    info.truncated = True
    if getattr(b.f, "error", None) or getattr(b.f, "stopped", None):  # a broken or stopped compressed stream: one warning for both, from _summarise
        info._cut = (number, offset, what)
        return
    why = f" ({b.error})" if b.error else ""
    info.warnings.append(f"{path}: capture truncated in packet {number} at file offset {offset}: {what}{why}; {number - 1} complete packets read")


def _ended(info: CaptureInfo, path: str, b: _Buf, number: int) -> None:
    """The file ended at a record boundary; a broken stream or an I/O error still says so."""
    if getattr(b.f, "error", None) or getattr(b.f, "stopped", None):
        info._cut = (number + 1, b.base + b.pos, "nothing of it read")
    elif b.error:
        info.truncated = True
        info.warnings.append(f"{path}: {b.error} at file offset {b.base + b.pos}; {number} complete packets read")


# Timestamps a datetime can show (years 1-9999, a day's margin for time zones): pcapng's
# 64-bit timestamps with any if_tsresol and if_tsoffset can go far beyond them
TS_MIN = -62135596800.0 + 86400
TS_MAX = 253402300799.0 - 86400


def _clamp_ts(info: CaptureInfo, ts: float, iid: int, itf: Interface, number: int) -> float:
    c = info._clamped.get(iid)
    if c is None:
        info._clamped[iid] = [1, number, itf]
    else:
        c[0] += 1
    return TS_MIN if ts < TS_MIN else TS_MAX


def _read_pcap(f: BinaryIO, magic: bytes, info: CaptureInfo, path: str) -> Iterator[list[Record]]:
    endian, resol = PCAP_MAGICS[magic]
    b = _Buf(f, magic)
    if not b.need(24):
        raise CaptureError(f"{path}: pcap global header truncated")
    _, vmaj, vmin, _, _, snaplen, network = struct.unpack_from(endian + "IHHiIII", b.buf, 0)
    linktype = network & 0x0FFFFFFF
    info.interfaces.append(Interface(linktype, snaplen, resol, tsdiv=1e6 if resol == 1e-6 else 1e9))
    b.pos = 24
    hdr = struct.Struct(endian + "IIII")
    unpack = hdr.unpack_from
    number = 0
    new = _tuple_new
    while True:
        # every record wholly in the buffer, without a need() call each (the common case)
        buf, mv, pos, base, n = b.buf, b.mv, b.pos, b.base, b.n
        batch: list[Record] = []
        add = batch.append
        last = number + BATCH
        while pos + 16 <= n and number < last:
            sec, frac, caplen, origlen = unpack(buf, pos)
            end = pos + 16 + caplen
            if end > n or caplen > 0x4000000:
                break
            number += 1
            add(new(Record, (sec + frac * resol, caplen, origlen, linktype, base + pos + 16, bytes(mv[pos + 16 : end]), 0)))
            pos = end
        b.pos = pos
        if batch:
            yield batch
            if number == last:  # (full: the buffer may hold more)
                continue
        if not b.need(16):
            if b.n - b.pos:
                _truncated(info, path, number + 1, b.base + b.pos, "record header incomplete", b)
            else:
                _ended(info, path, b, number)
            return
        sec, frac, caplen, origlen = unpack(b.buf, b.pos)
        number += 1
        if caplen > 0x4000000:  # 64 MiB: garbage, not a packet
            info.warnings.append(f"{path}: packet {number} at file offset {b.base + b.pos}: implausible captured length {caplen}; stopped reading")
            info.truncated = True
            return
        if not b.need(16 + caplen):
            _truncated(info, path, number, b.base + b.pos, f"{caplen} bytes of data expected", b)
            return
        start = b.pos + 16
        data = bytes(b.mv[start : start + caplen])
        b.pos = start + caplen
        yield [_tuple_new(Record, (sec + frac * resol, caplen, origlen, linktype, b.base + start, data, 0))]


def _parse_options(buf: bytes | bytearray | memoryview, pos: int, end: int, endian: str) -> Iterator[tuple[int, bytes]]:
    while pos + 4 <= end:
        code, length = struct.unpack_from(endian + "HH", buf, pos)
        pos += 4
        if code == 0:
            return
        yield code, bytes(buf[pos : pos + length])
        pos += (length + 3) & ~3


def pcapng_interface(buf, p: int, blen: int, endian: str, options=_parse_options) -> Interface:
    """The Interface Description Block at ``p`` (``blen`` bytes, at least its fixed 20):
    link type, snap length, if_tsresol, if_tsoffset, if_name.  ``options``: how its options
    are walked (demux's declines a capture whose option overruns its block)."""
    linktype, _, snaplen = struct.unpack_from(endian + "HHI", buf, p + 8)
    itf = Interface(linktype, snaplen)
    for code, val in options(buf, p + 16, p + blen - 4, endian):
        if code == 9 and val:
            r = val[0]
            itf.tsresol = 2.0 ** -(r & 0x7F) if r & 0x80 else 10.0 ** -r
            itf.tsdiv = 2.0 ** (r & 0x7F) if r & 0x80 else 10.0 ** r
        elif code == 14 and len(val) >= 8:
            (itf.tsoffset,) = struct.unpack_from(endian + "q", val, 0)
        elif code == 2:
            itf.name = val.decode("utf-8", "replace")
    return itf


def pcapng_stats(buf, p: int, blen: int, endian: str, options=_parse_options) -> dict:
    """The Interface Statistics Block at ``p``: its interface and isb_ifrecv / isb_ifdrop."""
    (iid,) = struct.unpack_from(endian + "I", buf, p + 8)
    st: dict = {"interface": iid}
    for code, val in options(buf, p + 20, p + blen - 4, endian):
        if code in (4, 5) and len(val) >= 8:
            st["received" if code == 4 else "dropped"] = struct.unpack_from(endian + "Q", val)[0]
    return st


# the least length of each pcapng block type that has fixed fields (header and trailer
# included): EPB, SPB, obsolete PB, IDB, DSB, ISB, SHB
PCAPNG_FIXED = {6: 32, 3: 16, 2: 32, 1: 20, 0x0A: 20, 5: 24, 0x0A0D0D0A: 28}


def _pcapng_iface(info: CaptureInfo, ifaces: list[Interface], first: int, iid: int, number: int) -> tuple[Interface, int]:
    """The interface a packet block's section-local ``iid`` names, and its file-wide number
    (``Record.interface``); one no IDB of its section declared: ``UNKNOWN_INTERFACE``, counted."""
    if iid < len(ifaces):
        return ifaces[iid], first + iid
    if info._unknown_iface is None:
        info._unknown_iface = [0, number, iid]
    info._unknown_iface[0] += 1
    return Interface(-1), UNKNOWN_INTERFACE


def _read_pcapng(f: BinaryIO, magic: bytes, info: CaptureInfo, path: str) -> Iterator[list[Record]]:
    b = _Buf(f, magic)
    endian = "<"
    ifaces: list[Interface] = []  # this section's interfaces, by their section-local id
    first = 0  # the file-wide number (``info.interfaces``, ``Record.interface``) of this section's interface 0
    number = 0
    epb = {"<": struct.Struct("<7I").unpack_from, ">": struct.Struct(">7I").unpack_from}
    buf: bytearray | memoryview  # (the fast loop's buffer; the general path's view of its valid bytes)
    new = _tuple_new
    ts_lo, ts_hi = TS_MIN, TS_MAX
    short = 0  # blocks shorter than their fixed fields (skipped)
    while True:
        # Enhanced Packet Blocks wholly in the buffer, without a need() call each (the
        # common case); anything else, or anything odd, takes the general path below
        if ifaces:
            unpack = epb[endian]
            buf, mv, pos, base, n = b.buf, b.mv, b.pos, b.base, b.n
            nif = len(ifaces)
            batch: list[Record] = []
            add = batch.append
            last = number + BATCH
            while pos + 28 <= n and number < last:
                btype_i, blen, iid, tshi, tslo, caplen, origlen = unpack(buf, pos)
                if btype_i != 6 or blen < 32 or blen & 3 or blen > 0x4000000 or pos + blen > n or iid >= nif:
                    break
                itf = ifaces[iid]
                ts = ((tshi << 32) | tslo) / itf.tsdiv + itf.tsoffset
                if not ts_lo <= ts <= ts_hi:
                    break  # the general path clamps it and counts it
                number += 1
                if caplen > blen - 32:
                    caplen = blen - 32
                add(new(Record, (ts, caplen, origlen, itf.linktype, base + pos + 28, bytes(mv[pos + 28 : pos + 28 + caplen]), first + iid)))
                pos += blen
            b.pos = pos
            if batch:
                yield batch
                if number == last:  # (full: the buffer may hold more)
                    continue
        if not b.need(12):
            if b.base + b.pos == 0:  # (as a pcap whose global header is cut short, and as tshark: not a capture)
                raise CaptureError(f"{path}: pcapng section header truncated ({b.n} bytes)")
            if b.n - b.pos:
                _truncated(info, path, number + 1, b.base + b.pos, "block header incomplete", b)
            else:
                _ended(info, path, b, number)
            return
        p = b.pos
        buf = b.view()  # (the general path: unpacks past the valid bytes fail, as on bytes)
        btype = buf[p : p + 4]
        if btype == PCAPNG_SHB:
            bom = buf[p + 8 : p + 12]
            if bom == b"\x4d\x3c\x2b\x1a":
                endian = "<"
            elif bom == b"\x1a\x2b\x3c\x4d":
                endian = ">"
            elif b.base + p == 0:
                raise CaptureError(f"{path}: pcapng section header at offset 0 has a bad byte-order magic")
            else:  # a later section: as other damage after the start, what came before is kept
                info.truncated = True
                info.warnings.append(f"{path}: pcapng section header at file offset {b.base + p} has a bad byte-order magic "
                                     f"({bytes(bom).hex()}) after packet {number}; stopped reading")
                return
            # interfaces are per section: a later section's interface ids count from 0 again, and
            # its interfaces follow the earlier sections' in info.interfaces (as capinfos numbers
            # them): Record.interface is that file-wide number, so every interface id a record
            # carries names its own interface (link type, resolution, offset) in info.interfaces
            ifaces = []
            first = len(info.interfaces)
        btype_i, blen = struct.unpack_from(endian + "II", buf, p)
        if blen < 12 or blen % 4 or blen > 0x4000000:
            if number == 0 and btype_i != 0x0A0D0D0A and not info.interfaces:
                raise CaptureError(f"{path}: corrupt pcapng block at offset {b.base + p}")
            info.truncated = True
            info.warnings.append(f"{path}: corrupt pcapng block (type {btype_i:#x}, length {blen}) at file offset {b.base + p} after packet {number}; stopped reading")
            return
        at = b.base + p  # (before need(), which may move the buffer: base grows by p, p becomes 0)
        if not b.need(blen):
            if at == 0:
                raise CaptureError(f"{path}: pcapng section header truncated ({b.n} of its {blen} bytes)")
            _truncated(info, path, number + 1, at, f"block of {blen} bytes incomplete", b)
            return
        p = b.pos
        buf = b.view()
        need = PCAPNG_FIXED.get(btype_i)
        if need is not None and blen < need:  # shorter than its own fixed fields: skipped, said
            short += 1
            if short <= 3:
                info.warnings.append(f"{path}: pcapng block of type {btype_i:#x} at file offset {b.base + p} is {blen} bytes, "
                                     f"shorter than its fixed fields ({need}); skipped")
            elif short == 4:
                info.warnings.append(f"{path}: more pcapng blocks shorter than their fixed fields skipped (not listed)")
            b.pos = p + blen
            continue
        if btype_i == 6:  # Enhanced Packet Block
            iid, tshi, tslo, caplen, origlen = struct.unpack_from(endian + "IIIII", buf, p + 8)
            number += 1
            itf, iid = _pcapng_iface(info, ifaces, first, iid, number)
            caplen = max(0, min(caplen, blen - 32))  # a block shorter than its header: no data
            start = p + 28
            ts = ((tshi << 32) | tslo) / itf.tsdiv + itf.tsoffset
            if not TS_MIN <= ts <= TS_MAX:
                ts = _clamp_ts(info, ts, iid, itf, number)
            yield [_tuple_new(Record, (ts, caplen, origlen, itf.linktype, b.base + start, bytes(buf[start : start + caplen]), iid))]
        elif btype_i == 3:  # Simple Packet Block: interface 0, no timestamp
            (origlen,) = struct.unpack_from(endian + "I", buf, p + 8)
            number += 1
            itf, iid = _pcapng_iface(info, ifaces, first, 0, number)
            caplen = max(0, min(origlen, blen - 16, itf.snaplen or origlen))
            start = p + 12
            yield [_tuple_new(Record, (0.0, caplen, origlen, itf.linktype, b.base + start, bytes(buf[start : start + caplen]), iid))]
        elif btype_i == 2:  # obsolete Packet Block
            iid, _drops, tshi, tslo, caplen, origlen = struct.unpack_from(endian + "HHIIII", buf, p + 8)
            number += 1
            itf, iid = _pcapng_iface(info, ifaces, first, iid, number)
            caplen = max(0, min(caplen, blen - 32))
            start = p + 28
            ts = ((tshi << 32) | tslo) / itf.tsdiv + itf.tsoffset
            if not TS_MIN <= ts <= TS_MAX:
                ts = _clamp_ts(info, ts, iid, itf, number)
            yield [_tuple_new(Record, (ts, caplen, origlen, itf.linktype, b.base + start, bytes(buf[start : start + caplen]), iid))]
        elif btype_i == 1:  # Interface Description Block
            itf = pcapng_interface(buf, p, blen, endian)
            ifaces.append(itf)
            info.interfaces.append(itf)
        elif btype_i == 0x0A:  # Decryption Secrets Block
            stype, slen = struct.unpack_from(endian + "II", buf, p + 8)
            n = max(0, min(slen, blen - 20))
            room = info.secrets_room
            if room is not None:
                n = min(n, room)
                info.secrets_room = room - n
            info.secrets.append((stype, bytes(buf[p + 16 : p + 16 + n])))
        elif btype_i == 5:  # Interface Statistics Block
            st = pcapng_stats(buf, p, blen, endian)
            st["interface"] += first  # (file-wide, as Record.interface)
            info.interface_stats.append(st)
        # other blocks (NRB, custom, SHB body) are skipped by length
        b.pos = p + blen


SPOOL_LIMIT = 4 << 30  # default temporary-disk budget for one compressed capture's random access
SPOOL_ENV = "WIREFALL_SPOOL_LIMIT"  # overrides it: bytes, or a number with K, M or G


def default_spool_limit() -> int:
    """The temporary-disk budget for a compressed capture: ``$WIREFALL_SPOOL_LIMIT`` or 4 GiB."""
    v = os.environ.get(SPOOL_ENV, "").strip().upper().removesuffix("B").removesuffix("I")
    if not v:
        return SPOOL_LIMIT
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(v[-1], 1)
    try:
        n = float(v[:-1] if mult > 1 else v) * mult
    except ValueError:
        return SPOOL_LIMIT
    return int(n) if n >= 0 else SPOOL_LIMIT


class SpoolLimitError(CaptureError, OSError):
    """A compressed capture's packet lies beyond what may be decompressed to temporary disk."""


class PacketSource:
    """Random access to packet bytes by (offset, caplen), for lazy detail.

    Plain files are read with ``os.pread``.  A compressed capture is decompressed into a
    private temporary file (unlinked at once: nothing is left behind), and only as far as
    the furthest packet asked for: a packet's offset comes from the analysis pass, so the
    file never holds more than the pass read (plus one 1 MiB chunk), however much more the
    compressed file would inflate to.  The file may not grow beyond ``spool_limit`` bytes
    (``$WIREFALL_SPOOL_LIMIT``, default 4 GiB): a packet beyond it raises ``SpoolLimitError``
    (a ``CaptureError``, also an ``OSError``) saying so.  Safe to share between threads.
    """

    def __init__(self, path: str, spool_limit: int | None = None):
        self.path = path
        self.spool_limit = default_spool_limit() if spool_limit is None else spool_limit
        self._fd: int | None = None
        self._src: Inflate | None = None  # the decompressor, while the spool is not complete
        self.compressed = False
        self.spooled = 0  # bytes in the temporary file
        import threading

        self._lock = threading.Lock()

    def _open(self) -> int:
        with self._lock:
            if self._fd is None:
                f, comp = open_decompressed(self.path)
                if comp:
                    import tempfile

                    fd, tmp = tempfile.mkstemp(prefix="wirefall-", suffix=".cap")
                    os.unlink(tmp)  # the open descriptor keeps it until close
                    self._src = f  # type: ignore[assignment]
                    self.compressed = True
                    self._fd = fd
                else:
                    f.close()
                    self._fd = os.open(self.path, os.O_RDONLY)
            return self._fd

    def _spool_to(self, end: int) -> None:
        with self._lock:
            if end > self.spool_limit and self.spooled < end and self._src is not None:
                raise SpoolLimitError(
                    f"{self.path}: packet bytes up to decompressed offset {end} would take more than the "
                    f"{self.spool_limit} bytes of temporary disk a compressed capture may use for random access "
                    f"({SPOOL_ENV}); decompress the file first, or raise {SPOOL_ENV}")
            while self.spooled < end and self._src is not None:
                chunk = self._src.read(min(CHUNK, self.spool_limit - self.spooled))
                if not chunk:  # the end of the stream (or its damage: the pass stopped there too)
                    self._src.close()
                    self._src = None
                    break
                fd, pos = self._fd, self.spooled
                view = memoryview(chunk)
                while view:
                    n = os.pwrite(fd, view, pos)  # type: ignore[arg-type]
                    view, pos = view[n:], pos + n
                self.spooled = pos

    def read(self, offset: int, length: int) -> bytes:
        fd = self._open()
        if self.compressed and offset + length > self.spooled:
            self._spool_to(offset + length)
        return os.pread(fd, length, offset)

    def close(self) -> None:
        with self._lock:
            if self._src is not None:
                self._src.close()
                self._src = None
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
