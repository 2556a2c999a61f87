"""A request's or response's body for display: typed, decoded, bounded, inert.

``body_view(analysis, exchange, direction=1)`` reads the body again from the capture
(``analyzer.objects.exchange_body``: only its connection's packets are dissected), undoes the
Content-Encoding (``analyzer.objects.decode_body``, at most ``DISPLAY_BUDGET`` decoded bytes
kept) and returns a ``BodyView``:

- ``kind`` "json": the body parsed as JSON and pretty-printed (2-space indent), when the
  content type says JSON (``application/json``, ``*+json``) and the whole body fits;
- "text": a textual content type (``text/*``, JavaScript, XML, form data, SVG) or bytes that
  decode as UTF-8 with few control characters;
- "image": a raster image type (PNG, JPEG, GIF, WebP, AVIF, BMP, ICO) whose whole body is
  kept: ``data`` and ``mime`` (the web app shows it as a ``data:`` URL);
- "hex": anything else, as ``tshark -x`` lines of the first ``HEX_BYTES`` bytes;
- "empty" (no body) and "unavailable" (``error`` says why: not decrypted, a browser log, a
  browser log's request that never reached the network — served from a cache, failed before
  sending: no capture holds its body, which is not looked for in the one open).

``text`` is always safe to print: control, bidi and surrogate characters are escaped
(``analyzer.safetext.printable``; line breaks kept, CRLF shown as a line break), and at most
``TEXT_CHARS`` characters are kept (``truncated`` then says so, as it does when the body
itself was longer than the budget).
"""
from __future__ import annotations

import json
from typing import Any
from dataclasses import dataclass

from .model import Analysis, Exchange
from .safetext import printable_lines

DISPLAY_BUDGET = 2 << 20  # decoded bytes kept for display
WIRE_BUDGET = 16 << 20  # body bytes (before decoding) read again from the capture
TEXT_CHARS = 200_000  # characters of text / JSON shown
HEX_BYTES = 16 << 10  # bytes shown as a hex dump
IMAGE_TYPES = {"image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp", "image/avif", "image/bmp",
               "image/x-icon", "image/vnd.microsoft.icon"}
_TEXT_TYPES = ("application/javascript", "application/x-javascript", "application/ecmascript", "application/xml",
               "application/x-www-form-urlencoded", "image/svg+xml", "application/xhtml+xml", "application/graphql")


@dataclass(slots=True)
class BodyView:
    kind: str  # json | text | image | hex | empty | unavailable
    text: str = ""  # what to show (escaped), for json / text / hex
    data: bytes | None = None  # the image's bytes (kind "image")
    mime: str | None = None  # the content type without parameters
    size: int = 0  # decoded bytes (as far as kept)
    wire_size: int = 0  # bytes after transfer framing, before content decoding
    content_encoding: str | None = None
    decoded: bool = False  # the Content-Encoding was undone
    truncated: bool = False  # more body than shown
    error: str | None = None

    @property
    def summary(self) -> str:
        """One line: kind, sizes, coding, cut."""
        if self.kind == "unavailable":
            return f"body not available: {self.error}"
        if self.kind == "empty":
            return "no body"
        parts = [self.kind, f"{self.size} bytes"]
        if self.content_encoding:
            parts.append(f"{self.content_encoding} {'undone' if self.decoded else 'not undone'} ({self.wire_size} on the wire)")
        if self.truncated:
            parts.append("truncated for display")
        if self.error:
            parts.append(self.error)
        return ", ".join(parts)


def mime_of(content_type: str | None) -> str | None:
    """The media type of a Content-Type value, lower-cased, without its parameters."""
    if not content_type:
        return None
    return content_type.split(";", 1)[0].strip().lower() or None


def _is_json(mime: str | None) -> bool:
    return mime is not None and (mime in ("application/json", "text/json") or mime.endswith("+json"))


def _is_text(mime: str | None) -> bool:
    return mime is not None and (mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith("+xml"))


def _looks_textual(data: bytes) -> str | None:
    """``data`` as text if it is UTF-8 with few control characters, else None."""
    sample = data[:4096]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(data) - 3:  # not just a character cut at the end
            return None
        text = data[: e.start].decode("utf-8")
    bad = sum(1 for b in sample if b < 0x20 and b not in (9, 10, 13))
    return text if bad * 100 <= len(sample) else None


def charset_of(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a Content-Type value, lower-cased (None without one)."""
    for part in (content_type or "").split(";")[1:]:
        k, _, v = part.partition("=")
        if k.strip().lower() == "charset":
            return v.strip().strip('"').lower() or None
    return None


def body_text(data: bytes, content_type: str | None) -> str | None:
    """Decoded body bytes as text: in their charset (UTF-8 without one) where the type is
    textual (``text/*``, JSON, XML, JavaScript, forms…), else where the bytes are UTF-8 with few
    control characters; None for a binary body (the views' "text" kind, a HAR's postData)."""
    mime = mime_of(content_type)
    return _decode_text(data, content_type) if (_is_text(mime) or _is_json(mime)) else _looks_textual(data)


def _decode_text(data: bytes, content_type: str | None) -> str:
    charset = charset_of(content_type)
    try:
        return data.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


def _shown(text: str) -> tuple[str, bool]:
    cut = len(text) > TEXT_CHARS
    text = text[:TEXT_CHARS].replace("\r\n", "\n")
    return printable_lines(text), cut


def view_bytes(data: bytes, content_type: str | None, *, truncated: bool = False) -> BodyView:
    """The view of decoded body bytes ``data`` of ``content_type`` (``truncated``: the body
    was longer than ``data``)."""
    mime = mime_of(content_type)
    v = BodyView("empty", mime=mime, size=len(data), truncated=truncated)
    if not data:
        return v
    if mime in IMAGE_TYPES and not truncated:
        v.kind, v.data = "image", bytes(data)
        return v
    if _is_json(mime) and not truncated:
        try:
            obj = json.loads(data.decode("utf-8-sig"), strict=False)  # control characters in strings: shown escaped
        except (ValueError, UnicodeDecodeError, RecursionError):
            pass
        else:
            try:
                pretty = json.dumps(obj, indent=2, ensure_ascii=False)
            except (ValueError, RecursionError):
                pretty = None
            if pretty is not None:
                v.kind = "json"
                v.text, cut = _shown(pretty)
                v.truncated = v.truncated or cut
                return v
    text = body_text(data, content_type)
    if text is not None:
        v.kind = "text"
        v.text, cut = _shown(text)
        v.truncated = v.truncated or cut
        return v
    from .detail import hexdump

    v.kind = "hex"
    v.text = "\n".join(hexdump(data[:HEX_BYTES]))
    v.truncated = v.truncated or len(data) > HEX_BYTES
    return v


def body_view(an: Analysis, ex: Exchange, direction: int = 1, budget: int = DISPLAY_BUDGET) -> BodyView:
    """The body of ``ex`` (``direction`` 1: the response, 0: the request), for display."""
    return body_views(an, [(ex, direction)], budget)[(ex.id, direction)]


def decoded_bodies(an: Analysis, wanted: list[tuple[Exchange, int]], budget: int = DISPLAY_BUDGET,
                   wire_budget: int = WIRE_BUDGET) -> dict[tuple[int, int], tuple[Any, bytes, Any]]:
    """The bodies of (exchange, direction) pairs (1: the response, 0: the request) read again
    from the capture in one pass (``analyzer.objects.exchange_bodies``, at most ``wire_budget``
    bytes each) and their Content-Encoding undone (``decode_body``, at most ``budget`` bytes kept):
    (exchange id, direction) -> (what was read, the decoded bytes, the decoding's result; b"" and
    None where the body could not be read again: ``raw.error`` says why)."""
    from .model import not_sent_of
    from .objects import RawBody, decode_body, exchange_bodies

    # (a browser log's request that never reached the network is not looked for in the capture
    # laid under it: two passes over it found nothing, and blamed decryption or loss)
    unsent = [(ex, d) for ex, d in wanted if not_sent_of(ex.browser)]
    raws = exchange_bodies(an, [w for w in wanted if not not_sent_of(w[0].browser)] if unsent else wanted, max_bytes=wire_budget)
    if unsent:
        from .request_detail import not_sent_body, not_sent_record

        for ex, d in unsent:
            ns = not_sent_record(an, ex)
            raws[(ex.id, d)] = RawBody(b"", 0, error=not_sent_body(ns, d) if ns is not None else "never reached the network")
    out: dict[tuple[int, int], tuple[Any, bytes, Any]] = {}
    for ex, direction in wanted:
        raw = raws[(ex.id, direction)]
        if raw.error:
            out[(ex.id, direction)] = (raw, b"", None)
            continue
        coding = ex.content_encoding if direction == 1 else ex.header("content-encoding", response=False)
        parts: list[bytes] = []
        res = decode_body(None if raw.compressed_frames else coding, [raw.data], parts.append, cap=budget)
        out[(ex.id, direction)] = (raw, b"".join(parts), res)
    return out


def body_views(an: Analysis, wanted: list[tuple[Exchange, int]], budget: int = DISPLAY_BUDGET) -> dict[tuple[int, int], BodyView]:
    """``body_view`` of several (exchange, direction) pairs, read again in one pass."""
    from .model import not_sent_of

    got = decoded_bodies(an, wanted, budget)
    out: dict[tuple[int, int], BodyView] = {}
    for ex, direction in wanted:
        response = direction == 1
        ctype = ex.content_type if response else ex.header("content-type", response=False)
        coding = ex.content_encoding if response else ex.header("content-encoding", response=False)
        expected = ex.response_body_bytes if response else ex.request_body_bytes
        raw, data, res = got[(ex.id, direction)]
        if res is None and not_sent_of(ex.browser) and (expected or response):
            # never reached the network: why (a failed request's absent response too, not "no body")
            out[(ex.id, direction)] = BodyView("unavailable", mime=mime_of(ctype), content_encoding=coding, error=raw.error)
            continue
        if not expected:
            out[(ex.id, direction)] = BodyView("empty", mime=mime_of(ctype), content_encoding=coding)
            continue
        if res is None:
            out[(ex.id, direction)] = BodyView("unavailable", mime=mime_of(ctype), content_encoding=coding, error=raw.error,
                                               wire_size=expected)
            continue
        v = view_bytes(data, ctype, truncated=bool(res.capped or raw.truncated))
        v.wire_size, v.content_encoding, v.decoded = raw.seen, coding, res.decoded
        v.error = res.error
        out[(ex.id, direction)] = v
    return out
