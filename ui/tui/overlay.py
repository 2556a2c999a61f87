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
    t = Text()
    if not cmp.has_browser(e):
        return t
    conn = an.connections[e.connection] if 0 <= e.connection < len(an.connections) else None
    t0 = an.start_time
    alone = cmp.from_log_alone(e)
    t.append(f"\n{'Browser log' if alone else 'Wire and browser log'} ({printable(cmp.log_label(e))}; ms since "
             f"{'the first packet' if an.packets else 'the log began'})\n", style="bold underline")
    t.append(f"  {'phase':<18}{'wire':>14}{'browser log':>14}{'browser − wire':>17}\n", style="bold")
    for row in cmp.phase_comparison(e, conn):
        w, b, d = cmp.cells(row, t0)
        t.append(f"  {row.label:<18}")
        t.append(f"{w:>14}", style=SOURCE_STYLES["wire"] if row.wire is not None else "")
        t.append(f"{b:>14}", style=SOURCE_STYLES["browser"] if row.browser is not None else "")
        t.append(f"{d:>17}" + (f"  [{row.wire_packet}]" if row.wire_packet else "") + "\n")
    if alone:
        t.append("  (no packets: a browser log opened alone; lay it over a capture with --"
                 f"{e.browser.get('source', 'har')} for the wire's times)\n", style="italic")
    t.append("\nFields by source\n", style="bold underline")
    for f in cmp.field_sources(e):
        t.append(f"  {f.label:<20}")
        t.append(f"{cmp.SOURCE_LABELS[f.source]:<13}", style=SOURCE_STYLES[f.source])
        t.append(printable(cmp.field_cell(f))[:200] + "\n")
    return t


def summary_notes(an) -> list[str]:
    """One line per log laid over ``an`` (shown once the capture is loaded)."""
    out = []
    for s in cmp.overlays(an):
        line = cmp.summary_line(s)
        rs = {r.name: r for r in cmp.offset_rows(s)}
        r = rs.get("response_start")
        if r is not None and r.median is not None:
            line += f"; browser − wire at response start: median {cmp.fmt_ms(r.median, signed=True)}"
        out.append(printable(line))
    return out
