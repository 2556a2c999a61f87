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
from typing import BinaryIO, Iterator, NamedTuple

CHUNK = 1 << 20
UNKNOWN_INTERFACE = 0xFFFF  # Record.interface of a packet naming an interface no IDB declared
_READ_ERRORS: tuple = (EOFError, OSError)  # what reading a (compressed) capture may raise


def _lzma():
    """The lzma module, imported on first use; from then on its errors count as read errors."""
    global _READ_ERRORS
    import lzma

    _READ_ERRORS = (EOFError, OSError, lzma.LZMAError)
    return lzma


class CaptureError(Exception):
    """The file is not a capture wirefall can read (exit code 2)."""


class Record(NamedTuple):
    ts: float
    caplen: int
    origlen: int
    linktype: int
    offset: int  # offset of the packet data in the decompressed file
    data: bytes
    interface: int


_tuple_new = tuple.__new__  # Record without NamedTuple's Python-level __new__ (once per packet)


@dataclass
class Interface:
    linktype: int
    snaplen: int = 0
    tsresol: float = 1e-6
    tsoffset: int = 0
    name: str = ""


@dataclass
class CaptureInfo:
    """What the reader learns besides packets."""

    format: str = ""  # pcap | pcapng
    compression: str = ""  # '', gzip, xz, bzip2, zstd
    interfaces: list[Interface] = field(default_factory=list)
    secrets: list[tuple[int, bytes]] = field(default_factory=list)  # DSB (type, data)
    warnings: list[str] = field(default_factory=list)
    truncated: bool = False
    interface_stats: list[dict] = field(default_factory=list)


MAGIC_GZIP = b"\x1f\x8b"
MAGIC_XZ = b"\xfd7zXZ\x00"
MAGIC_BZ2 = b"BZh"
MAGIC_ZSTD = b"\x28\xb5\x2f\xfd"

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
    if head.startswith(MAGIC_ZSTD):
        return "zstd"
    return ""


def open_decompressed(path: str) -> tuple[BinaryIO, str]:
    """Open ``path`` and undo any compression, chosen by magic bytes, not by name."""
    try:
        raw = open(path, "rb")
    except OSError as e:
        raise CaptureError(f"{path}: cannot open: {e.strerror or e}") from None
    head = raw.read(8)
    raw.seek(0)
    comp = _sniff_compression(head)
    # the decompressors are imported when a capture needs one (start-up of every other run)
    if comp == "gzip":
        import gzip

        return gzip.GzipFile(fileobj=raw), comp
    if comp == "xz":
        return _lzma().LZMAFile(raw), comp
    if comp == "bzip2":
        import bz2

        return bz2.BZ2File(raw), comp
    if comp == "zstd":
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        return io.BufferedReader(reader, CHUNK), comp  # type: ignore[arg-type]
    return raw, ""


class _Buf:
    """A forward-only buffered reader over a stream, tracking the absolute offset."""

    __slots__ = ("f", "buf", "pos", "base", "eof")

    def __init__(self, f: BinaryIO, initial: bytes = b""):
        self.f = f
        self.buf = initial
        self.pos = 0
        self.base = 0  # absolute offset of buf[0]
        self.eof = False

    def need(self, n: int) -> bool:
        """Make sure n bytes are available at pos; False at end of file."""
        if len(self.buf) - self.pos >= n:
            return True
        if self.eof:
            return False
        rest = self.buf[self.pos :]
        self.base += self.pos
        self.pos = 0
        parts = [rest]
        have = len(rest)
        while have < n:
            try:
                # at most 4 chunks per read: a damaged length field claiming 64 MiB must not make
                # read() allocate 64 MiB before the end of a small file is found
                chunk = self.f.read(min(max(CHUNK, n - have), 4 * CHUNK))
            except _READ_ERRORS as e:  # truncated compressed stream
                self.eof = True
                self.error = str(e) or e.__class__.__name__
                break
            if not chunk:
                self.eof = True
                break
            parts.append(chunk)
            have += len(chunk)
        self.buf = b"".join(parts)
        return len(self.buf) >= n


def read_capture(path: str, info: CaptureInfo | None = None) -> Iterator[Record]:
    """Yield every packet of the capture at ``path`` in file order.

    Raises CaptureError at once if the file is not a pcap/pcapng capture.  A truncated
    file ends the iteration early with ``info.truncated`` set and a warning.
    """
    if info is None:
        info = CaptureInfo()
    f, comp = open_decompressed(path)
    info.compression = comp
    try:
        head = f.read(4)
    except _READ_ERRORS as e:
        raise CaptureError(f"{path}: cannot read ({comp or 'plain'}): {e}") from None
    if head in PCAP_MAGICS:
        info.format = "pcap"
        yield from _read_pcap(f, head, info, path)
    elif head == PCAPNG_SHB:
        info.format = "pcapng"
        yield from _read_pcapng(f, head, info, path)
    else:
        f.close()
        what = f"{comp}-compressed data" if comp else "data"
        raise CaptureError(
            f"{path}: not a capture file: expected pcap or pcapng (optionally gzip, xz, bzip2 or zstd compressed), found {what} starting {head.hex() or 'empty'}"
        )
    f.close()


def _truncated(info: CaptureInfo, path: str, number: int, offset: int, what: str) -> None:
    info.truncated = True
    info.warnings.append(f"{path}: capture truncated in packet {number} at file offset {offset}: {what}; {number - 1} complete packets read")


def _read_pcap(f: BinaryIO, magic: bytes, info: CaptureInfo, path: str) -> Iterator[Record]:
    endian, resol = PCAP_MAGICS[magic]
    b = _Buf(f, magic)
    if not b.need(24):
        raise CaptureError(f"{path}: pcap global header truncated")
    _, vmaj, vmin, _, _, snaplen, network = struct.unpack_from(endian + "IHHiIII", b.buf, 0)
    linktype = network & 0x0FFFFFFF
    info.interfaces.append(Interface(linktype, snaplen, resol))
    b.pos = 24
    hdr = struct.Struct(endian + "IIII")
    unpack = hdr.unpack_from
    number = 0
    new = _tuple_new
    while True:
        # every record wholly in the buffer, without a need() call each (the common case)
        buf, pos, base = b.buf, b.pos, b.base
        n = len(buf)
        while pos + 16 <= n:
            sec, frac, caplen, origlen = unpack(buf, pos)
            end = pos + 16 + caplen
            if end > n or caplen > 0x4000000:
                break
            number += 1
            yield new(Record, (sec + frac * resol, caplen, origlen, linktype, base + pos + 16, buf[pos + 16 : end], 0))
            pos = end
        b.pos = pos
        if not b.need(16):
            if len(b.buf) - b.pos:
                _truncated(info, path, number + 1, b.base + b.pos, "record header incomplete")
            return
        sec, frac, caplen, origlen = unpack(b.buf, b.pos)
        number += 1
        if caplen > 0x4000000:  # 64 MiB: garbage, not a packet
            info.warnings.append(f"{path}: packet {number} at file offset {b.base + b.pos}: implausible captured length {caplen}; stopped reading")
            info.truncated = True
            return
        start = b.pos + 16
        if not b.need(16 + caplen):
            _truncated(info, path, number, b.base + b.pos, f"{caplen} bytes of data expected")
            return
        start = b.pos + 16
        data = b.buf[start : start + caplen]
        yield _tuple_new(Record, (sec + frac * resol, caplen, origlen, linktype, b.base + start, data, 0))
        b.pos = start + caplen


def _parse_options(buf: bytes, pos: int, end: int, endian: str) -> Iterator[tuple[int, bytes]]:
    while pos + 4 <= end:
        code, length = struct.unpack_from(endian + "HH", buf, pos)
        pos += 4
        if code == 0:
            return
        yield code, buf[pos : pos + length]
        pos += (length + 3) & ~3


def _read_pcapng(f: BinaryIO, magic: bytes, info: CaptureInfo, path: str) -> Iterator[Record]:
    b = _Buf(f, magic)
    endian = "<"
    ifaces: list[Interface] = []
    number = 0
    epb = {"<": struct.Struct("<7I").unpack_from, ">": struct.Struct(">7I").unpack_from}
    new = _tuple_new
    while True:
        # Enhanced Packet Blocks wholly in the buffer, without a need() call each (the
        # common case); anything else, or anything odd, takes the general path below
        if ifaces:
            unpack = epb[endian]
            buf, pos, base = b.buf, b.pos, b.base
            n = len(buf)
            nif = len(ifaces)
            while pos + 28 <= n:
                btype_i, blen, iid, tshi, tslo, caplen, origlen = unpack(buf, pos)
                if btype_i != 6 or blen < 32 or blen & 3 or blen > 0x4000000 or pos + blen > n or iid >= nif:
                    break
                number += 1
                itf = ifaces[iid]
                if caplen > blen - 32:
                    caplen = blen - 32
                yield new(Record, (((tshi << 32) | tslo) * itf.tsresol + itf.tsoffset, caplen, origlen, itf.linktype,
                                   base + pos + 28, buf[pos + 28 : pos + 28 + caplen], iid))
                pos += blen
            b.pos = pos
        if not b.need(12):
            if len(b.buf) - b.pos:
                _truncated(info, path, number + 1, b.base + b.pos, "block header incomplete")
            return
        p = b.pos
        btype = b.buf[p : p + 4]
        if btype == PCAPNG_SHB:
            bom = b.buf[p + 8 : p + 12]
            if bom == b"\x4d\x3c\x2b\x1a":
                endian = "<"
            elif bom == b"\x1a\x2b\x3c\x4d":
                endian = ">"
            else:
                raise CaptureError(f"{path}: pcapng section header at offset {b.base + p} has a bad byte-order magic")
            ifaces = []  # interfaces are per section
        btype_i, blen = struct.unpack_from(endian + "II", b.buf, p)
        if blen < 12 or blen % 4 or blen > 0x4000000:
            if number == 0 and btype_i != 0x0A0D0D0A and not info.interfaces:
                raise CaptureError(f"{path}: corrupt pcapng block at offset {b.base + p}")
            info.truncated = True
            info.warnings.append(f"{path}: corrupt pcapng block (type {btype_i:#x}, length {blen}) at file offset {b.base + p} after packet {number}; stopped reading")
            return
        if not b.need(blen):
            _truncated(info, path, number + 1, b.base + p, f"block of {blen} bytes incomplete")
            return
        p = b.pos
        buf = b.buf
        if btype_i == 6:  # Enhanced Packet Block
            iid, tshi, tslo, caplen, origlen = struct.unpack_from(endian + "IIIII", buf, p + 8)
            number += 1
            if iid < len(ifaces):
                itf = ifaces[iid]
            else:
                info.warnings.append(f"packet {number}: unknown interface {iid}")
                itf = Interface(-1)
                iid = UNKNOWN_INTERFACE  # the index keeps 16 bits per packet
            caplen = max(0, min(caplen, blen - 32))  # a block shorter than its header: no data
            start = p + 28
            ts = ((tshi << 32) | tslo) * itf.tsresol + itf.tsoffset
            yield _tuple_new(Record, (ts, caplen, origlen, itf.linktype, b.base + start, buf[start : start + caplen], iid))
        elif btype_i == 3:  # Simple Packet Block: interface 0, no timestamp
            (origlen,) = struct.unpack_from(endian + "I", buf, p + 8)
            number += 1
            itf = ifaces[0] if ifaces else Interface(-1)
            caplen = max(0, min(origlen, blen - 16, itf.snaplen or origlen))
            start = p + 12
            yield _tuple_new(Record, (0.0, caplen, origlen, itf.linktype, b.base + start, buf[start : start + caplen], 0))
        elif btype_i == 2:  # obsolete Packet Block
            iid, _drops, tshi, tslo, caplen, origlen = struct.unpack_from(endian + "HHIIII", buf, p + 8)
            number += 1
            itf = ifaces[iid] if iid < len(ifaces) else Interface(-1)
            caplen = max(0, min(caplen, blen - 32))
            start = p + 28
            ts = ((tshi << 32) | tslo) * itf.tsresol + itf.tsoffset
            yield _tuple_new(Record, (ts, caplen, origlen, itf.linktype, b.base + start, buf[start : start + caplen], iid))
        elif btype_i == 1:  # Interface Description Block
            linktype, _, snaplen = struct.unpack_from(endian + "HHI", buf, p + 8)
            itf = Interface(linktype, snaplen)
            for code, val in _parse_options(buf, p + 16, p + blen - 4, endian):
                if code == 9 and val:
                    r = val[0]
                    itf.tsresol = 2.0 ** -(r & 0x7F) if r & 0x80 else 10.0 ** -r
                elif code == 14 and len(val) >= 8:
                    (itf.tsoffset,) = struct.unpack_from(endian + "q", val, 0)
                elif code == 2:
                    itf.name = val.decode("utf-8", "replace")
            ifaces.append(itf)
            info.interfaces.append(itf)
        elif btype_i == 0x0A:  # Decryption Secrets Block
            stype, slen = struct.unpack_from(endian + "II", buf, p + 8)
            info.secrets.append((stype, bytes(buf[p + 16 : p + 16 + min(slen, blen - 20)])))
        elif btype_i == 5:  # Interface Statistics Block
            iid, tshi, tslo = struct.unpack_from(endian + "III", buf, p + 8)
            st: dict = {"interface": iid}
            for code, val in _parse_options(buf, p + 20, p + blen - 4, endian):
                if code in (4, 5) and len(val) >= 8:
                    st["received" if code == 4 else "dropped"] = struct.unpack_from(endian + "Q", val)[0]
            info.interface_stats.append(st)
        # other blocks (NRB, custom, SHB body) are skipped by length
        b.pos = p + blen


class PacketSource:
    """Random access to packet bytes by (offset, caplen), for lazy detail.

    Plain files are read with ``os.pread``.  A compressed capture is decompressed once,
    on the first request, into a private temporary file that is removed on ``close``.
    """

    def __init__(self, path: str):
        self.path = path
        self._fd: int | None = None
        self._tmp: str | None = None

    def _open(self) -> int:
        if self._fd is None:
            f, comp = open_decompressed(self.path)
            if comp:
                import tempfile

                fd, tmp = tempfile.mkstemp(prefix="wirefall-", suffix=".cap")
                with os.fdopen(fd, "wb") as out:
                    while True:
                        try:
                            chunk = f.read(CHUNK)
                        except _READ_ERRORS:
                            break
                        if not chunk:
                            break
                        out.write(chunk)
                f.close()
                self._tmp = tmp
                self._fd = os.open(tmp, os.O_RDONLY)
            else:
                f.close()
                self._fd = os.open(self.path, os.O_RDONLY)
        return self._fd

    def read(self, offset: int, length: int) -> bytes:
        return os.pread(self._open(), length, offset)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._tmp:
            try:
                os.unlink(self._tmp)
            except OSError:
                pass
            self._tmp = None

    def __del__(self):
        self.close()
