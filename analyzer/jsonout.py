"""The public JSON form of the model (docs/JSON.md).  Field names are stable and
snake_case; every command's ``--json`` and the JSON/HAR exports are built from these."""
from __future__ import annotations

import io
import sys
from itertools import chain, islice
from typing import Any

from .model import DIRECTION_NAMES, Analysis, Connection, DecryptReason, Exchange, Frame, FrameFields
from wirefall.dissectors.tls_suites import overhead_bound

SCHEMA_VERSION = 1


def _ep(a: tuple[str, int]) -> str | None:
    if not a[0]:
        return None  # not known (a browser log names no client port: analyzer.browserlog)
    return f"[{a[0]}]:{a[1]}" if ":" in a[0] else f"{a[0]}:{a[1]}"


def connection_dict(c: Connection, subject: bool = True) -> dict[str, Any]:
    """``subject=False``: the TLS certificate's subject is not read (None): reading it parses
    the certificate, which loads ``cryptography.x509`` (~60 ms of a text ``summary``, which
    does not show it)."""
    d: dict[str, Any] = {
        "id": c.id,
        "transport": c.transport,
        "client": _ep(c.client),
        "server": _ep(c.server),
        "protocol": c.protocol,
        "start": c.start,
        "end": c.end,
        "first_packet": c.first_packet,
        "last_packet": c.last_packet,
        "packets": [c.stats[0].packets, c.stats[1].packets],
        "bytes": [c.stats[0].bytes, c.stats[1].bytes],
        "payload_bytes": [c.stats[0].payload, c.stats[1].payload],
        "retransmissions": [c.stats[0].retransmissions, c.stats[1].retransmissions],
        "gaps": [c.stats[0].gaps, c.stats[1].gaps],
        "connect_start": c.connect_start,
        "connect_end": c.connect_end,
        "tls_start": c.tls_start,
        "tls_end": c.tls_end,
        "rtt": c.rtt,
        "closed": c.closed,
        "tls": None,
        "quic": None,
        "notes": list(c.notes),
    }
    if c.tls is not None:
        t = c.tls
        tr = t.reason
        tdr = tr if isinstance(tr, DecryptReason) else None  # (typed: the TLS session's; a browser log's or a live wait's is plain text)
        d["tls"] = {
            "version": t.version,
            "cipher_suite": t.cipher_suite,
            "sni": t.sni,
            "alpn": t.alpn,
            "alpn_offered": list(t.alpn_offered),
            "resumed": t.resumed,
            "decrypted": t.decrypted,
            "reason": None if tr is None else str(tr),
            "cipher_suite_id": t.cipher_suite_id,
            "hello_retry": t.hello_retry,
            "npn": t.npn,
            "certificate_subject": t.certificate_subject if subject else None,
            "records": t.records,
            "record_overhead": list(t.record_overhead),
            "record_overhead_exact": [not b for b in overhead_bound(t)],
            "client_hello_time": t.client_hello_time,
            "server_hello_time": t.server_hello_time,
            "client_finished_time": t.client_finished_time,
            "server_finished_time": t.server_finished_time,
            "reason_kind": tdr.kind.value if tdr is not None else None,
            "missing_secrets": list(tdr.missing) if tdr is not None else [],
        }
    if c.quic is not None:
        q = c.quic
        r = q.reason
        dr = r if isinstance(r, DecryptReason) else None  # (typed: the QUIC session's; a browser log's is plain text)
        d["quic"] = {"version": q.version, "sni": q.sni, "alpn": q.alpn, "scid": q.scid, "dcid": q.dcid,
                     "server_scid": q.server_scid, "decrypted": q.decrypted, "reason": None if r is None else str(r),
                     "reason_kind": dr.kind.value if dr is not None else None,
                     "missing_secrets": list(dr.missing) if dr is not None else [],
                     "retry": q.retry}
        if q.alpn_inferred:
            d["quic"]["alpn_inferred"] = True
    return d


def page_and_phases(an: Analysis) -> tuple[Any, dict[int, dict[str, Any] | None]]:
    """(``waterfall.page_of(an)``, ``phases_dicts(an)``) with the waterfall planned once (one
    sort of the exchanges): the page's start is its first row's, which the phases hold
    (planning them was a fifth of ``requests --json`` on request-heavy captures, and was done
    twice)."""
    from .waterfall import page_of

    plan = PhasePlan(an)
    page = page_of(an, plan.exs, starts=plan.starts())
    return page, {e.id: plan.phases_of(e) for e in plan.exs}


class PhasePlan:
    """The waterfall planned once (``waterfall._plan``: the exchanges with a start, in start
    order, ``exs``): the planned exchanges' row starts (``starts``: what ``page_of`` needs)
    and then each one's ``phases`` object on demand (``phases_of``), so that
    ``parallel.requests_json`` can make the phases of each process's share of the rows."""

    def __init__(self, an: Analysis, ordered: list[Exchange] | None = None):
        from .waterfall import PHASES, _plan, exchange_phases

        assert PHASES == _PHASES  # (the literals in _common_phases_dict and _phases_dict)
        self.conns = {c.id: c for c in an.connections}
        # (``ordered``: the command's rows, sorted by (request_start or response_start, id): see _plan)
        self.exs, _, self.first_of_conn, self.dns_for, _ = _plan(an, self.conns, ordered=ordered)
        # exchange id -> its row's phases, for the rows that are not the common one (``_phases``
        # not None), as ``starts`` found them: ``phases_of`` then reads them (None: not yet)
        self.rows: dict[int, list] | None = None
        self._starts: dict[int, float] = {}
        self._exchange_phases = exchange_phases

    def _phases(self, e: Exchange) -> list | None:
        """None for the common row (``waterfall.exchange_phases``' fast path: a request sent,
        then answered, in order, not its connection's first: its phases are send, wait,
        receive between its four times, and its start its request's), else the row's phases
        (as ``phases_by_exchange``)."""
        first = e.id in self.first_of_conn
        if not first and not e.pushed:
            s, a, b, end = e.request_start, e.request_end, e.response_start, e.response_end
            if s is not None and a is not None and b is not None and end is not None and s <= a <= b <= end:
                return None
        c = self.conns.get(e.connection) if first else None
        return self._exchange_phases(e, c, self.dns_for.get(c.id) if c is not None else None)

    def starts(self) -> dict[int, float]:
        """The row's start of every planned exchange that has a phase (the common row's is its
        request's), as ``page_of`` finds them; the other rows' phases are kept for
        ``phases_of`` (``rows``: a few per connection where requests are many)."""
        starts: dict[int, float] = {}
        rows: dict[int, list] = {}
        for e in self.exs:
            ph = self._phases(e)
            if ph is None:
                starts[e.id] = e.request_start
            else:
                rows[e.id] = ph
                if ph:
                    starts[e.id] = ph[0][1]
        self.rows = rows
        self._starts = starts
        return starts

    def phases_of(self, e: Exchange) -> dict[str, Any] | None:
        """The ``phases`` object of ``e`` (after ``starts``; None: not planned).  A planned
        exchange is one of ``rows`` or of the starts (every common row has one)."""
        ph = self.rows.get(e.id)  # type: ignore[union-attr]
        if ph is not None:
            return _phases_dict(ph)
        if e.id in self._starts:  # the common row: its four times are set (``_phases``)
            return _common_phases_dict(e.request_start, e.request_end, e.response_start, e.response_end)  # type: ignore[arg-type]
        return None

    def dicts(self, exs, page):
        """``exchange_dict(e, shared=True, phases=…, page=page)`` of each of ``exs`` (after
        ``starts``), its phases object made just before it: all of them made first were the
        peak of ``requests --json`` (40 MB on 60 k requests)."""
        assert self.rows is not None, "starts() first"
        phases_of = self.phases_of
        for e in exs:
            yield exchange_dict(e, shared=True, phases=phases_of(e), page=page)


def _common_phases_dict(s: float, a: float, b: float, end: float) -> dict[str, Any]:
    """The ``phases`` object of the common row (``PhasePlan._phases`` None) from its request's
    four times: [("send", s, a), ("wait", a, b), ("receive", b, end)], as ``_phases_dict``
    writes them, without the list made and read back."""
    r0, r1, r2, r3 = round(s * 1e6), round(a * 1e6), round(b * 1e6), round(end * 1e6)
    return {"start": s, "end": end, "total": (r3 - r0) / 1e6, "blocked": None, "dns": None, "connect": None, "tls": None, "idle": None,
            "send": (r1 - r0) / 1e6, "wait": (r2 - r1) / 1e6, "receive": (r3 - r2) / 1e6}


def phases_dicts(an: Analysis, by_exchange: dict | None = None) -> dict[int, dict[str, Any]]:
    """Exchange id -> its ``phases`` object (docs/JSON.md): the waterfall row's phases in
    seconds (None where the row has none), ``start``/``end`` (epoch) and ``total``; the
    phases add up to the total.  ``by_exchange``: ``waterfall.phases_by_exchange(an)``, when
    the caller has it."""
    from .waterfall import PHASES, phases_by_exchange

    assert PHASES == _PHASES  # (the literals in _phases_dict)
    return {eid: _phases_dict(ph) for eid, ph in (phases_by_exchange(an) if by_exchange is None else by_exchange).items()}


def _phases_dict(ph: list[tuple[str, float, float]]) -> dict[str, Any]:
    """One row's ``phases`` object (``phases_dicts``) from its phases."""
    # waterfall.phase_totals of the list, inlined (a call, a lambda per boundary and a second
    # dict per exchange were half of this on request-heavy captures): every boundary rounded
    # to the microsecond once, so the phases add up to the total exactly
    if len(ph) == 3:
        (n0, s, a), (n1, a1, b), (n2, b1, end) = ph
        if n0 == "send" and n1 == "wait" and n2 == "receive" and a1 == a and b1 == b:
            # the common row (waterfall.exchange_phases' fast path): the loop below, unrolled
            r0, r1, r2, r3 = round(s * 1e6), round(a * 1e6), round(b * 1e6), round(end * 1e6)
            return {"start": s, "end": end, "total": (r3 - r0) / 1e6, "blocked": None, "dns": None,
                    "connect": None, "tls": None, "idle": None, "send": (r1 - r0) / 1e6, "wait": (r2 - r1) / 1e6,
                    "receive": (r3 - r2) / 1e6}
    tot = dict.fromkeys(_PHASES)
    pb: float | None = None  # the previous phase's end, and ``pr`` it rounded (phases are contiguous)
    pr = 0
    for n, a, b in ph:
        ra = pr if a == pb else round(a * 1e6)
        pb, pr = b, round(b * 1e6)
        tot[n] = (tot[n] or 0) + pr - ra
    if ph:
        start, end = ph[0][1], ph[-1][2]
        d: dict[str, Any] = {"start": start, "end": end, "total": (pr - round(start * 1e6)) / 1e6}
    else:
        d = {"start": None, "end": None, "total": 0 / 1e6}
    for n in _PHASES:
        v = tot[n]
        d[n] = None if v is None else v / 1e6
    return d


_PHASES = ("blocked", "dns", "connect", "tls", "idle", "send", "wait", "receive")  # waterfall.PHASES (held equal where it is imported)

UNKNOWN = "<unknown>"  # a header field the capture does not give (analyzer.completeness.UNKNOWN)
# an exchange's header byte counts, null in its JSON where ``sources`` says "unknown" (a browser
# log's exchange: analyzer/browserlog/build.py)
_HEADER_BYTES = ("request_header_bytes_wire", "request_header_bytes_decoded", "response_header_bytes_wire",
                 "response_header_bytes_decoded")


def unknown_fields(headers) -> int:
    """The ``<unknown>`` fields of a header list (HPACK/QPACK entries inserted before the
    capture: name or value unknown); ``stats`` counts them with it (its ``unknown_fields``)."""
    if not headers:
        return 0
    # (decoders share one list between identical header blocks — 16 lists for h2-small's 120 k
    # heads — and never change a decoded list: the count is kept per list, the list held so
    # that its id stays its own; scanning each list cost ~60 ms of h2-small's ~0.4 s of JSON)
    hit = _UNKNOWN_MEMO.get(id(headers))
    if hit is not None and hit[0] is headers:
        return hit[1]
    n = 0 if UNKNOWN not in chain.from_iterable(headers) else sum(1 for k, v in headers if k == UNKNOWN or v == UNKNOWN)
    if len(_UNKNOWN_MEMO) >= _UNKNOWN_MEMO_MAX:
        _UNKNOWN_MEMO.clear()
    _UNKNOWN_MEMO[id(headers)] = (headers, n)
    return n


_UNKNOWN_MEMO: dict[int, tuple[Any, int]] = {}
_UNKNOWN_MEMO_MAX = 4096


def exchange_dict(e: Exchange, with_headers: bool = True, shared: bool = False, phases: dict | None = None,
                  page=None) -> dict[str, Any]:
    """``shared=True`` (for ``dump``/``dumps`` only) puts the decoder's header lists in the
    dict themselves, not copies: decoders share one list between identical header blocks,
    and the writer needs no list of lists.  ``phases``: the exchange's entry of
    ``phases_dicts`` (null when not given).  With ``page`` (``analyzer.waterfall.page_of``)
    the dict says whether the exchange is background traffic: ``background``,
    ``background_reason``."""
    d: dict[str, Any] = {
        "id": e.id,
        "connection": e.connection,
        "protocol": e.protocol,
        "stream_id": e.stream_id,
        "method": e.method,
        "url": e.url,
        "status": e.status,
        "pushed": e.pushed,
        "push_parent": e.push_parent,
        "priority": e.priority,
        "content_type": e.content_type,
        "content_encoding": e.content_encoding,
        "request_start": e.request_start,
        "request_end": e.request_end,
        "response_start": e.response_start,
        "response_end": e.response_end,
        "request_start_packet": e.request_start_packet,
        "request_end_packet": e.request_end_packet,
        "response_start_packet": e.response_start_packet,
        "response_end_packet": e.response_end_packet,
        "response_headers_end": e.response_headers_end,
        "response_headers_end_packet": e.response_headers_end_packet,
        "phases": phases,
        "request_header_bytes_wire": e.request_header_bytes_wire,
        "request_header_bytes_decoded": e.request_header_bytes_decoded,
        "response_header_bytes_wire": e.response_header_bytes_wire,
        "response_header_bytes_decoded": e.response_header_bytes_decoded,
        "request_header_fields_unknown": unknown_fields(e.request_headers),
        "response_header_fields_unknown": unknown_fields(e.response_headers),
        "request_body_bytes": e.request_body_bytes,
        "response_body_bytes": e.response_body_bytes,
        "response_body_decoded_bytes": e.response_body_decoded_bytes,
        "reset": e.reset,
        "error": e.error,
        "browser": e.browser,
        "sources": e.sources,
    }
    src = e.sources
    if src and src.get("request_header_bytes_wire") == "unknown":  # (a browser log's: not the wire's, not known)
        for k in _HEADER_BYTES:
            if src.get(k) == "unknown":
                d[k] = None
    if src and src.get("response_body_bytes") == "unknown":  # (a browser log that does not give it)
        d["response_body_bytes"] = None
    if src and src.get("request_body_bytes") == "unknown":  # (a browser log's POST of no body size)
        d["request_body_bytes"] = None
    if e.protocol.startswith("h3"):
        d["request_qpack_encoder_bytes"] = e.request_qpack_encoder_bytes
        d["response_qpack_encoder_bytes"] = e.response_qpack_encoder_bytes
        if src and src.get("request_qpack_encoder_bytes") == "unknown":  # (a browser log's: no log gives them)
            d["request_qpack_encoder_bytes"] = d["response_qpack_encoder_bytes"] = None
    if page is not None:
        why = page.background.get(e.id)
        d["background"] = why is not None
        d["background_reason"] = why
    if with_headers:
        if shared:  # the decoder's own lists (of tuples): the writer makes them lists of lists
            d["request_headers"] = e.request_headers
            d["response_headers"] = e.response_headers
        else:
            d["request_headers"] = [[k, v] for k, v in e.request_headers]
            d["response_headers"] = [[k, v] for k, v in e.response_headers]
    return d


def frame_dict(f: Frame, shared: bool = False) -> dict[str, Any]:
    """``shared``: as in ``exchange_dict``."""
    h = f.headers
    return {
        "packet": f.packet,
        "first_packet": f.first_packet,
        "time": f.time,
        "connection": f.connection,
        "direction": DIRECTION_NAMES[f.direction],
        "protocol": f.protocol,
        "stream_id": f.stream_id,
        "type": f.type,
        "flags": f.flags,
        "length": f.length,
        "headers": None if h is None else h if shared else [[k, v] for k, v in h],
        "fields": _plain(f.fields) if f.fields else None,
        "error": f.error,
    }


def _plain(v: Any) -> Any:
    """Make a value JSON-plain (bytes as hex, tuples as lists, a ``FrameFields`` a dict)."""
    if isinstance(v, (dict, FrameFields)):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    return v


def bytes_on_wire(an: Analysis) -> int:
    """The captured packets' bytes on the wire (the sum of the index's ``origlen``), kept in
    the analysis for the index's length (``_wf_on_wire``: an index that grows, a live
    capture's, is added up again); an analysis reopened from the cache has it at once."""
    n = len(an.index.origlen)
    memo = an.__dict__.get("_wf_on_wire")
    if memo is None or memo[0] != n:
        memo = an.__dict__["_wf_on_wire"] = (n, int(sum(an.index.origlen)))
    return memo[1]


def time_span(an: Analysis) -> tuple[float, float] | None:
    """(earliest, latest) packet time, as capinfos' "Earliest/Latest packet time" (None: no
    packet).  A capture's packets are not always in time order (a merged or a clock-stepped
    capture): its duration is latest - earliest, never last - first, which went negative.
    Memoised for the index's length; numpy's min/max where numpy is loaded already (1.24 M
    packets: ~1 ms against ~30 ms for the built-ins, whose cost is paid only where it is not)."""
    ts = an.index.ts
    n = len(ts)
    if not n:
        return None
    memo = an.__dict__.get("_wf_span")
    if memo is None or memo[0] != n:
        np = sys.modules.get("numpy")
        if np is not None and n > 4096:
            v = np.frombuffer(ts, dtype="d")
            span = (float(v.min()), float(v.max()))
        else:
            span = (min(ts), max(ts))
        memo = an.__dict__["_wf_span"] = (n, span)
    return memo[1]


def summary_dict(an: Analysis, subjects: bool = True) -> dict[str, Any]:
    """``subjects``: as ``connection_dict``'s ``subject``.  ``first_time``/``last_time``: the
    first and the last packet's; ``duration``: latest - earliest (``time_span``)."""
    first = an.index.ts[0] if len(an.index) else None
    last = an.index.ts[-1] if len(an.index) else None
    span = time_span(an)
    return {
        "version": SCHEMA_VERSION,
        "file": an.path,
        "format": an.capture_format,
        "compression": an.compression or None,
        "packets": an.packets,
        "first_time": first,
        "last_time": last,
        "duration": (span[1] - span[0]) if span is not None else 0.0,
        "bytes": bytes_on_wire(an),
        "undecoded": dict(an.undecoded),
        "warnings": list(an.warnings),
        "connections": [connection_dict(c, subjects) for c in an.connections],
        "completeness": _completeness(an),
        "source": getattr(an, "source", "capture"),
        "browser": getattr(an, "browser", None),
    }


def _completeness(an: Analysis) -> dict[str, Any]:
    from . import completeness

    return completeness.to_dict(completeness.compute(an))


# -- writer --------------------------------------------------------------------------------
# The layout is json.dumps(obj, indent=2, ensure_ascii=False)'s (docs/JSON.md, "Layout"),
# written by orjson: the stdlib encoder with an indent runs in pure Python and took a quarter
# of ``wirefall requests --json`` on request-heavy captures; orjson is ~15x faster (measured
# against msgspec too: orjson 0.20 s, msgspec 0.25 s, msgspec + format(indent=2) 0.40 s on
# 63 k exchanges).  Floats are written shortest-round-trip (``json.loads`` gives the very same
# float back); the only textual difference from the stdlib is the exponent (``1e-7`` for
# ``1e-07``).  What orjson refuses — integers beyond 64 bits, non-string keys, strings with
# lone surrogates — goes through the stdlib encoder with the same layout, one batch at a time.
# orjson is imported on first use: ``wirefall summary`` without --json never loads it.
# A batch's text is one buffer the encoder grows and frees: at 2048 exchanges (~5 MB) each was
# fresh memory from the kernel (8.9 k page faults in ``requests --json`` on h2-requests, ~5 us
# each on the 2-core VM; JSON 0.50 s); at 128 (~300 KB) the allocator reuses it (2.5 k; 0.42 s).
# From 16 to 256 the same time; from 512 the faults return.
_BATCH = 128  # top-level list elements encoded per call (an iterator is never made a list)


class Shared:
    """A header list (name, value pairs) written as ``[[name, value], ...]``; kept for
    callers of the former writer.  ``exchange_dict``/``frame_dict`` with ``shared=True`` now
    hand the decoder's list itself (tuples are written as lists)."""

    __slots__ = ("src",)

    def __init__(self, src):
        self.src = src


def _default(o):
    if isinstance(o, Shared):
        return o.src
    if isinstance(o, (bytes, bytearray, memoryview)):
        raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")
    if isinstance(o, str):  # str subclasses
        return str(o)
    if isinstance(o, int):
        return int(o)
    if isinstance(o, float):
        return float(o)
    if isinstance(o, (list, tuple)):
        return list(o)
    if isinstance(o, dict):
        return dict(o)
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def _std_default(o):
    if isinstance(o, Shared):
        return list(o.src)
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def _encode(obj) -> bytes:
    """The indent-2 UTF-8 text of ``obj``."""
    try:
        import orjson
    except ImportError:  # (a dependency; the stdlib gives the same document, slower)
        pass
    else:
        try:
            return orjson.dumps(obj, default=_default, option=orjson.OPT_INDENT_2)
        except TypeError:  # orjson.JSONEncodeError: see above
            pass
    import json

    return json.dumps(obj, indent=2, ensure_ascii=False, default=_std_default).encode("utf-8", "surrogatepass")


def dumps(obj) -> str:
    """``obj`` as JSON text in the documented layout (``json.dumps(obj, indent=2,
    ensure_ascii=False)``; see above)."""
    return _encode(obj).decode("utf-8", "surrogatepass")


def dump(obj, fp) -> None:
    """Write ``dumps(obj)`` to ``fp`` (a text or binary file).  ``obj`` may also be an
    iterator (a generator of dicts): it is written as a JSON list, ``_BATCH`` elements per
    encoder call, so the whole list never exists at once."""
    buf = getattr(fp, "buffer", None)
    if buf is not None:
        fp.flush()
        write = buf.write
    elif isinstance(fp, (io.RawIOBase, io.BufferedIOBase)) or "b" in getattr(fp, "mode", ""):
        write = fp.write
    else:
        def write(b) -> None:  # (bytes or a memoryview of them)
            fp.write(bytes(b).decode("utf-8", "surrogatepass"))
    if isinstance(obj, (list, tuple)) and len(obj) <= _BATCH or not isinstance(obj, (list, tuple)) and not hasattr(obj, "__next__"):
        write(_encode(obj))
        return
    it = iter(obj)
    n = 0
    while True:
        batch = list(islice(it, _BATCH))
        if not batch:
            break
        text = _encode(batch)  # "[\n  …,\n  …\n]": the elements, already at the list's indent
        write(b",\n" if n else b"[\n")
        write(memoryview(text)[2:-2])  # (a view: no copy of megabytes per batch, nor a second for the "+")
        n += len(batch)
    write(b"\n]" if n else b"[]")
