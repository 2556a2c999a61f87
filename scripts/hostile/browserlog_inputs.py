"""Hostile browser logs (HAR, Chrome NetLog, qlog) for tests/test_browserlog.py.

Each function returns the bytes of one crafted log.  Every log that should be read holds
one normal request — ``GOOD_URL``, GET, 200 — beside the bad parts, so the test can check
that good data survives what is wrong around it.  Nothing here is committed as a blob.

    .venv/bin/python scripts/hostile/browserlog_inputs.py OUTDIR   # writes them all
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

GOOD_URL = "http://127.0.0.1:8080/good.txt"
T0 = "2026-12-01T10:00:00.000Z"


def _good_entry() -> dict:
    return {"startedDateTime": T0, "time": 12.0, "request": {"method": "GET", "url": GOOD_URL, "httpVersion": "HTTP/1.1",
            "headers": [{"name": "Host", "value": "127.0.0.1:8080"}], "cookies": [], "queryString": [], "headersSize": 60, "bodySize": 0},
            "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "headers": [{"name": "Content-Type", "value": "text/plain"}],
                         "cookies": [], "content": {"size": 5, "mimeType": "text/plain"}, "redirectURL": "", "headersSize": 40, "bodySize": 5},
            "cache": {}, "timings": {"blocked": 1, "dns": -1, "connect": 2, "send": 1, "wait": 5, "receive": 3},
            "serverIPAddress": "127.0.0.1", "connection": "7"}


def har_bad_types() -> bytes:
    """Entries of every wrong type and value around one good entry."""
    bad = [
        "not an entry", 17, None, [], {},
        {"startedDateTime": "yesterday", "request": {"url": "http://x/"}},
        {"startedDateTime": T0, "request": "GET /"},
        {"startedDateTime": T0, "request": {"method": 5, "url": ["http://x/"]}},
        {"startedDateTime": "9999-12-31T23:59:59.999Z", "request": {"method": "GET", "url": "http://x/far"},
         "response": {"status": 1e300, "headers": "nope", "content": []}, "timings": {"send": float("nan") if False else "1", "wait": -5, "receive": 1e308}},
        {"startedDateTime": T0, "request": {"method": "GET", "url": "http://[::1/bad", "headers": [{"name": 1, "value": {}}, "x", None]},
         "response": {"status": -1}, "timings": None, "serverIPAddress": ["a"], "connection": True, "_initiator": {"stack": {"callFrames": ["x", {"url": 3}]}}},
    ]
    d = {"log": {"version": "1.2", "creator": {"name": "hostile", "version": "1"}, "pages": ["x", {"startedDateTime": 5, "pageTimings": "z"}],
                 "entries": bad[:5] + [_good_entry()] + bad[5:]}}
    return json.dumps(d).encode()


def har_deep() -> bytes:
    """A HAR whose one entry nests 100 000 arrays deep (the JSON parser's recursion)."""
    return b'{"log": {"creator": {"name": "x"}, "entries": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}}"


def har_not_entries() -> bytes:
    return json.dumps({"log": {"creator": {"name": "x"}, "pages": [], "entries": {"0": _good_entry()}}}).encode()


def _netlog_constants() -> dict:
    names = ["REQUEST_ALIVE", "URL_REQUEST_START_JOB", "HTTP_STREAM_REQUEST_BOUND_TO_JOB", "HTTP_TRANSACTION_SEND_REQUEST",
             "HTTP_TRANSACTION_SEND_REQUEST_HEADERS", "HTTP_TRANSACTION_READ_RESPONSE_HEADERS", "HTTP_TRANSACTION_READ_BODY",
             "SOCKET_POOL_BOUND_TO_SOCKET", "TCP_CONNECT"]
    return {"logEventTypes": {n: i for i, n in enumerate(names)}, "logSourceType": {"NONE": 0, "URL_REQUEST": 1, "SOCKET": 10,
            "HTTP_STREAM_JOB": 17}, "logEventPhase": {"PHASE_NONE": 0, "PHASE_BEGIN": 1, "PHASE_END": 2},
            "timeTickOffset": 1796119200000, "netError": {"ERR_FAILED": -2}}


def _netlog_good_events() -> list[dict]:
    c = _netlog_constants()["logEventTypes"]
    R, J, S = {"id": 5, "type": 1}, {"id": 6, "type": 17}, {"id": 7, "type": 10}
    ev = lambda t, typ, src, ph, **p: {"time": str(t), "type": c[typ], "source": src, "phase": ph, "params": p}
    return [
        ev(100, "TCP_CONNECT", S, 1, address_list=["127.0.0.1:8080"]),
        ev(101, "TCP_CONNECT", S, 2, local_address="127.0.0.1:40000", remote_address="127.0.0.1:8080"),
        ev(102, "REQUEST_ALIVE", R, 1, priority="HIGHEST", url=GOOD_URL),
        ev(102, "URL_REQUEST_START_JOB", R, 1, method="GET", url=GOOD_URL, initiator="not an origin"),
        ev(102, "HTTP_STREAM_REQUEST_BOUND_TO_JOB", R, 0, source_dependency={"id": 6, "type": 17}),
        ev(102, "SOCKET_POOL_BOUND_TO_SOCKET", J, 0, source_dependency={"id": 7, "type": 10}),
        ev(103, "HTTP_TRANSACTION_SEND_REQUEST", R, 1),
        ev(103, "HTTP_TRANSACTION_SEND_REQUEST_HEADERS", R, 0, line="GET /good.txt HTTP/1.1\r\n", headers=["Host: 127.0.0.1:8080"]),
        ev(103, "HTTP_TRANSACTION_SEND_REQUEST", R, 2),
        ev(105, "HTTP_TRANSACTION_READ_RESPONSE_HEADERS", R, 0, headers=["HTTP/1.1 200 OK", "Content-Type: text/plain"]),
        ev(106, "HTTP_TRANSACTION_READ_BODY", R, 1),
        ev(107, "HTTP_TRANSACTION_READ_BODY", R, 2),
        ev(107, "REQUEST_ALIVE", R, 2),
    ]


def netlog_text(events: list, close: bool = True) -> str:
    """A NetLog as Chromium writes it: constants, then one event a line."""
    s = '{"constants":' + json.dumps(_netlog_constants()) + ',\n"events": [\n' + ",\n".join(json.dumps(e) for e in events)
    return s + ("\n]}\n" if close else ",\n")


def netlog_bad_events() -> bytes:
    """Malformed events (not objects, no source, unknown type ids, params not an object,
    times of the wrong type, a request bound to a socket that does not exist) around one
    good request."""
    c = _netlog_constants()["logEventTypes"]
    bad = ["x", 3, None, [], {}, {"time": "1", "type": 999, "source": {"id": 1, "type": 1}, "phase": 1},
           {"time": [1], "type": c["URL_REQUEST_START_JOB"], "source": {"id": 9, "type": 1}, "phase": 1, "params": {"url": 5}},
           {"time": "100", "type": c["URL_REQUEST_START_JOB"], "source": "me", "phase": 1},
           {"time": "100", "type": c["URL_REQUEST_START_JOB"], "source": {"id": 11, "type": 1}, "phase": 1, "params": "p"},
           {"time": "100", "type": c["HTTP_STREAM_REQUEST_BOUND_TO_JOB"], "source": {"id": 12, "type": 1}, "phase": 0,
            "params": {"source_dependency": {"id": "x"}}},
           {"time": "1e400", "type": c["TCP_CONNECT"], "source": {"id": 13, "type": 10}, "phase": 2,
            "params": {"local_address": "::::::", "remote_address": "1.2.3.4:99999"}}]
    good = _netlog_good_events()
    return netlog_text(bad[:6] + good[:7] + bad[6:] + good[7:]).encode()


def netlog_cut(at: str = "inside") -> bytes:
    """The good NetLog cut short as a killed browser leaves it: ``inside`` an event after
    the good request's last one, ``after`` a whole event (a trailing comma), ``constants``
    inside the constants (nothing can be named: an error)."""
    good = _netlog_good_events()
    if at == "constants":
        return netlog_text(good)[:40].encode()
    s = netlog_text(good + [good[0]], close=False)
    if at == "inside":
        s = s.rstrip(",\n")
        s = s[: len(s) - 25]
    return s.encode()


def qlog_seq_bad() -> bytes:
    """JSON-SEQ qlog: bad records (not JSON, not objects, events without time or name,
    frames of wrong types), one good request on stream 0, and a last record cut short."""
    hdr = {"qlog_version": "0.3", "qlog_format": "JSON-SEQ", "title": "hostile",
           "trace": {"vantage_point": {"type": "client", "name": "hostile"}, "common_fields": {"reference_time": 1796119200000.0, "time_format": "relative"}}}
    good = [
        {"time": 1.0, "name": "transport:packet_sent", "data": {"header": {"packet_type": "initial", "scid": "aa", "dcid": "bb"}, "frames": [{"frame_type": "crypto"}]}},
        {"time": 2.0, "name": "http:frame_created", "data": {"stream_id": 0, "frame": {"frame_type": "headers", "headers": [
            {"name": ":method", "value": "GET"}, {"name": ":scheme", "value": "http"}, {"name": ":authority", "value": "127.0.0.1:8080"},
            {"name": ":path", "value": "/good.txt"}]}}},
        {"time": 5.0, "name": "http:frame_parsed", "data": {"stream_id": 0, "frame": {"frame_type": "headers", "headers": [{"name": ":status", "value": "200"}]}}},
        {"time": 6.0, "name": "http:frame_parsed", "data": {"stream_id": 0, "length": 5, "frame": {"frame_type": "data"}}},
    ]
    bad = ["{not json", "[1,2", "17", "null", json.dumps({"name": "http:frame_created"}), json.dumps({"time": "x", "name": 5}),
           json.dumps({"time": 3.0, "name": "http:frame_created", "data": {"stream_id": "0", "frame": {"frame_type": "headers", "headers": "h"}}}),
           json.dumps({"time": 3.0, "name": "http:frame_parsed", "data": {"stream_id": 4, "frame": {"frame_type": "headers", "headers": [5, None]}}}),
           json.dumps({"time": 3.0, "name": "transport:packet_received", "data": {"frames": "x", "header": []}})]
    recs = [json.dumps(hdr)] + bad[:4] + [json.dumps(g) for g in good[:2]] + bad[4:] + [json.dumps(g) for g in good[2:]]
    return ("".join("\x1e" + r + "\n" for r in recs) + '\x1e{"time": 9.0, "name": "http:fra').encode()


def gzip_bomb(size: int = 64 << 20) -> bytes:
    """A gzip'd HAR that inflates to ``size`` bytes (past a small ``browserlog_bytes``)."""
    head = b'{"log": {"creator": {"name": "x"}, "entries": [], "pad": "'
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [c.compress(head)]
    chunk = b" " * (1 << 20)
    for _ in range(size >> 20):
        out.append(c.compress(chunk))
    out.append(c.compress(b'"}}'))
    out.append(c.flush())
    return b"".join(out)


ALL = {"har_bad_types.har": har_bad_types, "har_deep.har": har_deep, "har_not_entries.har": har_not_entries,
       "netlog_bad_events.json": netlog_bad_events, "netlog_cut_inside.json": lambda: netlog_cut("inside"),
       "netlog_cut_after.json.gz": lambda: gzip.compress(netlog_cut("after"), mtime=0),
       "netlog_cut_constants.json": lambda: netlog_cut("constants"), "qlog_seq_bad.sqlog": qlog_seq_bad,
       "har_bomb.har.gz": gzip_bomb}


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, f in ALL.items():
        (out / name).write_bytes(f())
        print(out / name)
