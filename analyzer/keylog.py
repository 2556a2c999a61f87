"""One store of TLS secrets (NSS key log format), shared by TLS and QUIC.

Sources: ``--keylog FILE`` (repeatable), the ``SSLKEYLOGFILE`` environment variable as the
default, and pcapng Decryption Secrets Blocks.  Secrets are never printed: ``repr`` and
every message name only labels, counts and line numbers.

Key logs are hostile input too, and read within two budgets shared by every source of one
``KeyLog`` (``analyze(limits=...)`` keys, docs/ROBUSTNESS.md): ``keylog_bytes`` of text
(after gzip decompression) and ``keylog_lines`` lines.  Files (and texts) are read in 256 KiB steps, a
gzip key log is inflated step by step (never whole), and lines that are not understood are
counted, one warning per source ("N lines not understood, the first at line L"), never one
per line.  So memory is the secrets kept (at most one per line read) plus one step.

Each problem is also a typed fact (``KeyLog.problems``: source, kind, counts — the warning's text
made from it) and ``KeyLog.read_from`` counts the secrets each source gave, so that the
completeness model tells a key log not read, one with no secret and one read in part apart
without reading the warnings' words (``KeyLog.said``: whether a warning is the key log's).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from wirefall.dissectors.budget import Budget

if TYPE_CHECKING:
    from .capture import Inflate

LABELS = {
    "CLIENT_RANDOM",
    "CLIENT_EARLY_TRAFFIC_SECRET",
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    "CLIENT_TRAFFIC_SECRET_0",
    "SERVER_TRAFFIC_SECRET_0",
    "EXPORTER_SECRET",
    "EARLY_EXPORTER_SECRET",
}

BUDGET_WARNING = "key log budget "  # how a budget warning of the key log reads (completeness: a budget, not damage)
KEYLOG_BYTES = 64 << 20  # key-log text read, all sources of one KeyLog together (limits["keylog_bytes"])
KEYLOG_LINES = 1_000_000  # key-log lines read, likewise (limits["keylog_lines"])
MAX_LINE = 4096  # a longer line cannot be a key log line (the longest is ~300 bytes): skipped unread
STEP = 256 << 10  # bytes read at a time (a step of 2-byte lines is 128 Ki line objects)

# why a line was skipped -> how the warning words it
REASONS = {
    "malformed": "malformed: not LABEL CLIENT_RANDOM SECRET",
    "hex": "with a value that is not hex",
    "length": "with a value of the wrong length",
    "long": f"longer than {MAX_LINE} bytes",
}


class KeyLogProblem(NamedTuple):
    """One problem met reading one key-log source, as a typed fact (``KeyLog.problems``): what
    analyzer.completeness reasons from, never the warning's words.  ``kind``: ``unreadable``
    (the file was not opened or not read: nothing from it; ``why`` the system's words),
    ``broken_gzip`` (read up to the damage; ``why`` the decompressor's words), ``lines_skipped``
    (``lines`` lines not understood, the first at line ``first_line``), ``budget`` (a key-log
    budget ran out: the rest of it not read).  ``text``: the warning, as ``KeyLog.warnings`` says it."""

    source: str  # the file as named (``--keylog``, ``SSLKEYLOGFILE``), or "pcapng secrets block"
    kind: str
    text: str
    why: str = ""
    lines: int = 0
    first_line: int = 0


class KeyLog:
    def __init__(self, limits: dict | None = None):
        limits = limits or {}
        self._secrets: dict[tuple[str, bytes], bytes] = {}
        self._messages: list[KeyLogProblem] = []  # one-off problems (unreadable file, broken gzip)
        self.read_from: dict[str, int] = {}  # source -> secrets read from it (lines that gave one; 0: none)
        self._said: set[str] = set()  # every warning text given (a followed key log's counts grow: an older text is still its)
        self._bad: dict[str, list] = {}  # source -> [lines skipped, first line, {reason: lines}]
        self._cut: dict[str, str] = {}  # source -> why its end was not read (a budget)
        self.sources: list[str] = []
        self.bytes = Budget("keylog_bytes", int(limits.get("keylog_bytes", KEYLOG_BYTES)))
        self.lines = Budget("keylog_lines", int(limits.get("keylog_lines", KEYLOG_LINES)))
        # called as on_miss(self, label, client_random) when get() finds no secret: a live capture
        # waits there for the browser to write it (analyzer.live.KeyWait); None for a file
        self.on_miss: Callable[[KeyLog, str, bytes], None] | None = None

    def __repr__(self) -> str:
        return f"<KeyLog {len(self._secrets)} secrets from {len(self.sources)} sources>"

    def __len__(self) -> int:
        return len(self._secrets)

    @property
    def given(self) -> bool:
        """A key log was given (a file named, readable or not, text added, a secrets block),
        whether or not it gave a secret: a connection not decrypted for want of any secret then
        says "the key log given holds no secret", not "no key log given"."""
        return bool(self.sources or self._messages)

    @property
    def problems(self) -> list[KeyLogProblem]:
        """Problems met, at most a few per source, in the order the sources were read (typed)."""
        out = list(self._messages)
        for source, (n, first, why) in self._bad.items():
            detail = ", ".join(f"{k} {REASONS[r]}" for r, k in why.items())
            out.append(KeyLogProblem(source, "lines_skipped", f"{source}: {n} lines not understood, the first at line {first} "
                                     f"({detail}); skipped", lines=n, first_line=first))
        for source, why in self._cut.items():
            out.append(KeyLogProblem(source, "budget", f"{source}: {why}"))
        return out

    @property
    def warnings(self) -> list[str]:
        """Problems met, at most a few per source, in the order the sources were read."""
        out = [p.text for p in self.problems]
        self._said.update(out)
        return out

    def said(self, warning: str) -> bool:
        """Whether ``warning`` is one this key log gave (``warnings``, now or before): a key log's
        problem, not the capture's."""
        return warning in self._said or warning in self.warnings

    @property
    def budgets_hit(self) -> list[str]:
        """Names of the key-log budgets that ran out (typed form of the budget warnings)."""
        return [b.name for b in (self.bytes, self.lines) if b.hit]

    def get(self, label: str, client_random: bytes) -> bytes | None:
        key = (label, bytes(client_random))
        v = self._secrets.get(key)
        if v is None and self.on_miss is not None:
            self.on_miss(self, label, key[1])
            v = self._secrets.get(key)
        return v

    def has_secret(self, label: str, client_random: bytes) -> bool:
        """Whether the secret is held (no miss hook: a look, not a wait)."""
        return (label, bytes(client_random)) in self._secrets

    def items(self):
        """((label, client random), secret) pairs, in the order they were read."""
        return list(self._secrets.items())

    def secret_values(self) -> list[bytes]:
        """Every secret held (for leak checks before anything is written out)."""
        return list(self._secrets.values())

    def client_randoms(self, label: str) -> list[bytes]:
        """Client randoms with a secret of this label, in the order the key log gave them."""
        return [cr for (lb, cr) in self._secrets if lb == label]

    def has_client(self, client_random: bytes) -> bool:
        cr = bytes(client_random)
        return any(k[1] == cr for k in self._secrets)

    def _skip(self, source: str, lineno: int, reason: str) -> None:
        b = self._bad.get(source)
        if b is None:
            b = self._bad[source] = [0, lineno, {}]
        b[0] += 1
        b[2][reason] = b[2].get(reason, 0) + 1

    def _over(self, source: str, lineno: int) -> None:
        b = self.lines if self.lines.hit else self.bytes
        self._cut.setdefault(source, f"{BUDGET_WARNING}{b.name} ({b.cap} {'lines' if b is self.lines else 'bytes'} for all key logs "
                                     f"together) ran out: the rest, from line {lineno}, was not read (raise it with "
                                     f"--limit {b.name}=N)")

    def _line(self, line: str, lineno: int, source: str) -> bool:
        """One line; True if it added a secret."""
        line = line.strip()
        if not line or line.startswith("#"):
            return False
        parts = line.split()
        if len(parts) != 3:
            self._skip(source, lineno, "malformed")
            return False
        label, cr, secret = parts
        if label not in LABELS:
            return False  # unknown labels are ignored
        try:
            crb, sb = bytes.fromhex(cr), bytes.fromhex(secret)
        except ValueError:
            self._skip(source, lineno, "hex")
            return False
        if len(crb) != 32 or len(sb) not in (32, 48, 64):
            self._skip(source, lineno, "length")
            return False
        self._secrets[(label, crb)] = sb
        return True

    def add_text(self, text: str, source: str = "key log", follow: bool = False) -> int:
        """Add the lines of ``text``; ``follow``: more lines of a file already named in ``sources``
        (a live capture's followed key log), not a new source."""
        added = self._read_lines(_Text(text), source)
        if not follow or source not in self.sources:
            self.sources.append(source)
        self.read_from[source] = self.read_from.get(source, 0) + added
        return added

    def add_file(self, path: str) -> int:
        try:
            raw = open(path, "rb")  # noqa: SIM115 - closed below, after Inflate may have wrapped it
        except OSError as e:
            why = str(e.strerror or e)
            self._messages.append(KeyLogProblem(path, "unreadable", f"{path}: cannot read key log: {why}", why))
            return 0
        f: BinaryIO | Inflate = raw
        try:
            if raw.read(2) == b"\x1f\x8b":
                from .capture import Inflate

                f = Inflate(raw, "gzip")  # step by step: an 11 MB gzip key log may inflate to 11 GB
            raw.seek(0)
            added = self._read_lines(f, path)
        except OSError as e:
            why = str(e.strerror or e)
            self._messages.append(KeyLogProblem(path, "unreadable", f"{path}: cannot read key log: {why}", why))
            added = 0
        finally:
            raw.close()
        err = getattr(f, "error", None)
        if err:
            self._messages.append(KeyLogProblem(path, "broken_gzip", f"{path}: key log is a broken gzip file ({err}); the lines "
                                                "before the damage were read", str(err)))
        self.sources.append(path)
        self.read_from[path] = self.read_from.get(path, 0) + added
        return added

    def _read_lines(self, f, source: str) -> int:
        """Lines of a file, in STEP reads: bytes charged as read, lines as ended."""
        added = 0
        lineno = 0
        rest = b""  # a line not yet ended
        skipping = False  # inside a line longer than MAX_LINE: dropped up to its newline
        line_ok = self._line
        while True:
            room = self.bytes.room()
            chunk = f.read(min(STEP, room)) if room else b""
            if not chunk:
                if not room and f.read(1):
                    self.bytes.take(1)  # marks it hit
                    self._over(source, lineno + 1)
                    return added
                break
            self.bytes.charge(len(chunk))  # a text step may encode to more bytes than it has characters
            lines = chunk.split(b"\n")
            tail = lines.pop()  # not ended yet (b"" if the chunk ended with a newline)
            if lines:
                lines[0] = rest + lines[0]
                if skipping:
                    lines[0] = b"\0" * (MAX_LINE + 1)  # the end of an over-long line
                rest, skipping = b"", False
                allowed = self.lines.room()
                if len(lines) > allowed:
                    del lines[allowed:]
                    self.lines.take(allowed + 1)  # marks it hit
                else:
                    self.lines.take(len(lines))
                for line in lines:
                    lineno += 1
                    if not line:
                        continue
                    if len(line) > MAX_LINE:
                        self._skip(source, lineno, "long")
                    elif line_ok(line.decode("utf-8", "replace"), lineno, source):
                        added += 1
                if self.lines.hit:
                    self._over(source, lineno + 1)
                    return added
            if not skipping:
                rest += tail
                if len(rest) > MAX_LINE:
                    skipping, rest = True, b""
        if rest or skipping:  # the last line, without a newline
            lineno += 1
            if not self.lines.take(1):
                self._over(source, lineno)
            elif skipping:
                self._skip(source, lineno, "long")
            elif line_ok(rest.decode("utf-8", "replace"), lineno, source):
                added += 1
        return added


class _Text:
    """``read(n)`` over a str, encoded a step at a time (no second copy of an upload's text)."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def read(self, n: int) -> bytes:
        piece = self.text[self.pos : self.pos + n]
        self.pos += len(piece)
        return piece.encode("utf-8", "replace")


def load_keylog(paths: list[str] | None, use_env: bool = True, limits: dict | None = None) -> KeyLog:
    kl = KeyLog(limits)
    for p in paths or []:
        kl.add_file(p)
    if not paths and use_env:
        env = os.environ.get("SSLKEYLOGFILE")
        if env and os.path.exists(env):
            kl.add_file(env)
    return kl
