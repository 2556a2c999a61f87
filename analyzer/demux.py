"""The lean demultiplexer of parallel analysis (``analyzer.parallel``, "scanned" mode).

``scan(path, n)`` walks an uncompressed capture's record headers through ``mmap`` (the
packet bytes are not read, only the first 54 of a packet on the common Ethernet/IPv4/TCP path)
and returns, for every packet, what the reader (``capture.read_capture``) would have yielded
except the data (time, file offset, lengths, link type, interface) and which TCP 4-tuple
it belongs to; the 4-tuples (either direction: a "group") are given to ``n`` processes by
longest processing time first on captured bytes.  Connection identity stays exactly the serial
pass's: a group holds every connection of that 4-tuple (a port reused after a SYN is the same
4-tuple), and the worker that owns the group runs the serial flow table on all of its
packets; everything that is not TCP (UDP: QUIC, DNS; undecodable packets) is worker 0's.

It is a reader of its own only for captures whose every record the reader takes on its
plain path (a hand-written walk because ``read_capture`` copies every packet's bytes, which
is most of the parent's time on large-segment captures): a pcap whose records end with
the file, a pcapng of one section of IDB, EPB, DSB, ISB and skipped blocks, no timestamp to
clamp, no snap-length cut, no IPv4 fragment.  For anything else it returns None and the
capture is demultiplexed the old way (the parent's own pass over ``read_capture``).
"""
from __future__ import annotations

import mmap
import struct
from array import array
from dataclasses import dataclass, field
from typing import Literal

from .capture import PCAP_MAGICS, PCAPNG_FIXED, PCAPNG_SHB, TS_MAX, TS_MIN, Interface, pcapng_interface, pcapng_stats
from .packet import PROTO_TCP, Decoder

PER_PACKET = 512  # a packet's cost in captured-byte equivalents, besides its bytes (balancing only)


@dataclass(eq=False)
class Scan:
    """Every packet's record fields (index ``i`` is packet ``i + 1``) and its group (-1: worker
    0's), each group's worker, the pcapng secrets blocks with the packet count before them."""

    format: str
    interfaces: list[Interface]
    interface_stats: list[dict] = field(default_factory=list)
    ts: array = field(default_factory=lambda: array("d"))
    offset: array = field(default_factory=lambda: array("q"))
    caplen: array = field(default_factory=lambda: array("I"))
    origlen: array = field(default_factory=lambda: array("I"))
    linktype: array = field(default_factory=lambda: array("i"))
    interface: array = field(default_factory=lambda: array("I"))
    group: array = field(default_factory=lambda: array("i"))
    secrets: list[tuple[int, int, bytes]] = field(default_factory=list)  # (packets before it, type, data)
    worker: list[int] = field(default_factory=list)  # group -> its worker
    load: list[int] = field(default_factory=list)  # per worker: its packets' cost (captured bytes + PER_PACKET each)

    def __len__(self) -> int:
        return len(self.ts)


class _Odd(Exception):
    """The capture holds something only ``read_capture`` handles: not scanned."""


def scan(path: str, n: int) -> Scan | None:
    """The scan of the capture at ``path`` for ``n`` processes (module docstring), or None."""
    try:
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        head = mm[:4]
        if head in PCAP_MAGICS:
            sc = _pcap(mm, head)
        elif head == PCAPNG_SHB:
            sc = _pcapng(mm)
        else:
            return None
    except (_Odd, struct.error, IndexError):
        return None
    finally:
        mm.close()
    _assign(sc, n)
    return sc


class _Groups:
    """4-tuple -> group, and each group's cost.  An IPv4 key is one int: the 8 address bytes
    and the 4 port bytes as the record's byte order reads them (one unpack per record, no
    tuple: any one-to-one form serves, the same on both paths); an IPv6 one, the packed
    addresses and ports.  A packet the fast path does not take is decoded by
    ``packet.Decoder`` (an IPv4 fragment: not scanned, see the module docstring)."""

    def __init__(self, endian: str):
        self.memo: dict = {}
        self.cost: list[int] = []
        self.other = 0  # cost of worker 0's packets (not TCP)
        self.decoder = Decoder()
        self.order: Literal["little", "big"] = "little" if endian == "<" else "big"

    def slow(self, linktype: int, data, cost: int) -> int:
        d = self.decoder.decode(linktype, data)
        if d is None or self.decoder.defrag.pending:
            raise _Odd("IPv4 fragment")
        if isinstance(d, str) or d.proto != PROTO_TCP:
            self.other += cost
            return -1
        if len(d.src) == 4:  # (the fast path's form: an IPv4 connection may take both paths)
            o = self.order
            key = int.from_bytes(d.sport.to_bytes(2, "big") + d.dport.to_bytes(2, "big"), o) << 64 | int.from_bytes(d.src + d.dst, o)
            g = self.memo.get(key)
            if g is None:
                g = self.new(key)
        else:
            key6 = (d.src, d.sport, d.dst, d.dport)
            g = self.memo.get(key6)
            if g is None:
                g = self.pair(key6, (d.dst, d.dport, d.src, d.sport))
        self.cost[g] += cost
        return g

    def new(self, key: int) -> int:
        """A new IPv4 key: its group (its reverse's, if seen): the two halves of the addresses
        and of the ports swapped."""
        ports, addrs = key >> 64, key & 0xFFFFFFFFFFFFFFFF
        rkey = ((ports >> 16) | (ports & 0xFFFF) << 16) << 64 | (addrs >> 32) | (addrs & 0xFFFFFFFF) << 32
        return self.pair(key, rkey)

    def pair(self, key, rkey) -> int:
        g = self.memo.get(rkey)
        if g is None:
            g = len(self.cost)
            self.cost.append(0)
        self.memo[key] = self.memo[rkey] = g
        return g


def _fast(endian: str) -> tuple[int, int, bool]:
    """The fast path's ethertype and fragment mask as a record of that byte order reads
    them, and whether the IP total length must be byte-swapped."""
    return (0x0008, 0xFF3F, True) if endian == "<" else (0x0800, 0x3FFF, False)


_DROP = 32 << 20  # bytes scanned between two _drop calls


def _drop(mm, frm: int, pos: int) -> int:
    """Unmap the pages of ``[frm, pos)`` that the scan has read (``MADV_DONTNEED``; they stay
    in the page cache): read through the mapping they count in the process's resident memory,
    so a 254 MB capture's scan raised the parent's peak RSS from 51 to 257 MB.  Returns where
    the next call starts."""
    end = pos & ~(mmap.PAGESIZE - 1)
    if end > frm and hasattr(mm, "madvise"):
        try:
            mm.madvise(mmap.MADV_DONTNEED, frm, end - frm)
        except (OSError, ValueError):
            pass
    return max(frm, end)


def _pcap(mm, magic: bytes) -> Scan:
    endian, resol = PCAP_MAGICS[magic]
    size = len(mm)
    if size < 24:
        raise _Odd("header")
    _, _, _, _, _, snaplen, network = struct.unpack_from(endian + "IHHiIII", mm, 0)
    linktype = network & 0x0FFFFFFF
    sc = Scan("pcap", [Interface(linktype, snaplen, resol)])
    # the record header and the packet's first 47 bytes (Ethernet, IPv4, TCP ports and offset:
    # pipeline._analyze's fast path) in one unpack, in the record's byte order
    both = struct.Struct(endian + "IIII12xHBxH2xH1xB2xQI8xB")
    unpack, unpack_h, tail = both.unpack_from, struct.Struct(endian + "IIII").unpack_from, both.size
    groups = _Groups(endian)
    memo, cost, new, slow = groups.memo, groups.cost, groups.new, groups.slow
    ETYPE, FRAG, swap = _fast(endian)
    eth = linktype == 1
    ts_a, off_a, cap_a, orig_a, grp_a = sc.ts.append, sc.offset.append, sc.caplen.append, sc.origlen.append, sc.group.append
    pos = 24
    dropped, drop_at = 0, _DROP
    while pos + 16 <= size:
        if pos >= drop_at:
            dropped = _drop(mm, dropped, pos)
            drop_at = pos + _DROP
        if pos + tail <= size:
            sec, frac, caplen, origlen, etype, vihl, total, frag, proto, addrs, ports, doff = unpack(mm, pos)
        else:
            sec, frac, caplen, origlen = unpack_h(mm, pos)
            etype = -1
        start = pos + 16
        pos = start + caplen
        if caplen > 0x4000000 or pos > size or caplen < origlen:  # (the reader warns: its own path)
            raise _Odd("record")
        ts_a(sec + frac * resol)
        off_a(start)
        cap_a(caplen)
        orig_a(origlen)
        c = caplen + PER_PACKET
        if eth and etype == ETYPE and proto == PROTO_TCP and vihl == 0x45 and caplen >= 54 and not frag & FRAG and doff >= 0x50:
            if swap:
                total = ((total & 0xFF) << 8) | (total >> 8)
            if not 20 <= total < 40:  # (the IP datagram holds the TCP header: pipeline's end >= 54)
                key = ports << 64 | addrs
                g = memo.get(key)
                if g is None:
                    g = new(key)
                cost[g] += c
                grp_a(g)
                continue
        grp_a(slow(linktype, mm[start:pos], c))
    if pos != size:
        raise _Odd("the file ends inside a record header")
    k = len(sc.ts)
    sc.linktype = array("i", [linktype]) * k
    sc.interface = array("I", bytes(4 * k))
    sc.load = [groups.other, *groups.cost]  # (moved into worker loads by _assign)
    return sc


def _options(mm, pos: int, end: int, endian: str):
    """A pcapng block's options (as ``capture._parse_options``; one overrunning its block: odd)."""
    while pos + 4 <= end:
        code, length = struct.unpack_from(endian + "HH", mm, pos)
        pos += 4
        if code == 0:
            return
        if pos + length > end:
            raise _Odd("option")
        yield code, mm[pos : pos + length]
        pos += (length + 3) & ~3


def _pcapng(mm) -> Scan:
    size = len(mm)
    if size < 12:
        raise _Odd("header")
    bom = mm[8:12]
    endian = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">" if bom == b"\x1a\x2b\x3c\x4d" else ""
    if not endian:
        raise _Odd("byte order")
    sc = Scan("pcapng", [])
    ifaces = sc.interfaces
    groups = _Groups(endian)
    memo, cost, new, slow = groups.memo, groups.cost, groups.new, groups.slow
    ETYPE, FRAG, swap = _fast(endian)
    head = struct.Struct(endian + "II").unpack_from
    epb = struct.Struct(endian + "IIIII").unpack_from
    # an Enhanced Packet Block's header and the packet's first 47 bytes (as _pcap's)
    both = struct.Struct(endian + "IIIIIII12xHBxH2xH1xB2xQI8xB")
    unpack, tail = both.unpack_from, both.size
    ts_a, off_a, cap_a, orig_a, grp_a = sc.ts.append, sc.offset.append, sc.caplen.append, sc.origlen.append, sc.group.append
    lt_a, if_a = sc.linktype.append, sc.interface.append
    pos = 0
    dropped, drop_at = 0, _DROP
    while pos < size:
        if pos >= drop_at:
            dropped = _drop(mm, dropped, pos)
            drop_at = pos + _DROP
        if pos + 12 > size:
            raise _Odd("block header")
        if pos + tail <= size:
            btype, blen, iid, tshi, tslo, caplen, origlen, etype, vihl, total, frag, proto, addrs, ports, doff = unpack(mm, pos)
        else:
            btype, blen = head(mm, pos)
            etype = -1
        if blen < 12 or blen & 3 or blen > 0x4000000 or pos + blen > size:
            raise _Odd("block length")
        if btype == 6:  # Enhanced Packet Block
            if etype < 0:
                iid, tshi, tslo, caplen, origlen = epb(mm, pos + 8)
            if blen < 32 or iid >= len(ifaces):
                raise _Odd("EPB")
            itf = ifaces[iid]
            ts = ((tshi << 32) | tslo) * itf.tsresol + itf.tsoffset
            if caplen > blen - 32:
                caplen = blen - 32
            if not TS_MIN <= ts <= TS_MAX or caplen < origlen:
                raise _Odd("EPB time or length")
            start = pos + 28
            ts_a(ts)
            off_a(start)
            cap_a(caplen)
            orig_a(origlen)
            lt_a(itf.linktype)
            if_a(iid)
            c = caplen + PER_PACKET
            pos += blen
            if (etype == ETYPE and proto == PROTO_TCP and vihl == 0x45 and caplen >= 54 and not frag & FRAG and doff >= 0x50
                    and itf.linktype == 1):
                if swap:
                    total = ((total & 0xFF) << 8) | (total >> 8)
                if not 20 <= total < 40:  # (as _pcap's)
                    key = ports << 64 | addrs
                    g = memo.get(key)
                    if g is None:
                        g = new(key)
                    cost[g] += c
                    grp_a(g)
                    continue
            grp_a(slow(itf.linktype, mm[start : start + caplen], c))
            continue
        elif blen < PCAPNG_FIXED.get(btype, 12):  # the reader skips it with a warning: its own path
            raise _Odd("block shorter than its fixed fields")
        elif btype == 0x0A0D0D0A:
            if pos:
                raise _Odd("a second section")
        elif btype == 1:  # Interface Description Block
            ifaces.append(pcapng_interface(mm, pos, blen, endian, _options))
        elif btype == 0x0A:  # Decryption Secrets Block
            stype, slen = struct.unpack_from(endian + "II", mm, pos + 8)
            sc.secrets.append((len(sc.ts), stype, bytes(mm[pos + 16 : pos + 16 + min(slen, blen - 20)])))
        elif btype == 5:  # Interface Statistics Block
            sc.interface_stats.append(pcapng_stats(mm, pos, blen, endian, _options))
        elif btype in (2, 3):  # obsolete and simple packet blocks: the reader's own path
            raise _Odd("packet block")
        pos += blen  # (other blocks: skipped by length, as the reader does)
    sc.load = [groups.other, *groups.cost]
    return sc


def _assign(sc: Scan, n: int) -> None:
    """Groups to processes, longest first to the least loaded (worker 0 starts with the
    packets that are not TCP); ties to the lower number: the same on every run."""
    other, cost = sc.load[0], sc.load[1:]
    load = [other] + [0] * (n - 1)
    worker = [0] * len(cost)
    for g in sorted(range(len(cost)), key=lambda g: (-cost[g], g)):
        w = min(range(n), key=lambda i: (load[i], i))
        worker[g] = w
        load[w] += cost[g]
    sc.worker, sc.load = worker, load


def own_packets(sc: Scan, k: int) -> array:
    """The 0-based indices of process ``k``'s packets, in file order."""
    wk = sc.worker
    if k == 0:
        return array("q", (i for i, g in enumerate(sc.group) if g < 0 or wk[g] == 0))
    return array("q", (i for i, g in enumerate(sc.group) if g >= 0 and wk[g] == k))
