"""TCP sequence analysis (analyzer.tcp_analysis) against tshark 4.0, packet by packet.

tshark runs with its default preferences in one pass (tcp.analyze_sequence_numbers TRUE,
tcp.fastrt_supersedes_ooo TRUE, window scaling "Not known", relative sequence numbers); its
reassembly does not change the flags.  For every TCP packet, the set of tcp.analysis.* flag
fields wirefall computes equals the set tshark shows (fast and spurious retransmissions carry
tcp.analysis.retransmission too, as tshark's expert items do), with the duplicate ACK's number
and frame; the Info prefix ("[TCP Dup ACK 13#2] " …) and the [SEQ/ACK analysis] tree equal
tshark's.  Inputs: the real lossy page loads, real samples made lossy by
scripts/crosscheck/make_tcp_analysis_captures.py (segments deleted, neighbours swapped,
packets duplicated) and its hand-built scenarios, one per flag.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wirefall.analyzer import stats as wf_stats  # noqa: E402
from wirefall.analyzer.cache import dumps, loads  # noqa: E402
from wirefall.analyzer.capture import PacketSource  # noqa: E402
from wirefall.analyzer.detail import packet_detail, packet_row, packet_rows  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402
from wirefall.analyzer.tcp_analysis import FIELDS, NAMES, stats, tcp_analysis  # noqa: E402
from scripts.crosscheck import make_tcp_analysis_captures as mk  # noqa: E402
from scripts.crosscheck.tcp_analysis_vs_tshark import tshark_flags  # noqa: E402

SAMPLES = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
PREFIX = re.compile(r"^((?:\[TCP [^\]]*\] )*)")

_cache: dict = {}


def _load(path):
    path = str(path)
    if path not in _cache:
        an = analyze(path)
        src = PacketSource(path)
        _cache[path] = (an, src, tcp_analysis(an, src), tshark_flags(path))
    return _cache[path]


def _differences(path) -> tuple[int, list[str]]:
    """(packets flagged by either, differences) between wirefall and tshark."""
    an, src, ta, theirs = _load(path)
    ours = {i + 1 for i, f in enumerate(ta.flags) if f}
    bad = []
    for n in sorted(ours | set(theirs)):
        t_fields, t_dup, _ = theirs.get(n, (set(), None, ""))
        if ta.fields(n) != t_fields or ta.dupack.get(n) != t_dup:
            bad.append(f"frame {n}: tshark {sorted(t_fields)} {t_dup}, wirefall {sorted(ta.fields(n))} {ta.dupack.get(n)}")
    return len(ours | set(theirs)), bad


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The crafted captures: hand-built scenarios and real samples made lossy."""
    d = tmp_path_factory.mktemp("tcpan")
    out = {"scenarios": mk.scenarios(d / "tcp-scenarios.pcap")}
    srcs = {"h2": SAMPLES / "lossy" / "page-h2.pcapng", "h1": SAMPLES / "lossy" / "page-h1.pcapng",
            "page": SAMPLES / "page" / "page-h2.pcapng", "nginx": SAMPLES / "http" / "http1-nginx.pcap"}
    if (SHARED / "pageload-amazon" / "amazon1.cap.gz").exists():
        srcs["amazon"] = SHARED / "pageload-amazon" / "amazon1.cap.gz"
    variants = {"drop7": dict(drop_every=7), "swap3": dict(swap_every=3), "dup4": dict(dup_every=4),
                "mixed": dict(drop_every=11, swap_every=4, dup_every=9)}
    for name, s in srcs.items():
        for v, kw in variants.items():
            out[f"{name}-{v}"] = mk.derive(s, d / f"{name}-{v}.pcap", **kw)
    return out


# ------------------------------------------------------------------ flags, packet by packet

REAL = ["lossy/page-h1.pcapng", "lossy/page-h2.pcapng", "lossy/page-spdy.pcapng", "tcp-port-reuse.pcap",
        "http/http1-nginx.pcap", "page/page-h2.pcapng", "tls/curl_http11.pcap"]


@needs_tshark
@pytest.mark.parametrize("name", REAL)
def test_flags_equal_tshark_on_real_samples(name):
    total, bad = _differences(SAMPLES / name)
    assert not bad, bad[:10]
    if name.startswith("lossy/page-h"):  # 3 % loss each way: tshark flags dozens of packets
        assert total >= 30


@needs_tshark
def test_flags_equal_tshark_on_the_amazon_page_load():
    p = SHARED / "pageload-amazon" / "amazon1.cap.gz"
    if not p.exists():
        pytest.skip("../shared/captures/pageload-amazon not present")
    total, bad = _differences(p)
    assert not bad, bad[:10]


@needs_tshark
def test_flags_equal_tshark_on_lossy_reordered_and_duplicated_captures(made):
    seen: dict[str, int] = {}
    flagged = 0
    for name, p in made.items():
        if name == "scenarios":
            continue
        total, bad = _differences(p)
        assert not bad, (name, bad[:10])
        flagged += total
        ta = _load(p)[2]
        for field, k in ta.counts().items():
            seen[field] = seen.get(field, 0) + k
    assert flagged > 1000
    # the damage shows as tshark names it (a test that cannot fail is no test)
    for field in ("tcp.analysis.retransmission", "tcp.analysis.fast_retransmission", "tcp.analysis.spurious_retransmission",
                  "tcp.analysis.out_of_order", "tcp.analysis.lost_segment", "tcp.analysis.ack_lost_segment",
                  "tcp.analysis.duplicate_ack", "tcp.analysis.window_update"):
        assert seen[field] > 0, field


@needs_tshark
def test_every_flag_on_the_hand_built_scenarios(made):
    p = made["scenarios"]
    total, bad = _differences(p)
    assert not bad, bad
    an, src, ta, theirs = _load(p)
    shown = set().union(*(v[0] for v in theirs.values()))
    assert shown == set(FIELDS), set(FIELDS) - shown  # tshark shows each flag at least once, and so do we
    assert ta.counts() == {f: sum(1 for v in theirs.values() if f in v[0]) for f in FIELDS}
    # 10 010 segments nobody acknowledges: past tshark's 10 000 the FIN no longer counts in the
    # sequence space, so the FIN sent again is not a retransmission (for tshark nor for us)
    last = an.packets
    assert last not in theirs and ta.flags[last - 1] == 0
    assert ta.flags[last - 2] == 0
    # the HTTP/1.1 exchanges around the damage still decode
    got = sorted((e.path, e.status) for e in an.exchanges)
    assert got.count(("/", 200)) == 3 and ("/big", 200) in got, got


@needs_tshark
def test_colour_rules_equal_wiresharks_default_rules(made):
    """Bad TCP, TCP RST, TCP SYN/FIN as Wireshark's default colouring rules select them
    (their filters, run by tshark), for the packet list to colour RST and damaged segments."""
    from wirefall.analyzer.tcp_analysis import COLOURS

    p = made["scenarios"]
    an, src, ta, _ = _load(p)
    rules = {"Bad TCP": "tcp.analysis.flags && !tcp.analysis.window_update && !tcp.analysis.keep_alive && !tcp.analysis.keep_alive_ack",
             "TCP RST": "tcp.flags.reset eq 1", "TCP SYN/FIN": "tcp.flags & 0x02 || tcp.flags.fin == 1"}
    want: dict[int, str] = {}
    for name, flt in rules.items():  # the first rule that matches wins
        out = subprocess.run(["tshark", "-n", "-r", str(p), "-Y", flt, "-T", "fields", "-e", "frame.number"], capture_output=True,
                             text=True, check=True).stdout.split()
        for n in map(int, out):
            want.setdefault(n, name)
    got = {n: ta.colour_rule(n) for n in range(1, an.packets + 1) if ta.colour_rule(n)}
    assert got == want and set(got.values()) == set(COLOURS)


def test_flag_table():
    assert len(set(NAMES.values())) == len(NAMES) == 15
    assert all(n.startswith("tcp.analysis.") for n in FIELDS)
    assert FIELDS["tcp.analysis.flags"] == sum(NAMES)
    m = FIELDS["tcp.analysis.retransmission"]
    assert all(m & b for b, n in NAMES.items() if n.endswith("retransmission"))


# ------------------------------------------------------------------ Info column and tree

@needs_tshark
@pytest.mark.parametrize("which", ["scenarios", "lossy/page-h2.pcapng", "h1-mixed"])
def test_info_prefix_and_tcp_info_equal_tshark(made, which):
    p = made.get(which) or SAMPLES / which
    an, src, ta, theirs = _load(p)
    out = subprocess.run(["tshark", "-n", "-r", str(p), "-T", "fields", "-e", "_ws.col.Info"], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    rows = packet_rows(an, src, 1, an.packets + 1)
    assert len(rows) == len(out)
    prefixed = compared = 0
    for row, ti in zip(rows, out):
        info = row[6]
        tp = PREFIX.match(ti).group(1)
        assert info.startswith(tp) and PREFIX.match(info).group(1) == tp, (row[0], ti, info)
        prefixed += bool(tp)
        # a TCP-only row (no application frame completes on it) reads as tshark's, options and
        # SACK blocks included; tshark's reassembly note and our continuation note aside
        rest_t = ti[len(tp):].replace(" [TCP segment of a reassembled PDU]", "")
        rest_o = re.sub(r" \[(continuation of .*|TCP segment of a reassembled PDU)\]$", "", info[len(tp):])
        if row[4] == "TCP" and rest_t[:1].isdigit() and ", " not in rest_t.split("Len=")[-1]:
            if rest_o == "[TCP segment of a reassembled PDU]" and ti.endswith(rest_o):
                continue  # (a TLS record begins here: test_info.py's allowed tls-first-record-segment; the column is TCP's now, as tshark's)
            assert rest_o == rest_t, (row[0], ti, info)
            compared += 1
    assert prefixed == len(theirs) and prefixed > 10
    assert compared > 300


@needs_tshark
def test_pure_acks_are_tcp_rows_not_continuations():
    """A pure ACK inside a long HTTP/2 DATA frame (or a TLS record) was labelled
    "[continuation of …]"; tshark labels it as the ACK it is."""
    p = SAMPLES / "lossy" / "page-h2.pcapng"
    an, src, ta, theirs = _load(p)
    out = subprocess.run(["tshark", "-n", "-r", str(p), "-T", "fields", "-e", "_ws.col.Protocol", "-e", "_ws.col.Info"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    acks = 0
    for n, line in enumerate(out, 1):
        proto, info = line.split("\t", 1)
        row = packet_row(an, src, n)
        if " Len=0" in info and proto == "TCP":
            assert row[4] == "TCP" and "continuation" not in row[6] and row[6] == info.replace(" [TCP segment of a reassembled PDU]", ""), (n, info, row)
            acks += 1
    assert acks > 100
    # data segments of a frame that completes later still say so, in tshark's words
    assert any(r[6].endswith(" [TCP segment of a reassembled PDU]") and " Len=0" not in r[6] for r in packet_rows(an, src, 1, an.packets + 1))


def _json_analysis(layers: dict) -> dict:
    """tcp.analysis.* fields of one packet in tshark -T json (a list per name)."""
    got: dict = {}

    def walk(d):
        if isinstance(d, dict):
            for k, v in d.items():
                if k.startswith("tcp.analysis") and not k.endswith("_tree") and k != "tcp.analysis":
                    got.setdefault(k, []).append(v if isinstance(v, str) else "")
                walk(v)

    walk(layers.get("tcp", {}).get("tcp.analysis", {}))
    return got


class _Pairs(list):
    """A JSON object as its (key, value) pairs: tshark -T json repeats keys (two expert items)."""


NOT_COMPUTED: set[str] = set()  # (every tcp.analysis field is computed since 2026-12-05: tests/test_tcp_rtt30.py)


def _want(obj, out: list) -> list:
    for k, v in obj:
        if k.startswith("tcp.analysis") and not k.endswith("_tree") and k not in NOT_COMPUTED:
            out.append((k, v if isinstance(v, str) else ""))
        if isinstance(v, _Pairs):
            _want(v, out)
    return out


@needs_tshark
@pytest.mark.parametrize("which", ["scenarios", "lossy/page-h1.pcapng"])
def test_seq_ack_analysis_tree_equals_tshark(made, which):
    p = made.get(which) or SAMPLES / which
    an, src, ta, theirs = _load(p)
    frames = sorted(theirs)[:60]
    flt = " || ".join(f"frame.number == {n}" for n in frames)
    raw = subprocess.run(["tshark", "-n", "-r", str(p), "-T", "json", "-Y", flt], capture_output=True, text=True, check=True).stdout
    pkts = json.loads(raw, object_pairs_hook=_Pairs)
    assert len(pkts) == len(frames) > 10
    compared = 0
    for n, pk in zip(frames, pkts):
        tcp = dict(dict(dict(dict(pk)["_source"])["layers"])["tcp"])
        want = sorted(_want(tcp["tcp.analysis"], []))
        got = []
        for root in packet_detail(an, src, n):
            sa = root.find("tcp.analysis")
            if sa is not None:
                got += [(x.abbrev, x.value) for x in sa.walk() if x.abbrev and x.abbrev != "tcp.analysis"]
        assert sorted(got) == want, (n, sorted(got), want)
        compared += len(want)
    assert compared > 40


# ------------------------------------------------------------------ statistics

@needs_tshark
def test_stats_counts_equal_tshark_per_capture_and_connection():
    p = SAMPLES / "lossy" / "page-h1.pcapng"
    an, src, ta, theirs = _load(p)
    st = stats(an, src)
    assert st["capture"] == {f: sum(1 for v in theirs.values() if f in v[0]) for f in FIELDS}
    assert st["capture"]["tcp.analysis.flags"] == len(theirs) > 0
    per = {}
    for n, (fields, _, _) in theirs.items():
        c = str(an.index.conn[n - 1])
        for f in fields:
            per.setdefault(c, {}).setdefault(f, 0)
            per[c][f] += 1
    assert {c: {f: k for f, k in d.items() if k} for c, d in st["connections"].items()} == per
    # wirefall stats shows them (text and --json)
    s = wf_stats.compute(an, tcp_analysis=True)
    assert wf_stats.to_dict(s)["tcp_analysis"] == st
    text = wf_stats.render_text(s)
    assert "TCP analysis" in text and f"{st['capture']['tcp.analysis.duplicate_ack']}" in text.split("TCP analysis")[1]


def test_stats_of_an_analysis_without_a_file():
    from tests.wf_fixture import make_analysis

    s = wf_stats.compute(make_analysis(), tcp_analysis=True)
    assert s.tcp_analysis is None and "tcp_analysis" not in wf_stats.to_dict(s)


# ------------------------------------------------------------------ cache, incremental, robustness

def test_not_pickled_into_the_cache_and_recomputed_the_same():
    p = SAMPLES / "lossy" / "page-h2.pcapng"
    an = analyze(str(p))
    src = PacketSource(str(p))
    ta = tcp_analysis(an, src)
    blob = dumps(an)
    assert "_wf_tcp_analysis" in an.__dict__  # still there after dumping
    an2 = loads(blob)
    assert "_wf_tcp_analysis" not in an2.__dict__
    ta2 = tcp_analysis(an2, src)
    assert ta2.flags == ta.flags and ta2.dupack == ta.dupack and ta2.base == ta.base


def test_incremental_pass_equals_one_pass():
    """Rows asked for packet by packet (the pass goes only as far as needed) give the same
    analysis as one pass over the whole capture."""
    p = SAMPLES / "lossy" / "page-spdy.pcapng"
    an = analyze(str(p))
    src = PacketSource(str(p))
    ta = tcp_analysis(an, src, upto=5)
    assert ta.packets == 5
    for n in range(6, an.packets + 1, 37):
        tcp_analysis(an, src, upto=n)
    tcp_analysis(an, src)
    an2 = analyze(str(p))
    whole = tcp_analysis(an2, PacketSource(str(p)))
    assert ta.flags == whole.flags and ta.dupack == whole.dupack and ta.packets == an.packets
    assert sum(1 for f in whole.flags if f) > 20


def test_made_in_a_child_process_equals_one_pass():
    """``tcp_analysis_in_child`` (the TUI's, after its first screen) installs the analysis a
    forked child made of the whole capture: the very one a pass here makes; an analysis already
    complete is kept as it is."""
    from wirefall.analyzer.tcp_analysis import tcp_analysis_in_child

    p = SAMPLES / "lossy" / "page-spdy.pcapng"
    an = analyze(str(p))
    src = PacketSource(str(p))
    part = tcp_analysis(an, src, upto=7)
    assert part.packets == 7
    assert tcp_analysis_in_child(an, str(p))
    got = an.__dict__["_wf_tcp_analysis"]
    assert got is not part and got.packets == an.packets and got._decoder is None
    whole = tcp_analysis(analyze(str(p)), src)
    for name in ("flags", "dupack", "conv", "fwd", "wshift", "tcp_flags", "base", "rtt", "rtt_at"):
        assert getattr(got, name) == getattr(whole, name), name
    assert sum(1 for f in got.flags if f) > 20 and tcp_analysis(an, src) is got
    assert tcp_analysis_in_child(an, str(p)) and an.__dict__["_wf_tcp_analysis"] is got


def test_child_analysis_cancelled_ends_at_once(monkeypatch):
    """The TUI quitting cancels the child (``ChildRun.cancel``): the call returns False at once,
    nothing installed, no child left (its pass made endless here)."""
    import os
    import threading

    from wirefall.analyzer import tcp_analysis as T

    p = SAMPLES / "lossy" / "page-spdy.pcapng"
    an = analyze(str(p))
    monkeypatch.setattr(T, "_run", lambda *a: time.sleep(120))  # (the forked child inherits it)
    run = T.ChildRun()
    out: list = []
    th = threading.Thread(target=lambda: out.append(T.tcp_analysis_in_child(an, str(p), run)))
    t = time.monotonic()
    th.start()
    while run.pid is None and time.monotonic() - t < 20:
        time.sleep(0.01)
    pid = run.pid
    assert pid is not None
    run.cancel()
    th.join(20)
    assert out == [False] and time.monotonic() - t < 20 and "_wf_tcp_analysis" not in an.__dict__
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass  # reaped
    else:
        raise AssertionError("the child is still there")
    assert not T.tcp_analysis_in_child(an, str(p), run)  # a cancelled run forks no more

    def no_fork():
        raise OSError("no process to spare")

    monkeypatch.setattr(os, "fork", no_fork)
    assert not T.tcp_analysis_in_child(an, str(p))  # a fork that fails: False, not an exception


def test_garbage_packets_do_not_raise(tmp_path):
    import random
    import struct as st

    rnd = random.Random(22)
    for lt in (0, 1, 101, 113, 276):
        recs = []
        for i in range(300):
            n = rnd.choice([0, 1, 13, 20, 34, 40, 54, 60, 90])
            body = bytearray(rnd.getrandbits(8) for _ in range(n))
            if lt == 1 and n >= 54:
                body[12:14] = b"\x08\x00"
                body[14] = 0x45
                body[23] = 6
            if lt == 101 and n >= 40:
                body[0] = 0x45 if i % 2 else 0x60
                body[9 if i % 2 else 6] = 6
            recs.append(st.pack("<IIII", 1700000000 + i // 10, i, len(body), len(body) + i % 3) + bytes(body))
        f = tmp_path / f"garbage-{lt}.pcap"
        f.write_bytes(st.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, lt) + b"".join(recs))
        an = analyze(str(f))
        ta = tcp_analysis(an, PacketSource(str(f)))
        assert len(ta.flags) == an.packets == 300
        for n in range(1, 301):
            assert isinstance(ta.info_prefix(n), str)


def test_speed_on_ten_thousand_segments(made):
    """One pass over the TCP headers: the 10 k-packet scenario capture well under a second
    (a 200 k-packet capture takes about 1 s on the development machine)."""
    p = str(made["scenarios"])
    an = analyze(p)
    t = time.process_time()  # CPU, not the clock: a shared CI host's load does not count
    ta = tcp_analysis(an, PacketSource(p))
    dt = time.process_time() - t
    assert ta.packets == an.packets > 10_000
    assert dt < 2.0, dt
