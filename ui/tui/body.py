"""Bodies in the TUI: the request view's body sections and the content lines of Follow
stream (analyzer/body.py gives the typed, escaped, bounded view)."""
from __future__ import annotations

from rich.style import Style
from rich.text import Text

from wirefall.analyzer.safetext import printable

BODY_LINES = 400  # lines of one body shown in the request view / follow view
MAX_FOLLOW_EXCHANGES = 50  # exchanges whose bodies the follow view of a connection shows
_STYLE = (Style(color="#5fafd7"), Style(color="#d7af5f"))  # request, response content
_HEAD = Style(color="#808080", italic=True)


def _lines(v) -> list[str]:
    if v.kind == "image":
        return [f"[{v.mime} image, {v.size} bytes: shown in the web app; `wirefall objects` writes it out]"]
    lines = v.text.split("\n") if v.text else []
    if len(lines) > BODY_LINES:
        lines = lines[:BODY_LINES] + [f"… {len(lines) - BODY_LINES} more lines"]
    elif v.truncated:
        lines.append("… (truncated for display)")
    return lines


def body_text(bodies) -> Text:
    """The request view's "Request body" / "Response body" sections, from the
    ``RequestDetail.bodies`` (analyzer/request_detail.py)."""
    t = Text()
    for b in bodies:
        title = "Request body" if b.direction == 0 else "Response body"
        if b.view is None:
            t.append("\nBody\n", style="bold underline")
            t.append(printable(f"  not available: {b.error}") + "\n", style=_HEAD)
            continue
        v = b.view
        t.append(f"\n{title} ({printable(v.summary)})\n", style="bold underline")
        for line in _lines(v):
            t.append(f"  {line}\n", style=_STYLE[b.direction])
    return t


def with_bodies(an, items: list, cid: int, stream_id, ex, whole_connection: bool) -> list:
    """Follow-stream lines with each message's content after the frame where its body ended
    (lines without a packet, so Enter stays on frames)."""
    if ex is not None:
        exs = [ex]
    else:
        exs = [e for e in an.exchanges if e.connection == cid and (whole_connection or stream_id is None or e.stream_id == stream_id)]
    exs = exs[:MAX_FOLLOW_EXCHANGES]
    wanted = [(e, d) for e in exs for d in (0, 1) if (e.request_body_bytes if d == 0 else e.response_body_bytes)]
    if not wanted:
        return items
    from wirefall.analyzer.body import body_views

    try:
        views = body_views(an, wanted)
    except Exception as err:  # noqa: BLE001 - the frames stay shown whatever the bodies do
        return [*items, (printable(f"bodies not available: {type(err).__name__}: {err}"), _HEAD, None)]
    after: dict[int, list] = {}  # item index -> lines to insert after it
    # under frame lines, indented as their headers; with no frame (a browser log alone: no packets)
    # from the left, where 32 columns pushed "(a browser log holds no bodies)" out of a 160-column view
    ind = 32 if any(it[2] is not None for it in items) else 2
    for e, d in wanted:
        v = views[(e.id, d)]
        end = e.request_end_packet if d == 0 else e.response_end_packet
        at = max((i for i, it in enumerate(items) if it[2] == end), default=len(items) - 1)
        block = [(printable(f"{'':{ind}}── {'request' if d == 0 else 'response'} body of {e.method or ''} {e.url or e.path or ''}: "
                            f"{v.summary}"), _HEAD, None)]
        block += [(f"{'':{ind + 2}}{line}", _STYLE[d], None) for line in _lines(v)]
        after.setdefault(at, []).extend(block)
    out: list = []
    for i, it in enumerate(items):
        out.append(it)
        out.extend(after.get(i, ()))
    if -1 in after:
        out.extend(after[-1])
    return out
