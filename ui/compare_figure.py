"""Side-by-side waterfalls of two captures on one time axis (each starting at its own
page's start), matched requests on the same row.  Drawn from the shared waterfall model
(analyzer/waterfall.py) by the waterfall image's own drawing of its request rows
(ui/figures.py: ``request_drawing``, ``content_swatches``), so the two cannot drift."""
from __future__ import annotations

import html

from wirefall.analyzer.compare import in_flight, normalise_url, verdict
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
    """Both pages' waterfalls side by side, each drawn as the waterfall image draws its
    request rows (``figures.request_drawing``: phases, the download's bursts of packets over
    its pale part, retransmission ticks), with that image's legend — the phases and the content
    classes of both sides, each colour once — and each page's last response byte (and the
    browser's DOMContentLoaded and load event where a log gives them) as lines, their labels
    inside the plot."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from .figures import CHAR_PX, LEGEND_CHAR_PX, LEGEND_ROW_PX, add_swatches, content_swatches, request_drawing

    wf_a, wf_b = build(a), build(b)
    labels, ya, yb = _row_order(res, wf_a, wf_b)
    n = len(labels)
    # captured text (URLs, protocols, file names) as html_text: Plotly's label markup stays inert
    name_a = html_text(f"A: {', '.join(res['a']['protocols']) or a.path}")
    name_b = html_text(f"B: {', '.join(res['b']['protocols']) or b.path}")
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.02, subplot_titles=(name_a, name_b))
    sides = [(wf, ymap, [r for r in wf.rows if r.exchange in ymap]) for wf, ymap in ((wf_a, ya), (wf_b, yb))]
    xmax = 1.0
    xmin = 0.0
    for wf, _ymap, rows in sides:  # the axis spans the pages; background rows beyond them are cut at its edges
        for r in rows:
            if not r.background:
                xmin = min(xmin, (r.start - wf.page_start) * 1000.0)  # (compare's times: from each page's start)
                xmax = max(xmax, (r.end - wf.page_start) * 1000.0)
    for k in ("dom_content_loaded", "load_event"):  # (the browser's events: on the axis too)
        xmax = max([xmax] + [t * 1000.0 for t in ((res["page"].get(k) or {}).get(side) for side in "ab") if t is not None])
    x_range = (xmin * 1.05, xmax * 1.05)
    min_w = (x_range[1] - x_range[0]) / 900.0  # (a bar narrower is widened to stay visible, as in the waterfall image)
    swatches: dict[str, tuple[str, str | None, str]] = {}
    for col, (wf, ymap, rows) in enumerate(sides, start=1):
        axes = ("x", "y") if col == 1 else (f"x{col}", f"y{col}")
        for sw in request_drawing(go, fig, wf, rows, wf.page_start, {r.index: ymap[r.exchange] for r in rows}, axes, min_w):
            if not (sw[0] == PHASE_LABELS["receive"] and wf.color_by == "content"):  # (a side without packets: its downloads
                swatches.setdefault(sw[0], sw)  # are dark throughout, in the class colours the content entries name)
    not_packets = any(not len(an.index) for an in (a, b))  # (a HAR: no bursts to draw, the download dark throughout)
    order = {g: k for k, g in enumerate((*PHASES, "chunk"))}
    legend = sorted(swatches.values(), key=lambda sw: order.get(sw[2], len(order)))
    legend += content_swatches([r for _wf, _y, rows in sides for r in rows], wf_a.color_by)
    add_swatches(go, fig, legend)
    seen: set[str] = set()
    for tr in fig.data:  # (each side's tick traces name their kind: the legend lists it once)
        if tr.showlegend is not False and tr.name:
            if tr.name in seen:
                tr.showlegend = False
            seen.add(tr.name)
    for col, (side, (wf, _ymap, _rows)) in enumerate(zip("ab", sides), start=1):
        # each page's moments as lines, their labels inside the plot at its top, one under another:
        # the last response byte (what `stats` and the table call the page load time: not the
        # browser's load event) and, where a browser log gives them (a HAR side, --har, --har-b),
        # the browser's DOMContentLoaded and load event (seconds from the page's start: res["page"])
        # (a side whose page is incomplete: its last byte in the capture, the page's own no earlier)
        last = "last byte ≥" if "page_load_time" in (res.get("lower_bounds") or {}).get(side, ()) else "last byte"
        marks = [("page_load", last, wf.page_load_time, "dot")]
        marks += [(k, L.MILESTONE_SHORT[k], (res["page"].get(k) or {}).get(side), "dash") for k in ("dom_content_loaded", "load_event")]
        placed = 0
        for name, label, t, dash in marks:
            if t is None:
                continue
            x = t * 1000.0
            color = L.MILESTONE_COLORS[name]
            fig.add_vline(x=x, line=dict(color=color, dash=dash, width=1.5), row=1, col=col)
            # left of its line in the axis' right half (right of it at the axis' edge, it was cut off)
            inside_left = x > (x_range[0] + x_range[1]) / 2
            fig.add_annotation(x=x, y=1, xref="x" if col == 1 else f"x{col}", yref="paper", yanchor="top", yshift=-16 * placed,
                               xanchor="right" if inside_left else "left", xshift=-3 if inside_left else 3, showarrow=False,
                               text=f"{label} {x:.0f} ms", font=dict(size=11, color=color), bgcolor="rgba(255,255,255,0.85)")
            placed += 1
    for col, side in enumerate("ab", start=1):
        # each side's longest stretch with no page request in flight (the title's "at once"), shaded:
        # page-h1's 239 ms after its document, most of the time it lost to page-h2, is the client's, not
        # the wire's — shown where it is when it is a tenth of the side's time or more
        f = in_flight(res, side)
        if f and f["gap"] and f["span"] and f["gap"][1] - f["gap"][0] >= 0.1 * f["span"]:
            g0, g1 = (1000.0 * t for t in f["gap"])
            fig.add_vrect(x0=g0, x1=g1, fillcolor="#9e9e9e", opacity=0.15, line_width=0, layer="below", row=1, col=col)
            left = g0 < (x_range[0] + x_range[1]) / 2  # (from its start rightwards, else from its end leftwards: inside the axis)
            fig.add_annotation(x=g0 if left else g1, y=0, xref="x" if col == 1 else f"x{col}", yref="paper", yanchor="bottom",
                               xanchor="left" if left else "right", xshift=3 if left else -3,
                               showarrow=False, text=f"no page request in flight {g1 - g0:,.0f} ms",
                               font=dict(size=10, color="#616161"), bgcolor="rgba(255,255,255,0.85)")
    ticktext = [html_text(l.split(": ", 1)[0] + ": " + L.short_url(l.split(": ", 1)[1], 52)
                          if l.startswith(("A only: ", "B only: ", "A background: ", "B background: "))
                          else L.short_url(l, 60)) for l in labels]
    fig.update_xaxes(range=list(x_range), title_text="ms from the page's start", title_standoff=4)
    fig.update_yaxes(autorange="reversed", tickmode="array", tickvals=list(range(n)), ticktext=ticktext,
                     tickfont=dict(size=10, family="DejaVu Sans Mono, monospace"), automargin=False, range=[n - 0.5, -0.5] if n else None, row=1, col=1)
    # the legend under the axis title, as many rows as it takes (plotly wraps a horizontal legend at
    # the plot area's width, its columns as wide as its longest entry): the margin makes room for them all
    # the title says at a glance which side won and why (analyzer.compare.verdict, the lines `wirefall
    # compare` prints above its table): the faster side by the last response byte (or why none is
    # named), by the load event where a log gives it, where each side's time went, how alike the two
    # loads are; then what the rows are. Before, the title was the match count alone: which protocol
    # won was left to reading two dotted lines, and "other clients, other servers" to the CLI's warnings
    lines = verdict(res)
    head = [t for k, t in lines if k == "winner"][:1] or [f"{len(res['matched'])} requests matched"]
    sub = [html_text(t) for k, t in lines if k != "winner" or t != head[0]]
    sub.append(html_text(f"{len(res['matched'])} requests matched by {'URL' if res['match_mode'] == 'url' else 'path and query'}; "
                         "times from each page's start: its first row's DNS lookup or connection set-up"
                         + ("; a side without packets (a browser log) draws each download in its class colour throughout"
                            if not_packets else "")))
    ml, mr, mt = int(max((len(html.unescape(t)) for t in ticktext), default=8) * CHAR_PX) + 20, 10, 64 + 17 * len(sub)
    names = [t.name or "" for t in fig.data if t.showlegend is not False]
    per_row = max(int((width - ml - mr) // (40 + max((len(x) for x in names), default=10) * LEGEND_CHAR_PX)), 1)
    axis_px = 56  # tick labels and the axis title under the plot
    mb = axis_px + LEGEND_ROW_PX * -(-len(names) // per_row) + 16
    plot_h = max(200, 20 * n + 40)
    fig.update_layout(barmode="overlay", bargap=0.25, template="plotly_white", width=width, height=mt + plot_h + mb,
                      title=dict(text=f"<b>{html_text(head[0])}</b>", font=dict(size=15),
                                 subtitle=dict(text="<br>".join(sub), font=dict(size=12, color="#444444")), x=0.01,
                                 y=1 - 8 / (mt + plot_h + mb), yref="container", yanchor="top"),
                      legend=dict(orientation="h", y=-axis_px / plot_h, yanchor="top", x=0.0, xanchor="left",
                                  font=dict(size=10), traceorder="normal"),
                      margin=dict(l=ml, r=mr, t=mt, b=mb, autoexpand=False))
    return fig


def figure_bytes(fig, fmt: str) -> bytes:
    fmt = fmt.lower()
    if fmt == "html":
        return fig.to_html(full_html=True, include_plotlyjs=True, config={"displaylogo": False}).encode()
    if fmt in ("png", "svg"):
        from wirefall.ui.figures import to_image

        return to_image(fig, fmt)
    raise ValueError(f"unsupported output format {fmt!r} (html, png, svg)")
