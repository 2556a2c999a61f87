"""Decrypted QUIC bytes (the "Decrypted QUIC" tabs) and the QUIC / HTTP/3 frame byte ranges
of the packet detail, against tshark on the same captures; and STREAM bytes that waited for a
hole reaching HTTP/3 at the filling packet, against tshark's STREAM frames."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import decrypted_quic, packet_detail
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"
TSHARK = shutil.which("tshark")

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")

# (capture, key log or None: keys inside the pcapng, or Initial packets only)
CASES = [
    ("sample_captures/page/page-h3.pcapng", "sample_captures/page/page-h3.keys"),  # Chromium, coalesced packets
    ("sample_captures/quic/aioquic-h3.pcap", "sample_captures/quic/aioquic-h3.keys"),  # datagram padding after the packet
    ("sample_captures/lossy/page-h3.pcapng", "sample_captures/lossy/page-h3.keys"),  # loss and reordering
    ("shared:quic-illustrated/capture.pcap", "shared:quic-illustrated/keylog.txt"),
    ("shared:pcap2qlog/ngtcp2-29-dsb.pcapng", None),  # draft-29, secrets in the pcapng
    ("shared:retina/quic_retry.pcapng", None),  # Retry: Initial keys from the second DCID
]


def _path(spec: str) -> Path:
    if spec.startswith("shared:"):
        if not SHARED.is_dir():
            pytest.skip("third-party captures folder absent")
        return SHARED / spec[7:]
    return ROOT / spec


def _tshark_sources(path: Path, keys: Path | None) -> list[list[tuple[str, bytes]]]:
    """``tshark -x`` per packet: [(data source name, bytes)]; the first is the frame."""
    opts = ["-o", f"tls.keylog_file:{keys}"] if keys else []
    out = subprocess.run([TSHARK, "-r", str(path), *opts, "-x"], capture_output=True, text=True, check=True).stdout
    pkts = []
    for block in out.split("\n\n"):
        if not block.strip():
            continue
        srcs: list = []
        cur = None
        for ln in block.splitlines():
            if re.match(r"^[0-9a-f]{4,}  ", ln):
                if cur is None:
                    cur = ["Frame", bytearray()]
                    srcs.append(cur)
                cur[1] += bytes.fromhex(ln.split("  ", 1)[1][:47].replace(" ", ""))
            elif ln.strip():
                cur = [ln.split(" (")[0], bytearray()]
                srcs.append(cur)
        pkts.append([(a, bytes(b)) for a, b in srcs])
    return pkts


def _tshark_json(path: Path, keys: Path | None, extra=()) -> list[dict]:
    opts = ["-o", f"tls.keylog_file:{keys}"] if keys else []
    out = subprocess.run([TSHARK, "-r", str(path), *opts, "-T", "json", "--no-duplicate-keys", *extra],
                         capture_output=True, text=True, check=True).stdout
    return [p["_source"]["layers"] for p in json.loads(out)]


def _values(obj, key: str, acc: list) -> list:
    """Every value of ``key`` in a tshark -T json tree, in document order (repeated keys
    are merged into lists by --no-duplicate-keys)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key:
                # a "_raw" value is a list [hex, position, length, mask, type]; repeated: a list of those
                merged = isinstance(v, list) and (not key.endswith("_raw") or (v and isinstance(v[0], list)))
                if merged:
                    acc.extend(v)
                else:
                    acc.append(v)
            else:
                _values(v, key, acc)
    elif isinstance(obj, list):
        for x in obj:
            _values(x, key, acc)
    return acc


def _load(spec, keyspec):
    path = _path(spec)
    keys = _path(keyspec) if keyspec else None
    if not path.exists():
        pytest.skip(f"{spec} absent")
    return path, keys, analyze(str(path), [str(keys)] if keys else [])


@pytest.mark.parametrize("spec,keyspec", CASES)
def test_decrypted_quic_bytes_equal_tshark(spec, keyspec):
    """Every "Decrypted QUIC" block tshark prints equals the packet wirefall decrypts again
    on demand (datagram re-read, keys re-derived), packet by packet, byte by byte."""
    path, keys, an = _load(spec, keyspec)
    want = _tshark_sources(path, keys)
    assert len(want) == an.packets
    src = PacketSource(str(path))
    tabs = 0
    for n in range(1, an.packets + 1):
        w = [b for name, b in want[n - 1] if name == "Decrypted QUIC"]
        got = decrypted_quic(an, src, n)
        assert [r.error for r in got if r.error] == [], n
        assert [r.data for r in got] == w, f"packet {n}"
        assert [r.title for r in got] == [f"Decrypted QUIC ({len(b)} bytes)" for b in w]
        tabs += len(w)
    assert tabs >= 5
    # only numbers are kept per packet: no plaintext, no secret in the analysis
    for (cid, _d), tab in an.quic_packets.items():
        assert all(not isinstance(getattr(tab, s), (bytes, bytearray)) for s in tab.__slots__ if s != "keys")
        # keys are named by public values: (epoch, version, suite, Initial DCID, generation, client random)
        for epoch, _v, _s, dcid, _g, cr in tab.keys:
            if epoch == 0:
                assert dcid and cr == b""
            else:
                assert dcid == b"" and cr == an.connections[cid].tls.client_random


@pytest.mark.parametrize("spec,keyspec", CASES)
def test_quic_and_http3_frame_bytes_equal_tshark(spec, keyspec):
    """In the packet detail, each QUIC frame node points at its bytes in its packet's
    "Decrypted QUIC" tab: they equal tshark's ``quic.frame`` bytes, frame by frame; each
    HTTP/3 frame complete in a packet covers exactly tshark's HTTP/3 frame (type to end of
    payload) at the same position of the tab."""
    path, keys, an = _load(spec, keyspec)
    js = _tshark_json(path, keys, ["-x"])
    src = PacketSource(str(path))
    frames = h3 = 0
    for n in range(1, an.packets + 1):
        layers = js[n - 1]
        want = [v[0] for v in _values(layers.get("quic", {}), "quic.frame_raw", [])]
        nodes = packet_detail(an, src, n)
        tabs = [b""] + [r.data for r in decrypted_quic(an, src, n)]
        got = []
        got_h3 = []
        for g in nodes:
            if g.label.startswith("QUIC IETF"):
                for pk in g.children:
                    for fn in pk.children:
                        if fn.abbrev == "quic.frame":  # (a frame, in tshark's words: not a packet left encrypted, Retry, VN)
                            assert fn.source > 0 and fn.start >= 0, (n, fn.label)
                            got.append(tabs[fn.source][fn.start : fn.end].hex())
            elif g.label.startswith("Hypertext Transfer Protocol Version 3"):
                for fn in g.children:
                    if "[packets" not in fn.label and "[continued" not in fn.label:
                        assert fn.source > 0 and fn.start >= 0, (n, fn.label)
                        got_h3.append((fn.start, fn.end, tabs[fn.source][fn.start : fn.end]))
        assert got == want, f"packet {n}"
        frames += len(want)
        # tshark's HTTP/3 frames: type field position .. end of the payload
        h3l = layers.get("http3")
        if got_h3:
            types = _values(h3l, "http3.frame_type_raw", [])
            lens = _values(h3l, "http3.frame_length_raw", [])
            lvals = _values(h3l, "http3.frame_length", [])
            spans = {(t[1], ln[1] + ln[2] + int(v)) for t, ln, v in zip(types, lens, lvals)}
            raw = bytes.fromhex(layers["frame_raw"][0])
            for a, b, data in got_h3:
                assert (a, b) in spans, (n, a, b, sorted(spans))
                assert data[: b - a] and len(data) == b - a
                h3 += 1
            assert raw  # the packet was read
    assert frames >= 8
    if "h3" in spec or "ngtcp2" in spec or "amazon" in spec:
        assert h3 >= 5


def test_decrypted_quic_without_key_log_initials_only():
    """Without a key log (an analysis loaded from the cache), Initial packets still decrypt
    again (their keys come from the DCID) and equal tshark's blocks without keys; the other
    packets say why."""
    path = SAMPLES / "quic" / "aioquic-h3.pcap"
    an = analyze(str(path), [str(path.with_suffix(".keys"))])
    an.keylog = None
    src = PacketSource(str(path))
    want = _tshark_sources(path, None)
    initials = errors = 0
    for n in range(1, an.packets + 1):
        w = [b for name, b in want[n - 1] if name == "Decrypted QUIC"]
        got = decrypted_quic(an, src, n)
        assert [r.data for r in got if r.packet_type == "Initial"] == w, n
        initials += len(w)
        for r in got:
            if r.packet_type != "Initial":
                assert r.error == "no key log with this analysis" and r.data == b""
                errors += 1
    assert initials >= 2 and errors > 300


def _stream_frames(layers) -> list[tuple[int, int, int]]:
    """(stream id, offset, length) of each STREAM frame tshark decoded in a packet."""
    out = []
    for fr in _values(layers.get("quic", {}), "quic.frame", []):
        if not isinstance(fr, dict) or "quic.stream.stream_id" not in fr:
            continue
        ln = fr.get("quic.stream.length")
        if ln is None:  # no Length field: the data runs to the end of the packet
            data = fr.get("quic.stream_data", "")
            ln = len(data.split(":")) if data else 0
        out.append((int(fr["quic.stream.stream_id"]), int(fr.get("quic.stream.offset", 0)), int(ln)))
    return out


def _h3_frames_at_readable_packets(path: Path, keys: Path) -> tuple[int, int]:
    """From tshark's STREAM frames (stream, offset, length per packet) the packet at which
    each stream byte becomes readable in order is computed; every HTTP/3 frame wirefall
    reports must start at the packet where its first byte became readable (not where it was
    first carried, when it arrived before a hole was filled) and end where the byte before
    the next frame of its stream became readable.  Returns (frames checked, frame
    boundaries whose byte was carried earlier than the packet that made it readable)."""
    an = analyze(str(path), [str(keys)])
    js = _tshark_json(path, keys)
    conn = next(c for c in an.connections if c.protocol == "h3")
    client_port = conn.client[1]
    ready: dict = {}  # (direction, stream) -> [(readable end offset, packet)]
    nxt: dict = {}
    pending: dict = {}
    carriers: dict = {}  # (direction, stream) -> [(offset, end, packet)] in capture order
    for n, layers in enumerate(js, 1):
        if "quic" not in layers or an.index.conn[n - 1] != conn.id:
            continue
        d = 0 if int(layers["udp"]["udp.srcport"]) == client_port else 1
        for sid, off, ln in _stream_frames(layers):
            key = (d, sid)
            pend = pending.setdefault(key, [])
            pend.append((off, off + ln, n))
            carriers.setdefault(key, []).append((off, off + ln, n))
            cur = nxt.get(key, 0)
            moved = True
            while moved:
                moved = False
                for a, b, p in list(pend):
                    if a <= cur:
                        pend.remove((a, b, p))
                        if b > cur:
                            cur = b
                            moved = True
            if cur > nxt.get(key, 0):
                ready.setdefault(key, []).append((cur, n))
                nxt[key] = cur

    def readable_at(key, offset):
        return next((p for end, p in ready.get(key, []) if offset < end), None)

    def carried_at(key, offset):
        return next((p for a, b, p in carriers.get(key, []) if a <= offset < b), None)

    by_stream: dict = {}
    for f in an.frames:
        if f.protocol == "h3" and f.connection == conn.id and f.offset >= 0:
            by_stream.setdefault((f.direction, f.stream_id), []).append(f)
    checked = waited = 0
    for key, frs in by_stream.items():
        frs.sort(key=lambda f: f.offset)
        for f, nf in zip(frs, frs[1:] + [None]):
            assert f.first_packet == readable_at(key, f.offset), (key, f.type, f.offset)
            waited += carried_at(key, f.offset) < f.first_packet
            last = nf.offset - 1 if nf is not None else (nxt[key] - 1 if f.error is None else None)
            if last is not None:
                assert f.packet == readable_at(key, last), (key, f.type, f.offset)
                waited += carried_at(key, last) < f.packet
            checked += 1
    return checked, waited


def test_http3_frames_at_readable_packets_lossy_capture():
    """The lossy HTTP/3 capture (30 ms RTT, 3 % loss): HTTP/3 frame packets are where
    tshark's STREAM frames make their bytes readable."""
    checked, _ = _h3_frames_at_readable_packets(SAMPLES / "lossy" / "page-h3.pcapng", SAMPLES / "lossy" / "page-h3.keys")
    assert checked >= 40


def test_stream_bytes_after_a_hole_reach_http3_at_the_filling_packet(tmp_path):
    """Regression: the aioquic capture with the server's first response packet on stream 0
    moved after the next one (as a reordering network would deliver them): the response's
    HTTP/3 DATA frame, whose end arrived first, completes at the packet that fills the hole,
    not at the packet that carried its last byte."""
    import dpkt

    src = SAMPLES / "quic" / "aioquic-h3.pcap"
    keys = SAMPLES / "quic" / "aioquic-h3.keys"
    rows = _tshark_json(src, keys)
    server_port = None
    resp = []
    for n, layers in enumerate(rows, 1):
        if "quic" not in layers:
            continue
        if server_port is None:
            server_port = int(layers["udp"]["udp.dstport"])  # the first packet is the client's Initial
        if int(layers["udp"]["udp.srcport"]) == server_port and any(sid == 0 for sid, _, _ in _stream_frames(layers)):
            resp.append(n)
    assert len(resp) >= 2
    a, b = resp[0], resp[1]
    with open(src, "rb") as f:
        r = dpkt.pcap.Reader(f)
        pkts = list(r)
        linktype = r.datalink()
    order = list(range(len(pkts)))
    order[a - 1], order[b - 1] = order[b - 1], order[a - 1]
    out = tmp_path / "reordered.pcap"
    with open(out, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=linktype, nano=False)
        for i in order:
            w.writepkt(pkts[i][1], ts=pkts[i][0])
    checked, waited = _h3_frames_at_readable_packets(out, keys)
    assert checked >= 15 and waited >= 1
