"""Review 27: compare gives no speedup of a side whose page is incomplete, and says why a row is
unmatched — each checked against outside truth (tshark's frames and streams, the NetLog's own
events).

1. a capture cut short (editcap -r … 1-50 / 1-100): its page load time is the cut file's last
   packet (tshark's last frame) and is shown as a lower bound ("≥"), never as a speedup;
   `comparable` is false and `withheld` says why; the responses tshark shows never began or never
   ended on their stream are the side's `responses_missing` / `responses_cut`, and a cut
   response has no duration ("–"), not its TTFB;
2. a side partly decrypted (its key log without half its client randoms): incomplete too, and the
   other side's rows unmatched say the URL may be on its undecrypted connections (tshark with the
   whole key log: they are);
3. a NetLog request that never reached the network (disk cache, failed): its unmatched reason is
   the browser's (the NetLog's events: no HTTP_TRANSACTION_SEND_REQUEST; a cache read or a net
   error), never "no request for this URL in A".
"""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES, need_tool, run_tool, shared
from wirefall.analyzer.compare import compare, render_text
from wirefall.analyzer.pipeline import analyze

PAGE = SAMPLES / "page"


def _need(*paths: Path) -> None:
    for p in paths:
        if not p.exists():
            pytest.skip(f"{p} not present")


def _an(cap: Path, keys: Path | None):
    return analyze(str(cap), keylogs=[str(keys)] if keys else None)


def _cut(tmp_path: Path, proto: str, frames: str) -> tuple[Path, Path]:
    """page-PROTO.pcapng cut to ``frames`` by editcap, its key log beside it."""
    need_tool("editcap")
    src, keys = PAGE / f"page-{proto}.pcapng", PAGE / f"page-{proto}.keys"
    _need(src, keys)
    out = tmp_path / f"{proto}cut.pcapng"
    run_tool("editcap", "-r", str(src), str(out), frames)
    shutil.copy(keys, tmp_path / f"{proto}cut.keys")
    return out, tmp_path / f"{proto}cut.keys"


def _fields(cap: Path, keys: Path | None, flt: str, *fields: str) -> list[list[str]]:
    opts = ["-o", f"tls.keylog_file:{keys}"] if keys else []
    out = run_tool("tshark", "-r", str(cap), *opts, "-Y", flt, "-T", "fields", "-E", "separator=\t", "-E", "aggregator=|",
                   *[x for f in fields for x in ("-e", f)])
    return [ln.split("\t") for ln in out.splitlines() if ln.strip()]


def _last_frame(cap: Path) -> tuple[int, float]:
    rows = _fields(cap, None, "frame", "frame.number", "frame.time_epoch")
    return int(rows[-1][0]), float(rows[-1][1])


def _sides(res: dict, s: str) -> list[dict]:
    """Every page exchange of side ``s`` (matched and unmatched) as its Side."""
    return [m[s] for m in res["matched"]] + res[f"only_{s}"]


def test_h2_cut_is_a_lower_bound_not_a_speedup(tmp_path):
    """page-h1 against page-h2 cut to its first 50 frames: B's page load time is tshark's frame 50
    (the last of the cut file) from B's page start, shown "≥" and given no difference or speedup;
    B's missing and cut responses are tshark's streams without a :status and without END_STREAM."""
    need_tool("tshark")
    cut, ckeys = _cut(tmp_path, "h2", "1-50")
    _need(PAGE / "page-h1.pcapng", PAGE / "page-h1.keys")
    res = compare(_an(PAGE / "page-h1.pcapng", PAGE / "page-h1.keys"), _an(cut, ckeys))
    n, t_last = _last_frame(cut)
    assert n == 50
    pl = res["page"]["page_load_time"]
    assert pl["b"] == pytest.approx(t_last - res["b"]["page_start"], abs=1e-6)  # (the cut file's last packet)
    assert pl["diff"] is None and pl["speedup"] is None
    assert res["comparable"] is False
    assert [(w["side"], w["kind"]) for w in res["withheld"]] == [("b", "incomplete")]
    assert "page_load_time" in res["lower_bounds"]["b"] and "requests" in res["lower_bounds"]["b"]
    assert res["lower_bounds"]["a"] == [] and res["a"]["page_complete"] is True and res["b"]["page_complete"] is False
    assert all(row["diff"] is None and row["speedup"] is None for row in res["page"].values())

    # tshark: HEADERS with :method (request), HEADERS with :status (response), END_STREAM on the response
    rows = _fields(cut, ckeys, "http2.type == 1", "http2.streamid", "http2.header.name", "http2.flags.end_stream")
    req, resp, ended = set(), set(), set()
    for sids, names, fins in rows:
        for sid, fin in zip(sids.split("|"), fins.split("|")):
            if ":method" in names.split("|"):
                req.add(int(sid))
            if ":status" in names.split("|"):
                resp.add(int(sid))
                if fin == "1":
                    ended.add(int(sid))
    for sids, fins in _fields(cut, ckeys, "http2.type == 0", "http2.streamid", "http2.flags.end_stream"):
        ended |= {int(s) for s, f in zip(sids.split("|"), fins.split("|")) if f == "1"}
    missing, cut_streams = req - resp, resp - ended
    assert len(missing) == 4 and len(cut_streams) == 1  # (the reviewer's: 4 responses never arrived, hero.jpg cut)
    by_id = {s["exchange"]: s for s in _sides(res, "b")}
    assert {by_id[x]["stream_id"] for x in res["b"]["responses_missing"]} == missing
    assert {by_id[x]["stream_id"] for x in res["b"]["responses_cut"]} == cut_streams
    for s in by_id.values():
        state = "none" if s["stream_id"] in missing else "cut" if s["stream_id"] in cut_streams else "complete"
        assert s["response"] == state, s
        if state != "complete":
            assert s["duration"] is None, s  # ("–": its end is not in the capture)
    # A's rows whose URL B never requested in what the cut holds: B's page is incomplete, said so
    assert res["only_a"] and all("whose page is incomplete" in e["reason"] for e in res["only_a"])

    text = render_text(res)
    line = next(ln for ln in text.splitlines() if ln.startswith("page load time"))
    assert f"≥ {t_last - res['b']['page_start']:.3f}" in line and "withheld: B incomplete" in line and "%" not in line
    assert "no difference or saving given: B's page is incomplete (" in text
    assert f"its last packet: {t_last - res['b']['page_start']:.3f} s from the page's start" in text
    assert "INCOMPLETE" in text.splitlines()[1]


def test_spdy_cut_response_has_no_duration(tmp_path):
    """page-spdy cut to its first 100 frames: tshark's SPDY dissector shows which streams got a
    SYN_REPLY and which ended (FIN); those without a reply are `responses_missing`, the one replied
    to and not ended (hero.jpg) is `responses_cut`, its duration "–" — not its TTFB (44.5 ms)."""
    need_tool("tshark")
    cut, ckeys = _cut(tmp_path, "spdy", "1-100")
    full = _an(PAGE / "page-spdy.pcapng", PAGE / "page-spdy.keys")
    res = compare(full, _an(cut, ckeys))
    req, resp, ended = set(), set(), set()
    for sids, types, fins in _fields(cut, ckeys, "spdy", "spdy.streamid", "spdy.type", "spdy.flags.fin"):
        ts, fs = types.split("|"), fins.split("|")
        for k, sid in enumerate(x for x in sids.split("|") if x):
            typ = ts[k] if k < len(ts) else ""
            fin = fs[k] if k < len(fs) else ""
            if typ == "1":
                req.add(int(sid))
            elif typ == "2":
                resp.add(int(sid))
            if fin == "1" and typ != "1":
                ended.add(int(sid))
    req.discard(0)
    missing, cut_streams = req - resp, resp - ended
    assert missing and len(cut_streams) == 1
    by_id = {s["exchange"]: s for s in _sides(res, "b")}
    assert {by_id[x]["stream_id"] for x in res["b"]["responses_missing"]} == missing
    assert {by_id[x]["stream_id"] for x in res["b"]["responses_cut"]} == cut_streams
    (hero,) = [m for m in res["matched"] if m["b"]["stream_id"] in cut_streams]
    assert hero["url"].endswith("/img/hero.jpg")
    assert hero["b"]["ttfb"] == pytest.approx(hero["a"]["ttfb"], abs=1e-6) and hero["b"]["ttfb"] > 0.04
    assert hero["b"]["duration"] is None and hero["diff"]["duration"] is None and hero["b"]["response"] == "cut"
    assert hero["diff"]["bytes"] is None  # (its bytes are the capture's, not the response's: no B − A)
    assert hero["a"]["duration"] is not None and hero["a"]["response"] == "complete"
    assert res["comparable"] is False and res["page"]["page_load_time"]["speedup"] is None
    # the cut file's last packet bounds B's page load time from above (its last response byte is in it)
    _n, t_last = _last_frame(cut)
    assert res["page"]["page_load_time"]["b"] <= t_last - res["b"]["page_start"] + 1e-6
    row = next(ln for ln in render_text(res).splitlines() if ln.startswith("https://") and "/img/hero.jpg" in ln)
    assert row.split()[6] == "–" and "≥" in row  # (dur B "–", bytes B a lower bound)


def test_partly_decrypted_side_is_incomplete(tmp_path):
    """page-h1 with a key log lacking the client randoms of three of its six connections (tshark's
    ClientHellos): A is incomplete (no speedup, its load time a lower bound), and B's rows without
    a partner are exactly the URLs tshark, given the whole key log, shows on those three
    connections — their reason says the URL may be there."""
    need_tool("tshark")
    src, keys = PAGE / "page-h1.pcapng", PAGE / "page-h1.keys"
    _need(src, keys)
    hellos = _fields(src, None, "tls.handshake.type == 1", "tcp.stream", "tls.handshake.random")
    assert len(hellos) == 6
    dropped = {int(s): r for s, r in hellos[0::2]}  # (the first connection among them: the page's start)
    cap = tmp_path / "h1half.pcapng"
    shutil.copy(src, cap)
    half = tmp_path / "h1half.keys"
    half.write_text("".join(ln for ln in keys.read_text().splitlines(True) if not any(r in ln for r in dropped.values())))
    res = compare(_an(cap, half), _an(src, keys))
    # tshark with the half key log decrypts HTTP on the other three streams only
    seen = {int(s) for (s,) in _fields(cap, half, "http", "tcp.stream")}
    assert seen == {int(s) for s, _r in hellos} - set(dropped)
    assert len(res["a"]["not_decrypted"]) == len(dropped) == 3
    assert res["comparable"] is False and res["a"]["page_complete"] is False
    assert [(w["side"], w["kind"]) for w in res["withheld"]] == [("a", "incomplete")]
    assert "3 connections not decrypted" in res["withheld"][0]["text"]
    assert "page_load_time" in res["lower_bounds"]["a"]
    assert all(row["speedup"] is None for row in res["page"].values())
    # the URLs tshark shows (whole key log) on the connections A could not decrypt
    there = {u for s, u in _fields(src, keys, "http.request", "tcp.stream", "http.request.full_uri") if int(s) in dropped}
    assert {e["url"] for e in res["only_b"]} == there
    assert all(e["reason"] == "no request for this URL in what A shows: A has 3 connections not decrypted: the URL may be there"
               for e in res["only_b"])
    assert not res["only_a"]


def test_background_mixed_undecrypted_page_connection(tmp_path):
    """bg-mixed with its key log: one TLS connection's client random is in no line of the key log
    (tshark's ClientHellos against bg-mixed.keys); it is the page's (static.test), so the page is
    incomplete and compare gives no difference (tests/test_compare_truth19.py relies on it)."""
    need_tool("tshark")
    cap, keys = PAGE / "bg-mixed.pcapng", PAGE / "bg-mixed.keys"
    _need(cap, keys)
    text = keys.read_text()
    hellos = _fields(cap, None, "tls.handshake.type == 1", "tls.handshake.random", "tls.handshake.extensions_server_name")
    lacking = [sni for r, sni in hellos if r not in text]
    assert lacking == ["static.test"]
    an = _an(cap, keys)
    res = compare(an, an)
    assert len(res["a"]["not_decrypted"]) == 1 and res["comparable"] is False
    assert {w["side"] for w in res["withheld"]} == {"a", "b"}


def test_netlog_not_sent_reason(tmp_path):
    """amazon1's capture against its NetLog: the NetLog's URL requests that never sent a request
    (no HTTP_TRANSACTION_SEND_REQUEST event) are B's rows with the browser's reason — read from the
    same events: a cache read (HTTP_CACHE_READ_DATA) "from the disk cache", else the net error
    REQUEST_ALIVE ended with — and none says "no request for this URL in A" (A requests
    favicon.ico itself: tshark)."""
    need_tool("tshark")
    d = shared("pageload-amazon")
    from conftest import unpack_amazon

    cap, keys = unpack_amazon(tmp_path)
    nl = d / "amazon1_netlog.json.gz"
    log = json.loads(gzip.decompress(nl.read_bytes()))
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    errors = {v: k for k, v in log["constants"]["netError"].items()}
    by_src: dict[int, list[dict]] = {}
    for ev in log["events"]:
        by_src.setdefault(ev["source"]["id"], []).append(ev)
    truth = {}
    for evs in by_src.values():
        kinds = [names.get(e["type"]) for e in evs]
        url = next((e["params"]["url"] for e in evs if names.get(e["type"]) == "REQUEST_ALIVE" and (e.get("params") or {}).get("url")), None)
        if url is None or "URL_REQUEST_START_JOB" not in kinds or "HTTP_TRANSACTION_SEND_REQUEST" in kinds:
            continue
        if "HTTP_CACHE_READ_DATA" in kinds:
            truth[url] = "not sent by the browser (from the disk cache)"
        else:
            code = next(e["params"]["net_error"] for e in evs if names.get(e["type"]) == "REQUEST_ALIVE" and e.get("phase") == 2)
            truth[url] = f"not sent by the browser (failed: {errors[code]})"
    assert len(truth) == 2
    res = compare(_an(cap, keys), analyze(str(nl)))
    assert res["b"]["not_sent_requests"] == 1  # the page's favicon; the check-in is Chrome's own: background (review 31)
    got = {e["url"]: e["reason"] for e in res["only_b"] if e["response"] == "not_sent"}
    # the check-in is Chrome's own (its NetLog initiator and isolation key: review 31), background:
    # listed apart, not sent, with page_of's reason (docs/JSON.md: a background Side's reason)
    bg = {e["url"]: e for e in res["background_b"] if e["response"] == "not_sent"}
    assert set(got) | set(bg) == set(truth) and not set(got) & set(bg)
    assert all(got[u] == truth[u] for u in got) and list(got) == ["https://www.amazon.com/favicon.ico"]
    assert all(e["reason"].startswith("the browser's own request") for e in bg.values())
    # and why it never reached the network, from the same events (its net error)
    assert all(e["reason"].endswith("; " + truth[u]) for u, e in bg.items()) and bg
    assert not any(e["reason"].startswith("no request for this URL") for e in res["only_b"] if e["url"] in truth)
    # A (the capture) requested favicon.ico once; it is matched with B's request that went to the network
    fav = [u for (u,) in _fields(cap, keys, "http2.headers.path == \"/favicon.ico\"", "http2.headers.path")]
    assert len(fav) == 1
    m = [x for x in res["matched"] if x["url"].endswith("/favicon.ico")]
    assert len(m) == 1 and m[0]["b"]["response"] == "complete"
    # a NetLog's "no packets" is not an incomplete page: the amazon pair stays comparable, with speedups
    assert res["comparable"] is True and res["withheld"] == [] and res["page"]["page_load_time"]["speedup"] is not None
    text = render_text(res)
    assert "not sent by the browser (from the disk cache)" in text and "B background: https://android.clients.google.com/checkin" in text
