"""qlog (draft-ietf-quic-qlog-main-schema, the QUIC and HTTP/3 event schemas) as a
``BrowserLog``: one connection per trace, one request per HTTP/3 request stream.

Forms read: JSON (``{"qlog_version", "traces": [{"vantage_point", "common_fields",
"events"}]}``, as aioquic's ``QuicFileLogger`` writes it), JSON-SEQ (RFC 7464 records, each
after an RS byte: the header record with one ``trace``, then one event a record, as quiche
and ngtcp2 write it; a record cut short at the end is dropped with a warning), and the
older draft form whose events are lists named by ``event_fields``.  Event names are
``category:event`` (``transport:``/``quic:``, ``http:``/``h3:``/``http3:``) or separate ``category``
and ``event`` keys.  Times are milliseconds: ``relative`` to ``common_fields.reference_time``
(epoch ms), ``delta`` from the previous event, or absolute (epoch ms, aioquic).

From the client's point of view (``vantage_point.type`` client; a server's log is read
with the roles turned): an HTTP/3 HEADERS ``frame_created`` on a request stream is the
request (send start; the packet that first carried the client's STREAM frame with ``fin``
on that stream is the send end — or, with no ``fin``, the first to carry its highest offset
—, and the DATA ``frame_created`` lengths are the request body), the HEADERS ``frame_parsed``
the response (its status, response start), and the STREAM frame with ``fin`` (or the last
DATA frame parsed) its end.  A DATA frame's length is the event's ``length`` (qlog 0.3,
aioquic, quiche), ``raw.payload_length`` or, in the later drafts, ``frame.raw.payload_length``;
a STREAM frame's is its ``length`` or ``raw.payload_length``/``raw.length`` (later drafts).  The connection: the
addresses of ``connection_started`` when given (aioquic gives none), the connection IDs
(``common_fields.ODCID``, the packets' ``scid``/``dcid``) that tell a capture's QUIC
connection, the first Initial sent as its start and the client's Handshake packet with
CRYPTO (its Finished) as the end of the handshake, as wirefall times it on the wire.
"""
from __future__ import annotations

import json
from typing import Any

from .detect import BrowserLogError, read_text
from .records import BrowserLog, obj, LogConnection, LogRequest, integer, num, strip_brackets, text

MAX_EVENTS = 20_000_000


def read(path: str, limits: dict | None = None) -> BrowserLog:
    lim = limits or {}
    s, comp, warnings = read_text(path, **({"limit": lim["browserlog_bytes"]} if lim.get("browserlog_bytes") else {}))
    log = BrowserLog("qlog", path, compression=comp)
    log.warnings.extend(warnings)
    traces = _traces(s, path, log, lim.get("browserlog_events", MAX_EVENTS))
    if not traces:
        raise BrowserLogError(f"{path}: qlog holds no trace")
    for i, tr in enumerate(traces):
        _trace(log, i, tr)
    return log


def _traces(s: str, path: str, log: BrowserLog, max_events: int) -> list[dict]:
    st = s.lstrip(" \t\r\n\ufeff")  # not str.lstrip(): it takes the RS byte for whitespace
    if st.startswith("\x1e"):
        recs = st.split("\x1e")[1:]
        header = None
        events: list = []
        bad = 0
        for i, rec in enumerate(recs):
            rec = rec.strip()
            if not rec:
                continue
            try:
                o = json.loads(rec)
            except RecursionError:
                bad += 1
                continue
            except ValueError:
                if i == len(recs) - 1:
                    log.warnings.append("qlog JSON-SEQ cut off inside its last record: that record is left out")
                else:
                    bad += 1
                continue
            if header is None and isinstance(o, dict) and ("qlog_version" in o or "trace" in o):
                header = o
                continue
            if len(events) >= max_events:
                log.warnings.append(f"qlog has more than {max_events} events; the rest left out (limits['browserlog_events'])")
                break
            events.append(o)
        if bad:
            log.warnings.append(f"qlog: {bad} malformed records left out")
            log.skipped += bad
        if header is None:
            raise BrowserLogError(f"{path}: qlog JSON-SEQ without its header record")
        log.creator = _creator(header)
        tr: dict = dict(header["trace"]) if isinstance(header.get("trace"), dict) else {}
        tr["events"] = events
        return [tr]
    try:
        d = json.loads(s)
    except RecursionError:
        raise BrowserLogError(f"{path}: qlog nested too deeply to read") from None
    except ValueError as e:
        raise BrowserLogError(f"{path}: qlog is not valid JSON ({e})") from None
    if not isinstance(d, dict):
        raise BrowserLogError(f"{path}: not a qlog (not a JSON object)")
    log.creator = _creator(d)
    traces = d.get("traces")
    if isinstance(d.get("trace"), dict):
        traces = [d["trace"]]
    if not isinstance(traces, list):
        raise BrowserLogError(f"{path}: not a qlog: no traces")
    out = []
    n = 0
    for tr in traces:
        if isinstance(tr, dict) and isinstance(tr.get("events"), list):
            if n + len(tr["events"]) > max_events:
                log.warnings.append(f"qlog has more than {max_events} events; the rest left out (limits['browserlog_events'])")
                tr = dict(tr, events=tr["events"][: max(max_events - n, 0)])
            n += len(tr["events"])
            out.append(tr)
    return out


def _creator(d: dict) -> str:
    ver = text(d.get("qlog_version"), 20) or "?"
    tr = d.get("trace") if isinstance(d.get("trace"), dict) else None
    if tr is None and isinstance(d.get("traces"), list) and d["traces"] and isinstance(d["traces"][0], dict):
        tr = d["traces"][0]
    vp: dict = tr["vantage_point"] if isinstance(tr, dict) and isinstance(tr.get("vantage_point"), dict) else {}
    name = text(vp.get("name"), 80) or text(d.get("title"), 80)
    return f"{name + ' ' if name else ''}qlog {ver}"


def _event(e: Any, fields: list[str] | None) -> tuple[float | None, str | None, dict[str, Any]]:
    """(time ms as written, "category:event", data) of one event in any of the forms."""
    if isinstance(e, list) and fields:
        e = dict(zip(fields, e))
    if not isinstance(e, dict):
        return None, None, {}
    name = e.get("name")
    if not isinstance(name, str):
        cat, ev = e.get("category"), e.get("event")
        name = f"{cat}:{ev}" if isinstance(cat, str) and isinstance(ev, str) else None
    t = num(e.get("time"))
    if t is None:
        t = num(e.get("relative_time"))
        if t is None:
            t = num(e.get("delta_time"))
    data = e.get("data")
    return t, name, data if isinstance(data, dict) else {}


def _length(v: Any, raw: Any, raw_total: str | None) -> int | None:
    """A byte count given as ``v`` or in a RawInfo ``raw`` (its ``payload_length``, else its
    ``raw_total`` field when named); None when none is a count ≥ 0 (0 is a count: an empty
    DATA frame)."""
    n = integer(v)
    if n is None and isinstance(raw, dict):
        n = integer(raw.get("payload_length"))
        if n is None and raw_total:
            n = integer(raw.get(raw_total))
    return n if n is not None and n >= 0 else None


def _trace(log: BrowserLog, idx: int, tr: dict) -> None:
    cf: dict = tr["common_fields"] if isinstance(tr.get("common_fields"), dict) else {}
    cfg: dict = tr["configuration"] if isinstance(tr.get("configuration"), dict) else {}
    vp: dict = tr["vantage_point"] if isinstance(tr.get("vantage_point"), dict) else {}
    role = text(vp.get("type"), 20) or "client"
    if role == "network":
        role = "client" if text(vp.get("flow"), 20) != "server" else "server"
    client_side = role != "server"
    ref = num(cf.get("reference_time"))
    if ref is None and isinstance(cf.get("reference_time"), dict):  # newer drafts: {"clock_type", "epoch", …}
        ref = None
    fmt = (text(cf.get("time_format"), 20) or "").lower()
    off = num(cfg.get("time_offset")) or 0.0
    fields = tr.get("event_fields") if isinstance(tr.get("event_fields"), list) else None
    if ref is None and fields and "relative_time" in fields:
        log.warnings.append("qlog trace without reference_time: relative times taken as epoch milliseconds")
    key = f"trace {idx}"
    c = LogConnection(key, "udp", protocol="h3", alpn="h3")
    odcid = text(cf.get("ODCID"), 80) or text(cf.get("group_id"), 80)
    cids: set[str] = set()
    if odcid:
        c.dcid = odcid
        cids.add(odcid.lower())
    streams: dict[int, LogRequest] = {}
    # the client's side of each request stream: when the STREAM frame with fin was first sent,
    # and (no fin logged) the highest end offset and when it was first sent — a retransmission
    # sends the same bytes again, later, and is not the request's end (as on the wire)
    fin_sent: dict[int, float] = {}
    sent_end: dict[int, tuple[int, float]] = {}
    fin_recv: dict[int, float] = {}
    last_data: dict[int, float] = {}
    prev = 0.0
    bad = 0
    for e in tr.get("events", ()):
        t_raw, name, data = _event(e, fields)
        if t_raw is None or name is None:
            bad += 1
            continue
        if fmt == "delta":
            prev += t_raw
            ms = prev
        else:
            ms = t_raw
        if ref is not None and fmt != "absolute":
            ms += ref
        t = (ms + off) / 1000.0
        cat, _, ev = name.partition(":")
        if cat in ("transport", "quic", "connectivity"):
            if ev == "connection_started":
                src = (strip_brackets(data.get("src_ip")), integer(data.get("src_port")))
                dst = (strip_brackets(data.get("dst_ip")), integer(data.get("dst_port")))
                loc, rem = data.get("local"), data.get("remote")  # newer drafts
                if isinstance(loc, dict) and isinstance(rem, dict):
                    src = (strip_brackets(loc.get("ip_v4") or loc.get("ip_v6")), integer(loc.get("port_v4") or loc.get("port_v6")))
                    dst = (strip_brackets(rem.get("ip_v4") or rem.get("ip_v6")), integer(rem.get("port_v4") or rem.get("port_v6")))
                ok = lambda a: a if a[0] and a[1] is not None and 0 <= a[1] < 65536 else None
                a, b = ok(src), ok(dst)
                c.client, c.server = (a, b) if client_side else (b, a)
                for k in ("src_cid", "dst_cid"):
                    if text(data.get(k), 80):
                        cids.add(data[k].lower())
                if c.connect_start is None:
                    c.connect_start = t
            elif ev in ("packet_sent", "packet_received"):
                sent = ev == "packet_sent"
                hdr = obj(data.get("header"))
                ptype = text(hdr.get("packet_type"), 20)
                for k in ("scid", "dcid"):
                    v = text(hdr.get(k), 80)
                    if v:
                        cids.add(v.lower())
                from_client = sent == client_side
                if ptype == "initial" and from_client and c.connect_start is None:
                    c.connect_start = t
                frames = data.get("frames")
                if not isinstance(frames, list):
                    continue
                for f in frames:
                    if not isinstance(f, dict):
                        continue
                    ft = f.get("frame_type")
                    if ft == "crypto" and ptype == "handshake" and from_client and c.connect_end is None:
                        c.connect_end = t
                    elif ft == "stream":
                        sid = integer(f.get("stream_id"))
                        if sid is None or sid & 0x2:  # unidirectional: control, QPACK
                            continue
                        if from_client:
                            if f.get("fin") is True:
                                fin_sent.setdefault(sid, t)
                            at = max(integer(f.get("offset")) or 0, 0)  # (later drafts: offset defaults to 0)
                            n = _length(f.get("length"), f.get("raw"), "length")
                            was = sent_end.get(sid)
                            if n is None:  # no length logged: the last frame sent
                                sent_end[sid] = (was[0] if was else at, t)
                            elif was is None or at + n > was[0]:
                                sent_end[sid] = (at + n, t)
                        elif f.get("fin") is True:
                            fin_recv[sid] = t
            elif ev == "version_information" and c.quic_version is None:
                ver = integer(data.get("chosen_version"))
                c.quic_version = None if ver is None else {1: "RFCv1", 0x6B3343CF: "RFCv2"}.get(ver, f"0x{ver:08x}")
        elif cat in ("http", "h3", "http3"):
            if ev not in ("frame_created", "frame_parsed"):
                continue
            sid = integer(data.get("stream_id"))
            fr = obj(data.get("frame"))
            ft = fr.get("frame_type")
            if sid is None or sid & 0x2:
                continue
            from_client = (ev == "frame_created") == client_side
            if ft == "headers":
                pairs = [(text(h.get("name"), 8192), text(h.get("value"), 1 << 16)) for h in fr.get("headers", ()) if isinstance(h, dict)] \
                    if isinstance(fr.get("headers"), list) else []
                hs: list[tuple[str, str]] = [(k, v) for k, v in pairs if k is not None and v is not None]
                r = streams.get(sid)
                if from_client:
                    if r is None:
                        r = streams[sid] = LogRequest(id=f"{idx}:{sid}", connection=key, stream_id=sid, protocol="h3")
                        log.requests.append(r)
                    if r.send_start is None:
                        r.start = r.send_start = t
                        r.request_headers = hs
                        d = dict(hs)
                        r.method = d.get(":method")
                        scheme, auth, path = d.get(":scheme") or "https", d.get(":authority"), d.get(":path")
                        r.url = f"{scheme}://{auth}{path}" if auth and path else None
                        if auth and c.host is None:
                            c.host = auth.rsplit(":", 1)[0] if not auth.startswith("[") else auth[1:].split("]", 1)[0]
                elif r is not None:
                    st = integer(dict(hs).get(":status"))
                    if st is not None and (st >= 200 or r.status is None):
                        if r.response_start is None or (r.status is not None and r.status < 200):
                            r.response_start = t
                        r.status = st
                        r.response_headers = hs
                        ct = dict(hs).get("content-type")
                        r.content_type = ct.split(";")[0].strip() if ct else None
                    elif st is None:  # trailers
                        pass
            elif ft == "data":
                r = streams.get(sid)
                if r is not None:
                    n = _length(data.get("length"), data.get("raw"), None)
                    if n is None:
                        n = _length(None, fr.get("raw"), None)
                    if from_client:  # the request body (an upload: POST, PUT …)
                        if n is not None:
                            r.request_body_bytes = (r.request_body_bytes or 0) + n
                    else:
                        if n is not None:
                            r.response_body_bytes = (r.response_body_bytes or 0) + n
                        last_data[sid] = t
    if bad:
        log.skipped += bad
        log.warnings.append(f"qlog trace {idx}: {bad} malformed events left out")
    for sid, r in streams.items():
        last = fin_sent.get(sid, sent_end[sid][1] if sid in sent_end else None)
        r.send_end = max(last, r.send_start) if last is not None and r.send_start is not None else r.send_start
        if r.response_start is not None:
            ends = [x for x in (fin_recv.get(sid), last_data.get(sid)) if x is not None]
            r.response_end = max(ends) if ends else r.response_start
            r.response_body_decoded_bytes = r.response_body_bytes
    c.scid = next((x for x in sorted(cids) if x != (c.dcid or "").lower()), None) if cids else None
    log.connections[key] = c
    log.cids[key] = cids
