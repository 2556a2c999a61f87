"""Server-side state of the web dashboard: the captures it may read, their analysis in
background threads, and uploads in a private temporary folder.

Only two kinds of files are ever read: those named on the command line and those
uploaded through the page (written by this module into its own folder, under names it
makes up — an uploaded file's name is only ever shown, never used as a path).  Callbacks
refer to captures by id (``c1``, ``c2`` …), never by path.
"""
from __future__ import annotations

import base64
import binascii
import os
import secrets
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

DEFAULT_UPLOAD_LIMIT = 200 * 1024 * 1024
DEFAULT_KEYLOG_LIMIT = 16 * 1024 * 1024
CAPTURE_MAGICS = (
    b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d",  # pcap
    b"\x0a\x0d\x0d\x0a",  # pcapng
    b"\x1f\x8b", b"\xfd7zXZ\x00", b"BZh", b"\x28\xb5\x2f\xfd",  # gzip, xz, bzip2, zstd
)


class UploadError(ValueError):
    pass


def fmt_size(n: int) -> str:
    for unit in ("bytes", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024.0
    return str(n)


@dataclass
class Entry:
    id: str
    name: str  # what the page shows (the command-line path, or the uploaded file's name)
    path: str
    keylogs: list[str]
    origin: str  # "file" | "upload"
    keylog_names: list[str] = field(default_factory=list)
    status: str = "queued"  # queued | running | done | error
    packets: int = 0
    done_bytes: int = 0
    total_bytes: int = 0
    analysis: Any = None
    error: str | None = None
    from_cache: bool = False
    seconds: float = 0.0
    _source: Any = None
    _memo: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def fraction(self) -> float:
        if self.status == "done":
            return 1.0
        return min(self.done_bytes / self.total_bytes, 1.0) if self.total_bytes else 0.0

    def status_text(self) -> str:
        if self.status == "queued":
            return f"{self.name}: waiting to be analysed"
        if self.status == "running":
            return f"{self.name}: analysing… {self.packets:,} packets, {100 * self.fraction:.0f}%"
        if self.status == "error":
            return f"{self.name}: {self.error}"
        an = self.analysis
        how = "from the cache" if self.from_cache else f"analysed in {self.seconds:.2f} s"
        return f"{self.name}: {an.packets:,} packets, {len(an.connections)} connections, {len(an.exchanges)} requests ({how})"

    def label(self) -> str:
        mark = {"queued": " (waiting)", "running": " (analysing…)", "error": " (error)"}.get(self.status, "")
        return f"{self.id}: {self.name}{mark}"

    @property
    def source(self):
        """Random access to packet bytes (analyzer.capture.PacketSource), opened on demand."""
        with self.lock:
            if self._source is None:
                from analyzer.capture import PacketSource

                self._source = PacketSource(self.path)
            return self._source

    def memo(self, key, make: Callable[[], Any], keep: int = 24):
        """Per-capture memo of derived views (waterfall, stats, filtered views)."""
        with self.lock:
            if key in self._memo:
                v = self._memo.pop(key)
                self._memo[key] = v  # most recently used last
                return v
        v = make()
        with self.lock:
            self._memo[key] = v
            while len(self._memo) > keep:
                self._memo.pop(next(iter(self._memo)))
        return v

    def close(self) -> None:
        with self.lock:
            if self._source is not None:
                try:
                    self._source.close()
                except OSError:
                    pass
                self._source = None


class WebState:
    """Captures, their background analysis and the upload folder of one app."""

    def __init__(self, upload_limit: int = DEFAULT_UPLOAD_LIMIT, keylog_limit: int = DEFAULT_KEYLOG_LIMIT,
                 workers: int = 2, use_cache: bool = True, analyze: Callable | None = None):
        self.upload_limit = upload_limit
        self.keylog_limit = keylog_limit
        self.use_cache = use_cache
        self._analyze = analyze  # for tests: a stand-in for analyzer.pipeline.analyze
        self.entries: dict[str, Entry] = {}
        self._lock = threading.Lock()
        self._n = 0  # captures: c1, c2 …
        self._uploads = 0  # upload files: upload-1, upload-2 …
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="wirefall-analyse")
        self._tmpdir: str | None = None
        self._staged: dict[str, tuple[str, str, str, int]] = {}  # token -> (kind, path, name, size)
        self.closed = False

    # ------------------------------------------------------------------ captures

    def add_file(self, path: str, keylogs: list[str] | None = None, name: str | None = None, origin: str = "file",
                 keylog_names: list[str] | None = None) -> Entry:
        with self._lock:
            self._n += 1
            eid = f"c{self._n}"
            e = Entry(id=eid, name=name or path, path=path, keylogs=list(keylogs or []), origin=origin,
                      keylog_names=list(keylog_names if keylog_names is not None else (keylogs or [])))
            self.entries[eid] = e
        try:
            e.total_bytes = os.path.getsize(path)
        except OSError:
            pass
        self._pool.submit(self._run, e)
        return e

    def get(self, eid: str | None) -> Entry | None:
        return self.entries.get(eid) if eid else None

    def list(self) -> list[Entry]:
        return list(self.entries.values())

    def pending(self) -> bool:
        return any(e.status in ("queued", "running") for e in self.entries.values())

    def wait(self, eid: str, timeout: float = 60.0) -> Entry:
        """Block until ``eid`` is analysed (tests, scripts)."""
        e = self.entries[eid]
        end = time.monotonic() + timeout
        while e.status in ("queued", "running") and time.monotonic() < end:
            time.sleep(0.02)
        return e

    def _run(self, e: Entry) -> None:
        if self.closed:
            return
        from analyzer.cache import analyze_cached

        e.status = "running"
        t = time.monotonic()

        def progress(packets: int, done: int, total: int) -> None:
            e.packets, e.done_bytes = packets, done
            if total:
                e.total_bytes = total

        try:
            an, hit = analyze_cached(e.path, keylogs=e.keylogs or None, progress=progress, use_cache=self.use_cache,
                                     analyze=self._analyze)
        except Exception as ex:  # noqa: BLE001 - a bad capture is a message in the page
            e.error = _error_text(ex, e)
            e.status = "error"
            return
        e.analysis, e.from_cache = an, hit
        e.packets = an.packets
        e.seconds = time.monotonic() - t
        e.status = "done"

    # ------------------------------------------------------------------ uploads

    @property
    def tmpdir(self) -> str:
        with self._lock:
            if self._tmpdir is None:
                self._tmpdir = tempfile.mkdtemp(prefix="wirefall-web-")  # mode 0700
                os.chmod(self._tmpdir, 0o700)
            return self._tmpdir

    def stage_upload(self, kind: str, filename: str | None, contents: str | None) -> dict:
        """Decode one dcc.Upload ``contents`` (a data: URL) and keep it in the private folder.
        ``kind`` is "capture" or "keylog".  Returns ``{"token", "name", "size"}``; raises
        ``UploadError`` with a message for the page."""
        if kind not in ("capture", "keylog"):
            raise UploadError("unknown upload kind")
        name = _display_name(filename)
        limit = self.upload_limit if kind == "capture" else self.keylog_limit
        if not contents or not isinstance(contents, str) or "," not in contents:
            raise UploadError(f"{name}: the upload is empty")
        b64 = contents.split(",", 1)[1]
        approx = len(b64) * 3 // 4
        if approx > limit + 2:
            raise UploadError(f"{name} is {fmt_size(approx)}; the limit for a {'capture' if kind == 'capture' else 'key log'} "
                              f"upload is {fmt_size(limit)} (start the server with a larger --upload-limit, or name the file "
                              f"on the command line)")
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise UploadError(f"{name}: the upload is not valid base64 data") from None
        if not data:
            raise UploadError(f"{name}: the file is empty")
        if kind == "capture":
            if not any(data.startswith(m) for m in CAPTURE_MAGICS):
                from analyzer.browserlog.detect import sniff  # a HAR, NetLog or qlog opens as a capture does

                if sniff(data[:65536]) is None:
                    raise UploadError(f"{name} is not a pcap or pcapng capture (nor a gzip/xz/bzip2/zstd-compressed one), "
                                      "nor a HAR, Chrome NetLog or qlog")
        else:
            from analyzer.keylog import KeyLog

            kl = KeyLog()
            if data[:2] == b"\x1f\x8b":  # gzip-compressed key log (as KeyLog.add_file reads them)
                data = _gunzip(data, limit, name)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise UploadError(f"{name} is not a key log (not text)") from None
            if kl.add_text(text, "upload") == 0:
                raise UploadError(f"{name} is not a key log: no CLIENT_RANDOM or *_SECRET lines (NSS key log format)")
        with self._lock:
            self._uploads += 1
            n = self._uploads
        path = os.path.join(self.tmpdir, f"upload-{n}.{'cap' if kind == 'capture' else 'keys'}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        token = secrets.token_urlsafe(16)
        self._staged[token] = (kind, path, name, len(data))
        return {"token": token, "name": name, "size": len(data)}

    def open_staged(self, capture_token: str, keylog_token: str | None = None) -> Entry:
        cap = self._staged.get(capture_token or "")
        if cap is None or cap[0] != "capture":
            raise UploadError("upload a capture first")
        keylogs, knames = [], []
        if keylog_token:
            k = self._staged.get(keylog_token)
            if k is None or k[0] != "keylog":
                raise UploadError("the key log upload was not found; upload it again")
            keylogs, knames = [k[1]], [k[2]]
        return self.add_file(cap[1], keylogs=keylogs, name=cap[2], origin="upload", keylog_names=knames)

    def close(self) -> None:
        """Stop background work and remove the upload folder (called when the app stops)."""
        self.closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        for e in self.entries.values():
            e.close()
        with self._lock:
            d, self._tmpdir = self._tmpdir, None
        if d is not None:
            shutil.rmtree(d, ignore_errors=True)


def _gunzip(data: bytes, limit: int, name: str) -> bytes:
    import zlib

    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error:
        raise UploadError(f"{name}: broken gzip data") from None
    if len(out) > limit:
        raise UploadError(f"{name}: more than {fmt_size(limit)} once decompressed")
    return out


def _display_name(filename: Any) -> str:
    if isinstance(filename, list):
        filename = filename[0] if filename else None
    name = str(filename or "upload")
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch if ch.isprintable() else "?" for ch in name)[:120]
    return name or "upload"


def _error_text(ex: Exception, e: Entry) -> str:
    msg = str(ex) or ex.__class__.__name__
    if e.origin == "upload":
        msg = msg.replace(e.path, e.name)
        for p, n in zip(e.keylogs, e.keylog_names):
            msg = msg.replace(p, n)
    from analyzer.capture import CaptureError

    if isinstance(ex, CaptureError):
        return msg
    return f"analysis failed: {ex.__class__.__name__}: {msg}"
