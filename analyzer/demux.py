"""The lean demultiplexer of parallel analysis (``analyzer.parallel``, "scanned" mode).

``scan(path, n)`` walks an uncompressed capture's record headers through ``mmap``, or by
``os.pread`` where records lie far apart (``FAR``) (the packet bytes are not read, only the
first 54 of a packet on the common Ethernet/IPv4/TCP path)
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

A pcap of ``SPLIT_MIN`` bytes or more, for 2 or more processes, is walked in two halves at
once (``_pcap_split``: the second by a forked process, from a record boundary the first half's
walk proves), the same Scan.

Two modes, one result: a pure-Python loop over the records, and on a large capture (the loop
hands over part-way, see _NP_LEFT) a vectorised one (``_Vec``) that walks only the chain of
record lengths in Python and reads every other field, decides the fast path and builds the
keys with numpy; packets off the fast path (IPv6, other link types, IP options, VLAN tags,
UDP...) take ``_Groups.slow`` in either.  tests/test_demux_fast.py holds them equal.
"""
from __future__ import annotations

import mmap
import os
import signal
import struct
import sys
import time
from array import array
from dataclasses import dataclass, field
from typing import Literal

from .capture import PCAP_MAGICS, PCAPNG_FIXED, PCAPNG_SHB, TS_MAX, TS_MIN, Interface, pcapng_interface, pcapng_stats
from .numpy_lite import numpy
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
    # a split walk's CPU seconds (``_pcap_split``): {"mine": this process's half, "theirs": the
    # other's} (benchmarks/parallel_accounting.py: the scan's critical path); None: one walk
    split: dict | None = None

    def __len__(self) -> int:
        return len(self.ts)


class _Odd(Exception):
    """The capture holds something only ``read_capture`` handles: not scanned."""


# The vectorised mode (``_Vec``): the record chain walked in Python (one read a record: where
# the next one starts), every other field gathered and decided on with numpy: about 0.4 us a
# record against the loop's 0.9 (h2-mtu, h2-big-mtu; both pay the same page faults and drops).
# ``import numpy`` costs about 60 ms (and as much CPU again on another core: OpenBLAS starting
# its threads), so a scan starts with the pure-Python loop, which at its checkpoints (the first
# at _FIRST_CHECK bytes, then every _DROP) estimates the records left from those it has seen
# and hands over when they are enough to pay for the import: h1-mtu's 121 k packets were
# scanned as fast either way (0.11 s), h2-mtu's 243 k in 0.17 s instead of 0.24.
_FIRST_CHECK = 4 << 20
_NP_LEFT = 150_000  # records left (estimated) from which the vectorised mode pays (numpy not imported yet)
_NP_LEFT_LOADED = 5_000  # the same with numpy already imported


def scan(path: str, n: int, vector: bool | None = None, split: bool | None = None) -> Scan | None:
    """The scan of the capture at ``path`` for ``n`` processes (module docstring), or None.
    ``vector``: True, the vectorised mode from the first record; False, the pure-Python loop
    throughout; None (the default), the loop, which hands over to the vectorised mode when the
    capture is large.  ``split``: a pcap's two halves walked at once (``_pcap_split``); None
    (the default): for 2 or more processes, from SPLIT_MIN bytes.  The result is the same in
    every mode."""
    try:
        f = open(path, "rb")  # (kept open: a record far from the last is read by os.pread, see FAR)
    except OSError:
        return None
    try:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        f.close()
        return None
    try:
        head = mm[:4]
        if head in PCAP_MAGICS:
            if split is None:
                split = n >= 2 and len(mm) >= SPLIT_MIN and hasattr(os, "fork")
            sc = _pcap(mm, head, vector, f.fileno(), split=split)
        elif head == PCAPNG_SHB:
            sc = _pcapng(mm, vector, f.fileno())
        else:
            return None
    except (_Odd, struct.error, IndexError, OSError):
        return None
    finally:
        mm.close()
        f.close()
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


def _fast(endian: str) -> tuple[int, int, frozenset[int]]:
    """The fast path's ethertype and fragment mask as a record of that byte order reads
    them, and the IP total lengths it leaves to the slow path (20 to 39: the datagram ends
    inside the TCP header; pipeline's end >= 54), as it reads them."""
    swap = endian == "<"
    return (0x0008 if swap else 0x0800, 0xFF3F if swap else 0x3FFF, frozenset((v << 8 if swap else v) for v in range(20, 40)))


_DROP = 32 << 20  # bytes scanned between two _drop calls
_CHUNK = 8 << 20  # the vectorised mode's chunk (see _Vec)


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


def _first_check(vector: bool | None) -> int:
    """Where the pure-Python loop first stops to drop pages and (unless ``vector`` is False)
    to ask whether to hand over to the vectorised mode."""
    return 0 if vector else _FIRST_CHECK if vector is None else _DROP


def _vectorise(vector: bool | None, done: int, walked: int, left: int) -> bool:
    """Whether the loop hands over: ``done`` records in ``walked`` bytes, ``left`` bytes to go."""
    if vector is False:
        return False
    if vector is None and done * left < (_NP_LEFT_LOADED if "numpy" in sys.modules else _NP_LEFT) * walked:
        return False
    try:
        numpy()
    except ImportError:
        return False
    return True


# Where records lie FAR bytes or more apart on average (large segments: loopback and TSO/GRO
# captures), as a checkpoint of the loop finds (the first at _FIRST_CHECK), their heads are
# read by ``os.pread``, not through the mapping: a page fault maps 64 KiB around the address,
# so with records 8-16 KiB apart most records paid one (13 us each on the 2-core VM: 4.1 k
# faults in h2-bodies4's 15.8 k records; a pread is ~2 us).  Closer records share their
# pages: mapped, as before.
FAR = 12 << 10


def _pcap_head(mm, magic: bytes) -> tuple[str, float, int, int]:
    """(byte order, timestamp resolution, snap length, link type) of a pcap's file header."""
    endian, resol = PCAP_MAGICS[magic]
    if len(mm) < 24:
        raise _Odd("header")
    _, _, _, _, _, snaplen, network = struct.unpack_from(endian + "IHHiIII", mm, 0)
    return endian, resol, snaplen, network & 0x0FFFFFFF


def _pcap(mm, magic: bytes, vector: bool | None = None, fd: int = -1, split: bool = False) -> Scan:
    """The pcap's scan; ``split``: its second half walked by a process of its own at the same
    time (``_pcap_split``), the same Scan."""
    endian, resol, snaplen, linktype = _pcap_head(mm, magic)
    sc = Scan("pcap", [Interface(linktype, snaplen, resol, tsdiv=1e6 if resol == 1e-6 else 1e9)])
    groups = _Groups(endian)
    size = len(mm)
    pos = _pcap_split(mm, magic, vector, fd, sc, groups) if split else 24
    if pos != size:  # (the whole walk, or the rest of it where the split could not be used)
        pos = _pcap_records(mm, magic, vector, fd, sc, groups, pos, size)
        if pos != size:
            raise _Odd("the file ends inside a record header")
    k = len(sc.ts)
    sc.linktype = array("i", [linktype]) * k
    sc.interface = array("I", [0]) * k
    sc.load = [groups.other, *groups.cost]  # (moved into worker loads by _assign)
    return sc


def _pcap_records(mm, magic: bytes, vector: bool | None, fd: int, sc: Scan, groups: _Groups, begin: int, stop: int) -> int:
    """Walk the pcap's records from the one at ``begin`` while they start before ``stop``,
    appending to ``sc`` and ``groups``; returns where the walk ended: ``stop`` when a record
    ends there, past it when one spans it (the file's end: ``size``)."""
    endian, resol, _snaplen, linktype = _pcap_head(mm, magic)
    size = len(mm)
    # the record header and the packet's first 47 bytes (Ethernet, IPv4, TCP ports and offset:
    # pipeline._analyze's fast path) in one unpack, in the record's byte order
    both = struct.Struct(endian + "IIII12xHBxH2xH1xB2xQI8xB")
    unpack, unpack_h, tail = both.unpack_from, struct.Struct(endian + "IIII").unpack_from, both.size
    memo, cost, new, slow = groups.memo, groups.cost, groups.new, groups.slow
    ETYPE, FRAG, SHORT = _fast(endian)
    eth, TCP = linktype == 1, PROTO_TCP
    ts_a, off_a, cap_a, orig_a, grp_a = sc.ts.append, sc.offset.append, sc.caplen.append, sc.origlen.append, sc.group.append
    pos, last, tail_last = begin, min(size, stop + 15) - 16, size - tail
    n0 = len(sc.ts)
    dropped, drop_at = begin & ~(mmap.PAGESIZE - 1), begin + _first_check(vector)
    far, pread = False, os.pread  # (far: records FAR apart on average so far: heads read by pread)
    while pos <= last:
        if pos >= drop_at:
            dropped = _drop(mm, dropped, pos)
            drop_at = pos + _DROP
            if _vectorise(vector, len(sc.ts) - n0, pos - begin, stop - pos):
                pos = _Vec(mm, sc, groups, endian).pcap(pos, dropped, resol, linktype, stop)
                break
            far = fd >= 0 and pos - begin >= FAR * (len(sc.ts) - n0)
        if pos <= tail_last:
            if far:
                sec, frac, caplen, origlen, etype, vihl, total, frag, proto, addrs, ports, doff = unpack(pread(fd, tail, pos))
            else:
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
        if eth and etype == ETYPE and proto == TCP and vihl == 0x45 and caplen >= 54 and not frag & FRAG and doff >= 0x50:
            if total not in SHORT:  # (the IP datagram holds the TCP header: pipeline's end >= 54)
                key = ports << 64 | addrs
                g = memo.get(key)
                if g is None:
                    g = new(key)
                cost[g] += c
                grp_a(g)
                continue
        grp_a(slow(linktype, mm[start:pos], c))
    return pos


# A pcap of SPLIT_MIN bytes or more scanned for 2 or more processes is walked in two halves at
# once: a process forked for it walks from the first record boundary after the middle
# (``_resync``: RESYNC_CHAIN records chained from it must read as plausible records) to the
# end, while this one walks from the start; a record chain is found only by walking it, so the
# half found by looking is proved by this walk landing on it exactly.  When it does not (a
# false boundary: bytes of some packet that read as records), or the other process fails,
# this one walks on to the end itself: the same Scan, only later.  The other half comes back
# as arrays through a pipe; its groups are this walk's where their 4-tuples are, new ones
# numbered after them in their order of first appearance, as one walk would have numbered them.
SPLIT_MIN = 24 << 20
RESYNC_WINDOW = 1 << 20  # bytes after the middle searched for a record boundary
RESYNC_CHAIN = 32


def _resync(mm, magic: bytes, at: int) -> int | None:
    """The first offset at or after ``at`` (within RESYNC_WINDOW) where RESYNC_CHAIN records
    (or all up to the file's end, at least 4) chain as plausible records: lengths the scan
    takes (origlen <= caplen <= 64 MiB), seconds within a year of the first record's, a
    fraction below a second."""
    endian, resol, _snaplen, _lt = _pcap_head(mm, magic)
    size = len(mm)
    if size < 40:
        return None
    head = struct.Struct(endian + "IIII").unpack_from
    t_ref = head(mm, 24)[0]
    frac_max = int(round(1 / resol))
    year = 366 * 86400
    for p in range(at, min(at + RESYNC_WINDOW, size - 16)):
        q, k = p, 0
        while k < RESYNC_CHAIN and q <= size - 16:
            sec, frac, cap, orig = head(mm, q)
            if abs(sec - t_ref) > year or frac >= frac_max or cap > 0x4000000 or cap < orig:
                break
            q += 16 + cap
            k += 1
        if q == size and k >= 4 or k == RESYNC_CHAIN and q <= size:
            return p
    return None


def _pcap_split(mm, magic: bytes, vector: bool | None, fd: int, sc: Scan, groups: _Groups) -> int:
    """Walk the pcap in two halves at once (see SPLIT_MIN); returns where the walk stands: the
    file's end with both halves in ``sc``, else where the caller walks on from (24 when it
    could not start: no boundary found, no process or pipe)."""
    import pickle

    size = len(mm)
    mid = _resync(mm, magic, size // 2)
    if mid is None or mid <= 24:
        return 24
    try:
        r, w = os.pipe()
    except OSError:
        return 24
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return 24
    if pid == 0:  # the other half, sent back as ("ok", columns, groups) or ("odd", why)
        code = 0
        try:
            os.close(r)
            half, hg = Scan("pcap", []), _Groups(PCAP_MAGICS[magic][0])
            c_start = time.process_time()
            msg: tuple
            try:
                end = _pcap_records(mm, magic, vector, fd, half, hg, mid, size)
                cols = {k: getattr(half, k) for k in ("ts", "offset", "caplen", "origlen", "group")}
                msg = ("ok", cols, hg.memo, hg.cost, hg.other, time.process_time() - c_start) \
                    if end == size else ("odd", "the file ends inside a record header")
            except (_Odd, struct.error, IndexError, OSError) as e:
                msg = ("odd", str(e))
            with os.fdopen(w, "wb", buffering=1 << 20) as f:
                pickle.dump(msg, f, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:  # noqa: BLE001 - this process's failure costs only time: the other walks on
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    back: tuple | None = None
    try:
        c0 = time.process_time()
        pos = _pcap_records(mm, magic, vector, fd, sc, groups, 24, mid)
        mine = time.process_time() - c0
        if pos == mid:  # (the walk proves the boundary: the other half is the file's)
            try:
                with os.fdopen(r, "rb") as f:
                    r = -1
                    back = pickle.load(f)
            except Exception:  # noqa: BLE001 - a broken stream: walked here
                back = None
    finally:
        if r >= 0:
            os.close(r)
        if back is None:  # (its half is of no use: not waited for)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
    if back is not None and back[0] == "odd":  # (from a true boundary: the one walk would have refused too)
        raise _Odd(back[1])
    if back is None or back[0] != "ok":
        return pos  # (walked on from here by the caller)
    _, cols, memo, cost, other, theirs = back
    sc.split = {"mine": mine, "theirs": theirs}
    lut: list[int | None] = [None] * len(cost)
    for key, h in memo.items():  # (a 4-tuple of both halves: this half's group)
        if lut[h] is None:
            lut[h] = groups.memo.get(key)
    for h, c in enumerate(cost):  # (the others: numbered in the order the other half first saw them)
        g = lut[h]
        if g is None:  # (no walk follows: the memo needs no keys of them)
            g = lut[h] = len(groups.cost)
            groups.cost.append(0)
        groups.cost[g] += c
    groups.other += other
    for c in ("ts", "offset", "caplen", "origlen"):
        getattr(sc, c).extend(cols[c])
    np = sys.modules.get("numpy")
    grp = cols["group"]
    if np is not None and len(grp) >= 1 << 16:
        table = np.array([*lut, -1], np.int32)  # (group -1, the last: not TCP)
        sc.group.frombytes(table[np.frombuffer(grp, grp.typecode)].astype(sc.group.typecode, copy=False).view(np.uint8))
    else:
        sc.group.extend(array(sc.group.typecode, (lut[g] if g >= 0 else -1 for g in grp)))  # type: ignore[misc]
    return size


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


def _pcapng(mm, vector: bool | None = None, fd: int = -1) -> Scan:
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
    ETYPE, FRAG, SHORT = _fast(endian)
    head = struct.Struct(endian + "II").unpack_from
    epb = struct.Struct(endian + "IIIII").unpack_from
    # an Enhanced Packet Block's header and the packet's first 47 bytes (as _pcap's)
    both = struct.Struct(endian + "IIIIIII12xHBxH2xH1xB2xQI8xB")
    unpack, tail = both.unpack_from, both.size
    ts_a, off_a, cap_a, orig_a, grp_a = sc.ts.append, sc.offset.append, sc.caplen.append, sc.origlen.append, sc.group.append
    lt_a, if_a = sc.linktype.append, sc.interface.append
    pos, tail_last, TCP = 0, size - tail, PROTO_TCP
    dropped, drop_at = 0, _first_check(vector) or 1  # (not before the section header block)
    far, pread = False, os.pread  # (as _pcap's)
    while pos < size:
        if pos >= drop_at:
            dropped = _drop(mm, dropped, pos)
            drop_at = pos + _DROP
            if _vectorise(vector, len(sc.ts), pos, size - pos):
                _Vec(mm, sc, groups, endian).pcapng(pos, dropped)
                break
            far = fd >= 0 and pos >= FAR * len(sc.ts)
        if pos + 12 > size:
            raise _Odd("block header")
        if pos <= tail_last:
            if far:
                btype, blen, iid, tshi, tslo, caplen, origlen, etype, vihl, total, frag, proto, addrs, ports, doff = unpack(
                    pread(fd, tail, pos))
            else:
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
            ts = ((tshi << 32) | tslo) / itf.tsdiv + itf.tsoffset
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
            if (etype == ETYPE and proto == TCP and vihl == 0x45 and caplen >= 54 and not frag & FRAG and doff >= 0x50
                    and itf.linktype == 1):
                if total not in SHORT:  # (as _pcap's)
                    key = ports << 64 | addrs
                    g = memo.get(key)
                    if g is None:
                        g = new(key)
                    cost[g] += c
                    grp_a(g)
                    continue
            grp_a(slow(itf.linktype, mm[start : start + caplen], c))
            continue
        _block(mm, pos, btype, blen, sc, endian, len(sc.ts))
        pos += blen  # (other blocks: skipped by length, as the reader does)
    sc.load = [groups.other, *groups.cost]
    return sc


def _block(mm, pos: int, btype: int, blen: int, sc: Scan, endian: str, packets: int) -> None:
    """A pcapng block other than an Enhanced Packet Block, its length checked; ``packets``
    before it."""
    if blen < PCAPNG_FIXED.get(btype, 12):  # the reader skips it with a warning: its own path
        raise _Odd("block shorter than its fixed fields")
    if btype == 0x0A0D0D0A:
        if pos:
            raise _Odd("a second section")
    elif btype == 1:  # Interface Description Block
        sc.interfaces.append(pcapng_interface(mm, pos, blen, endian, _options))
    elif btype == 0x0A:  # Decryption Secrets Block
        stype, slen = struct.unpack_from(endian + "II", mm, pos + 8)
        sc.secrets.append((packets, stype, bytes(mm[pos + 16 : pos + 16 + min(slen, blen - 20)])))
    elif btype == 5:  # Interface Statistics Block
        sc.interface_stats.append(pcapng_stats(mm, pos, blen, endian, _options))
    elif btype in (2, 3):  # obsolete and simple packet blocks: the reader's own path
        raise _Odd("packet block")


class _Vec:
    """The vectorised mode, from record ``pos`` on: the loop's results so far (in ``sc`` and
    ``groups``) continued, to the loop's own outcome.  Per chunk of about _CHUNK bytes:

    - a Python walk of the record chain that only collects where each record starts (pcap: its
      captured length read, through ``memoryview.cast`` where the file's byte order is the
      machine's; pcapng: each block's type and length, other blocks than EPBs handled as the
      loop handles them);
    - the records' first bytes gathered (one item of a void dtype a record) and read as a
      structured dtype: the loop's checks (one odd record: the whole scan is odd), its fast-path
      condition and its 4-tuple keys, on arrays;
    - groups numbered as the loop numbers them: the chunk's fast-path packets cut into runs of
      one key, the keys in order of first appearance, interleaved in file order with the slow
      path's packets (``_Groups.slow``, in Python); costs by ``np.bincount``;
    - the chunk's columns appended to the Scan's arrays, and its pages dropped (``_drop``).

    Chunks of _CHUNK bytes: the time is the same from 4 to 32 MiB, and the peak RSS lower, the
    pages mapped at once fewer (h2-big-mtu, 1.24 M packets: 71 MB, the loop's 78; 102 with 32 MiB
    chunks).  Columns kept per chunk and joined at the end were no faster, and their freed
    chunks stayed in the heap (a peak of 103 MB)."""

    def __init__(self, mm, sc: Scan, groups: _Groups, endian: str):
        np = numpy()
        self.np, self.mm, self.sc, self.groups, self.endian = np, mm, sc, groups, endian
        self.size = len(mm)
        self.count = len(sc.ts)  # packets so far

    def _casts(self, shift: int) -> tuple:
        """The mapping as four arrays of native 32-bit words, one for each alignment: ``[pos &
        3][pos >> 2]`` is the word at ``pos + shift``; none when the file's byte order is not
        the machine's.  (The first item: the memoryview they come from.)"""
        if self.endian != ("<" if sys.byteorder == "little" else ">"):
            return ()
        mv = memoryview(self.mm)
        size = self.size
        return (mv, *(mv[k + shift : k + shift + max(0, size - k - shift) // 4 * 4].cast("I") for k in range(4)))

    def _fields(self, names: list[str], offsets: list[int], packet: int):
        """A structured dtype: the record's header fields ``names`` at ``offsets`` (32-bit, the
        record's byte order), then the fast path's fields of the packet at ``packet`` (its first
        47 bytes, as the loop's unpack): in network byte order (type, lengths), or in the
        record's (the key's parts, as the loop reads them)."""
        np, e = self.np, self.endian
        pkt = ["etype", "vihl", "total", "frag", "proto", "addrs", "ports", "doff"]
        fmt = [">u2", "u1", ">u2", ">u2", "u1", e + "u8", e + "u4", "u1"]
        return np.dtype({"names": names + pkt, "formats": [e + "u4"] * len(names) + fmt,
                         "offsets": offsets + [packet + d for d in (12, 14, 16, 20, 23, 26, 34, 46)], "itemsize": packet + 47})

    def _rows(self, offs: list[int], dt):
        """The records at ``offs`` as ``dt`` (its itemsize bytes from each; zeros past the file's
        end, which only the last records reach: too short for the fast path)."""
        np, size, width = self.np, self.size, dt.itemsize
        o = np.array(offs, np.int64)
        v = np.dtype((np.void, width))
        # (a view of the mapping with an item at every byte: the gather copies each record's bytes)
        every = np.ndarray((size - width + 1,), v, self.mm, 0, (1,)) if size >= width else None
        full = o <= size - width
        if every is not None and full.all():
            return o, every[o].view(dt)
        out = np.zeros(len(o), v)
        if every is not None:
            out[full] = every[o[full]]
        rows = out.view(np.uint8).reshape(len(o), width)
        for i in np.flatnonzero(~full).tolist():
            b = self.mm[offs[i] : offs[i] + width]
            rows[i, : len(b)] = np.frombuffer(b, np.uint8)
        return o, out.view(dt)

    def _add(self, **cols) -> None:
        """A chunk's columns appended to the Scan's arrays (converted to their typecodes: the
        same C types)."""
        sc, u8 = self.sc, self.np.uint8
        for c, x in cols.items():
            a = getattr(sc, c)
            a.frombytes(x.astype(a.typecode, copy=False).view(u8))
        self.count += len(cols["ts"])

    def pcap(self, pos: int, dropped: int, resol: float, linktype: int, stop: int | None = None) -> int:
        """The records from ``pos`` while they start before ``stop`` (the file's end); returns
        where the walk ended (as ``_pcap_records``)."""
        np, mm, size = self.np, self.mm, self.size
        dt = self._fields(["sec", "frac", "caplen", "origlen"], [0, 4, 8, 12], 16)
        unpack = struct.Struct(self.endian + "I").unpack_from
        casts = self._casts(8)
        try:
            ms = casts[1:]
            last = size - 16 if stop is None else min(size, stop + 15) - 16
            while pos <= last:
                lim = min(last, pos + _CHUNK)
                offs: list[int] = []
                ap = offs.append
                if ms:
                    while pos <= lim:
                        ap(pos)
                        pos += 16 + ms[pos & 3][pos >> 2]
                else:
                    while pos <= lim:
                        ap(pos)
                        pos += 16 + unpack(mm, pos + 8)[0]
                if pos > size or pos > last and pos != size and last == size - 16:  # (a record past the file's end, or a
                    raise _Odd("record")  # file ending inside a record header; a walk that stops earlier may end anywhere)
                o, r = self._rows(offs, dt)
                cap = r["caplen"].astype(np.uint32)
                orig = r["origlen"].astype(np.uint32)
                if (cap > 0x4000000).any() or (cap < orig).any():
                    raise _Odd("record")
                start = o + 16
                grp = self._groups(r, linktype == 1, cap, start, linktype)
                self._add(ts=r["sec"].astype(np.float64) + r["frac"].astype(np.float64) * resol, offset=start, caplen=cap,
                          origlen=orig, group=grp)
                dropped = _drop(mm, dropped, pos)
        finally:
            for mv in reversed(casts):
                mv.release()
        return pos

    def pcapng(self, pos: int, dropped: int) -> None:
        mm, sc, size, e = self.mm, self.sc, self.size, self.endian
        dt = self._fields(["blen", "iid", "tshi", "tslo", "caplen", "origlen"], [4, 8, 12, 16, 20, 24], 28)
        head = struct.Struct(e + "II").unpack_from
        idb_at = [0] * len(sc.interfaces)  # packets before each interface's IDB (those before this mode: 0)

        def other(pos: int, btype: int, blen: int, k: int) -> int:
            """A block other than an EPB of 32 bytes or more (``k`` packets in the chunk before it)."""
            if blen < 12 or blen & 3 or blen > 0x4000000 or pos + blen > size:
                raise _Odd("block length")
            if btype == 6:
                raise _Odd("EPB")
            _block(mm, pos, btype, blen, sc, e, self.count + k)
            if btype == 1:
                idb_at.append(self.count + k)
            return pos + blen

        casts = self._casts(0)
        try:
            ms = casts[1:]
            last = size - 12
            while pos <= last:
                lim = min(last, pos + _CHUNK)
                offs: list[int] = []
                ap = offs.append
                if ms:
                    while pos <= lim:
                        m = ms[pos & 3]
                        j = pos >> 2
                        btype, blen = m[j], m[j + 1]
                        if btype == 6 and blen >= 32:  # (its other checks on the arrays)
                            ap(pos)
                            pos += blen
                        else:
                            pos = other(pos, btype, blen, len(offs))
                else:
                    while pos <= lim:
                        btype, blen = head(mm, pos)
                        if btype == 6 and blen >= 32:
                            ap(pos)
                            pos += blen
                        else:
                            pos = other(pos, btype, blen, len(offs))
                if pos > last and pos != size:
                    raise _Odd("block header")
                if offs:
                    self._epbs(offs, dt, idb_at)
                dropped = _drop(mm, dropped, pos)
        finally:
            for mv in reversed(casts):
                mv.release()
        if pos != size:
            raise _Odd("block header")

    def _epbs(self, offs: list[int], dt, idb_at: list[int]) -> None:
        """A chunk's Enhanced Packet Blocks, at ``offs``."""
        np, ifaces = self.np, self.sc.interfaces
        o, r = self._rows(offs, dt)
        blen = r["blen"].astype(np.int64)
        iid = r["iid"].astype(np.int64)
        known = np.searchsorted(np.array(idb_at, np.int64), np.arange(self.count, self.count + len(o)), side="right")
        if (blen & 3).any() or (blen > 0x4000000).any() or (iid >= known).any():  # (interfaces described before it)
            raise _Odd("EPB")
        lts = np.array([i.linktype for i in ifaces], np.int64)[iid]
        div = np.array([i.tsdiv for i in ifaces], np.float64)[iid]
        tsoff = np.array([float(i.tsoffset) for i in ifaces], np.float64)[iid]
        ticks = r["tshi"].astype(np.uint64) << np.uint64(32) | r["tslo"].astype(np.uint64)
        ts = ticks.astype(np.float64) / div + tsoff  # (divided: correctly rounded, as the record loop's)
        cap = np.minimum(r["caplen"].astype(np.int64), blen - 32)
        orig = r["origlen"].astype(np.int64)
        if not ((ts >= TS_MIN) & (ts <= TS_MAX)).all() or (cap < orig).any():
            raise _Odd("EPB time or length")
        start = o + 28
        grp = self._groups(r, lts == 1, cap, start, lts)
        self._add(ts=ts, offset=start, caplen=cap, origlen=orig, linktype=lts, interface=iid, group=grp)

    def _groups(self, r, eth, cap, start, linktype):
        """A chunk's groups (the costs added to ``self.groups``).  ``eth``: whether each record's
        (or every record's) link type is Ethernet; ``linktype``: each record's, or every one's."""
        np, mm, groups = self.np, self.mm, self.groups
        memo, new, slow, cost = groups.memo, groups.new, groups.slow, groups.cost
        total = r["total"]
        fast = ((cap >= 54) & (r["etype"] == 0x0800) & (r["proto"] == PROTO_TCP) & (r["vihl"] == 0x45)
                & ((r["frag"] & 0x3FFF) == 0) & (r["doff"] >= 0x50) & ((total < 20) | (total >= 40)) & eth)
        n = len(fast)
        grp = np.full(n, -1, np.int32)
        fi = np.flatnonzero(fast)
        m = len(fi)
        keys: list[int] = []  # the chunk's fast-path keys, in order of first appearance
        at: list[int] = []  # where each first appears
        num: list[int] = []  # each one's number in sorted order
        if m:
            rf = r if m == n else r[fi]
            a, p = rf["addrs"].astype(np.uint64), rf["ports"].astype(np.uint64)
            # runs of one key, then each key's first run
            head = np.empty(m, bool)
            head[0] = True
            np.not_equal(a[1:], a[:-1], out=head[1:])
            head[1:] |= p[1:] != p[:-1]
            heads = np.flatnonzero(head)
            ha, hp = a[heads], p[heads]
            order = np.lexsort((hp, ha))  # (stable: a key's runs in file order)
            sa, sp = ha[order], hp[order]
            newk = np.empty(len(order), bool)
            newk[0] = True
            newk[1:] = (sa[1:] != sa[:-1]) | (sp[1:] != sp[:-1])
            inv = np.empty(len(order), np.intp)
            inv[order] = np.cumsum(newk) - 1  # each run's key, by its number in sorted order
            first = order[newk]  # each key's first run
            by_first = np.argsort(first)
            keys = [pp << 64 | aa for pp, aa in zip(sp[newk][by_first].tolist(), sa[newk][by_first].tolist())]
            at = fi[heads[first[by_first]]].tolist()
            num = by_first.tolist()
        kg = [0] * len(keys)  # each key's group, by its number in sorted order
        j, nk = 0, len(keys)
        if m < n:
            si = np.flatnonzero(~fast)
            lts = linktype[si].tolist() if isinstance(linktype, np.ndarray) else [linktype] * len(si)
            sg = []
            for i, lt, s, c in zip(si.tolist(), lts, start[si].tolist(), cap[si].tolist()):
                while j < nk and at[j] < i:  # (the fast-path keys that first appear before it)
                    g = memo.get(keys[j])
                    kg[num[j]] = new(keys[j]) if g is None else g
                    j += 1
                sg.append(slow(lt, mm[s : s + c], c + PER_PACKET))
            grp[si] = sg
        for u in range(j, nk):
            g = memo.get(keys[u])
            kg[num[u]] = new(keys[u]) if g is None else g
        if m:
            gf = np.repeat(np.array(kg, np.int32)[inv], np.diff(heads, append=m))
            grp[fi] = gf
            w = np.bincount(gf, weights=cap[fi] + float(PER_PACKET))  # (exact: integers below 2**53)
            nz = np.flatnonzero(w)
            for g, v in zip(nz.tolist(), w[nz].tolist()):
                cost[g] += int(v)
        return grp


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
    """The 0-based indices of process ``k``'s packets, in file order (with numpy when it is
    loaded already, as the vectorised scan leaves it in the processes it forks: 1.24 M packets,
    65 ms in the generator, 10-15 with numpy, and a transient of 7 MB besides the result)."""
    wk = sc.worker
    np = sys.modules.get("numpy")
    if np is not None and len(sc.group) >= 1 << 16:
        mine = np.array([w == k for w in wk] + [k == 0])  # (group -1, the last: worker 0's)
        out = array("q")
        out.frombytes(np.flatnonzero(mine[np.frombuffer(sc.group, sc.group.typecode)]).astype(out.typecode, copy=False).view(np.uint8))
        return out
    if k == 0:
        return array("q", (i for i, g in enumerate(sc.group) if g < 0 or wk[g] == 0))
    return array("q", (i for i, g in enumerate(sc.group) if g >= 0 and wk[g] == k))
