"""Live capture: Wireshark's capture engine writes a pcapng file, the streaming pass reads it as it
grows, and the key log (a browser's SSLKEYLOGFILE) is followed as the browser writes it.

Why a growing file and not a pipe: the file is the capture the user keeps (``Save`` copies it
with its keys), ``PacketSource`` reads packet details back from it by offset as it does for any
capture, and dumpcap's ring buffer (``-b``) bounds it on disk.

- ``Capture`` runs ``dumpcap`` (Debian ``wireshark-common``; ``tcpdump`` where dumpcap is missing)
  writing pcapng to a path, and stops it.
- ``FollowFile`` is the file object the capture reader is given (``read_capture(opener=…)``): at
  the end of what is written it waits for more, polling the key logs meanwhile, and ends only when
  the capture has stopped and its last bytes are read.
- ``KeyFollower`` adds each complete line appended to a key log file.
- ``KeyWait`` is the key log's miss hook: a TLS/QUIC session that asks for a handshake or traffic
  secret the log does not hold yet waits up to ``KEY_WAIT`` seconds for the browser to write it
  (a browser derives the secret from the ServerHello the capture shows, so it is written
  milliseconds after the packet: a connection whose secret arrives late is decrypted when it
  arrives, and one with no secret at all costs one wait, once). A secret that comes later still
  (the browser wrote it more than ``KEY_WAIT`` after the handshake) is noted (``KeyWait.missed``):
  ``LiveSession.run(follow_late=True)`` then runs the pass again from the capture's start, at most
  every ``RERUN_EVERY`` seconds while capturing and once more when the capture stops.
- ``LiveSession`` ties them together and runs the ordinary pass (``pipeline.analyze``) on the feed;
  views read the growing Analysis (``on_start``) as they do while a file loads.
"""
from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any
from pathlib import Path

from .keylog import KeyLog, load_keylog
from .model import DecryptReason, ReasonKind

POLL = 0.02  # seconds between looks at a file that has not grown
KEY_WAIT = 1.0  # seconds a session waits for a secret not yet in the key log (once per client random)
RERUN_EVERY = 3.0  # seconds at least between two passes run again for secrets that came late
# a live connection's reason while its secret has not come (the pass's own reason, "no key for this
# client random", would read as the key log holding none: it may yet be written); its text
# (DecryptReason of kind KEY_PENDING)
LIVE_NO_KEY = "no key yet (waiting for the key log)"
# secrets without which a connection cannot be decrypted: waited for. The early secret is
# absent from most handshakes (no 0-RTT) and is never waited for.
WAITED_LABELS = frozenset({"CLIENT_RANDOM", "CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                           "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"})

NO_PERMISSION = ("capturing packets needs root or a capture tool with the capture capabilities: as root run "
                 "`dpkg-reconfigure wireshark-common` (answer yes) and `usermod -aG wireshark $USER`, log in again; "
                 "or run wirefall with sudo; or capture with `sudo dumpcap -i IFACE -w FILE` and open FILE")


class LiveError(Exception):
    """A capture that cannot start (no tool, no permission, no such interface): the message says why."""


def capture_tool() -> str:
    """dumpcap where installed (Wireshark's capture engine, writes pcapng), else tcpdump."""
    for t in ("dumpcap", "tcpdump"):
        if shutil.which(t):
            return t
    raise LiveError("no capture tool: install Wireshark's dumpcap (`apt-get install wireshark-common`) or tcpdump")


def interfaces() -> list[tuple[str, str]]:
    """(name, description) of each interface the capture tool can open, as ``dumpcap -D`` lists them."""
    tool = capture_tool()
    r = subprocess.run([tool, "-D"], capture_output=True, text=True, timeout=30)
    if r.returncode:
        raise LiveError(_why(r.stderr) or f"{tool} -D failed (exit {r.returncode})")
    out = []
    for line in r.stdout.splitlines():
        num, _, rest = line.partition(". ")
        if not num.strip().isdigit() or not rest:
            continue
        name, _, desc = rest.partition(" ")
        out.append((name, desc.strip().strip("()[]").strip()))
    return out


def _why(stderr: str) -> str:
    text = " ".join(line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith(("Capturing on", "File:")))
    low = text.lower()
    if "permission" in low or "not permitted" in low or "you don't have" in low:
        return f"{NO_PERMISSION} ({_clip(text, 300)})"
    return _clip(text, 500)


def _clip(text: str, n: int) -> str:
    """At most ``n`` characters of the tool's message, cut after a whole sentence (marked "…"),
    not in the middle of one (a review read "…On Debian and Debian d)")."""
    if len(text) <= n:
        return text
    k = text.rfind(". ", 0, n - 2)
    return (text[:k + 1] if k > 0 else text[:n - 2]) + " …"


class Capture:
    """dumpcap (or tcpdump) capturing ``iface`` into the pcapng file ``path``.

    ``ring`` is dumpcap's ``-b`` list (``["filesize:1024", "files:5"]``), ``duration`` its
    ``-a duration:S``. ``start()`` returns once the tool has written the file's header (or raises
    ``LiveError`` with the tool's own reason)."""

    def __init__(self, iface: str, path: str | os.PathLike, bpf: str | None = None,
                 ring: list[str] | None = None, duration: float | None = None, prefix: list[str] | None = None):
        self.iface, self.path, self.bpf = iface, str(path), bpf
        self.ring, self.duration = ring or [], duration
        self.prefix = prefix or []  # e.g. ["ip", "netns", "exec", NS]: capture inside a namespace
        self.tool = capture_tool()
        self.proc: subprocess.Popen | None = None
        self._err = tempfile.TemporaryFile(mode="w+")

    def command(self) -> list[str]:
        if self.tool == "dumpcap":
            # to a pipe when nothing rotates: dumpcap flushes a pipe after every packet, a file
            # only every half second or so (the live view would lag by that much)
            cmd = ["dumpcap", "-i", self.iface, "-w", "-" if self.piped else self.path, "-q"]
            for b in self.ring:
                cmd += ["-b", b]
            if self.duration:
                cmd += ["-a", f"duration:{max(1, int(round(self.duration)))}"]
            if self.bpf:
                cmd += ["-f", self.bpf]
        else:  # tcpdump writes pcap; the reader reads both
            cmd = ["tcpdump", "-i", self.iface, "-U", "-s", "0", "--immediate-mode", "-w", self.path]
            if self.bpf:
                cmd += self.bpf.split()
        return self.prefix + cmd

    @property
    def piped(self) -> bool:
        return self.tool == "dumpcap" and not self.ring

    def _pump(self) -> None:
        """Copy dumpcap's pcapng stream into the capture file as it comes (flushed each read)."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with open(self.path, "ab") as out:
            while True:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                out.write(chunk)
                out.flush()

    def start(self, timeout: float = 10.0) -> None:
        if self.piped:
            open(self.path, "wb").close()
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.PIPE if self.piped else subprocess.DEVNULL,
                                     stderr=self._err, start_new_session=True)
        if self.piped:
            self._pumper = threading.Thread(target=self._pump, name="dumpcap-pump", daemon=True)
            self._pumper.start()
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                self._err.seek(0)
                raise LiveError(f"{self.tool} on {self.iface}: " + (_why(self._err.read()) or f"exited with {self.proc.returncode}"))
            if self.ring:  # dumpcap names the ring's first file once the interface is open
                self._err.seek(0)
                stem, ext = os.path.splitext(self.path)
                if "File:" in self._err.read() or glob.glob(glob.escape(stem) + "_*" + ext):
                    return
            elif os.path.exists(self.path) and os.path.getsize(self.path) >= 28:
                return
            if self.tool == "tcpdump" and os.path.exists(self.path):  # its header comes with the first packet
                self._err.seek(0)
                if "listening on" in self._err.read():
                    return
            time.sleep(POLL)
        self.stop()
        raise LiveError(f"{self.tool} on {self.iface} wrote nothing in {timeout:g} s")

    @property
    def running(self) -> bool:
        """Still capturing, or the last bytes not yet in the file."""
        if self.proc is None:
            return False
        pump = getattr(self, "_pumper", None)
        return self.proc.poll() is None or (pump is not None and pump.is_alive())

    def stop(self, timeout: float = 5.0) -> None:
        """Stop capturing; the tool writes its last packets and closes the file."""
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        pump = getattr(self, "_pumper", None)
        if pump is not None:
            pump.join(timeout)

    def stderr(self) -> str:
        self._err.seek(0)
        return self._err.read()


class KeyFollower:
    """Reads the complete lines appended to a key log file since the last look into ``keylog``."""

    def __init__(self, path: str, keylog: KeyLog):
        self.path, self.keylog = path, keylog
        self.pos = 0
        self.rest = b""
        self.added = 0

    def poll(self) -> int:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                chunk = f.read(1 << 20)
        except OSError:  # not written yet
            return 0
        if not chunk:
            return 0
        self.pos += len(chunk)
        data = self.rest + chunk
        cut = data.rfind(b"\n") + 1
        self.rest = data[cut:]
        if not cut:
            return 0
        n = self.keylog.add_text(data[:cut].decode("utf-8", "replace"), self.path, follow=True)
        self.added += n
        return n


class KeyWait:
    """The key log's miss hook in a live session: wait for a needed secret (see module doc)."""

    def __init__(self, poll: Callable[[], int], stopped: Callable[[], bool], wait: float = KEY_WAIT):
        self.poll, self.stopped, self.wait = poll, stopped, wait
        self.waited: set[bytes] = set()  # client randoms already waited for: at most one wait each
        self.missed: set[tuple[str, bytes]] = set()  # (label, client random) asked for and not found by the pass
        self.seconds = 0.0  # total time spent waiting (shown in the status)

    def __call__(self, keylog: KeyLog, label: str, client_random: bytes) -> None:
        if label not in WAITED_LABELS:
            return
        cr = bytes(client_random)
        self.poll()
        if keylog.has_secret(label, cr):
            return
        if cr not in self.waited:
            self.waited.add(cr)
            t0 = time.monotonic()
            while time.monotonic() - t0 < self.wait and not self.stopped():
                time.sleep(POLL)
                self.poll()
                if keylog.has_secret(label, cr):
                    break
            self.seconds += time.monotonic() - t0
        if not keylog.has_secret(label, cr):
            self.missed.add((label, cr))

    def late(self, keylog: KeyLog) -> bool:
        """A secret the pass asked for and went without is in the key log now."""
        return any(keylog.has_secret(label, cr) for label, cr in list(self.missed))


class FollowFile:
    """A read-only binary file that is still being written: ``read`` waits for bytes at its end
    until ``finished()`` says the writer is done (then the rest is read and b"" ends the pass).
    ``idle()`` runs while waiting (the key followers)."""

    def __init__(self, path: str, finished: Callable[[], bool], idle: Callable[[], object] = lambda: None,
                 interrupt: Callable[[], bool] = lambda: False):
        self.f = open(path, "rb")  # noqa: SIM115 - closed by close()
        self.finished, self.idle, self.interrupt = finished, idle, interrupt
        self.waiting = False  # True while at the end of what is written (the view is up to date)
        self.interrupted = False  # ended early (``interrupt()``): the pass is run again

    def read(self, n: int = -1) -> bytes:
        while True:
            data = self.f.read(n if n and n > 0 else 1 << 20)
            if data:
                self.waiting = False
                return data
            if self.finished():
                return self.f.read(n if n and n > 0 else -1)  # what came in between
            self.waiting = True
            self.idle()
            if self.interrupt():
                self.interrupted = True
                return b""
            time.sleep(POLL)

    def seek(self, pos: int, whence: int = 0) -> int:
        return self.f.seek(pos, whence)

    def tell(self) -> int:
        return self.f.tell()

    def close(self) -> None:
        self.f.close()


class LiveSession:
    """One live capture on ``iface`` into ``path`` (a temporary pcapng when not given), with the
    key logs ``keylogs`` followed; ``run()`` is the streaming pass (blocks until ``stop()``)."""

    def __init__(self, iface: str, keylogs: list[str] | None = None, bpf: str | None = None, path: str | None = None,
                 limits: dict | None = None, prefix: list[str] | None = None, key_wait: float = KEY_WAIT):
        self.own_dir = None if path else tempfile.mkdtemp(prefix="wirefall-live-")
        self.path = path or os.path.join(self.own_dir or ".", "live.pcapng")
        self.capture = Capture(iface, self.path, bpf=bpf, prefix=prefix)
        self.keylogs = list(keylogs or [])
        self.limits = limits
        # the key logs' present content now (use_env: SSLKEYLOGFILE too), their growth followed
        self.keylog = load_keylog([], use_env=False, limits=limits)
        paths = self.keylogs + ([os.environ["SSLKEYLOGFILE"]] if os.environ.get("SSLKEYLOGFILE") and os.environ["SSLKEYLOGFILE"] not in self.keylogs else [])
        self.followers = [KeyFollower(p, self.keylog) for p in paths]
        self._stop = threading.Event()
        self.wait = KeyWait(self.poll_keys, self._stop.is_set, key_wait)
        self.keylog.on_miss = self.wait
        self.feed: FollowFile | None = None
        self.started: float | None = None
        self.stopped_at: float | None = None
        self.done = threading.Event()  # run() has returned (``analysis`` is the capture's whole model)
        self.analysis: Any = None
        self.reruns = 0  # passes run again for secrets that came late
        self.saved_secrets = 0  # secrets the last save() wrote
        self._follow_late = False
        self._pass_at = 0.0
        self._marked: list = []  # (info, its pass's reason) whose reason reads LIVE_NO_KEY while capturing
        self._mark_lock = threading.Lock()

    def keylog_notes(self) -> list[str]:
        """One line per followed key log that cannot be read now: not there yet (followed: its
        secrets are added when it appears), or not a readable file."""
        notes = []
        for f in self.followers:
            try:
                if os.path.isdir(f.path):
                    raise IsADirectoryError(21, "Is a directory")
                with open(f.path, "rb"):
                    pass
            except FileNotFoundError:
                notes.append(f"key log {f.path} is not there yet; following it (its secrets are added when it appears)")
            except OSError as e:
                notes.append(f"cannot read key log {f.path}: {e.strerror or e}")
        return notes

    def poll_keys(self) -> int:
        return sum(f.poll() for f in self.followers)

    def start(self) -> None:
        self.capture.start()
        self.started = time.time()
        self.poll_keys()

    def stop(self) -> None:
        """Stop capturing; ``run()`` returns once the last packets are read."""
        self._stop.set()
        self.capture.stop()
        self.stopped_at = time.time()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def _finished(self) -> bool:
        # not the stop flag: after a stop the tool still writes its last packets (and the pump
        # copies them); the pass ends when they are in the file
        return not self.capture.running

    def _interrupt(self) -> bool:
        """End the pass early to run it again: a secret it went without has come (while capturing,
        at most every RERUN_EVERY seconds; after the stop the pass reads to the end and runs again)."""
        return (self._follow_late and not self._stop.is_set() and time.monotonic() - self._pass_at >= RERUN_EVERY
                and self.wait.late(self.keylog))

    def open(self, path: str):
        self.feed = FollowFile(path, self._finished, self.poll_keys, self._interrupt)
        return self.feed

    @property
    def up_to_date(self) -> bool:
        """The pass has read everything written so far (it is waiting for more)."""
        return self.feed is not None and self.feed.waiting

    def run(self, on_start=None, progress=None, follow_late: bool = False):
        """The ordinary streaming pass over the growing capture; returns the Analysis when stopped.

        ``follow_late``: when a secret the pass went without comes later, the pass is run again
        from the capture's start (``on_start`` is called again with the new model): at most every
        ``RERUN_EVERY`` s while capturing, and once more after the stop if one came since."""
        from .pipeline import analyze

        self._follow_late = follow_late
        while True:
            self._pass_at = time.monotonic()
            try:
                an = analyze(self.path, keylog=self.keylog, on_start=on_start, progress=progress, limits=self.limits, opener=self.open)
            except Exception:
                if self.feed is not None and self.feed.interrupted:
                    an = None  # (cut mid-block: the pass runs again)
                else:
                    raise
            if follow_late and ((self.feed is not None and self.feed.interrupted) or self.wait.late(self.keylog)):
                self.reruns += 1
                self.wait.missed.clear()  # the next pass notes what it goes without anew
                if self.feed is not None:
                    self.feed.close()
                continue
            break
        with self._mark_lock:
            for info, own in self._marked:  # the capture has ended: the pass's own reasons again
                if getattr(info.reason, "kind", None) is ReasonKind.KEY_PENDING:
                    info.reason = own
            self._marked = []
            self.analysis = an
            self.done.set()
        return an

    def mark_waiting(self, analysis) -> None:
        """While capturing: a connection whose secret has not come reads "no key yet (waiting for
        the key log)", not the pass's "no key for this client random" (restored when it ends)."""
        with self._mark_lock:
            if self.done.is_set():
                return
            for c in list(analysis.connections):
                info = c.quic if c.quic is not None else c.tls
                r = info.reason if info is not None and not info.decrypted else None
                if isinstance(r, DecryptReason) and r.kind is ReasonKind.SECRET_MISSING:
                    # typed as the pass's (JSON reason_kind "key_pending", its secrets kept), restored at the end
                    info.reason = DecryptReason(ReasonKind.KEY_PENDING, r.secret, r.level, r.packet, r.missing, r.detail)
                    self._marked.append((info, r))

    def save(self, dest: str, analysis=None) -> str:
        """The capture as pcapng with the secrets of its connections in a Decryption Secrets Block
        (``editcap --inject-secrets``); without ``analysis`` every secret followed is kept."""
        keys = secrets_for(self.keylog, analysis)
        self.saved_secrets = keys.count("\n")
        return save_with_keys(self.path, dest, keys)

    def close(self) -> None:
        self.stop()
        if self.feed is not None:
            self.feed.close()
        if self.own_dir:
            shutil.rmtree(self.own_dir, ignore_errors=True)


def client_randoms(analysis) -> set[bytes]:
    """The client randoms of the TLS and QUIC connections of ``analysis``."""
    want = set()
    for c in analysis.connections:
        for info in (c.tls, c.quic):
            cr = getattr(info, "client_random", None) if info is not None else None
            if cr:
                want.add(bytes.fromhex(cr) if isinstance(cr, str) else bytes(cr))
    return want


def file_client_randoms(paths: list[str]) -> set[bytes]:
    """The client randoms of the connections in the capture files ``paths`` (each analysed
    without keys: a ClientHello is read in the clear, a QUIC Initial with its own keys)."""
    from .pipeline import analyze

    want: set[bytes] = set()
    for p in paths:
        want |= client_randoms(analyze(p, keylog=KeyLog()))
    return want


def secrets_for(keylog: KeyLog, analysis=None, randoms: set[bytes] | None = None) -> str:
    """Key log lines for the connections of ``analysis`` (their client randoms) or of the client
    randoms ``randoms``; all of them when neither is given."""
    want = randoms
    if analysis is not None:
        want = client_randoms(analysis) | (want or set())
    return "".join(f"{label} {cr.hex()} {secret.hex()}\n" for (label, cr), secret in keylog.items()
                   if want is None or cr in want)


def private_file(path: str, text: str = "") -> None:
    """Create (or empty) ``path`` readable by its owner only (0600, as dumpcap's files), with ``text``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def save_with_keys(src: str, dest: str, keys: str) -> str:
    """Copy the capture ``src`` to ``dest`` as pcapng, the key log text ``keys`` in a DSB; the
    file readable by its owner only, as dumpcap's own (with or without secrets: it holds traffic)."""
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    private_file(dest)  # (editcap writes into it: its mode stays)
    if not keys:
        subprocess.run(["editcap", "-F", "pcapng", src, dest], check=True, capture_output=True, timeout=300)
        return dest
    with tempfile.NamedTemporaryFile("w", suffix=".keys", delete=False) as k:
        k.write(keys)
    try:
        r = subprocess.run(["editcap", "-F", "pcapng", "--inject-secrets", f"tls,{k.name}", src, dest], capture_output=True, text=True, timeout=300)
        if r.returncode:
            raise LiveError(f"editcap could not write {dest}: {r.stderr.strip()[:300]}")
    finally:
        os.unlink(k.name)
    return dest
