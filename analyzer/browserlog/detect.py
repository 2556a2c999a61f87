"""Which browser log a file holds, chosen by content, never by name; and its text, read
through the capture reader's decompression (gzip, xz, bzip2, zstd by magic bytes) within a
size budget.

- HAR 1.2: a JSON object whose ``log`` holds ``entries`` (Chrome DevTools, Firefox,
  WebPageTest, Playwright, wirefall's own export).
- Chrome NetLog: a JSON object opening with ``constants`` (``logEventTypes``) then
  ``events``; a NetLog cut off before its closing brackets (a crashed browser) still counts.
- qlog: JSON (``qlog_version`` and ``traces``, as aioquic writes it) or JSON-SEQ (records
  after an RS byte 0x1e, as quiche and ngtcp2 write it; RFC 7464).

``kind_of(path)`` reads at most ``SNIFF_BYTES`` decompressed bytes and returns ``"har"``,
``"netlog"``, ``"qlog"`` or None (a capture, or anything else: the capture reader then says
what it is).  ``read_text(path, limit)`` returns the whole text.
"""
from __future__ import annotations

import re
from functools import cache

from ..capture import PCAP_MAGICS, PCAPNG_SHB, CaptureError, open_decompressed

SNIFF_BYTES = 64 << 10
DEFAULT_MAX_BYTES = 512 << 20  # decompressed text of one log (limits["browserlog_bytes"])
_READ = 1 << 20

# the keys that name each kind, looked for in the first SNIFF_BYTES (a HAR's "log" key may
# come after its pages/entries in other writers' key order, so the HAR test is on its keys);
# compiled on the first file that is not a capture (every analysis asks kind_of, and a capture
# is told by its first 4 bytes: the compiles were ~0.7 % of a small capture's run)


@cache
def _patterns() -> tuple[re.Pattern[bytes], re.Pattern[bytes], re.Pattern[bytes], re.Pattern[bytes]]:
    """(netlog, qlog, HAR "log", HAR keys)"""
    return (re.compile(rb'"(?:logEventTypes|logEventPhase|logSourceType)"\s*:'), re.compile(rb'"qlog_(?:version|format)"\s*:'),
            re.compile(rb'"log"\s*:\s*\{'), re.compile(rb'"(?:entries|creator|pages|startedDateTime)"\s*:'))


class BrowserLogError(CaptureError):
    """A file that is a browser log (or says it is one) but cannot be read as one."""


def sniff(head: bytes) -> str | None:
    """The kind of log whose first decompressed bytes are ``head`` (None: not a browser log)."""
    h = head.lstrip(b"\xef\xbb\xbf \t\r\n")  # BOM, whitespace
    netlog, qlog, har_log, har_keys = _patterns()
    if h.startswith(b"\x1e"):
        return "qlog" if qlog.search(h[:SNIFF_BYTES]) else None
    if not h.startswith(b"{"):
        return None
    if netlog.search(h):
        return "netlog"
    if qlog.search(h):
        return "qlog"
    if har_log.search(h) and har_keys.search(h):
        return "har"
    return None


_CAPTURE_MAGICS = (*PCAP_MAGICS, PCAPNG_SHB)  # (analyzer.pipeline tells them apart before loading this module)


def kind_of(path: str) -> str | None:
    """``"har"``, ``"netlog"``, ``"qlog"``, or None for anything else (captures included:
    their first 4 bytes are enough to tell, so a capture costs one small read)."""
    f, _comp = open_decompressed(path)
    try:
        try:
            head = f.read(4)
            if head in _CAPTURE_MAGICS or not head:
                return None
            head += f.read(SNIFF_BYTES - 4)
        except OSError as e:
            raise CaptureError(f"{path}: cannot read: {e.strerror or e}") from None
    finally:
        f.close()
    return sniff(head)


def read_text(path: str, limit: int = DEFAULT_MAX_BYTES) -> tuple[str, str, list[str]]:
    """(text, compression, warnings) of the log at ``path``: at most ``limit`` decompressed
    bytes (more raises ``BrowserLogError``: the JSON parser would hold several times that in
    memory); a compressed stream cut short gives the text before the cut and a warning (a
    NetLog reader then keeps the events before it)."""
    f, comp = open_decompressed(path)
    parts: list[bytes] = []
    n = 0
    warnings: list[str] = []
    try:
        while True:
            try:
                b = f.read(_READ)
            except OSError as e:
                raise BrowserLogError(f"{path}: cannot read: {e.strerror or e}") from None
            if not b:
                break
            n += len(b)
            if n > limit:
                raise BrowserLogError(f"{path}: browser log larger than {limit >> 20} MiB once decompressed "
                                      f"(raise it with limits['browserlog_bytes'])")
            parts.append(b)
        err = getattr(f, "error", None)
        if err:
            warnings.append(f"{comp} stream damaged: {err}; read the {n} bytes before it")
    finally:
        f.close()
    raw = b"".join(parts)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if err := getattr(f, "error", None):  # a cut inside a multi-byte character
            text = raw[: e.start].decode("utf-8", "replace")
        else:
            text = raw.decode("utf-8", "replace")
            warnings.append(f"not valid UTF-8 at byte {e.start}: undecodable bytes replaced")
    return text, comp, warnings
