"""``wirefall stats``: rows that add up to the header, header sizes that do not count what the
capture does not give, one starting point for TTFB and load, every TLS record's overhead, an h2c
Upgrade's HTTP/1.1 heads apart from HPACK's first block, payload as the headers state it.

Outside truth: tshark 4.0's fields (frame.len, tcp.len, tls.record.*, http.request.line,
http2.headers, quic.long.packet_type, frame.time_epoch) and Chromium's NetLog of the late-joined
HTTP/3 load (the headers it really sent)."""
from __future__ import annotations

import gzip
import json
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import SAMPLES, need_tool, run_tool

from wirefall.analyzer import stats as S
from wirefall.analyzer.pipeline import analyze

QUIC = SAMPLES / "quic"
PAGE = SAMPLES / "page"


def _stats(cap: Path, keys: Path | None = None) -> S.Stats:
    return S.compute(analyze(str(cap), keylogs=[str(keys)] if keys else []))


def _fields(cap: Path, *fields: str, keys: Path | None = None, filt: str | None = None, agg: str = "^") -> list[list[str]]:
    args = ["tshark", "-r", str(cap), "-o", "tcp.reassemble_out_of_order:TRUE"]
    if keys:
        args += ["-o", f"tls.keylog_file:{keys}"]
    if filt:
        args += ["-Y", filt]
    args += ["-T", "fields", "-E", "separator=|", "-E", f"aggregator={agg}"]
    for f in fields:
        args += ["-e", f]
    return [ln.split("|") for ln in run_tool(*args).splitlines()]


# ------------------------------------------------------------------ 1. packets in no connection


def _eth(etype: int, payload: bytes) -> bytes:
    return b"\x00\x00\x00\x00\x00\x02" + b"\x00\x00\x00\x00\x00\x01" + struct.pack("!H", etype) + payload


def _ip(proto: int, payload: bytes, ident: int = 1, frag: int = 0x4000) -> bytes:
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, frag, 64, proto, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    s = sum(struct.unpack("!10H", h))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return h[:10] + struct.pack("!H", ~s & 0xFFFF) + h[12:] + payload


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    """page-h1c with ARP, ICMP, GRE, a held IPv4 fragment (never completed) and a UDP datagram."""
    need_tool("mergecap")
    d = tmp_path_factory.mktemp("mixed")
    pkts = [
        _eth(0x0806, struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, b"\0" * 6, bytes(4), b"\0" * 6, bytes(4))),
        _eth(0x0800, _ip(1, b"\x08\x00\xf7\xfe\x00\x01\x00\x00" + b"x" * 56)),
        _eth(0x0800, _ip(1, b"\x00\x00\xff\xfe\x00\x01\x00\x00" + b"x" * 56)),
        _eth(0x0800, _ip(47, b"\x00\x00\x08\x00" + b"g" * 20)),
        _eth(0x0800, _ip(17, struct.pack("!HHHH", 40001, 7777, 8 + 2000, 0) + b"f" * 1472, ident=77, frag=0x2000)),
        _eth(0x0800, _ip(17, struct.pack("!HHHH", 40000, 9999, 8 + 100, 0) + b"u" * 100)),
    ]
    extra = d / "extra.pcap"
    with open(extra, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, p in enumerate(pkts):
            f.write(struct.pack("<IIII", 1795976384, 556900 + i * 100, len(p), len(p)) + p)
    out = d / "mixed.pcap"
    subprocess.run(["mergecap", "-F", "pcap", "-w", str(out), str(PAGE / "page-h1c.pcapng"), str(extra)], check=True)
    return out


def test_packets_in_no_connection_make_the_rows_add_up_to_the_header(mixed):
    """tshark: the frames in no TCP or UDP conversation (no tcp.stream, no udp.stream: ARP, ICMP,
    GRE, an IPv4 fragment held for reassembly), their count and frame.len by last protocol, are
    the "not in a connection" line; with the `all` row it is the header's packets and bytes."""
    rows = _fields(mixed, "frame.len", "tcp.stream", "udp.stream", "frame.protocols", "ip.flags.mf")
    total, size = len(rows), sum(int(r[0]) for r in rows)
    outside = [r for r in rows if not r[1] and not r[2]]
    want: Counter = Counter()
    for ln, _, _, protos, mf in outside:
        layers = protos.split(":")
        key = "fragment" if mf == "1" else next(p for p in ("arp", "icmp", "gre") if p in layers)
        want[key, "n"] += 1
        want[key, "b"] += int(ln)
    st = _stats(mixed)
    o = st.outside
    assert (o["packets"], o["bytes"]) == (len(outside), sum(int(r[0]) for r in outside)) == (5, 1810)
    c = st.capture
    assert (sum(c.packets) + o["packets"], sum(c.bytes) + o["bytes"]) == (st.packets_total, st.bytes_total) == (total, size)
    got = {"arp": o["kinds"]["ARP"], "icmp": o["kinds"]["ICMP"], "gre": o["kinds"]["GRE"],
           "fragment": next(v for k, v in o["kinds"].items() if k.startswith("IPv4 fragment"))}
    assert got == {k: [want[k, "n"], want[k, "b"]] for k in ("arp", "icmp", "gre", "fragment")}
    assert sum(v[0] for v in o["kinds"].values()) == o["packets"]
    assert o["undecoded"] == {"ethertype 0x0806": 1}
    text = S.render_text(st)
    assert "Not in a connection: 5 packets, 1,810 bytes" in text and f"with the rows above: {total:,} packets, {size:,} bytes" in text
    d = S.to_dict(st)
    assert d["not_in_connection"]["packets"] == 5 and d["not_in_connection"]["kinds"]["ICMP"] == [2, 196]


def test_without_the_file_the_index_still_accounts_for_every_packet(mixed):
    """The capture file gone (an analysis from the cache): the kinds come from the packet index,
    and the rows still add up to the header (tshark's totals)."""
    an = analyze(str(mixed))
    o = S._outside(an, None)
    rows = _fields(mixed, "frame.len")
    st = S.compute(an)
    assert sum(st.capture.packets) + o["packets"] == len(rows)
    assert sum(st.capture.bytes) + o["bytes"] == sum(int(r[0]) for r in rows)
    assert o["kinds"]["ICMP"] == [2, 196] and o["kinds"]["not decoded"] == [1, 42]


# ------------------------------------------------------------------ 2. <unknown> header fields


def _netlog_requests(path: Path) -> dict[int, list[tuple[str, str]]]:
    d = json.loads(gzip.decompress(path.read_bytes()))
    names = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    out = {}
    for e in d["events"]:
        if names.get(e["type"]) == "HTTP3_HEADERS_SENT":
            hs = []
            for h in e["params"]["headers"]:
                if h.startswith(":"):
                    n, v = h[1:].split(": ", 1)
                    hs.append((":" + n, v))
                else:
                    n, v = h.split(": ", 1)
                    hs.append((n, v))
            out[int(e["params"]["stream_id"])] = hs
    return out


def test_unknown_fields_are_counted_not_sized_and_the_ratio_is_a_lower_bound():
    """page-h3-late: most QPACK entries the requests use were inserted before the capture.
    Chromium's NetLog says what was sent: each request's fields the capture shows are the
    NetLog's, the others are `<unknown>` — counted (NetLog fields − fields shown), not sized
    (decoded = the NetLog sizes of the fields shown, not 9 bytes per `<unknown>`), and the
    reduction is a lower bound of the true one (wire over the NetLog's sizes)."""
    cap, keys = QUIC / "page-h3-late.pcapng", QUIC / "page-h3-late.keys"
    an = analyze(str(cap), keylogs=[str(keys)])
    st = S.compute(an)
    sent = _netlog_requests(QUIC / "page-h3-late.netlog.json.gz")
    shown_size = unknown = true_size = 0
    for e in an.exchanges:
        truth = sent[e.stream_id]
        shown = Counter(h for h in map(tuple, e.request_headers) if h[0] != S.UNKNOWN)
        assert not shown - Counter(truth), e.stream_id  # every field shown is one the browser sent
        shown_size += sum((len(k) + len(v)) * n for (k, v), n in shown.items())
        unknown += len(truth) - sum(shown.values())
        true_size += sum(len(k) + len(v) for k, v in truth)
    c = st.capture
    assert unknown == c.headers_unknown["request"] == 332
    assert c.req_headers[1] == shown_size == 1656  # (was 4,644: 332 × 9 bytes of "<unknown>" counted)
    wire = c.req_headers[0]
    d = S.to_dict(st)["capture"]["headers"]["request"]
    assert d["reduction"] is None and d["unknown_fields"] == 332
    assert d["reduction_at_least"] == round(1 - wire / shown_size, 4) <= 1 - wire / true_size
    assert "≥69.3%" in S.render_text(st)


def test_no_first_block_on_a_connection_the_capture_joined_midway():
    """tshark: page-h3-late has no QUIC Initial (quic.long.packet_type 0), page-h3 has: the late
    one's first header block is not in the capture (all its blocks are "later"), page-h3's is."""
    late = _fields(QUIC / "page-h3-late.pcapng", "quic.long.packet_type", filt="quic.long.packet_type == 0")
    full = _fields(PAGE / "page-h3.pcapng", "quic.long.packet_type", filt="quic.long.packet_type == 0")
    assert not late and full
    st = _stats(QUIC / "page-h3-late.pcapng", QUIC / "page-h3-late.keys")
    c = st.capture
    assert c.first_block_unseen == 1 and c.req_headers_first == [0, 0] and c.resp_headers_first == [0, 0]
    assert c.req_headers_rest == c.req_headers and c.headers_unknown["request_rest"] == c.headers_unknown["request"]
    row = next(ln for ln in S.render_text(st).splitlines() if ln.split()[:2] == ["h3", "request"])
    assert row.split()[6] == "-"  # the first-block cell
    st = _stats(PAGE / "page-h3.pcapng", PAGE / "page-h3.keys")
    assert st.capture.first_block_unseen == 0 and st.capture.req_headers_first[1] > 0


# ------------------------------------------------------------------ 3. TTFB and load from the page


def test_every_row_times_the_page_from_the_page_start():
    """bg-mixed: every row's TTFB and load count the page's requests (background apart) from the
    page's first packet; the h2 row carries the whole page, so it is the `all` row (it was
    4606 ms / 7587 ms from the capture's first packet, background included); the load's end is
    tshark's frame.time_epoch of the page's last response packet."""
    cap, keys = PAGE / "bg-mixed.pcapng", PAGE / "bg-mixed.keys"
    an = analyze(str(cap), keylogs=[str(keys)])
    st = S.compute(an)
    from wirefall.analyzer.waterfall import page_of

    page = page_of(an)
    page_exs = [e for e in an.exchanges if e.id not in page.background]
    assert page.background and {an.connections[e.connection].id for e in page_exs}
    h2, c = st.protocols["h2"], st.capture
    assert (h2.ttfb, h2.page_load_time) == (c.ttfb, c.page_load_time)
    last = max((e for e in page_exs if e.response_end is not None), key=lambda e: e.response_end)
    (t_end,) = _fields(cap, "frame.time_epoch", filt=f"frame.number == {last.response_end_packet}")
    (t_start,) = _fields(cap, "frame.time_epoch", filt=f"frame.number == {page.start_packet}")
    assert c.page_load_time == pytest.approx(float(t_end[0]) - float(t_start[0]), abs=1e-6)
    for name, b in st.protocols.items():  # rows with no page request have no page times
        mine = [e for e in page_exs if st.connections[e.connection].protocol == name]
        assert (b.ttfb is None) == (not any(e.response_start is not None for e in mine)), name
        if b.page_load_time is not None:
            assert b.page_load_time <= c.page_load_time and b.ttfb >= c.ttfb
    text = S.render_text(st)  # (2026-12-04: the columns "first byte" / "last byte", what they are said below the table)
    assert "first byte, last byte: the first and the last response byte of the row's page requests (background" in text


# ------------------------------------------------------------------ 4. TLS overhead: every record

TLS13_EXPANSION = {"0x1301": 17, "0x1302": 17, "0x1303": 17}  # AEAD tag + inner content type (no padding sent)
TLS12_EXPANSION = {"0xc02f": 24, "0xc030": 24, "0xc02b": 24, "0xc02c": 24, "0x009c": 24, "0x009d": 24, "0xcca8": 16, "0xcca9": 16}


def _tls_overhead_oracle(cap: Path) -> dict[tuple[str, str], list[int]]:
    """Per (client ip:port, server ip:port): every record's 5-byte header, and for each protected
    record the suite's expansion, from tshark's fields read without keys (TLS 1.3: records with
    an opaque type; TLS 1.2: records after the direction's ChangeCipherSpec)."""
    suites = {r[0]: (r[1], r[2]) for r in _fields(cap, "tcp.stream", "tls.handshake.ciphersuite",
                                                  "tls.handshake.extensions.supported_version", filt="tls.handshake.type == 2")}
    out: dict = {}
    ccs: set = set()
    for st, src, sport, dst, dport, lens, ctypes, otypes in _fields(
            cap, "tcp.stream", "ip.src", "tcp.srcport", "ip.dst", "tcp.dstport", "tls.record.length", "tls.record.content_type",
            "tls.record.opaque_type", filt="tls"):
        if st not in suites:
            continue
        suite, ver = suites[st]
        lens_ = [x for x in lens.split("^") if x]
        rec = out.setdefault(st, {})
        key = (f"{src}:{sport}", f"{dst}:{dport}")
        v = rec.setdefault(key, 0)
        v += 5 * len(lens_)
        if "0x0304" in ver.split("^"):
            v += TLS13_EXPANSION[suite] * len([o for o in otypes.split("^") if o])
        else:
            for ct in ctypes.split("^"):
                if (st, key) in ccs:
                    v += TLS12_EXPANSION[suite]
                if ct == "20":
                    ccs.add((st, key))
        rec[key] = v
    return out


@pytest.mark.parametrize("cap", ["page/page-h2", "page/page-h1", "http/h2-tls", "page/page-spdy"])
def test_tls_overhead_counts_every_record(cap):
    """Every TLS record's header and each protected record's tag and content type (page-h2's
    second connection: 3 + 7 records, 1 + 5 protected — its Finished and NewSessionTickets — was
    0 / 0 when only application data counted), against tshark's records."""
    pcap = next(SAMPLES.glob(cap + ".pcap*"))
    st = _stats(pcap, SAMPLES / (cap + ".keys"))
    oracle = _tls_overhead_oracle(pcap)
    got = {}
    for b in st.connections:
        if b.tls_connections:
            cl, sv = [x.strip() for x in (b.endpoints or "").split("→")]
            got[cl, sv] = b.tls_record_overhead
    want = {}
    for rec in oracle.values():
        (a, b_), *_ = rec
        cl, sv = (a, b_) if (a, b_) in got else (b_, a)
        want[cl, sv] = [rec.get((cl, sv), 0), rec.get((sv, cl), 0)]
    assert got == want
    if cap == "page/page-h2":
        assert [b.tls_record_overhead for b in st.connections[:2]] == [[384, 956], [32, 120]]


# ------------------------------------------------------------------ 5. h2c Upgrade


def test_h2c_upgrade_heads_are_http1_and_the_first_block_is_hpack():
    """h2c-upgrade: the HTTP/1.1 request and 101 heads (tshark's request/status line and
    header lines) are counted under http/1.1; h2c's first request block of each connection is
    its first client HEADERS frame's HPACK block (tshark's http2.headers, its fields' names +
    values) — it was the Upgrade request's HTTP/1.1 head (358 / 255, −40.4 %)."""
    cap = SAMPLES / "http/h2c-upgrade.pcap"
    need_tool("tshark")
    heads = {"request": [0, 0], "response": [0, 0]}
    for method, uri, rver, sver, code, phrase, rlines, slines in _fields(
            cap, "http.request.method", "http.request.uri", "http.request.version", "http.response.version", "http.response.code",
            "http.response.phrase", "http.request.line", "http.response.line", filt="http.request or http.response"):
        first, lines, side = ((f"{method} {uri} {rver}", rlines, "request") if method else (f"{sver} {code} {phrase}", slines, "response"))
        lines_ = [ln.replace("\\r\\n", "\r\n") for ln in lines.split("^") if ln]
        heads[side][0] += len(first) + 2 + sum(len(ln) for ln in lines_) + 2
        heads[side][1] += sum(len(ln) - 4 for ln in lines_)  # "name: value\r\n": name + value
        # and the start line as HTTP/2's pseudo-header fields (since 2026-12-04, tests/test_h1_decoded22.py)
        heads[side][1] += len(f":method{method}:path{uri}") if method else len(f":status{code}")
    out = subprocess.run(["tshark", "-r", str(cap), "-Y", "http2.type == 1", "-T", "json", "--no-duplicate-keys", "-J", "http2 tcp"],
                         capture_output=True, text=True, check=True).stdout
    first: dict[str, tuple[int, int]] = {}
    for pkt in json.loads(out):
        lay = pkt["_source"]["layers"]
        tcp = lay["tcp"][0] if isinstance(lay["tcp"], list) else lay["tcp"]
        if tcp["tcp.srcport"] == "18082" or tcp["tcp.stream"] in first:
            continue
        streams = lay["http2"]["http2.stream"] if isinstance(lay["http2"], dict) else lay["http2"][0]["http2.stream"]
        s = next(x for x in (streams if isinstance(streams, list) else [streams]) if x.get("http2.type") == "1")
        n = int(s["http2.header.count"])
        first[tcp["tcp.stream"]] = (len(s["http2.headers"].split(":")), int(s["http2.header.length"]) - 8 * n)
    st = _stats(cap)
    h1, h2c = st.protocols["http/1.1"], st.protocols["h2c"]
    assert [h1.req_headers, h1.resp_headers] == [heads["request"], heads["response"]] == [[358, 306], [142, 74]]
    assert h1.connections == 0 and h2c.connections == 2
    assert h2c.req_headers_first == [sum(w for w, _ in first.values()), sum(d for _, d in first.values())]
    # the rows add up: `all` = h2c + http/1.1
    c = st.capture
    for k in S.HDR_KEYS:
        a = S.HDR_ATTRS[k]
        assert getattr(c, a) == [x + y for x, y in zip(getattr(h1, a), getattr(h2c, a))], k
    assert all(b.upgrade_heads for b in st.connections)
    text = S.render_text(st)
    assert not any(ln.startswith("http/1.1 ") for ln in text.split("Header bytes")[0].splitlines())  # (no traffic row)


# ------------------------------------------------------------------ 6. "-" without TLS over TCP


def test_tls_cell_is_a_dash_without_tls_over_tcp():
    """page-h3 (QUIC only; tshark: no tls.record on TCP) and a plain UDP row: '-', not 0 / 0."""
    assert not _fields(PAGE / "page-h3.pcapng", "tcp.stream", filt="tls.record")
    st = _stats(PAGE / "page-h3.pcapng", PAGE / "page-h3.keys")
    text = S.render_text(st)
    block = text.split("Traffic (", 1)[1].split("\n\n", 1)[0]
    for ln in block.splitlines()[3:]:
        if ln and not ln.startswith("Not in"):
            assert ln.split()[13] == "-", ln
    assert st.capture.tls_connections == 0


# ------------------------------------------------------------------ 7. payload under a snap length


def test_payload_is_the_length_on_the_wire_under_a_snap_length(tmp_path):
    """editcap -s 200: payload is tshark's tcp.len (from the headers), not the captured bytes
    (it was 1,186 / 2,546 against tshark's 1,186 / 351,420)."""
    need_tool("editcap")
    snap = tmp_path / "snap.pcapng"
    subprocess.run(["editcap", "-s", "200", str(PAGE / "page-h1c.pcapng"), str(snap)], check=True)
    st = _stats(snap)
    (b,) = st.connections
    client_port = b.endpoints.split("→")[0].strip().rsplit(":", 1)[1]
    want = [0, 0]
    for sport, ln in _fields(snap, "tcp.srcport", "tcp.len", filt="tcp"):
        want[0 if sport == client_port else 1] += int(ln)
    assert b.payload == st.capture.payload == want == [1186, 351420]
    assert st.payload_unread == 0
