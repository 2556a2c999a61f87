"""The request detail's body sections in the web app (analyzer/body.py gives the typed,
decoded, bounded view): JSON and text in ``<pre>`` (Dash escapes text children, and the text
is ``printable`` already), images as ``data:`` URLs of the raster types analyzer/body.py
allows (never a captured content type as given: no ``data:text/html``), hex dumps otherwise."""
from __future__ import annotations

import base64

from dash import html

from wirefall.analyzer.safetext import printable

MAX_IMAGE = 4 << 20  # image bytes inlined as a data: URL


def body_section(an, e) -> list:
    """Components for the request and response bodies of exchange ``e``."""
    from wirefall.analyzer.body import IMAGE_TYPES, body_views

    try:
        views = body_views(an, [(e, 0), (e, 1)])
    except Exception as err:  # noqa: BLE001 - the rest of the detail stays shown
        return [html.H4("Body"), html.P(printable(f"not available: {type(err).__name__}: {err}"), className="hint")]
    out: list = []
    for d, title in ((0, "Request body"), (1, "Response body")):
        v = views[(e.id, d)]
        if d == 0 and v.kind == "empty":
            continue
        out.append(html.H4(printable(f"{title} ({v.summary})")))
        bid = f"detail-{'request' if d == 0 else 'response'}-body"
        if v.kind == "image" and v.data is not None and v.mime in IMAGE_TYPES and len(v.data) <= MAX_IMAGE:
            src = f"data:{v.mime};base64,{base64.b64encode(v.data).decode('ascii')}"
            out.append(html.Img(src=src, id=bid, alt=printable(e.url or ""), style={"maxWidth": "100%", "maxHeight": "480px"}))
        elif v.kind in ("json", "text", "hex"):
            out.append(html.Pre(v.text, id=bid, className=f"body body-{v.kind}",
                                style={"maxHeight": "480px", "overflow": "auto", "whiteSpace": "pre-wrap"}))
    return out
