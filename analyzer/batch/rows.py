"""One capture → its rows: the task a Dask worker runs (``analyze_task``), and the Arrow schemas
of the four datasets (docs/BATCH.md).

The task is pure: its result depends only on the job (paths, hashes, conditions, limits) and the
files' bytes — never on the worker's environment (the key logs are named by the client, the key
log is loaded with ``use_env=False``), and it writes nothing, so a task lost with its worker is
simply run again elsewhere.  What a capture's own bytes cause (not a capture, an analyser bug) is
returned as an errors row; an ``OSError`` (a file that could not be read) is raised, so that
Dask's ``retries`` tries it again, and becomes an errors row only when the retries are spent.

Request rows are ``wirefall requests CAP --json`` (docs/JSON.md), one row per element, in the
same order (``row``), field by field under the same names: objects whose shape is the
protocol's (``priority``, ``browser``, ``sources``) are JSON text (Parquet's JSON logical
type), ``phases`` a struct, header lists lists of ``[name, value]``; a field the JSON leaves out
(``request_qpack_encoder_bytes`` on a request that is not HTTP/3) is null.
"""
from __future__ import annotations

import json
import time
from typing import Any

import pyarrow as pa

from wirefall.analyzer.capture import CaptureError

# every dataset starts with the capture's identity and conditions
CAPTURE_FIELDS: list[tuple[str, pa.DataType]] = [
    ("capture", pa.string()), ("sha256", pa.string()), ("keylog_sha256", pa.string()),
    ("condition", pa.string()), ("lab_protocol", pa.string()), ("rtt_ms", pa.float64()), ("loss_pct", pa.float64()),
    ("rate_mbit", pa.float64()), ("run", pa.int64()),
]

PHASES = pa.struct([(n, pa.float64()) for n in ("start", "end", "total", "blocked", "dns", "connect", "tls", "idle", "send", "wait", "receive")])
HEADERS = pa.list_(pa.list_(pa.string()))
I, F, S, B, J = pa.int64(), pa.float64(), pa.string(), pa.bool_(), pa.json_()

# the Exchange object of docs/JSON.md, in its order
REQUEST_JSON_FIELDS: list[tuple[str, pa.DataType]] = [
    ("id", I), ("connection", I), ("protocol", S), ("stream_id", I), ("method", S), ("url", S), ("status", I),
    ("pushed", B), ("push_parent", I), ("priority", J), ("content_type", S), ("content_encoding", S),
    ("request_start", F), ("request_end", F), ("response_start", F), ("response_end", F),
    ("request_start_packet", I), ("request_end_packet", I), ("response_start_packet", I), ("response_end_packet", I),
    ("response_headers_end", F), ("response_headers_end_packet", I), ("phases", PHASES),
    ("request_header_bytes_wire", I), ("request_header_bytes_decoded", I),
    ("response_header_bytes_wire", I), ("response_header_bytes_decoded", I),
    ("request_header_fields_unknown", I), ("response_header_fields_unknown", I),
    ("request_body_bytes", I), ("response_body_bytes", I), ("response_body_decoded_bytes", I),
    ("reset", S), ("error", S), ("browser", J), ("sources", J),
    ("request_qpack_encoder_bytes", I), ("response_qpack_encoder_bytes", I),
    ("background", B), ("background_reason", S), ("request_headers", HEADERS), ("response_headers", HEADERS),
]
JSON_TEXT_FIELDS = tuple(n for n, t in REQUEST_JSON_FIELDS if t == J)

REQUESTS = pa.schema(CAPTURE_FIELDS + [("row", I)] + REQUEST_JSON_FIELDS)

CONNECTIONS = pa.schema(CAPTURE_FIELDS + [
    ("id", I), ("transport", S), ("client", S), ("server", S), ("protocol", S), ("start", F), ("end", F),
    ("first_packet", I), ("last_packet", I),
    ("packets_c2s", I), ("packets_s2c", I), ("bytes_c2s", I), ("bytes_s2c", I), ("payload_bytes_c2s", I), ("payload_bytes_s2c", I),
    ("retransmissions_c2s", I), ("retransmissions_s2c", I), ("gaps_c2s", I), ("gaps_s2c", I),
    ("connect_start", F), ("connect_end", F), ("tls_start", F), ("tls_end", F), ("rtt", F), ("closed", S),
    ("tls_version", S), ("tls_cipher_suite", S), ("tls_sni", S), ("tls_alpn", S), ("tls_resumed", B), ("tls_decrypted", B), ("tls_reason", S),
    ("quic_version", S), ("quic_sni", S), ("quic_alpn", S), ("quic_decrypted", B), ("quic_reason", S),
    ("requests", I), ("pushes", I), ("request_header_bytes_wire", I), ("request_header_bytes_decoded", I),
    ("response_header_bytes_wire", I), ("response_header_bytes_decoded", I),
    ("request_header_compression", F), ("response_header_compression", F), ("ttfb", F), ("page_load_time", F),
    ("notes", pa.list_(S)),
])

PAGES = pa.schema(CAPTURE_FIELDS + [
    ("format", S), ("compression", S), ("packets", I), ("bytes", I), ("duration", F), ("first_time", F),
    ("protocol", S), ("protocols", pa.list_(S)),
    ("page_load_time", F), ("ttfb", F), ("connections", I), ("requests", I), ("pushes", I), ("background_requests", I),
    ("background_connections", I), ("background_bytes", I), ("connections_without_requests", I), ("bytes_without_requests", I),
    ("packets_c2s", I), ("packets_s2c", I), ("bytes_c2s", I), ("bytes_s2c", I),
    ("request_header_bytes_wire", I), ("request_header_bytes_decoded", I),
    ("response_header_bytes_wire", I), ("response_header_bytes_decoded", I),
    ("request_header_compression", F), ("response_header_compression", F),
    ("request_qpack_encoder_bytes", I), ("response_qpack_encoder_bytes", I),
    ("complete", B), ("completeness", S), ("warnings", pa.list_(S)), ("text_replaced", I),
    ("analysis_seconds", F), ("analysed_at", pa.timestamp("ms", tz="UTC")), ("worker", S), ("wirefall_code", S),
])

ERRORS = pa.schema(CAPTURE_FIELDS + [
    ("kind", S), ("error", S), ("analysed_at", pa.timestamp("ms", tz="UTC")), ("worker", S),
])

SCHEMAS = {"requests": REQUESTS, "connections": CONNECTIONS, "pages": PAGES, "errors": ERRORS}
ERROR_KINDS = ("not_a_capture", "unreadable", "changed", "analysis_failed", "worker_died", "failed")
MAX_ERROR_TEXT = 2000


def _capture_cols(job: dict) -> dict[str, Any]:
    c = job.get("conditions") or {}
    return {"capture": job["path"], "sha256": job.get("sha256"), "keylog_sha256": job.get("keylog_sha256"),
            **{k: c.get(k) for k in ("condition", "lab_protocol", "rtt_ms", "loss_pct", "rate_mbit", "run")}}


def _now_ms():
    import datetime

    return datetime.datetime.now(datetime.UTC)


def _worker_name() -> str | None:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return None


def error_row(job: dict, kind: str, message: str, worker: str | None = None) -> dict[str, Any]:
    msg = str(message)
    if len(msg) > MAX_ERROR_TEXT:
        msg = msg[:MAX_ERROR_TEXT] + f"… ({len(msg)} characters)"
    return {**_capture_cols(job), "kind": kind, "error": msg, "analysed_at": _now_ms(), "worker": worker}


def _json_text(v) -> str | None:
    if v is None:
        return None
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"), default=str)


def _clean(v, n: list[int]):
    """``v`` with every lone surrogate (a captured byte no UTF-8 decoder could place) replaced
    by U+FFFD, counting the strings changed: Parquet strings are UTF-8."""
    if isinstance(v, str):
        try:
            v.encode("utf-8")
            return v
        except UnicodeEncodeError:
            n[0] += 1
            return v.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(v, dict):
        return {k: _clean(x, n) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x, n) for x in v]
    return v


def _table(rows: list[dict], schema: pa.Schema, replaced: list[int]) -> pa.Table:
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except UnicodeEncodeError:
        return pa.Table.from_pylist([_clean(r, replaced) for r in rows], schema=schema)


def _ratio(wire: int, dec: int) -> float | None:
    return (1 - wire / dec) if dec else None


def request_rows(an, base: dict) -> list[dict]:
    """``wirefall requests --json`` of the analysis (ui/cli.py cmd_requests), as rows."""
    from wirefall.analyzer.jsonout import exchange_dict, page_and_phases

    exs = sorted(an.exchanges, key=lambda e: (e.request_start or e.response_start or 0.0, e.id))
    page, ph = page_and_phases(an)  # (the waterfall's phases planned once for both, as cmd_requests)
    rows = []
    for i, e in enumerate(exs):
        d = exchange_dict(e, phases=ph.get(e.id), page=page)
        for k in JSON_TEXT_FIELDS:
            d[k] = _json_text(d.get(k))
        rows.append({**base, "row": i, **d})
    return rows


def connection_rows(an, st, base: dict) -> list[dict]:
    from wirefall.analyzer.jsonout import connection_dict

    blocks = st.connections
    rows = []
    for c, b in zip(an.connections, blocks):
        d = connection_dict(c)
        tls, quic = d.pop("tls") or {}, d.pop("quic") or {}
        for k in ("packets", "bytes", "payload_bytes", "retransmissions", "gaps"):
            v = d.pop(k)
            d[k + "_c2s"], d[k + "_s2c"] = v[0], v[1]
        for k in ("version", "cipher_suite", "sni", "alpn", "resumed", "decrypted", "reason"):
            d["tls_" + k] = tls.get(k)
        for k in ("version", "sni", "alpn", "decrypted", "reason"):
            d["quic_" + k] = quic.get(k)
        if isinstance(d.get("quic_version"), int):
            d["quic_version"] = f"{d['quic_version']:#010x}"
        rw, rd = b.req_headers
        sw, sd = b.resp_headers
        d.update({"requests": b.requests, "pushes": b.pushes,
                  "request_header_bytes_wire": rw, "request_header_bytes_decoded": rd,
                  "response_header_bytes_wire": sw, "response_header_bytes_decoded": sd,
                  "request_header_compression": _ratio(rw, rd), "response_header_compression": _ratio(sw, sd),
                  "ttfb": b.ttfb, "page_load_time": b.page_load_time})
        rows.append({**base, **d})
    return rows


def page_row(an, st, base: dict) -> dict:
    """The capture as one page, of one definition: ``analyzer.compare.page_figures`` — the page
    of ``analyzer.waterfall.page_of`` (what ``wirefall stats`` and ``wirefall compare`` count):
    its load time and TTFB from its first row, its requests, the connections that carried them
    with their packets and bytes, its header bytes; the background requests, the connections
    that carried only them and their bytes, and the web connections without a request, each in
    their own columns — and the completeness headline.  (``st``: the capture's ``stats``, kept
    for the caller's signature.)"""
    from collections import Counter

    from wirefall.analyzer import completeness
    from wirefall.analyzer.compare import page_figures, split_page
    from wirefall.analyzer.jsonout import summary_dict

    page, page_exs, _bg = split_page(an)
    fig = page_figures(an, page)
    s = summary_dict(an)
    c = Counter(e.protocol for e in page_exs) or Counter(e.protocol for e in an.exchanges)
    proto = min(c, key=lambda p: (-c[p], p)) if c else None
    comp = completeness.compute(an)
    return {**base, "format": s["format"], "compression": s["compression"], "packets": s["packets"], "bytes": s["bytes"],
            "duration": s["duration"], "first_time": s["first_time"], "protocol": proto, "protocols": fig["protocols"],
            **{k: fig[k] for k in ("page_load_time", "ttfb", "connections", "requests", "pushes", "background_requests",
                                   "background_connections", "background_bytes", "connections_without_requests",
                                   "bytes_without_requests", "packets_c2s", "packets_s2c", "bytes_c2s", "bytes_s2c",
                                   "request_header_bytes_wire", "request_header_bytes_decoded",
                                   "response_header_bytes_wire", "response_header_bytes_decoded",
                                   "request_header_compression", "response_header_compression",
                                   "request_qpack_encoder_bytes", "response_qpack_encoder_bytes")},
            "complete": comp.complete, "completeness": completeness.headline(an), "warnings": list(an.warnings)}


def analyze_task(job: dict, limits: dict | None = None) -> dict[str, Any]:
    """Analyse one capture; returns ``{"requests", "connections", "pages": pa.Table}`` or
    ``{"errors": pa.Table}`` (one row).  Raises only OSError (for Dask to retry)."""
    from wirefall.analyzer.cache import code_fingerprint
    from wirefall.analyzer.keylog import load_keylog
    from wirefall.analyzer.pipeline import analyze
    from wirefall.analyzer.stats import compute
    from wirefall.analyzer.batch.inputs import sha256_file

    worker = _worker_name()
    base = _capture_cols(job)
    t0 = time.perf_counter()
    replaced = [0]
    try:
        keylog = load_keylog(job.get("keylogs") or [], use_env=False, limits=limits)
        an = analyze(job["path"], keylog=keylog, limits=limits, workers=1)
        st = compute(an)
        req = _table(request_rows(an, base), REQUESTS, replaced)
        conn = _table(connection_rows(an, st, base), CONNECTIONS, replaced)
        page = page_row(an, st, base)
        del an, st
    except CaptureError as e:
        return {"errors": pa.Table.from_pylist([error_row(job, "not_a_capture", str(e), worker)], schema=ERRORS)}
    except OSError:
        raise
    except Exception as e:  # noqa: BLE001 - an analyser bug on this capture: its row, and the batch goes on
        return {"errors": pa.Table.from_pylist([error_row(job, "analysis_failed", f"{type(e).__name__}: {e}", worker)], schema=ERRORS)}
    # the rows must be those of the bytes the client hashed (a ring buffer's current file grows)
    if job.get("sha256") and sha256_file(job["path"]) != job["sha256"]:
        return {"errors": pa.Table.from_pylist([error_row(job, "changed", "the capture changed while it was analysed; run the batch again", worker)],
                                               schema=ERRORS)}
    page.update({"text_replaced": replaced[0], "analysis_seconds": time.perf_counter() - t0, "analysed_at": _now_ms(),
                 "worker": worker, "wirefall_code": code_fingerprint()[:16]})
    return {"requests": req, "connections": conn, "pages": _table([page], PAGES, replaced)}


