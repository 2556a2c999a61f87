"""The request view's comparison of the wire and the browser log, as typed rows that the
TUI and the web app format alike (``cells``): per phase the wire's time, the browser's and
their difference (``phase_comparison``), and each field with its source
(``field_sources``: wire, browser log, inferred).

The rows read only what ``matching.apply`` (or ``build.to_analysis`` for a log opened
alone) left on the exchange: ``Exchange.browser`` (the log's times, phases, offsets,
durations) and ``Exchange.sources``.  Times are float epoch seconds, lengths and
differences seconds; text is made only by ``cells`` / ``fmt_*`` when a row is shown.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..model import Connection, Exchange
from .build import wire_lengths
from .records import NOT_SENT_REASONS, NotSent, obj

NOT_IN_LOG = "not in log"  # the browser column of a connection moment (or blocked, DNS) the wire has and the log lacks
SOURCE_LABELS = {"wire": "wire", "browser": "browser log", "inferred": "inferred"}
KIND_LABELS = {"har": "HAR", "netlog": "NetLog", "qlog": "qlog"}

# (name, label, the exchange's wire attribute, its packet attribute, the log's time field)
_POINTS = (
    ("request_start", "request start", "request_start", "request_start_packet", "send_start"),
    ("request_end", "request end", "request_end", "request_end_packet", "send_end"),
    ("response_start", "response start", "response_start", "response_start_packet", "response_start"),
    ("response_end", "response end", "response_end", "response_end_packet", "response_end"),
)
_CONN_POINTS = (("connect_start", "connect start", "connect_start"), ("connect_end", "connect end", "connect_end"),
                ("tls_end", "TLS end", "ssl_end"))
# (name, label): lengths, the wire's its row's phases (``build.wire_lengths``), the browser's its ``phases``
_LENGTHS = (("send", "send"), ("wait", "wait"), ("receive", "receive"))


@dataclass(frozen=True, slots=True)
class PhaseRow:
    name: str  # request_start … response_end, connect_start, connect_end, tls_end; send, wait, receive; blocked, dns
    label: str
    kind: str  # "point": a moment (epoch seconds) | "length": a duration (seconds)
    wire: float | None  # from the capture's packets (None: the capture does not show it, or there is no capture)
    browser: float | None  # from the browser log (None: the log does not say)
    diff: float | None  # browser minus wire, seconds (None unless both are known)
    wire_packet: int | None = None  # the packet of the wire's moment
    browser_note: str | None = None  # shown for ``browser`` None where the log lacks what the wire has ("not in log")


@dataclass(frozen=True, slots=True)
class FieldRow:
    name: str  # url, method, status, stream_id, request_headers, response_headers, content_type, priority_name, initiator, match
    label: str
    value: Any  # str | int | None (headers: how many)
    source: str  # "wire" | "browser" | "inferred" (SOURCE_LABELS)


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def has_browser(e: Exchange) -> bool:
    return isinstance(e.browser, dict)


def from_log_alone(e: Exchange) -> bool:
    """The exchange was made from a browser log opened on its own (its times are the log's)."""
    b = e.browser
    return isinstance(b, dict) and b.get("offsets") is None and (e.sources or {}).get("request_start") == "browser"


def _tls_end(c: Connection) -> float | None:
    if c.tls_end is not None:
        return c.tls_end
    t = c.tls
    if t is None:
        return None
    ends = [x for x in (t.client_finished_time, t.server_finished_time) if x is not None]
    return max(ends) if ends else None


def phase_comparison(e: Exchange, conn: Connection | None = None, clock_offset: float | None = None,
                     wire_phases: Sequence[tuple[str, float, float]] | None = None) -> list[PhaseRow]:
    """Per phase of ``e``: wire, browser, browser minus wire.  Empty when no browser log
    speaks of ``e``.  ``conn``: ``e``'s connection (its handshake times for the request
    that opened it).  ``clock_offset`` (browser minus capture, seconds: the log's clock
    offset by which the waterfall moves its bars, ``exchange_clock_offset``): the browser's
    moments are moved onto the capture's clock by it and their difference is what remains
    (a HAR from another machine: WebPageTest's amazon HAR read connect start −158 ms, of which
    −130 ms is the two clocks); lengths need no clock.

    ``wire_phases``: ``e``'s waterfall row's phases (``Row.phases``: ``waterfall.exchange_phases``
    with the DNS lookup charged to its connection), the ones the request view's Timing section
    and ``requests --json``'s ``phases`` show.  The wire's ``blocked`` (queued / stalled) and
    ``dns`` are their totals (``waterfall.phase_totals``, to the µs): until 2026-12-05 (review
    32) they were always "–", under the Timing section's "DNS lookup 37.631 ms" for the amazon
    load's document (its NetLog: 39 ms).  The wire's is None for a row with no such phase (a
    request on an already-open connection has no DNS), for a log alone, and without
    ``wire_phases``; the browser's, None where the log gives none ("not in log" beside a wire's)."""
    b = e.browser
    if not isinstance(b, dict):
        return []
    times, phases = obj(b.get("times")), obj(b.get("phases"))
    offsets: dict | None = b["offsets"] if isinstance(b.get("offsets"), dict) else None
    alone = from_log_alone(e)
    clock = clock_offset if offsets is not None and clock_offset else 0.0  # (only beside a wire: a log alone has one clock)
    rows: list[PhaseRow] = []
    from ..waterfall import phase_totals  # (lazily, as exchange_clock_offset: the waterfall module costs start-up)

    wt = None if alone or wire_phases is None else phase_totals(list(wire_phases))  # (µs, None where the row has none)
    for name, label in (("blocked", "blocked (queued)"), ("dns", "DNS")):
        v = _num(phases.get(name))
        w = None if wt is None or wt[name] is None else wt[name] / 1e6
        if v is not None or w is not None:
            rows.append(PhaseRow(name, label, "length", w, v, _minus(v, w), browser_note=NOT_IN_LOG if v is None else None))
    # the connection's handshake: for the request that opened it (the overlay's offsets say
    # which); for a log alone, the log's own connect times of the request
    for name, label, tkey in _CONN_POINTS:
        if offsets is not None and name in offsets and conn is not None:
            w = conn.connect_start if name == "connect_start" else conn.connect_end if name == "connect_end" else _tls_end(conn)
            d = _num(offsets.get(name))
            br = w + d if w is not None and d is not None else None
            if br is None:  # (QUIC: the TLS handshake ends with the set-up, Chrome's ssl_end = connect_end)
                br = _num(times.get("connect_end" if tkey == "ssl_end" and conn.transport != "tcp" else tkey))
            if w is not None or br is not None:
                rows.append(PhaseRow(name, label, "point", w, _minus(br, clock), _minus(d, clock),
                                     browser_note=NOT_IN_LOG if br is None else None))
        elif offsets is None:
            br = _num(times.get(tkey))
            if br is not None:
                rows.append(PhaseRow(name, label, "point", None, br, None))
    for name, label, attr, pattr, tkey in _POINTS:
        w = None if alone else getattr(e, attr)
        br = _minus(_num(times.get(tkey)), clock)
        rows.append(PhaseRow(name, label, "point", w, br, _minus(br, w), None if alone else getattr(e, pattr)))
    wl = None if alone else wire_lengths(e)
    for name, label in _LENGTHS:
        w = None if wl is None else wl[name]
        br = _num(phases.get(name))
        rows.append(PhaseRow(name, label, "length", w, br, _minus(br, w)))
    return rows


def field_sources(e: Exchange) -> list[FieldRow]:
    """Each field of ``e`` the request view shows, with where it came from."""
    src = e.sources if isinstance(e.sources, dict) else {}
    b = e.browser if isinstance(e.browser, dict) else {}
    default = "browser" if from_log_alone(e) else "wire"  # a log alone: all it has is the log's

    def s(name: str, alt: str | None = None) -> str:
        v = src.get(name) or (src.get(alt) if alt else None)
        return v if v in SOURCE_LABELS else default

    rows = [FieldRow("url", "URL", e.url or e.path, s("url")), FieldRow("method", "method", e.method, s("method")),
            FieldRow("status", "status", e.status, s("status"))]
    if e.stream_id is not None:
        rows.append(FieldRow("stream_id", "stream", e.stream_id, s("stream_id")))
    rows.append(FieldRow("request_headers", "request headers", len(e.request_headers), s("request_headers", "headers")))
    rows.append(FieldRow("response_headers", "response headers", len(e.response_headers), s("response_headers", "headers")))
    if e.content_type:
        rows.append(FieldRow("content_type", "content type", e.content_type, s("content_type")))
    if b.get("priority") is not None:
        rows.append(FieldRow("priority_name", "priority (browser)", b["priority"], "browser"))
    if b.get("initiator") is not None:
        rows.append(FieldRow("initiator", "initiator", b["initiator"], "browser"))
    how = src.get("match_by")
    if isinstance(how, str):
        rows.append(FieldRow("match", "matched by", how.replace("+", ", "), "inferred" if src.get("match") == "inferred" else "browser"))
    return rows


def log_label(e: Exchange) -> str:
    """``NetLog page-h2.netlog.json.gz, request 17`` (the NetLog's source id) or ``HAR
    pw-h2.har.gz, entries[0]`` (the entry's place in the HAR's ``log.entries``: a 0-based
    index read as "request 0" above the waterfall's request 1) — which log spoke of ``e``."""
    b = e.browser if isinstance(e.browser, dict) else {}
    import os

    f = b.get("file")
    name = os.path.basename(f) if isinstance(f, str) else ""
    where = ""
    if b.get("id") is not None:
        where = f", entries[{b['id']}]" if b.get("source") == "har" else f", request {b['id']}"
    return f"{KIND_LABELS.get(str(b.get('source')), str(b.get('source') or 'browser log'))} {name}".strip() + where


# -- text, only when shown ---------------------------------------------------------------


def fmt_ms(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "–"
    return f"{v * 1000:+.3f} ms" if signed else f"{v * 1000:.3f} ms"


def cells(row: PhaseRow, t0: float) -> tuple[str, str, str]:
    """(wire, browser, difference) as shown: a moment in ms since ``t0``, a length in ms,
    the difference signed; "–" where unknown."""
    if row.kind == "point":
        w = fmt_ms(None if row.wire is None else row.wire - t0)
        br = fmt_ms(None if row.browser is None else row.browser - t0)
    else:
        w, br = fmt_ms(row.wire), fmt_ms(row.browser)
    if row.browser is None and row.browser_note:
        br = row.browser_note
    return w, br, fmt_ms(row.diff, signed=True)


def field_cell(row: FieldRow) -> str:
    v = row.value
    return "–" if v is None or v == "" else str(v)


@dataclass(frozen=True, slots=True)
class OffsetRow:
    """One phase of a log's summary (``Analysis.browser["logs"][i]["offsets"]``): how many
    requests give both times, and the browser-minus-wire offset's median, min and max."""
    name: str
    label: str
    count: int
    median: float | None
    min: float | None
    max: float | None


OFFSET_LABELS = {"request_start": "request start", "request_end": "request end", "response_start": "response start",
                 "response_end": "response end", "connect_start": "connect start", "connect_end": "connect end", "tls_end": "TLS end"}


def overlays(an) -> list[dict]:
    """The summaries of the logs laid over ``an`` (not of a log it was made from)."""
    b = getattr(an, "browser", None)
    logs = b.get("logs") if isinstance(b, dict) else None
    return [s for s in logs or () if isinstance(s, dict) and "matched" in s]


def offset_rows(summary: dict, clock_offset: float | None = None) -> list[OffsetRow]:
    """The summary's offsets per phase (``summary["offsets"]``: browser minus wire, raw), each
    minus ``clock_offset`` where given (``log_clock_offset``: what is left once the log's
    clock is put on the capture's)."""
    offs = obj(summary.get("offsets"))
    clock = clock_offset or 0.0
    out = []
    for name, label in OFFSET_LABELS.items():
        st = obj(offs.get(name))
        n = st.get("count")
        if isinstance(n, int) and n:
            out.append(OffsetRow(name, label, n, _minus(_num(st.get("median")), clock), _minus(_num(st.get("min")), clock),
                                 _minus(_num(st.get("max")), clock)))
    return out


def log_clock_offset(summary: dict) -> tuple[float | None, str | None]:
    """(browser minus capture in seconds, the offset's name in ``matching.PLACE_BY``) by which
    the waterfall puts a laid-over log on the capture's clock — its page events and its bars
    (``waterfall.browser_clock_offsets``: the log's pages' ``clock_offset``) —, else (None,
    None): only a log with page events has one (a HAR with pages; a NetLog or qlog is drawn on
    its own clock, the browser's machine's, which is often the capture's).  Its median
    browser − wire at the response's end, taken as the two clocks' difference: WebPageTest's
    amazon HAR, −129.7 ms, where the NetLog of the same load, on the capture's clock, reads
    +13.3 ms there — so the difference left after it is relative to that moment."""
    from .matching import PLACE_BY

    pages = summary.get("pages_in_log")
    if not isinstance(pages, int) or isinstance(pages, bool) or pages <= 0:
        return None, None
    offs = obj(summary.get("offsets"))
    by = next((k for k in PLACE_BY if obj(offs.get(k)).get("count")), None)
    med = _num(obj(offs.get(by)).get("median")) if by is not None else None
    return (med, by) if med is not None else (None, None)


def exchange_clock_offset(an, e: Exchange) -> float | None:
    """The clock offset the waterfall moved ``e``'s browser bars by (``Row.browser_clock_offset``:
    its log's, ``waterfall.browser_clock_offsets``), None when they are on the log's own clock."""
    from ..waterfall import browser_clock_offsets

    b = e.browser if isinstance(e.browser, dict) else None
    offs = browser_clock_offsets(an) if b is not None else {}
    if not offs or b is None:
        return None
    src = str(b.get("source"))
    v = offs.get((src, b.get("file")))
    return v if v is not None else offs.get((src, None))


def clock_text(kind: str | None, clock_offset: float) -> str:
    """``clocks: the HAR's is 129.692 ms behind the capture's`` (``clock_offset``: browser minus
    capture, seconds; ``kind``: the log's, "har")."""
    who = KIND_LABELS.get(str(kind), str(kind or "browser log"))
    ms = abs(clock_offset) * 1000
    if f"{ms:.3f}" == "0.000":
        return f"clocks: the {who}'s and the capture's agree"
    return f"clocks: the {who}'s is {ms:.3f} ms {'behind' if clock_offset < 0 else 'ahead of'} the capture's"


def clock_note(kind: str | None, clock_offset: float) -> str:
    """The request view's line above its phases when the log's times were moved onto the
    capture's clock (``phase_comparison``'s ``clock_offset``)."""
    return (f"{clock_text(kind, clock_offset)} (the log's median browser − wire at the response end — else at the response's "
            "start, else the request's —, by which the waterfall moves its bars); its times here are on the capture's clock, "
            "browser − wire what is left after that")


def summary_line(summary: dict) -> str:
    """``NetLog page-h2.netlog.json.gz: 13 of 13 requests it sent matched, 0 not in the
    capture, 0 wire-only; browser − wire (median): request start −1.203 ms, response end
    +0.412 ms`` (text): how much of the log matched, and where the browser's clock and the
    capture point stand apart — at the send (the capture point sees a request after the browser
    logged it: negative) and at the receipt (positive), a clock offset adding to both.  A log
    the waterfall puts on the capture's clock (``log_clock_offset``: a HAR with pages) has
    that clock offset said apart, and the offsets after it: ``…; clocks: the HAR's is 129.692
    ms behind the capture's (its median browser − wire at the response end, by which the
    waterfall moves its bars); after that, browser − wire (median): request start −34.656 ms``
    (WebPageTest's amazon HAR read "request start −164.348 ms", the two machines' clocks apart;
    the moment the clocks were set by is left out: 0 by that choice)."""
    import os

    f = summary.get("file")
    name = os.path.basename(f) if isinstance(f, str) else ""
    kind = KIND_LABELS.get(str(summary.get("kind")), str(summary.get("kind")))
    shown = summary.get("page_shown")
    head = f"{kind} {name}"
    if isinstance(shown, dict):  # a HAR of several pages: which one was laid over
        from .pages import page_name

        head += f" {page_name(shown['number'], shown.get('title'))} (of {shown['of']} pages)"
    line = (f"{head}: {summary.get('matched', 0)} of {summary.get('sent', 0)} requests it sent matched, "
            f"{summary.get('unmatched', 0)} not in the capture, {summary.get('wire_only', 0)} wire-only")
    if isinstance(shown, dict) and shown.get("other_pages_entries"):
        from .pages import other_pages_text

        n = shown["other_pages_entries"]
        why = "another load, not looked for in the capture" if shown.get("how") == "matched" else "not looked for in the capture"
        line += f"; {n} {'entry' if n == 1 else 'entries'} of {other_pages_text(shown)} ({why})"
    unsent = not_sent_text(summary)
    if unsent:
        line += f"; {unsent}"
    clock, by = log_clock_offset(summary)
    rs = {r.name: r for r in offset_rows(summary, clock)}
    offs = [f"{OFFSET_LABELS[k]} {fmt_ms(rs[k].median, signed=True)}" for k in ("request_start", "response_end")
            if k in rs and rs[k].median is not None and k != by]
    if clock is None or by is None:
        return line + (f"; browser − wire (median): {', '.join(offs)}" if offs else "")
    line += (f"; {clock_text(summary.get('kind'), clock)} (its median browser − wire at the {OFFSET_LABELS[by]}, "
             "by which the waterfall moves its bars)")
    return line + (f"; after that, browser − wire (median): {', '.join(offs)}" if offs else "")


_NOT_SENT_WORDS = {"cache": "from the {cache}", "failed": "failed", "cancelled": "cancelled",
                   "redirected": "redirected by the browser", "unfinished": "unfinished when logging stopped"}
MAX_NAMED = 3  # requests (or errors) named per reason in the line


def _short(n: NotSent) -> str:
    """The request's last path segment (``favicon.ico``), else its host, cut to 60 characters."""
    u = n.url or ""
    try:
        p = urlsplit(u)
        name = p.path.rstrip("/").rsplit("/", 1)[-1] or p.hostname or u
    except ValueError:
        name = u
    name = name or f"request {n.id}"
    return name if len(name) <= 60 else name[:59] + "…"


def not_sent_text(summary: dict) -> str:
    """``2 not sent: 1 from the disk cache (favicon.ico), 1 failed (ERR_CONNECTION_REFUSED)``
    (text, "" when the log sent every request): a log's requests that never reached the
    network (``records.NotSent``, its summary's ``not_sent_requests``), by reason, each
    named by its resource — or, for a failure, its net error."""
    total = summary.get("not_sent")
    facts = [n for n in map(NotSent.from_json, summary.get("not_sent_requests") or ()) if n is not None]
    if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
        return ""
    counts = obj(summary.get("not_sent_reasons"))
    parts = []
    for reason in NOT_SENT_REASONS:
        n = counts.get(reason)
        of = [f for f in facts if f.reason == reason]
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            continue
        caches = sorted({f.cache or "" for f in of})
        what = _NOT_SENT_WORDS[reason].format(cache=(caches[0] + " cache") if len(caches) == 1 and caches[0] else "cache")
        if reason in ("failed", "cancelled"):
            names = list(dict.fromkeys(f.net_error_name or (str(f.net_error_code) if f.net_error_code is not None else "") for f in of))
        else:
            names = list(dict.fromkeys(_short(f) for f in of))
        names = [x for x in names if x]
        shown = ", ".join(names[:MAX_NAMED]) + (", …" if len(names) > MAX_NAMED or len(of) < n and names else "")
        parts.append(f"{n} {what}" + (f" ({shown})" if shown else ""))
    return f"{total} not sent: {', '.join(parts)}" if parts else f"{total} not sent"


def page_notices(an) -> list[str]:
    """For each HAR of several pages the analysis was made from (opened alone), the line
    saying which page is shown and how to see the others (``pages.notice``)."""
    b = getattr(an, "browser", None)
    logs = b.get("logs") if isinstance(b, dict) else None
    out = []
    for s in logs or ():
        shown = s.get("page_shown") if isinstance(s, dict) and "matched" not in s else None
        if isinstance(shown, dict) and isinstance(shown.get("notice"), str):
            out.append(shown["notice"])
    return out
