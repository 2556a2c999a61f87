"""A Chrome NetLog's requests that never reached the network, read with json alone (no
wirefall): the outside truth of the tests of their rows and views."""
from __future__ import annotations

import gzip
import json
from pathlib import Path


def netlog_unsent(path: Path) -> dict[str, dict]:
    """The NetLog's URL requests that sent no request (no ``…SEND_REQUEST…`` event): source id ->
    {url, method, start (epoch s), cache (read the HTTP cache, no error), reason ("cache", else
    "failed"), error (the netError name REQUEST_ALIVE ended with, by the log's own
    constants.netError), body (the bytes its job read)}."""
    d = json.loads(gzip.decompress(path.read_bytes()))
    c = d["constants"]
    ev = {v: k for k, v in c["logEventTypes"].items()}
    src = {v: k for k, v in c["logSourceType"].items()}
    errors = {v: k for k, v in c["netError"].items()}
    off = float(c["timeTickOffset"])
    reqs: dict[int, dict] = {}
    for e in d["events"]:
        if src.get(e["source"]["type"]) != "URL_REQUEST":
            continue
        r = reqs.setdefault(e["source"]["id"], {"sent": False, "cache": False, "error": None, "body": 0})
        name, p = ev[e["type"]], e.get("params") or {}
        if name == "REQUEST_ALIVE" and e["phase"] == 1:
            r["start"], r["url"] = (int(e["time"]) + off) / 1000.0, p["url"]
        elif name == "REQUEST_ALIVE" and e["phase"] == 2 and p.get("net_error"):
            r["error"] = errors[p["net_error"]]
        elif name == "URL_REQUEST_START_JOB" and e["phase"] == 1:
            r.setdefault("method", p["method"])
        elif "SEND_REQUEST" in name:
            r["sent"] = True
        elif name.startswith("HTTP_CACHE_READ_"):
            r["cache"] = True
        elif name == "URL_REQUEST_JOB_FILTERED_BYTES_READ":
            r["body"] += p["byte_count"]
    out = {}
    for sid, r in reqs.items():
        if not r["sent"]:
            cache = r["cache"] and r["error"] is None
            out[str(sid)] = dict(url=r["url"], method=r["method"], start=r["start"], error=r["error"], body=r["body"],
                                 cache=cache, reason="cache" if cache else "failed")
    return out
