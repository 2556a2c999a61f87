"""The lab's medians are of complete page loads only (issue: a run whose capture misses part of
the page contributed its lower-bound page load time to the median).

The lab's own per-load record (``lab.run.analyse_load``, what ``run_lab`` stores per run) and its
aggregation (``summarise``, ``render_summary``) run over real bundled captures of the lab page,
as ``tests/test_lab.py`` feeds ``summarise`` hand-made run records:

- complete loads: page-h1/h2, pw-h1/h2 (Playwright) and lossy/page-h1/h2 (30 ms, 3 % loss);
- the lossy HTTP/2 load cut by ``editcap -r … 1-200`` before its load ended: tshark shows every one
  of the 13 responses' HEADERS (status 200) but not the END_STREAM of 9 of them — the lab's decode
  check passes (every resource a 200), so before this the run was in the medians with a load
  time that is only a lower bound;
- page-h2 analysed without its key log: tshark shows TLS application data and no HTTP/2 frame;
- page-h3 without its key log: tshark shows QUIC and no HTTP/3 frame — the h3 cell has no
  complete run.

The medians are checked against the page load times tshark gives (first packet → the server's
last END_STREAM for HTTP/2, the last HTTP response for HTTP/1.1), computed here.
"""
from __future__ import annotations

import json
import statistics

import pytest

from conftest import SAMPLES, need_tool, run_tool

PAGE, LOSSY = SAMPLES / "page", SAMPLES / "lossy"
OOO = ("-o", "tcp.reassemble_out_of_order:TRUE")  # (the lossy captures: segments out of order)
# packets of lossy/page-h2 kept: after the last response HEADERS (frame 165), before the load's end
# (468) and before the first segment whose retransmission comes after the cut (frame 212: a cut
# there leaves a hole, wirefall resynchronises HTTP/2 after it, tshark does not)
CUT = 200


def tshark(cap, keys, flt, *fields, extra=()):
    opts = ("-o", f"tls.keylog_file:{keys}") if keys else ("-o", "tls.keylog_file:")
    out = run_tool("tshark", "-r", str(cap), *opts, *extra, "-Y", flt, "-T", "fields", "-E", "separator=\t",
                   "-E", "aggregator=|", *[x for f in fields for x in ("-e", f)])
    return [ln.split("\t") for ln in out.splitlines() if ln.strip()]


def server_ports(cap) -> str:
    return " ".join(sorted({r[0] for r in tshark(cap, None, "tcp.flags.syn == 1 && tcp.flags.ack == 1", "tcp.srcport")}))


def first_packet(cap) -> float:
    return float(run_tool("tshark", "-r", str(cap), "-c", "1", "-T", "fields", "-e", "frame.time_epoch").split()[0])


def tshark_plt(cap, keys, proto, extra=()) -> float:
    """The page load time by tshark: the capture's first packet (the lab's captures start with
    the page) → the last response's end."""
    if proto == "h2":
        flt = f"http2.flags.end_stream == 1 && tcp.srcport in {{{server_ports(cap)}}}"
    else:
        flt = "http.response"
    ends = [float(r[0]) for r in tshark(cap, keys, flt, "frame.time_epoch", extra=extra)]
    return max(ends) - first_packet(cap)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """(run records per protocol as the lab makes them, the summary, its text, the cut capture)."""
    need_tool("tshark")
    need_tool("editcap")
    from wirefall.analyzer.pipeline import analyze
    from wirefall.lab.run import analyse_load, render_summary, summarise

    cut = tmp_path_factory.mktemp("lab28") / "lossy-h2-cut.pcapng"
    run_tool("editcap", "-r", str(LOSSY / "page-h2.pcapng"), str(cut), f"1-{CUT}")
    requests = json.loads((PAGE / "manifest.json").read_text())["page"]["requests"]
    loads = {
        "h1": [(PAGE / "page-h1.pcapng", PAGE / "page-h1.keys"), (PAGE / "pw-h1.pcapng", PAGE / "pw-h1.keys"),
               (LOSSY / "page-h1.pcapng", LOSSY / "page-h1.keys")],
        "h2": [(PAGE / "page-h2.pcapng", PAGE / "page-h2.keys"), (PAGE / "pw-h2.pcapng", PAGE / "pw-h2.keys"),
               (LOSSY / "page-h2.pcapng", LOSSY / "page-h2.keys"),
               (cut, LOSSY / "page-h2.keys"),            # run 4: cut before the load ended
               (PAGE / "page-h2.pcapng", None)],         # run 5: without its key log
        "h3": [(PAGE / "page-h3.pcapng", None)],         # run 1: without its key log
    }
    runs = []
    for p, xs in loads.items():
        for k, (cap, keys) in enumerate(xs, 1):
            an = analyze(str(cap), keylogs=[str(keys)] if keys else [])
            runs.append({"condition": "c", "protocol": p, "run": k, "files": {"capture": str(cap)},
                         **analyse_load(an, requests)})
    cond = {"id": "c", "rtt_ms": 0, "loss_pct": 0, "rate_mbit": None}
    s = summarise([cond], runs, ["h1", "h2", "h3"], "h1")
    return runs, s, render_summary(s), cut


def _run(runs, p, k):
    return next(r for r in runs if r["protocol"] == p and r["run"] == k)


@pytest.mark.slow  # (tshark over every capture)
def test_each_run_records_whether_its_page_is_complete_as_tsharks_view_of_the_capture(lab):
    runs, _s, _t, cut = lab
    keys = LOSSY / "page-h2.keys"
    # tshark on the cut file: every request's response HEADERS with status 200, 9 of them without
    # the server's END_STREAM (their bodies go on past the cut)
    port = server_ports(cut)

    def frames(flt):  # (stream id, type, END_STREAM, status or None) of every HTTP/2 frame, in order
        out = []
        for sids, types, flags, sts in tshark(cut, keys, flt, "http2.streamid", "http2.type", "http2.flags.end_stream",
                                              "http2.headers.status", extra=OOO):
            # (END_STREAM is a field of DATA and HEADERS frames only, :status of response HEADERS)
            st, fl = iter(sts.split("|") if sts else ()), iter(flags.split("|") if flags else ())
            for sid, ty in zip(sids.split("|"), types.split("|")):
                end = next(fl) in ("1", "True") if ty in ("0", "1") else False
                out.append((sid, ty, end, next(st, None) if ty == "1" else None))
        return out

    streams = {sid for sid, ty, _e, _s in frames(f"http2 && tcp.dstport == {port}") if ty == "1"}
    resp = frames(f"http2 && tcp.srcport == {port}")
    status = {sid: st for sid, ty, _e, st in resp if ty == "1"}
    ended = {sid for sid, _t, end, _s in resp if end}
    assert len(streams) == 13 and set(status) == streams and set(status.values()) == {"200"}
    cut_streams = streams - ended
    assert len(cut_streams) == 9, sorted(cut_streams)
    r = _run(runs, "h2", 4)
    assert r["decode"]["ok"] and r["decode"]["status_200"] == 13  # (what kept it in the medians before)
    assert r["page_complete"] is False
    c = r["completeness"]
    assert c["responses_cut"] == len(cut_streams) and c["responses_missing"] == 0
    assert "responses_cut" in c["kinds"] and "no_requests" not in c["kinds"]
    # its figure is a lower bound: short of the whole load's as tshark gives it
    assert r["figures"]["page_load_time"] < tshark_plt(LOSSY / "page-h2.pcapng", keys, "h2", extra=OOO) - 0.04

    # without the key log: tshark sees TLS application data and no HTTP/2 frame; with it, HTTP/2
    cap = PAGE / "page-h2.pcapng"
    assert tshark(cap, None, "tls.app_data", "frame.number") and not tshark(cap, None, "http2", "frame.number")
    assert tshark(cap, PAGE / "page-h2.keys", "http2", "frame.number")
    r = _run(runs, "h2", 5)
    assert r["page_complete"] is False and r["completeness"]["kinds"] == ["not_decrypted", "no_requests"]
    assert {i["kind"] for i in r["completeness"]["issues"]} == {"not_decrypted"}
    # the same for QUIC
    cap = PAGE / "page-h3.pcapng"
    assert tshark(cap, None, "quic", "frame.number") and not tshark(cap, None, "http3", "frame.number")
    assert tshark(cap, PAGE / "page-h3.keys", "http3", "frame.number")
    r = _run(runs, "h3", 1)
    assert r["page_complete"] is False and r["completeness"]["kinds"] == ["not_decrypted", "no_requests"]
    # the whole loads are complete
    for p, k in (("h1", 1), ("h1", 2), ("h1", 3), ("h2", 1), ("h2", 2), ("h2", 3)):
        r = _run(runs, p, k)
        assert r["page_complete"] is True and r["completeness"]["kinds"] == [] and r["decode"]["ok"], (p, k)


@pytest.mark.slow  # (tshark over every capture)
def test_medians_are_of_the_complete_runs_only_and_the_excluded_are_counted_with_why(lab):
    np = pytest.importorskip("numpy")
    runs, s, _t, cut = lab
    (c,) = s["conditions"]
    pr = c["protocols"]
    # the page load times tshark gives of the complete loads
    truth = {
        "h1": [tshark_plt(PAGE / "page-h1.pcapng", PAGE / "page-h1.keys", "h1"),
               tshark_plt(PAGE / "pw-h1.pcapng", PAGE / "pw-h1.keys", "h1"),
               tshark_plt(LOSSY / "page-h1.pcapng", LOSSY / "page-h1.keys", "h1", extra=OOO)],
        "h2": [tshark_plt(PAGE / "page-h2.pcapng", PAGE / "page-h2.keys", "h2"),
               tshark_plt(PAGE / "pw-h2.pcapng", PAGE / "pw-h2.keys", "h2"),
               tshark_plt(LOSSY / "page-h2.pcapng", LOSSY / "page-h2.keys", "h2", extra=OOO)],
    }
    for p, xs in truth.items():
        assert sorted(pr[p]["page_load_time"]) == pytest.approx(sorted(xs), abs=1e-6)
        assert pr[p]["n"]["page_load_time"] == 3 and pr[p]["runs"] == 3
        assert pr[p]["median"]["page_load_time"] == pytest.approx(statistics.median(xs), abs=1e-6)
        assert pr[p]["q1"]["page_load_time"] == pytest.approx(np.percentile(xs, 25), abs=1e-6)
        assert pr[p]["q3"]["page_load_time"] == pytest.approx(np.percentile(xs, 75), abs=1e-6)
    # (with the cut run in it, as before, the median was another)
    cut_plt = _run(runs, "h2", 4)["figures"]["page_load_time"]
    assert abs(statistics.median(truth["h2"] + [cut_plt]) - statistics.median(truth["h2"])) > 0.2
    # every figure's n is of the complete runs: the undecrypted run's 0 requests are in no median
    assert pr["h2"]["n"]["requests"] == 3 and pr["h2"]["median"]["requests"] == 13
    assert pr["h1"]["runs_total"] == 3 and pr["h1"]["excluded"] == 0 and pr["h1"]["excluded_runs"] == []
    h2 = pr["h2"]
    assert (h2["runs_total"], h2["excluded"], h2["incomplete"]) == (5, 2, 1)  # (incomplete: decode not ok, run 5)
    assert h2["excluded_reasons"] == {"page_incomplete": 2, "decode": 1}
    k4 = _run(runs, "h2", 4)["completeness"]["kinds"]
    assert h2["excluded_kinds"] == {k: 1 for k in set(k4) | {"no_requests", "not_decrypted"}}
    assert [(x["run"], x["reasons"]) for x in h2["excluded_runs"]] == [(4, ["page_incomplete"]), (5, ["page_incomplete", "decode"])]
    assert h2["unchecked"] == 0
    # the speedup is of the complete medians
    sp = c["vs_baseline"]["h2"]["page_load_time"]["speedup"]
    a, b = statistics.median(truth["h1"]), statistics.median(truth["h2"])
    assert sp == pytest.approx((a - b) / a, abs=1e-6)
    # no complete HTTP/3 run: no number, no speedup
    h3 = pr["h3"]
    assert (h3["runs"], h3["runs_total"], h3["excluded"]) == (0, 1, 1)
    assert h3["median"]["page_load_time"] is None and h3["n"]["page_load_time"] == 0
    assert c["vs_baseline"]["h3"]["page_load_time"]["speedup"] is None
    assert h3["excluded_kinds"] == {"no_requests": 1, "not_decrypted": 1}


def test_the_report_says_n_of_total_and_why_and_no_number_without_a_complete_run(lab):
    from wirefall.lab.run import GAP_WORDS

    runs, s, text, _cut = lab
    lines = text.splitlines()
    k4 = _run(runs, "h2", 4)["completeness"]["kinds"]
    words4 = ", ".join(GAP_WORDS[k] for k in k4)
    assert words4.startswith("response cut before its end")
    want_h2 = (f"  rtt 0 ms, loss 0 %, h2: n 3 of 5; 2 excluded: page incomplete ({words4}) (run 4); "
               "page incomplete (connection not decrypted, no request of the page seen), not every resource a 200 (run 5)")
    assert want_h2 in lines
    assert ("  rtt 0 ms, loss 0 %, h3: n 0 of 1; no complete run; 1 excluded: page incomplete (connection not decrypted, "
            "no request of the page seen), not every resource a 200 (run 1)") in lines
    assert not any(ln.startswith("  rtt 0 ms, loss 0 %, h1:") for ln in lines)  # (all in, all checked)
    row = next(ln for ln in lines if ln.startswith("rtt 0 ms, loss 0 %"))
    h2 = s["conditions"][0]["protocols"]["h2"]["stats"]["page_load_time"]
    assert "3/3/0 (3 excluded)" in row
    assert f"{h2['median']:.3f} [{h2['q1']:.3f}–{h2['q3']:.3f}]" in row
    assert row.rstrip().endswith("no complete run")
    # the condition's table names the protocol without a complete run in its head, never a number
    i = lines.index(next(ln for ln in lines if ln.startswith("== c:")))
    assert "h3 (no complete run)" in lines[i + 1]
    plt_row = next(ln for ln in lines[i:] if ln.startswith("page load time"))
    assert plt_row.rstrip().endswith("–")


def test_runs_recorded_before_completeness_are_in_the_medians_said_unchecked():
    """A manifest from before (the shipped lossy run: no ``page_complete``): its runs stay in the
    medians, and the report says their completeness was not checked rather than imply it."""
    from wirefall.lab.run import render_summary, summarise

    m = json.loads((LOSSY / "manifest.json").read_text())
    assert not any("page_complete" in r for r in m["runs"])
    s = summarise(m["conditions"], m["runs"], m["protocols"], m["baseline"])
    (c,) = s["conditions"]
    for p in m["protocols"]:
        pr = c["protocols"][p]
        assert pr["runs"] == pr["runs_total"] == 1 and pr["unchecked"] == 1 and pr["excluded"] == 0
    text = render_summary(s)
    assert sum("1 in the medians unchecked" in ln for ln in text.splitlines()) == len(m["protocols"])
