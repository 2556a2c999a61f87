"""A disk cache of analysed captures, so that opening a capture again is instant.

``analyze_cached(path, keylogs)`` returns ``(analysis, hit)``.  The cache key is the
SHA-256 of

- the capture file's bytes,
- the bytes of each key log that ``analyze`` would read (the ``--keylog`` files, or
  ``$SSLKEYLOGFILE`` when none is given), each hashed on its own, and
- a fingerprint of the analyser's own source (``analyzer/`` and ``dissectors/``), so that
  a newer wirefall never serves an analysis made by older code, and
- the ``limits`` given to ``analyze`` (``--limit NAME=N``), if any: an analysis made with
  other budgets is another entry.

The value is the ``Analysis`` in three parts (``dumps``): the summary-sized part pickled
(protocol 5) and zstd-compressed, the packet index as raw arrays, and the body: frames,
requests, offset maps and record lists, each pickled and compressed on its own and unpacked
on its own first use (``BODY_PARTS``); in
``$XDG_CACHE_HOME/wirefall`` (default ``~/.cache/wirefall``), a folder of mode 0700 that
must belong to the current user (anything else is not trusted: unpickling runs code).

Key material is never stored: the ``KeyLog`` is dropped from the analysis before
pickling (a loaded analysis has ``keylog = None``), and as a second line of defence the
pickled bytes are searched for every secret of the key logs (raw and hex) — if one is
found, nothing is written.  Entries are written atomically; the cache is kept under
``MAX_BYTES`` by removing the least recently used entries.
"""
from __future__ import annotations

from typing import Any

import hashlib
import json
import os
import pickle
import sys
import time
from array import array
from pathlib import Path
from _thread import allocate_lock
from collections.abc import Callable, Sequence

from .gcpause import gc_paused, model_frozen
from .model import LAZY_FIELDS, Analysis, PacketIndex

CACHE_VERSION = 8  # 3: summary part, raw packet index, body unpacked on first use; 4: classes pickled as wirefall.*; 5: typed connection notes (model.Note), TCP ISN and window scale on the connection; 6: frames in chunks (FrameChunks); 7: the body in parts, each unpacked on its own first use; 8: pcapng times ticks / ticks-per-second (correctly rounded), interface ids file-wide over sections
MAX_BYTES = 2 << 30  # whole cache folder
MAX_ENTRY_BYTES = 1 << 30  # one compressed entry
SUFFIX = ".wfa.zst"
_CHUNK = 1 << 20
_code_fp: str | None = None


def cache_dir(create: bool = True) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = Path(base) / "wirefall"
    if create:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def _trusted(d: Path) -> bool:
    try:
        st = d.stat()
    except OSError:
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    if st.st_mode & 0o022:  # writable by others: someone could plant a pickle
        try:
            os.chmod(d, 0o700)
        except OSError:
            return False
    return True


DIGEST_MEMO = "digests.json"
DIGEST_MEMO_ENTRIES = 2000


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(_CHUNK)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def file_digest(path: str) -> str:
    """SHA-256 of the file's content.  Hashing a 1.7 GB capture takes ~1.5 s, so the digest
    of a file is remembered in the cache folder by its device, inode, size, mtime and ctime
    (ctime changes with any write and cannot be set back): an unchanged file is not read
    again, a changed one always is.  The folder is made here for a file worth remembering: a
    first ``--cache`` run on a machine without the folder stored its entry but not the
    digest, and the next launch hashed the file again (the TUI's first reopen of a 1.7 GB
    capture: 1.73 s to its first row instead of 0.58 s)."""
    st = os.stat(path)
    ident = f"{st.st_dev}:{st.st_ino}"
    stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    memo_path = None
    memo: dict = {}
    try:
        d = cache_dir(create=st.st_size >= _CHUNK)
        if d.is_dir() and _trusted(d):
            memo_path = d / DIGEST_MEMO
            if memo_path.exists():
                memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    hit = memo.get(ident)
    if isinstance(hit, list) and len(hit) == 4 and hit[:3] == stamp:
        return hit[3]
    digest = _sha256_file(path)
    if memo_path is not None and st.st_size >= _CHUNK:  # small files hash faster than the memo is read
        memo[ident] = stamp + [digest]
        if len(memo) > DIGEST_MEMO_ENTRIES:
            memo = dict(list(memo.items())[-DIGEST_MEMO_ENTRIES:])
        try:
            from .export import write_atomic

            write_atomic(str(memo_path), json.dumps(memo).encode(), force=True)
        except OSError:
            pass
    return digest


def code_fingerprint() -> str:
    """SHA-256 over the analyser's Python sources (names and bytes)."""
    global _code_fp
    if _code_fp is None:
        h = hashlib.sha256(f"wirefall-cache-{CACHE_VERSION}".encode())
        root = Path(__file__).resolve().parent.parent
        for pkg in ("analyzer", "dissectors"):
            for p in sorted((root / pkg).rglob("*.py")):
                try:
                    data = p.read_bytes()
                except OSError:
                    continue
                h.update(str(p.relative_to(root)).encode() + b"\0" + hashlib.sha256(data).digest())
        _code_fp = h.hexdigest()
    return _code_fp


def keylog_paths(keylogs: list[str] | None) -> list[str]:
    """The key log files ``analyze(path, keylogs)`` reads (mirrors ``load_keylog``)."""
    if keylogs:
        return list(keylogs)
    env = os.environ.get("SSLKEYLOGFILE")
    return [env] if env and os.path.exists(env) else []


def cache_key(path: str, keylogs: list[str] | None = None, limits: dict | None = None) -> str:
    h = hashlib.sha256()
    h.update(code_fingerprint().encode())
    if limits:  # none given: the key is the one of before --limit existed
        h.update(b"limits\0" + json.dumps(sorted((str(k), int(v)) for k, v in limits.items())).encode())
    h.update(b"capture\0" + file_digest(path).encode())
    for k in keylog_paths(keylogs):
        try:
            h.update(b"keylog\0" + file_digest(k).encode())
        except OSError:
            h.update(b"keylog-unreadable\0")
    return h.hexdigest()


def _secrets(keylog) -> list[bytes]:
    # read only to make sure none ends up on disk
    return [bytes(v) for v in keylog.secret_values()] if hasattr(keylog, "secret_values") else []


_HEX_DIGITS = b"0123456789abcdefABCDEF"
# every byte to "x" if it is a hex digit, else "." (a run of hex digits found by one search)
_HEX_RUNS = bytes.maketrans(bytes(range(256)), bytes(120 if b in _HEX_DIGITS else 46 for b in range(256)))
_HEX_LOWER = bytes.maketrans(b"ABCDEF", b"abcdef")
_SECRET_WINDOW = 1 << 22


def _contains_secret(blob: bytes, secrets: list[bytes]) -> bool:
    """Whether a secret of 16 bytes or more is in ``blob``, as raw bytes or as hex in either
    case.  The hex forms are looked for only where the blob has a run of hex digits as long as
    the shortest of them: one pass over the blob instead of two searches per secret (a 1 M-packet
    capture's 80 MB of pickled parts against its 40 secrets: 0.64 s before)."""
    long = [s for s in secrets if len(s) >= 16]
    if not long:
        return False
    if not isinstance(blob, bytes):
        blob = bytes(blob)  # (a memoryview's `in` looks for an element, not a substring)
    if any(s in blob for s in long):
        return True
    hexes = [s.hex().encode() for s in long]
    run, over = b"x" * min(map(len, hexes)), max(map(len, hexes))
    for i in range(0, len(blob), _SECRET_WINDOW):  # (a window at a time: no copy of the whole part)
        w = blob[i : i + _SECRET_WINDOW + over]  # (a secret that starts in the window ends in it)
        if run in w.translate(_HEX_RUNS):
            low = w.translate(_HEX_LOWER)
            if any(h in low for h in hexes):
                return True
    return False


MAGIC = b"WFA4"


def _index_bytes(index: PacketIndex, on_wire: int, span: tuple[float, float] | None = None) -> bytes:
    """The packet index arrays as they lie in memory, behind a small description: reopening
    reads them back into arrays (1.2 M packets: ~10 ms) instead of decompressing and
    unpickling 40 MB (~110 ms).  They hold numbers the capture reader produced (times, file
    offsets, lengths, codes), never payload bytes, so the key-material check skips them.
    ``on_wire``: the packets' bytes on the wire (``jsonout.bytes_on_wire``), kept so that a
    reopened summary need not add up 1.2 M lengths again (30 ms); ``span``: the earliest and
    the latest packet time (``jsonout.time_span``), likewise (a min and a max over 1.2 M times:
    70 ms where numpy is not loaded, a reopened summary's case)."""
    names = PacketIndex.__slots__
    arrays = [getattr(index, n) for n in names]
    desc = json.dumps({"byteorder": sys.byteorder, "on_wire": [len(index.origlen), on_wire],
                       **({"span": [len(index.ts), *span]} if span is not None else {}),
                       "arrays": [[n, a.typecode, a.itemsize, len(a)] for n, a in zip(names, arrays)]}).encode()
    return b"".join([len(desc).to_bytes(4, "little"), desc, *(a.tobytes() for a in arrays)])


def _index_from(f, size: int) -> tuple[PacketIndex, list | None, list | None]:
    """The packet index of ``size`` bytes at ``f``'s position, its bytes on the wire
    (``[packets, bytes]``, or None in an entry without them) and its time span (``[packets,
    earliest, latest]``, or None).  Each array is read from the
    file straight into its own memory (``readinto``): reading the whole entry and copying
    the arrays out of it faulted in and copied 100 MB for a 1.2 M-packet capture."""
    n = int.from_bytes(_read(f, 4), "little")
    if n > size - 4:
        raise ValueError("cache entry truncated")
    desc = json.loads(_read(f, n))
    if desc.get("byteorder") != sys.byteorder:
        raise ValueError("cache entry written on a machine of the other byte order")
    index = PacketIndex()
    left = size - 4 - n
    for name, typecode, itemsize, count in desc["arrays"]:
        a = array(typecode)
        if a.itemsize != itemsize or name not in PacketIndex.__slots__ or not isinstance(count, int) or not 0 <= count * itemsize <= left:
            raise ValueError("cache entry index does not fit this machine")
        if count:
            a = array(typecode, bytes(itemsize)) * count  # (zeros, overwritten by the file's bytes)
            if f.readinto(memoryview(a).cast("B")) != count * itemsize:
                raise ValueError("cache entry index truncated")
        left -= count * itemsize
        setattr(index, name, a)
    if left:
        raise ValueError("cache entry index does not fit its description")
    on_wire, span = desc.get("on_wire"), desc.get("span")
    return (index, on_wire if isinstance(on_wire, list) and len(on_wire) == 2 else None,
            span if isinstance(span, list) and len(span) == 3 and all(isinstance(x, (int, float)) for x in span) else None)


def _read(f, n: int) -> bytes:
    b = f.read(n)
    if len(b) != n:
        raise ValueError("cache entry truncated")
    return b


# The body's parts, each pickled and compressed on its own and unpacked when one of its fields
# is first read: the TUI's first screen reads the frames (and their packet index), not the
# requests; unpacking all of them at once took 0.64 s of h2-small's 2.2 s first screen
# (60 k requests), 0.68 s of h2-big-mtu's.  A damaged part costs its own fields only.
BODY_PARTS = {"frames": ("frames", "_wf_frame_index"), "exchanges": ("exchanges",), "maps": ("maps",),
              "tls_records": ("tls_records",), "quic_packets": ("quic_packets",)}
PART_OF = {f: part for part, fields in BODY_PARTS.items() for f in fields if f in LAZY_FIELDS}


def dumps(an: Analysis) -> bytes:
    """The key-free serialisation of ``an`` in three parts: the analysis without its packet
    index and bulky parts (zstd), the packet index (raw arrays, see ``_index_bytes``), and
    the bulky parts (``LAZY_FIELDS``: frames, exchanges, offset maps, decrypted record lists),
    each pickled and compressed on its own (``BODY_PARTS``, laid out by ``_body_bytes``), so
    that reopening reads the first two at once and a part only when a view asks for it."""
    import zstandard

    kl = an.keylog
    for name in LAZY_FIELDS:  # an analysis that came from the cache has them still packed
        getattr(an, name)
    from . import completeness
    from .detail import BULK_FRAMES, _bulk_index
    from .jsonout import bytes_on_wire, time_span

    on_wire, span = bytes_on_wire(an), time_span(an)
    completeness.compute(an)  # kept in the summary-sized part: `summary --cache` unpacks no request
    for c in an.connections:  # stored with the certificate's subject resolved: a reopened analysis never loads cryptography.x509
        if c.tls is not None:
            _ = c.tls.certificate_subject
    nfr = len(an.frames)
    fi = an.__dict__.get(FRAME_INDEX)
    if nfr >= BULK_FRAMES and not _whole_frame_index(fi, nfr):
        # stored with the frames (FRAME_INDEX), so that a reopened packet list need not build it:
        # built whole here where there is none, or where the frames were indexed one at a time
        # while they were read (the TUI shows rows as they come; reopened without a stored index,
        # h2-big-mtu's first screen spent 3.4 s building it from every frame)
        conn_of = an.index.conn
        fi = (nfr, _bulk_index(an.frames, nfr, conn_of, len(conn_of)), 0, {})  # (what _frame_index builds at once)
        an.__dict__.setdefault(FRAME_INDEX, fi)
    extra = {k: v for k, v in an.__dict__.items() if k.startswith("_wf_")}  # derived indexes
    body = {name: an.__dict__[name] for name in LAZY_FIELDS if name in an.__dict__}
    stored = dict(body)
    protocols = an.frame_protocols() or frozenset({f.protocol for f in an.frames})
    secrets = _secrets(kl) if kl is not None else []
    chunked = nfr >= 2 * FRAME_CHUNK
    if chunked:  # (each chunk looked at for key material before it is compressed)
        stored["frames"] = _frame_chunks(an.frames, protocols, secrets)
    raw_fi = _frame_index_bytes(fi) if _whole_frame_index(fi, nfr) else None
    # the counts a first screen shows (Analysis.count, .requests_per_connection, .frame_protocols), in the head
    counts: dict = {name: len(v) for name, v in body.items()}
    counts["per_connection"] = an.requests_per_connection()
    counts["protocols"] = protocols
    index = an.index
    try:
        an.keylog = None
        an.index = PacketIndex()
        for k in {*extra, *body}:
            del an.__dict__[k]
        an.__dict__["_wf_counts"] = counts
        raw_head = pickle.dumps(an, protocol=5)
        raw_parts = {part: pickle.dumps({f: stored[f] for f in fields if f in stored}, protocol=5) for part, fields in BODY_PARTS.items()}
    finally:
        an.keylog = kl
        an.index = index
        an.__dict__.pop("_wf_counts", None)
        an.__dict__.update(extra)
        an.__dict__.update(body)
    # (a chunked frames part is not looked at again: its chunks were, before they were compressed,
    # and the rest of it is the frames' protocols and their packet index, numbers; h2-big-mtu: 23 MB)
    if secrets and any(_contains_secret(raw, secrets) for part, raw in (("head", raw_head), *raw_parts.items())
                       if not (chunked and part == "frames")):
        raise ValueError("analysis holds key material; not cached")
    z = zstandard.ZstdCompressor(level=3, threads=-1, write_checksum=True)
    head = z.compress(raw_head)
    idx = _index_bytes(index, on_wire, span)
    body_parts = {part: z.compress(raw) for part, raw in raw_parts.items()}
    if raw_fi is not None:  # (numbers only, as the packet index: no key material to look for)
        body_parts[FRAME_INDEX_PART] = raw_fi
    return b"".join([MAGIC, len(head).to_bytes(8, "little"), head, len(idx).to_bytes(8, "little"), idx, _body_bytes(body_parts)])


def _body_bytes(parts: dict[str, bytes]) -> bytes:
    """The body's parts, one after the other, each behind its name (a byte of length, ASCII)
    and its size (8 bytes, little-endian)."""
    out = []
    for name, data in parts.items():
        b = name.encode("ascii")
        out += [len(b).to_bytes(1, "little"), b, len(data).to_bytes(8, "little"), data]
    return b"".join(out)


def _body_parts(body) -> dict[str, memoryview]:
    """``_body_bytes``' parts by name (views into ``body``); ValueError if they do not fit it."""
    mv, out, p = memoryview(body), {}, 0
    while p < len(mv):
        n = mv[p]
        name = bytes(mv[p + 1 : p + 1 + n]).decode("ascii")
        if name not in BODY_PARTS and name != FRAME_INDEX_PART or p + 9 + n > len(mv):
            raise ValueError("cache entry: body parts do not fit")
        size = int.from_bytes(mv[p + 1 + n : p + 9 + n], "little")
        p += 9 + n
        if size > len(mv) - p:
            raise ValueError("cache entry: body parts do not fit")
        out[name] = mv[p : p + size]
        p += size
    return out


# The packet → frames index (analyzer.detail._frame_index) of an analysis with BULK_FRAMES or
# more frames is stored in the body beside the frames: the TUI's packet list needs it before its
# first screen, and building it again on a reopen took 0.8 s of the 3.6 s on 400 k frames.  It is
# a part of its own (FRAME_INDEX_PART), its two arrays as they lie in memory, as the packet
# index's: pickled and compressed with the frames, unpacking its 19 MB (h2-big-mtu) took 0.06 s
# of the reopened TUI's way to its first Info, copying them takes 5 ms.
FRAME_INDEX = "_wf_frame_index"
FRAME_INDEX_PART = "frame_index"


def _frame_index_bytes(fi) -> bytes:
    """A whole frame index (``_whole_frame_index``) as a body part: a description (JSON behind
    its 4-byte length) and the ``off`` and ``ids`` arrays' bytes."""
    from .detail import _plain

    arrays = [_plain(fi[1].off), _plain(fi[1].ids)]
    desc = json.dumps({"byteorder": sys.byteorder, "frames": fi[0],
                       "arrays": [[a.typecode, a.itemsize, len(a)] for a in arrays]}).encode()
    return b"".join([len(desc).to_bytes(4, "little"), desc, *(a.tobytes() for a in arrays)])


def _frame_index_from(mv: memoryview, nframes: int, npk: int) -> tuple:
    """``_frame_index_bytes``' index back (``_frame_index``'s entry), checked against the frames'
    and packets' counts; ValueError where it does not fit them."""
    from .detail import PacketFrames

    n = int.from_bytes(mv[:4], "little")
    desc = json.loads(bytes(mv[4 : 4 + n]))
    if not isinstance(desc, dict) or desc.get("byteorder") != sys.byteorder or desc.get("frames") != nframes:
        raise ValueError("cache entry: frame index does not fit")
    p, got = 4 + n, []
    for typecode, itemsize, count in desc.get("arrays") or ():
        if typecode not in ("i", "l", "q") or not isinstance(count, int) or count < 0:
            raise ValueError("cache entry: frame index does not fit")
        a = array(typecode)
        if a.itemsize != itemsize or p + count * itemsize > len(mv):
            raise ValueError("cache entry: frame index does not fit")
        a.frombytes(mv[p : p + count * itemsize])
        p += count * itemsize
        got.append(a)
    if len(got) != 2 or p != len(mv) or not 0 < len(got[0]) <= npk + 2 or got[0][-1] != len(got[1]):
        raise ValueError("cache entry: frame index does not fit")
    return (nframes, PacketFrames(got[0], got[1]), 0, {})


def _whole_frame_index(fi, nframes: int) -> bool:
    """``fi`` is ``_frame_index``'s entry built at once over all ``nframes`` frames (nothing
    indexed one by one after it), so it can be stored and trusted as it is."""
    from .detail import PacketFrames

    return (isinstance(fi, tuple) and len(fi) == 4 and fi[0] == nframes and isinstance(fi[1], PacketFrames)
            and fi[1].off is not None and not fi[1].extra and fi[2] == 0 and fi[3] == {})


# The frames of a big analysis are stored in chunks of FRAME_CHUNK, each pickled and compressed
# on its own, and a reopened analysis unpickles a chunk when one of its frames is first read:
# the TUI's first screen reads the frames of 25 packets, and unpickling all 413 k frames of a
# 1 M-packet capture took 0.95 s of its 1.9 s.
FRAME_CHUNK = 1 << 13


def _frame_chunks(frames, protocols: frozenset[str] | None = None, secrets: list[bytes] | None = None) -> tuple[int, list[bytes], frozenset[str]]:
    """The frames pickled in chunks of FRAME_CHUNK, each compressed on its own (``FrameChunks``
    reads them back); ValueError if a chunk holds one of ``secrets`` (key material), which is
    looked for before the chunk is compressed: in the compressed part it could not be seen."""
    import zstandard

    z = zstandard.ZstdCompressor(level=3)
    packed = []
    for i in range(0, len(frames), FRAME_CHUNK):
        raw = pickle.dumps(frames[i : i + FRAME_CHUNK], protocol=5)
        if secrets and _contains_secret(raw, secrets):
            raise ValueError("analysis holds key material; not cached")
        packed.append(z.compress(raw))
    return len(frames), packed, frozenset({f.protocol for f in frames}) if protocols is None else protocols


class FrameChunks(Sequence):
    """The frames of an analysis reopened from the cache, read-only: ``len`` is known at once,
    a chunk of FRAME_CHUNK frames is decompressed and unpickled when one of its frames is first
    read (by index or in order).  Safe to read from several threads (the web app's callbacks).
    ``protocols``: the frames' protocols, known without reading them (a view that looks for one
    protocol's frames, like the HTTP/1 colouring rule, need not unpack 400 k others to learn
    there are none).  Pickled again, it is a plain list."""

    __slots__ = ("_n", "_packed", "_chunks", "_lock", "_warn", "protocols")

    def __init__(self, n: int, packed: list[bytes | None], protocols: frozenset[str], warn: Callable[[str], object] | None = None) -> None:
        if (not isinstance(n, int) or not isinstance(packed, list) or len(packed) != -(-n // FRAME_CHUNK)
                or not isinstance(protocols, frozenset)):
            raise ValueError("cache entry: frame chunks do not fit their count")
        self.protocols = protocols
        self._n = n
        self._packed: list[bytes | None] = packed
        self._chunks: list[list | None] = [None] * len(packed)
        self._lock = allocate_lock()
        self._warn = warn

    def _chunk(self, k: int) -> list:
        c = self._chunks[k]
        if c is not None:
            return c
        with self._lock:
            c = self._chunks[k]
            if c is None:
                c = self._unpack(k)
                self._chunks[k] = c
                self._packed[k] = None
                if model_frozen():  # the process froze its model (the TUI, the CLI): these frames join it
                    import gc

                    gc.freeze()
        return c

    def _unpack(self, k: int) -> list:
        import zstandard

        want = min(FRAME_CHUNK, self._n - k * FRAME_CHUNK)
        try:
            c = _unpickle(zstandard.ZstdDecompressor().decompress(self._packed[k] or b""))
            if not isinstance(c, list) or len(c) != want:
                raise ValueError("frame chunk does not fit its count")
            return c
        except Exception as e:  # noqa: BLE001 - a damaged chunk: its frames are unknown, the others stay
            if self._warn is not None:
                self._warn(f"cached analysis: frames {k * FRAME_CHUNK + 1}-{k * FRAME_CHUNK + want} unreadable ({type(e).__name__})")
                self._warn = None
            from .model import Frame

            return [Frame(0, 0, 0.0, -1, 0, "?", None, "?", error="unreadable cache entry")] * want

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("frame index out of range")
        return self._chunk(i // FRAME_CHUNK)[i % FRAME_CHUNK]

    def __iter__(self):
        for k in range(len(self._chunks)):
            yield from self._chunk(k)

    def __eq__(self, other) -> bool:
        return isinstance(other, (list, FrameChunks)) and len(other) == self._n and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # (a list's equality: unhashable)

    def __reduce__(self):
        return list, (list(self),)


def _parts(blob) -> tuple[memoryview, memoryview, memoryview]:
    mv = memoryview(blob)
    if bytes(mv[:4]) != MAGIC:
        raise ValueError("not a wirefall cache entry")
    n = int.from_bytes(mv[4:12], "little")
    head = mv[12 : 12 + n]
    p = 12 + n
    m = int.from_bytes(mv[p : p + 8], "little")
    idx = mv[p + 8 : p + 8 + m]
    if len(head) != n or len(idx) != m:
        raise ValueError("cache entry truncated")
    return head, idx, mv[p + 8 + m :]


def unpack(blob: bytes) -> tuple[bytes, ...]:
    """The pickles of a ``dumps`` blob, decompressed: the head, then each body part in the
    order of ``BODY_PARTS`` (the first: the frames), then the frames' packet index
    (``FRAME_INDEX_PART``, stored as it is) where there is one."""
    import zstandard

    head, _, body = _parts(blob)
    d = zstandard.ZstdDecompressor()
    return (d.decompress(head), *(bytes(v) if k == FRAME_INDEX_PART else d.decompressobj().decompress(v) for k, v in _body_parts(body).items()))


def _unpickle(raw: bytes):
    # unpickling builds hundreds of thousands of objects at once: the cyclic collector would
    # run over and over on them (1.9 s → 0.9 s for 300 k frames without it); none are garbage
    with gc_paused():
        return pickle.loads(raw)


def loads(blob: bytes) -> Analysis:
    """An analysis from ``dumps``; its LAZY_FIELDS are unpacked on first use."""
    import io

    return _load_from(io.BytesIO(blob), len(blob))


def _load_from(f, size: int, entry: tuple | None = None) -> Analysis:
    """An analysis from the ``dumps`` bytes at ``f`` (a file of ``size`` bytes), read part by
    part: the head, the index into its arrays, the compressed body (unpacked on first use).
    ``entry``: the cache file's (path, inode, size, mtime), removed if a part is found damaged."""
    import zstandard

    if _read(f, 4) != MAGIC:
        raise ValueError("not a wirefall cache entry")
    n = int.from_bytes(_read(f, 8), "little")
    if n > size:
        raise ValueError("cache entry truncated")
    an = _unpickle(zstandard.ZstdDecompressor().decompress(_read(f, n)))
    if not isinstance(an, Analysis):
        raise ValueError("not an analysis")
    m = int.from_bytes(_read(f, 8), "little")
    if m > size - 20 - n:
        raise ValueError("cache entry truncated")
    an.index, on_wire, span = _index_from(f, m)
    if on_wire is not None:
        an.__dict__["_wf_on_wire"] = tuple(on_wire)
    if span is not None and span[0] == len(an.index.ts):
        an.__dict__["_wf_span"] = (span[0], (float(span[1]), float(span[2])))
    try:
        parts = _body_parts(f.read())
        damaged = None
    except (ValueError, UnicodeDecodeError) as e:
        parts, damaged = {}, e
    loader = an.__dict__["_wf_lazy"] = _PartLoader(an, parts, entry)
    if damaged is not None:
        loader.damaged("frames and requests", damaged)
    return an


class _PartLoader:
    """``loader(field)``: the fields of the body part that holds ``field`` (``BODY_PARTS``),
    unpacked from the entry; ``Analysis.__getattr__`` calls it (under its lock) on the first
    read of a LAZY_FIELD.  A part that does not unpack leaves its fields empty, with a warning.
    (It keeps the analysis's warnings and index, not the analysis: no reference cycle.)"""

    __slots__ = ("warnings", "index", "parts", "entry")

    def __init__(self, an: Analysis, parts: dict[str, memoryview], entry: tuple | None = None) -> None:
        self.warnings, self.index, self.parts = an.warnings, an.index, parts
        # the entry's file and its identity when read (path, inode, size, mtime): a damaged part
        # removes it, as a damaged head does, so that the next open analyses the capture again
        self.entry = entry

    def _drop_entry(self) -> bool:
        """Remove the entry this analysis came from, if it is still the file that was read
        (not one stored since, by this process or another); whether it was removed."""
        if self.entry is None:
            return False
        p, *ident = self.entry
        self.entry = None
        try:
            st = p.stat()
            if [st.st_ino, st.st_size, st.st_mtime_ns] != ident:
                return False
            p.unlink()
            return True
        except OSError:
            return False

    def damaged(self, what: str, e: Exception) -> None:
        self.warn(f"cached analysis: {what} unreadable ({type(e).__name__})")

    def warn(self, message: str) -> None:
        """A part (or a chunk of frames, ``FrameChunks``) found damaged: ``message`` in the
        warnings, with what was done about the entry or what the user can do."""
        self.warnings.append(message + ("; the cache entry is removed: the next open analyses the capture again" if self._drop_entry()
                                        else "; open the capture without --cache to analyse it again"))

    def __call__(self, name: str) -> dict:
        import zstandard

        part = PART_OF[name]
        packed = self.parts.pop(part, None)
        got: dict = {}
        if packed is not None:
            try:
                got = _unpickle(zstandard.ZstdDecompressor().decompressobj().decompress(packed))
                if not isinstance(got, dict):
                    raise ValueError("not an analysis body part")
            except Exception as e:  # noqa: BLE001 - damaged after the head was read: say so, keep the rest
                self.damaged("frames" if part == "frames" else "requests" if part == "exchanges" else part.replace("_", " "), e)
                got = {}
        fresh = Analysis(path="", index=self.index)
        out = {f: got.get(f, getattr(fresh, f)) for f in BODY_PARTS[part] if f in LAZY_FIELDS}
        if part == "frames":
            if isinstance(out["frames"], tuple):
                try:
                    n, packed_frames, protocols = out["frames"]
                    out["frames"] = FrameChunks(n, packed_frames, protocols, warn=self.warn)
                except (TypeError, ValueError) as e:
                    self.damaged("frames", e)
                    out["frames"] = []
            raw_fi = self.parts.pop(FRAME_INDEX_PART, None)
            if raw_fi is not None and packed is not None:
                try:
                    out[FRAME_INDEX] = _frame_index_from(raw_fi, len(out["frames"]), len(self.index.ts))
                except (ValueError, UnicodeDecodeError, OverflowError) as e:  # (built again when asked for)
                    self.damaged("frame index", e)
        if model_frozen():  # the process froze its model (the TUI, the CLI): this part joins it
            import gc

            gc.freeze()
        return out


def load(key: str) -> Analysis | None:
    d = cache_dir(create=False)
    p = d / (key + SUFFIX)
    if not p.exists() or not _trusted(d):
        return None
    try:
        st = p.stat()
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return None
        os.utime(p)  # least recently used eviction
        with open(p, "rb", buffering=0) as f:  # (unbuffered: the index is read straight into its arrays)
            fst = os.fstat(f.fileno())
            return _load_from(f, fst.st_size, (p, fst.st_ino, fst.st_size, fst.st_mtime_ns))
    except Exception:  # noqa: BLE001 - a broken entry is a miss
        try:
            p.unlink()
        except OSError:
            pass
        return None


def store(key: str, an: Analysis) -> bool:
    """Write ``an`` under ``key``; False if it was not cached (too big, key material, I/O)."""
    try:
        blob = dumps(an)
    except Exception:  # noqa: BLE001 - unpicklable parts or key material: just do not cache
        return False
    if len(blob) > MAX_ENTRY_BYTES:
        return False
    try:
        d = cache_dir()
        if not _trusted(d):
            return False
        from .export import write_atomic

        write_atomic(str(d / (key + SUFFIX)), blob, force=True)
        prune(d)
        return True
    except OSError:
        return False


def prune(d: Path | None = None, max_bytes: int = MAX_BYTES) -> None:
    d = d or cache_dir(create=False)
    try:
        entries = [(p.stat().st_mtime, p.stat().st_size, p) for p in d.glob("*" + SUFFIX)]
    except OSError:
        return
    total = sum(s for _, s, _ in entries)
    for _, size, p in sorted(entries):
        if total <= max_bytes:
            break
        try:
            p.unlink()
            total -= size
        except OSError:
            pass


def clear() -> int:
    n = 0
    for p in cache_dir(create=False).glob("*" + SUFFIX):
        try:
            p.unlink()
            n += 1
        except OSError:
            pass
    return n


def analyze_cached(path: str, keylogs: list[str] | None = None, progress: Callable | None = None,
                   use_cache: bool = True, analyze: Callable | None = None, limits: dict | None = None,
                   workers: int | str | None = None) -> tuple[Analysis, bool]:
    """``analyze(path, keylogs, limits=limits, workers=workers)`` through the cache.  Returns
    ``(analysis, from_cache)``.

    An analysis from the cache has ``path`` set to ``path`` (the same bytes may have been
    opened under another name) and the key log re-read from ``keylogs`` (never from the cache).
    ``workers`` (``-j``: a number, or "auto"): a miss is analysed with that many processes
    (``analyzer.parallel``, whose result is the serial one: the key does not name it, and the
    entry stored is the same; what the parallel pass adds, ``_wf_parallel*``, is derived and
    not stored).  The analysis is always the whole model, with the per-packet listing of
    frames: the cache serves every command."""
    if analyze is None:
        from .pipeline import analyze as default_analyze

        analyze = default_analyze
    key = None
    if use_cache:
        try:
            key = cache_key(path, keylogs, limits)
        except OSError:
            key = None
        if key is not None:
            an = _open(key, path, keylogs)
            if an is not None:
                if progress is not None:
                    size = os.path.getsize(path)
                    progress(an.packets, size, size)
                return an, True
    kw: dict[str, Any] = {"limits": limits} if limits else {}  # (a stand-in analyze may not take limits, nor workers)
    if workers is not None and workers != 1:
        kw["workers"] = workers
    an = analyze(path, keylogs=keylogs, progress=progress, **kw)
    if key is not None:
        store(key, an)
    return an, False


def open_cached(path: str, keylogs: list[str] | None = None, limits: dict | None = None) -> Analysis | None:
    """The analysis of ``path`` from the cache, as ``analyze_cached`` returns it on a hit (its
    bulky parts unpacked on first use), or None: not in the cache (nothing is analysed nor
    stored).  The TUI reads it while its own window is still being built."""
    try:
        key = cache_key(path, keylogs, limits)
    except OSError:
        return None
    return _open(key, path, keylogs)


def _open(key: str, path: str, keylogs: list[str] | None) -> Analysis | None:
    t = time.monotonic()
    an = load(key)
    if an is None:
        return None
    an.path = path
    from .keylog import load_keylog

    an.keylog = load_keylog(keylogs)  # in memory only: lets views re-decrypt on demand
    an.__dict__["_wf_cache_load_s"] = time.monotonic() - t
    return an
