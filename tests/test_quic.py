"""QUIC, HTTP/3 and gQUIC compared with tshark (and with what real clients logged)."""
from __future__ import annotations

import functools
import gzip
import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
CAPS = ROOT.parent / "shared" / "captures"
SAMPLES = ROOT / "sample_captures" / "quic"

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def _cap(rel: str) -> Path:
    p = CAPS / rel
    if not CAPS.is_dir():
        pytest.skip("third-party captures folder absent")
    assert p.exists(), p
    return p


@functools.cache
def tshark_quic(path: str, keylog: str | None = None) -> dict[int, list[tuple]]:
    """packet -> [(quic packet type, packet number, [(frame type, stream id, offset, length)] or None)]
    from tshark's PDML (None = tshark did not decrypt that QUIC packet)."""
    cmd = ["tshark", "-r", path, "-T", "pdml", "-Y", "quic"]
    if keylog:
        cmd[3:3] = ["-o", f"tls.keylog_file:{keylog}"]
    xml = subprocess.run(cmd, capture_output=True, check=True).stdout
    out: dict[int, list[tuple]] = {}
    for pkt in ET.fromstring(xml).iter("packet"):
        num = None
        quics = []
        for proto in pkt.findall("proto"):
            if proto.get("name") == "frame":
                num = int(next(f.get("show") for f in proto.iter("field") if f.get("name") == "frame.number"))
            if proto.get("name") == "quic":
                quics.append(proto)
        res = []
        for q in quics:
            top = {f.get("name"): f.get("show") for f in q.findall("field")}
            frames = []
            for fr in q.iter("field"):
                if fr.get("name") != "quic.frame":
                    continue
                fd = {c.get("name"): c.get("show") for c in fr.iter("field")}
                sizes = {c.get("name"): c.get("size") for c in fr.iter("field")}
                if "quic.stream.length" not in fd and "quic.stream_data" in sizes:
                    fd["quic.stream.length"] = sizes["quic.stream_data"]  # no LEN bit: data runs to the packet end
                ft = int(fd["quic.frame_type"])
                sid = fd.get("quic.stream.stream_id")
                if 8 <= ft <= 15:
                    off = int(fd.get("quic.stream.offset", 0))
                    ln = int(fd.get("quic.stream.length", 0))
                elif ft == 6:
                    off, ln = int(fd["quic.crypto.offset"]), int(fd["quic.crypto.length"])
                else:
                    off, ln = None, None
                if ft in (4, 5, 0x11, 0x15):
                    sid = fd.get("quic.rsts.stream_id") or fd.get("quic.ss.stream_id") or fd.get("quic.msd.stream_id") or fd.get("quic.sdb.stream_id") or sid
                frames.append((ft, int(sid) if sid is not None and 8 <= ft <= 15 else None, off, ln))
            decrypted = bool(frames) or "quic.frame" in top
            if "quic.decryption_failed" in top or ("quic.remaining_payload" in top and not frames):
                decrypted = False
            pn = top.get("quic.packet_number")
            res.append((top.get("quic.long.packet_type") if top.get("quic.header_form") == "1" else "short",
                        int(pn) if pn is not None else None, frames if decrypted else None))
        out[num] = res
    return out


@functools.cache
def wirefall(path: str, keylog: str | None = None):
    return analyze(path, keylogs=[keylog] if keylog else [])


def wirefall_quic(an) -> dict[int, list[tuple]]:
    """packet -> [(frame type, stream id, offset, length)] of decrypted QUIC frames."""
    out: dict[int, list[tuple]] = {}
    for f in an.frames:
        if f.protocol != "quic" or not f.fields or "frame_type" not in f.fields:
            continue
        ft = f.fields["frame_type"]
        if 8 <= ft <= 15 or ft == 6:
            row = (ft, f.stream_id if ft != 6 else None, f.fields.get("offset", 0), f.length)
        else:
            row = (ft, None, None, None)
        out.setdefault(f.packet, []).append(row)
    return out


def compare_with_tshark(path: Path, keylog: Path | None = None, min_frames: int = 1):
    ts = tshark_quic(str(path), str(keylog) if keylog else None)
    an = wirefall(str(path), str(keylog) if keylog else None)
    ours = wirefall_quic(an)
    want = {}
    decrypted_packets = 0
    for num, qps in ts.items():
        frames = [fr for qp in qps if qp[2] is not None for fr in qp[2]]
        decrypted_packets += sum(1 for qp in qps if qp[2] is not None)
        if frames:
            want[num] = frames
    assert decrypted_packets > 0 and sum(map(len, want.values())) >= min_frames, "tshark decrypted nothing: test would be empty"
    # connections whose handshake is not in the capture: wirefall finds their keys by trying the
    # key log's secrets (the AEAD tag confirms them), tshark does not decrypt them at all
    from wirefall.analyzer.sessions.quic import TRIAL_NOTE

    trial = {c.id for c in an.connections if any(TRIAL_NOTE in n for n in c.notes)}
    late = {n for n in ours if n not in want and an.index.conn[n - 1] in trial}
    mismatches = [(n, want.get(n), ours.get(n)) for n in sorted(set(want) | set(ours)) if want.get(n) != ours.get(n) and n not in late]
    assert not mismatches, f"{len(mismatches)} packets differ from tshark, first: {mismatches[:3]}"
    an.trial_packets = late
    return an, want


# -- third-party captures ------------------------------------------------------------------

@needs_tshark
def test_quic_illustrated_frames_equal_tshark():
    d = _cap("quic-illustrated")
    an, want = compare_with_tshark(d / "capture.pcap", d / "keylog.txt", min_frames=15)
    (c,) = [c for c in an.connections if c.quic]
    assert c.quic.version == "1" and c.quic.decrypted and c.quic.sni == "example.ulfheim.net"
    assert c.quic.alpn == "ping/1.0" and c.quic.dcid == "0001020304050607" and c.quic.scid == "635f636964"
    assert c.tls.cipher_suite == "TLS_AES_128_GCM_SHA256"
    stream0 = [f for f in an.frames if f.protocol == "quic" and f.type == "STREAM"]
    assert [(f.packet, f.direction, f.stream_id, f.length) for f in stream0] == [(5, 0, 0, 4), (6, 1, 0, 4)]


@needs_tshark
def test_ngtcp2_draft29_dsb_frames_and_http3():
    p = _cap("pcap2qlog/ngtcp2-29-dsb.pcapng")
    an, want = compare_with_tshark(p, None, min_frames=40)
    (c,) = [c for c in an.connections if c.quic]
    assert c.quic.version == "draft-29" and c.protocol == "h3-29" and c.quic.decrypted
    retry = [f for f in an.frames if f.type == "RETRY"]
    assert len(retry) == 1 and retry[0].packet == 2 and retry[0].fields["integrity_valid"] is True
    # HTTP/3 as tshark shows it: frame types per packet
    out = subprocess.run(["tshark", "-r", str(p), "-T", "fields", "-e", "frame.number", "-e", "http3.frame_type", "-Y", "http3.frame_type"],
                         capture_output=True, text=True, check=True).stdout
    ts_h3 = {int(a): [int(x) for x in b.split(",")] for a, b in (l.split("\t") for l in out.strip().splitlines())}
    ours: dict[int, list[int]] = {}
    codes = {"DATA": 0, "HEADERS": 1, "SETTINGS": 4, "MAX_PUSH_ID": 13}
    for f in an.frames:
        if f.protocol == "h3":
            ours.setdefault(f.packet, []).append(codes[f.type])
    assert ours == ts_h3
    (ex,) = an.exchanges
    assert (ex.method, ex.url, ex.status, ex.response_body_bytes) == ("GET", "https://localhost/", 404, 146)
    assert ex.request_start_packet == 10 and ex.response_start_packet == 11 and ex.response_end_packet == 11


@needs_tshark
@pytest.mark.parametrize("name", ["retina/quic.pcap", "retina/quic_kyber.pcapng", "retina/quic_retry.pcapng"])
def test_retina_initials_without_keys(name):
    p = _cap(name)
    an, want = compare_with_tshark(p, None, min_frames=3)
    quic = [c for c in an.connections if c.quic and c.quic.version]
    # SNI of every ClientHello as tshark shows it
    out = subprocess.run(["tshark", "-r", str(p), "-T", "fields", "-e", "udp.stream", "-e", "tls.handshake.extensions_server_name",
                          "-Y", "quic && tls.handshake.type == 1"], capture_output=True, text=True, check=True).stdout
    snis = {l.split("\t")[1] for l in out.strip().splitlines()}
    assert snis and snis == {c.quic.sni for c in quic}


@needs_tshark
def test_retina_split_client_hello():
    an = wirefall(str(_cap("retina/quic_kyber.pcapng")))
    ch = [f for f in an.frames if f.protocol == "tls" and f.fields["messages"] == ["ClientHello"]]
    assert len(ch) == 1 and ch[0].first_packet < ch[0].packet  # reassembled from several Initials
    crypto_packets = {f.packet for f in an.frames if f.type == "CRYPTO" and f.direction == 0}
    assert ch[0].packet == max(p for p in crypto_packets if p <= ch[0].packet)


@needs_tshark
def test_retina_retry_integrity():
    an = wirefall(str(_cap("retina/quic_retry.pcapng")))
    retry = [f for f in an.frames if f.type == "RETRY"]
    out = subprocess.run(["tshark", "-r", str(_cap("retina/quic_retry.pcapng")), "-T", "fields", "-e", "frame.number",
                          "-e", "quic.retry_integrity_tag", "-Y", "quic.long.packet_type == 3"], capture_output=True, text=True, check=True).stdout
    assert [f.packet for f in retry] == [int(l.split("\t")[0]) for l in out.strip().splitlines()]
    assert retry and all(f.fields["integrity_valid"] is True for f in retry)


@needs_tshark
def test_pageload_amazon_http3_next_to_http2():
    d = _cap("pageload-amazon")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        kl = Path(tmp) / "keys.txt"
        kl.write_bytes(gzip.decompress((d / "amazon1.key_log.txt.gz").read_bytes()))
        cap = d / "amazon1.cap.gz"
        an, want = compare_with_tshark(cap, kl, min_frames=100)
    # one QUIC connection to Google was opened before the capture began (keep-alive PINGs only):
    # its keys are found by trying the key log's secrets, which tshark does not do
    from wirefall.analyzer.sessions.quic import TRIAL_NOTE

    (late,) = [c for c in an.connections if any(TRIAL_NOTE in n for n in c.notes)]
    assert late.quic.decrypted and len(an.trial_packets) == late.stats[0].packets + late.stats[1].packets == 6
    assert {f.type for f in an.frames if f.connection == late.id} <= {"PING", "PADDING", "ACK"}
    h3 = [c for c in an.connections if c.protocol == "h3"]
    assert h3 and all(c.quic.decrypted for c in h3)
    ex = [e for e in an.exchanges if e.protocol == "h3"]
    assert ex and all(e.url and e.status for e in ex if e.response_headers)
    # the HTTP/3 requests are exactly those Chrome's NetLog shows sent over QUIC
    import sys
    sys.path.insert(0, str(ROOT / "scripts" / "lab"))
    import netlog

    logged = {(r.method, r.url, r.status) for r in netlog.requests(d / "amazon1_netlog.json.gz") if r.transport == "quic"}
    assert len(logged) >= 5 and {(e.method, e.url, e.status) for e in ex} == logged


@needs_tshark
def test_gquic_dragon3():
    p = _cap("gquic/dragon3.pcap")
    an = wirefall(str(p))
    out = subprocess.run(["tshark", "-r", str(p), "-T", "fields", "-e", "udp.srcport", "-e", "gquic.cid", "-e", "gquic.version",
                          "-e", "gquic.tag.sni", "-Y", "gquic.tag.sni"], capture_output=True, text=True, check=True).stdout
    ts = {(int(a), int(b), v, s) for a, b, v, s in (l.split("\t") for l in out.strip().splitlines())}
    g = [c for c in an.connections if c.protocol == "gquic"]
    ours = {(c.client[1], int(c.quic.dcid, 16), c.quic.version, c.quic.sni) for c in g}
    assert len(ts) == 3 and ours == ts
    # every gQUIC packet recognised, none reported as garbage
    n = subprocess.run(["tshark", "-r", str(p), "-Y", "gquic"], capture_output=True, text=True, check=True).stdout.count("\n")
    assert sum(1 for f in an.frames if f.protocol == "gquic" and f.type == "PACKET" and not f.error) == n
    # the IETF QUIC packets in the same file decoded as such
    (ietf,) = [c for c in an.connections if c.protocol not in ("gquic", None) and c.quic and c.quic.version]
    assert ietf.quic.version == "draft-29" and ietf.quic.sni
    nq = subprocess.run(["tshark", "-r", str(p), "-Y", "quic"], capture_output=True, text=True, check=True).stdout.count("\n")
    assert ietf.stats[0].packets + ietf.stats[1].packets == nq
    # gquic display-filter fields select what tshark's do
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.filter import filter_packets

    src = PacketSource(str(p))
    # the Info column of every gQUIC packet is tshark's
    from wirefall.analyzer.detail import packet_row

    info = subprocess.run(["tshark", "-r", str(p), "-Y", "gquic", "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Info"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(info) == n
    for line in info:
        k, text = line.split("\t", 1)
        assert packet_row(an, PacketSource(str(p)), int(k))[6] == text, line
    for expr in ("gquic", 'gquic.tag == "CHLO"', "gquic.packet_number == 2", "gquic && !gquic.tag"):
        theirs = subprocess.run(["tshark", "-r", str(p), "-Y", expr, "-T", "fields", "-e", "frame.number"], capture_output=True,
                                text=True, check=True).stdout.split()
        ours = filter_packets(an, src, expr)
        assert list(ours) == [int(x) for x in theirs] and theirs, expr


# -- own captures (scripts/quic/make_captures.sh) ----------------------------------------------

def _follow_quic(path: Path, keylog: Path, stream: int) -> tuple[bytes, bytes]:
    """(client bytes, server bytes) of one QUIC stream from tshark -z follow,quic,raw."""
    out = subprocess.run(["tshark", "-r", str(path), "-o", f"tls.keylog_file:{keylog}", "-q", "-z", f"follow,quic,raw,0,{stream}"],
                         capture_output=True, text=True, check=True).stdout
    body = out.split("Node 1:", 1)[1].split("\n", 1)[1]
    c, s = bytearray(), bytearray()
    for line in body.splitlines():
        if not line.strip() or line.startswith("="):
            continue
        (s if line.startswith("\t") else c).extend(bytes.fromhex(line.strip()))
    return bytes(c), bytes(s)


def _tshark_stream_bytes(path: Path, keylog: Path, client_port: int) -> dict[str, bytes]:
    """'direction:stream' -> bytes rebuilt by offset from tshark's decrypted STREAM frames."""
    cmd = ["tshark", "-r", str(path), "-o", f"tls.keylog_file:{keylog}", "-T", "pdml", "-Y", "quic.stream.stream_id"]
    root = ET.fromstring(subprocess.run(cmd, capture_output=True, check=True).stdout)
    bufs: dict[str, bytearray] = {}
    for pkt in root.iter("packet"):
        sport = int(next(f.get("show") for f in pkt.iter("field") if f.get("name") == "udp.srcport"))
        d = 0 if sport == client_port else 1
        for fr in pkt.iter("field"):
            if fr.get("name") != "quic.frame":
                continue
            fd = {c.get("name"): c for c in fr.iter("field")}
            if "quic.stream.stream_id" not in fd:
                continue
            sid = int(fd["quic.stream.stream_id"].get("show"))
            off = int(fd["quic.stream.offset"].get("show")) if "quic.stream.offset" in fd else 0
            data = bytes.fromhex(fd["quic.stream_data"].get("value")) if "quic.stream_data" in fd else b""
            b = bufs.setdefault(f"{d}:{sid}", bytearray())
            if len(b) < off + len(data):
                b.extend(bytes(off + len(data) - len(b)))
            b[off : off + len(data)] = data
    return {k: bytes(v) for k, v in bufs.items()}


def _check_streams_against_follow(path: Path, keylog: Path, an, request_streams):
    """Our reassembled bytes per stream == tshark's follow,quic,raw output; where the follow
    output repeats retransmitted frames (tshark 4.0 concatenates STREAM frames without
    reassembly), == tshark's STREAM frames placed by offset, and a prefix-equal subset of
    the follow bytes."""
    import hashlib

    from wirefall.analyzer.sessions import quic as sq

    (c,) = [c for c in an.connections if c.quic and c.quic.version]
    by_offset = _tshark_stream_bytes(path, keylog, c.client[1])
    old, sq.STREAM_DIGESTS = sq.STREAM_DIGESTS, True  # (off by default: no output shows them)
    try:
        digested = analyze(str(path), keylogs=[str(keylog)])
    finally:
        sq.STREAM_DIGESTS = old
    stats = digested.quic_stats[c.id]["streams"]
    checked = 0
    for sid in request_streams:
        cb, sb = _follow_quic(path, keylog, sid)
        assert sb, f"tshark shows no server bytes on stream {sid}"
        for d, follow in ((0, cb), (1, sb)):
            want = by_offset[f"{d}:{sid}"]
            assert stats[f"{d}:{sid}"] == {"bytes": len(want), "sha256": hashlib.sha256(want).hexdigest()}
            if len(follow) == len(want):
                assert follow == want
                checked += 1
            else:
                assert len(follow) > len(want)  # retransmissions repeated by tshark's follow
    assert checked >= len(request_streams)


@needs_tshark
def test_aioquic_capture_requests_and_stream_bytes():
    pcap, keys = SAMPLES / "aioquic-h3.pcap", SAMPLES / "aioquic-h3.keys"
    log = json.loads((SAMPLES / "aioquic-h3.client.json").read_text())["responses"]
    an = wirefall(str(pcap), str(keys))
    ex = sorted((e for e in an.exchanges if e.protocol == "h3"), key=lambda e: e.stream_id)
    assert [(e.stream_id, e.url, e.status, e.response_body_bytes) for e in ex] == \
        [(r["stream_id"], r["url"], r["status"], r["bytes"]) for r in sorted(log, key=lambda r: r["stream_id"])]
    compare_with_tshark(pcap, keys, min_frames=100)
    _check_streams_against_follow(pcap, keys, an, [e.stream_id for e in ex])


@needs_tshark
def test_chromium_capture_requests_and_stream_bytes():
    import sys
    sys.path.insert(0, str(ROOT / "scripts" / "lab"))
    import netlog

    pcap, keys = SAMPLES / "page-h3.pcapng", SAMPLES / "page-h3.keys"
    an = wirefall(str(pcap), str(keys))
    ex = [e for e in an.exchanges if e.protocol == "h3"]
    port = ex[0].url.split(":")[2].split("/")[0]
    logged = {(r.method, r.url, r.status) for r in netlog.requests(SAMPLES / "page-h3.netlog.json.gz") if f"127.0.0.1:{port}" in r.url}
    assert len(logged) >= 10 and {(e.method, e.url, e.status) for e in ex} == logged
    server = [json.loads(l) for l in (SAMPLES / "page-h3.server.log").read_text().splitlines() if l.strip()]
    assert sorted((e.stream_id, e.path, e.status, e.response_body_bytes) for e in ex) == \
        sorted((r["stream_id"], r["path"], r["status"], r["bytes"]) for r in server)
    compare_with_tshark(pcap, keys, min_frames=200)
    _check_streams_against_follow(pcap, keys, an, [e.stream_id for e in ex])


@needs_tshark
def test_filters_after_a_retry_and_a_hello_retry_request_match_tshark():
    """ngtcp2-29-dsb: a Retry, then a HelloRetryRequest. The short header coalesced after the
    client's Handshake packet is read with the CID length of the server's Initial (the Retry's
    SCID is not the one the server goes on with), and the second ClientHello's and the real
    ServerHello's fields are theirs (they follow the first ones in the Initial CRYPTO stream)."""
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.filter import filter_packets

    p = _cap("pcap2qlog/ngtcp2-29-dsb.pcapng")
    an = wirefall(str(p))
    src = PacketSource(str(p))
    for expr in ("quic.short", "quic.header_form == 0", "quic.spin_bit", "count(quic.dcid) == 2",
                 "quic.frame_type == 6 && quic.header_form == 0", "tls.handshake.ciphersuite == 0x1301",
                 "tls.handshake.extensions.supported_version == 0x0304", "tls.handshake.extensions_server_name"):
        theirs = subprocess.run(["tshark", "-r", str(p), "-Y", expr, "-T", "fields", "-e", "frame.number"], capture_output=True,
                                text=True, check=True).stdout.split()
        assert list(filter_packets(an, src, expr)) == [int(x) for x in theirs] and theirs, expr
