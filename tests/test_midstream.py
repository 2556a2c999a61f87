"""Captures that start after their connections did (tcpdump started late, a ring buffer's later
file): made here by dropping a real capture's first packets with editcap. What wirefall finds
in the cut capture is compared with what tshark finds in the whole one, where tshark has the
connection's start and so the true record boundaries."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from wirefall.oracle import crosscheck as oracle
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None or shutil.which("editcap") is None,
                                reason="tshark and editcap needed")


def _cut_head(src: Path, first: int, tmp_path: Path) -> Path:
    out = tmp_path / f"from{first}.pcapng"
    subprocess.run(["editcap", "-r", str(src), str(out), f"{first}-999999999"], check=True)
    return out


def _tshark_records(path: Path) -> dict[int, list[tuple]]:
    """packet -> [(record type, length)] of the TLS records tshark shows ending there (no keys:
    outer record types, as wirefall shows records it cannot decrypt)."""
    out = oracle.run_tshark(str(path), ["-T", "json", "--no-duplicate-keys", "-J", "frame tcp tls"])
    recs: dict[int, list[tuple]] = {}
    for pkt in json.loads(out):
        lay = pkt["_source"]["layers"]
        num = int(lay["frame"]["frame.number"])
        for t in oracle._tls_extract(lay, num, 0.0, {}):
            recs.setdefault(num, []).append(t.key)
    return recs


CASES = [(SAMPLES / "page" / "page-h1.pcapng", (20, 45, 60, 75)), (SAMPLES / "page" / "page-spdy.pcapng", (30, 50)),
         (SAMPLES / "http" / "h2-tls.pcap", (10, 40, 70)), (SHARED / "pageload-amazon" / "amazon1.cap.gz", (100, 300))]


@pytest.mark.parametrize("src,firsts", CASES, ids=[c[0].name for c in CASES])
def test_tls_records_found_in_a_capture_that_starts_mid_record(src, firsts, tmp_path):
    """In each direction wirefall finds the records that begin after the cut (a chain of record
    headers marks the first boundary); they are tshark's records of the whole capture, the same
    packet, type and length, less at most the one record the cut splits."""
    if not src.exists():
        pytest.skip(f"{src} absent")
    full = _tshark_records(src)
    mid_seen = 0
    for first in firsts:
        an = analyze(str(_cut_head(src, first, tmp_path)))
        mine: dict[tuple, list[tuple]] = {}
        for f in an.frames:
            if f.protocol == "tls" and not (f.fields and "quic_epoch" in f.fields):
                mine.setdefault((f.connection, f.direction), []).append((f.packet + first - 1, f.type, f.length))
        assert mine, first
        for (cid, d), recs in mine.items():
            c = an.connections[cid]
            ports = (c.client[1], c.server[1]) if d == 0 else (c.server[1], c.client[1])
            # tshark's records of the whole capture in this direction, from the cut on
            theirs = [(p, *k) for p, ks in sorted(full.items()) if p >= first for k in ks
                      if _ports(src, p) == ports]
            assert recs in (theirs, theirs[1:]), (first, cid, d, recs[:3], theirs[:3])
            mid_seen += any("already under way" in n for n in c.notes)
    assert mid_seen, "no cut fell inside a connection"


_PORTS: dict[Path, dict[int, tuple[int, int]]] = {}


def _ports(src: Path, packet: int) -> tuple[int, int] | None:
    """(source, destination) TCP port of a packet of the whole capture, from tshark."""
    if src not in _PORTS:
        out = oracle.run_tshark(str(src), ["-T", "fields", "-e", "frame.number", "-e", "tcp.srcport", "-e", "tcp.dstport"])
        rows = (ln.split("\t") for ln in out.splitlines())
        _PORTS[src] = {int(r[0]): (int(r[1]), int(r[2])) for r in rows if len(r) == 3 and r[1]}
    return _PORTS[src].get(packet)


QUIC_CASES = [(SAMPLES / "quic" / "aioquic-h3.pcap", SAMPLES / "quic" / "aioquic-h3.keys", (60, 200)),
              (SAMPLES / "quic" / "page-h3.pcapng", SAMPLES / "quic" / "page-h3.keys", (20, 40)),
              (SHARED / "pageload-amazon" / "amazon1.cap.gz", SHARED / "pageload-amazon" / "amazon1.key_log.txt.gz", (300, 500))]


@pytest.mark.parametrize("src,keys,firsts", QUIC_CASES, ids=[c[0].name for c in QUIC_CASES])
def test_quic_decrypted_in_a_capture_that_starts_mid_connection(src, keys, firsts, tmp_path):
    """Without the handshake, the 1-RTT secret and the connection ID length are found by trying
    the key log's secrets on a packet (the AEAD tag tells the right one), and the client/server
    roles by which label's secret opened it. Every QUIC frame wirefall then shows is the frame
    tshark shows in the same packet of the whole capture (where tshark has the handshake), and
    it shows frames for nearly every packet tshark does."""
    from wirefall.oracle.crosscheck import PROTOCOLS, TFrame, _quic_entries, tshark_frames
    from wirefall.analyzer.sessions.quic import TRIAL_NOTE

    if not src.exists():
        pytest.skip(f"{src} absent")
    full = tshark_frames(str(src), PROTOCOLS["quic"], [str(keys)])
    tried = 0
    for first in firsts:
        an = analyze(str(_cut_head(src, first, tmp_path)), keylogs=[str(keys)])
        theirs: dict[int, list] = {}
        shifted = []
        for t in full:
            if t.packet >= first:
                p = t.packet - first + 1
                theirs.setdefault(p, []).append(t.key)
                shifted.append(TFrame(p, t.time, t.values, t.type, t.headers, t.key, t.ports))
        mine: dict[int, list] = {}
        for e in _quic_entries(an, shifted)[0]:
            mine.setdefault(e.packet, []).append(e.key)
        assert mine, first
        for p, ks in mine.items():
            assert ks == theirs.get(p), (first, p, ks[:3], theirs.get(p, [])[:3])
        assert len(mine) >= 0.95 * len(theirs), (first, len(mine), len(theirs))
        for c in an.connections:
            if any(TRIAL_NOTE in n for n in c.notes):
                tried += 1
                full_c = [x for x in an.connections if x.id == c.id][0]
                assert full_c.protocol  # named
    assert tried, "no cut fell inside a QUIC connection"


def test_quic_key_trials_are_bounded_by_a_budget(tmp_path):
    """A big key log none of whose secrets fits (say, a browser's whole day of secrets and a
    capture of another host): trying them costs at most TRIAL_BUDGET AEAD attempts per
    connection, and no wrong secret is ever taken (the AEAD tag refuses all of them)."""
    import os

    import dpkt

    from wirefall.dissectors.quic import QuicConnectionDissector

    cut = _cut_head(SAMPLES / "quic" / "aioquic-h3.pcap", 60, tmp_path)
    fake = {os.urandom(32): os.urandom(32) for _ in range(3000)}
    q = QuicConnectionDissector(lambda label, cr: fake.get(cr), candidates=lambda label: list(fake))
    first = None
    with open(cut, "rb") as fh:
        for n, (_, buf) in enumerate(dpkt.pcapng.Reader(fh), 1):
            ip = dpkt.ethernet.Ethernet(buf).data
            udp = ip.data
            if first is None:
                first = (ip.src, udp.sport)
            q.datagram(0 if (ip.src, udp.sport) == first else 1, bytes(udp.data), n)
    assert 0 < q.trial_cost <= QuicConnectionDissector.TRIAL_BUDGET + 1
    assert q.client_random is None and q.flipped is None


@pytest.mark.parametrize("rel,step", [("http/h2-tls.pcap", 23), ("page/page-spdy.pcapng", 7), ("page/page-h1.pcapng", 7)])
def test_tls_decryption_resumes_after_packets_the_capture_lost(rel, step, tmp_path):
    """Every ``step``-th packet deleted: after each gap the number of TLS records lost is
    unknown, so the next record numbers are tried until one opens the next record. Every record
    wirefall decrypts after a gap is the record tshark decrypts in the same packet of the whole
    capture (same inner type and length), and most records after the gaps are decrypted."""
    src = SAMPLES / rel
    keys = [str(src.with_suffix(".keys"))]
    n = int(oracle.run_tshark(str(src), ["-T", "fields", "-e", "frame.number"]).split()[-1])
    dropped = list(range(step, n + 1, step))
    out = tmp_path / "dropped.pcapng"
    subprocess.run(["editcap", str(src), str(out), *map(str, dropped)], check=True)
    orig = [p for p in range(1, n + 1) if p not in set(dropped)]  # packet in the cut -> packet in the whole
    an = analyze(str(out), keylogs=keys)
    full: dict[int, list[tuple]] = {}
    spec = oracle.PROTOCOLS["tls"]
    for t in oracle.tshark_frames(str(src), spec, keys, spec.decode_as(an)):  # (TLS on the servers' ports)
        full.setdefault(t.packet, []).append(t.key)
    gap = {}
    for c in an.connections:
        for note in c.notes:
            if "missing from the capture" in note:
                d = 0 if "client→server" in note else 1
                gap.setdefault((c.id, d), int(note.split()[1].rstrip(":")))
    after = [f for f in an.frames if f.protocol == "tls" and (f.connection, f.direction) in gap and f.packet > gap[(f.connection, f.direction)]]
    opened = [f for f in after if (f.fields or {}).get("decrypted")]
    assert gap and len(opened) >= 0.5 * len(after) > 0, (len(opened), len(after))
    for f in opened:  # tshark shows it where its last byte came (wirefall: where it could be read, once a hole was given up)
        last = an.maps[(f.connection, f.direction)].packet_at(f.offset + 5 + f.length - 1)
        assert (f.type, f.length) in full.get(orig[last - 1], []), (f.packet, last, orig[last - 1], f.type, f.length)
    assert any("decryption resumed" in n for c in an.connections for n in c.notes)
