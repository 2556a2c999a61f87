"""Every export format in one call: data formats (HAR, model JSON, qlog) are written by
``analyzer.export``; images (PNG, SVG, offline HTML) are drawn here by ``ui.figures``,
so the core never imports the UI."""
from __future__ import annotations

import os

from wirefall.analyzer.export import IMAGE_FORMATS, ExportError, check_output, write_atomic
from wirefall.analyzer.export import export as export_data
from wirefall.analyzer.model import Analysis


def check(out_path: str, fmt: str | None = None, force: bool = False, expr: str | None = None) -> str:
    """The format ``export`` would write ``out_path`` in, or its error (``ExportError``,
    ``FileExistsError``) — format, folder, an existing file, a filter on a data format — found
    without the analysis: ``wirefall export`` asks it before reading the capture."""
    fmt = check_output(out_path, fmt, force)
    if fmt not in IMAGE_FORMATS and (expr or "").strip():
        raise ExportError(f"a filter applies to the waterfall images (png, svg, html), not to {fmt}")
    return fmt


def export(analysis: Analysis, out_path: str, fmt: str | None = None, force: bool = False,
           include_sensitive: bool = False, group_by: str | None = None, sort: str | None = None,
           time_span: str = "page", expr: str | None = None) -> str:
    """Write ``analysis`` to ``out_path``; returns the format written.  ``time_span`` (images):
    "page", the time axis spans the page (background rows beyond it cut at its edges, the
    subtitle says how many), or "capture".  ``expr`` (images): a display filter over the
    requests (``requests -Y``'s): only the rows it matches are drawn, with their own numbers,
    and the title says "N of M requests shown — filter: EXPR" (a bad filter raises
    ``analyzer.filter.FilterError``)."""
    fmt = check(out_path, fmt, force, expr)
    if fmt not in IMAGE_FORMATS:
        return export_data(analysis, out_path, fmt=fmt, force=force, include_sensitive=include_sensitive)
    from wirefall.analyzer.waterfall import build

    from . import figures

    wf = build(analysis, group_by=group_by, sort=sort)
    unfiltered, expr = None, (expr or "").strip()
    if expr:
        unfiltered, wf = wf, _filtered(analysis, wf, expr)
    fig = figures.waterfall_figure(wf, hover=fmt == "html", time_span=time_span, responsive=fmt == "html",  # (images: no hover text)
                                   unfiltered=unfiltered, filter_text=expr or None)
    if not wf.rows and unfiltered is not None and unfiltered.rows:
        fig.add_annotation(text="no request matches the filter", x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                           font=dict(size=16))
    elif not wf.rows:  # an empty image says why, as the UIs do (ui.explain): never a blank that reads as "nothing there"
        import textwrap

        from wirefall.analyzer.safetext import html_text

        from . import explain

        why = textwrap.wrap(explain.empty_text(analysis, 0, 0), 90)  # (all of it: cut at 4 lines it ended mid-word)
        fig.add_annotation(text="<br>".join(html_text(ln) for ln in why), x=0.5, y=0.5, xref="paper", yref="paper",
                           showarrow=False, font=dict(size=13, color="#d62728"))
    # (the HTML page written as it is made: figures.html_chunks)
    data = figures.to_image(fig, fmt) if fmt != "html" else figures.html_chunks(fig, os.path.basename(analysis.path or "") or None)
    write_atomic(out_path, data, force=force)
    return fmt


def _filtered(analysis: Analysis, wf, expr: str):
    """The waterfall of the requests ``expr`` matches (``requests -Y``'s filter), re-indexed
    (``waterfall_layout.subset``); a request the filter cannot evaluate does not match."""
    from wirefall.analyzer.filter import compile_filter

    from . import waterfall_layout as L

    pred = compile_filter(expr, "exchanges")
    exs = {e.id: e for e in analysis.exchanges}

    def match(r) -> bool:
        e = exs.get(r.exchange)
        try:
            return e is not None and bool(pred(e))
        except Exception:  # noqa: BLE001 - as the web app's filter: a row the predicate cannot evaluate does not match
            return False

    return L.subset(wf, [r for r in wf.rows if match(r)])


def html_bytes(fig) -> bytes:
    """An offline HTML page of a Plotly figure (plotly.js inlined), titled (``figures.html_document``)."""
    from . import figures

    return figures.html_document(fig)
