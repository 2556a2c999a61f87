"""Exports of an ``Analysis``: waterfall images (png, svg), offline HTML, HAR 1.2, the JSON
model and qlog.

``export(analysis, out_path, fmt=None, force=False, include_sensitive=False)`` picks the
format from the extension (or ``fmt``); files are written atomically (temporary file in
the same folder, then rename) and an existing file is never replaced unless ``force``.

- HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/): one entry per exchange,
  ``timings`` from the waterfall phases (−1 where the phase does not apply or is unknown;
  ``connect`` includes ``ssl`` as the spec asks), ``startedDateTime`` the first byte of the
  entry's first phase with microseconds, and ``_``-prefixed extensions: ``_protocol``,
  ``_connection``, ``_stream_id``, ``_priority`` (Chrome's name), ``_priority_wire``, ``_push_parent``, ``_pushed``,
  ``_packets`` (packet numbers of the first/last request/response bytes),
  ``_header_bytes_wire``/``_header_bytes_decoded`` (``{"request", "response"}``),
  ``_reset``, ``_content_class``.  Unless ``include_sensitive``, the values of Cookie,
  Set-Cookie, Authorization and Proxy-Authorization are left out: each such header stays in
  its list with the value ``LEFT_OUT`` ("<left out: sensitive>"), ``cookies`` is [], and the
  entry's ``comment`` names the headers (names only) as ``log.comment`` counts them.  A request with a body has
  ``postData`` (``_post_data``): ``mimeType`` its Content-Type, and only with
  ``include_sensitive`` (a POST body can hold a password) its ``text`` — read again from the
  capture, Content-Encoding undone, decoded in its charset; left out for a binary body, which
  HAR 1.2 cannot hold — and, for a form (``application/x-www-form-urlencoded``), ``params``.
- JSON: ``{"format": "wirefall-model", "version", "summary", "exchanges", "frames",
  "waterfall", "stats"}`` from ``analyzer.jsonout`` (connection/exchange/frame dicts), its
  long lists made as they are written (``model_json_stream``).
- qlog: draft-ietf-quic-qlog main schema 0.3 (JSON, what qvis loads): one trace per QUIC
  connection seen from the network (``vantage_point`` ``network``, ``flow`` ``client``:
  client→server packets are ``transport:packet_sent``, server→client ones
  ``transport:packet_received``), packet headers and frames re-decoded with the QUIC
  dissector (``dissectors.quic``) and the capture's key log, plus ``http:frame_created`` /
  ``http:frame_parsed`` from the HTTP/3 frames of the model.  Each UDP datagram is one
  ``transport:datagrams_sent``/``_received`` event (``count`` 1, ``raw`` one RawInfo whose
  ``length`` includes the 8-byte UDP header and ``payload_length`` does not, as aioquic logs
  them), followed by a packet event per QUIC packet coalesced in it.
"""
from __future__ import annotations

import copy
import datetime as _dt
import json
import marshal
import os
import re
import tempfile
from array import array
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from types import GeneratorType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from wirefall.dissectors.registry import over_quic

from .model import Analysis, Exchange, not_sent_of

FORMATS = ("png", "svg", "html", "har", "json", "qlog")
SENSITIVE = frozenset({"cookie", "set-cookie", "authorization", "proxy-authorization"})
# a SENSITIVE header's value in a HAR written without include_sensitive: the header stays in its
# list (DevTools and HAR viewers show the header list, never a comment: a header dropped there
# read as "none sent"), the entry's comment names it; the text is no value a client sends
LEFT_OUT = "<left out: sensitive>"
HTTP_VERSION = {"http/1.0": "HTTP/1.0", "http/1.1": "HTTP/1.1", "h2": "h2", "h2c": "h2c", "spdy/2": "spdy/2",
                "spdy/3": "spdy/3", "spdy/3.1": "spdy/3.1", "h3": "h3", "h3-29": "h3-29"}


class ExportError(ValueError):
    pass


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("wirefall")
    except Exception:  # noqa: BLE001 - not installed
        return "0"


IMAGE_FORMATS = ("png", "svg", "html")
DATA_FORMATS = ("har", "json", "qlog")


def check_output(out_path: str, fmt: str | None = None, force: bool = False) -> str:
    """The format ``out_path`` is to be written in (``fmt``, else its extension), or the
    error the export would end with: an unknown format (Parquet named: ``wirefall batch``
    writes it), a folder that is missing or cannot be written, ``out_path`` a folder, or a file
    there without ``force``.  Cheap (no analysis): ``wirefall export`` asks it before reading
    the capture, which took the whole analysis to say "unknown format" (review 31)."""
    if os.path.isdir(out_path):  # (before the format: a folder has no extension to read one from)
        raise ExportError(f"{out_path}: cannot write: it is a folder (give a file name, e.g. {os.path.join(out_path, 'page.har')})")
    fmt = (fmt or os.path.splitext(out_path)[1].lstrip(".")).lower()
    if fmt == "parquet":
        raise ExportError(f"{out_path}: export does not write Parquet: `wirefall batch INPUT… -o OUT` does "
                          f"(OUT/requests.parquet and three more datasets: docs/BATCH.md); export writes {', '.join(FORMATS)}")
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r} (choose from {', '.join(FORMATS)})")
    d = os.path.dirname(os.path.abspath(out_path))
    if not os.path.isdir(d):
        raise ExportError(f"{out_path}: cannot write: no such folder ({d})")
    if not os.access(d, os.W_OK | os.X_OK):
        raise ExportError(f"{out_path}: cannot write: folder not writable ({d})")
    if os.path.lexists(out_path) and not force:
        raise FileExistsError(f"{out_path} exists (use --force to overwrite)")
    return fmt


def export(analysis: Analysis, out_path: str, fmt: str | None = None, force: bool = False,
           include_sensitive: bool = False, group_by: str | None = None) -> str:
    """Write ``analysis`` to ``out_path`` as data (HAR, model JSON, qlog); returns the format
    written.  Images are drawn by the UI layer: ``ui.exports.export`` takes every format."""
    fmt = check_output(out_path, fmt, force)
    if fmt in IMAGE_FORMATS:
        raise ExportError(f"{fmt} is an image: ui.exports.export draws it")
    if fmt == "har":  # (its entries made as they are written: har_stream)
        doc = har_stream(analysis, include_sensitive=include_sensitive)
    elif fmt == "json":  # (its exchanges, frames and rows made as they are written: model_json_stream)
        doc = model_json_stream(analysis)
    else:
        doc = qlog(analysis)
    write_atomic(out_path, json_chunks(doc), force=force)
    return fmt


# -- writer ---------------------------------------------------------------------------------
# The files are laid out as json.dumps(doc, indent=2, ensure_ascii=False) would lay them out
# (docs/JSON.md "Layout"; before 2026-12-03 indent=1, the same values), written by orjson and
# streamed: the document's upper levels member by member, its long lists (HAR entries, the
# model's exchanges, frames and waterfall rows, qlog events) _BATCH elements per encoder call,
# each piece written as it is made, so the document exists once (the dict tree), not also as a
# str and its bytes (the stdlib's indented encoder runs in pure Python: 2.6 s for h1-mtu's
# 45 MB HAR, and tracemalloc counted 7x the file's size while writing).  A generator in the tree
# (the HAR's entries: ``har_stream``; the model's exchanges, frames and rows: ``model_json_stream``)
# is written as the list it gives, its elements made a batch
# at a time (its first _FEW + 1 looked at first, to lay it out as that list is laid out), so
# that those are not held as dicts either.  The values are the
# standard library's, as before: orjson is given only what ``marshal`` takes (exact built-in
# types: a subclass, a dataclass or a date goes to the stdlib, which writes or refuses it as it
# did) with no NaN or ±Infinity (which orjson would write as null: the stdlib raises
# ValueError, as the export always did); what orjson refuses (integers beyond 64 bits,
# non-string keys, lone surrogates) is written (or refused) by the stdlib with the same layout.  Floats are shortest-round-trip in both (the same float
# back from ``json.loads``; orjson writes ``1e-7`` for the stdlib's ``1e-07``).
_BATCH = 256  # list elements per encoder call
_FEW = 16  # a list of at most this many containers is written element by element (qlog's traces)
_DEPTH = 4  # levels written member by member (qlog: document, traces, trace, events)
# a marshalled float (version 2: b"g" and its 8 bytes, little-endian) whose exponent is all
# ones: NaN or ±Infinity.  (Other bytes can match too: that piece then goes to the stdlib.)
_NONFINITE = re.compile(rb"g.{6}[\xf0-\xff][\x7f\xff]", re.S)


def _encode(obj: Any) -> bytes:
    """The indent-2 UTF-8 text of ``obj`` (at indent 0), with the standard library's values
    and refusals (see above)."""
    try:
        if _NONFINITE.search(marshal.dumps(obj, 2)) is None:
            import orjson

            return orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    except (ValueError, TypeError, ImportError):  # (not marshallable; orjson.JSONEncodeError is a TypeError)
        pass
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False).encode("utf-8")


def json_chunks(obj: Any, level: int = 0) -> Iterator[bytes]:
    """``json.dumps(obj, indent=2, ensure_ascii=False).encode()`` in pieces (their
    concatenation; ``level``: the indent ``obj`` starts at), made one at a time (see above)."""
    pad = b"\n" + b"  " * level
    t = type(obj)
    if level < _DEPTH and t is dict and obj and all(type(k) is str for k in obj):
        sep = b"{"
        for k, v in obj.items():
            yield sep + pad + b"  " + _encode(k) + b": "
            yield from json_chunks(v, level + 1)
            sep = b","
        yield pad + b"}"
    elif level < _DEPTH and (t is list or t is tuple) and obj:
        if len(obj) <= _FEW and any(type(x) in (dict, list, tuple) for x in obj):
            sep = b"["
            for x in obj:
                yield sep + pad + b"  "
                yield from json_chunks(x, level + 1)
                sep = b","
            yield pad + b"]"
            return
        yield from _list_chunks((obj[i : i + _BATCH] for i in range(0, len(obj), _BATCH)), pad)
    elif level < _DEPTH and t is GeneratorType:
        # a list made as it is written (the HAR's entries): the list's own pieces, the same
        # batches (its first _FEW + 1 elements looked at to choose the layout, as for a list)
        head = list(islice(obj, _FEW + 1))
        if len(head) <= _FEW:
            yield from json_chunks(head, level)
            return
        it = chain(head, obj)
        del head
        yield from _list_chunks(iter(lambda: list(islice(it, _BATCH)), []), pad)
    else:
        text = _encode(obj)
        yield text.replace(b"\n", pad) if level else text


def _list_chunks(batches: Iterable[Any], pad: bytes) -> Iterator[bytes]:
    """The pieces of a non-empty list given as its ``batches`` (each made and encoded in turn)."""
    first = True
    for batch in batches:
        text = _encode(batch)  # b"[\n  a,\n  b\n]": the elements at indent 2
        del batch
        if len(pad) > 1:
            text = text.replace(b"\n", pad)
        yield (b"[" if first else b",") + text[1 : len(text) - len(pad) - 1]  # (the elements, without the brackets)
        first = False
    yield pad + b"]"


def publish(tmp: str, path: str, force: bool = False) -> None:
    """Give the finished temporary file ``tmp`` its name ``path``.  Without ``force`` the step
    is a hard link, which fails if ``path`` appeared meanwhile (never replacing a file)."""
    os.chmod(tmp, 0o644)
    if force:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise FileExistsError(f"{path} exists (use --force to overwrite)") from None
    except OSError:  # file systems without hard links
        if os.path.exists(path):
            raise FileExistsError(f"{path} exists (use --force to overwrite)") from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def temp_beside(path: str, suffix: str = ".tmp") -> tuple[int, str]:
    """A temporary file in ``path``'s folder (``tempfile.mkstemp``: descriptor, name), to be
    published as ``path``; a folder that is missing or cannot be written is the user's ``path``
    named in an ``ExportError`` (before: FileNotFoundError on '.wirefall-….tmp', as an internal
    error; review 26)."""
    d = os.path.dirname(os.path.abspath(path))
    try:
        return tempfile.mkstemp(prefix=".wirefall-", suffix=suffix, dir=d)
    except OSError as e:
        why = "no such folder" if not os.path.isdir(d) else (e.strerror or str(e))
        raise ExportError(f"{path}: cannot write: {why} ({d})") from None


def write_atomic(path: str, data: bytes | Iterable[bytes], force: bool = False) -> None:
    """Write ``data`` (bytes, or pieces of them written as they come) to ``path`` through a
    temporary file in the same folder.  Without ``force`` the final step is a hard link,
    which fails if ``path`` appeared meanwhile."""
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, (bytes, bytearray, memoryview)):
                f.write(data)
            else:
                for piece in data:
                    f.write(piece)
            f.flush()
            os.fsync(f.fileno())
        publish(tmp, path, force)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ----------------------------------------------------------------------------------- HAR


def iso_time(t: float) -> str:
    # clamped to years 1-9999 as the capture reader clamps packet times (a time computed from them may still overflow)
    t = min(max(t, -62135510400.0), 253402214399.0) if t == t else 0.0
    return _dt.datetime.fromtimestamp(t, tz=_dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _headers(hs: list[tuple[str, str]], include_sensitive: bool) -> list[dict]:
    """HAR name/value pairs of a header list; without ``include_sensitive`` a ``SENSITIVE``
    header keeps its place and name, its value ``LEFT_OUT`` (the entry's ``comment`` names it)."""
    if include_sensitive:
        return [{"name": k, "value": v} for k, v in hs]
    return [{"name": k, "value": LEFT_OUT if k.lower() in SENSITIVE else v} for k, v in hs]


def _left_out_names(hs: list[tuple[str, str]]) -> list[str]:
    """The ``SENSITIVE`` header names of ``hs`` whose values the HAR leaves out, each once (as
    first spelled), "×N" after one sent N times (HTTP/2 and HTTP/3 may split a cookie)."""
    counts: dict[str, list] = {}
    for k, _ in hs:
        kl = k.lower()
        if kl in SENSITIVE:
            counts.setdefault(kl, [k, 0])[1] += 1
    return [f"{k} ×{n}" if n > 1 else k for k, n in counts.values()]


def _left_out_note(e: Exchange) -> str | None:
    """The entry's ``comment`` part naming the headers whose values were left out (names
    only), as postData's comment says a left-out body; None when there are none."""
    req, resp = _left_out_names(e.request_headers), _left_out_names(e.response_headers)
    if not req and not resp:
        return None
    sides = " and ".join(x for x in (f"request {', '.join(req)}" if req else "", f"response {', '.join(resp)}" if resp else "") if x)
    cookies = any(n.split(" ")[0].lower() in ("cookie", "set-cookie") for n in req + resp)
    return (f"header values left out ({sides}: value {LEFT_OUT!r}{', cookies []' if cookies else ''}): they may hold "
            "credentials (wirefall export --include-sensitive keeps them)")


# Chrome's HAR ``_priority`` (DevTools' Priority column): its names for net::RequestPriority
_DEVTOOLS_PRIORITY = {"HIGHEST": "VeryHigh", "MEDIUM": "High", "LOW": "Medium", "LOWEST": "Low", "IDLE": "VeryLow",
                      "THROTTLED": "VeryLow"}
# RFC 9218 urgency as Chromium sets it (ConvertRequestPriorityToQuicPriority: HIGHEST 0, MEDIUM 1,
# LOW 2, LOWEST 3, IDLE 4, THROTTLED 5), in DevTools' names
_URGENCY_PRIORITY = ("VeryHigh", "High", "Medium", "Low", "VeryLow", "VeryLow", "VeryLow", "VeryLow")


def _devtools_priority(e: Exchange) -> str | None:
    """The entry's ``_priority`` as Chrome writes it ("VeryHigh" … "VeryLow"): the browser
    log's priority when one was laid over, else the urgency the request itself stated (a
    ``priority`` header or PRIORITY_UPDATE, HTTP/2 or HTTP/3; 3 when it names none), in Chromium's mapping; None
    when neither says (an HTTP/2 weight alone names no browser priority).  The wire's own
    priority object is ``_priority_wire`` (until 2026-12-03 it was ``_priority``, which
    DevTools showed as "[object Object]")."""
    b = e.browser
    if isinstance(b, dict) and isinstance(b.get("priority"), str):
        p = b["priority"].strip()
        if p in _URGENCY_PRIORITY:
            return p
        name = _DEVTOOLS_PRIORITY.get(p.upper())
        if name is not None:
            return name
    pr = e.priority
    if isinstance(pr, dict):
        u = pr.get("urgency")
        stated = "incremental" in pr  # (a priority header or PRIORITY_UPDATE was parsed)
        if not isinstance(u, int):
            raw = pr.get("urgency_incremental") or pr.get("priority_update")
            u = None
            if isinstance(raw, str):
                from .sessions.http2 import parse_priority_header

                u = parse_priority_header(raw).get("urgency")
                stated = True
        if u is None and stated:  # "priority: i": urgency the default 3 (RFC 9218 §4.1), Chromium's LOWEST
            u = 3
        if isinstance(u, int) and not isinstance(u, bool) and 0 <= u <= 7:
            return _URGENCY_PRIORITY[u]
    return None


POST_DATA_BYTES = 16 << 20  # request body bytes read again and decoded for a HAR's postData.text


def _request_bodies(an: Analysis, exs: list[Exchange]) -> dict[int, tuple[bytes, str | None]]:
    """The request bodies of ``exs`` for ``postData``: exchange id -> (decoded bytes, why the text
    is not the whole body or not the body as sent, or None), read again from the capture in one
    pass (``analyzer.body.decoded_bodies``), each at most ``POST_DATA_BYTES``; an exchange
    whose body could not be read again maps to (b"", why)."""
    from .body import decoded_bodies

    got = decoded_bodies(an, [(e, 0) for e in exs], POST_DATA_BYTES, POST_DATA_BYTES)
    out: dict[int, tuple[bytes, str | None]] = {}
    for e in exs:
        raw, data, res = got[(e.id, 0)]
        if res is None:
            out[e.id] = (b"", f"request body not available: {raw.error}")
            continue
        why = raw.truncated or (f"decoded body cut at {POST_DATA_BYTES} bytes" if res.capped else None)
        if res.error:
            why = f"{why}; {res.error}" if why else res.error
        elif raw.seen < e.request_body_bytes:
            why = why or f"the capture holds {raw.seen} of its {e.request_body_bytes} bytes"
        out[e.id] = (data, why)
    return out


def _post_data(e: Exchange, body: tuple[bytes, str | None] | None, include_sensitive: bool) -> dict[str, Any]:
    """HAR 1.2 ``postData`` of a request with a body: ``mimeType`` the request's Content-Type
    ("" without one), as Chrome writes it; with ``include_sensitive`` (``body`` read again:
    ``_request_bodies``) ``text``, the body as text — Content-Encoding undone, decoded in the
    Content-Type's charset (UTF-8 without one) when the type is textual (``analyzer.body``'s
    test: text/*, JSON, XML, JavaScript, forms…), else when the bytes are UTF-8 with few control
    characters — and for ``application/x-www-form-urlencoded`` also ``params`` (name/value
    pairs, as Chrome gives both).  A binary body has no ``text``: HAR 1.2 has no encoding field
    for postData (Chrome writes such a body as UTF-8 text, replacing what does not decode,
    which no reader can turn back into the bytes); ``comment`` says so, as it says when the
    body is left out (no ``include_sensitive``), not available, or cut."""
    from .body import body_text, charset_of, mime_of

    ctype = e.header("content-type", response=False) or ""
    pd: dict[str, Any] = {"mimeType": ctype}
    n = e.request_body_bytes
    if not include_sensitive:
        pd["comment"] = (f"request body ({n} bytes) left out: it may hold credentials "
                         "(wirefall export --include-sensitive keeps it)")
        return pd
    data, why = body if body is not None else (b"", "request body not available")
    text = body_text(data, ctype) if data else None
    notes = [why] if why else []
    if text is not None:
        pd["text"] = text
        if mime_of(ctype) == "application/x-www-form-urlencoded":
            charset = charset_of(ctype) or "utf-8"
            try:
                pairs = parse_qsl(text, keep_blank_values=True, encoding=charset, errors="replace")
            except (LookupError, ValueError):
                pairs = parse_qsl(text, keep_blank_values=True, errors="replace")
            pd["params"] = [{"name": k, "value": v} for k, v in pairs]
    elif data:
        notes.insert(0, f"binary request body ({len(data)} bytes) not included: HAR 1.2 postData has no encoding for binary data")
    if notes:
        pd["comment"] = "; ".join(notes)
    return pd


def _cookies(e: Exchange, response: bool, include_sensitive: bool) -> list[dict]:
    if not include_sensitive:
        return []
    out: list[dict] = []
    for k, v in e.response_headers if response else e.request_headers:
        kl = k.lower()
        if not response and kl == "cookie":
            for part in v.split(";"):
                if "=" in part:
                    n, _, val = part.strip().partition("=")
                    out.append({"name": n, "value": val})
        elif response and kl == "set-cookie":
            first = v.split(";", 1)[0]
            n, _, val = first.strip().partition("=")
            c: dict[str, str | bool] = {"name": n, "value": val}
            for attr in v.split(";")[1:]:
                an_, _, av = attr.strip().partition("=")
                a = an_.lower()
                if a in ("path", "domain"):
                    c[a] = av
                elif a == "httponly":
                    c["httpOnly"] = True
                elif a == "secure":
                    c["secure"] = True
            out.append(c)
    return out


# A first request sent ``PRECONNECT_IDLE`` or more after its connection was ready (a
# preconnect: analyzer/waterfall.py ``preconnected``) starts its HAR entry at the request, with
# no dns/connect/ssl, as DevTools and Chrome's own HAR give a request on a ready socket.  Below
# it the idle time is the entry's blocked (HAR has no place for a wait after connect).
from .waterfall import preconnected  # noqa: E402 - (the threshold's one home: waterfall.PRECONNECT_IDLE)


def har_timings(row, quic: bool = False) -> tuple[float, dict[str, float], float]:
    """(start, HAR timings, total ms) of a waterfall row.  The row's phases are sequential
    and cover it (``waterfall.exchange_phases``): ``blocked`` is its queued/stalled time,
    ``connect`` includes ``ssl`` (HAR 1.2), −1 where a phase does not apply; blocked, dns,
    connect, send, wait and receive add up to ``time`` (each boundary rounded to the µs once).
    ``quic``: the row's connection is QUIC, whose handshake (the waterfall's ``connect``) is
    its TLS handshake: ``ssl`` is that time, as Chrome and WebPageTest give it (connect = ssl),
    not −1, which would say that no TLS was negotiated.  A connection ``idle`` after its
    set-up: ``PRECONNECT_IDLE``; a shorter one is in ``send`` (``_send_idle``)."""
    from .waterfall import phase_totals

    phases = row.phases
    own = preconnected(phases)
    if own is not None:
        after = phases[own:]
        rt = phase_totals(after)
        rms = lambda n: max(rt[n] / 1000.0, 0.0) if rt[n] is not None else 0.0
        return after[0][1], {"blocked": -1.0, "dns": -1.0, "connect": -1.0, "send": rms("send"), "wait": rms("wait"),
                             "receive": rms("receive"), "ssl": -1.0}, rt["total"] / 1000.0
    tot = phase_totals(phases)
    # a wait inside the handshake (the client's pause between the TCP handshake and its
    # ClientHello: a "blocked" phase of the waterfall there) is the connection's set-up time: HAR
    # viewers draw blocked before dns and connect, so it goes to connect, not blocked
    hs = [(a, b) for n, a, b in phases if n in ("connect", "tls")]
    inside = 0
    if hs:
        lo, hi = min(a for a, _ in hs), max(b for _, b in hs)
        inside = phase_totals([p for p in phases if p[0] == "blocked" and lo <= p[1] and p[2] <= hi])["blocked"] or 0
    if inside:
        tot["blocked"] -= inside
        tot["connect"] = (tot["connect"] or 0) + inside
    ms = lambda n: -1.0 if tot[n] is None else tot[n] / 1000.0
    t = {"blocked": ms("blocked"), "dns": ms("dns"), "connect": -1.0, "send": max(ms("send"), 0.0),
         "wait": max(ms("wait"), 0.0), "receive": max(ms("receive"), 0.0), "ssl": ms("tls")}
    if tot["idle"]:
        # the connection ready, the request not yet sent: in ``send``, as Chrome DevTools' HAR
        # has it (HARLog.ts: send starts at the connect's end), so that dns and connect are
        # drawn where they were; ``_send_idle`` says how much of send it is (wirefall's reader
        # takes it out again).  In ``blocked`` — before 2026-12-05 — HAR viewers drew the
        # connection's set-up that much later than the wire had it
        t["send"] += tot["idle"] / 1000.0
        t["_send_idle"] = tot["idle"] / 1000.0
    if tot["connect"] is not None or tot["tls"] is not None:
        t["connect"] = ((tot["connect"] or 0) + (tot["tls"] or 0)) / 1000.0  # HAR: connect includes ssl
        if quic:
            t["ssl"] = t["connect"]
    return row.start, t, tot["total"] / 1000.0


def _spdy_reason(e: Exchange) -> str:
    """SPDY's status header carries the reason phrase ("200 OK": :status in SPDY/3, status in
    SPDY/2), HTTP/2's and HTTP/3's none."""
    if not e.protocol.startswith("spdy"):
        return ""
    st = e.header(":status") or e.header("status") or ""
    return st.partition(" ")[2]


def har_url(e: Exchange, c) -> str | None:
    """The entry's absolute URL (HAR: "absolute URL of the request"): the exchange's, or —
    when the capture gave only the path (no :authority / Host seen) — the path on the
    connection's origin (scheme from TLS/QUIC, host from the SNI, else the server address).
    None when not even the path is known (a response without its request)."""
    url = e.url or e.path
    if not url:
        return None
    if (e.sources or {}).get("authority") == "unknown" and e.path:  # host <unknown> (analyzer.authority): a HAR URL needs one
        url = e.path
    if "://" in url or not url.startswith("/"):
        return url
    scheme = e.scheme or ("https" if c is not None and (c.tls is not None or c.quic is not None) else "http")
    host = e.authority
    if not host and c is not None:
        sni = (c.tls.sni if c.tls is not None else None) or (c.quic.sni if c.quic is not None else None)
        a, port = c.server
        a = f"[{a}]" if ":" in a else a
        host = (sni or a) + ("" if (scheme, port) in (("https", 443), ("http", 80)) else f":{port}")
    return f"{scheme}://{host}{url}" if host else None


def _why_not_decrypted(comp) -> str:
    """Why connections were not decrypted, for ``log.comment`` (their entries, if any, say it too)."""
    nd = list(comp.not_decrypted.items())
    if not nd:
        return ""
    s = "; ".join(f"connection {cid} not decrypted: {why}" for cid, why in nd[:5])
    return f" ({s}{f'; … {len(nd) - 5} more' if len(nd) > 5 else ''})"


def _left_out_log(rows, exs: dict[int, Exchange]) -> str:
    """``log.comment``'s sentence on what a HAR without include_sensitive leaves out: the
    entries whose sensitive header values are left out, and the request bodies ("" when none)."""
    heads = sum(1 for r in rows if any(k.lower() in SENSITIVE for hs in (exs[r.exchange].request_headers, exs[r.exchange].response_headers)
                                       for k, _ in hs))
    bodies = sum(1 for r in rows if exs[r.exchange].request_body_bytes > 0)
    parts = ([f"Cookie, Set-Cookie, Authorization and Proxy-Authorization header values in {heads} "
              f"entr{'y' if heads == 1 else 'ies'} (value {LEFT_OUT!r}, cookies []; each entry's comment names them)"] if heads else []) + \
            ([f"{bodies} request bod{'y' if bodies == 1 else 'ies'} (postData.text)"] if bodies else [])
    if not parts:
        return ""
    return f". Left out, as they may hold credentials: {' and '.join(parts)}; wirefall export --include-sensitive keeps them"


def har(an: Analysis, include_sensitive: bool = False) -> dict[str, Any]:
    """HAR 1.2 (docs/JSON.md "HAR"): entries sorted by ``startedDateTime``; an exchange
    without a URL (a response whose request the capture did not show) goes to
    ``log._orphans`` instead, in the same shape; ``log.comment`` and each entry's
    ``comment`` say what the capture does not show (analyzer.completeness), entries of
    background traffic carry ``_background`` and ``_background_reason``.  The whole document
    as dicts (``har_stream``'s, its lists made)."""
    doc = har_stream(an, include_sensitive)
    log = doc["log"]
    log["entries"] = list(log["entries"])
    log["_orphans"] = list(log["_orphans"])
    return doc


def _har_start(row) -> float:
    """The entry's start (``har_timings``' first value) without its timings: a preconnected
    row's own request, else the row's start."""
    own = preconnected(row.phases)
    return row.start if own is None else row.phases[own][1]


def har_stream(an: Analysis, include_sensitive: bool = False) -> dict[str, Any]:
    """``har``'s document with ``log.entries`` and ``log._orphans`` generators, each entry's
    dict made as the writer (``json_chunks``) asks for it and dropped once written: a HAR's
    entries took ~8 KB each as dicts and text (484 MB over the analysis for 63 k requests),
    where now the rows' order takes a few bytes each (docs/PERFORMANCE.md, review 29).  The order is ``har``'s: entries by
    ``startedDateTime`` (the rows' order among equal ones), found before any entry is made."""
    from . import completeness as _completeness
    from .waterfall import build

    wf = build(an)
    comp = _completeness.compute(an)
    conns = {c.id: c for c in an.connections}
    exs = {e.id: e for e in an.exchanges}
    # HTTP/1's reason phrase ("OK") is on the wire, in its final response head (SPDY's in its status header: _spdy_reason; HTTP/2 and /3 have none: "")
    reasons = {f.fields["exchange"]: f.fields.get("reason") for f in an.frames
               if f.type == "RESPONSE" and f.fields and "exchange" in f.fields and not f.fields.get("interim")}
    # request bodies read again for postData.text only when they are to be written (include_sensitive)
    bodies = _request_bodies(an, [exs[r.exchange] for r in wf.rows if exs[r.exchange].request_body_bytes > 0]) if include_sensitive else {}

    def entry_of(row) -> dict[str, Any]:
        """The HAR entry of a waterfall row (an orphan's still has its ``pageref``)."""
        e = exs[row.exchange]
        c = conns.get(e.connection)
        start, timings, total = har_timings(row, quic=c is not None and c.quic is not None)
        url = har_url(e, c) or ""
        try:
            qs = [{"name": k, "value": v} for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True)]
        except ValueError:
            qs = []
        ver = HTTP_VERSION.get(e.protocol, e.protocol)
        ctype = e.content_type or e.header("content-type") or ""
        size = e.response_body_decoded_bytes if e.response_body_decoded_bytes is not None else e.response_body_bytes
        content: dict[str, Any] = {"size": size, "mimeType": ctype}
        if e.response_body_decoded_bytes is not None:
            content["compression"] = e.response_body_decoded_bytes - e.response_body_bytes
        entry: dict[str, Any] = {
            "pageref": "page_1",
            "startedDateTime": iso_time(start),
            "time": total,
            "request": {
                "method": e.method or ("GET" if e.pushed else ""),
                "url": url,
                "httpVersion": ver,
                "cookies": _cookies(e, False, include_sensitive),
                "headers": _headers(e.request_headers, include_sensitive),
                "queryString": qs,
                "headersSize": _headers_size(e, "request"),
                "bodySize": -1 if (e.sources or {}).get("request_body_bytes") == "unknown" else e.request_body_bytes,
            },
            "response": {
                "status": e.status if e.status is not None else 0,
                "statusText": reasons.get(e.id) or _spdy_reason(e),
                "httpVersion": ver,
                "cookies": _cookies(e, True, include_sensitive),
                "headers": _headers(e.response_headers, include_sensitive),
                "content": content,
                "redirectURL": e.header("location") or "",
                "headersSize": _headers_size(e, "response"),
                "bodySize": e.response_body_bytes if e.response_start is not None else -1,
            },
            "cache": {},
            "timings": timings,
            "connection": str(e.connection),
            "_protocol": e.protocol,
            "_connection": e.connection,
            "_stream_id": e.stream_id,
            "_priority_wire": e.priority,
            "_pushed": e.pushed,
            "_push_parent": e.push_parent,
            "_packets": dict(row.packets),
            "_header_bytes_wire": {side: _wire_or_none(e, f"{side}_header_bytes_wire") for side in ("request", "response")},
            "_header_bytes_decoded": {"request": e.request_header_bytes_decoded, "response": e.response_header_bytes_decoded},
            "_content_class": row.content_class,
            "_exchange": e.id,
        }
        if e.request_body_bytes > 0:  # (HAR 1.2 postData, after bodySize as Chrome writes it)
            entry["request"]["postData"] = _post_data(e, bodies.get(e.id), include_sensitive)
        pr = _devtools_priority(e)
        if pr is not None:  # (absent when neither the browser nor the wire says, as Chrome's HAR)
            entry["_priority"] = pr
        if e.reset:
            entry["_reset"] = e.reset
        if e.error:  # (Chrome's HAR names a failed request's error so: "no response in the capture", a reset…)
            entry["_error"] = e.error
        ns = not_sent_of(e.browser)
        if ns:
            # a browser log's request that never reached the network (analyzer/browserlog): Chrome's
            # _fromCache for a cache hit, and wirefall's own _not_sent, so that reading the HAR
            # back keeps it not sent (a failure's _error, with nothing sent, says so too)
            entry["_not_sent"] = ns
            if ns.endswith("cache"):
                entry["_fromCache"] = (e.browser or {}).get("cache") or ns[: -len("cache")].strip() or "disk"
                # HAR 1.2: response.bodySize "Set to 0 in case of responses coming from the cache";
                # content.size keeps the body's length. As Chrome's DevTools writes a cache hit
                # (HARLog responseBodySize 0, no content.compression, _transferSize 0): nothing was
                # received over the network (before 2026-12-05: the body's 17,542 bytes for amazon's favicon)
                entry["response"]["bodySize"] = 0
                entry["response"]["_transferSize"] = 0
                content.pop("compression", None)
        if c is not None:
            entry["serverIPAddress"] = c.server[0]
        entry["_background"] = row.background
        if row.background:
            entry["_background_reason"] = row.background_reason
        notes = [x for x in (_completeness.entry_comment(comp, e),
                             f"background traffic, not the page's: {row.background_reason}" if row.background else None,
                             f"URL completed from the connection ({url}): the capture shows only the path" if url and url != (e.url or e.path) else None,
                             None if include_sensitive else _left_out_note(e))
                 if x]
        if notes:
            entry["comment"] = "; ".join(notes)
        if row.background:
            entry.pop("pageref")  # not the page's: HAR viewers show it outside the page
        return entry

    # the entries' order before any entry is made: their startedDateTime text (iso_time of
    # har_timings' start), sorted stably as the list of entries was; a row without a URL is an orphan
    rows = wf.rows
    keys: list[str] = []
    pos = array("q")  # the rows with a URL, in row order, then in entry order
    lone = array("q")  # the rows without one (orphans, in row order)
    for i, row in enumerate(rows):
        e = exs[row.exchange]
        if har_url(e, conns.get(e.connection)):
            keys.append(iso_time(_har_start(row)))
            pos.append(i)
        else:
            lone.append(i)
    pos = array("q", (pos[j] for j in sorted(range(len(keys)), key=keys.__getitem__)))
    del keys

    def entries() -> Iterator[dict[str, Any]]:
        for i in pos:
            yield entry_of(rows[i])

    def orphans() -> Iterator[dict[str, Any]]:
        for i in lone:
            entry = entry_of(rows[i])
            entry.pop("pageref", None)
            yield entry
        in_rows = {r.exchange for r in rows}
        for e in an.exchanges:  # no time at all: not drawn, but not lost either
            if e.id not in in_rows:
                yield {"_exchange": e.id, "_connection": e.connection, "_protocol": e.protocol, "_stream_id": e.stream_id,
                       "comment": "no packet time for this exchange in the capture"}

    first = wf.page_start  # (a browser log opened alone: its own page start, as a capture's)
    pl = wf.page_load_time
    html = wf.milestone("html_first_byte")
    dcl, onload = wf.milestone("dom_content_loaded"), wf.milestone("load_event")  # (the first page's, if several)
    dcl, onload = (m if m is not None and m.time >= first else None for m in (dcl, onload))
    render = wf.milestone("start_render")
    render = render if render is not None and render.time >= first else None
    headline = comp.summary
    n_bg = sum(1 for r in wf.rows if r.background)
    page_comment = f"{n_bg} background request{'s' * (n_bg != 1)} in the capture are not the page's (_background)" if n_bg else None
    page: dict[str, Any] = {
        "startedDateTime": iso_time(first),
        "id": "page_1",
        "title": os.path.basename(an.path),
        # onLoad is the browser's load event, which the wire does not show (a HAR viewer draws it as
        # that event): -1, as onContentLoad, unless a HAR laid over the capture gave them (placed
        # on the capture's clock: analyzer.waterfall.browser_milestones); the page's last response
        # byte is _lastByte
        "pageTimings": {"onContentLoad": round((dcl.time - first) * 1000.0, 3) if dcl else -1,
                        "onLoad": round((onload.time - first) * 1000.0, 3) if onload else -1,
                        "_firstByte": round((html.time - first) * 1000.0, 3) if html else -1,
                        "_lastByte": round(pl * 1000.0, 3) if pl is not None else -1},
    }
    if render is not None:  # (WebPageTest's Start Render, from a HAR laid over: read back as it came)
        page["pageTimings"]["_startRender"] = round((render.time - first) * 1000.0, 3)
    if page_comment:
        page["comment"] = page_comment
    log: dict[str, Any] = {
        "version": "1.2",
        "creator": {"name": "wirefall", "version": _version()},
        "pages": [page],
        "entries": entries(),
        "comment": f"{headline}{_why_not_decrypted(comp)}. Timings from packet times of the capture (wirefall)"
                   f"{'' if include_sensitive else _left_out_log(rows, exs)}",
        "_complete": comp.complete,
        "_orphans": orphans(),
    }
    return {"log": log}


# ---------------------------------------------------------------------------------- JSON


def model_json(an: Analysis) -> dict[str, Any]:
    """The model JSON (docs/JSON.md "wirefall export -o OUT.json"): the whole document as
    dicts (``model_json_stream``'s, its lists made)."""
    return _made(model_json_stream(an))


def _made(obj: Any) -> Any:
    """``obj`` with every generator among its dicts' values made a list (the document
    ``json_chunks`` writes from it)."""
    if type(obj) is dict:
        for k, v in obj.items():
            obj[k] = list(v) if type(v) is GeneratorType else _made(v)
    return obj


def model_json_stream(an: Analysis) -> dict[str, Any]:
    """``model_json``'s document with its lists that grow with the capture — ``exchanges``,
    ``frames``, ``waterfall.rows``, ``waterfall.dns`` and ``stats.connections`` — generators,
    each element's dict made as the writer (``json_chunks``) asks for it and dropped once
    written: on 63 k requests those dicts were 460 MB beside the waterfall they restate
    (docs/PERFORMANCE.md, review 29).  ``summary.connections`` and the completeness objects
    stay lists (``jsonout.summary_dict``, ``completeness.to_dict`` make them whole: one per
    connection)."""
    from dataclasses import replace

    from . import stats as _stats
    from .jsonout import SCHEMA_VERSION, PhasePlan, exchange_dict, frame_dict, summary_dict
    from .waterfall import build, page_of

    summary = summary_dict(an)
    # jsonout.page_and_phases, each exchange's phases object made with its dict (not all of them
    # first): phases_of is None for an exchange the plan has no row for, as ph.get(e.id) was
    plan = PhasePlan(an)
    page = page_of(an, plan.exs, starts=plan.starts())
    wf = build(an)
    st = _stats.compute(an, tcp_analysis=True)  # (as `stats --json`: its TCP analysis too)

    def waterfall_items(attr: str) -> Iterator[dict[str, Any]]:
        """``wf.to_dict()[attr]``'s elements, made by ``to_dict`` itself (the dicts' one home)
        from a waterfall holding _BATCH of them at a time."""
        xs = getattr(wf, attr)
        for i in range(0, len(xs), _BATCH):
            part: dict[str, Any] = {"rows": [], "dns": [], attr: xs[i : i + _BATCH]}
            yield from replace(wf, milestones=[], page_info=None, **part).to_dict()[attr]

    waterfall = replace(wf, rows=[], dns=[]).to_dict()  # (its other members; their order is to_dict's)
    waterfall["dns"] = waterfall_items("dns")
    waterfall["rows"] = waterfall_items("rows")
    light = copy.copy(st)  # (the same: the stats' dict from a copy without its connections' blocks)
    light.connections = []
    stats = _stats.to_dict(light)
    stats["connections"] = (_stats.block_dict(b) for b in st.connections)
    return {
        "format": "wirefall-model",
        "version": SCHEMA_VERSION,
        "summary": summary,
        "exchanges": (exchange_dict(e, phases=plan.phases_of(e), page=page) for e in an.exchanges),
        "frames": (frame_dict(f) for f in an.frames),
        "waterfall": waterfall,
        "stats": stats,
    }


# ---------------------------------------------------------------------------------- qlog

_QLOG_PTYPE = {"Initial": "initial", "Handshake": "handshake", "0-RTT": "0RTT", "1-RTT": "1RTT", "Retry": "retry",
               "Version Negotiation": "version_negotiation"}


def _qframe(fr) -> dict[str, Any]:
    t = fr.type.lower()
    d: dict[str, Any] = {"frame_type": t}
    if fr.stream_id is not None:
        d["stream_id"] = fr.stream_id
    if t in ("stream", "crypto"):
        d["offset"] = max(fr.offset, 0)
        d["length"] = fr.length
        if t == "stream":
            d["fin"] = bool(fr.fin)
    elif t == "padding":
        d["length"] = fr.length
    fl = fr.fields or {}
    if t == "ack":
        ranges = fl.get("ranges")
        if ranges:
            d["acked_ranges"] = [[int(a), int(b)] if a != b else [int(a)] for a, b in
                                 (sorted(r) if isinstance(r, (list, tuple)) and len(r) == 2 else (r, r) for r in ranges)]
        elif "largest_acknowledged" in fl:
            d["acked_ranges"] = [[int(fl["largest_acknowledged"])]]
        if "ack_delay" in fl:  # ms, with the default ack_delay_exponent 3 (raw value kept)
            d["ack_delay"] = round(int(fl["ack_delay"]) * 8 / 1000.0, 3)
            d["_ack_delay_raw"] = fl["ack_delay"]
    else:
        for k, v in fl.items():
            if k in ("data", "application"):
                continue
            if k == "bidi":  # (MAX_STREAMS, STREAMS_BLOCKED)
                k, v = "stream_type", "bidirectional" if v else "unidirectional"
            k = _QLOG_FIELD.get(k, k)
            d[k] = v.hex() if isinstance(v, (bytes, bytearray)) else (list(v) if isinstance(v, tuple) else v)
        if t == "connection_close":
            d["error_space"] = "application" if fl.get("application") else "transport"
            if "error_code" in fl:
                d["raw_error_code"] = fl["error_code"]
            if "reason" in fl and isinstance(fl["reason"], (bytes, bytearray)):
                d["reason"] = bytes(fl["reason"]).decode("utf-8", "replace")
        elif t == "new_connection_id" and isinstance(fl.get("connection_id"), str):
            d["length"] = len(fl["connection_id"]) // 2
    return d


# the QUIC dissector's field names (Wireshark's wording) -> qlog 0.3's, as aioquic writes them
# (sample_captures/quic/aioquic-qlog.qlog): frame data of packet_sent / packet_received
_QLOG_FIELD = {"sequence": "sequence_number", "maximum_data": "maximum", "maximum_streams": "maximum",
               "offending_frame_type": "trigger_frame_type", "frame_type": "trigger_frame_type"}


def _quic_packets(an: Analysis, conn) -> list | None:
    """Re-decode the QUIC packets of one UDP connection (header facts and, with keys,
    frames) with the QUIC dissector.  None when the dissector is unavailable."""
    try:
        from wirefall.dissectors.quic import QuicConnectionDissector
    except ImportError:
        return None
    from .capture import PacketSource
    from .packet import Decoder

    kl = an.keylog
    secret = (lambda label, cr: kl.get(label, cr)) if kl is not None else None
    # a connection whose handshake the capture missed: its 1-RTT keys are found by trial, over
    # the key log's client randoms, as the analysis found them (sessions/quic.py)
    dis = QuicConnectionDissector(secret=secret, candidates=(lambda label: list(kl.client_randoms(label))) if kl is not None else None)
    idx = an.index
    src = PacketSource(an.path)
    dec = Decoder()
    # (packet, time, direction, UDP payload bytes, QUIC packets, note when they would not decode)
    out: list[tuple[int, float, int, int, list, str | None]] = []
    cl = (conn.client[0], conn.client[1])
    try:
        for i in range(conn.first_packet - 1, min(conn.last_packet, len(idx))):
            if idx.conn[i] != conn.id:
                continue
            d = dec.decode(idx.linktype[i], src.read(idx.offset[i], idx.caplen[i]))
            if d is None or isinstance(d, str):
                continue
            from .packet import addr_str

            direction = 0 if (addr_str(d.src), d.sport) == cl else 1
            try:
                pkts = dis.datagram(direction, d.payload, i + 1)
            except Exception as ex:  # noqa: BLE001 - bad input never stops an export
                conn_note = f"qlog: packet {i + 1}: {ex.__class__.__name__}"
                out.append((i + 1, idx.ts[i], direction, len(d.payload), [], conn_note))
                continue
            dis.pop_events()
            out.append((i + 1, idx.ts[i], direction, len(d.payload), pkts, None))
    finally:
        src.close()
    return out


UDP_HEADER = 8  # bytes: a qlog datagram's RawInfo.length counts them (qlog 0.3, "including UDP header length")


def qlog(an: Analysis) -> dict[str, Any]:
    traces = []
    h3_frames: dict[int, list] = {}
    for f in an.frames:
        if f.protocol.startswith("h3"):  # (HTTP/3 of any draft, as the waterfall and the JSON ask)
            h3_frames.setdefault(f.connection, []).append(f)
    for c in an.connections:
        if c.transport != "udp" or not (c.quic is not None or c.protocol is None or (over_quic(c.protocol) and c.protocol != "gquic")):
            continue  # (gQUIC has no qlog schema; DNS and other UDP are not QUIC)
        ref = c.start * 1000.0
        events: list[dict] = []
        pkts = _quic_packets(an, c)
        odcid = None
        for pnum, ts, direction, size, qps, err in pkts or []:
            rel = round(ts * 1000.0 - ref, 6)
            if err is not None:
                continue
            # one UDP datagram (qlog 0.3's datagrams_sent/received: ``count`` datagrams, a RawInfo
            # each whose ``length`` includes the UDP header and ``payload_length`` does not, as
            # aioquic logs them); its coalesced QUIC packets are the packet events below
            events.append({"time": rel, "name": "transport:datagrams_" + ("sent" if direction == 0 else "received"),
                           "data": {"count": 1, "raw": [{"length": size + UDP_HEADER, "payload_length": size}], "_packet": pnum}})
            for qp in qps:
                hdr: dict[str, Any] = {"packet_type": _QLOG_PTYPE.get(qp.type, "unknown")}
                if qp.pn is not None:
                    hdr["packet_number"] = qp.pn
                if qp.version is not None and qp.type not in ("1-RTT",):
                    hdr["version"] = f"{qp.version:08x}"
                if qp.dcid is not None:
                    hdr["dcid"] = bytes(qp.dcid).hex()
                if qp.scid is not None:
                    hdr["scid"] = bytes(qp.scid).hex()
                if odcid is None and direction == 0 and qp.type == "Initial":
                    odcid = bytes(qp.dcid).hex()
                data: dict[str, Any] = {"header": hdr, "raw": {"length": qp.size}, "_packet": pnum}
                if qp.frames:
                    data["frames"] = [_qframe(fr) for fr in qp.frames]
                if qp.error:
                    data["_error"] = qp.error
                events.append({"time": rel, "name": "transport:packet_" + ("sent" if direction == 0 else "received"), "data": data})
        for f in h3_frames.get(c.id, []):
            fr: dict[str, Any] = {"frame_type": "reserved" if f.type == "GREASE" else f.type.lower()}  # (qlog's name for GREASE)
            if f.headers is not None:
                fr["headers"] = [{"name": k, "value": v} for k, v in f.headers]
            fl = f.fields or {}
            if f.type == "SETTINGS":
                sd = fl["settings"] if isinstance(fl.get("settings"), dict) else {k: v for k, v in fl.items() if k != "stream_type"}
                fr["settings"] = [{"name": str(k).lower(), "value": v} for k, v in sd.items()]
            for k in ("push_id", "error_code", "prioritized_element_id", "priority_field_value"):
                if k in fl:
                    fr[k] = fl[k]
            events.append({"time": round(f.time * 1000.0 - ref, 6),
                           "name": "http:frame_created" if f.direction == 0 else "http:frame_parsed",
                           "data": {"stream_id": f.stream_id, "length": f.length, "frame": fr, "_packet": f.packet}})
        if c.quic is None and c.protocol is None and not any(
                ev["name"].startswith("transport:packet") and ev["data"]["header"]["packet_type"] != "unknown" for ev in events):
            continue  # not QUIC after all
        events.sort(key=lambda ev: ev["time"])
        if odcid is None and c.quic is not None:
            odcid = c.quic.dcid
        common: dict[str, Any] = {"reference_time": ref, "time_format": "relative",
                                  # (HTTP3 only where the connection carried HTTP/3: a keep-alive joined mid-way carries none)
                                  "protocol_type": ["QUIC", "HTTP3"] if h3_frames.get(c.id) or (c.protocol or "").startswith("h3")
                                  else ["QUIC"]}
        if odcid:  # (a connection joined mid-way: its original DCID is not in the capture — absent, not "")
            common = {"ODCID": odcid, **common}
        trace = {
            "title": f"connection {c.id} {c.label}",
            "description": f"{c.protocol or 'quic'} from {os.path.basename(an.path)}",
            "vantage_point": {"name": "wirefall", "type": "network", "flow": "client"},
            "common_fields": common,
            "events": events,
        }
        traces.append(trace)
    description = "QUIC and HTTP/3 events from a packet capture, network vantage point"
    if not traces:  # (an empty file would read as "nothing happened": say that qlog covers QUIC only)
        description += f": no QUIC connection in this capture ({len(an.connections)} connections of other protocols; qlog covers QUIC)"
    return {
        "qlog_version": "0.3",
        "qlog_format": "JSON",
        "title": f"wirefall {os.path.basename(an.path)}",
        "description": description,
        "traces": traces,
    }


def _wire_or_none(e: Exchange, attr: str) -> int | None:
    """A header-byte field of ``e``; None where it is not known (a browser log's exchange:
    ``sources[attr] == "unknown"``, as requests --json gives it)."""
    return None if (e.sources or {}).get(attr) == "unknown" else getattr(e, attr)


def _headers_size(e: Exchange, side: str) -> int:
    """HAR ``headersSize`` of one side: the wire's header block where the capture gave it; for a
    browser log's exchange (wire bytes unknown) the log's own figure (``browser.headers_size``,
    what the browser reported), else -1 (HAR 1.2: "-1 if the info is not available"), never 0."""
    wire = _wire_or_none(e, f"{side}_header_bytes_wire")
    if wire is not None:
        return wire if (wire or (e.request_headers if side == "request" else e.response_headers)) else -1
    hs = (e.browser or {}).get("headers_size") if isinstance(e.browser, dict) else None
    v = hs.get(side) if isinstance(hs, dict) else None
    return v if isinstance(v, int) and v >= 0 else -1
