"""Server-side state of the web dashboard: the captures it may read, their analysis in
background threads, and uploads in a private temporary folder.

Only two kinds of files are ever read: those named on the command line and those
uploaded through the page (written by this module into its own folder, under names it
makes up — an uploaded file's name is only ever shown, never used as a path).  Callbacks
refer to captures by id (``c1``, ``c2`` …), never by path.
"""
from __future__ import annotations

import base64
import builtins
import binascii
import os
import secrets
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable


DEFAULT_UPLOAD_LIMIT = 200 * 1024 * 1024
DEFAULT_KEYLOG_LIMIT = 16 * 1024 * 1024
DEFAULT_UPLOAD_LIFETIME = 3600.0  # seconds an upload may go unused before it is deleted
UPLOAD_CHUNK = 1 << 20
CAPTURE_MAGICS = (
    b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d",  # pcap
    b"\x0a\x0d\x0d\x0a",  # pcapng
    b"\x1f\x8b", b"\xfd7zXZ\x00", b"BZh", b"\x28\xb5\x2f\xfd",  # gzip, xz, bzip2, zstd
) + tuple(bytes([0x50 + i, 0x2A, 0x4D, 0x18]) for i in range(16))  # zstd skippable frames (pzstd starts with one)


class UploadError(ValueError):
    pass


def fmt_size(n: int) -> str:
    """Binary units, named as such (1 MiB = 1,048,576 bytes)."""
    size: float = n
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024.0
    return str(size)


@dataclass
class Job:
    """A slow view of one capture computed on demand in the analysis workers
    (``WebState.start_job``): the page shows its state at each poll and never waits for it."""
    status: str = "queued"  # queued | running | done | error
    value: Any = None
    error: str | None = None
    seconds: float = 0.0  # how long it ran (done or error)


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
    _building: dict = field(default_factory=dict)  # memo keys being built -> Event set when done (Entry.memo)
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)  # by a callback (uploads are deleted when idle)
    tokens: list = field(default_factory=list)  # staged uploads this entry was opened from
    overlays: list = field(default_factory=list)  # browser logs laid over it: (kind, path, shown name) (ui.web.overlay)
    live: Any = None  # a live capture's ui.web.live.WebLive (its analysis grows; origin "live")
    har_page: int | None = None  # a HAR of several pages: the page asked for (1-based; 0: all; None: the first), ui.web.harpages
    _gen: Any = None  # the live model's generation the memo holds views of
    jobs: dict = field(default_factory=dict)  # views computed on demand: key -> Job (WebState.start_job)

    @property
    def fraction(self) -> float:
        if self.status == "done":
            return 1.0
        return min(self.done_bytes / self.total_bytes, 1.0) if self.total_bytes else 0.0

    def status_text(self) -> str:
        from wirefall.analyzer.safetext import printable

        return printable(self._status_text())

    def _status_text(self) -> str:
        if self.live is not None:
            return self.live.status_text()
        if self.status == "queued":
            return f"{self.name}: waiting to be analysed"
        if self.status == "running":
            return f"{self.name}: analysing… {self.packets:,} packets, {100 * self.fraction:.0f}%"
        if self.status == "error":
            err = self.error or ""
            return err if err.startswith(self.name) else f"{self.name}: {err}"  # the message may name the file already
        an = self.analysis
        how = "from the cache" if self.from_cache else f"analysed in {self.seconds:.2f} s"
        from wirefall.analyzer.model import connections_text

        return f"{self.name}: {an.packets:,} packets, {connections_text(an)} ({how})"

    def label(self) -> str:
        from wirefall.analyzer.safetext import printable

        mark = {"queued": " (waiting)", "running": " (analysing…)", "error": " (error)"}.get(self.status, "")
        if self.live is not None and self.status != "error":
            mark = self.live.label_mark()
        if self.har_page is not None:  # (the entry of a HAR page asked for: ui.web.harpages)
            mark = (" · HAR: every page" if self.har_page == 0 else f" · HAR page {self.har_page}") + mark
        return f"{self.id}: {printable(self.name)}{mark}"

    @property
    def source(self):
        """Random access to packet bytes (analyzer.capture.PacketSource), opened on demand."""
        with self.lock:
            if self._source is None:
                from wirefall.analyzer.capture import PacketSource

                self._source = PacketSource(self.path)
            return self._source

    def touch(self) -> None:
        self.last_used = time.monotonic()

    def memo(self, key, make: Callable[[], Any], keep: int = 24):
        """Per-capture memo of derived views (waterfall, stats, filtered views).  A live capture's
        views are kept for the model's present generation only (ui.web.live), and built again
        while they meet a half-made object."""
        if self.live is not None:
            gen = self.live.generation()
            with self.lock:
                if gen != self._gen:
                    self._memo.clear()
                    self._gen = gen
            key = (gen, key)  # one built from an earlier generation is stored under its own key: never shown
            make = (lambda m: lambda: self.live.steady(m))(make)
        while True:
            with self.lock:
                if key in self._memo:
                    v = self._memo.pop(key)
                    self._memo[key] = v  # most recently used last
                    return v
                if self.live is not None:  # (a live model's views: built by each caller, as they meet a changing model)
                    busy = None
                    break
                busy = self._building.get(key)
                if busy is None:  # this thread builds it; callbacks asking meanwhile wait for it (one build, not one each)
                    busy = self._building[key] = threading.Event()
                    break
            busy.wait(600)  # then take it from the memo (or, the build failed, build it here: its error is ours too)
        try:
            v = make()
            with self.lock:
                self._memo[key] = v
                while len(self._memo) > keep:
                    self._memo.pop(next(iter(self._memo)))
        finally:
            if busy is not None:
                with self.lock:
                    self._building.pop(key, None)
                busy.set()
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
                 workers: int = 2, use_cache: bool = True, analyze: Callable | None = None,
                 limits: dict | None = None, upload_lifetime: float = DEFAULT_UPLOAD_LIFETIME):
        self.upload_limit = upload_limit
        self.limits = dict(limits) if limits else None  # --limit NAME=N: analyze(limits=...)
        self.upload_lifetime = float(upload_lifetime)
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
        self._used: dict[str, float] = {}  # token -> when it was staged or last opened (monotonic)
        self._opened: set[str] = set()  # tokens of staged uploads an entry reads
        self._sweeper: threading.Thread | None = None
        self._stop = threading.Event()
        self.closed = False
        # the graph's width (px) the last page said (its ``wf-width``, app.cb_waterfall): the
        # warm-up makes the first figure for it too (None: no page has said one yet)
        self.graph_px: int | None = None

    # ------------------------------------------------------------------ captures

    def add_entry(self, **kw) -> Entry:
        """A new entry with the next id (``Entry`` fields but ``id``), listed; not analysed."""
        with self._lock:
            self._n += 1
            e = Entry(id=f"c{self._n}", **kw)
            self.entries[e.id] = e
        return e

    def add_file(self, path: str, keylogs: list[str] | None = None, name: str | None = None, origin: str = "file",
                 keylog_names: list[str] | None = None, overlays: list[tuple[str, str, str]] | None = None,
                 har_page: int | None = None) -> Entry:
        e = self.add_entry(name=name or path, path=path, keylogs=list(keylogs or []), origin=origin,
                           keylog_names=list(keylog_names if keylog_names is not None else (keylogs or [])),
                           overlays=list(overlays or []), har_page=har_page)
        try:
            e.total_bytes = os.path.getsize(path)
        except OSError:
            pass
        self._pool.submit(self._run, e)
        return e

    def get(self, eid: str | None) -> Entry | None:
        e = self.entries.get(eid) if eid else None
        if e is not None:
            e.touch()
        return e

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
        from wirefall.analyzer.cache import analyze_cached

        e.status = "running"
        t = time.monotonic()

        def progress(packets: int, done: int, total: int) -> None:
            e.packets, e.done_bytes = packets, done
            if total:
                e.total_bytes = total

        limits = self.limits_of(e)
        try:
            an, hit = analyze_cached(e.path, keylogs=e.keylogs or None, progress=progress, use_cache=self.use_cache,
                                     analyze=self._analyze, limits=limits)
            if e.overlays:  # --har/--netlog/--qlog, or a browser log uploaded beside it
                from .overlay import apply_overlays

                apply_overlays(an, e, limits)
        except Exception as ex:  # noqa: BLE001 - a bad capture is a message in the page
            e.error = _error_text(ex, e)
            e.status = "error"
            return
        e.analysis, e.from_cache = an, hit
        e.packets = an.packets
        e.seconds = time.monotonic() - t
        e.status = "done"
        if e.live is None:
            self._warm(e, self.graph_px)

    def limits_of(self, e: Entry) -> dict | None:
        """The ``limits`` ``e`` is analysed with: the server's (``--limit``, ``--har-page``) and the
        HAR page asked for in the page (``Entry.har_page``, as the CLI's ``--har-page``)."""
        if e.har_page is None:
            return self.limits
        return {**(self.limits or {}), "har_page": e.har_page}

    @staticmethod
    def _warm(e: Entry, graph_px: int | None = None) -> None:
        """The waterfall model and the filters' options built once the analysis is done, in this
        (background) thread: the page's first callbacks find them in the memo (or wait for this
        build, Entry.memo) — while the browser is still fetching its JavaScript — instead of the
        filters' callback building the model while the waterfall's waits for its answer.
        The first figure is laid out for the page's default width (a 1200-1299 px graph) and for
        ``graph_px``, the width the last page said (its row labels take its room: built by the
        page's callback, the figure took 80-220 ms more than the warm copy's 5-10 ms)."""
        try:
            from . import views

            views.filter_options(e)
            v = views.filtered_view(e)  # (the view of no filter, which the waterfall and its pager draw first)
            # the page's first figure (its first window, kept as JSON: views.page_figure) — and with
            # it plotly's figure classes and validators, made on first use (0.1 s otherwise)
            views.page_figure(e, v, title=e.name, revision=e.id, start=0)
            if graph_px is not None and views.label_room_for(views.NARROWEST_PAGE, graph_px) != views.NARROWEST_PAGE:
                views.page_figure(e, v, title=e.name, revision=e.id, start=0, graph_px=graph_px)
        except Exception:  # noqa: BLE001 - the callbacks build it again and say why
            pass

    def start_job(self, e: Entry, key, make: Callable[[], Any]) -> Job:
        """``make()`` computed for ``e`` in the analysis workers, as an analysis is (a callback
        never waits for it: the page polls ``e.jobs[key]``), kept as ``e.jobs[key]`` in place of
        the one before.  One still queued or running is returned as it is: pressed twice, the
        work is done once."""
        with e.lock:
            job = e.jobs.get(key)
            if job is not None and job.status in ("queued", "running"):
                return job
            job = e.jobs[key] = Job()
        try:
            self._pool.submit(self._run_job, job, make)
        except RuntimeError:  # (the pool is shut down: the server is stopping)
            job.error, job.status = "the server is stopping", "error"
        return job

    @staticmethod
    def _run_job(job: Job, make: Callable[[], Any]) -> None:
        job.status = "running"
        t = time.monotonic()
        try:
            value = make()
        except Exception as ex:  # noqa: BLE001 - a failed view is a message in the page
            job.error = f"{ex.__class__.__name__}: {ex}"
            job.seconds = time.monotonic() - t
            job.status = "error"
            return
        job.value, job.seconds = value, time.monotonic() - t
        job.status = "done"  # (last: a poll that reads "done" finds the value)

    # ------------------------------------------------------------------ uploads

    @property
    def tmpdir(self) -> str:
        with self._lock:
            if self._tmpdir is None:
                self._tmpdir = tempfile.mkdtemp(prefix="wirefall-web-")  # mode 0700
                os.chmod(self._tmpdir, 0o700)
            return self._tmpdir

    def _too_large(self, kind: str, name: str, size: int) -> UploadError:
        limit = self.upload_limit if kind == "capture" else self.keylog_limit
        return UploadError(f"{name} is {fmt_size(size)}; the limit for a {'capture' if kind == 'capture' else 'key log'} "
                           f"upload is {fmt_size(limit)} (start the server with a larger --upload-limit, or name the file "
                           f"on the command line)")

    def stage_upload(self, kind: str, filename: str | None, contents: str | None, replaces: str | None = None) -> dict:
        """Decode one dcc.Upload ``contents`` (a data: URL) and keep it in the private folder.
        ``kind`` is "capture" or "keylog".  Returns ``{"token", "name", "size"}``; raises
        ``UploadError`` with a message for the page.  (The page itself sends the raw bytes
        to ``/_wirefall/upload/KIND``, which ``stage_stream`` writes to disk as they come:
        a data: URL is the file 4/3 times over, held in memory several times.)"""
        if kind not in ("capture", "keylog"):
            raise UploadError("unknown upload kind")
        name = _display_name(filename)
        limit = self.upload_limit if kind == "capture" else self.keylog_limit
        if not contents or not isinstance(contents, str) or "," not in contents:
            raise UploadError(f"{name}: the upload is empty")
        b64 = contents.split(",", 1)[1]
        approx = len(b64) * 3 // 4
        if approx > limit + 2:
            raise self._too_large(kind, name, approx)
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise UploadError(f"{name}: the upload is not valid base64 data") from None
        import io

        return self.stage_stream(kind, filename, io.BytesIO(data), replaces=replaces)

    def stage_stream(self, kind: str, filename: str | None, stream, length: int | None = None,
                     replaces: str | None = None) -> dict:
        """Write an upload read from ``stream`` (``read(n)``; the HTTP request body) into the
        private folder in 1 MiB steps, never holding more of it than one step (a key log,
        at most ``keylog_limit``, is read back to be checked).  ``length``: the size the
        client announced, refused at once if over the limit.  ``replaces``: the token of the
        page's previous upload of this kind, deleted now unless it was opened.  Returns
        ``{"token", "name", "size"}``; raises ``UploadError`` with a message for the page."""
        if kind not in ("capture", "keylog"):
            raise UploadError("unknown upload kind")
        name = _display_name(filename)
        limit = self.upload_limit if kind == "capture" else self.keylog_limit
        if length is not None and length > limit:
            raise self._too_large(kind, name, length)
        self.sweep()
        with self._lock:
            self._uploads += 1
            n = self._uploads
        path = os.path.join(self.tmpdir, f"upload-{n}.{'cap' if kind == 'capture' else 'keys'}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        size = 0
        head = b""
        try:
            with os.fdopen(fd, "wb") as f:
                while True:
                    chunk = stream.read(UPLOAD_CHUNK)
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > limit:
                        raise self._too_large(kind, name, length if length is not None and length > size else size)
                    if len(head) < 65536:  # (a capture's magic; a browser log is sniffed from its start)
                        head += chunk[: 65536 - len(head)]
                    f.write(chunk)
            if not size:
                raise UploadError(f"{name}: the file is empty")
            if kind == "capture":
                if not any(head.startswith(m) for m in CAPTURE_MAGICS):
                    from wirefall.analyzer.browserlog.detect import sniff  # a HAR, NetLog or qlog opens as a capture does

                    if sniff(head) is None:
                        raise UploadError(f"{name} is not a pcap or pcapng capture (nor a gzip/xz/bzip2/zstd-compressed one), "
                                          "nor a HAR, Chrome NetLog or qlog")
            else:
                _check_keylog(path, limit, name)
        except BaseException:
            try:
                os.unlink(path)
            except OSError:
                pass
            raise
        token = secrets.token_urlsafe(16)
        with self._lock:
            self._staged[token] = (kind, path, name, size)
            self._used[token] = time.monotonic()
        if replaces and replaces != token:
            self.discard_staged(replaces, kind)
        self._start_sweeper()
        return {"token": token, "name": name, "size": size}

    def staged(self, token: str | None) -> dict | None:
        """``{"token", "kind", "name", "size"}`` of a staged upload (None if unknown or gone)."""
        st = self._staged.get(token or "")
        if st is None:
            return None
        return {"token": token, "kind": st[0], "name": st[2], "size": st[3]}

    def discard_staged(self, token: str, kind: str | None = None) -> bool:
        """Delete a staged upload that was not opened (a newer upload replaced it)."""
        with self._lock:
            st = self._staged.get(token)
            if st is None or (kind is not None and st[0] != kind) or token in self._opened:
                return False
            del self._staged[token]
            self._used.pop(token, None)
        try:
            os.unlink(st[1])
        except OSError:
            pass
        return True

    def opened_from(self, capture_token: str | None, keylog_token: str | None) -> Entry | None:
        """The entry already opened from these two staged uploads (Analyse pressed again)."""
        want = [t for t in (capture_token, keylog_token) if t]
        for e in self.entries.values():
            if e.origin == "upload" and e.tokens == want:
                return e
        return None

    def add_keylog(self, eid: str, keylog_token: str) -> Entry:
        """The capture ``eid`` analysed again with the staged key log added to its own."""
        e = self.entries.get(eid)
        if e is None:
            raise UploadError("no capture open to add the key log to")
        k = self._staged.get(keylog_token or "")
        if k is None or k[0] != "keylog":
            raise UploadError("the key log upload was not found; upload it again")
        with self._lock:
            self._opened.add(keylog_token)
            self._used[keylog_token] = time.monotonic()
        n = self.add_file(e.path, keylogs=[*e.keylogs, k[1]], name=e.name, origin=e.origin,
                          keylog_names=[*e.keylog_names, k[2]])
        n.tokens = [t for t in (*(e.tokens[:1] if e.origin == "upload" else ()), keylog_token) if t]
        if e.origin == "upload" and e.tokens:
            with self._lock:
                self._opened.add(e.tokens[0])
        return n

    def open_staged(self, capture_token: str | None, keylog_token: str | None = None) -> Entry:
        cap = self._staged.get(capture_token or "")
        if cap is None or cap[0] != "capture":
            raise UploadError("upload a capture first")
        keylogs, knames = [], []
        if keylog_token:
            k = self._staged.get(keylog_token)
            if k is None or k[0] != "keylog":
                raise UploadError("the key log upload was not found; upload it again")
            keylogs, knames = [k[1]], [k[2]]
        with self._lock:
            now = time.monotonic()
            for t in (capture_token, keylog_token):
                if t:
                    self._opened.add(t)
                    self._used[t] = now
        e = self.add_file(cap[1], keylogs=keylogs, name=cap[2], origin="upload", keylog_names=knames)
        e.tokens = [t for t in (capture_token, keylog_token) if t]
        return e

    # ------------------------------------------------------------------ upload lifetime

    def sweep(self, now: float | None = None) -> builtins.list[str]:
        """Delete what has not been used for ``upload_lifetime`` seconds: staged uploads
        never opened, and captures opened from uploads (their entry and files) that no
        callback asked for since (a page showing one asks every poll).  Captures named on
        the command line stay.  Returns the deleted paths."""
        now = time.monotonic() if now is None else now
        life = self.upload_lifetime
        gone: list[str] = []
        with self._lock:
            for eid, e in list(self.entries.items()):
                if e.origin == "upload" and e.status not in ("queued", "running") and now - e.last_used > life:
                    del self.entries[eid]
                    e.close()
                    for t in getattr(e, "tokens", ()):
                        self._opened.discard(t)
                        self._used[t] = min(self._used.get(t, now), e.last_used)
            in_use = {p for e in self.entries.values() for p in [e.path, *e.keylogs]}
            for token, (_kind, path, _name, _size) in list(self._staged.items()):
                if token in self._opened or path in in_use:
                    continue
                if now - self._used.get(token, now) > life:
                    del self._staged[token]
                    self._used.pop(token, None)
                    gone.append(path)
        for p in gone:
            try:
                os.unlink(p)
            except OSError:
                pass
        return gone

    def _start_sweeper(self) -> None:
        """A daemon thread that sweeps every ``min(60 s, lifetime / 4)`` (once there are uploads)."""
        with self._lock:
            if self._sweeper is not None or self.closed:
                return
            self._sweeper = threading.Thread(target=self._sweep_loop, name="wirefall-upload-sweeper", daemon=True)
        self._sweeper.start()

    def _sweep_loop(self) -> None:
        while not self._stop.wait(max(0.05, min(60.0, self.upload_lifetime / 4))):
            try:
                self.sweep()
            except Exception:  # noqa: BLE001 - never take the server down; try again next time
                pass

    def close(self) -> None:
        """Stop background work and remove the upload folder (called when the app stops)."""
        self.closed = True
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        for e in self.entries.values():
            if e.live is not None:
                e.live.close()  # stops its capture, removes its temporary capture file
            e.close()
        with self._lock:
            d, self._tmpdir = self._tmpdir, None
        if d is not None:
            shutil.rmtree(d, ignore_errors=True)


def _check_keylog(path: str, limit: int, name: str) -> None:
    """Raise ``UploadError`` unless the file is an NSS key log (plain or gzip-compressed)."""
    from wirefall.analyzer.keylog import KeyLog

    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if data[:2] == b"\x1f\x8b":  # gzip-compressed key log (as KeyLog.add_file reads them)
        data = _gunzip(data, limit, name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UploadError(f"{name} is not a key log (not text)") from None
    if KeyLog().add_text(text, "upload") == 0:
        raise UploadError(f"{name} is not a key log: no CLIENT_RANDOM or *_SECRET lines (NSS key log format)")


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
    for p, n in zip(e.keylogs, e.keylog_names):  # (a key log uploaded beside a capture opened from disk too)
        if p != n:
            msg = msg.replace(p, n)
    from wirefall.analyzer.capture import CaptureError

    if isinstance(ex, CaptureError):
        return msg
    return f"analysis failed: {ex.__class__.__name__}: {msg}"
