"""Parallel analysis: the capture's connections sharded across worker processes, the model
merged so that the result is the serial one (``analyze(path, workers=N)``, ``--workers N``).

How (measured on 2 cores; see benchmarks/bench.py and benchmarks/parallel_accounting.py).
*Scanned* (an uncompressed pcap or pcapng file, the common case): before the fork the parent
walks the file's record headers and each packet's 4-tuple only (``analyzer.demux.scan``:
``mmap``, no packet bytes copied: 3-5 times less CPU than the packet loop it replaced) and
gives each TCP 4-tuple (either direction) to one of the N processes, longest first by
captured bytes; the parent is worker 0 itself (its share of the TCP connections, and every
packet that is not TCP: UDP for QUIC and DNS, the undecodable), the N-1 forked children the
rest.  Every process then runs the packet loop of ``pipeline._analyze`` over only its own
packets, read from the file by offset with the scan's record fields and the serial packet
numbers (``Shard._scanned``; pcapng Decryption Secrets Blocks before the next packet, as
the reader gives them; the pages read are given back every 64 MiB).  So no process decodes
a packet another decodes, and the parent ships nothing to the workers.  What the scan does
not take — a snap-length cut, an IPv4 fragment (stateful reassembly), anything the reader
itself warns about or handles off its plain path — goes the older way:
*Streamed*: the parent reads the file and demultiplexes it in its own run of the packet loop
and runs no TCP connection itself (only UDP: QUIC, DNS): every TCP packet
(``Shard.foreign``) is not decoded further there but handed to its connection's worker as a
40-byte record (packet number, file offset, lengths, time, link type, interface) through a
pipe, in batches, without blocking the parent (``_Feed``).  The N workers are forked
children that run the same loop over only the packets they are handed, read by offset.
A packet the parent reassembled from IPv4 fragments cannot be decoded from its last
fragment alone: a worker that meets one reports it, and the capture is analysed serially.
*Every worker reads* (a compressed capture, a live one): each worker reads the whole file and
drops another worker's TCP packets right after their 4-tuple is looked up.  In every mode
each worker sends its part back through a pipe as a stream of pickles (``_child``): the part,
then its frames and exchanges in chunks of tuples (each chunk a pickle of its own: no memo
keeps them alive), which the parent makes objects while the
worker builds and pickles the next (``_read_chunks``), so only the last chunk is left after it;
the cross-worker checks and the first half of the merge (connection ids, the index, the
per-connection dicts: ``_merge_heads``) are done from the parts' heads before the chunks.

Which connection goes where: scanned, the 4-tuples by cost (above; ``demux._assign``);
streamed, the parent gives a new TCP 4-tuple (either
direction) to the worker it has handed the fewest bytes so far (then the fewest connections);
otherwise the k-th distinct 4-tuple seen in the file goes to worker k mod N (every worker
sees the same packets in the same order, so every worker makes the same assignment without
talking to the others).  A port reused by a later
connection is the same 4-tuple, so the same worker (whose flow table splits it exactly as
the serial one does).  UDP (QUIC, DNS) and every other
packet go to worker 0: QUIC connection migration routes a datagram on a new path to its
connection by connection ID (``ctx.shared["quic_cids"]``), which only works where all QUIC
connections are.

The merge (``_merge``) rebuilds what the serial pass would have made:
- connection ids: the serial pass numbers connections in order of their first packet (a
  packet makes at most one), so the workers' connections sorted by first packet get their
  serial ids;
- frames and exchanges: the serial pass appends them while it handles a packet, then while
  it ends each flow (in the order the flows were made); each worker records after which
  packet (or flow end) its lists grew (``marks``), and the merge interleaves the workers'
  runs by that key.  Exchange ids are renumbered in that order (HTTP/1 frames name their
  exchange: renumbered too);
- the packet index: worker 0's, with each other worker's packets' connection and protocol
  written in (scanned: the time, offset, lengths, link type and interface columns are the
  scan's);
- offset maps, decrypted record lists, QUIC statistics: keyed by the new ids; notes and
  per-connection budgets stay with their connection.  Warnings, undecoded counts, capture
  format and interfaces are worker 0's (every worker reads the same file the same way).

What crosses connections, and what happens to it:
- the DNS lookups the waterfall matches to connections, the completeness summary: computed
  from the merged model, after the pass, as in the serial case;
- key-log state: every worker has the key log loaded before the fork and reads the same
  pcapng secrets blocks;
- TLS 1.2 resumption (``tls12_sessions``/``tls12_tickets`` caches): each worker records the
  session ids / tickets it stored and those it looked up in vain; if one worker looked up in
  vain what another stored (the serial pass could have found it), or two stored the same
  one, or together they stored more than the cache holds, the capture is analysed again
  serially;
- QUIC trial decryption of connections whose handshake the capture missed tries the
  secrets of client randoms no ClientHello claimed (``claimed_client_randoms``): if it
  tried one that a ClientHello in another worker claims (the serial pass may not have tried
  it, and each try costs the connection's trial budget), serial again;
- budgets per capture: each worker gets the capture's whole cap (and each connection its
  own, as in the serial pass); if a capture budget ran out in any worker, or the workers'
  peak use of one adds up to more than half its cap (a single unit of work charged at once
  — a decoder's output chunk, a header block — is far smaller than that), serial again:
  the serial pass may have refused work there;
- anything a worker cannot send back (an exception, an object pickle refuses): serial again.
``analysis.__dict__["_wf_parallel"]`` says which path gave the result and why ("parallel: 2
workers", "serial: …") and ``_wf_parallel_mode`` how ("streamed", "every worker reads"),
for tests; ``_wf_parallel_times`` the CPU seconds of each step in each process (the parent's
set-up, scan, pass, reading and unpickling of the parts, merge; each worker's pass, part and
pickling, and the parent's unpickling of it and of its last chunk), from which benchmarks/parallel_accounting.py computes the critical path on an idle
host (wall time on a shared one says little); ``WF_PARALLEL_TIMES=1`` prints them to stderr.
``requests_json`` (``requests --json -j N``) spreads the post-pass and the JSON over two
processes as well.
"""
from __future__ import annotations

import os
import struct
import sys
import time
from array import array
from collections import deque
from dataclasses import fields
from heapq import merge as _hmerge
from itertools import starmap
from operator import attrgetter

from .model import Analysis, Exchange, Frame

# Below this size a capture is analysed serially with ``workers="auto"``: forking and
# merging cost ~0.05-0.1 s, more than a small capture's analysis takes (measured: a 3 MB
# page load analyses in 0.1 s; a 34 MB request-heavy capture gains 1.4x with 2 workers).
AUTO_MIN_BYTES = 16 << 20

_FRAME_FIELDS = tuple(f.name for f in fields(Frame))
_EXCHANGE_FIELDS = tuple(f.name for f in fields(Exchange))
_frame_tuple = attrgetter(*_FRAME_FIELDS)
_exchange_tuple = attrgetter(*_EXCHANGE_FIELDS)
_F_CONN = _FRAME_FIELDS.index("connection")
_E_ID, _E_CONN = _EXCHANGE_FIELDS.index("id"), _EXCHANGE_FIELDS.index("connection")


class _WatchedCache(dict):
    """A TLS resumption cache that remembers what was stored and what was looked up in vain."""

    def __init__(self):
        super().__init__()
        self.stored: set = set()
        self.missed: set = set()

    def __setitem__(self, k, v):
        self.stored.add(k)
        super().__setitem__(k, v)

    def get(self, k, default=None):
        v = super().get(k, default)
        if v is default:
            self.missed.add(k)
        return v


class _WatchedSet(set):
    """``claimed_client_randoms``: remembers the client randoms asked about that it did not
    hold (the QUIC trial decryption's candidates)."""

    def __init__(self):
        super().__init__()
        self.offered: set = set()

    def __contains__(self, x):
        if super().__contains__(x):
            return True
        self.offered.add(x)
        return False


def _tracked_budget_class():
    from wirefall.dissectors.budget import Budget

    class Tracked(Budget):
        """A capture-level budget that keeps its peak use."""

        __slots__ = ("_u", "peak")

        def _get(self):
            return self._u

        def _set(self, v):
            self._u = v
            if v > self.peak:
                self.peak = v

        used = property(_get, _set)

        def __init__(self, name, cap, parent=None):
            self.peak = 0
            super().__init__(name, cap, parent)

    return Tracked


class Shard:
    """What ``pipeline._analyze`` asks of a worker: where its packets come from
    (``records``), which TCP 4-tuples are another worker's (``foreign``; in the streamed mode
    the parent hands such a packet to its worker there), and where it records its marks."""

    END = 1 << 40  # marks of the end-of-capture flow finishing come after every packet's

    def __init__(self, k: int, n: int, feeds: list | None = None, source: int | None = None, scan=None):
        self.k, self.n = k, n
        # scanned mode (analyzer.demux): every process reads only its own packets, numbered as
        # a streamed worker's are (``source`` -1: no pipe; pipeline._analyze numbers by ``pkt``)
        self.scan = scan
        if scan is not None:
            source = -1
        self.own: array | None = None  # (scanned: their 0-based numbers)
        self._memo: dict = {}  # directional 4-tuple -> its worker
        self._seen: dict = {}  # canonical 4-tuple -> worker
        self.moved: dict = {}  # flows-table key of a QUIC connection's new path -> the packet that made it
        self.marks: list = [(0, 0, 0)]
        self.ctx = None
        self.info = None
        # streamed mode (module docstring): the parent's feeds to workers 1… (index k-1), or
        # the read end a worker's packets come from; the packet numbers it was given
        self.feeds = feeds
        self.source = source
        self.pkt = 0  # (a streamed worker: the number of the packet ``records`` yielded last)
        self.numbers = array("q")

    def foreign(self, key, pkt: int = 0, rec=None) -> bool:
        if self.source is not None or self.scan is not None:  # a streamed worker is given only its own packets
            return False
        w = self._memo.get(key)
        if w is None:
            a, b = (key[0], key[1]), (key[2], key[3])
            canon = (a, b) if a <= b else (b, a)
            w = self._seen.get(canon)
            if w is None:
                fd = self.feeds
                if fd:  # streamed parent: runs no TCP connection itself (module docstring)
                    w = 1 + min(range(len(fd)), key=lambda i: (fd[i].bytes, fd[i].conns, i))
                    fd[w - 1].conns += 1
                else:
                    w = len(self._seen) % self.n
                self._seen[canon] = w
            self._memo[key] = self._memo[(key[2], key[3], key[0], key[1])] = w
        if w == self.k:
            return False
        feeds = self.feeds
        if feeds is not None and rec is not None:
            feed = feeds[w - 1]
            info = self.info
            if info is not None and len(info.secrets) > feed.secrets:  # pcapng secrets before this packet
                feed.send_secrets(info.secrets)
            feed.add(pkt, rec)
        return True

    def records(self, path: str, info, opener=None, inflate_budget=None):
        """The packets this worker's pass reads: the whole capture, or (a streamed worker)
        those its feed names, read from the file by offset (a plain file: no inflate budget)."""
        from .capture import read_capture

        if self.scan is not None:
            return self._scanned(path, info)
        if self.source is not None:
            return self._streamed(path, info)
        if self.feeds is None:
            return read_capture(path, info, opener, inflate_budget)
        return self._feeding(read_capture(path, info, opener, inflate_budget))

    def _feeding(self, recs):
        yield from recs
        self.close_feeds()  # (the workers need not wait for the parent's end of the pass)

    def close_feeds(self) -> None:
        for feed in self.feeds or ():
            feed.close()

    def _streamed(self, path: str, info):
        import mmap

        assert self.source is not None  # (records() asks only then)
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        rd = os.fdopen(self.source, "rb", buffering=1 << 20)
        unpack = _FEED_REC.iter_unpack
        numbers = self.numbers.append
        dropped = 0  # mapped pages below this offset are given back (RSS stays small)
        # the index stays addressable by packet number (sessions read a packet's time and
        # protocol there): other workers' packets are zeros, connection -2
        assert self.ctx is not None, "setup() before records()"
        idx = self.ctx.analysis.index
        cols = [(a, bytes(a.itemsize)) for a in (idx.ts, idx.offset, idx.caplen, idx.origlen, idx.linktype, idx.proto, idx.interface)]
        ts_col, conn_col, minus2 = idx.ts, idx.conn, array("i", [-2])
        try:
            while True:
                head = rd.read(5)
                if len(head) < 5:
                    return
                body = rd.read(int.from_bytes(head[1:], "little"))
                if head[0] == 83:  # b"S": a pcapng secrets block (type, data)
                    info.secrets.append((int.from_bytes(body[:4], "little"), body[4:]))
                    continue
                for pkt, roff, caplen, origlen, ts, linktype, iface in unpack(body):
                    gap = pkt - 1 - len(ts_col)
                    if gap > 0:
                        for a, zero in cols:
                            a.frombytes(zero * gap)
                        conn_col.extend(minus2 * gap)
                    self.pkt = pkt
                    numbers(pkt)
                    yield (ts, caplen, origlen, linktype, roff, mm[roff : roff + caplen], iface)
                if body and roff - dropped > _DROP_BYTES and isinstance(mm, mmap.mmap) and hasattr(mm, "madvise"):
                    upto = (roff // mmap.PAGESIZE) * mmap.PAGESIZE
                    mm.madvise(mmap.MADV_DONTNEED, dropped, upto - dropped)
                    dropped = upto
        finally:
            rd.close()


    def _scanned(self, path: str, info):
        """Scanned mode (analyzer.demux): this process's packets, read from the file by offset
        with the fields the scan found; the pcapng secrets blocks before each.  Of the index,
        the columns sessions read during the pass (time, protocol) and the connection stay
        addressable by packet number (other processes' packets: zeros, connection -2); the
        others hold only this process's packets until the merge puts the scan's in."""
        import mmap

        from .demux import FAR, own_packets

        sc = self.scan
        assert sc is not None and self.ctx is not None, "setup() before records()"
        info.format = sc.format
        info.interfaces.extend(sc.interfaces)
        info.interface_stats.extend(sc.interface_stats)
        own = self.own = own_packets(sc, self.k)
        if not own:
            return
        f = open(path, "rb")  # (kept open: a large packet is read by os.pread, see below)
        try:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except BaseException:
            f.close()
            raise
        # a packet of demux.FAR bytes or more is read by os.pread, not sliced out of the mapping
        # (as the scan reads far records): each page fault there maps 64 KiB (13 us on the 2-core
        # VM), one or more a packet of a large-segment capture (h2-bodies4: 2 k faults a
        # process); a pread is ~2 us
        fd, pread, big = f.fileno(), os.pread, FAR
        idx = self.ctx.analysis.index
        ts_col, conn_col, proto_col = idx.ts, idx.conn, idx.proto
        zero8, minus2 = bytes(8), array("i", [-2])
        secrets, si = sc.secrets, 0
        ns = len(secrets)
        T, O, C, OL, L, IF = sc.ts, sc.offset, sc.caplen, sc.origlen, sc.linktype, sc.interface
        dropped = 0  # mapped pages below this offset are given back (RSS stays small)
        try:
            for i in own:
                while si < ns and secrets[si][0] <= i:  # a pcapng secrets block before this packet
                    info.secrets.append(secrets[si][1:])
                    si += 1
                gap = i - len(ts_col)
                if gap:
                    ts_col.frombytes(zero8 * gap)
                    conn_col.extend(minus2 * gap)
                    proto_col.frombytes(bytes(gap))
                self.pkt = i + 1
                off, cl = O[i], C[i]
                yield (T[i], cl, OL[i], L[i], off, pread(fd, cl, off) if cl >= big else mm[off : off + cl], IF[i])
                if off - dropped > _DROP_BYTES and hasattr(mm, "madvise"):
                    upto = (off // mmap.PAGESIZE) * mmap.PAGESIZE
                    mm.madvise(mmap.MADV_DONTNEED, dropped, upto - dropped)
                    dropped = upto
            info.secrets.extend(s[1:] for s in secrets[si:])
        finally:
            mm.close()
            f.close()

    def setup(self, ctx, info=None) -> list:
        """Before the first packet: watched cross-connection state, tracked capture budgets."""
        from .sessions import CAPTURE_ID, CAPTURE_SUFFIX, CAPTURE_WIDE

        self.ctx = ctx
        self.info = info
        ctx.shared["tls12_sessions"] = _WatchedCache()
        ctx.shared["tls12_tickets"] = _WatchedCache()
        ctx.shared["claimed_client_randoms"] = _WatchedSet()
        tracked = _tracked_budget_class()
        names = {k[: -len(CAPTURE_SUFFIX)] if k.endswith(CAPTURE_SUFFIX) else k for k, v in ctx.limits.items()
                 if isinstance(v, int) and k not in CAPTURE_WIDE}  # (those: the reader's, the same in every worker)
        for name in names:
            cap = ctx.limits.get(name + CAPTURE_SUFFIX, ctx.limits.get(name, 1 << 62))
            ctx._budgets[(name, CAPTURE_ID)] = tracked(name, cap)
        return self.marks

    def facts(self) -> dict:
        """The cross-connection facts the merge checks (see the module docstring)."""
        from .sessions import CAPTURE_ID, CAPTURE_WIDE

        ctx = self.ctx
        assert ctx is not None, "facts() after start()"  # (once per worker)
        sh = ctx.shared
        budgets = {}
        for (name, cid), b in ctx._budgets.items():
            if cid == CAPTURE_ID and name not in CAPTURE_WIDE:  # (every worker reads the whole capture)
                budgets[name] = (b.hit, getattr(b, "peak", b.used), b.cap)
        return {"tls": {n: (set(sh[n].stored), set(sh[n].missed)) for n in ("tls12_sessions", "tls12_tickets")
                        if isinstance(sh.get(n), _WatchedCache)},
                "claimed": set(sh.get("claimed_client_randoms", ())),
                "offered": set(getattr(sh.get("claimed_client_randoms"), "offered", ())),
                "budgets": budgets}


_FEED_REC = struct.Struct("<qqIIdII")  # packet number, file offset, captured and original length, time, link type, interface
_FEED_BATCH = 2048  # records per message
_DROP_BYTES = 64 << 20


class _Feed:
    """The parent's end of the pipe to one streamed worker: its packets' records in batches,
    written without blocking (what the pipe does not take yet waits in ``pending``, so the
    parent's own pass never waits for a slower worker), and pcapng secrets blocks."""

    def __init__(self, fd: int):
        self.fd = fd
        self.batch: list[bytes] = []
        self.pending: deque = deque()
        self.secrets = 0
        self.broken = False
        self.bytes = 0  # captured bytes handed over so far, and connections: the parent balances by them
        self.conns = 0
        os.set_blocking(fd, False)
        try:
            import fcntl

            fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except (OSError, ImportError):
            pass

    def add(self, pkt: int, rec) -> None:
        ts, caplen, origlen, linktype, roff, _data, iface = rec
        self.bytes += caplen
        self.batch.append(_FEED_REC.pack(pkt, roff, caplen, origlen, ts, linktype, iface))
        if len(self.batch) >= _FEED_BATCH:
            self._push()

    def send_secrets(self, secrets: list) -> None:
        self._push()
        for stype, data in secrets[self.secrets:]:
            body = int(stype).to_bytes(4, "little") + bytes(data)
            self.pending.append(b"S" + len(body).to_bytes(4, "little") + body)
        self.secrets = len(secrets)
        self._drain()

    def _push(self) -> None:
        if self.batch:
            body = b"".join(self.batch)
            self.batch.clear()
            self.pending.append(b"R" + len(body).to_bytes(4, "little") + body)
            self._drain()

    def _drain(self) -> None:
        p = self.pending
        while p and not self.broken:
            head = p[0]
            try:
                n = os.write(self.fd, head)
            except BlockingIOError:
                return
            except OSError:  # the worker died: the parent finds out when it reads its part
                self.broken = True
                p.clear()
                return
            if n < len(head):
                p[0] = memoryview(head)[n:]
                return
            p.popleft()

    def close(self) -> None:
        if self.fd < 0:
            return
        self._push()
        os.set_blocking(self.fd, True)
        self._drain()
        try:
            os.close(self.fd)
        except OSError:
            pass
        self.fd = -1


def worker_count(workers, path: str) -> int:
    """``workers`` as a number: "auto" is the machine's cores for a capture of at least
    ``AUTO_MIN_BYTES`` (1 below), a number is itself (at least 1)."""
    if workers in (None, "", 0):
        return 1
    if isinstance(workers, str):
        if workers != "auto":
            return max(1, int(workers))
        try:
            big = os.path.getsize(path) >= AUTO_MIN_BYTES
        except OSError:
            big = False
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return max(1, n) if big else 1
    return max(1, int(workers))


_CHUNK_FRAMES = 8192  # frames (or exchanges) per message of a worker's part


def _part(an: Analysis, shard: Shard) -> dict:
    """What a worker sends back first: its connections, marks, its packets' connection and
    protocol, the per-connection dicts, the facts.  Its frames and exchanges follow in
    chunks of plain tuples (``_child``; tuples pickle ~5x faster than slotted dataclasses)."""
    idx = an.index
    conn, proto = idx.conn, idx.proto
    if shard.scan is not None:  # scanned: its own packets
        own: array | None = shard.own
    elif shard.source is not None:  # streamed: the packets it was given
        own = array("q", (n - 1 for n in shard.numbers))
    else:
        own = array("q", (i for i, c in enumerate(conn) if c != -2)) if shard.k else None
    np = sys.modules.get("numpy") if own is not None and len(own) >= _NP_INDEX else None
    own_conn: array | None
    own_proto: bytes | None
    if np is not None:  # (as the merge's _index_numpy: 0.1 s of a worker's CPU on 620 k packets, then 5 ms)
        at = np.frombuffer(own, dtype=np.int64)
        own_conn = array("i", np.frombuffer(conn, dtype=np.int32)[at].tobytes())
        own_proto = np.frombuffer(proto, dtype=np.uint8)[at].tobytes()
    else:
        own_conn = array("i", map(conn.__getitem__, own)) if own is not None else None
        own_proto = bytes(map(proto.__getitem__, own)) if own is not None else None
    frames = an.frames
    # (arrays and bytes pickle as one buffer each; lists of ints as an object per int)
    return {
        "connections": an.connections,
        # the frames that name their exchange (HTTP/1): the merge renumbers only those
        "named": array("q", (i for i, f in enumerate(frames) if type(f.fields) is dict and type(f.fields.get("exchange")) is int)),
        "marks": shard.marks,
        "own": own,
        "own_conn": own_conn,
        "own_proto": own_proto,
        "streamed": shard.source is not None and shard.scan is None,
        "maps": an.maps, "tls_records": an.tls_records, "quic_packets": an.quic_packets, "quic_stats": an.quic_stats,
        "budgets_hit": an.budgets_hit,
        "facts": shard.facts(),
    }


class _Counted:
    """A file that counts the bytes written to it (the accounting's part size)."""

    def __init__(self, f):
        self.f, self.n = f, 0

    def write(self, b) -> int:
        self.n += len(b)
        return self.f.write(b)


def _child(run, k: int, n: int, wfd: int, args, kw, source: int | None = None, scan=None) -> None:
    """A forked worker: analyse shard k, send the part, exit without cleanup.  The part goes
    as a stream of pickles: ("ok", the part), then ("fx", frames, exchanges) chunks as tuples,
    which the parent turns into objects while the next is built and pickled here, then
    ("end", CPU seconds); or ("error", why) on any failure.  Each message is a pickle of its
    own: a pickler's memo keeps every object it has written alive to its end (here, and in
    the parent's unpickler), so one memo over the stream kept every chunk's tuples — 30 MB
    in each process on 60 k requests.  A chunk holds the frames and the exchanges the pass
    made between the same two marks (``_chunks``), so the header list an exchange shares
    with its HEADERS frame is sent once (but for a response that ends in the next chunk)."""
    import pickle

    code = 0
    f = os.fdopen(wfd, "wb", buffering=1 << 16)
    try:
        c0 = time.process_time()
        shard = Shard(k, n, source=source, scan=scan)
        an = run(*args, shard=shard, **kw)
        c1 = time.process_time()
        part = _part(an, shard)
        c2 = time.process_time()
        cpu = {"pass": c1 - c0, "part": c2 - c1, "pickle": 0.0}
        out = _Counted(f)
        pickle.dump(("ok", part), out, protocol=pickle.HIGHEST_PROTOCOL)
        f.flush()
        cpu["pickle"] += time.process_time() - c2
        frames, exchanges = an.frames, an.exchanges
        for fr in frames:  # a FrameFields goes as (its class, *values): a plain tuple pickles ~7x faster (this process ends here)
            fl = fr.fields
            if fl is not None and type(fl) is not dict:
                fr.fields = (type(fl), *fl.values())  # type: ignore[assignment]
        for f0, f1, e0, e1 in _chunks(shard.marks, len(frames), len(exchanges)):
            c = time.process_time()
            chunk = ("fx", list(map(_frame_tuple, frames[f0:f1])), list(map(_exchange_tuple, exchanges[e0:e1])))
            c3 = time.process_time()
            pickle.dump(chunk, out, protocol=pickle.HIGHEST_PROTOCOL)
            f.flush()
            del chunk
            cpu["part"] += c3 - c
            cpu["pickle"] += time.process_time() - c3
        cpu["bytes"] = out.n
        pickle.dump(("end", cpu), out, protocol=pickle.HIGHEST_PROTOCOL)
        f.flush()
    except BaseException as e:  # noqa: BLE001 - any failure: the parent analyses serially
        code = 1
        try:  # (after a part of the stream the parent reads a broken stream: the same outcome)
            pickle.dump(("error", f"{type(e).__name__}: {e}"[:300]), f)
            f.flush()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        try:
            f.close()
        finally:
            os._exit(code)


def _chunks(marks: list, nf: int, nx: int):
    """(f0, f1, e0, e1): the slices of a worker's frames and exchanges sent as one message,
    at least ``_CHUNK_FRAMES`` of them together (but the last), cut at marks (made between
    the same packets)."""
    f0 = e0 = 0
    for _, f1, e1 in [*marks[1:], (None, nf, nx)]:
        if f1 - f0 + e1 - e0 >= _CHUNK_FRAMES or (f1, e1) == (nf, nx) and (f1 > f0 or e1 > e0):
            yield f0, f1, e0, e1
            f0, e0 = f1, e1


def _read_head(f):
    """The first message of a worker's stream (``_child``): ("ok", its part without frames and
    exchanges) or ("error", why)."""
    import pickle

    try:
        c = time.process_time()  # (waiting for the worker costs no CPU)
        res = pickle.load(f)
        if res[0] == "ok":
            res[1]["cpu_head"] = time.process_time() - c
        return res
    except Exception:  # noqa: BLE001 - a stream cut short: the worker died
        return ("error", "worker died")


def _read_chunks(f, part: dict, rm: dict):
    """The rest of a worker's stream: its frames and exchanges made objects (their connections
    the serial ids, ``rm``) chunk by chunk as they arrive, while the worker builds and pickles
    the next; ("error", why) if the worker failed or died.  Its CPU here: ``unpickle`` in all,
    ``tail`` after the last chunk came (what is left when the worker is done: the
    accounting's serial part)."""
    import pickle

    frames: list = []
    exchanges: list = []
    try:
        c0 = c = last = time.process_time()
        while True:
            last, c = c, time.process_time()  # (the start of the last chunk: its objects are the tail)
            msg = pickle.load(f)
            tag = msg[0]
            if tag == "fx":
                k = len(frames)
                frames += starmap(Frame, msg[1])
                for fr in frames[k:]:
                    fr.connection = rm[fr.connection]
                    fl = fr.fields
                    if type(fl) is tuple:  # a FrameFields as _child sent it
                        fr.fields = fl[0](*fl[1:])
                k = len(exchanges)
                exchanges += starmap(Exchange, msg[2])
                for e in exchanges[k:]:
                    e.connection = rm[e.connection]
                del msg
            elif tag == "end":
                cpu = msg[1]
                break
            else:
                return msg
        c1 = time.process_time()
    except Exception:  # noqa: BLE001 - a stream cut short: the worker died
        return ("error", "worker died")
    part["frames"], part["exchanges"] = frames, exchanges
    cpu["unpickle"], cpu["tail"] = c1 - c0 + part.pop("cpu_head", 0.0), c1 - last
    part["cpu"] = cpu
    return ("ok", part)


def analyze_parallel(run, workers, path: str, *args, **kw) -> Analysis:
    """``run`` is ``pipeline._analyze``.  Serial when there is one worker, when asked for
    what only the serial pass gives (``tcp_session``, ``on_start``: a view that shows the
    index while it grows), where fork is missing, or when the merge finds the shards could
    differ from the serial pass (module docstring)."""
    if args:  # (_analyze's positional parameters after the path, by name: the key logs given by
        # position were passed on beside the key log loaded below, which _analyze prefers)
        import inspect

        names = list(inspect.signature(run).parameters)[1 : 1 + len(args)]
        kw.update(zip(names, args))
        args = ()
    n = worker_count(workers, path)
    if n <= 1 or kw.get("tcp_session") is not None or kw.get("on_start") is not None or not hasattr(os, "fork"):
        an = run(path, *args, **kw)
        an.__dict__["_wf_parallel"] = "serial: one worker" if n <= 1 else "serial: not shardable"
        return an
    c_start = time.process_time()
    if kw.get("keylog") is None:  # load the key log once, before the fork (every worker reads the same)
        from .keylog import load_keylog

        kw["keylog"] = load_keylog(kw.pop("keylogs", None), limits=kw.get("limits"))
        kw.pop("keylogs", None)
    import copy

    pristine = copy.deepcopy(kw["keylog"])  # for a serial rerun: the pass adds pcapng secrets blocks to the key log

    def serially(why: str) -> Analysis:
        """The serial pass after all, with the key log as it was loaded (not read again)."""
        kw.pop("keylog", None)
        an = run(path, *args, keylog=pristine, **kw)
        an.__dict__["_wf_parallel"] = f"serial: {why}"[:300]
        return an

    kids: list = []
    plain = kw.get("opener") is None and _plain_capture(path)
    sc = None
    c_scan0 = time.process_time()
    if plain and os.environ.get("WF_PARALLEL_MODE") != "streamed":  # (the variable: tests of the older path)
        from .demux import scan

        sc = scan(path, n)
    c_scan = time.process_time()
    # (two halves walked at once: the longer is on the scan's critical path, as if walked here)
    c_other = max(sc.split["theirs"] - sc.split["mine"], 0.0) if sc is not None and sc.split else 0.0
    feeds: list | None = [] if plain and sc is None else None
    # scanned: the parent is worker 0 of n, each reading its own packets by the scan;
    # streamed: the parent only reads and demultiplexes (and runs UDP: QUIC, DNS), n workers
    # run every TCP connection; otherwise the parent is worker 0 of n, every worker reads all
    shards = n + 1 if feeds is not None else n
    sys.stdout.flush()
    sys.stderr.flush()
    for k in range(1, shards):
        opened: list[int] = []
        try:
            r, w = os.pipe()
            opened += (r, w)
            fr = fw = None
            if feeds is not None:
                fr, fw = os.pipe()
                opened += (fr, fw)
            pid = os.fork()
        except OSError as e:  # (no pipe or process to be had: the workers forked so far are stopped, the pass serial)
            for fd in opened + [rr for _, rr in kids] + [f.fd for f in feeds or ()]:
                try:
                    os.close(fd)
                except OSError:
                    pass
            for kid, _ in kids:
                _reap(kid, -1, kill=True)
            return serially(f"{type(e).__name__}: {e}")
        if pid == 0:  # the child
            os.close(r)
            for _, rr in kids:
                os.close(rr)
            for f in feeds or ():
                os.close(f.fd)
            if fw is not None:
                os.close(fw)
            kw_child = dict(kw, progress=None)
            _child(run, k, shards, w, (path, *args), kw_child, fr, sc)
        os.close(w)
        if feeds is not None and fr is not None and fw is not None:
            os.close(fr)
            feeds.append(_Feed(fw))
        kids.append((pid, r))
    shard = Shard(0, shards, feeds=feeds, scan=sc)
    err = None
    t0 = _now()
    c0 = time.process_time()
    try:
        an = run(path, *args, shard=shard, **kw)
    except BaseException:
        for pid, r in kids:
            _reap(pid, r, kill=True)
        raise
    shard.close_feeds()  # (done when the parent's reading ended; a no-op here then)
    t1 = _now()
    c1 = time.process_time()

    # each worker's stream: its head first (connections, index entries, dicts, facts), then
    # chunks of frames and exchanges (``_child``).  With every head in, the cross-worker
    # checks and the first half of the merge (ids, index, dicts) are done while the workers
    # still pickle their chunks; the chunks are made objects as they come
    streams = [(pid, os.fdopen(r, "rb")) for pid, r in kids]
    parts: list = []
    for _, fs in streams:
        res = _read_head(fs)
        if res[0] != "ok":
            err = err or res[1]
        parts.append(res[1])
    if not err:
        err = next((f"a packet handed to worker {k} did not decode there (IPv4 fragments of TCP)" for k, p in enumerate(parts, 1)
                    if p.get("streamed") and p["own_conn"] and min(p["own_conn"]) < 0), None)
    why = err or _unshardable(shard.facts(), [p["facts"] for p in parts if isinstance(p, dict)])
    if not why:
        remap = _merge_heads(an, shard, parts)
        for i, (_, fs) in enumerate(streams):
            res = _read_chunks(fs, parts[i], remap[i + 1])
            if res[0] != "ok":
                why = res[1]
                break
    for pid, f in streams:
        f.close()
        _reap(pid, -1, kill=bool(why))
    t2 = _now()
    c2 = time.process_time()
    if why:
        return serially(why)
    _merge(an, shard, parts)
    c3 = time.process_time()
    an.__dict__["_wf_parallel"] = f"parallel: {n} workers"
    an.__dict__["_wf_parallel_mode"] = "scanned" if sc is not None else "streamed" if feeds is not None else "every worker reads"
    # the CPU accounting (benchmarks/parallel_accounting.py): the parent's seconds before the
    # pass (key log, fork), its pass, reading and unpickling the parts, the merge; each
    # worker's pass, the part built, pickled (and unpickled by the parent)
    times: dict = {
        "setup": c0 - c_start + c_other, "scan": c_scan - c_scan0 + c_other, "parent_pass": c1 - c0, "parent_pass_wall": t1 - t0, "wait_wall": t2 - t1,
        "read_parts": c2 - c1, "merge": c3 - c2, "workers": [p["cpu"] for p in parts]}
    an.__dict__["_wf_parallel_times"] = times
    if os.environ.get("WF_PARALLEL_TIMES"):
        print(f"parallel: parent pass {t1 - t0:.2f} s ({times['parent_pass']:.2f} s CPU), waiting for and reading the others "
              f"{t2 - t1:.2f} s ({times['read_parts']:.2f} s CPU), merge {times['merge']:.2f} s CPU; workers' CPU "
              "(pass, part, pickle, unpickle here): "
              + ", ".join(f"({w['pass']:.2f}, {w['part']:.2f}, {w['pickle']:.2f}, {w['unpickle']:.2f})" for w in times["workers"]),
              file=sys.stderr)
    return an


def _plain_capture(path: str) -> bool:
    """An uncompressed pcap or pcapng file: its packets can be read by offset (streamed mode)."""
    from .capture import PCAP_MAGICS, PCAPNG_SHB

    try:
        with open(path, "rb") as f:
            import stat

            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return False
            head = f.read(4)
    except OSError:
        return False
    return head in PCAP_MAGICS or head == PCAPNG_SHB


def _now() -> float:
    return time.monotonic()


def _reap(pid: int, r: int, kill: bool = False) -> None:
    import signal

    try:
        if kill:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass
    try:
        os.close(r)
    except OSError:
        pass


def _unshardable(mine: dict, others: list[dict]) -> str | None:
    """Why the shards' result could differ from the serial pass's (None: it cannot)."""
    from .sessions.tls import MAX_SESSION_CACHE

    facts = [mine, *others]
    for name in ("tls12_sessions", "tls12_tickets"):
        stored = [f["tls"].get(name, (set(), set()))[0] for f in facts]
        missed = [f["tls"].get(name, (set(), set()))[1] for f in facts]
        if sum(map(len, stored)) > MAX_SESSION_CACHE:
            return f"{name}: more entries than the cache holds"
        for i, s in enumerate(stored):
            for j, t in enumerate(stored):
                if i < j and s & t:
                    return f"{name}: one session stored by connections of two workers"
            for j, m in enumerate(missed):
                if i != j and s & m:
                    return f"{name}: a resumption of a session another worker's connection made"
    for i, f in enumerate(facts):  # (QUIC sessions are all worker 0's)
        if f["offered"] and any(f["offered"] & g["claimed"] for j, g in enumerate(facts) if j != i):
            return "QUIC trial decryption tried client randoms that TLS connections of another worker claim"
    for name, (hit, peak, cap) in mine["budgets"].items():
        total = peak
        for f in others:
            h, p, _ = f["budgets"].get(name, (False, 0, cap))
            hit = hit or h
            total += p
        if hit:
            return f"budget {name} for the capture ran out in a worker"
        if total > cap // 2:
            return f"budget {name}: the workers together used more than half the capture's"
    return None


def _merge_heads(an: Analysis, shard: Shard, heads: list[dict]) -> list[dict[int, int]]:
    """The merge's first half (module docstring), from the workers' heads alone: connection
    ids (and worker 0's frames and exchanges renamed to them), the packet index, the
    per-connection dicts.  Returns, per worker, its connection ids -> the serial ones."""
    allp = [{"connections": an.connections}, *heads]
    # connection ids: serial order is first-packet order
    order = sorted(((c.first_packet, w, c.id) for w, p in enumerate(allp) for c in p["connections"]))
    remap: list[dict[int, int]] = [{} for _ in allp]  # per worker: local id -> serial id
    conns = []
    for gid, (_fp, w, lid) in enumerate(order):
        remap[w][lid] = gid
        c = allp[w]["connections"][lid]
        c.id = gid
        conns.append(c)
    an.connections[:] = conns
    rm0 = remap[0]
    for f in an.frames:  # (the other workers' get theirs as they come: _read_chunks)
        f.connection = rm0[f.connection]
    for e in an.exchanges:
        e.connection = rm0[e.connection]
    # the packet index: the parent's, with the workers' packets written in
    idx = an.index
    sc = shard.scan
    if sc is not None:  # scanned: the parent's columns held its own packets (Shard._scanned)
        k = len(sc) - len(idx.conn)
        idx.conn.extend(array("i", [-2]) * k)
        idx.proto.frombytes(bytes(k))
        idx.ts, idx.offset, idx.caplen, idx.origlen, idx.linktype, idx.interface = (
            sc.ts, sc.offset, sc.caplen, sc.origlen, sc.linktype, sc.interface)
    np = sys.modules.get("numpy") if len(idx.conn) >= _NP_INDEX else None
    holes = _index_numpy(np, idx, allp, remap) if np is not None else _index(idx, allp, remap)
    if holes:  # (every packet belongs to one worker)
        raise AssertionError(f"parallel merge: {holes} packets have no worker")
    # per-connection dicts, keyed by the serial ids
    def rekey(d: dict, rm: dict) -> dict:
        return {((rm[k[0]], *k[1:]) if isinstance(k, tuple) else rm[k]): v for k, v in d.items()}

    maps, recs, qp, qs = {}, {}, {}, {}
    hit: dict = {}
    for w, p in enumerate(allp):
        src = an if w == 0 else None
        rm = remap[w]
        maps.update(rekey(src.maps if src else p["maps"], rm))
        recs.update(rekey(src.tls_records if src else p["tls_records"], rm))
        qp.update(rekey(src.quic_packets if src else p["quic_packets"], rm))
        qs.update(rekey(src.quic_stats if src else p["quic_stats"], rm))
        for name, cids in (src.budgets_hit if src else p["budgets_hit"]).items():
            hit.setdefault(name, []).extend(rm.get(c, c) for c in cids)
    an.maps = dict(sorted(maps.items(), key=lambda kv: (kv[0][0], len(kv[0]), kv[0][1:2])))
    an.tls_records = dict(sorted(recs.items()))
    an.quic_packets = dict(sorted(qp.items()))
    an.quic_stats = dict(sorted(qs.items()))
    an.budgets_hit = {name: sorted(set(hit[name])) for name in sorted(hit)}  # (the capture's, -1, from every worker)
    return remap


# from this many packets the index is merged with numpy, when it is loaded (as the vectorised
# scan leaves it: analyzer.demux): the loops below took 0.2 s of the parent's CPU on 1.24 M packets
_NP_INDEX = 1 << 16


def _index(idx, allp: list[dict], remap: list[dict[int, int]]) -> int:
    """The packet index's connection column in serial ids (worker 0's, then every other
    worker's packets' connection and protocol written in); returns how many packets no worker
    took (0)."""
    rm0 = remap[0]
    table = [rm0[i] for i in range(len(rm0))]
    conn_a = idx.conn = array("i", [table[c] if c >= 0 else c for c in idx.conn])
    proto_a = idx.proto
    holes = conn_a.count(-2)
    for w in range(1, len(allp)):
        p, rm = allp[w], remap[w]
        own, own_conn = p["own"], p["own_conn"]
        holes -= sum(1 for i in own if conn_a[i] == -2)
        for i, c in zip(own, own_conn):
            conn_a[i] = rm[c] if c >= 0 else c
        for i, pr in zip(own, p["own_proto"]):
            proto_a[i] = pr
    return holes


def _index_numpy(np, idx, allp: list[dict], remap: list[dict[int, int]]) -> int:
    """``_index`` with numpy (the same columns; tests/test_parallel.py holds them equal)."""

    def mapped(col, rm: dict[int, int]):  # local connection ids -> serial ones (negative: kept)
        c = np.frombuffer(col, dtype=np.int32) if len(col) else np.zeros(0, np.int32)
        table = np.array([rm[i] for i in range(len(rm))] or [0], dtype=np.int32)
        return np.where(c >= 0, table[np.clip(c, 0, len(table) - 1)], c)

    conn = mapped(idx.conn, remap[0])
    proto = np.frombuffer(idx.proto, dtype=np.uint8) if len(idx.proto) else np.zeros(0, np.uint8)  # (written in place)
    holes = int(np.count_nonzero(conn == -2))
    for w in range(1, len(allp)):
        p = allp[w]
        own = np.frombuffer(p["own"], dtype=np.int64) if len(p["own"]) else np.zeros(0, np.int64)
        holes -= int(np.count_nonzero(conn[own] == -2))
        conn[own] = mapped(p["own_conn"], remap[w])
        proto[own] = np.frombuffer(p["own_proto"], dtype=np.uint8)
    del proto  # (the column's buffer is free to grow again)
    idx.conn = array("i", conn.astype(np.int32).tobytes())
    return holes


def _merge(an: Analysis, shard: Shard, parts: list[dict]) -> None:
    """The merge's second half (after ``_merge_heads``; module docstring): frames and
    exchanges, whose connections are the serial ids already, interleaved by the packet (or
    flow end) that made them, as runs (slices of each worker's lists); exchange ids renumbered."""
    mine = {"frames": an.frames, "exchanges": an.exchanges, "marks": shard.marks}
    allp = [mine, *parts]
    wf: list[list] = []
    wx: list[list] = []
    named: list = []  # per worker: the frames whose fields name their exchange (HTTP/1), renumbered below
    for w, p in enumerate(allp):
        fo, xo = p["frames"], p["exchanges"]  # (a worker's: made objects as they came, _read_chunks)
        if w == 0:
            nm = [f for f in fo if type(f.fields) is dict and type(f.fields.get("exchange")) is int]  # (a FrameFields names none)
        else:
            nm = list(map(fo.__getitem__, p["named"]))
        wf.append(fo)
        wx.append(xo)
        named.append(nm)
    runs = []
    for w, p in enumerate(allp):
        mk = p["marks"]
        runs.append([(mk[i][0], w, mk[i - 1][1], mk[i][1], mk[i - 1][2], mk[i][2]) for i in range(1, len(mk))
                     if mk[i][1] != mk[i - 1][1] or mk[i][2] != mk[i - 1][2]])
    frames: list = []
    exchanges: list = []
    ex_new: list[dict[int, int]] = [{} for _ in allp]  # per worker: local exchange id -> serial id
    for _key, w, f0, f1, e0, e1 in _hmerge(*runs):
        if f1 > f0:
            frames += wf[w][f0:f1]
        if e1 > e0:
            xm = ex_new[w]
            for e in wx[w][e0:e1]:
                xm[e.id] = nid = len(exchanges) + 1
                e.id = nid
                exchanges.append(e)
    if len(frames) != sum(map(len, wf)) or len(exchanges) != sum(map(len, wx)):
        raise AssertionError("parallel merge lost frames or exchanges")  # (a bug: never a silent loss)
    for w, nm in enumerate(named):  # HTTP/1 frames' fields["exchange"]: the worker's exchange id -> the serial one
        xm = ex_new[w]
        for f in nm:
            fl = f.fields
            fl["exchange"] = xm.get(fl["exchange"], fl["exchange"])
    an.frames[:] = frames
    an.exchanges[:] = exchanges


# ------------------------------------------------------------------ the output, in parallel

# exchanges per chunk of ``requests_json``'s output (~300 KB of JSON): small enough for the
# encoder's buffer to be reused, as jsonout._BATCH (at 1024, ~2.5 MB, the JSON step of -j2 took
# 0.33 s on h2-requests, at 128 0.29 s)
_CHUNK = 128
# the forked child's share of the chunks (the first among them): it encodes from the fork on,
# while the parent computes the page first; measured balanced on h2-small and h2-requests
# (session 32, CPU, least of 3: at 3/5 the child's JSON less the parent's page_of was 0.18 and
# 0.20 s against the parent's 0.15 and 0.16; at 0.55 0.15/0.17 against 0.16/0.16 — the JSON's
# critical path 0.03 s shorter; at 0.5 the parent's 0.17/0.18 was the longer again)
_CHILD_SHARE = 0.55


class _NoBackground:
    """The page a chunk is encoded with before the page is known: no request background."""

    background: dict = {}


def _child_chunks(k: int, share: float) -> list[int]:
    """The chunks of ``k`` the child encodes: ``share`` of them, spread evenly, chunk 0 first."""
    from math import ceil

    return [i for i in range(k) if ceil((i + 1) * share) > ceil(i * share)]


def requests_json(an: Analysis, exs: list[Exchange], n: int, out=None, chunk: int = _CHUNK) -> None:
    """``wirefall requests --json``'s output (``exs`` in the order listed) and a newline on
    ``out`` (stdout): the bytes ``jsonout.dump`` writes.  With 2 or more workers (and more than
    one chunk of ``chunk`` exchanges) the post-pass and the JSON take two cores: the parent
    plans the waterfall and the rows' starts and phases (``jsonout.PhasePlan``) and forks
    once; from there the child encodes its share of the chunks (``_child_chunks``) as if no
    request were background, into a memory file (``memfd``; a pipe would stall it until the
    parent reached the chunk in the output), and says where each one is through a pipe, while
    the parent computes ``page_of`` and then encodes the other chunks.  The parent writes every
    chunk in order: the child's copied from the memory file, unless one of its requests is
    background (then encoded again with the page).  A child that fails costs only time: the
    parent encodes what it did not get.  (Measured before: a child that computed the page
    first, and sent its chunks through a pipe, left the parent waiting, for no gain.)"""
    from .jsonout import PhasePlan, _encode, dump, exchange_dict
    from .waterfall import page_of

    out = out if out is not None else sys.stdout

    def serial(plan) -> None:
        page = page_of(an, plan.exs, starts=plan.starts())
        dump(plan.dicts(exs, page), out)
        out.write("\n")

    if n <= 1 or not hasattr(os, "fork") or len(exs) <= chunk:
        serial(PhasePlan(an, exs))  # (the waterfall planned once for the page and the phases)
        return
    out.flush()
    sys.stderr.flush()
    c0 = time.process_time()
    plan = PhasePlan(an, exs)  # (before the fork: the child reads its phases, the parent its starts for the page)
    starts = plan.starts()
    k = (len(exs) + chunk - 1) // chunk
    theirs = _child_chunks(k, _CHILD_SHARE)

    def encode(i: int, pg) -> memoryview:
        """Chunk i's elements at the list's indent: what ``dump`` writes of them, its "[\n"
        and "\n]" cut off (one encoder call; a view of its bytes: no copy of megabytes)."""
        phases_of = plan.phases_of
        return memoryview(_encode([exchange_dict(e, shared=True, phases=phases_of(e), page=pg)
                                   for e in exs[i * chunk : (i + 1) * chunk]]))[2:-2]

    rec = struct.Struct("<qqq")  # chunk, offset, length; (-1, CPU ns, 0) at the end
    forked = _fork_to_memory_file("wirefall-json")
    if forked is None:  # (no memory file, pipe or process to be had: serially, as with one worker)
        serial(plan)
        return
    mfd, r, w, pid = forked
    if pid == 0:  # the child: its chunks into the memory file, as if no request were background
        code = 0
        try:
            os.close(r)
            c = time.process_time()
            at = 0
            for i in theirs:
                b = encode(i, _NoBackground)
                done = 0
                while done < len(b):
                    done += os.write(mfd, b[done:])
                os.write(w, rec.pack(i, at, len(b)))
                at += len(b)
            os.write(w, rec.pack(-1, int((time.process_time() - c) * 1e9), 0))
        except BaseException:  # noqa: BLE001 - the parent encodes what it did not get
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    c1 = time.process_time()
    write = out.buffer.write if hasattr(out, "buffer") else out.write
    try:  # the child's chunks go from the memory file to the output without a copy here, where both are files
        out_fd = out.buffer.fileno() if hasattr(out, "buffer") and hasattr(os, "sendfile") else -1
    except (OSError, ValueError, AttributeError):
        out_fd = -1
    child_cpu = wait = 0.0
    try:
        with os.fdopen(r, "rb") as f:
            page = page_of(an, plan.exs, starts=starts)
            c2 = time.process_time()
            bg = page.background
            got = {}  # chunk -> (offset, length), as the child says
            mine = set(theirs)
            for i in range(k):
                pos = None  # (where the child put chunk i, if it is the child's to write)
                if i in mine:
                    t = time.perf_counter()
                    while i not in got:
                        m = f.read(rec.size)
                        j, at, ln = rec.unpack(m) if len(m) == rec.size else (-2, 0, 0)
                        if j < 0:
                            child_cpu = at / 1e9 if j == -1 else child_cpu
                            mine.clear()  # (the child is done or died: the rest of its chunks are encoded here)
                            break
                        got[j] = (at, ln)
                    wait += time.perf_counter() - t
                    pos = got.pop(i, None)
                    if pos is not None and bg and any(e.id in bg for e in exs[i * chunk : (i + 1) * chunk]):
                        pos = None  # (encoded again, with the page)
                write(b",\n" if i else b"[\n")
                if pos is not None:
                    done = _copy(mfd, pos[0], pos[1], out_fd, out, write)
                    if done == pos[1]:
                        continue
                    if done:  # (a part of it is out: no way back)
                        raise OSError("the JSON of a chunk could not be copied from the child's memory file")
                write(encode(i, page))
            if mine:  # (the child's CPU, for the accounting: it is done, or it is no more)
                m = f.read(rec.size)
                j, at, _ = rec.unpack(m) if len(m) == rec.size else (-2, 0, 0)
                child_cpu = at / 1e9 if j == -1 else child_cpu
    except BaseException:  # (the output closed, say: the child's work is of no use)
        _reap(pid, -1, kill=True)
        raise
    finally:
        _reap(pid, -1)  # (a no-op once killed and reaped)
        os.close(mfd)
    write(b"\n]\n")
    if hasattr(out, "buffer"):
        out.buffer.flush()
    # the CPU accounting (benchmarks/parallel_accounting.py): the parent's set-up before the
    # fork, its plan and page_of, then its JSON (with the copies of the child's chunks), the
    # wall time it waited for the child's chunks, and the child's plan and JSON
    an.__dict__["_wf_output_times"] = {
        "phases": c1 - c0, "page": c2 - c1, "json_parent": time.process_time() - c2, "wait_wall": wait, "json_child": child_cpu}


def _copy(fd: int, offset: int, length: int, out_fd: int, out, write) -> int:
    """``length`` bytes at ``offset`` of file ``fd`` to the output: by ``sendfile`` to
    ``out_fd`` (its buffer flushed first) where it can, else read and written.  Returns how
    many were copied (``length``, but for a file cut short)."""
    want = length
    if out_fd >= 0:
        out.buffer.flush()
        try:
            while length > 0:
                sent = os.sendfile(out_fd, fd, offset, length)
                if sent <= 0:
                    break
                offset += sent
                length -= sent
        except OSError:
            pass  # (what sendfile did not send is written below)
    while length > 0:
        b = os.pread(fd, min(length, 1 << 24), offset)
        if not b:
            break
        write(b)
        offset += len(b)
        length -= len(b)
    return want - length


# ``packets``' listing is made by two processes from this many rows (``split_output``): below
# it the fork costs more than it saves; the child makes this share of them (it runs the TCP
# analysis of the packets before its first row too)
ROWS_SPLIT_MIN = 20000
ROWS_CHILD_SHARE = 0.48


def _memory_file(name: str) -> int:
    """A descriptor of an anonymous file in memory (``memfd``), else of an unlinked temporary
    file: where a forked child leaves output for its parent to copy."""
    try:
        if hasattr(os, "memfd_create"):
            return os.memfd_create(name, os.MFD_CLOEXEC)
    except OSError:
        pass
    import tempfile

    return os.dup(tempfile.TemporaryFile().fileno())  # (unlinked; the file object's own descriptor closes with it)


def _fork_to_memory_file(name: str) -> tuple[int, int, int, int] | None:
    """A memory file (``_memory_file``), a pipe and a forked child: (memory file, the pipe's
    read end, its write end, the child's pid: 0 in the child), or None (and nothing left
    open) where one of them cannot be had."""
    fds: list[int] = []
    try:
        fds.append(_memory_file(name))
        fds += os.pipe()
        pid = os.fork()
    except OSError:
        for fd in fds:
            os.close(fd)
        return None
    return fds[0], fds[1], fds[2], pid


def split_output(n: int, encode, workers: int, out=None, share: float = 0.5) -> None:
    """Items ``0 … n-1``'s text on ``out`` (stdout), in order, made by two processes where
    ``workers`` allows it: the forked child makes the last ``share`` of the items into a memory
    file while the parent makes and writes the first ones; then the child's bytes are copied
    to the output (``sendfile`` where both are files).  ``encode(a, b)`` yields the text (str)
    of items ``a … b-1`` in order.  The child sees the parent's state as of the fork (the
    analysis, the open capture: read with ``pread`` only, so sharing its descriptor is safe).
    A child that fails costs only time: the parent makes what it did not get.  With one
    worker, or no ``fork``, the parent makes them all."""
    out = out if out is not None else sys.stdout
    k = n - int(n * share) if workers > 1 and hasattr(os, "fork") else n
    if k >= n or k < 2:
        for text in encode(0, n):
            out.write(text)
        return
    enc, errors = getattr(out, "encoding", None) or "utf-8", getattr(out, "errors", None) or "strict"
    # the first item made before the fork: what its making sets up lazily once (the packet ->
    # frames index, the TCP analysis: ~0.2 s on a 120 k-packet capture) is then shared, not
    # made again in the child
    for text in encode(0, 1):
        out.write(text)
    out.flush()
    sys.stderr.flush()
    forked = _fork_to_memory_file("wirefall-rows")
    if forked is None:  # (no memory file, pipe or process: serially)
        for text in encode(1, n):
            out.write(text)
        return
    mfd, r, w, pid = forked
    if pid == 0:  # the child: items k … n-1 into the memory file, then their length through the pipe
        code = 1
        try:
            os.close(r)
            at = 0
            batch: list[str] = []
            size = 0
            for text in encode(k, n):
                batch.append(text)
                size += len(text)
                if size >= 1 << 20:
                    at = _pwrite_all(mfd, "".join(batch).encode(enc, errors), at)
                    batch, size = [], 0
            at = _pwrite_all(mfd, "".join(batch).encode(enc, errors), at)
            os.write(w, struct.pack("<q", at))
            code = 0
        except BaseException:  # noqa: BLE001 - the parent makes what it did not get
            pass
        finally:
            os._exit(code)
    os.close(w)
    try:
        for text in encode(1, k):
            out.write(text)
        m = b""
        while len(m) < 8:
            got = os.read(r, 8 - len(m))
            if not got:
                break
            m += got
        _reap(pid, -1)
        done = -1
        if len(m) == 8:
            (length,) = struct.unpack("<q", m)
            out.flush()
            write = out.buffer.write if hasattr(out, "buffer") else (lambda b: out.write(b.decode(enc, errors)))
            try:
                out_fd = out.buffer.fileno() if hasattr(out, "buffer") and hasattr(os, "sendfile") else -1
            except (OSError, ValueError, AttributeError):
                out_fd = -1
            done = _copy(mfd, 0, length, out_fd, out, write)
            if done != length and done:
                raise OSError("the child's output could not be copied from its memory file")
            if done == length:
                if hasattr(out, "buffer"):
                    out.buffer.flush()
                return
        for text in encode(k, n):  # (the child failed: its items are made here)
            out.write(text)
    except BaseException:  # (the output closed, say: the child's work is of no use)
        _reap(pid, -1, kill=True)
        raise
    finally:
        _reap(pid, r)  # (the pipe closed; the child reaped, a no-op once it is)
        os.close(mfd)


def _pwrite_all(fd: int, b: bytes, at: int) -> int:
    """``b`` written at ``at`` of file ``fd``; returns the offset after it."""
    view = memoryview(b)
    while view:
        m = os.pwrite(fd, view, at)
        view, at = view[m:], at + m
    return at
