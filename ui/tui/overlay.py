"""The TUI's view of a browser log beside the wire (``wirefall tui CAP --netlog F``, or a
log opened alone): the request view's section per phase — wire, browser log, browser
minus wire — and each field with its source, formatted from the typed rows of
``analyzer.browserlog.comparison`` (the web app formats the same rows)."""
from __future__ import annotations

from rich.text import Text

from wirefall.analyzer.browserlog import comparison as cmp
from wirefall.analyzer.safetext import printable

SOURCE_STYLES = {"wire": "#87d787", "browser": "#87d7ff", "inferred": "#ffd787"}


def comparison_text(an, e) -> Text:
    """The section of the request view for ``e`` (empty when no browser log speaks of it)."""
    from wirefall.analyzer.request_detail import browser_log, not_sent_record
    from wirefall.analyzer.waterfall import phases_by_exchange

    conn = an.connections[e.connection] if 0 <= e.connection < len(an.connections) else None
    # (on the capture's clock where the waterfall moves the log's bars: cmp.exchange_clock_offset;
    # the row's own phases for the wire's blocked and dns, as the request view's Timing shows them)
    return browser_text(browser_log(e, conn, not_sent_record(an, e), cmp.exchange_clock_offset(an, e),
                                    phases_by_exchange(an).get(e.id)), an.start_time, an.packets > 0)


def browser_text(b, t0: float, from_packets: bool) -> Text:
    """A ``RequestDetail.browser`` (analyzer/request_detail.py) as the request view's section;
    ``t0``: where its times count from (``from_packets``: the first packet, else the log's start)."""
    t = Text()
    if b is None:
        return t
    # (a log opened alone counts from the page shown: a HAR's second page from its own start, not the
    # log's -- "the log began" read WebPageTest's run 2 as 103 ms into a log that began 20 s before)
    since = "the first packet" if from_packets else ("the page's start" if b.source == "har" else "the log began")
    t.append(f"\n{'Browser log' if b.alone or b.not_sent is not None else 'Wire and browser log'} ({printable(b.label)}; ms since {since})\n",
             style="bold underline")
    if b.clock_offset is not None:  # (its times moved onto the capture's clock, as the waterfall's bars: said so)
        t.append(f"  {printable(cmp.clock_note(b.source, b.clock_offset))}\n", style="italic")
    t.append(f"  {'phase':<18}{'wire':>14}{'browser log':>14}{'browser − wire':>17}\n", style="bold")
    # moments first, then durations, each under its own line: in one list under "ms since the first
    # packet", "DNS 39.000 ms" (a length) read as a moment 39 ms in (review 32)
    points = [r for r in b.phases if r.kind == "point"]
    lengths = [r for r in b.phases if r.kind != "point"]
    for rows, what in ((points, f"moments (ms since {since})"), (lengths, "durations (ms)")):
        if rows:
            t.append(f"  {what}\n", style="italic")
        for row in rows:
            _phase_line(t, row, t0)
    if b.not_sent is not None:  # (alone or over a capture: no capture has wire times of it)
        t.append(f"  (no wire times in any capture: the request never reached the network — {printable(b.not_sent.label)})\n",
                 style="italic")
    elif b.alone:
        t.append("  (no packets: a browser log opened alone; lay it over a capture with --"
                 f"{b.source} for the wire's times)\n", style="italic")
    t.append("\nFields by source\n", style="bold underline")
    for f in b.fields:
        t.append(f"  {f.label:<20}")
        t.append(f"{cmp.SOURCE_LABELS[f.source]:<13}", style=SOURCE_STYLES[f.source])
        t.append(printable(cmp.field_cell(f))[:200] + "\n")
    return t


def _phase_line(t: Text, row, t0: float) -> None:
    """One row of the phase table: its label, the wire's, the log's and their difference."""
    w, br, d = cmp.cells(row, t0)
    t.append(f"  {row.label:<18}")
    t.append(f"{w:>14}", style=SOURCE_STYLES["wire"] if row.wire is not None else "")
    t.append(f"{br:>14}", style=SOURCE_STYLES["browser"] if row.browser is not None else "")
    t.append(f"{d:>17}" + (f"  [{row.wire_packet}]" if row.wire_packet else "") + "\n")


def summary_notes(an) -> list[str]:
    """One line per log laid over ``an`` (shown once the capture is loaded)."""
    out = []
    for s in cmp.overlays(an):
        # (with the medians of browser − wire at the send and the receipt; a HAR's clock offset said apart)
        out.append(printable(cmp.summary_line(s)))
    return out
