"""An HTTP/3 request or response ends when its stream does (RFC 9114 §4.1): at the packet whose
STREAM frame completed the stream — its FIN known and every byte before the final size in — an
empty STREAM frame carrying only the FIN included, as HTTP/2's ends at its empty END_STREAM
DATA frame.

The outside truth: tshark's decryption of every STREAM frame (PDML: connection number, stream
id, offset, bytes, FIN, packet, time), reassembled here in capture order as a receiver does; a
stream's end is the first packet after which its final size is known and every byte below it
has come.  Compared, field by field, with every HTTP/3 exchange's ``request_end_packet`` /
``request_end`` (the client's side) and ``response_end_packet`` / ``response_end`` (the
server's) on the captures of sample_captures/README.md with HTTP/3 tshark can decrypt, and on
the real Chrome load of amazon.com (../shared/captures/pageload-amazon), where the server ends
three responses with an empty STREAM frame with FIN in the packet after the last DATA (rows 7,
12, 13: FIN in packets 562, 688, 706) — in page-h3 the FIN comes with the last DATA frame.
quic/page-h3-late is left out: its connection's handshake is before the capture, so tshark
decrypts none of it."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import SAMPLES, need_tool, run_tool, shared

from wirefall.analyzer.pipeline import analyze

CASES = {
    "page-h3": ("page/page-h3.pcapng", "page/page-h3.keys"),
    "quic-page-h3": ("quic/page-h3.pcapng", "quic/page-h3.keys"),
    "aioquic-h3": ("quic/aioquic-h3.pcap", "quic/aioquic-h3.keys"),
    "aioquic-qlog": ("quic/aioquic-qlog.pcap", "quic/aioquic-qlog.keys"),
    "aioquic-h3-cut": ("quic/aioquic-h3-cut.pcap", "quic/aioquic-h3-cut.keys"),
    "lossy-page-h3": ("lossy/page-h3.pcapng", "lossy/page-h3.keys"),
    "page-multi-late": ("quic/page-multi-late.pcapng", "quic/page-multi-late.keys"),
    "amazon": ("shared:pageload-amazon/amazon1.cap.gz", "shared:pageload-amazon/amazon1.key_log.txt.gz"),
}


def _path(p: str) -> Path:
    return shared(p[7:]) if p.startswith("shared:") else SAMPLES / p


def _keylog(keys: Path, tmp: Path) -> Path:
    if keys.suffix != ".gz":
        return keys
    import gzip
    out = tmp / keys.name[:-3]
    out.write_bytes(gzip.decompress(keys.read_bytes()))
    return out


def fin_oracle(cap: Path, keys: Path) -> tuple[dict[tuple[int, int, int], tuple[int, float]], dict[int, int]]:
    """({(tshark connection, direction, stream id): (packet, epoch time) the stream became
    complete}, {packet: tshark connection}); direction 0 is the client's (the sender of its
    connection's first packet)."""
    xml = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-T", "pdml", "-Y", "quic")
    client: dict[int, tuple[str, str]] = {}
    conn_of: dict[int, int] = {}
    chunks: dict[tuple[int, int, int], list[tuple[int, float, int, int, bool]]] = {}
    for pkt in ET.fromstring(xml).iter("packet"):
        top: dict[str, str] = {}
        for f in pkt.iter("field"):
            n = f.get("name")
            if n in ("frame.number", "frame.time_epoch", "ip.src", "ipv6.src", "udp.srcport", "quic.connection.number") \
                    and n not in top:
                top[n] = f.get("show") or ""
        if "quic.connection.number" not in top:
            continue
        num, t, cn = int(top["frame.number"]), float(top["frame.time_epoch"]), int(top["quic.connection.number"])
        src = (top.get("ip.src") or top.get("ipv6.src") or "", top.get("udp.srcport", ""))
        client.setdefault(cn, src)
        conn_of[num] = cn
        d = int(src != client[cn])
        for fr in pkt.iter("field"):
            if fr.get("name") != "quic.frame":
                continue
            fd = {c.get("name"): c for c in fr.iter("field")}
            if "quic.stream.stream_id" not in fd:
                continue
            sid = int(fd["quic.stream.stream_id"].get("show") or 0)
            off = int(fd["quic.stream.offset"].get("show") or 0) if "quic.stream.offset" in fd else 0
            raw = fd.get("quic.stream_data")
            n = len(bytes.fromhex(raw.get("value") or "")) if raw is not None else 0
            fin = "quic.stream.fin" in fd and fd["quic.stream.fin"].get("show") in ("1", "True")
            chunks.setdefault((cn, d, sid), []).append((num, t, off, n, fin))
    ends = {}
    for key, cs in chunks.items():
        have: list[tuple[int, int]] = []  # received byte ranges
        final = None
        for num, t, off, n, fin in sorted(cs):  # in capture order, as a receiver reads them
            if fin:
                final = off + n
            if n:
                have.append((off, off + n))
            if final is None:
                continue
            reach = 0
            for a, b in sorted(have):
                if a > reach:
                    break
                reach = max(reach, b)
            if reach >= final:
                ends[key] = (num, t)
                break
    return ends, conn_of


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, tmp_path_factory):
    need_tool("tshark")
    cap_rel, keys_rel = CASES[request.param]
    cap, keys = _path(cap_rel), _path(keys_rel)
    keys = _keylog(keys, tmp_path_factory.mktemp("keys"))
    an = analyze(str(cap), keylogs=[str(keys)])
    return request.param, an, *fin_oracle(cap, keys)


def test_h3_ends_are_the_streams_fin(case):
    name, an, ends, conn_of = case
    h3 = {c.id for c in an.connections if (c.protocol or "").startswith("h3")}
    checked = {0: 0, 1: 0}
    for e in an.exchanges:
        if e.connection not in h3 or e.stream_id is None or e.pushed:
            continue
        at = e.request_start_packet or e.response_start_packet
        cn = conn_of.get(at) if at is not None else None
        if cn is None:
            continue  # (a connection tshark does not decrypt: joined mid-way)
        for d, (pk, tm) in ((0, ("request_end_packet", "request_end")), (1, ("response_end_packet", "response_end"))):
            end = ends.get((cn, d, e.stream_id))
            if end is None:
                continue  # (the capture ends before that side's FIN: tests/test_h3_cut20.py)
            assert (getattr(e, pk), round(getattr(e, tm), 6)) == (end[0], round(end[1], 6)), \
                (name, e.id, e.stream_id, d, e.url)
            checked[d] += 1
    assert checked[0] and checked[1], (name, checked)


def test_amazon_empty_fin_frames():
    """The reviewer's rows of the amazon load, by number: the last DATA in 561/687/705, the
    empty STREAM frame with FIN one packet later; the request ends with the client's FIN, which
    came with its HEADERS."""
    d = shared("pageload-amazon")
    an = analyze(str(d / "amazon1.cap.gz"), keylogs=[str(d / "amazon1.key_log.txt.gz")])
    h3 = {(e.url, e.request_end_packet): e for e in an.exchanges if e.protocol == "h3"}
    rows = {551: (562, 1774569364.763573), 681: (688, 1774569365.113592), 697: (706, 1774569365.163866)}
    for req, (resp, t) in rows.items():
        (e,) = [e for (_, r), e in h3.items() if r == req]
        assert e.request_end_packet == e.request_start_packet == req
        assert e.response_end_packet == resp and round(e.response_end, 6) == t
        assert e.response_end > e.response_headers_end  # (the receive phase is no longer 0)
    (home,) = [e for e in h3.values() if e.url == "https://www.amazon.com/"]
    assert home.response_end_packet == 562


def test_joined_connection_fin_times_match_the_netlog():
    """quic/page-multi-late's static.lab.test connection (quic-go, joined mid-way: tshark decrypts
    none of it) ends most responses with an empty STREAM frame with FIN, up to 8 ms after the
    last DATA (stream 68).  Chromium's NetLog of the load (QUIC_SESSION_STREAM_FRAME_RECEIVED:
    stream, offset, length, fin; the browser's clock, 1 ms ticks, the capture's host) is the
    truth: each response ends within 3 ms of the frame that carried its FIN (before: stream 68
    ended at its last DATA, 8.5 ms before the FIN)."""
    import gzip
    import json

    cap = SAMPLES / "quic" / "page-multi-late.pcapng"
    d = json.loads(gzip.decompress((cap.parent / "page-multi-late.netlog.json.gz").read_bytes()))
    c = d["constants"]
    names = {v: k for k, v in c["logEventTypes"].items()}
    off = float(c["timeTickOffset"])
    (src,) = {e["source"]["id"] for e in d["events"] if names.get(e["type"]) == "QUIC_SESSION"
              and (e.get("params") or {}).get("host") == "static.lab.test"}
    fins = {e["params"]["stream_id"]: (e["params"]["length"], (float(e["time"]) + off) / 1000) for e in d["events"]
            if e["source"]["id"] == src and names.get(e["type"]) == "QUIC_SESSION_STREAM_FRAME_RECEIVED" and e["params"]["fin"]}
    an = analyze(str(cap), keylogs=[str(cap.with_suffix(".keys"))])
    (conn,) = {e.connection for e in an.exchanges if e.url and "//static.lab.test/" in e.url}
    ex = {e.stream_id: e for e in an.exchanges if e.connection == conn}
    empty = [sid for sid, (n, _) in fins.items() if n == 0 and sid in ex]
    assert len(empty) >= 10  # (quic-go: most FINs alone)
    for sid, (_, t) in fins.items():
        if sid in ex:
            assert abs(ex[sid].response_end - t) <= 0.003, (sid, ex[sid].response_end, t)
