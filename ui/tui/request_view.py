"""The request view's text (``analyzer.request_detail.RequestDetail`` formatted with Rich
styles), shared by the TUI (``ui.tui.app.request_text``, the Follow view's frame lines) and
``wirefall requests FILE --detail N`` (its plain text).  Imports Rich and the analyzer only,
never Textual, so the CLI stays light."""
from __future__ import annotations

from rich.style import Style
from rich.text import Text

from wirefall.analyzer.jsonout import unknown_fields
from wirefall.analyzer.request_detail import cache_bytes, no_response_text, size_text
from wirefall.analyzer.safetext import printable

from .body import body_text  # request and response bodies
from .overlay import browser_text  # a browser log's times beside the wire's, fields by source

# the values of ui.tui.widgets.DEFAULT_STYLE / ERROR_STYLE (that module imports Textual)
DEFAULT_STYLE = Style(color="#c0c0c0")
ERROR_STYLE = Style(color="#ff5f5f", bold=True)
NO_FRAMES = "no decoded frames on this stream (not decrypted, or a protocol wirefall does not decode)"
# a browser log opened alone: no packet, hence no frame (NO_FRAMES blamed decryption or the protocol)
NO_FRAMES_LOG = "no frames: a browser log opened alone has no packets (lay it over the load's capture for them)"
# a browser log's request that never reached the network (a cache hit, a failure before sending):
# no frame in any capture — neither decryption nor the capture is to blame, nor is a capture missing
NO_FRAMES_UNSENT = "no frames: the request never reached the network"
MAX_FRAME_LINES = 2000  # frame lines of the request view (F: the Follow view shows them all)
_MOMENT_LABELS = {"request_start": "request start", "request_end": "request end", "response_start": "response start",
                  "response_headers_end": "response headers", "response_end": "response end"}


def frame_items(frames, t0: float) -> list:
    """One line per frame (value = its packet) with its headers indented below: the frame
    lines of the Follow view and of the request view."""
    from wirefall.analyzer.detail import flag_names, frame_summary

    items: list = []
    for f in frames:
        arrow = "→" if f.direction == 0 else "←"
        fl = flag_names(f)
        st = Style(color="#87d7ff") if f.direction == 0 else Style(color="#ffd787")
        if f.error:
            st = ERROR_STYLE
        summ = frame_summary(f)
        # (the stream said once: an HTTP/2 or SPDY summary names it already, "HEADERS[3]: …")
        sid = f" stream {f.stream_id}" if f.stream_id is not None and f"[{f.stream_id}]" not in summ else ""
        line = f"{f.time - t0:10.6f}  #{f.packet:<7} {arrow} {f.protocol:<8} {summ}{sid}  len {f.length}" + (f"  [{fl}]" if fl else "")
        if f.error:
            line += f"  ERROR: {f.error}"
        items.append((printable(line), st, f.packet))
        for k, v in f.headers or ():
            items.append((printable(f"{'':32}{k}: {v}"), DEFAULT_STYLE, f.packet))
    return items


LABEL_MAX = 24  # the label column at most: a longer phase label runs past it, its numbers after it


def _timing_line(label: str, w: int, number: str) -> str:
    """``label`` in a column ``w`` wide and ``number`` right-aligned after it (12 wide); a label
    longer than the column runs on, two spaces and the number after it.  The idle phase's
    "Connection idle (ready, request not yet sent)" made the column 47 wide, and at 80 columns
    every line's packet numbers wrapped onto a line of their own (review 32)."""
    if len(label) <= w:
        return f"  {label:<{w}}{number:>12}"
    return f"  {label}  {number.strip()}"


def _no_response(d) -> bool:
    """A request the capture holds without any byte of its response (not a push, not a browser
    log's request that never reached the network): figures_marks.no_response's rule."""
    ends = {m.name: m.time for m in d.moments}
    return (not d.pushed and d.unsent is None and not d.responded and d.status is None and "response_start" in ends
            and ends["response_start"] is None and d.t0_is_first_packet)


def _bounds(p) -> str:
    """`` [a → b]``: the packets at a phase's ends (``?`` where no packet is at that time)."""
    if p.start_packet is None and p.end_packet is None:
        return ""
    a, b = (str(x) if x is not None else "?" for x in (p.start_packet, p.end_packet))
    return f"  [{a}]" if a == b else f"  [{a} → {b}]"


def _header_bytes(wire: int, decoded: int, headers, d) -> str:
    """A header block's sizes: wire and decoded, and how many of its fields are ``<unknown>``
    (HPACK/QPACK entries from before the capture, which ``decoded`` leaves out: JSON
    ``*_header_fields_unknown``); a browser log opened alone knows neither size (a HAR's
    headersSize is not the wire's) unless it is wirefall's own HAR: "–"."""
    if not d.t0_is_first_packet and wire == 0 and decoded == 0 and headers:
        return "wire –  decoded –  (a browser log gives no header bytes)"
    n = unknown_fields(headers)
    return f"wire {wire}  decoded {decoded}" + (f"  ({n} <unknown>)" if n else "")


def _sizes(t: Text, d) -> None:
    s, P = d.sizes, printable
    t.append(f"  request headers   {_header_bytes(s.request_headers_wire, s.request_headers_decoded, d.request_headers, d)}\n")
    t.append(f"  response headers  {_header_bytes(s.response_headers_wire, s.response_headers_decoded, d.response_headers, d)}\n")
    t.append(f"  request body      {size_text(s.request_body, s.request_body_lower_bound)}\n")
    t.append(f"  response body     {size_text(s.response_body, s.response_body_lower_bound)} on the wire"
             + (f", {s.response_body_decoded} decoded" if s.response_body_decoded is not None else "")
             + (f" ({P(s.content_encoding)})" if s.content_encoding else "") + (f"  {P(s.content_type)}" if s.content_type else "") + "\n")


def _unsent_sizes(t: Text, d) -> None:
    """A request that never reached the network: no byte on the wire (not "wire 0"); what the
    log says it read from a cache, or that no response came."""
    s, ns, P = d.sizes, d.unsent, printable
    t.append("  on the wire       none: the request never reached the network\n")
    if s.request_body:
        t.append(f"  request body      {s.request_body} (the log's count; never sent)\n")
    if ns.reason == "cache":
        t.append(f"  response body     {cache_bytes(s)} read from the browser's {P(ns.label)} (the log's count)"
                 + (f"  {P(s.content_type)}" if s.content_type else "") + "\n")
    else:
        t.append(f"  response body     {no_response_text(ns)}\n")


def detail_text(d) -> Text:
    """A ``RequestDetail`` as the request view's text."""
    t0 = d.t0  # the first packet; for a browser log opened alone, its start
    t = Text()
    c = d.conn

    def h(title: str) -> None:
        t.append(f"\n{title}\n", style="bold underline")

    P = printable  # every captured string below: escapes, never raw control characters
    t.append(P(f"{d.method or ''} {d.url or ''}") + "\n", style="bold")
    # (a request that never reached the network is on a connection of the log's rows, which had none:
    # "? → ?" read as endpoints the capture did not show)
    where = " (none: never on the network)" if d.unsent is not None else f" ({c.label})" if c else ""
    t.append(P(f"{d.protocol}  status {d.status_text}  connection {d.connection}{where}"
               + (f"  stream {d.stream_id}" if d.stream_id is not None else "") + ("  pushed" if d.pushed else "") + (f"  reset {d.reset}" if d.reset else "")) + "\n")
    if d.error:
        t.append(f"error: {P(d.error)}\n", style="red")
    if d.unsent_text:
        t.append(P(d.unsent_text) + "\n", style="italic #ffd787")
    if d.unknown:
        t.append(f"not in the capture: {', '.join(d.unknown)}\n", style="italic")
    if d.unsent is not None:  # (its times are the log's, over a capture placed on the capture's clock)
        h("Timing (ms since the first packet; the browser log's times on the capture's clock: it never reached the network)" if d.t0_is_first_packet
          else "Timing (ms since the page's start: the browser log's times, it never reached the network)")
    else:
        h("Timing (ms since the first packet; packet numbers in brackets)" if d.t0_is_first_packet
          else "Timing (ms since the page's start: a browser log opened alone, no packets)")
    # the moments (times) and the phases (durations) in one pair of columns: the labels padded to
    # the longest of both, the numbers right-aligned under one another
    labels = [_MOMENT_LABELS.get(m.name, m.name) for m in d.moments]
    w = max([len(x) for x in labels + [p.label for p in d.phases] if len(x) <= LABEL_MAX] + [16]) + 2
    for label, m in zip(labels, d.moments):
        t.append(_timing_line(label, w, f"{(m.time - t0) * 1000:.3f}") + f" ms{f'  [{m.packet}]' if m.packet is not None else ''}\n"
                 if m.time is not None else _timing_line(label, w, "-") + "\n")
    if d.phases:
        t.append("  phases (durations, as DevTools' Timing)\n", style="italic")
    for p in d.phases:
        t.append(_timing_line(p.label, w, f"{p.duration * 1000:.3f}") + f" ms{_bounds(p)}\n", style=p.color or "")
    if d.duration is not None:
        # (no response: the row ends at its request's end, "total 0.000 ms" read as a request that took no
        # time; the waterfall says "no response", open to the capture's end)
        t.append(_timing_line("total", w, f"{d.duration * 1000:.3f}") + " ms"
                 + ("  (no response in the capture: its request's own time)" if _no_response(d) else "") + "\n", style="bold")
    t.append_text(browser_text(d.browser, t0, d.t0_is_first_packet))  # a browser log's times beside the wire's, fields by source
    h("Sizes (bytes)")
    if d.unsent is not None:
        _unsent_sizes(t, d)
    else:
        _sizes(t, d)
    h(f"Request headers ({len(d.request_headers)})")
    for k, v in d.request_headers:
        t.append(f"  {P(k)}: ", style="#87d7ff")
        t.append(f"{P(v)}\n")
    h(f"Response headers ({len(d.response_headers)})")
    for k, v in d.response_headers:
        t.append(f"  {P(k)}: ", style="#ffd787")
        t.append(f"{P(v)}\n")
    t.append_text(body_text(d.bodies))
    if d.markers:
        h("Markers")
        for mk in d.markers:
            text = d.marker_text(mk)  # (a priority signal as the detail's priority line says it: request_detail.priority_label)
            label = text[len(mk.kind) + 1:] if text.startswith(mk.kind + " ") else text  # ("priority: priority …" said once)
            t.append(P(f"  {mk.kind}: {label}" + (f" (packet {mk.packet})" if mk.packet else "")) + "\n")
    none = NO_FRAMES_UNSENT if d.unsent is not None else NO_FRAMES if d.t0_is_first_packet else NO_FRAMES_LOG
    items = frame_items(d.frames, t0) or [(none, DEFAULT_STYLE, None)]
    h(f"Frames of this {'stream' if d.stream_id is not None else 'exchange'} ({len(d.frames)})")
    for line, st, _ in items[:MAX_FRAME_LINES]:
        t.append(line + "\n", style=st)
    if len(items) > MAX_FRAME_LINES:
        t.append(f"… {len(items) - MAX_FRAME_LINES} more lines (F: follow stream)\n")
    if d.packets:
        h(f"Packets ({len(d.packets)}, where the frames complete)")
        t.append("  " + " ".join(str(p) for p in d.packets[:MAX_FRAME_LINES])
                 + (f" … {len(d.packets) - MAX_FRAME_LINES} more" if len(d.packets) > MAX_FRAME_LINES else "") + "\n")
    return t
