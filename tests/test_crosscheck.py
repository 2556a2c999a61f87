"""`wirefall crosscheck` over every capture we have: wirefall's frames equal tshark's.

For every capture in sample_captures/ (key log ``X.keys`` beside ``X.pcap*`` or named in
sample_captures/README.md) and every third-party capture in ../shared/captures/ (key logs per
its README; ngtcp2-29-dsb carries its keys inside), ``crosscheck_report`` compares per packet
HTTP/2, SPDY, QUIC, HTTP/3, gQUIC, TLS-record and HTTP/1.x frames with tshark 4.0's dissection.
Asserted per protocol: no disagreement; the number of frames compared equals the number tshark
shows and the number wirefall shows; every protocol wirefall finds on a connection is one tshark
shows frames for (so no capture passes on an empty result). What tshark is known to get wrong or
cannot show is set aside by the Spec (oracle/crosscheck.py) and only those named reasons are
accepted here.

Sensitivity: altering one field of one wirefall frame per protocol makes crosscheck report
exactly that packet.
"""
from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import pytest

from wirefall.oracle import crosscheck as oracle
from wirefall.oracle.crosscheck import crosscheck, crosscheck_report
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

CAPTURE_EXT = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz", ".cap.gz")

# third-party captures and their key logs (../shared/captures/README.md)
SHARED_CASES = {
    "tls12/capture.pcap": ["tls12/keylog.txt"],
    "tls13/capture.pcap": ["tls13/keylog.txt"],
    "quic-illustrated/capture.pcap": ["quic-illustrated/keylog.txt"],
    "retina/quic.pcap": [],
    "retina/quic_kyber.pcapng": [],
    "retina/quic_retry.pcapng": [],
    "retina/tls_ciphers.pcap": [],
    "pcap2qlog/ngtcp2-29-dsb.pcapng": [],  # keys in a Decryption Secrets Block
    "pcap2qlog/multi_stream.pcap": [],
    "pcap2qlog/ack_range.pcapng": [],
    "gquic/dragon3.pcap": [],
    "pageload-amazon/amazon1.cap.gz": ["pageload-amazon/amazon1.key_log.txt.gz"],
}

# the only reasons a Spec may set frames aside (documented tshark 4.0 limitations)
ALLOWED_ASIDE = {
    oracle._H3_SPAN,
    oracle._H3_REDO,
    oracle._H3_INSIDE,
    oracle._H1_CLOSE,
    oracle._H1_HEAD,
    oracle._H1_CUT,
    oracle._TLS_MID,
    oracle._QUIC_TRIAL,
    oracle._TLS_TRIAL,
    oracle._GAP,
    oracle._TLS_NO_SH,
}

# connection protocol (as wirefall names it) -> Specs that must then compare > 0 frames
PROTO_SPECS = {"h2": ["http2"], "h2c": ["http2"], "spdy/2": ["spdy"], "spdy/3": ["spdy"], "spdy/3.1": ["spdy"],
               "h3": ["quic", "http3"], "h3-29": ["quic", "http3"], "quic": ["quic"], "gquic": ["gquic"],
               "http/1.0": ["http1"], "http/1.1": ["http1"]}


def _readme_rows() -> list[tuple[str, list[str]]]:
    """(file column, key log paths named in the keys column) of sample_captures/README.md."""
    readme = SAMPLES / "README.md"
    rows = []
    for line in (readme.read_text().splitlines() if readme.exists() else []):
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) >= 4 and cols[0] and not cols[0].startswith(("file", "---")):
            rows.append((cols[0], re.findall(r"[\w./-]+\.keys\b", cols[-1])))
    return rows


def _sample_cases() -> list[tuple[str, Path, list[Path]]]:
    rows = _readme_rows()
    cases = []
    for p in sorted(SAMPLES.rglob("*")):
        if not p.is_file() or not p.name.endswith(CAPTURE_EXT):
            continue
        rel = str(p.relative_to(SAMPLES))
        stem = re.sub(r"\.(pcapng|pcap|cap)(\.gz)?$", "", p.name)
        keys = [p.parent / f"{stem}.keys"]
        if not keys[0].exists():  # else a key log named in the capture's README row
            keys = [SAMPLES / k for col, ks in rows if rel in col or p.name in col for k in ks]
        cases.append((rel, p, [k for k in keys if k.exists()]))
    return cases


def _shared_cases() -> list[tuple[str, Path, list[Path]]]:
    return [("shared/" + rel, SHARED / rel, [SHARED / k for k in keys]) for rel, keys in SHARED_CASES.items()]


CASES = _sample_cases() + _shared_cases()

# Lossy TCP captures (sample_captures/lossy/, made through wirefall lab's loss relay): bytes that
# arrive before an earlier lost segment is retransmitted are handed to the sessions at the packet
# that fills the hole (analyzer/flows.py), which is where tshark and the receiving application
# see them; the packet map still records the packet that carried each byte.
TCP_OUT_OF_ORDER = {"lossy/page-h1.pcapng", "lossy/page-h2.pcapng", "lossy/page-spdy.pcapng"}
# Captures whose only connection predates them: tshark decrypts nothing there (no handshake), so
# every frame wirefall finds is set aside (tests/test_h3_late.py checks them against the NetLog).
TSHARK_BLIND = {"quic/page-h3-late.pcapng"}


def _params():
    for rel, path, keys in CASES:
        yield pytest.param(rel, path, keys, id=rel)


def test_every_sample_capture_is_a_case():
    """A new sample capture is picked up automatically; ones with keys get their key log."""
    names = {c[0] for c in CASES}
    assert len([n for n in names if not n.startswith("shared/")]) >= 50
    for rel, p, keys in CASES:
        if rel.startswith("shared/"):
            continue
        if (p.parent / (re.sub(r"\.(pcapng|pcap|cap)(\.gz)?$", "", p.name) + ".keys")).exists():
            assert keys, rel


def _check(an, report, blind=False):
    """Assertions shared by every capture; returns frames compared (``blind``: TSHARK_BLIND)."""
    problems = [p for r in report.values() for p in r.problems]
    assert problems == [], f"{len(problems)} disagreements with tshark, first: {problems[:5]}"
    total = 0
    for name, r in report.items():
        assert set(r.set_aside) <= ALLOWED_ASIDE, (name, r.set_aside)
        # every frame tshark shows was matched by one of wirefall's and vice versa
        assert r.matched == r.tshark_frames == r.wirefall_frames, (name, r)
        total += r.matched
    # every protocol wirefall sees on a connection is one tshark shows frames for
    need = set()
    for c in an.connections:
        need.update(PROTO_SPECS.get(c.protocol or "", []))
        if c.tls is not None and c.transport == "tcp" and c.tls.records:
            need.add("tls")
    if blind:
        assert total == 0 and any(r.set_aside for r in report.values())
        return total
    for name in need:
        assert report[name].tshark_frames > 0, f"{name}: wirefall sees it, tshark shows no frame"
    assert total > 0, "nothing compared"
    return total


@pytest.mark.parametrize("rel,path,keys", list(_params()))
def test_crosscheck_agrees_with_tshark(rel, path, keys):
    if rel.startswith("shared/") and not SHARED.is_dir():
        pytest.skip("third-party captures folder absent")
    assert path.exists(), path
    keys = [str(k) for k in keys]
    an = analyze(str(path), keylogs=keys)
    report = crosscheck_report(str(path), keys, analysis=an)
    _check(an, report, blind=rel in TSHARK_BLIND)


@pytest.mark.parametrize("rel", sorted(TCP_OUT_OF_ORDER))
def test_lossy_tcp_out_of_order_bytes_placed_at_the_filling_packet(rel):
    """The lossy captures really hold segments that arrived before a hole was filled: for
    some bytes the packet that carried them (the packet map) is earlier than the packet at
    which the frames holding them complete (where tshark shows those frames)."""
    path = SAMPLES / rel
    if not path.exists():
        pytest.skip(f"{rel} absent")
    an = analyze(str(path), keylogs=[str(path.with_suffix(".keys"))])
    early = 0
    for f in an.frames:
        if f.protocol == "tls" or f.offset < 0:
            continue
        m = an.maps.get((f.connection, f.direction, "tls")) or an.maps.get((f.connection, f.direction))
        if m is not None and m.packet_at(f.offset) > f.packet:
            raise AssertionError(f"frame at packet {f.packet} starts with a byte carried later, by {m.packet_at(f.offset)}")
    for (_cid, _d), m in [(k, v) for k, v in an.maps.items() if len(k) == 2]:
        pk = list(m.packets)
        early += sum(1 for a, b in zip(pk, pk[1:]) if b < a)  # a later offset carried by an earlier packet
    assert early > 0


# -- what the comparison covers on particular captures (numbers from tshark) ---------------------
def _report(rel, keys=()):
    path = SHARED / rel[7:] if rel.startswith("shared/") else SAMPLES / rel
    if not path.exists():
        pytest.skip(f"{path} absent")
    an = analyze(str(path), keylogs=[str(k) for k in keys])
    return an, crosscheck_report(str(path), [str(k) for k in keys], analysis=an)


def test_spdy3_headers_and_v2_framing_compared():
    an, r = _report("spdy/spdy3.1-tls.pcap", [SAMPLES / "spdy" / "spdy3.1-tls.keys"])
    assert r["spdy"].matched > 90 and r["spdy"].headers_compared >= 24
    assert r["tls"].matched > 90
    an, r = _report("spdy/spdy2-plain.pcap")
    assert r["spdy"].matched > 90 and r["spdy"].headers_compared == 0  # tshark shows no SPDY/2 headers


def test_pipelined_head_and_close_delimited_set_aside_only():
    an, r = _report("http/http1-nginx.pcap")
    h1 = r["http1"]
    # 4 pipelined requests, one HEAD: its response and the next one are what tshark mis-frames
    assert h1.set_aside == {oracle._H1_HEAD: 3} and h1.matched >= 20
    an, r = _report("http/http1-node.pcap")  # close-delimited body answered to HTTP/1.0: at the FIN
    assert r["http1"].set_aside == {} and r["http1"].matched >= 8
    an, r = _report("tls/tls13_aes128gcm.pcap", [SAMPLES / "tls" / "tls13_aes128gcm.keys"])
    assert r["http1"].set_aside == {oracle._H1_CLOSE: 1} and r["http1"].matched == 1


def test_http3_frames_inside_one_stream_frame_compared():
    an, r = _report("quic/aioquic-h3.pcap", [SAMPLES / "quic" / "aioquic-h3.keys"])
    h3 = r["http3"]
    spanning = [f for f in an.frames if f.protocol == "h3" and f.first_packet != f.packet]
    assert h3.matched >= 15 and sum(h3.set_aside.values()) == len(spanning) > 0
    assert r["quic"].matched > 300


def test_http3_retransmitted_stream_frames_set_aside_by_tshark_only():
    """Lossy HTTP/3: tshark shows a retransmitted control-stream SETTINGS (and frames parsed from
    out-of-order STREAM data) again; wirefall shows each frame once, where it first arrived."""
    an, r = _report("lossy/page-h3.pcapng", [SAMPLES / "lossy" / "page-h3.keys"])
    h3 = r["http3"]
    assert h3.set_aside.get(oracle._H3_REDO, 0) > 0 and h3.problems == []
    assert h3.matched == h3.wirefall_frames >= 40
    assert [f.type for f in an.frames if f.protocol == "h3" and f.direction == 0].count("SETTINGS") == 1


# -- sensitivity: one altered field is reported, at its packet --------------------------------------
MUTATIONS = [
    # (capture, keys, spec, frame predicate, mutation)
    ("http/h2c-curl.pcap", [], "http2", lambda f: f.protocol == "h2c" and f.type == "HEADERS",
     lambda f: setattr(f, "headers", f.headers[:-1])),
    ("http/h2c-node.pcap", [], "http2", lambda f: f.protocol == "h2c" and f.type == "DATA", lambda f: setattr(f, "flags", f.flags ^ 1)),
    ("spdy/spdy3-plain.pcap", [], "spdy", lambda f: f.type == "SYN_STREAM", lambda f: setattr(f, "flags", f.flags ^ 2)),
    ("spdy/spdy3-plain.pcap", [], "spdy", lambda f: f.type == "SYN_REPLY",
     lambda f: setattr(f, "headers", [(k, v + "x") for k, v in f.headers])),
    ("spdy/spdy2-plain.pcap", [], "spdy", lambda f: f.type == "DATA", lambda f: setattr(f, "stream_id", f.stream_id + 2)),
    ("quic/aioquic-h3.pcap", ["quic/aioquic-h3.keys"], "quic", lambda f: f.type == "STREAM",
     lambda f: f.fields.__setitem__("offset", f.fields.get("offset", 0) + 1)),
    ("quic/aioquic-h3.pcap", ["quic/aioquic-h3.keys"], "quic", lambda f: f.type == "ACK",
     lambda f: f.fields.__setitem__("largest_acknowledged", f.fields["largest_acknowledged"] + 1)),
    ("quic/aioquic-h3.pcap", ["quic/aioquic-h3.keys"], "http3", lambda f: f.protocol == "h3" and f.type == "HEADERS",
     lambda f: setattr(f, "length", f.length + 1)),
    ("tls/tls12_aes128gcm.pcap", ["tls/tls12_aes128gcm.keys"], "tls", lambda f: f.protocol == "tls" and f.type == "HANDSHAKE",
     lambda f: setattr(f, "type", "APPLICATION_DATA")),
    ("page/page-h1c.pcapng", [], "http1", lambda f: f.type == "RESPONSE", lambda f: f.fields.__setitem__("status", 404)),
    ("page/page-h1c.pcapng", [], "http1", lambda f: f.type == "REQUEST", lambda f: f.fields.__setitem__("target", "/x")),
]


@pytest.mark.parametrize("rel,keys,spec,pick,mutate", MUTATIONS, ids=[f"{m[2]}-{m[0]}" for m in MUTATIONS])
def test_one_altered_frame_is_reported(rel, keys, spec, pick, mutate):
    path = SAMPLES / rel
    keys = [str(SAMPLES / k) for k in keys]
    an = analyze(str(path), keylogs=keys)
    assert crosscheck(str(path), keys, protocols=[spec], analysis=an) == []
    an2 = copy.deepcopy(an)
    victim = next(f for f in an2.frames if pick(f))
    mutate(victim)
    # where tshark shows it: HTTP/1 messages end with their body
    problems = crosscheck(str(path), keys, protocols=[spec], analysis=an2)
    assert len(problems) == 1, problems
    assert problems[0].startswith("packet ") and f" {spec} " in problems[0]


def test_dropped_frame_is_reported():
    path = SAMPLES / "quic" / "aioquic-h3.pcap"
    keys = [str(SAMPLES / "quic" / "aioquic-h3.keys")]
    an = analyze(str(path), keylogs=keys)
    victim = next(f for f in an.frames if f.protocol == "quic" and f.type == "ACK")
    an.frames.remove(victim)
    problems = crosscheck(str(path), keys, protocols=["quic"], analysis=an)
    assert len(problems) == 1 and problems[0].startswith(f"packet {victim.packet}: quic frames differ")


def test_cli_crosscheck_with_cache_agrees_and_stores(tmp_path):
    """`wirefall crosscheck FILE --cache`: the analysis goes through the cache (stored on the
    first run, read on the second) and both runs report the same agreement with tshark."""
    import os
    import subprocess
    import sys

    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    page = ROOT / "sample_captures" / "page"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    cmd = [sys.executable, "-m", "wirefall", "crosscheck", str(page / "page-h2.pcapng"), "--keylog", str(page / "page-h2.keys"), "--cache"]
    runs = [subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert len(list((tmp_path / "xdg" / "wirefall").glob("*.wfa.zst"))) == 1
    assert runs[0].stderr == runs[1].stderr and runs[0].stdout == runs[1].stdout
    assert "0 disagreements with tshark (0 packets whose frames differ, 0 header lists that differ); 155 frames matched" in runs[1].stdout


# -- HTTP/3 cut by the capture's end, and tshark losing its place in a stream ----------------------
CUT = ("quic/aioquic-h3-cut.pcap", [SAMPLES / "quic" / "aioquic-h3-cut.keys"])


def test_http3_cut_capture_agrees_with_tshark():
    """The first 600 packets of an aioquic page load: ~130 response DATA frames are cut by the
    capture's end, and on stream 16 tshark 4.0 reads a frame header (0x3d) from the middle of a
    DATA frame. wirefall's frames must all be among tshark's where tshark can show them; what
    is set aside is counted under its own reason."""
    an, r = _report(*CUT)
    h3 = r["http3"]
    assert h3.problems == [] and r["quic"].problems == []
    cut = [f for f in an.frames if f.protocol == "h3" and (f.error or "").startswith("capture ends")]
    spanning = [f for f in an.frames if f.protocol == "h3" and f.first_packet != f.packet]
    assert len(cut) > 100
    assert h3.set_aside[oracle._H3_SPAN] == len({id(f) for f in cut + spanning})
    assert h3.set_aside[oracle._H3_INSIDE] == 1  # packet 580: UNKNOWN_0x3d(length=32) inside stream 16's DATA
    assert h3.matched == h3.wirefall_frames >= 250


def _tshark_stream_frames(path: Path, keys: list[Path]) -> list[tuple[int, int, int, int, int]]:
    """(packet, UDP source port, stream id, offset, length) of every STREAM frame, from tshark."""
    import json
    import subprocess

    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    out = subprocess.run(["tshark", "-r", str(path), "-o", f"tls.keylog_file:{keys[0]}", "-T", "json", "--no-duplicate-keys",
                          "-J", "frame udp quic"], capture_output=True, text=True, check=True).stdout
    rows = []
    as_list = lambda v: v if isinstance(v, list) else [v]
    for pkt in json.loads(out):
        lay = pkt["_source"]["layers"]
        num = int(lay["frame"]["frame.number"])
        sport = int(as_list(lay["udp"])[0]["udp.srcport"])
        for q in as_list(lay.get("quic", [])):
            for fd in as_list(q.get("quic.frame", [])) if isinstance(q, dict) else []:
                if isinstance(fd, dict) and "quic.stream.stream_id" in fd:
                    rows.append((num, sport, int(fd["quic.stream.stream_id"]), int(fd.get("quic.stream.offset", 0)), int(fd["quic.stream.length"])))
    return rows


def test_http3_frame_cut_by_the_capture_end_lasts_to_its_last_stream_bytes():
    """A DATA frame the capture's end cuts is listed at the last packet that carried its bytes
    (it was listed at its header's packet), and the bytes wirefall says are missing are the frame's
    length less what tshark shows of that stream after the frame header."""
    an, _ = _report(*CUT)
    conn = an.connections[0]
    rows = _tshark_stream_frames(SAMPLES / CUT[0], CUT[1])
    cut = [f for f in an.frames if f.protocol == "h3" and (f.error or "").startswith("capture ends")]
    assert len(cut) > 100
    vlen = lambda v: 1 if v < 64 else 2 if v < 16384 else 4 if v < 1 << 30 else 8
    for f in cut:
        sport = conn.server[1] if f.direction == 1 else conn.client[1]
        mine = [r for r in rows if r[1] == sport and r[2] == f.stream_id and r[3] + r[4] > f.offset]
        assert mine, f
        assert f.packet == max(r[0] for r in mine), f  # the last packet with its bytes
        assert f.first_packet == min(r[0] for r in mine if r[3] <= f.offset), f  # where its header starts
        seen = max(r[3] + r[4] for r in mine) - (f.offset + 1 + vlen(f.length))  # DATA: a 1-byte type
        missing = int(f.error.split()[2])
        assert seen + missing == f.length, f


def _agrees_after_editcap(rel: str, keys: str | None, tmp_path, packets: list[str], keep: bool = True):
    """Keep (``-r``) or delete ``packets`` (editcap's numbers and "A-B" ranges) of a sample; what
    is left must agree with tshark frame by frame, nothing outside the documented limits set
    aside. Returns (analysis, header lists compared)."""
    import subprocess

    if shutil.which("editcap") is None:
        pytest.skip("editcap not installed")
    keys = [str(SAMPLES / keys)] if keys else []
    out = tmp_path / f"{'keep' if keep else 'drop'}-{packets[0]}-{len(packets)}.pcapng"
    subprocess.run(["editcap", *(["-r"] if keep else []), str(SAMPLES / rel), str(out), *packets], check=True)
    an = analyze(str(out), keylogs=keys)
    report = crosscheck_report(str(out), keys, analysis=an)
    for name, r in report.items():
        assert r.problems == [], (packets[:3], name, r.problems[:3])
        assert set(r.set_aside) <= ALLOWED_ASIDE, (packets[:3], name, r.set_aside)
        assert r.matched == r.tshark_frames == r.wirefall_frames, (packets[:3], name, r)
    assert sum(r.matched for r in report.values()) > 0, packets[:3]
    return an, sum(r.headers_compared for r in report.values())


CUTS = [("page/page-h1.pcapng", "page/page-h1.keys", (30, 60, 90)), ("page/page-h2.pcapng", "page/page-h2.keys", (30, 60, 90)),
        ("page/page-spdy.pcapng", "page/page-spdy.keys", (30, 60, 90)), ("page/page-h3.pcapng", "page/page-h3.keys", (30, 60, 90)),
        ("http/h2c-nghttp.pcap", None, (40, 100)), ("http/http1-nginx.pcap", None, (10, 20)), ("spdy/spdy3-plain.pcap", None, (40, 100))]


@pytest.mark.parametrize("rel,keys,cuts", CUTS, ids=[c[0] for c in CUTS])
def test_captures_cut_short_agree_with_tshark(rel, keys, cuts, tmp_path):
    """A capture stopped early (tcpdump -c N, a ring buffer) cuts frames and bodies at its end:
    every sample cut after N packets must still agree with tshark, frame by frame."""
    for n in cuts:
        _agrees_after_editcap(rel, keys, tmp_path, [f"1-{n}"])


HEAD_CUTS = [("http/h2c-nghttp.pcap", None, (10, 40)), ("http/h2c-node.pcap", None, (10, 40)),
             ("spdy/spdy2-plain.pcap", None, (10, 100)), ("spdy/spdy3-plain.pcap", None, (10, 40, 100)),
             ("page/page-h1.pcapng", "page/page-h1.keys", (30, 60)), ("page/page-spdy.pcapng", "page/page-spdy.keys", (30, 60)),
             ("http/http1-nginx.pcap", None, (5, 10, 20))]


@pytest.mark.parametrize("rel,keys,firsts", HEAD_CUTS, ids=[c[0] for c in HEAD_CUTS])
def test_captures_started_late_agree_with_tshark(rel, keys, firsts, tmp_path):
    """A capture that starts after its connections did (the first N packets dropped with
    editcap): HTTP/2 header blocks decode as far as the entries inserted since allow, the rest
    "<unknown>" as tshark shows it; a SPDY session is named by its first control frame even when
    DATA comes first; TLS records are found mid-stream. Every frame and header list is compared."""
    headers = 0
    for first in firsts:
        an, n = _agrees_after_editcap(rel, keys, tmp_path, [f"{first}-999999999"])
        headers += n
        # a request whose :authority / Host was never seen is named by its path, not "http:///path"
        assert not [e.url for e in an.exchanges if e.url and ":///" in e.url]
    if rel.startswith("http/h2c"):
        assert headers > 0  # header lists from a table whose start is unknown were compared


DROPS = [("page/page-spdy.pcapng", "page/page-spdy.keys", (7, 23)), ("page/page-h3.pcapng", "page/page-h3.keys", (7, 23)),
         ("page/page-h2.pcapng", "page/page-h2.keys", (23,)), ("http/h2-tls.pcap", "http/h2-tls.keys", (7, 23)),
         ("http/h2c-nghttp.pcap", None, (7,)), ("http/http1-nginx.pcap", None, (7, 23)), ("spdy/spdy3-plain.pcap", None, (7, 23)),
         ("quic/aioquic-h3.pcap", "quic/aioquic-h3.keys", (7, 23))]


@pytest.mark.parametrize("rel,keys,steps", DROPS, ids=[c[0] for c in DROPS])
def test_captures_that_lost_packets_agree_with_tshark(rel, keys, steps, tmp_path):
    """Every 7th or 23rd packet deleted (a capture that dropped packets): wirefall resynchronises
    after each gap and agrees with tshark where tshark shows anything (tshark's TCP reassembly
    waits for missing bytes and shows nothing more in that direction: set aside, counted), and no
    HTTP/2 DATA frame is called a flow-control overrun because WINDOW_UPDATEs were lost."""
    import subprocess

    n = int(subprocess.run(["capinfos", "-c", "-M", str(SAMPLES / rel)], capture_output=True, text=True, check=True)
            .stdout.split()[-1]) if shutil.which("capinfos") else 200
    for step in steps:
        an, _ = _agrees_after_editcap(rel, keys, tmp_path, [str(p) for p in range(step, n + 1, step)], keep=False)
        assert not [f for f in an.frames if f.error and "flow-control window" in f.error]


REORDERED = [("page/page-h2.pcapng", "page/page-h2.keys"), ("page/page-spdy.pcapng", "page/page-spdy.keys"),
             ("http/h2c-nghttp.pcap", None), ("http/http1-nginx.pcap", None), ("quic/aioquic-h3.pcap", "quic/aioquic-h3.keys")]


@pytest.mark.parametrize("rel,keys", REORDERED, ids=[c[0] for c in REORDERED])
def test_captures_with_reordered_packets_agree_with_tshark(rel, keys, tmp_path):
    """Every 5th packet swapped with the next (timestamps kept in order), as a capture taken on
    several CPUs or interfaces can hold them: a segment may come after the ACK that covers it.
    It must be read in its place, not taken for lost (an ACK of unseen bytes is a gap only if
    nothing fills it by the end): every frame agrees with tshark's."""
    import dpkt

    src = SAMPLES / rel
    with open(src, "rb") as fh:
        try:
            rd = dpkt.pcap.Reader(fh)
        except ValueError:
            fh.seek(0)
            rd = dpkt.pcapng.Reader(fh)
        lt, pk = rd.datalink(), list(rd)
    for i in range(4, len(pk) - 1, 5):
        (t1, b1), (t2, b2) = pk[i], pk[i + 1]
        pk[i], pk[i + 1] = (t1, b2), (t2, b1)
    out = tmp_path / "reordered.pcap"
    with open(out, "wb") as fh:
        w = dpkt.pcap.Writer(fh, linktype=lt)
        for t, b in pk:
            w.writepkt(b, t)
    keys = [str(SAMPLES / keys)] if keys else []
    an = analyze(str(out), keylogs=keys)
    report = crosscheck_report(str(out), keys, analysis=an)
    for name, r in report.items():
        assert r.problems == [], (name, r.problems[:3])
        assert set(r.set_aside) <= ALLOWED_ASIDE, (name, r.set_aside)
    assert sum(r.matched for r in report.values()) >= 20
    assert not [n for c in an.connections for n in c.notes if "missing from the capture" in n]
