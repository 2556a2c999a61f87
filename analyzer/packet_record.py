"""One packet-list record, shared by every frontend.

``packet_record(analysis, source, n)`` is packet ``n`` as the packet list shows it: number,
times (epoch, relative to the first packet, delta from the previous captured packet), source,
destination, protocol, length, Info (Wireshark's wording, built in ``analyzer.detail``),
connection and, when a ``Colourer`` is given, the colouring rule (``analyzer.colouring``).
``wirefall packets`` (text and ``--json``), the TUI packet list, the web packet list and the
display filter's ``info``/``source``/… fields all read it, so they show the same columns for
the same packet; which packets they show is always ``analyzer.filter.filter_packets``.

The Time column's formats are Wireshark's View → Time Display Format (``TIME_FORMATS``):
``relative`` (seconds since the first packet, ``tshark -t r``), ``absolute`` (UTC date and
time of day, ``-t ud``), ``delta`` (seconds since the previous *displayed* packet, ``-t dd``)
and ``reference`` (seconds since the nearest time reference at or before the packet, the
reference itself shown ``*REF*``, as Wireshark's relative time once a reference is set).
``sort_packets`` orders the packets shown by any column, as a click on Wireshark's column
header does (stable: equal keys keep capture order).
"""
from __future__ import annotations

import datetime as _dt
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["PacketRecord", "packet_record", "packet_records", "TIME_FORMATS", "TIME_FORMAT_ORDER", "COLUMNS", "time_value",
           "time_text", "sort_packets", "SORT_TEXT_LIMIT", "next_time_format", "unsigned_zero", "seconds_text"]


def unsigned_zero(v: float, digits: int = 6) -> float:
    """``v``, or 0.0 when it is negative (or -0.0) and rounds to zero at ``digits`` decimals: a
    difference of two timestamps printed there is never "-0.000000".  Two packets tshark stamps with the same
    nanosecond (a pcapng ``if_tsresol`` finer than 1 ns: 10^-19 s, 2^-127 s …, packets out of
    order below it) differ as doubles by float noise, e.g. -5.9e-39 s: tshark prints
    0.000000000 for their ``frame.time_relative``, and the list printed -0.000000."""
    return 0.0 if v <= 0 and round(v, digits) == 0 else v


def seconds_text(v: float, digits: int = 6) -> str:
    """Seconds (a relative time or a delta) to ``digits`` decimals, never a negative zero."""
    return f"{unsigned_zero(v, digits):.{digits}f}"


@dataclass(frozen=True, slots=True)
class PacketRecord:
    """Packet ``number`` as the packet list shows it."""

    number: int
    time: float  # capture timestamp, seconds since the epoch (frame.time_epoch)
    relative: float  # seconds since the first packet (frame.time_relative); never -0.0 nor a negative that prints as 0 (``unsigned_zero``)
    delta: float  # seconds since the previous captured packet (frame.time_delta); likewise
    source: str
    destination: str
    protocol: str
    length: int  # bytes on the wire (frame.len)
    info: str
    connection: int | None  # the connection id (analysis.connections), None outside any
    colour: tuple[str, str, str] | None = None  # (colouring rule, fg, bg) when asked for and a rule matches

    def row(self) -> tuple[int, float, str, str, str, int, str]:
        """``(no, relative time, source, destination, protocol, length, info)``
        (``analyzer.detail.packet_row``'s tuple)."""
        return (self.number, self.relative, self.source, self.destination, self.protocol, self.length, self.info)

    def json(self) -> dict[str, Any]:
        """The object ``wirefall packets --json`` writes for it (docs/JSON.md, "packets").
        ``relative_time`` to the microsecond: the difference of two epoch doubles holds nothing
        finer (their step near 2026 is 0.24 µs), and unrounded it printed float noise —
        ``5.0067901611328125e-05`` where tshark says 0.000050."""
        return {"packet": self.number, "time": self.time, "relative_time": round(self.relative, 6), "source": self.source,
                "destination": self.destination, "protocol": self.protocol, "length": self.length, "info": self.info,
                "connection": self.connection}


def packet_record(analysis, source, n: int, colourer=None, data: bytes | None = None) -> PacketRecord:
    """Packet ``n`` (1-based) of ``analysis``, its bytes read from ``source`` (a
    ``PacketSource``) unless given (``data``: its captured bytes); ``colourer``
    (``analyzer.colouring.Colourer``) fills ``colour``."""
    from .detail import row_columns

    idx = analysis.index
    i = n - 1
    ts = idx.ts
    t = ts[i]
    src, dst, proto, info = row_columns(analysis, source, n, data)
    c = idx.conn[i]
    colour = None
    if colourer is not None:
        try:
            colour = colourer.colour(n)
        except Exception:  # noqa: BLE001 - an uncoloured row rather than none
            colour = None
    # (relative and delta as every list prints them, to the microsecond: never "-0.000000")
    return PacketRecord(n, t, unsigned_zero(t - ts[0]), unsigned_zero(t - ts[i - 1]) if i > 0 else 0.0, src, dst, proto, idx.origlen[i], info,
                        c if c >= 0 else None, colour)


# a listing reads its rows' bytes in windows of at most this many bytes (the packet's own when larger)
ROW_WINDOW = 1 << 18
# and runs the TCP analysis (analyzer.tcp_analysis) past the row it shows in steps, not one call a
# row (a packet's flags depend only on the packets before it: the same rows): as a filter does
# (``fields.tcp.ahead``: up to 4,096 packets, fewer near the capture's start)


def packet_records(analysis, source, numbers: Iterable[int], colourer=None) -> Iterator[PacketRecord]:
    """``packet_record`` of each packet of ``numbers`` (1-based, in capture order), their bytes
    read a window at a time: one read from a row's packet to the end of the last of the
    following rows' packets that lie within ``ROW_WINDOW`` bytes of it (not a read per row;
    rows far apart are read one by one, so no more than the rows' span is read), the TCP
    analysis run ahead of them in steps (``fields.tcp.ahead``)."""
    from .fields.tcp import ahead as tcp_ahead
    from .tcp_analysis import tcp_analysis

    nums = numbers if isinstance(numbers, Sequence) else list(numbers)
    idx = analysis.index
    offs, caps = idx.offset, idx.caplen
    npk = len(offs)
    ta_done = 0
    total = len(nums)
    buf = b""
    buf_at = buf_end = 0
    for p, n in enumerate(nums):
        data = None
        if n > ta_done:
            try:
                ta_done = tcp_analysis(analysis, source, tcp_ahead(n)).packets
            except (OSError, ValueError, EOFError):  # (the row's own call raises it, as before)
                ta_done = npk
        if 0 < n <= npk:
            off = offs[n - 1]
            ln = caps[n - 1]
            if not (buf_at <= off and off + ln <= buf_end):
                end = off + ln
                limit = off + max(ROW_WINDOW, ln)
                q = p + 1
                while q < total:
                    k = nums[q]
                    if not 0 < k <= npk:
                        break
                    o = offs[k - 1]
                    e = o + caps[k - 1]
                    if o < off or e > limit:
                        break
                    if e > end:
                        end = e
                    q += 1
                try:
                    buf = source.read(off, end - off) if q > p + 1 else b""
                except OSError:  # (the row's own read says so, as it did before windows)
                    buf = b""
                buf_at, buf_end = off, off + len(buf)
            if buf_at <= off and off + ln <= buf_end:
                data = buf[off - buf_at : off - buf_at + ln]
        yield packet_record(analysis, source, n, colourer, data)


# ---------------------------------------------------------------- the Time column

# Wireshark's View → Time Display Format, by the names the web app and the TUI use
TIME_FORMATS = {
    "relative": "seconds since the first packet",
    "absolute": "UTC date and time of day",
    "delta": "seconds since the previous displayed packet",
    "reference": "seconds since the time reference",
}
TIME_FORMAT_ORDER = tuple(TIME_FORMATS)


def next_time_format(fmt: str) -> str:
    """The format after ``fmt`` (the TUI's key cycles through them)."""
    i = TIME_FORMAT_ORDER.index(fmt) if fmt in TIME_FORMATS else -1
    return TIME_FORMAT_ORDER[(i + 1) % len(TIME_FORMAT_ORDER)]


def time_value(analysis, n: int, fmt: str, displayed: Sequence[int] | None = None, refs: Sequence[int] = ()) -> float:
    """Packet ``n``'s Time column as a number of seconds (``absolute``: since the epoch).
    ``displayed``: the packets shown in capture order (None: all), for ``delta``
    (Wireshark's frame.time_delta_displayed); ``refs``: the time references, sorted."""
    ts = analysis.index.ts
    t = ts[n - 1]
    if fmt == "absolute":
        return t
    if fmt == "delta":
        if displayed is None or isinstance(displayed, range) and displayed.step == 1 and displayed.start == 1:
            return t - ts[n - 2] if n > 1 else 0.0
        i = bisect_left(displayed, n)
        return t - ts[displayed[i - 1] - 1] if i > 0 else 0.0
    if fmt == "reference" and refs:
        i = bisect_right(refs, n)
        if i > 0:
            return t - ts[refs[i - 1] - 1]
    return t - ts[0]


def time_text(analysis, n: int, fmt: str, displayed: Sequence[int] | None = None, refs: Sequence[int] = ()) -> str:
    """The Time column as tshark writes it with ``-t r`` / ``-t ud`` / ``-t dd`` (and
    ``*REF*`` for a time reference in the ``reference`` format)."""
    if fmt == "reference" and refs:
        i = bisect_left(refs, n)
        if i < len(refs) and refs[i] == n:
            return "*REF*"
    v = time_value(analysis, n, fmt, displayed, refs)
    if fmt == "absolute":
        try:
            d = _dt.datetime.fromtimestamp(v, _dt.UTC)
        except (OverflowError, OSError, ValueError):
            return f"{v:.6f}"
        return d.strftime("%Y-%m-%d %H:%M:%S.%f")
    return seconds_text(v)


# ---------------------------------------------------------------- sorting by a column

COLUMNS = ("no", "time", "source", "destination", "protocol", "length", "info")
SORT_TEXT_LIMIT = 30_000  # packets shown: sorting by a text column decodes each (≈ 5–30 k/s)


def sort_packets(analysis, source, numbers: Sequence[int], column: str, descending: bool = False, fmt: str = "relative",
                 refs: Sequence[int] = (), text_limit: int = SORT_TEXT_LIMIT,
                 record: Callable[[int], PacketRecord] | None = None) -> list[int]:
    """``numbers`` (the packets shown, in capture order) ordered by ``column`` (one of
    ``COLUMNS``), stably.  Numeric columns (No., Time, Length) sort from the packet index;
    a text column decodes every packet shown (``record``: a cached ``packet_record``), so
    it is refused (``ValueError``) above ``text_limit`` packets."""
    if column not in COLUMNS:
        raise ValueError(f"unknown column {column!r}")
    order = list(numbers)
    idx = analysis.index
    if column == "no":
        order.sort(reverse=descending)
    elif column == "length":
        order.sort(key=lambda k: idx.origlen[k - 1], reverse=descending)
    elif column == "time":
        disp = numbers if not isinstance(numbers, range) else None
        order.sort(key=lambda k: time_value(analysis, k, fmt, disp, refs), reverse=descending)
    else:
        if len(order) > text_limit:
            raise ValueError(f"sorting by {column} reads every packet shown, and {len(order):,} are shown "
                             f"(at most {text_limit:,}); filter first")
        get = record or (lambda k: packet_record(analysis, source, k))
        keys = {k: getattr(get(k), column) for k in order}
        order.sort(key=keys.__getitem__, reverse=descending)
    return order
