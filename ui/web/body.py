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
    from wirefall.analyzer.request_detail import bodies_of

    return bodies_section(bodies_of(an, e), e.url)


def bodies_section(bodies, url: str | None = None) -> list:
    """Components for ``RequestDetail.bodies`` (analyzer/request_detail.py); ``url`` names an
    image (its ``alt``)."""
    from wirefall.analyzer.body import IMAGE_TYPES

    out: list = []
    for b in bodies:
        if b.view is None:
            out += [html.H4("Body"), html.P(printable(f"not available: {b.error}"), className="hint")]
            continue
        v, d = b.view, b.direction
        title = "Request body" if d == 0 else "Response body"
        out.append(html.H4(printable(f"{title} ({v.summary})")))
        bid = f"detail-{'request' if d == 0 else 'response'}-body"
        if v.kind == "image" and v.data is not None and v.mime in IMAGE_TYPES and len(v.data) <= MAX_IMAGE:
            src = f"data:{v.mime};base64,{base64.b64encode(v.data).decode('ascii')}"
            out.append(html.Img(src=src, id=bid, alt=printable(url or ""), style={"maxWidth": "100%", "maxHeight": "480px"}))
        elif v.kind in ("json", "text", "hex"):
            out.append(html.Pre(v.text, id=bid, className=f"body body-{v.kind}",
                                style={"maxHeight": "480px", "overflow": "auto", "whiteSpace": "pre" if v.kind == "hex" else "pre-wrap"}))
    return out
