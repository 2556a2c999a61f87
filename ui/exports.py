"""Every export format in one call: data formats (HAR, model JSON, qlog) are written by
``analyzer.export``; images (PNG, SVG, offline HTML) are drawn here by ``ui.figures``,
so the core never imports the UI."""
from __future__ import annotations

import os

from wirefall.analyzer.export import FORMATS, IMAGE_FORMATS, ExportError, write_atomic
from wirefall.analyzer.export import export as export_data
from wirefall.analyzer.model import Analysis


def export(analysis: Analysis, out_path: str, fmt: str | None = None, force: bool = False,
           include_sensitive: bool = False, group_by: str | None = None, sort: str | None = None,
           time_span: str = "page") -> str:
    """Write ``analysis`` to ``out_path``; returns the format written.  ``time_span`` (images):
    "page", the time axis spans the page (background rows beyond it cut at its edges, the
    subtitle says how many), or "capture"."""
    fmt = (fmt or os.path.splitext(out_path)[1].lstrip(".")).lower()
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r} (choose from {', '.join(FORMATS)})")
    if fmt not in IMAGE_FORMATS:
        return export_data(analysis, out_path, fmt=fmt, force=force, include_sensitive=include_sensitive)
    if os.path.exists(out_path) and not force:
        raise FileExistsError(f"{out_path} exists (use --force to overwrite)")
    from wirefall.analyzer.waterfall import build

    from . import figures

    wf = build(analysis, group_by=group_by, sort=sort)
    fig = figures.waterfall_figure(wf, hover=fmt == "html", time_span=time_span, responsive=fmt == "html")  # (images: no hover text)
    if not wf.rows:  # an empty image says why, as the UIs do (ui.explain): never a blank that reads as "nothing there"
        import textwrap

        from wirefall.analyzer.safetext import html_text

        from . import explain

        why = textwrap.wrap(explain.empty_text(analysis, 0, 0), 90)  # (all of it: cut at 4 lines it ended mid-word)
        fig.add_annotation(text="<br>".join(html_text(ln) for ln in why), x=0.5, y=0.5, xref="paper", yref="paper",
                           showarrow=False, font=dict(size=13, color="#d62728"))
    data = figures.to_image(fig, fmt) if fmt != "html" else figures.html_document(fig, os.path.basename(analysis.path or "") or None)
    write_atomic(out_path, data, force=force)
    return fmt


def html_bytes(fig) -> bytes:
    """An offline HTML page of a Plotly figure (plotly.js inlined), titled (``figures.html_document``)."""
    from . import figures

    return figures.html_document(fig)
