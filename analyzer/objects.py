"""HTTP message bodies out of a capture: ``wirefall objects`` and the body view.

wirefall's analysis never keeps bodies (analyzer/content.py counts them).  To get them, the
capture is read again with a ``BodyCollector`` on the sessions' ``ctx.body_sink``: HTTP/1.x
(after chunked framing), HTTP/2 and SPDY DATA payloads (padding removed), HTTP/3 DATA frame
payloads, each tied to its exchange and direction.  The second pass goes through
``pipeline._analyze`` with a ``_Tap`` in the place of a parallel worker's ``Shard`` (the same
protocol: ``setup(ctx)``, ``foreign(4-tuple)``, ``k``, ``moved``): it attaches the collector
to the Context and, for one exchange's body, keeps the other TCP connections out of the pass.

Bodies are held in one append-only spool file (``export_objects``) or in memory (the body
view), charged to the budget ``object_bytes`` (per connection, and ``object_bytes_capture``):
a body past it is cut there and says so (``BodyObject.truncated``).  Content-Encoding is then
undone with analyzer/content.py's decoders (``decode_body``), at most
``body_decoded_bytes`` decoded bytes per body; what does not decode is written as it came
(``decoded`` False, ``error`` says why), as tshark does.

File names follow ``tshark --export-objects http,DIR`` (Wireshark 4.0.17,
ui/cli/tap-exportobject.c and epan/export_object.c's eo_massage_str, checked against tshark on
scripts/hostile/objects_inputs.py's and objects19_inputs.py's captures of odd URLs): the last
component of the request target (glib's ``g_path_get_basename``: trailing slashes dropped, "/"
for a target of only slashes) up to a NUL byte (tshark's C string ends there); every byte from
0x80 up as U+FFFD (tshark reads the request line as ASCII: no bidi or C1 control survives); the
bytes ``<>:"/\\|?*`` and 0x01-0x1f written as ``%xx`` (lower-case hex); names over 255 bytes
cut, keeping the extension (from the last dot); a name that exists in DIR (written by this
export or there before, "." and ".." included) gets ``(1)``, ``(2)`` … before its extension:
no file is ever replaced; ``object<packet>`` and ``.<media type>`` (``object136.text%2fplain``)
for a body without a request.  Objects are written in the order of the packet that completed
them (tshark's tap order), request bodies (POST uploads) included, as tshark writes them.

Where wirefall differs on purpose (docs/OBJECTS.md): DEL (0x7f) is ``%7f`` (tshark writes it
as it is); the cut at 255 bytes never splits a character (tshark's may leave part of a U+FFFD)
and counts the ``(N)`` and an extension longer than the limit; an HTTP/1 request line with a
bare CR ends there (tshark's too, on its HTTP ports, where it then takes the rest for a request
body); no file outside DIR is written and no symbolic link followed; pipelined HTTP/1.1
responses are named after their own request (tshark 4.0 names them after the last request sent
on the connection); a body whose Content-Encoding does not decode is written as it came, with
``error`` saying so (tshark 4.0 writes nothing); decoded output stops at
``body_decoded_bytes`` (64 MiB; ``--limit``), where tshark decodes without a bound; after 999
duplicates of a name the body is not written (``BodyObject.written`` False, counted apart by
the CLI; tshark overwrites the last).  ``Names`` finds tshark's names in work linear in the
bodies (tshark searches from ``(1)`` for each).
"""
from __future__ import annotations

import errno
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from . import content as _content
from .model import Analysis, Connection, Exchange

BUDGET = "object_bytes"  # body bytes kept by a collector (and written by the export), per connection
MAX_NAME = 255  # EXPORT_OBJECT_MAXFILELEN
MAX_DUPLICATES = 1000  # prefs.gui_max_export_objects
_REJECT = frozenset(b'<>:"/\\|?*') | frozenset(range(0x01, 0x20)) | {0}
PROTOCOLS = ("http", "http2", "http3", "spdy")


def protocol_family(proto: str | None) -> str | None:
    """http / http2 / http3 / spdy for an exchange's protocol name (``--protocol``)."""
    p = (proto or "").lower()
    if p.startswith("http/") or p in ("http1", "http"):
        return "http"
    if p in ("h2", "h2c"):
        return "http2"
    if p == "h3" or p.startswith("h3-"):
        return "http3"
    if p.startswith("spdy"):
        return "spdy"
    return None


# ------------------------------------------------------------------------- tshark's names

def basename(target: bytes) -> bytes:
    """glib's g_path_get_basename on a request target."""
    if not target:
        return b"."
    end = len(target)
    while end > 0 and target[end - 1 : end] == b"/":
        end -= 1
    if end == 0:
        return b"/"
    start = target.rfind(b"/", 0, end) + 1
    return target[start:end]


def _ext_at(name: bytes) -> int:
    i = name.rfind(b".")
    return i if i >= 0 else len(name)


_FFFD = "\ufffd".encode()
# tshark's reject set, NUL (never reached by tshark: its C string ends there) and DEL (a
# control character tshark writes as it is) as %xx
_ESCAPE = [b"%%%02x" % b if b in _REJECT or b == 0x7F else bytes([b]) if b < 0x80 else _FFFD for b in range(256)]


def _cut(data: bytes, n: int) -> bytes:
    """``data`` cut to at most ``n`` bytes on a UTF-8 character boundary."""
    n = max(n, 0)
    if len(data) <= n:
        return data
    while n > 0 and 0x80 <= data[n] < 0xC0:  # a continuation byte: the cut would split a character
        n -= 1
    return data[:n]


def _tail(data: bytes, n: int) -> bytes:
    """The last ``n`` bytes of ``data`` at most, starting on a UTF-8 character boundary."""
    i = max(len(data) - n, 0)
    while i < len(data) and 0x80 <= data[i] < 0xC0:
        i += 1
    return data[i:]


def massage(name: bytes, dup: int = 0, maxlen: int = MAX_NAME) -> bytes:
    """eo_massage_str on the bytes of a name as tshark 4.0 reads them: every byte from 0x80 up
    is U+FFFD (its HTTP dissector reads the request line as ASCII), ``<>:"/\\|?*`` and the
    controls (0x00-0x1f, 0x7f) ``%xx``; longer than ``maxlen`` bytes: cut on a character
    boundary, keeping the extension (unless the extension alone is that long); ``(dup)``
    before the extension when ``dup``, within ``maxlen`` too.  The result is valid UTF-8, with
    no control or bidi character, of at most ``maxlen`` bytes."""
    out = b"".join(_ESCAPE[b] for b in name)
    suffix = b"(%d)" % dup if dup else b""
    limit = maxlen - len(suffix)
    if len(out) > limit:
        i = out.rfind(b".")
        if 0 <= i and len(out) - i < limit:
            ext = out[i:]
            out = _cut(out[:i], limit - len(ext)) + ext
        else:
            out = _cut(out, limit)
    if suffix:
        i = _ext_at(out)
        out = out[:i] + suffix + out[i:]
    return out


# Wireshark 4.0's http.tcp.port range: HTTP there is dissected whatever the first line; on any
# other port its heuristic takes only a whole request line ("GET /x HTTP/1.1") for HTTP
TSHARK_HTTP_PORTS = frozenset((80, 3128, 3132, 5985, 8080, 8088, 11371, 1900, 2869, 2710))


# HTTP/1 targets keep a byte that is not part of valid UTF-8 as its Latin-1 character
# (dissectors/http1._utf8_target): a C1 one (U+0080-U+009F) was such a byte, one byte to tshark
_C1_BYTES = {c: 0xDC00 + c for c in range(0x80, 0xA0)}


def raw_name(ex: Exchange | None, packet: int, direction: int = 1, conn: Connection | None = None) -> bytes:
    """The name, before ``massage``, that tshark gives the body of ``ex`` (``direction``)
    completed in ``packet``: the last component of the request target up to a NUL byte (and,
    HTTP/1, a CR: tshark's request line ends there); with no request (or, in cleartext HTTP/1
    on a port that is not one of tshark's HTTP ports, a request line with a bare CR, which
    tshark does not take for one) ``object<packet>`` and ``.<media type>`` when the message has
    a Content-Type."""
    target = request_target(ex) if ex is not None else None
    http1 = ex is not None and protocol_family(ex.protocol) == "http"
    if target is not None and http1:
        target = target.translate(_C1_BYTES)
    raw = None if target is None else target.encode("utf-8", "surrogateescape").split(b"\0", 1)[0]
    if raw is not None and http1 and b"\r" in raw:
        if conn is not None and conn.tls is None and conn.server[1] not in TSHARK_HTTP_PORTS:
            raw = None
        else:
            raw = raw.split(b"\r", 1)[0]
    if raw is not None:
        return basename(raw)
    name = b"object%d" % packet
    ctype = _content_type(ex, direction) if ex is not None else None
    if ctype:
        media = re.split(r"[;\s]", ctype, maxsplit=1)[0].lower()
        name += b"." + media.encode("utf-8", "surrogateescape").split(b"\0", 1)[0]
    return name


def object_name(ex: Exchange | None, packet: int, direction: int = 1, conn: Connection | None = None) -> bytes:
    """The unsuffixed file name tshark gives a body of ``ex`` completed in ``packet``."""
    return massage(raw_name(ex, packet, direction, conn))


def request_target(ex: Exchange) -> str | None:
    """The request target tshark reads the name from: the request line's target (HTTP/1),
    ``:path`` (HTTP/2, HTTP/3), ``url``/``:path`` (SPDY); None without a request."""
    if ex.method is None and ex.path is None and not ex.request_headers:
        return None
    if ex.path:
        return ex.path
    return ex.url or ex.path


class Names:
    """The names of one export, in order: taken when written before or present in the
    directory (``exists(name)``), as tshark 4.0 tests each candidate on disk.

    tshark tries ``name``, ``name(1)``, ``name(2)`` … for every body, from the start; a name
    once taken stays taken (written by this export, or a file there), so the candidates a body
    skipped are taken for the next body of the same name too: each name remembers where its
    search stopped (``next``), and a name whose ``MAX_DUPLICATES`` candidates are all taken is
    refused at once.  The names given are tshark's; the candidates tested (``massage`` and
    ``exists``) are one per body plus one per name taken by another one (linear, where
    starting from ``(1)`` each time was quadratic in the bodies of one name)."""

    def __init__(self, exists: Callable[[bytes], bool] | None = None) -> None:
        self.used: set[bytes] = set()
        self.exists = exists
        self.next: dict[tuple[bool, bytes], int] = {}  # name -> the first candidate not known taken
        self.refused: dict[bytes, int] = {}  # name -> bodies refused (its MAX_DUPLICATES candidates taken)

    def _taken(self, name: bytes) -> bool:
        return name in self.used or (self.exists is not None and self.exists(name))

    def take(self, base_name: bytes, raw: bytes | None = None) -> bytes | None:
        """``base_name`` (the massaged name), or with the first free ``(N)`` (None after
        ``MAX_DUPLICATES``); ``raw`` is the name before massaging (the suffix is placed from
        it, as tshark massages again)."""
        key = (raw is not None, raw if raw is not None else base_name)
        count = self.next.get(key, 0)
        while count < MAX_DUPLICATES:
            name = base_name if not count else massage(raw, count) if raw is not None else _with_dup(base_name, count)
            if not self._taken(name):
                self.used.add(name)
                self.next[key] = count + 1
                return name
            count += 1
        self.next[key] = MAX_DUPLICATES
        self.refused[base_name] = self.refused.get(base_name, 0) + 1
        return None


def _with_dup(name: bytes, dup: int) -> bytes:
    i = _ext_at(name)
    return name[:i] + b"(%d)" % dup + name[i:]


# --------------------------------------------------------------------------- collecting

@dataclass(slots=True)
class _Body:
    conn: int
    direction: int
    size: int = 0  # bytes kept
    seen: int = 0  # bytes the sessions handed over
    chunks: list = field(default_factory=list)  # bytes (memory) or (offset, length) in the spool
    truncated: str | None = None
    compressed_frames: int = 0  # SPDY/2 DATA frames with FLAG_COMPRESS (not undone)


class BodyCollector:
    """``ctx.body_sink``: keeps body bytes per (exchange id, direction), HTTP/3 ones per
    (connection, stream, direction) until the exchanges are known.  ``spool``: a writable
    binary file to append to (else bytes are held in memory).  ``want(conn)``: only the
    connections it accepts are kept.  ``max_body``: bytes kept per body."""

    def __init__(self, spool=None, want: Callable[[Connection], bool] | None = None, max_body: int | None = None):
        self.spool = spool
        self.spool_end = 0
        self.want = want
        self.max_body = max_body
        self.bodies: dict[tuple, _Body] = {}
        self.ctx = None
        self._budgets: dict[int, object] = {}

    def attach(self, ctx) -> None:
        self.ctx = ctx
        ctx.body_sink = self

    def __call__(self, conn: Connection, key, direction: int, data: bytes, compressed: bool = False) -> None:
        if self.want is not None and not self.want(conn):
            return
        bkey = ("ex", key.id, direction) if isinstance(key, Exchange) else ("h3", conn.id, key, direction)
        b = self.bodies.get(bkey)
        if b is None:
            b = self.bodies[bkey] = _Body(conn.id, direction)
        n = len(data)
        b.seen += n
        if compressed:
            b.compressed_frames += 1
        if b.truncated is not None or not n:
            return
        if self.max_body is not None and b.size + n > self.max_body:
            n = self.max_body - b.size
            b.truncated = f"kept the first {self.max_body} bytes"
        budget = self._budget(conn)
        if budget is not None:
            room = 0 if budget.hit else budget.room()
            if n > room:
                if room:
                    budget.take(room)
                budget.take(n - room)  # refused: marks the budget (and the report) as hit
                n = room
                b.truncated = f"budget {BUDGET} ran out (raise it with --limit {BUDGET}=N or {BUDGET}_capture=N)"
            else:
                budget.take(n)
        if n <= 0:
            return
        data = bytes(data[:n])
        if self.spool is not None:
            self.spool.write(data)
            b.chunks.append((self.spool_end, n))
            self.spool_end += n
        else:
            b.chunks.append(data)
        b.size += n

    def _budget(self, conn: Connection):
        if self.ctx is None:
            return None
        bud = self._budgets.get(conn.id)
        if bud is None:
            bud = self._budgets[conn.id] = self.ctx.budget(BUDGET, conn)
        return bud

    def resolve(self, an: Analysis) -> dict[tuple[int, int], _Body]:
        """Bodies by (exchange id, direction): HTTP/3 streams matched to their exchanges."""
        out = {(k[1], k[2]): b for k, b in self.bodies.items() if k[0] == "ex"}
        h3 = {(k[1], k[2], k[3]): b for k, b in self.bodies.items() if k[0] == "h3"}
        if h3:
            for ex in an.exchanges:
                if ex.stream_id is None or protocol_family(ex.protocol) != "http3":
                    continue
                for d in (0, 1):
                    b = h3.get((ex.connection, ex.stream_id, d))
                    if b is not None:
                        out[(ex.id, d)] = b
        return out

    def read(self, b: _Body) -> Iterator[bytes]:
        """The kept bytes of ``b``, chunk by chunk."""
        if self.spool is None:
            yield from b.chunks
            return
        f = self.spool
        f.flush()
        for off, n in b.chunks:
            f.seek(off)
            yield f.read(n)
        f.seek(0, os.SEEK_END)


class _Tap:
    """What ``pipeline._analyze`` asks of a ``parallel.Shard``: ``setup(ctx)`` attaches the
    collector (and returns no marks); ``foreign(4-tuple)`` is True for the TCP connections
    not wanted (None: all wanted); worker 0 (``k``) so that UDP (QUIC) is read."""

    END = 1 << 40
    k = 0
    source = None  # (not a streamed shard: the pass reads the whole capture, numbering it itself)

    def __init__(self, collector: BodyCollector, tcp_keys: set | None = None):
        self.collector = collector
        self.tcp_keys = tcp_keys
        self.moved: dict = {}

    def setup(self, ctx, info=None):
        self.collector.attach(ctx)
        return None

    def records(self, path: str, info, opener=None, inflate_budget=None):
        from .capture import read_capture

        return read_capture(path, info, opener, inflate_budget)

    def foreign(self, key, pkt=None, rec=None) -> bool:
        return self.tcp_keys is not None and key not in self.tcp_keys


def _collect_pass(path: str, collector: BodyCollector, keylogs=None, keylog=None, limits=None,
                  tcp_keys: set | None = None) -> Analysis:
    from .pipeline import _analyze

    return _analyze(path, keylogs=keylogs, keylog=keylog, limits=limits, shard=_Tap(collector, tcp_keys))


# ----------------------------------------------------------------------------- decoding

@dataclass(slots=True)
class Decoded:
    size: int = 0  # decoded bytes produced
    decoded: bool = False  # the content coding was undone (False: identity, or written as it came)
    error: str | None = None
    capped: bool = False


def decode_body(content_encoding: str | None, chunks: Iterable[bytes], write: Callable[[bytes], object],
                cap: int = _content.DEFAULT_CAP, budget=None) -> Decoded:
    """Undo ``content_encoding`` on the body ``chunks``, handing the output to ``write``
    piece by piece (each at most ``content.STEP`` bytes from a zlib/brotli stage), at most
    ``cap`` bytes; ``budget`` (a ``dissectors.budget.Budget``) is charged with the output.
    A body with no coding, an unsupported one, or too many is written as it came."""
    res = Decoded()
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"][::-1]
    if not codings or len(codings) > _content.MAX_CODINGS or not all(_content._available(c) for c in codings):
        if codings:
            res.error = (f"not decoded: {len(codings)} codings" if len(codings) > _content.MAX_CODINGS
                         else f"not decoded: unsupported content-encoding {_content.short(content_encoding)!r}")
        for c in chunks:  # (already charged to the budget as they were kept)
            c = c[: max(cap - res.size, 0)]
            write(c)
            res.size += len(c)
            if res.size >= cap:
                res.capped = True
                break
        return res
    raw: list[bytes] = []  # kept until the first output: a body that does not decode at all is written as it came
    held = 0
    stages: list = []

    class Stop(Exception):
        pass

    def emit(data: bytes) -> None:
        if raw:
            raw.clear()
        n = min(len(data), cap - res.size)
        if budget is not None and not budget.take(n):
            res.error = res.error or f"budget {BUDGET} ran out"
            raise Stop
        if n:
            write(data[:n])
            res.size += n
        if n < len(data) or res.size >= cap:
            res.capped = True
            raise Stop

    def push(i: int, data: bytes) -> None:
        if i == len(stages):
            emit(data)
            return
        for out in stages[i].feed(data):
            push(i + 1, out)

    produced_any = False
    try:
        first = b""
        for c in chunks:
            if not stages:
                first += c[: _content.HEADER_BYTES]
                wins = [_content._window(cd, first if i == 0 else None) for i, cd in enumerate(codings)]
                stages = [_content._stage(cd, w) for cd, w in zip(codings, wins)]
            if not produced_any and held < (4 << 20):
                raw.append(bytes(c))
                held += len(c)
            before = res.size
            push(0, c)
            produced_any = produced_any or res.size > before
        for i, st in enumerate(stages):
            for out in st.finish():
                push(i + 1, out)
        res.decoded = True
    except Stop:
        res.decoded = True
    except Exception as e:  # noqa: BLE001 - a body that does not decode is still written
        res.error = f"{_content.short(content_encoding)}: {type(e).__name__}: {_content.short(str(e))}"
        res.decoded = res.size > 0
        if not res.size and raw:  # nothing came out: the body as it came (what tshark writes)
            for c in raw:
                write(c)
                res.size += len(c)
    return res


# ------------------------------------------------------------------------------- export

@dataclass(slots=True)
class BodyObject:
    """One body written by ``export_objects`` (typed facts; docs/JSON.md "objects")."""

    name: str  # file name in the output directory (surrogate-escaped where not UTF-8)
    exchange: int
    direction: int  # 0: request body, 1: response body
    packet: int  # the packet that completed it (the export's order)
    protocol: str
    url: str | None
    content_type: str | None
    content_encoding: str | None
    wire_bytes: int  # body bytes after transfer framing (HTTP/1 chunks, DATA frames), before content decoding
    size: int  # bytes written
    decoded: bool  # Content-Encoding undone
    error: str | None = None
    truncated: str | None = None  # why fewer bytes were kept or written than the body had
    written: bool = True  # False: not written (``error`` says why: MAX_DUPLICATES files of its name already)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(slots=True)
class ObjectsResult:
    objects: list[BodyObject]
    analysis: Analysis
    directory: str
    full_names: dict[str, int] = field(default_factory=dict)  # name -> bodies refused: MAX_DUPLICATES files of it there

    @property
    def written(self) -> list[BodyObject]:
        """The bodies written to a file of their own."""
        return [o for o in self.objects if o.written]

    @property
    def refused(self) -> list[BodyObject]:
        """The bodies not written: ``MAX_DUPLICATES`` files of their name there already
        (tshark's limit of candidates per name, ``gui_max_export_objects``; tshark overwrites
        the last, wirefall replaces no file)."""
        return [o for o in self.objects if not o.written]


def _complete_packet(ex: Exchange, d: int) -> int:
    p = ex.request_end_packet if d == 0 else ex.response_end_packet
    return p or (ex.request_start_packet if d == 0 else ex.response_start_packet) or 0


def _content_type(ex: Exchange, d: int) -> str | None:
    return ex.content_type if d == 1 else ex.header("content-type", response=False)


def _content_encoding(ex: Exchange, d: int) -> str | None:
    return ex.content_encoding if d == 1 else ex.header("content-encoding", response=False)


def _write_new(dirfd: int, name: bytes) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    return os.open(name, flags, 0o644, dir_fd=dirfd)


def export_objects(path: str, out_dir: str, keylogs: list[str] | None = None, protocol: str | None = None,
                   limits: dict | None = None, keylog=None) -> ObjectsResult:
    """Write every HTTP body of the capture at ``path`` into ``out_dir`` (made if missing),
    content-encoding undone, named as tshark names them (module docstring: a file already
    there is never replaced).  ``protocol``: one of ``PROTOCOLS`` (None: all)."""
    if protocol is not None and protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}: one of {', '.join(PROTOCOLS)}")
    os.makedirs(out_dir, exist_ok=True)
    dirfd = os.open(out_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        with tempfile.TemporaryFile(prefix="wirefall-objects-") as spool:
            col = BodyCollector(spool=spool)
            an = _collect_pass(path, col, keylogs=keylogs, keylog=keylog, limits=limits)
            bodies = col.resolve(an)
            exs = {e.id: e for e in an.exchanges}
            order = sorted(bodies.items(), key=lambda kv: (_complete_packet(exs[kv[0][0]], kv[0][1]), kv[0][0], kv[0][1]))
            cap = (limits or {}).get("body_decoded_bytes", _content.DEFAULT_CAP)
            def exists(name: bytes) -> bool:
                try:
                    os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                except FileNotFoundError:
                    return False
                except OSError as e:  # a name too long for the file system is not taken (cut when opened)
                    return e.errno != errno.ENAMETOOLONG
                return True

            names = Names(exists)
            out: list[BodyObject] = []
            conns = {c.id: c for c in an.connections}
            for (eid, d), b in order:
                ex = exs[eid]
                if not b.seen or (protocol is not None and protocol_family(ex.protocol) != protocol):
                    continue
                pkt = _complete_packet(ex, d)
                raw = raw_name(ex, pkt, d, conns.get(ex.connection))
                taken = names.take(massage(raw), raw)
                if taken is None:
                    out.append(BodyObject(name="", exchange=eid, direction=d, packet=pkt, protocol=ex.protocol, url=ex.url,
                                          content_type=_content_type(ex, d), content_encoding=_content_encoding(ex, d),
                                          wire_bytes=b.seen, size=0, decoded=False, written=False,
                                          error=f"not written: {MAX_DUPLICATES} files of this name already"))
                    continue
                fd, name = _open_named(dirfd, taken)
                budget = col._budget(conns[b.conn]) if b.conn in conns else None
                with os.fdopen(fd, "wb") as f:
                    coding = _content_encoding(ex, d)
                    if b.compressed_frames:
                        coding = None  # SPDY/2 compressed DATA: written as it came
                    res = decode_body(coding, col.read(b), f.write, cap=cap, budget=budget)
                trunc = b.truncated or (f"decoded body cut at {cap} bytes (body_decoded_bytes)" if res.capped else None)
                if b.compressed_frames and res.error is None:
                    res.error = f"{b.compressed_frames} DATA frames compressed (SPDY FLAG_COMPRESS): written as they came"
                out.append(BodyObject(name=os.fsdecode(name), exchange=eid, direction=d, packet=pkt, protocol=ex.protocol,
                                      url=ex.url, content_type=_content_type(ex, d), content_encoding=_content_encoding(ex, d),
                                      wire_bytes=b.seen, size=res.size, decoded=res.decoded, error=res.error, truncated=trunc))
    finally:
        os.close(dirfd)
    return ObjectsResult(out, an, out_dir, {os.fsdecode(k): v for k, v in names.refused.items()})


def _open_named(dirfd: int, name: bytes) -> tuple[int, bytes]:
    """Open ``name`` (new) in the directory for writing, and the name opened: one the file
    system refuses as too long (shorter than 255 bytes there) is cut further, on a character
    boundary (tshark would fail to write it)."""
    try:
        return _write_new(dirfd, name), name
    except OSError as e:
        if e.errno != errno.ENAMETOOLONG:
            raise
        i = _ext_at(name)
        ext = _tail(name[i:], 32)
        name = _cut(name, max(MAX_NAME - len(ext) - 8, 1)) + ext
        return _write_new(dirfd, name), name


# --------------------------------------------------------------------------- one body

@dataclass(slots=True)
class RawBody:
    """The body bytes of one message as they were on the wire after transfer framing."""

    data: bytes
    seen: int  # bytes the capture held (``data`` may be fewer: ``truncated``)
    truncated: str | None = None
    compressed_frames: int = 0
    error: str | None = None  # why no body could be read


def _exchange_key(an: Analysis, ex: Exchange) -> tuple[int, int]:
    """Where ``ex`` is in another pass over the same capture: its connection's first packet
    and its place among the connection's exchanges."""
    conn = an.connections[ex.connection]
    i = sum(1 for e in an.exchanges if e.connection == ex.connection and e.id < ex.id)
    return conn.first_packet, i


def _find(an: Analysis, key: tuple[int, int]) -> Exchange | None:
    first, i = key
    conn = next((c for c in an.connections if c.first_packet == first), None)
    if conn is None:
        return None
    mine = [e for e in an.exchanges if e.connection == conn.id]
    return mine[i] if i < len(mine) else None


def _tcp_keys(an: Analysis, conn: Connection) -> set | None:
    """The packed 4-tuples (both directions) of a TCP connection, as the pipeline keys it."""
    import socket

    def pack(a: str) -> bytes:
        return socket.inet_pton(socket.AF_INET6 if ":" in a else socket.AF_INET, a)

    try:
        c, s = (pack(conn.client[0]), conn.client[1]), (pack(conn.server[0]), conn.server[1])
    except (OSError, ValueError):
        return None
    return {(c[0], c[1], s[0], s[1]), (s[0], s[1], c[0], c[1])}


CACHE_BODIES = 64  # bodies kept per analysis for the views (each at most max_bytes)


def exchange_body(an: Analysis, ex: Exchange, direction: int = 1, max_bytes: int = 16 << 20) -> RawBody:
    """The body of ``ex`` (``direction`` 1: response, 0: request); see ``exchange_bodies``."""
    return exchange_bodies(an, [(ex, direction)], max_bytes)[(ex.id, direction)]


def exchange_bodies(an: Analysis, wanted: list[tuple[Exchange, int]], max_bytes: int = 16 << 20) -> dict[tuple[int, int], RawBody]:
    """The bodies of ``wanted`` ((exchange, direction) pairs; direction 1: the response, 0:
    the request), read again from the capture in one pass that dissects only their TCP
    connections' packets (and the UDP flows); a second pass over the whole capture for those
    the first did not find (e.g. a TLS resumption that needs an earlier connection).  At
    most ``max_bytes`` kept per body.  Cached on the analysis (the last ``CACHE_BODIES``)."""
    from collections import OrderedDict

    cache = an.__dict__.setdefault("_wf_bodies", OrderedDict())
    out: dict[tuple[int, int], RawBody] = {}
    todo: list[tuple[Exchange, int]] = []
    for ex, d in wanted:
        ck = (ex.id, d, max_bytes)
        if ck in cache:
            cache.move_to_end(ck)
            out[(ex.id, d)] = cache[ck]
        elif not (ex.request_body_bytes if d == 0 else ex.response_body_bytes):
            out[(ex.id, d)] = RawBody(b"", 0)
        elif an.source != "capture" or not an.packets:
            out[(ex.id, d)] = RawBody(b"", 0, error="no capture behind this analysis (a browser log holds no bodies)")
        elif not 0 <= ex.connection < len(an.connections):
            out[(ex.id, d)] = RawBody(b"", 0, error="no such connection")
        else:
            todo.append((ex, d))
    if todo:
        conns = {ex.connection: an.connections[ex.connection] for ex, _ in todo}
        keys: set | None = set()
        for c in conns.values():
            k = _tcp_keys(an, c) if c.transport == "tcp" else None
            if k is None and c.transport == "tcp":
                keys = None
                break
            if keys is not None and k:
                keys |= k
        firsts = {c.first_packet for c in conns.values()}
        where = {(ex.id, d): _exchange_key(an, ex) for ex, d in todo}
        tries = [keys, None] if keys is not None and any(c.transport == "tcp" for c in conns.values()) else [None]
        for tk in tries:
            left = [(ex, d) for ex, d in todo if (ex.id, d) not in out]
            if not left:
                break
            col = BodyCollector(want=lambda c: c.first_packet in firsts, max_body=max_bytes)
            try:
                an2 = _collect_pass(an.path, col, keylog=an.keylog, tcp_keys=tk)
            except (OSError, ValueError) as e:
                for ex, d in left:
                    out[(ex.id, d)] = RawBody(b"", 0, error=f"cannot read the capture again: {_content.short(str(e))}")
                break
            found = col.resolve(an2)
            for ex, d in left:
                ex2 = _find(an2, where[(ex.id, d)])
                b = found.get((ex2.id, d)) if ex2 is not None else None
                if b is not None and b.seen:
                    out[(ex.id, d)] = RawBody(b"".join(col.read(b)), b.seen, b.truncated, b.compressed_frames)
        for ex, d in todo:
            got = out.setdefault((ex.id, d), RawBody(b"", 0, error="the body's bytes were not found again "
                                                                  "(not decrypted, or lost by the capture)"))
            cache[(ex.id, d, max_bytes)] = got
        while len(cache) > CACHE_BODIES:
            cache.popitem(last=False)
    return out
