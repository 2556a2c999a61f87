"""HTTP/3 response bodies are content-decoded as HTTP/2's and HTTP/1's are: their decoded size
(``response_body_decoded_bytes``, the HAR's ``content.size``, the statistics) is the
Content-Encoding undone.  The oracle: tshark's decryption and reassembly of each response
stream (its STREAM frames' bytes by offset), framed here by HTTP/3's two varints (RFC 9114
§7.1: DATA is type 0), the DATA payloads inflated by the standard library and brotli."""
from __future__ import annotations

import gzip
import subprocess
import xml.etree.ElementTree as ET
import zlib

import brotli
import pytest

from conftest import shared

from wirefall.analyzer.pipeline import analyze

pytestmark = pytest.mark.slow


def _varint(b: bytes, p: int) -> tuple[int, int]:
    n = 1 << (b[p] >> 6)
    v = b[p] & 0x3F
    for i in range(1, n):
        v = v << 8 | b[p + i]
    return v, p + n


def _server_streams(cap: str, keys: str) -> dict[tuple[int, int], bytes]:
    """(udp.stream, stream id) -> the server's bytes of each request stream, from tshark's PDML."""
    xml = subprocess.run(["tshark", "-r", cap, "-o", f"tls.keylog_file:{keys}", "-T", "pdml", "-Y",
                          "quic.stream.stream_id && udp.srcport == 443"], capture_output=True, check=True).stdout
    parts: dict[tuple[int, int], dict[int, bytes]] = {}
    for pkt in ET.fromstring(xml).iter("packet"):
        us = next(int(f.get("show")) for f in pkt.iter("field") if f.get("name") == "udp.stream")
        for fr in pkt.iter("field"):
            if fr.get("name") != "quic.frame":
                continue
            fd = {c.get("name"): c for c in fr.iter("field")}
            if "quic.stream.stream_id" not in fd or "quic.stream_data" not in fd:
                continue
            sid = int(fd["quic.stream.stream_id"].get("show"))
            if sid & 3:
                continue
            off = int(fd["quic.stream.offset"].get("show")) if "quic.stream.offset" in fd else 0
            data = fd["quic.stream_data"].get("value") or (fd["quic.stream_data"].get("show") or "").replace(":", "")
            parts.setdefault((us, sid), {})[off] = bytes.fromhex(data)
    out = {}
    for k, chunks in parts.items():
        buf = bytearray()
        for off in sorted(chunks):
            if off <= len(buf):
                buf[off:] = chunks[off]
        out[k] = bytes(buf)
    return out


def _data(stream: bytes) -> bytes:
    body, p = bytearray(), 0
    while p < len(stream):
        t, p = _varint(stream, p)
        n, p = _varint(stream, p)
        if t == 0:
            body += stream[p : p + n]
        p += n
    return bytes(body)


def _undo(coding: str, b: bytes) -> bytes:
    if coding == "gzip":
        return gzip.decompress(b)
    if coding == "br":
        return brotli.decompress(b)
    if coding == "deflate":
        return zlib.decompress(b)
    raise AssertionError(coding)


def test_http3_response_bodies_are_decoded_as_the_wire_says(tmp_path):
    d = "pageload-amazon"
    cap_gz, keys_gz = shared(f"{d}/amazon1.cap.gz"), shared(f"{d}/amazon1.key_log.txt.gz")
    cap, keys = tmp_path / "a.pcap", tmp_path / "a.keys"
    cap.write_bytes(gzip.decompress(cap_gz.read_bytes()))
    keys.write_bytes(gzip.decompress(keys_gz.read_bytes()))
    an = analyze(str(cap), [str(keys)])
    streams = _server_streams(str(cap), str(keys))
    udp_stream = {}  # packet -> tshark's udp.stream
    out = subprocess.run(["tshark", "-r", str(cap), "-Y", "udp", "-T", "fields", "-e", "frame.number", "-e", "udp.stream"],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        a, b = line.split("\t")
        udp_stream[int(a)] = int(b)
    h3 = [e for e in an.exchanges if e.protocol == "h3" and e.status == 200]
    coded = [e for e in h3 if e.content_encoding]
    assert len(h3) == 6 and sorted(e.content_encoding for e in coded) == ["br", "br", "gzip"]
    for e in h3:
        body = _data(streams[(udp_stream[e.response_end_packet], e.stream_id)])
        assert e.response_body_bytes == len(body), e.url
        want = len(_undo(e.content_encoding, body)) if e.content_encoding else len(body)
        assert e.response_body_decoded_bytes == want, (e.url, e.content_encoding)
        assert not (e.sources or {}).get("response_body_decoded_bytes")
    assert sum(e.response_body_decoded_bytes for e in coded) == 5070 + 7210 + 19614
