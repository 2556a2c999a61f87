"""Issue 20, as a reviewer checks it, on every sample capture and every shared capture.

- **Wire-true starts** (item 3): for every HTTP/2 and HTTP/1 message over TLS/TCP, the packet
  that carried the first ciphertext byte of the TLS record holding the message's first byte —
  from tshark alone (tests/truth20.py: the records tshark shows, their TCP sequence numbers,
  the decrypted bytes it follows, each protocol's framing) — is wirefall's
  ``request_start_packet`` / ``response_start_packet`` and its time tshark's; the packet where
  tshark shows the record holding the response headers' last byte is
  ``response_headers_end_packet``.  Every message, not a sample of them.  Where tshark's own
  reassembly lists a record's segments, its first listed segment is the sequence-number
  truth's first packet (the two truths agree).  For QUIC, the first packet carrying byte 0 of
  the stream in a STREAM frame.  (SPDY over TLS: tshark's ``follow,tls`` loses records of
  those captures — dissector-bug warnings — so tests/test_phases.py checks them from tshark's
  PDML.)
- **Phases add up** (item 3): in ``requests --json`` (to the microsecond), the HAR (timings sum
  = entry time, none negative but −1), the TUI's request view and the web app's request detail
  (their own formatters over ``RequestDetail.phases``), for every request of every capture.
- **DNS** (item 3): a lookup is charged only to a connection whose SNI/Host it asked for, whose
  server address its answer holds (tshark's answers) and which it preceded, once, and never when
  a request for that name went over another connection between the answer and the connection.
- **QPACK encoder-stream bytes** (item 5), by hand from tshark's bytes on page-h3: the encoder
  streams' instructions (RFC 9204 §4.3) and each HEADERS block's Required Insert Count give
  the bytes charged to each request and response.
"""
from __future__ import annotations

import gzip
import json
import re
import shutil
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from conftest import SAMPLES, SHARED

sys.path.insert(0, str(Path(__file__).parent))
import truth20 as T  # noqa: E402

from wirefall.analyzer import export, jsonout, waterfall  # noqa: E402
from wirefall.analyzer.model import NoteKind  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402
from wirefall.ui.web.views import PHASE_DETAIL_LABELS  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def _captures() -> list[Path]:
    out = [p for p in sorted(SAMPLES.rglob("*")) if p.suffix in (".pcap", ".pcapng")]
    if SHARED.exists():
        out += [p for p in sorted(SHARED.rglob("*")) if p.is_file() and p.name.endswith((".pcap", ".pcapng", ".cap.gz"))]
    return out


CAPTURES = _captures()
IDS = [str(p.relative_to(SAMPLES)) if SAMPLES in p.parents else "shared/" + str(p.relative_to(SHARED)) for p in CAPTURES]


def _keys(p: Path) -> list[Path]:
    name = p.name
    for suf in (".cap.gz", ".pcapng", ".pcap"):
        if name.endswith(suf):
            name = name[: -len(suf)]
    for k in (p.with_name(name + ".keys"), p.with_name("keylog.txt"), p.with_name(name + ".key_log.txt.gz")):
        if k.exists():
            return [k]
    return []


_OPEN: dict[Path, tuple] = {}


def _open(p: Path, tmp_root: Path):
    """(capture path tshark reads, key log paths, analysis): gzip'd inputs unpacked once."""
    if p in _OPEN:
        return _OPEN[p]
    cap, keys = p, _keys(p)
    if p.name.endswith(".gz"):
        cap = tmp_root / p.name[:-3]
        cap.write_bytes(gzip.decompress(p.read_bytes()))
    plain_keys = []
    for k in keys:
        if k.name.endswith(".gz"):
            u = tmp_root / k.name[:-3]
            u.write_bytes(gzip.decompress(k.read_bytes()))
            k = u
        plain_keys.append(str(k))
    an = analyze(str(cap), keylogs=plain_keys or None)
    _OPEN.clear()  # (one at a time: the analyses are big)
    _OPEN[p] = (str(cap), plain_keys, an)
    return _OPEN[p]


@pytest.fixture(scope="module")
def tmp_root(tmp_path_factory):
    return tmp_path_factory.mktemp("truth20")


@pytest.fixture(autouse=True)
def _no_env_keylog(monkeypatch):
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)


# ------------------------------------------------------------------ TTFB against tshark (TLS)


@pytest.mark.parametrize("p", CAPTURES, ids=IDS)
def test_tls_message_starts_are_the_first_packet_of_their_record(p, tmp_root):
    cap, keys, an = _open(p, tmp_root)
    conns = [c for c in an.connections if c.transport == "tcp" and c.tls is not None and c.tls.decrypted
             and c.protocol in ("h2", "http/1.1", "http/1.0") and any(e.connection == c.id for e in an.exchanges)]
    if not conns:
        pytest.skip("no HTTP/2 or HTTP/1 exchange over decrypted TLS")
    recs, times = T.tls_records(cap, keys)
    by4: dict = {}
    for st in recs.values():
        by4.setdefault((st.client, st.server), []).append(st)
    checked = headers_checked = spanning = cross = by_trial = 0
    trial: set[int] = set()
    for c in conns:
        st = by4[(tuple(c.client), tuple(c.server))].pop(0)
        data = T.tls_plaintext(cap, keys, st.stream, st.client)
        if any(getattr(n, "kind", None) is NoteKind.KEYS_BY_TRIAL for n in c.notes):
            # joined mid-way, keys found by trial (analyzer/sessions/tls_late.py): tshark cannot
            # decrypt it (no ClientHello), so it is no oracle here; tests/test_late_multi.py
            # checks these requests against Chromium's NetLog instead
            assert data == (b"", b""), (c.id, "tshark decrypted a connection joined mid-way")
            by_trial += 1
            trial.add(c.id)
            continue
        assert not st.undecrypted, (c.id, "wirefall decrypted a connection tshark does not")
        if c.protocol == "h2":
            heads = [T.http2_heads(data[d], d) for d in (0, 1)]
        else:
            heads = list(T.http1_heads(data[0], data[1]))
        where: list[dict] = []
        for d in (0, 1):
            first = T.locate(st, d, len(data[d]), [h.start for h in heads[d]])
            last = T.locate(st, d, len(data[d]), [h.headers_end for h in heads[d]])
            where.append({(h.stream, h.index): (a, b) for h, a, b in zip(heads[d], first, last)})
            for r in st.records[d]:  # tshark's reassembly and the sequence numbers agree
                if r.ctype == 23 and len(r.segments) > 1:
                    assert r.segments[0] == st.first_packet(d, r.start), (c.id, d, r)
                    cross += 1
        exs = sorted((e for e in an.exchanges if e.connection == c.id), key=lambda e: e.id)
        for k, e in enumerate(exs):
            for d, pkt, tm in ((0, e.request_start_packet, e.request_start), (1, e.response_start_packet, e.response_start)):
                if d == 0 and e.pushed:
                    continue  # a pushed response's "request" is the PUSH_PROMISE (tests/test_phases.py)
                if e.stream_id is not None:
                    hs = [h for h in heads[d] if h.stream == e.stream_id]
                    key = (e.stream_id, hs[0].index) if hs else None
                else:
                    key = (None, k)
                if key not in where[d]:
                    assert pkt is None, ("wirefall has a start tshark's bytes do not hold", e.id, d)
                    continue
                at, hend = where[d][key]
                assert at is not None
                assert (pkt, tm) == (at[0], pytest.approx(times[at[0]], abs=5e-7)), (c.id, e.id, e.stream_id, d, "tshark", at)
                checked += 1
                spanning += at[0] != at[1]
                if d == 1 and hend is not None:
                    assert e.response_headers_end_packet == hend[1], (e.id, e.stream_id, "headers readable in", hend)
                    headers_checked += 1
    ids = {c.id for c in conns} - trial
    n_msgs = sum(1 for e in an.exchanges if e.connection in ids for x in (e.request_start, e.response_start) if x is not None)
    n_msgs -= sum(1 for e in an.exchanges if e.connection in ids and e.pushed)
    if p.name == "page-multi-late.pcapng":
        assert by_trial == 1  # its HTTP/2 connection opened before tcpdump started
    assert checked == n_msgs > 0  # every message, none left out
    if p.name in ("page-h2.pcapng", "page-h1.pcapng") and "lossy" in str(p.parent):
        assert spanning >= 1  # records completed by later packets: a test that can fail


# ------------------------------------------------------------------ TTFB against tshark (QUIC)


@pytest.mark.parametrize("p", CAPTURES, ids=IDS)
def test_quic_starts_are_the_packet_of_the_stream_frame_with_byte_0(p, tmp_root):
    cap, keys, an = _open(p, tmp_root)
    conns = {c.id: c for c in an.connections if c.transport == "udp" and c.quic is not None and c.quic.decrypted}
    exs = [e for e in an.exchanges if e.connection in conns and not e.pushed and e.stream_id is not None]
    if not exs:
        pytest.skip("no HTTP/3 exchange on a decrypted QUIC connection")
    truth = T.quic_stream_starts(cap, keys)
    ports = {(c.client[1], c.server[1]) for c in conns.values()} | {(c.server[1], c.client[1]) for c in conns.values()}
    if not any(k[:2] in ports for k in truth):
        # tshark finds a connection's 1-RTT keys through its handshake: one the capture joined
        # mid-way (page-h3-late) it does not decrypt; Chromium's NetLog is that truth (test_h3_late.py)
        pytest.skip("tshark decrypts no STREAM frame of these connections")
    checked = 0
    for e in exs:
        c = conns[e.connection]
        for key, pkt, tm in (((c.client[1], c.server[1], e.stream_id), e.request_start_packet, e.request_start),
                             ((c.server[1], c.client[1], e.stream_id), e.response_start_packet, e.response_start)):
            if key not in truth:  # byte 0 before the capture (a connection joined mid-way): no wire-true start
                continue
            assert pkt == truth[key], (e.id, e.stream_id, key)
            assert tm == an.time(pkt)
            checked += 1
        if e.response_headers_end_packet is not None:
            assert e.response_headers_end_packet >= e.response_start_packet
    assert checked > 0


# ---------------------------------------------------------- phases add up, in every view

_LABELS = {waterfall.PHASE_LABELS[n] for n in waterfall.PHASES}
# (the web detail names its TLS phase's start since review 31: "TLS (from TCP connected, as WebPageTest/DevTools)")
_LABELS |= set(PHASE_DETAIL_LABELS.values())


def _ms_us(s: str) -> int:
    return int(Decimal(s) * 1000)


def _web_timing(component) -> list[tuple[str, str]]:
    """The web detail's timing table rows (label, duration in ms as shown)."""
    rows = []
    stack = [component]
    while stack:
        c = stack.pop()
        if type(c).__name__ == "Tr":
            cells = list(c.children or [])
            if len(cells) == 4 and all(type(x).__name__ == "Td" for x in cells) and isinstance(cells[0].children, str) \
                    and (cells[0].children in _LABELS or cells[0].children == "total"):
                rows.append((cells[0].children, cells[2].children))
        ch = getattr(c, "children", None)
        if isinstance(ch, (list, tuple)):
            stack.extend(reversed([x for x in ch if x is not None and not isinstance(x, (str, int, float))]))
        elif ch is not None and not isinstance(ch, (str, int, float)):
            stack.append(ch)
    return rows


@pytest.mark.parametrize("p", CAPTURES, ids=IDS)
def test_phases_add_up_to_the_total_in_json_har_tui_and_web(p, tmp_root):
    from wirefall.analyzer.request_detail import request_detail
    from wirefall.ui.tui.request_view import detail_text
    from wirefall.ui.web.views import detail_layout

    _, _, an = _open(p, tmp_root)
    ph = jsonout.phases_dicts(an)
    timed = [e for e in an.exchanges if any(t is not None for t in (e.request_start, e.request_end, e.response_start, e.response_end))]
    assert set(ph) == {e.id for e in timed}
    for eid, d in ph.items():  # requests --json: µs integers that add up
        parts = [round(d[n] * 1e6) for n in waterfall.PHASES if d[n] is not None]
        assert all(x >= 0 for x in parts) and sum(parts) == round(d["total"] * 1e6), (eid, d)
        assert round(d["total"] * 1e6) == round(d["end"] * 1e6) - round(d["start"] * 1e6)
    h = export.har(an)
    for en in h["log"]["entries"] + [o for o in h["log"]["_orphans"] if "timings" in o]:
        t = en["timings"]
        assert all(v >= 0 or v == -1 for v in t.values()), t
        assert all(t[k] >= 0 for k in ("send", "wait", "receive"))
        total = sum(round(t[k] * 1000) for k in ("blocked", "dns", "connect", "send", "wait", "receive") if t[k] != -1)
        d = ph[en["_exchange"]]
        if (d["idle"] or 0) >= waterfall.PRECONNECT_IDLE:  # (the request's own time: its connection was ready long before)
            after = round(d["total"] * 1e6) - sum(round((d[n] or 0) * 1e6) for n in ("blocked", "dns", "connect", "tls", "idle"))
            assert total == round(en["time"] * 1000) == after and t["connect"] == -1, (en["_exchange"], t, en["time"])
            continue
        assert total == round(en["time"] * 1000) == round(d["total"] * 1e6), (en["_exchange"], t, en["time"])
    wf = waterfall.build(an)
    exs = {e.id: e for e in an.exchanges}
    for r in wf.rows:
        det = request_detail(an, exs[r.exchange], row=r, waterfall=wf, bodies=False)
        assert [(x.name, x.start, x.end) for x in det.phases] == list(r.phases)
        text = detail_text(det).plain
        shown = [(lab.strip(), v) for lab, v in re.findall(r"^  (\S.*?) {2,}(-?[\d.]+) ms", text, re.M)
                 if lab.strip() in _LABELS or lab.strip() == "total"]
        tot = [v for lab, v in shown if lab == "total"]
        assert len(tot) == 1 and sum(_ms_us(v) for lab, v in shown if lab != "total") == _ms_us(tot[0]), (r.exchange, shown)
        assert _ms_us(tot[0]) == round(ph[r.exchange]["total"] * 1e6)
        web = _web_timing(detail_layout(det))
        wt = [v for lab, v in web if lab == "total"]
        assert len(web) == len(shown) and len(wt) == 1, (r.exchange, web)
        assert sum(_ms_us(v) for lab, v in web if lab != "total") == _ms_us(wt[0]) == _ms_us(tot[0])


# --------------------------------------------------------------------------- DNS


def _tshark_dns(cap: str) -> dict[int, tuple[str, float, set[str]]]:
    out = T._tshark(cap, [], "-Y", "dns.flags.response == 1", "-T", "fields", "-E", "separator=\t", "-e", "frame.number",
                    "-e", "frame.time_epoch", "-e", "dns.qry.name", "-e", "dns.a", "-e", "dns.aaaa")
    res = {}
    for line in out.splitlines():
        f = (line.split("\t") + [""] * 5)[:5]
        res[int(f[0])] = (f[2].lower(), float(f[1]), {a for a in (f[3] + "," + f[4]).split(",") if a})
    return res


def _tshark_dns_queries(cap: str, answers: dict) -> tuple[dict[int, float], dict[str, list]]:
    """(answer packet -> its query's time; name -> [(query time, query packet, time of an answer
    that held an address or None)]) from tshark's queries and ``_tshark_dns``' answers."""
    out = T._tshark(cap, [], "-Y", "dns", "-T", "fields", "-E", "separator=\t", "-e", "frame.number", "-e", "frame.time_epoch",
                    "-e", "dns.qry.name", "-e", "dns.id", "-e", "dns.flags.response", "-e", "dns.response_to", "-e", "udp.srcport")
    sent: dict[int, tuple[str, float]] = {}
    answer_of: dict[int, int] = {}
    for line in out.splitlines():
        f = (line.split("\t") + [""] * 7)[:7]
        if f[4] in ("0", "False"):
            sent[int(f[0])] = (f[2].lower(), float(f[1]))
        elif f[5]:
            answer_of[int(f[5])] = int(f[0])
    queries = {a: sent[q][1] for q, a in answer_of.items() if q in sent}
    asked: dict[str, list] = {}
    for q, (name, t) in sent.items():
        a = answer_of.get(q)
        asked.setdefault(name, []).append((t, q, answers[a][1] if a in answers and answers[a][2] else None))
    return queries, asked


@pytest.mark.parametrize("p", CAPTURES, ids=IDS)
def test_dns_is_charged_only_to_the_connection_that_used_the_answer(p, tmp_root):
    cap, _, an = _open(p, tmp_root)
    wf = waterfall.build(an)
    if not wf.dns:
        pytest.skip("no DNS lookup in the capture")
    truth = _tshark_dns(cap)
    queries, asked = _tshark_dns_queries(cap, truth)
    conns = {c.id: c for c in an.connections}
    charged: dict[int, int] = {}
    for r in wf.rows:
        dns = r.phase("dns")
        if dns is None:
            continue
        assert r.first_of_connection
        c = conns[r.connection]
        mine = [x for x in wf.dns if x.used_by == c.id]
        d = max((x for x in mine if c.server[0] in x.addresses), key=lambda x: x.response_time)
        name, t, addrs = truth[d.response_packet]
        host = (c.tls and c.tls.sni) or (c.quic and c.quic.sni) or next(
            (e.authority for e in an.exchanges if e.connection == c.id and e.authority), "")
        cstart = c.connect_start if c.connect_start is not None else c.start
        assert name == waterfall._host_name(host) and c.server[0] in addrs and t <= cstart, (c.id, name, host)
        # it ends at the lookup's last answer before the connection (the name's and its CNAME
        # chain's other queries: tests/test_waterfall_dns_netlog.py), never before the address's
        end = max(truth[x.response_packet][1] for x in mine)
        assert t <= end <= cstart and dns[1] == pytest.approx(end, abs=1e-6)
        # it starts at the resolution's first query (tshark's): the queries for the name sent in
        # the second before the answer's, back to an earlier answer that gave an address
        # (Chromium asks HTTPS, then A once that is answered: one resolver job in its NetLog)
        q_at = queries[d.response_packet]
        first = q_at
        for qt, _qp, answered_with_address in sorted((x for x in asked.get(name, ()) if q_at - 1.0 < x[0] < q_at), reverse=True):
            if answered_with_address is not None and answered_with_address < q_at:
                break
            first = qt
        assert dns[0] == pytest.approx(first, abs=1e-6), (c.id, name)
        assert d.response_packet not in charged.values()  # once
        charged[c.id] = d.response_packet
        # no request for that name went over another connection between the answer and this one
        for e in an.exchanges:
            s = waterfall._exchange_start(e)
            if e.connection != c.id and s is not None and t <= s < cstart:
                assert waterfall._host_name(e.authority or "") != name, (c.id, e.id)


# ---------------------------------------------------------- QPACK encoder bytes by hand


def _prefix_int(b: bytes, i: int, n: int) -> tuple[int, int]:
    """RFC 7541 §5.1 integer with an ``n``-bit prefix at b[i]: (value, next index)."""
    mask = (1 << n) - 1
    v = b[i] & mask
    i += 1
    if v < mask:
        return v, i
    m = 0
    while True:
        v += (b[i] & 0x7F) << m
        m += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i


def _encoder_instructions(stream: bytes) -> list[tuple[int, int, bool]]:
    """(start, end, is an insertion) of each instruction after the stream type byte."""
    out = []
    i = 1
    while i < len(stream):
        s, b = i, stream[i]
        if b & 0x80:  # Insert With Name Reference: index (6-bit prefix), value (H + 7-bit length)
            _, i = _prefix_int(stream, i, 6)
            n, i = _prefix_int(stream, i, 7)
            i += n
            out.append((s, i, True))
        elif b & 0x40:  # Insert With Literal Name: name (H + 5-bit length), value
            n, i = _prefix_int(stream, i, 5)
            i += n
            n, i = _prefix_int(stream, i, 7)
            i += n
            out.append((s, i, True))
        elif b & 0x20:  # Set Dynamic Table Capacity
            _, i = _prefix_int(stream, i, 5)
            out.append((s, i, False))
        else:  # Duplicate
            _, i = _prefix_int(stream, i, 5)
            out.append((s, i, True))
    assert i == len(stream)
    return out


def test_qpack_encoder_bytes_per_request_by_hand_from_tshark(tmp_root):
    cap, keys = SAMPLES / "quic" / "page-h3.pcapng", SAMPLES / "quic" / "page-h3.keys"
    an = analyze(str(cap), keylogs=[str(keys)])
    (conn,) = [c for c in an.connections if c.protocol == "h3"]
    types = an.quic_stats[conn.id]["h3_stream_types"]
    enc_stream = {int(k.split(":")[0]): int(k.split(":")[1]) for k, v in types.items() if v == "qpack_encoder"}
    # the bytes of each encoder stream, as tshark follows them
    enc_bytes = {}
    for d, sid in enc_stream.items():
        out = T._tshark(str(cap), [str(keys)], "-q", "-z", f"follow,quic,raw,0,{sid}")
        enc_bytes[d] = bytes.fromhex("".join(ln.strip() for ln in out.splitlines()
                                             if ln.strip() and not ln.startswith(("=", "Follow", "Filter", "Node"))))
    assert [len(enc_bytes[0]), len(enc_bytes[1])] == [749, 23]
    # each HEADERS block's Encoded Required Insert Count, in packet order, with its stream
    out = T._tshark(str(cap), [str(keys)], "-Y", "http3.frame_type == 1", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
                    "-e", "udp.srcport", "-e", "quic.stream.stream_id", "-e", "http3.frame_type", "-e", "http3.frame_payload")
    blocks: list[tuple[int, int, int]] = []  # (direction, stream, encoded RIC)
    for line in out.splitlines():
        sport, sids, ftypes, payloads = line.split("\t")
        d = 0 if int(sport) == conn.client[1] else 1
        bidi = {int(s) for s in sids.split("|") if int(s) % 4 == 0}
        assert len(bidi) == 1, line  # one request stream per packet here: the block is its
        for ft, pl in zip(ftypes.split("|"), payloads.split("|")):
            if ft == "1":
                blocks.append((d, bidi.pop() if bidi else blocks[-1][1], _prefix_int(bytes.fromhex(pl), 0, 8)[0]))
    charged: dict[tuple[int, int], int] = {}
    for d in (0, 1):
        instr = _encoder_instructions(enc_bytes[d])
        inserts = [k for k, x in enumerate(instr) if x[2]]
        done = 0  # insertions already charged
        pos = 0  # bytes already charged
        for dd, sid, enc in blocks:
            if dd != d:
                continue
            ric = enc - 1 if enc else 0  # (fewer insertions than 2 x MaxEntries: no wrap to undo)
            assert ric <= len(inserts)
            if ric > done:
                end = instr[inserts[ric - 1]][1]
                charged[(d, sid)] = charged.get((d, sid), 0) + end - pos
                pos, done = end, ric
        assert pos == len(enc_bytes[d])  # every insertion is referenced on this page
    checked = 0
    for e in an.exchanges:
        assert e.request_qpack_encoder_bytes == charged.get((0, e.stream_id), 0), e.stream_id
        assert e.response_qpack_encoder_bytes == charged.get((1, e.stream_id), 0), e.stream_id
        checked += 1
    assert checked == 13 and charged[(0, 0)] > 0
    # and stats, compare (its page table, the lab's) count them with the HEADERS frames
    from wirefall.analyzer import compare, stats

    st = stats.compute(an)
    wire_req = sum(e.request_header_bytes_wire for e in an.exchanges)
    assert wire_req == 237 and st.capture.req_headers[0] == 237 + 749
    assert st.capture.qpack_encoder == [749, 23]
    page = compare.page_figures(an)
    assert page["request_header_bytes_wire"] == 237 + 749 and page["request_qpack_encoder_bytes"] == 749
    assert page["response_header_bytes_wire"] == 162 + 23 and page["response_qpack_encoder_bytes"] == 23
    # compare's request rows: each request's header bytes with its share of the encoder streams
    res = compare.compare(an, an)
    rows = {r["a"]["stream_id"]: r["a"] for r in res["matched"]}
    assert len(rows) == 13
    for e in an.exchanges:
        assert rows[e.stream_id]["header_bytes_wire"] == (e.request_header_bytes_wire + e.response_header_bytes_wire
                                                          + charged.get((0, e.stream_id), 0) + charged.get((1, e.stream_id), 0))


# ------------------------------------------------------------- the page apart from the rest

BG = SAMPLES / "page" / "bg-mixed.pcapng"  # scripts/background/page_with_background.py


def test_page_load_with_background_traffic_equals_the_page_alone(tmp_path):
    """A real headless-Chromium load on a LAN with a VM agent's long-poll to the metadata
    server (open before the page), OS telemetry from the browser's host (curl, during the load)
    and another client host fetching the same site with Chromium's User-Agent and the page's
    Referer: the page alone is the capture without the other hosts' packets and the telemetry
    lookup (tshark). Page load time, TTFB, milestones and the HAR's page are the same on both;
    exactly the other traffic is marked background, each with its reason."""
    from wirefall.analyzer import stats
    from wirefall.analyzer.waterfall import BG_LINK_LOCAL, BG_OTHER_AGENT, BG_OTHER_CLIENT

    man = json.loads(BG.with_suffix(".manifest.json").read_text())
    keys = [str(BG.with_suffix(".keys"))]
    roles = man["roles"]
    hosts = man["background"]["hosts"]
    alone = tmp_path / "alone.pcapng"
    flt = " or ".join([f"ip.addr == {h}" for h in hosts] + [f'dns.qry.name == "{n}"' for n in man["background"]["names"]])
    T._tshark(str(BG), [], "-Y", f"not ({flt})", "-w", str(alone))
    a, b = analyze(str(BG), keylogs=keys), analyze(str(alone), keylogs=keys)
    wa, wb = waterfall.build(a), waterfall.build(b)
    # the page alone: its milestones and page load time, and none of it background
    assert not any(r.background for r in wb.rows) and len(wb.rows) == 10
    assert wa.page_load_time == wb.page_load_time and 1.0 < wa.page_load_time < 5.0
    for name in ("page_start", "html_first_byte", "page_load"):
        ma, mb = wa.milestone(name), wb.milestone(name)
        assert ma is not None and (ma.time, ma.label) == (mb.time, mb.label), name
    assert wa.page_start == wb.page_start
    sa, sb = stats.compute(a).capture, stats.compute(b).capture
    assert (sa.page_load_time, sa.ttfb) == (sb.page_load_time, sb.ttfb)
    ha, hb = export.har(a)["log"]["pages"][0], export.har(b)["log"]["pages"][0]
    assert (ha["pageTimings"], ha["startedDateTime"]) == (hb["pageTimings"], hb["startedDateTime"])
    # the page starts at its document's DNS lookup, not at Chromium's own lookups before it
    # (update.googleapis.com, accounts.google.com) nor at the agent's long-poll
    doc = next(r for r in wa.rows if r.exchange == wa.page_info.document)
    assert doc.url == "https://page.test/" and doc.phases[0][0] == "dns" and wa.page_start == doc.start
    assert wa.milestone("first_packet").time < wa.page_start
    # exactly the other traffic is background (tshark: the requests to and from those hosts)
    rq = T._tshark(str(BG), keys, "-Y", "http.request || http2.headers.method", "-T", "fields", "-E", "occurrence=a",
                   "-E", "aggregator=|", "-e", "ip.src", "-e", "ip.dst", "-e", "http.request.method", "-e", "http2.headers.method")
    truth: dict[str, int] = {}
    for line in rq.splitlines():
        src, dst, m1, m2 = (line.split("\t") + ["", "", "", ""])[:4]
        who = next((h for h in hosts if h in (src, dst)), "page")
        truth[who] = truth.get(who, 0) + len([m for m in (m1 + "|" + m2).split("|") if m])
    bg = [r for r in wa.rows if r.background]
    reasons = {}
    conns = {c.id: c for c in a.connections}
    for r in bg:
        c = conns[r.connection]
        who = next(h for h in hosts if h in (c.client[0], c.server[0]))
        reasons.setdefault(who, set()).add(r.background_reason)
    assert {h: len([r for r in bg if conns[r.connection].server[0] == h or conns[r.connection].client[0] == h]) for h in hosts} \
        == {h: truth.get(h, 0) for h in hosts}
    assert truth[roles["metadata_server"]] >= 2 and truth[roles["other_host"]] == 1 and truth[roles["telemetry_server"]] == 1
    assert reasons == {roles["metadata_server"]: {BG_LINK_LOCAL.format(addr=roles["metadata_server"])},
                       roles["other_host"]: {BG_OTHER_CLIENT.format(addr=roles["other_host"], doc=roles["browser"])},
                       roles["telemetry_server"]: {next(iter(reasons[roles["telemetry_server"]]))}}
    assert next(iter(reasons[roles["telemetry_server"]])).startswith(BG_OTHER_AGENT.split("{")[0])
    assert len(wa.rows) - len(bg) == truth["page"] == 10
    # the long-poll was open before the page began and answered during it
    first_poll = min((r for r in bg if conns[r.connection].server[0] == roles["metadata_server"]), key=lambda r: r.start)
    assert first_poll.start < wa.page_start
