"""The public JSON form of the model (docs/JSON.md).  Field names are stable and
snake_case; every command's ``--json`` and the JSON/HAR exports are built from these."""
from __future__ import annotations

from typing import Any

from .model import DIRECTION_NAMES, Analysis, Connection, Exchange, Frame

SCHEMA_VERSION = 1


def _ep(a: tuple[str, int]) -> str | None:
    if not a[0]:
        return None  # not known (a browser log names no client port: analyzer.browserlog)
    return f"[{a[0]}]:{a[1]}" if ":" in a[0] else f"{a[0]}:{a[1]}"


def connection_dict(c: Connection) -> dict[str, Any]:
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
        d["tls"] = {
            "version": t.version,
            "cipher_suite": t.cipher_suite,
            "sni": t.sni,
            "alpn": t.alpn,
            "alpn_offered": list(t.alpn_offered),
            "resumed": t.resumed,
            "decrypted": t.decrypted,
            "reason": t.reason,
            "cipher_suite_id": t.cipher_suite_id,
            "hello_retry": t.hello_retry,
            "npn": t.npn,
            "certificate_subject": t.certificate_subject,
            "records": t.records,
            "record_overhead": list(t.record_overhead),
            "client_hello_time": t.client_hello_time,
            "server_hello_time": t.server_hello_time,
            "client_finished_time": t.client_finished_time,
            "server_finished_time": t.server_finished_time,
        }
    if c.quic is not None:
        q = c.quic
        d["quic"] = {"version": q.version, "sni": q.sni, "alpn": q.alpn, "scid": q.scid, "dcid": q.dcid,
                     "decrypted": q.decrypted, "reason": q.reason}
        if q.alpn_inferred:
            d["quic"]["alpn_inferred"] = True
    return d


def phases_dicts(an: Analysis) -> dict[int, dict[str, Any]]:
    """Exchange id -> its ``phases`` object (docs/JSON.md): the waterfall row's phases in
    seconds (None where the row has none), ``start``/``end`` (epoch) and ``total``; the
    phases add up to the total."""
    from .waterfall import PHASES, phase_totals, phases_by_exchange

    out = {}
    for eid, ph in phases_by_exchange(an).items():
        tot = phase_totals(ph)
        d: dict[str, Any] = {"start": tot["start"], "end": tot["end"], "total": tot["total"] / 1e6}
        for n in PHASES:
            d[n] = None if tot[n] is None else tot[n] / 1e6
        out[eid] = d
    return out


def exchange_dict(e: Exchange, with_headers: bool = True, shared: bool = False, phases: dict | None = None,
                  page=None) -> dict[str, Any]:
    """``shared=True`` (for ``dump`` only) leaves the header lists as ``Shared`` markers:
    decoders share one list between identical header blocks, and ``dump`` writes its text
    once per list instead of once per exchange.  ``phases``: the exchange's entry of
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
        "request_body_bytes": e.request_body_bytes,
        "response_body_bytes": e.response_body_bytes,
        "response_body_decoded_bytes": e.response_body_decoded_bytes,
        "reset": e.reset,
        "error": e.error,
        "browser": e.browser,
        "sources": e.sources,
    }
    if e.protocol.startswith("h3"):
        d["request_qpack_encoder_bytes"] = e.request_qpack_encoder_bytes
        d["response_qpack_encoder_bytes"] = e.response_qpack_encoder_bytes
    if page is not None:
        why = page.background.get(e.id)
        d["background"] = why is not None
        d["background_reason"] = why
    if with_headers:
        if shared:
            d["request_headers"] = Shared(e.request_headers)
            d["response_headers"] = Shared(e.response_headers)
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
        "headers": None if h is None else Shared(h) if shared else [[k, v] for k, v in h],
        "fields": _plain(f.fields) if f.fields else None,
        "error": f.error,
    }


def _plain(v: Any) -> Any:
    """Make a value JSON-plain (bytes as hex, tuples as lists)."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    return v


def summary_dict(an: Analysis) -> dict[str, Any]:
    first = an.index.ts[0] if len(an.index) else None
    last = an.index.ts[-1] if len(an.index) else None
    return {
        "version": SCHEMA_VERSION,
        "file": an.path,
        "format": an.capture_format,
        "compression": an.compression or None,
        "packets": an.packets,
        "first_time": first,
        "last_time": last,
        "duration": (last - first) if first is not None else 0.0,
        "bytes": int(sum(an.index.origlen)),
        "undecoded": dict(an.undecoded),
        "warnings": list(an.warnings),
        "connections": [connection_dict(c) for c in an.connections],
        "completeness": _completeness(an),
        "source": getattr(an, "source", "capture"),
        "browser": getattr(an, "browser", None),
    }


def _completeness(an: Analysis) -> dict[str, Any]:
    from . import completeness

    return completeness.to_dict(completeness.compute(an))


# -- fast writer ---------------------------------------------------------------------------
# ``json.dump(obj, fp, indent=1, ensure_ascii=False)`` takes the pure-Python encoder (the C
# encoder serves only indent=None) and was half of ``wirefall requests --json`` on large
# captures.  ``dump`` writes the very same bytes several times faster: strings go through the
# C ``encode_basestring``, numbers through the same ``repr`` json uses, and the indented
# structure is built with prebuilt newline+indent strings.  Output is written in chunks; a
# top-level iterator is consumed element by element, so a list of dicts need not exist at once.
from json.encoder import encode_basestring as _estr  # the C version when available

_INF = float("inf")
_NL = ["\n" + " " * i for i in range(64)]
_CHUNK = 1 << 16
_SHAPES: dict[tuple, list[str]] = {}  # (level, *keys) -> text before each value, then the closing


class Shared:
    """A header list (name, value pairs) written as ``[[name, value], ...]``.  Decoders hand
    the same list object to every identical header block (HPACK/QPACK caches, h2load-style
    traffic repeats a block tens of thousands of times), so ``dump`` makes its text once
    per (list, nesting level) and reuses it."""

    __slots__ = ("src",)

    def __init__(self, src):
        self.src = src


_memo: dict[tuple[int, int], tuple[Any, str]] = {}  # (id(list), level) -> (list, text), one dump


def _shared(o: Shared, level: int, out: list) -> None:
    src = o.src
    key = (id(src), level)
    hit = _memo.get(key)
    if hit is None or hit[0] is not src:
        part: list[str] = []
        _enc([[k, v] for k, v in src], level, part)
        if len(_memo) >= 4096:  # bounded: unique header lists are not worth keeping
            _memo.clear()
        hit = _memo[key] = (src, "".join(part))
    out.append(hit[1])


def _fstr(o: float) -> str:
    if o != o:
        return "NaN"
    if o == _INF:
        return "Infinity"
    if o == -_INF:
        return "-Infinity"
    return float.__repr__(o)


def _key(k) -> str:
    if isinstance(k, str):
        return _estr(k)
    if isinstance(k, float):
        return _estr(_fstr(k))
    if k is True:
        return '"true"'
    if k is False:
        return '"false"'
    if k is None:
        return '"null"'
    if isinstance(k, int):
        return _estr(int.__repr__(k))
    raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")


def _enc(o, level: int, out: list) -> None:
    """Append the indent=1 JSON text of ``o`` (at nesting ``level``) to ``out``."""
    t = type(o)
    if t is str:
        out.append(_estr(o))
    elif o is None:
        out.append("null")
    elif o is True:
        out.append("true")
    elif o is False:
        out.append("false")
    elif t is int:
        out.append(int.__repr__(o))
    elif t is float:
        out.append(_fstr(o))
    elif t is list or t is tuple:
        if not o:
            out.append("[]")
            return
        lv = level + 1
        nl = _NL[lv] if lv < 64 else "\n" + " " * lv
        sep = "," + nl
        out.append("[" + nl)
        first = True
        for x in o:
            if first:
                first = False
            else:
                out.append(sep)
            tx = type(x)
            if tx is str:
                out.append(_estr(x))
            elif tx is int:
                out.append(int.__repr__(x))
            elif x is None:
                out.append("null")
            else:
                _enc(x, lv, out)
        out.append((_NL[level] if level < 64 else "\n" + " " * level) + "]")
    elif t is dict:
        if not o:
            out.append("{}")
            return
        # the text before each value depends only on the keys and the level: the model's
        # dicts come in a few shapes, so it is made once per shape (str keys only: a shape
        # must not be shared by keys that are equal but encode differently, like 1 and True)
        shape = (level, *o)
        pre = _SHAPES.get(shape)
        if pre is None:
            lv = level + 1
            nl = _NL[lv] if lv < 64 else "\n" + " " * lv
            pre = []
            for k in o:
                pre.append(("," if pre else "{") + nl + (_estr(k) if type(k) is str else _key(k)) + ": ")
            pre.append((_NL[level] if level < 64 else "\n" + " " * level) + "}")
            if all(type(k) is str for k in o):
                if len(_SHAPES) >= 1024:
                    _SHAPES.clear()
                _SHAPES[shape] = pre
        app = out.append
        for p, x in zip(pre, o.values()):
            tx = type(x)
            if tx is str:
                app(p + _estr(x))
            elif tx is int:
                app(p + int.__repr__(x))
            elif x is None:
                app(p + "null")
            elif tx is float:
                app(p + (float.__repr__(x) if x - x == 0.0 else _fstr(x)))
            else:
                app(p)
                _enc(x, level + 1, out)
        out.append(pre[-1])
    elif t is Shared:
        _shared(o, level, out)
    elif isinstance(o, str):
        out.append(_estr(o))
    elif isinstance(o, int):
        out.append(int.__repr__(o))
    elif isinstance(o, float):
        out.append(_fstr(o))
    elif isinstance(o, (list, tuple)):
        _enc(list(o), level, out)
    elif isinstance(o, dict):
        _enc(dict(o), level, out)
    else:
        raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def dumps(obj) -> str:
    """``json.dumps(obj, indent=1, ensure_ascii=False)``, faster."""
    out: list[str] = []
    try:
        _enc(obj, 0, out)
    finally:
        _memo.clear()
    return "".join(out)


def dump(obj, fp) -> None:
    """``json.dump(obj, fp, indent=1, ensure_ascii=False)``, faster.  ``obj`` may also be an
    iterator (a generator of dicts): it is written as a JSON list, one element at a time."""
    if isinstance(obj, (list, tuple)) or not hasattr(obj, "__next__"):
        if not isinstance(obj, (list, tuple)):
            fp.write(dumps(obj))
            return
    write = fp.write
    out: list[str] = []
    n = 0
    try:
        for x in obj:
            out.append(",\n " if n else "[\n ")
            n += 1
            _enc(x, 1, out)
            if len(out) > 4096:
                write("".join(out))
                out.clear()
    finally:
        _memo.clear()
    out.append("\n]" if n else "[]")
    write("".join(out))
