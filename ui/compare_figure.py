"""Side-by-side waterfalls of two captures on one time axis (each starting at its own
first packet), matched requests on the same row.  Drawn from the shared waterfall model
(analyzer/waterfall.py) with the same phases and colours as ui/figures.py."""
from __future__ import annotations

from wirefall.analyzer.compare import normalise_url
from wirefall.analyzer.model import Analysis
from wirefall.analyzer.safetext import html_text
from wirefall.analyzer.waterfall import PHASE_LABELS, PHASES, build

from . import waterfall_layout as L


def _row_order(res: dict, wf_a, wf_b) -> tuple[list[str], dict[int, int], dict[int, int]]:
    """Row labels and, per side, exchange id → row number (matched pairs share a row)."""
    labels: list[str] = []
    ya: dict[int, int] = {}
    yb: dict[int, int] = {}
    for m in res["matched"]:
        ya[m["a"]["exchange"]] = yb[m["b"]["exchange"]] = len(labels)
        labels.append(m["url"])
    for e in res["only_a"]:
        ya[e["exchange"]] = len(labels)
        labels.append("A only: " + normalise_url(e["url"]))
    for e in res["only_b"]:
        yb[e["exchange"]] = len(labels)
        labels.append("B only: " + normalise_url(e["url"]))
    for side, ymap in (("a", ya), ("b", yb)):  # not the page's: drawn, never matched
        for e in res.get(f"background_{side}", ()):
            ymap[e["exchange"]] = len(labels)
            labels.append(f"{side.upper()} background: " + normalise_url(e["url"]))
    return labels, ya, yb


def compare_figure(a: Analysis, b: Analysis, res: dict, width: int = 1600):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    wf_a, wf_b = build(a), build(b)
    labels, ya, yb = _row_order(res, wf_a, wf_b)
    n = len(labels)
    # captured text (URLs, protocols, file names) as html_text: Plotly's label markup stays inert
    name_a = html_text(f"A: {', '.join(res['a']['protocols']) or a.path}")
    name_b = html_text(f"B: {', '.join(res['b']['protocols']) or b.path}")
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.02, subplot_titles=(name_a, name_b))
    xmax = 1.0
    xmin = 0.0
    for col, (wf, ymap) in enumerate(((wf_a, ya), (wf_b, yb)), start=1):
        t0 = wf.page_start  # (compare's times: from each page's start)
        for r in wf.rows:  # the axis spans the pages; background rows beyond them are cut at its edges
            if r.exchange in ymap and not r.background:
                xmin = min(xmin, (r.start - t0) * 1000.0)
                xmax = max(xmax, (r.end - t0) * 1000.0)
        for ph in PHASES:
            sel = [(r, s, e) for r in wf.rows if r.exchange in ymap for (p, s, e) in r.phases if p == ph]
            if not sel:
                continue
            fig.add_trace(go.Bar(
                orientation="h", base=[(s - t0) * 1000.0 for _, s, _ in sel], x=[max((e - s) * 1000.0, 0.3) for _, s, e in sel],
                y=[ymap[r.exchange] for r, _, _ in sel], marker=dict(color=[L.phase_colors(r)[ph] for r, _, _ in sel], line=dict(width=0)),
                name=PHASE_LABELS[ph], legendgroup=ph, showlegend=col == 1, width=0.7,
                hovertext=["<br>".join([f"{PHASE_LABELS[ph]}: {(e - s) * 1000:.1f} ms"] + [html_text(h) for h in r.hover]) for r, s, e in sel],
                hoverinfo="text",
            ), row=1, col=col)
        pl = wf.page_load_time
        if pl is not None:
            fig.add_vline(x=pl * 1000.0, line=dict(color="#d62728", dash="dot", width=1.5), row=1, col=col,
                          annotation_text=f"page load {pl * 1000:.0f} ms", annotation_position="bottom right")
    fig.update_xaxes(range=[xmin * 1.05, xmax * 1.05], title_text="ms from each page's start (its first row's DNS lookup or connection set-up)")
    fig.update_yaxes(autorange="reversed", tickmode="array", tickvals=list(range(n)),
                     ticktext=[html_text(l.split(": ", 1)[0] + ": " + L.short_url(l.split(": ", 1)[1], 52)
                               if l.startswith(("A only: ", "B only: ", "A background: ", "B background: "))
                               else L.short_url(l, 60)) for l in labels], tickfont=dict(size=10, family="monospace"),
                     automargin=True, range=[n - 0.5, -0.5] if n else None, row=1, col=1)
    fig.update_layout(barmode="overlay", template="plotly_white", width=width, height=max(420, 220 + 20 * n),
                      title=dict(text=f"{len(res['matched'])} requests matched by {'URL' if res['match_mode'] == 'url' else 'path and query'}", x=0.01),
                      legend=dict(orientation="h", y=-0.22, yanchor="top"), margin=dict(l=10, r=10, t=80, b=110))
    return fig


def figure_bytes(fig, fmt: str) -> bytes:
    fmt = fmt.lower()
    if fmt == "html":
        return fig.to_html(full_html=True, include_plotlyjs=True, config={"displaylogo": False}).encode()
    if fmt in ("png", "svg"):
        from wirefall.ui.figures import to_image

        return to_image(fig, fmt)
    raise ValueError(f"unsupported output format {fmt!r} (html, png, svg)")
