"""What a capture does not show (analyzer/completeness.py) and what is not the page
(analyzer.waterfall.page_of), on real captures cut, stripped of their keys, thinned and merged
with unrelated traffic — each checked against tshark on the same file.

- a capture that starts mid-connection (``editcap -r``): the connections tshark sees without
  a SYN are reported joined mid-way, with the requests tshark finds on them; a cut inside the
  TLS handshake leaves the connection undecrypted with the reason and the next step; a cut
  h2c connection has the requests whose header names tshark shows as ``<unknown>``;
- the wrong or no key log: every connection tshark cannot decrypt either, with the next step;
- packets deleted (``editcap`` with packet numbers): bytes lost = the holes tshark flags as
  ``tcp.analysis.lost_segment`` (sequence number minus the highest byte seen before);
- complete samples say complete (tshark: every stream has its SYN, no lost segment);
- background: the Amazon page load has none (tshark: every request's Referer is the page's),
  and a page sample merged with a VM agent's HTTP/1 traffic to 169.254.169.254
  (scripts/background/metadata_merge.py) keeps its page load time while the agent's
  requests (tshark's ``http.request`` to that address) are marked background.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, need_tool, run_tool, shared

from wirefall.analyzer import completeness as C
from wirefall.analyzer import stats as S
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.waterfall import BG_LINK_LOCAL, build, page_of

sys.path.insert(0, str(ROOT / "scripts" / "background"))
import metadata_merge  # noqa: E402

PAGE = SAMPLES / "page"
H2, H2_KEYS = PAGE / "page-h2.pcapng", PAGE / "page-h2.keys"


def _editcap(*args: str) -> None:
    need_tool("editcap")
    subprocess.run(["editcap", *args], check=True, capture_output=True, timeout=60)


def _tshark_fields(cap: Path, *fields: str, display_filter: str = "", keys: Path | None = None, extra: tuple = ()) -> list[list[str]]:
    args = ["tshark", "-r", str(cap), *extra]
    if keys is not None:
        args += ["-o", f"tls.keylog_file:{keys}"]
    if display_filter:
        args += ["-Y", display_filter]
    args += ["-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in fields:
        args += ["-e", f]
    out = run_tool(*args)
    return [ln.split("\t") for ln in out.splitlines() if ln.strip()]


def _streams_without_syn(cap: Path) -> dict[frozenset, int]:
    """tshark's TCP streams whose SYN the file does not hold: {frozenset of both ports: stream}."""
    ports: dict[int, frozenset] = {}
    syn: set[int] = set()
    for s, a, b, f_syn, f_ack in _tshark_fields(cap, "tcp.stream", "tcp.srcport", "tcp.dstport", "tcp.flags.syn", "tcp.flags.ack",
                                                display_filter="tcp"):
        ports.setdefault(int(s), frozenset((int(a), int(b))))
        if f_syn in ("1", "True") and f_ack in ("0", "False"):
            syn.add(int(s))
    return {p: s for s, p in ports.items() if s not in syn}


def _conn_by_ports(an, ports: frozenset):
    return next(c for c in an.connections if frozenset((c.client[1], c.server[1])) == ports)


# ---------------------------------------------------------------- (a) joined mid-way


def test_cut_before_the_syn_joined_midway_with_tshark_request_count(tmp_path):
    cut = tmp_path / "cut.pcapng"
    _editcap("-r", str(H2), str(cut), "2-75")  # everything but the first connection's SYN
    midway = _streams_without_syn(cut)
    assert len(midway) == 1
    (ports, stream), = midway.items()
    reqs = _tshark_fields(cut, "http2.headers.method", display_filter=f"tcp.stream == {stream} && http2.headers.method", keys=H2_KEYS)
    n_truth = sum(len(r[0].split(",")) for r in reqs)
    assert n_truth == 13
    an = analyze(str(cut), keylogs=[str(H2_KEYS)])
    c = C.compute(an)
    conn = _conn_by_ports(an, ports)
    assert c.joined_midway == [conn.id] and not c.complete
    assert c.requests_on_joined == n_truth
    issue = next(i for i in c.issues if i.kind == "joined_midway")
    assert (issue.connection, issue.count, issue.next_step) == (conn.id, n_truth, C.NEXT_MIDWAY)
    assert c.per_connection[conn.id].requests == n_truth
    assert C.headline(an).startswith("Incomplete: 1 connection joined mid-way")
    # the other connection (its SYN is in the file) is not reported
    assert all(i.connection == conn.id for i in c.issues)


def test_cut_inside_the_tls_handshake_not_decrypted_with_next_step(tmp_path):
    cut = tmp_path / "cut.pcapng"
    _editcap("-r", str(H2), str(cut), "30-75")
    midway = _streams_without_syn(cut)
    # tshark with the same key log decrypts nothing there either
    assert not _tshark_fields(cut, "http2.type", display_filter="http2", keys=H2_KEYS)
    an = analyze(str(cut), keylogs=[str(H2_KEYS)])
    c = C.compute(an)
    ids = sorted(_conn_by_ports(an, p).id for p in midway)
    assert sorted(c.joined_midway) == ids and ids
    assert sorted(c.not_decrypted) == ids
    assert all(r.startswith("no ClientHello in the capture") for r in c.not_decrypted.values())
    nd = [i for i in c.issues if i.kind == "not_decrypted"]
    assert nd and all("predates the capture" in i.next_step for i in nd)
    packets = {cid: an.connections[cid].stats[0].packets + an.connections[cid].stats[1].packets for cid in ids}
    assert {i.connection: i.count for i in nd} == packets


def test_cut_h2c_requests_with_unknown_header_names_as_tshark_shows_them(tmp_path):
    src = PAGE / "page-h2c.pcapng"
    cut = tmp_path / "cut.pcapng"
    _editcap("-r", str(src), str(cut), "9-33")  # after the first HEADERS: HPACK table partly unknown
    server = int(_tshark_fields(src, "tcp.dstport", display_filter="tcp.flags.syn == 1 && tcp.flags.ack == 0")[0][0])
    rows = _tshark_fields(cut, "http2.streamid", "http2.header.name", display_filter=f"http2.type == 1 && tcp.dstport == {server}",
                          extra=("-d", f"tcp.port=={server},http2"))
    # one HEADERS frame per request here: a request whose frame shows <unknown> names
    truth = 0
    for _sids, names in rows:
        # frames coalesced in one packet: tshark aggregates; count "<unknown>" per :method
        per = names.split(",")
        starts = [i for i, n in enumerate(per) if n == ":method"]
        for k, i in enumerate(starts):
            block = per[i: starts[k + 1] if k + 1 < len(starts) else len(per)]
            truth += "<unknown>" in block
    assert truth == 12
    an = analyze(str(cut), keylogs=[])
    c = C.compute(an)
    assert c.joined_midway == [an.connections[0].id]
    requests_with_unknown_request_headers = sum(
        1 for e in an.exchanges if any(k == C.UNKNOWN for k, _ in e.request_headers))
    assert requests_with_unknown_request_headers == truth
    assert c.unknown_headers == truth == c.requests_unknown
    issue = next(i for i in c.issues if i.kind == "unknown_fields")
    assert issue.count == truth and issue.next_step == C.NEXT_MIDWAY


# ---------------------------------------------------------------- (b) the key log


def _tls_streams(cap: Path) -> int:
    return len({r[0] for r in _tshark_fields(cap, "tcp.stream", display_filter="tls.app_data")})


@pytest.mark.parametrize("keys,step", [("page-h1.keys", C.NEXT_WRONG_KEYLOG), (None, C.NEXT_NO_KEYLOG)])
def test_wrong_or_no_key_log_every_connection_not_decrypted_with_the_next_step(keys, step, monkeypatch):
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    kp = PAGE / keys if keys else None
    # tshark with the same key log decrypts no HTTP/2 either
    assert not _tshark_fields(H2, "http2.type", display_filter="http2", keys=kp)
    an = analyze(str(H2), keylogs=[str(kp)] if kp else [])
    c = C.compute(an)
    assert len(c.not_decrypted) == _tls_streams(H2) == 2
    # the words: with no key log at all, "no key log given"; with one that lacks the secret,
    # "no key for this client random" — the same in not_decrypted and the issue (since 2026-12-04)
    said = "no key log given" if keys is None else "no key for this client random"
    assert set(c.not_decrypted.values()) == {said}
    nd = [i for i in c.issues if i.kind == "not_decrypted"]
    assert {i.next_step for i in nd} == {step}
    assert all(i.detail.endswith(f"not decrypted: {said}") for i in nd), [i.detail for i in nd]
    assert C.headline(an) == "Incomplete: 2 connections not decrypted"
    # the right key log: nothing left encrypted
    good = C.compute(analyze(str(H2), keylogs=[str(H2_KEYS)]))
    assert good.complete and not good.not_decrypted


# ---------------------------------------------------------------- (c) packets dropped


def _tshark_lost_bytes(cap: Path) -> int:
    """Bytes before each segment tshark flags as lost_segment: its sequence number minus the
    highest next-sequence seen before it in that direction."""
    nxt: dict[tuple[str, str], int] = {}
    lost = 0
    for s, src, seq, nseq, flag in _tshark_fields(cap, "tcp.stream", "tcp.srcport", "tcp.seq", "tcp.nxtseq", "tcp.analysis.lost_segment",
                                                  display_filter="tcp", extra=("-o", "tcp.relative_sequence_numbers:TRUE")):
        key = (s, src)
        if flag and key in nxt:
            lost += int(seq) - nxt[key]
        if nseq:
            nxt[key] = max(nxt.get(key, 0), int(nseq))
    return lost


def test_packets_deleted_bytes_lost_equal_tshark_lost_segments(tmp_path):
    src = PAGE / "page-h1c.pcapng"
    rows = {int(r[0]): int(r[1]) for r in _tshark_fields(src, "frame.number", "tcp.len", display_filter="tcp.len > 0")}
    drop = (12, 17)  # two server→client segments in the middle of the stream
    out = tmp_path / "drop.pcapng"
    _editcap(str(src), str(out), *map(str, drop))
    truth = _tshark_lost_bytes(out)
    assert truth == sum(rows[n] for n in drop) > 0
    an = analyze(str(out), keylogs=[])
    c = C.compute(an)
    assert c.bytes_lost == truth and c.gaps == len(drop)
    issue = next(i for i in c.issues if i.kind == "bytes_lost")
    assert issue.count == truth and issue.next_step == C.NEXT_LOST
    assert C.headline(an) == f"Incomplete: {truth // 1024} KB lost"
    # the original says complete
    assert C.compute(analyze(str(src), keylogs=[])).complete


# ---------------------------------------------------------------- (d) complete samples


@pytest.mark.parametrize("name", ["page-h1", "page-h2", "page-h3", "page-spdy", "page-h2c", "page-h1c"])
def test_complete_samples_say_complete(name):
    cap = PAGE / f"{name}.pcapng"
    keys = PAGE / f"{name}.keys"
    if cap.suffix and not cap.exists():
        pytest.skip(f"{cap.name} absent")
    if name != "page-h3":
        assert not _streams_without_syn(cap)
        assert not _tshark_fields(cap, "frame.number", display_filter="tcp.analysis.lost_segment")
    an = analyze(str(cap), keylogs=[str(keys)] if keys.exists() else [])
    c = C.compute(an)
    assert c.complete and not c.issues, c.issues
    assert C.headline(an).startswith(f"Complete: {len(an.connections)} connection")
    d = C.to_dict(c)
    assert d["complete"] is True and d["issues"] == [] and d["requests"] == len(an.exchanges) == 13


def test_summary_and_stats_show_completeness(tmp_path):
    cut = tmp_path / "cut.pcapng"
    _editcap("-r", str(H2), str(cut), "2-75")
    env = dict(os.environ, SSLKEYLOGFILE="", PYTHONPATH=str(ROOT))
    run = lambda *a: subprocess.run([sys.executable, "-m", "wirefall", *a, str(cut), "--keylog", str(H2_KEYS)],
                                    capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    r = run("summary")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].startswith("Incomplete: 1 connection joined mid-way") and "next: start the capture" in lines[2]
    r = run("summary", "--json")
    d = json.loads(r.stdout)["completeness"]
    assert d["complete"] is False and d["requests_on_joined"] == 13 and d["issues"][0]["kind"] == "joined_midway"
    r = run("stats", "--json")
    assert json.loads(r.stdout)["completeness"] == d
    r = run("stats")
    assert "Completeness\nIncomplete: 1 connection joined mid-way" in r.stdout


# ---------------------------------------------------------------- background


def test_amazon_page_load_has_no_background():
    cap = shared("pageload-amazon/amazon1.cap.gz")
    keys = shared("pageload-amazon/amazon1.key_log.txt.gz")
    an = analyze(str(cap), keylogs=[str(keys)])
    wf = build(an)
    # tshark: every request but the first carries a Referer on an origin the page already fetched
    import gzip
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".txt") as kf:
        kf.write(gzip.decompress(keys.read_bytes()))
        kf.flush()
        rows = _tshark_fields(cap, "frame.time_epoch", "http2.headers.authority", "http2.headers.referer",
                              display_filter="http2.headers.method", keys=Path(kf.name))  # tshark 4.0: no QPACK, HTTP/2 only
    assert rows
    seen, referers = set(), []
    for _t, auth, ref in sorted(rows, key=lambda r: float(r[0])):
        for a, rf in zip(auth.split(","), (ref.split(",") if ref else [""] * len(auth.split(",")))):
            if rf:
                referers.append(rf.split("/")[2] in seen)
            seen.add(a)
    assert referers and all(referers)
    assert not any(r.background for r in wf.rows)
    doc = next(e for e in an.exchanges if e.id == wf.page_info.document)
    assert doc.url == "https://www.amazon.com/" and doc.header("sec-fetch-dest", response=False) == "document"
    # the page load is the last response byte of all the requests, as before
    assert wf.milestone("page_load").time == max(e.response_end for e in an.exchanges if e.response_end is not None)
    assert wf.page_start == wf.t0
    # the DNS lookups to the link-local resolver (169.254.169.254:53) still draw
    assert any(n == "dns" for r in wf.rows for n, _, _ in r.phases)
    assert wf.page(0, 3) == wf.rows[:3]  # the views' paging method is still there


def test_merged_metadata_traffic_is_background_and_page_load_unchanged(tmp_path):
    out = tmp_path / "merged.pcapng"
    info = metadata_merge.make(str(H2), str(SAMPLES / "http" / "http1-node.pcap"), str(out))
    truth = _tshark_fields(out, "frame.number", display_filter="http.request && ip.dst == 169.254.169.254")
    assert len(truth) == info["background_requests"] == 4
    before = analyze(str(H2), keylogs=[str(H2_KEYS)])
    after = analyze(str(out), keylogs=[str(H2_KEYS)])
    wb, wa = build(before), build(after)
    assert wa.page_load_time == pytest.approx(wb.page_load_time, abs=1e-6)
    assert wa.milestone("page_load").time == wb.milestone("page_load").time
    assert wa.milestone("html_first_byte").time == wb.milestone("html_first_byte").time
    bg = [r for r in wa.rows if r.background]
    assert len(bg) == len(truth)
    assert {r.background_reason for r in bg} == {BG_LINK_LOCAL.format(addr="169.254.169.254")}
    assert sorted(r.url for r in wa.rows if not r.background) == sorted(r.url for r in wb.rows)
    # without the page rule the agent's last response would end the "page load" > 1 s later
    assert max(r.end for r in wa.rows) - wa.t0 > wb.page_load_time + 1.0
    assert wa.milestone("page_start").time == wb.t0  # the agent's first packet came before the page's
    # stats count the page too, and say how many requests are background
    sb, sa = S.compute(before), S.compute(after)
    assert sa.capture.page_load_time == pytest.approx(sb.capture.page_load_time, abs=1e-6)
    assert sa.capture.ttfb == pytest.approx(sb.capture.ttfb, abs=1e-6)
    assert sa.background_requests == 4
    # requests --json marks them
    env = dict(os.environ, SSLKEYLOGFILE="", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "wirefall", "requests", str(out), "--json", "--keylog", str(H2_KEYS)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    reqs = json.loads(r.stdout)
    assert sum(d["background"] for d in reqs) == 4 and all(d["background_reason"] for d in reqs if d["background"])
    assert all(not d["background"] for d in reqs if d["url"] and "59833" in d["url"])


def test_page_rule_on_its_own(tmp_path):
    from wirefall.analyzer.waterfall import BG_AFTER_PAGE, BG_BEFORE_DOCUMENT, BG_OTHER_AGENT, BG_OTHER_CLIENT, _exchange_start

    # not link-local. From another client host (10.20.0.3; the browser is 127.0.0.1): background
    out = tmp_path / "merged.pcapng"
    metadata_merge.make(str(H2), str(SAMPLES / "http" / "http1-node.pcap"), str(out), address="198.51.100.7")
    page = page_of(analyze(str(out), keylogs=[str(H2_KEYS)]))
    assert set(page.background.values()) == {BG_OTHER_CLIENT.format(addr="10.20.0.3", doc="127.0.0.1")}
    assert len(page.background) == 4
    # from the browser's host, but curl's (its User-Agent is not the document's): background
    out = tmp_path / "same-host.pcapng"
    metadata_merge.make(str(H2), str(SAMPLES / "http" / "http1-node.pcap"), str(out), address="198.51.100.7", client="127.0.0.1")
    an = analyze(str(out), keylogs=[str(H2_KEYS)])
    page = page_of(an)
    assert set(page.background.values()) == {BG_OTHER_AGENT.format(agent="curl/7.88.1")} and len(page.background) == 4
    # with no header to tell them apart (the agent's User-Agent taken away) the timing rule
    # decides: the agent's requests carry no Referer; the browser's do. Those that started
    # before the document or after the page's last response are background, the others
    # (during the load, nothing to tell them apart) are the page's
    agent = [e for e in an.exchanges if e.url and ":18086" in e.url]
    assert len(agent) == 4
    for e in agent:
        e.request_headers = [(k, v) for k, v in e.request_headers if k.lower() != "user-agent"]
    page = page_of(an)
    doc = next(e for e in an.exchanges if e.id == page.document)
    assert doc.url.endswith(":59833/")

    tied_end = max(e.response_end for e in an.exchanges if e not in agent and e.response_end is not None)
    for e in agent:
        s = _exchange_start(e)
        want = BG_BEFORE_DOCUMENT if s < _exchange_start(doc) else None if s <= tied_end else BG_AFTER_PAGE
        assert page.background.get(e.id) == want
    assert set(page.background.values()) <= {BG_BEFORE_DOCUMENT, BG_AFTER_PAGE} and page.background


def test_unknown_fields_of_background_traffic_are_said_to_be_background():
    """bg-mixed: the one request with an unknown field is the metadata long-poll the capture
    ends in (tshark: the only request to 169.254.169.254 without a response), background
    traffic: the headline says it apart, after the page's own, so that it does not read as the page's; JSON
    ``requests_unknown_background`` counts it. A page request's unknown field is not so marked
    (page-h3-late)."""
    need_tool("tshark")
    cap = SAMPLES / "page" / "bg-mixed.pcapng"
    out = run_tool("tshark", "-2", "-r", str(cap), "-Y", "http.request && ip.dst == 169.254.169.254", "-T", "fields",
                   "-e", "frame.number", "-e", "http.response_in")
    unanswered = [ln.split("\t")[0] for ln in out.splitlines() if not ln.split("\t")[1]]
    assert len(unanswered) == 1
    an = analyze(str(cap), keylogs=[str(cap.with_suffix(".keys"))])
    c = C.compute(an)
    (eid,) = c.unknown_exchanges
    e = next(x for x in an.exchanges if x.id == eid)
    assert e.request_start_packet == int(unanswered[0]) and c.unknown_exchanges[eid] == ["status"]
    assert page_of(an).background[eid] == BG_LINK_LOCAL.format(addr="169.254.169.254")
    assert c.unknown_background == 1 and C.to_dict(c)["requests_unknown_background"] == 1
    # (said apart from the page's own: the connection not decrypted carried what is unknown, maybe the page's)
    assert C.headline(an) == "Incomplete: 1 connection not decrypted; background traffic (not the page's): 1 request with unknown fields"
    assert c.background_connections == [e.connection] and not c.page_complete
    late = SAMPLES / "quic" / "page-h3-late.pcapng"
    an2 = analyze(str(late), keylogs=[str(late.with_suffix(".keys"))])
    c2 = C.compute(an2)
    assert c2.requests_unknown and c2.unknown_background == 0 and "background" not in C.headline(an2)


def test_an_empty_capture_says_there_is_nothing_rather_than_0_connections_seen(tmp_path):
    """A live capture of nothing read "Complete: 0 connections seen from the start, 0 requests
    with every field known …" (review 24).  The file: a real pcap's own file header, no record."""
    p = tmp_path / "empty.pcap"
    p.write_bytes((SAMPLES / "http" / "http1-nginx.pcap").read_bytes()[:24])
    an = analyze(str(p))
    assert an.packets == 0 and C.compute(an).complete
    assert C.headline(an) == "Complete: no connection or request in the capture (nothing of one can be missing)"
