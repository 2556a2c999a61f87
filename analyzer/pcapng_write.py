"""Selected packets of a capture to a new pcapng file, with the keys they need.

``write_pcapng(analysis, packet_numbers, path, keys=True)`` writes, in file order, each
selected packet's bytes as the capture holds them (re-read through ``PacketSource``), with
its original timestamp and lengths, one Interface Description Block per interface the
packets came from (link type, snap length, name, and the input's timestamp resolution and
offset, so that the timestamps are copied tick for tick: the block header is read again
from the file rather than recomputed from the float time), as ``tshark -r IN -Y F -w OUT``
writes them.

With ``keys``, a Decryption Secrets Block (pcapng §4.7, type TLS key log) before the first
packet holds the key-log lines of the TLS and QUIC connections the packets belong to, and
only those: every secret of their client randoms, and for a TLS 1.2 session resumed from an
earlier connection's master secret, that secret as a ``CLIENT_RANDOM`` line of this
connection's client random (what tshark needs to decrypt it without the earlier handshake).
tshark then decrypts the file with no ``-o tls.keylog_file``.

The pcapng blocks are packed by hand with ``struct`` (python-pcapng and dpkt write no DSB
and cannot copy tick values at other resolutions); the file is written to a temporary file
beside ``path`` and moved into place, never replacing a file without ``force``.
"""
from __future__ import annotations

import math
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from .model import Analysis

DSB_TLS_KEYLOG = 0x544C534B
BT_SHB, BT_IDB, BT_EPB, BT_DSB = 0x0A0D0D0A, 1, 6, 0x0000000A
APP = "wirefall"


def _pad(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 4)


def _opt(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + _pad(value)


def _block(btype: int, body: bytes) -> bytes:
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def _shb() -> bytes:
    opts = _opt(4, APP.encode()) + _opt(0, b"")
    return _block(BT_SHB, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + opts)


def tsresol_code(resol: float) -> tuple[int, int]:
    """(if_tsresol option byte, ticks per second) for a resolution in seconds."""
    for r in range(0, 20):
        if math.isclose(resol, 10.0 ** -r, rel_tol=1e-9):
            return r, 10 ** r
    for r in range(0, 64):
        if math.isclose(resol, 2.0 ** -r, rel_tol=1e-9):
            return 0x80 | r, 1 << r
    return 9, 10 ** 9


def _idb(linktype: int, snaplen: int, resol: float, tsoffset: int, name: str) -> bytes:
    code, _ = tsresol_code(resol)
    opts = b""
    if name:
        opts += _opt(2, name.encode("utf-8", "replace")[:255])
    if code != 6:
        opts += _opt(9, bytes([code]))
    if tsoffset:
        opts += _opt(14, struct.pack("<q", tsoffset))
    if opts:
        opts += _opt(0, b"")
    return _block(BT_IDB, struct.pack("<HHI", linktype & 0xFFFF, 0, snaplen) + opts)


def _epb(iid: int, ticks: int, caplen: int, origlen: int, data: bytes) -> bytes:
    ticks &= (1 << 64) - 1
    return _block(BT_EPB, struct.pack("<IIIII", iid, ticks >> 32, ticks & 0xFFFFFFFF, caplen, origlen) + _pad(data))


def _dsb(text: bytes) -> bytes:
    return _block(BT_DSB, struct.pack("<II", DSB_TLS_KEYLOG, len(text)) + _pad(text))


def keylog_lines(analysis: Analysis, conn_ids: Iterable[int]) -> list[str]:
    """The key-log lines the TLS / QUIC connections ``conn_ids`` need (see the module
    docstring), in connection order, each once."""
    from .keylog import LABELS

    kl = analysis.keylog
    if kl is None:
        return []
    out: list[str] = []
    seen: set[str] = set()

    def add(line: str) -> None:
        if line not in seen:
            seen.add(line)
            out.append(line)

    labels = sorted(LABELS)
    for cid in sorted(set(conn_ids)):
        if not 0 <= cid < len(analysis.connections):
            continue
        conn = analysis.connections[cid]
        randoms: list[bytes] = []
        masters: list[tuple[bytes, bytes]] = []  # (this connection's client random, the master's)
        if conn.tls is not None and conn.tls.client_random:
            randoms.append(bytes(conn.tls.client_random))
        for d in (0, 1):
            tab = analysis.tls_records.get((cid, d)) if isinstance(analysis.tls_records, dict) else None
            ref = getattr(tab, "ref", None)
            if ref is None:
                continue
            if ref.client_random:
                randoms.append(bytes(ref.client_random))
                if ref.master_random and bytes(ref.master_random) != bytes(ref.client_random):
                    masters.append((bytes(ref.client_random), bytes(ref.master_random)))
        for cr in dict.fromkeys(randoms):
            for label in labels:
                s = kl.get(label, cr)
                if s is not None:
                    add(f"{label} {cr.hex()} {s.hex()}")
        for cr, mcr in masters:
            s = kl.get("CLIENT_RANDOM", mcr)
            if s is not None and kl.get("CLIENT_RANDOM", cr) is None:
                add(f"CLIENT_RANDOM {cr.hex()} {s.hex()}")
    return out


@dataclass(slots=True)
class WriteResult:
    packets: int
    interfaces: int
    secrets: int  # key-log lines in the Decryption Secrets Block
    connections: int  # connections the packets belong to


def _raw_ticks(src, fmt: str, endian_pcap: str | None, offset: int, caplen: int) -> tuple[int, int, int] | None:
    """(ticks, caplen, origlen) from the record header before the packet data, or None."""
    try:
        if fmt == "pcap" and endian_pcap is not None and offset >= 16:
            sec, frac, incl, orig = struct.unpack(endian_pcap + "IIII", src.read(offset - 16, 16))
            return sec, frac, orig  # (sec, frac): combined by the caller with the resolution
        if fmt == "pcapng" and offset >= 28:
            h = src.read(offset - 28, 28)
            if len(h) < 28:
                return None
            for e in "<>":
                bt, _blen, _iid, hi, lo, cl, ol = struct.unpack(e + "7I", h)
                if bt == BT_EPB:
                    return (hi << 32) | lo, cl, ol
                bt2 = struct.unpack(e + "I", h[:4])[0]
                if bt2 == 2:  # obsolete Packet Block: iid and drops are 16 bits each
                    _, _, _i, _dr, hi, lo, cl, ol = struct.unpack(e + "IIHHIIII", h)
                    return (hi << 32) | lo, cl, ol
    except (OSError, struct.error):
        return None
    return None


def write_pcapng(analysis: Analysis, packet_numbers: Iterable[int], path: str, keys: bool = True,
                 source=None, force: bool = False) -> WriteResult:
    """Write the packets ``packet_numbers`` (1-based) of ``analysis`` to ``path`` (module
    docstring).  ``source``: a ``capture.PacketSource`` of the capture (opened here if
    None).  Raises ``FileExistsError`` if ``path`` exists and not ``force``."""
    from .capture import PacketSource

    if analysis.source != "capture":
        raise ValueError("a browser log holds no packets to write")
    idx = analysis.index
    n = len(idx)
    nums = sorted({p for p in packet_numbers if 1 <= p <= n})
    own = source is None
    src = PacketSource(analysis.path) if own else source
    if not force and os.path.exists(path):
        raise FileExistsError(f"{path} exists (use --force to overwrite)")
    from .export import temp_beside

    fd, tmp = temp_beside(path, ".pcapng.tmp")
    try:
        fmt = analysis.capture_format
        endian_pcap = None
        ns_pcap = False
        if fmt == "pcap":
            magic = src.read(0, 4)
            if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
                endian_pcap = "<"
            elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
                endian_pcap = ">"
            ns_pcap = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
        ifaces = analysis.interfaces or []
        out_iid: dict[int, int] = {}
        conns: set[int] = set()
        with os.fdopen(fd, "wb") as f:
            f.write(_shb())
            # interfaces first (tshark writes every IDB before the packets), then the secrets
            used: list[int] = []
            for p in nums:
                iid = idx.interface[p - 1]
                if iid not in out_iid:
                    out_iid[iid] = len(used)
                    used.append(iid)
                c = idx.conn[p - 1]
                if c >= 0:
                    conns.add(c)
            for iid in used:
                itf = ifaces[iid] if iid < len(ifaces) else None
                lt = itf.linktype if itf is not None and itf.linktype >= 0 else idx.linktype[idx.interface.index(iid)]
                if fmt == "pcap":
                    resol = 1e-9 if ns_pcap else 1e-6
                else:
                    resol = itf.tsresol if itf is not None else 1e-6
                f.write(_idb(lt, (itf.snaplen if itf is not None else 0) or 262144, resol,
                             itf.tsoffset if itf is not None else 0, itf.name if itf is not None else ""))
            lines = keylog_lines(analysis, conns) if keys else []
            if lines:
                f.write(_dsb(("\n".join(lines) + "\n").encode()))
            for p in nums:
                i = p - 1
                off, cl, ol = idx.offset[i], idx.caplen[i], idx.origlen[i]
                iid = idx.interface[i]
                itf = ifaces[iid] if iid < len(ifaces) else None
                raw = _raw_ticks(src, fmt, endian_pcap, off, cl)
                if fmt == "pcap" and raw is not None:
                    sec, frac, _ = raw
                    ticks = sec * (10 ** 9 if ns_pcap else 10 ** 6) + frac
                elif raw is not None and raw[1] == cl:
                    ticks = raw[0]
                else:  # a Simple Packet Block (no time) or a header not found: from the float time
                    resol = itf.tsresol if itf is not None else 1e-6
                    tso = itf.tsoffset if itf is not None else 0
                    ticks = max(0, round((idx.ts[i] - tso) / resol))
                f.write(_epb(out_iid[iid], ticks, cl, ol, src.read(off, cl)))
            f.flush()
            os.fsync(f.fileno())
        from .export import publish

        publish(tmp, path, force)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        if own:
            src.close()
    return WriteResult(len(nums), len(out_iid), len(lines), len(conns))
