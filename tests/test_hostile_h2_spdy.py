"""Hostile HTTP/2 and SPDY input (issue 18, round 2): header budgets per connection and per
capture, bounded SPDY header inflation, and HTTP/2 frames longer than the peer allows.

Every input is built by ``scripts/hostile/h2_spdy_inputs.py`` from a real sample capture (its
packets first, then crafted connections, or with two bytes changed), and read by the CLI in a
subprocess (``python -m wirefall requests FILE --json``) under an address-space cap and a
timeout.  The outside truth: the sample capture's own exchanges, which must come out the same
field by field, and the facts the builders put into the crafted connections (what each block
holds, how large it is once decoded).
"""
from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wirefall.analyzer.sessions import DEFAULT_LIMITS  # noqa: E402
from conftest import vm_hwm_kb  # noqa: E402

_spec = importlib.util.spec_from_file_location("h2_spdy_inputs", ROOT / "scripts" / "hostile" / "h2_spdy_inputs.py")
hostile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hostile)

AS_LIMIT = 1536 << 20  # address space of the CLI subprocess
TIMEOUT = 60
MIB = 1 << 20


class Run:
    def __init__(self, rc, out, err, seconds, maxrss):
        self.rc, self.out, self.err, self.seconds, self.maxrss = rc, out, err, seconds, maxrss

    def json(self):
        return json.loads(self.out)


def cli(path: Path, cmd: str = "requests") -> Run:
    """``python -m wirefall CMD PATH --json`` with RLIMIT_AS = AS_LIMIT; its own peak RSS (VmHWM, polled)."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))

    out_path, err_path = path.with_suffix(f".{cmd}.json"), path.with_suffix(f".{cmd}.err")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        p = subprocess.Popen([sys.executable, "-m", "wirefall", cmd, str(path), "--json"], stdout=out, stderr=err,
                             cwd=ROOT, env=env, preexec_fn=cap)
        peak = 0
        while True:
            peak = max(peak, vm_hwm_kb(p.pid))  # (its own peak: see conftest.vm_hwm_kb)
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > TIMEOUT:
                p.kill()
                p.wait()
                pytest.fail(f"{path.name}: no answer in {TIMEOUT} s")
            time.sleep(0.02)
    p.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - t0
    return Run(p.returncode, out_path.read_bytes(), err_path.read_text(errors="replace"), seconds, peak << 10)


def _sample_run(tmp_path: Path, sample: Path) -> list[dict]:
    copy = tmp_path / sample.name
    copy.write_bytes(sample.read_bytes())
    r = cli(copy)
    assert r.rc == 0, r.err
    return r.json()


def assert_sample_kept(got: list[dict], sample: list[dict]) -> None:
    """The sample's exchanges (its connections come first, so their ids are the same) are
    there unchanged, field by field."""
    ids = {e["connection"] for e in sample}
    mine = [e for e in got if e["connection"] in ids]
    assert len(mine) == len(sample)
    for a, b in zip(sample, mine):
        assert a == b, {k: (a[k], b[k]) for k in a if a[k] != b[k]}


def _summary(path: Path) -> dict:
    r = cli(path, "summary")
    assert r.rc == 0, r.err
    return r.json()


def _units(pairs) -> int:
    return sum(len(k) + len(v) + 32 for k, v in pairs)


# ------------------------------------------------------------------ finding 2: HPACK


def test_hpack_bomb_stops_at_the_connection_budget(tmp_path):
    """597 KB of HPACK (one 4 KB entry indexed, then 2300 blocks of 250 references to it: 2.3 GB
    of header lists) ran out of memory at 3.9 GB.  Now the blocks are decoded until the
    connection's ``header_decoded_bytes`` budget, the rest are kept undecoded and marked, the
    connection says so once, and the sample's exchanges are untouched."""
    cap = tmp_path / "h2-hpack-bomb.pcap"
    cap.write_bytes(hostile.h2_hpack_bomb(streams=2300))
    r = cli(cap)
    assert r.rc == 0, r.err
    assert r.seconds < 30 and r.maxrss < 700 * MIB, (r.seconds, r.maxrss)
    got = r.json()
    assert_sample_kept(got, _sample_run(tmp_path, hostile.H2C_SAMPLE))

    bomb = sorted((e for e in got if e["connection"] == 3), key=lambda e: e["stream_id"])
    assert [e["stream_id"] for e in bomb] == list(range(1, 2 + 2 * 2300, 2))
    big = ("x-big", "B" * 4000)
    # what the builder's blocks hold, in RFC 7541 sizes (what the budget counts)
    first = [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "bomb"), big]
    budget = DEFAULT_LIMITS["header_decoded_bytes"]
    # stream 1 and its answer, then the requests of the first burst (~250 of them, in 64 KB)
    used, decoded = _units(first) + _units([(":status", "200")]), 1
    for i in range(2300):
        block = _units([(":method", "GET"), (":scheme", "http"), (":path", f"/i{i}")] + [big] * 250)
        if used + block > budget:
            break
        used += block
        decoded += 1
    assert 50 < decoded < 100
    assert bomb[0]["request_headers"] == [list(h) for h in first] and bomb[0]["status"] == 200
    for i, e in enumerate(bomb[1:decoded]):
        assert e["request_headers"][:3] == [[":method", "GET"], [":scheme", "http"], [":path", f"/i{i}"]]
        assert e["request_headers"][3:] == [list(big)] * 250
        # (no :authority in these blocks; the answers came after the budget ran out: not decoded)
        assert e["url"] == f"http://<unknown>/i{i}" and e["method"] == "GET"  # (nor SNI, nor DNS: analyzer.authority)
        assert e["status"] is None and e["error"] == "header block not decoded: budget header_decoded_bytes ran out"
    for e in bomb[decoded:]:
        assert e["request_headers"] == [] and e["url"] is None and e["status"] is None
        assert e["error"] == "header block not decoded: budget header_decoded_bytes ran out"
    # the block the budget ran out in was decoded: its size is known; later ones are not decoded
    # at all (a budget that ran out stays so: no HPACK table to follow for them)
    assert bomb[decoded]["request_header_bytes_decoded"] == 7 + 3 + 7 + 4 + 5 + len(f"/i{decoded - 1}") + 250 * 4005
    assert all(e["request_header_bytes_decoded"] == 0 for e in bomb[decoded + 1:])
    summary = _summary(cap)
    notes = summary["connections"][3]["notes"]
    assert [n for n in notes if "header_decoded_bytes" in n] == [n for n in notes if "budget" in n]
    assert len(notes) == 1 and notes[0].startswith("budget header_decoded_bytes (67108864 units per connection) ran out")
    for c in summary["connections"][:3]:
        assert c["notes"] == []
    assert summary["warnings"] == []  # the capture's budget was not reached


def test_hpack_bombs_on_several_connections_stop_at_the_capture_budget(tmp_path):
    """Five connections, each within its own budget's reach: the capture's budget stops them."""
    n = 70
    cap = tmp_path / "h2-hpack-bomb-5.pcap"
    cap.write_bytes(hostile.h2_hpack_bomb(streams=n, conns=5))
    r = cli(cap)
    assert r.rc == 0, r.err
    assert r.seconds < 30 and r.maxrss < 900 * MIB, (r.seconds, r.maxrss)
    got = r.json()
    assert_sample_kept(got, _sample_run(tmp_path, hostile.H2C_SAMPLE))
    per_conn = []
    for c in range(3, 8):
        ex = [e for e in got if e["connection"] == c]
        assert len(ex) == n + 1
        for e in ex:  # a block is decoded whole, or not at all (and then the exchange says so)
            assert len(e["request_headers"]) in (0, 5, 253) and len(e["response_headers"]) in (0, 1)
            assert (e["error"] is None) == (len(e["request_headers"]) > 0 and e["status"] == 200)
        per_conn.append(sum(_units(e["request_headers"]) + _units(e["response_headers"]) for e in ex))
    conn_budget, capture_budget = DEFAULT_LIMITS["header_decoded_bytes"], DEFAULT_LIMITS["header_decoded_bytes_capture"]
    assert all(u <= conn_budget for u in per_conn)
    assert capture_budget - conn_budget < sum(per_conn) <= capture_budget
    assert per_conn[-1] < per_conn[0]  # the last connection got what the capture had left
    summary = _summary(cap)
    assert len(summary["warnings"]) == 1 and summary["warnings"][0].startswith("budget header_decoded_bytes for the capture")


# ------------------------------------------------------------------ finding 2: SPDY


SPDY_REQ = [(":method", "GET"), (":path", "/s3"), (":host", "spdy.test"), (":scheme", "http"), (":version", "HTTP/1.1")]
SPDY_RESP = [(":status", "200 OK"), (":version", "HTTP/1.1"), ("content-type", "text/plain")]
NOT_DECODED = "header block not decoded: budget {} ran out"


def _spdy_bomb_exchanges(got, conn, blocks):
    bomb = sorted((e for e in got if e["connection"] == conn), key=lambda e: e["stream_id"])
    assert [e["stream_id"] for e in bomb] == list(range(1, 2 * blocks, 2))
    assert all(e["response_body_bytes"] == 2 for e in bomb)  # DATA "ok" on every stream, counted
    return bomb


def test_spdy_header_bomb_stops_at_the_connection_budget(tmp_path):
    """1.2 MB of SPDY (1200 zlib blocks of ~1 KB, each inflating to 1 MB) took 1.0 GB and more.
    Blocks are decoded until the connection's ``header_decoded_bytes``; after it, none is
    decoded (nor inflated: a budget that ran out stays so); framing and DATA go on; the
    connection says so once; the sample's exchanges are untouched."""
    blocks = 1200
    cap = tmp_path / "spdy-header-bomb.pcap"
    cap.write_bytes(hostile.spdy_header_bomb(blocks=blocks))
    r = cli(cap)
    assert r.rc == 0, r.err
    assert r.seconds < 30 and r.maxrss < 700 * MIB, (r.seconds, r.maxrss)
    got = r.json()
    assert_sample_kept(got, _sample_run(tmp_path, hostile.SPDY_SAMPLE))
    bomb = _spdy_bomb_exchanges(got, 1, blocks)
    req = SPDY_REQ + [("x-bomb", "A" * 1_000_000)]
    # stream 1 and its answer, then the other requests, then their answers
    decoded = (DEFAULT_LIMITS["header_decoded_bytes"] - _units(SPDY_RESP)) // _units(req)
    assert sum(1 for e in bomb if e["request_headers"]) == decoded  # the budget's share, no more, no fewer
    for e in bomb[:decoded]:
        want = [list(h) for h in req]
        want[1][1] = f"/s{min(e['stream_id'], 3)}"
        assert e["request_headers"] == want and e["method"] == "GET"
    assert bomb[0]["status"] == 200 and bomb[0]["content_type"] == "text/plain" and bomb[0]["error"] is None
    for e in bomb[1:]:
        assert e["status"] is None and e["response_headers"] == [] and e["error"] == NOT_DECODED.format("header_decoded_bytes")
    for e in bomb[decoded:]:
        assert e["request_headers"] == [] and e["method"] is None
    summary = _summary(cap)
    notes = summary["connections"][1]["notes"]  # once, not per frame
    assert len(notes) == 1 and notes[0].startswith("budget header_decoded_bytes (67108864 units per connection) ran out")
    assert summary["warnings"] == []


def test_spdy_header_bombs_on_several_connections_stop_at_the_capture_budget(tmp_path):
    blocks, conns = 100, 3
    cap = tmp_path / "spdy-header-bomb-3.pcap"
    cap.write_bytes(hostile.spdy_header_bomb(blocks=blocks, conns=conns))
    r = cli(cap)
    assert r.rc == 0, r.err
    assert r.seconds < 30 and r.maxrss < 700 * MIB, (r.seconds, r.maxrss)
    got = r.json()
    assert_sample_kept(got, _sample_run(tmp_path, hostile.SPDY_SAMPLE))
    per_conn = []
    for c in range(1, 1 + conns):
        bomb = _spdy_bomb_exchanges(got, c, blocks)
        n = len([e for e in bomb if e["request_headers"]])
        assert all(e["request_headers"] for e in bomb[:n]) and not any(e["request_headers"] for e in bomb[n:])
        per_conn.append(sum(_units(e["request_headers"]) + _units(e["response_headers"]) for e in bomb))
    conn_budget, capture_budget = DEFAULT_LIMITS["header_decoded_bytes"], DEFAULT_LIMITS["header_decoded_bytes_capture"]
    assert all(u <= conn_budget for u in per_conn)
    assert capture_budget - _units(SPDY_REQ) - 1_000_040 < sum(per_conn) <= capture_budget
    assert per_conn[-1] < per_conn[0]
    summary = _summary(cap)
    assert len(summary["warnings"]) == 1 and summary["warnings"][0].startswith("budget header_decoded_bytes for the capture")


def test_spdy_decompression_stops_at_the_connection_and_capture_budgets(tmp_path):
    """Blocks over the per-block cap (8 MB each from 8 KB) are not decoded but inflated, to keep
    the zlib stream in step: that work is what ``decompress_bytes`` bounds, per connection and
    per capture; past it the connection's zlib streams stop (said once per direction)."""
    blocks, conns, value = 40, 5, 8_000_000
    cap = tmp_path / "spdy-inflate-bomb.pcap"
    cap.write_bytes(hostile.spdy_header_bomb(blocks=blocks, conns=conns, value_len=value))
    assert cap.stat().st_size < 2 << 20
    r = cli(cap)
    assert r.rc == 0, r.err
    assert r.seconds < 30 and r.maxrss < 500 * MIB, (r.seconds, r.maxrss)
    got = r.json()
    assert_sample_kept(got, _sample_run(tmp_path, hostile.SPDY_SAMPLE))
    raw = len(hostile._spdy3_nv([(k.encode(), v.encode()) for k, v in SPDY_REQ] + [(b"x-bomb", b"A" * value)]))
    over_cap = f"header block inflates beyond {DEFAULT_LIMITS['spdy_header_block']} bytes (cap); discarded"
    stopped = "header block not decoded: budget decompress_bytes ran out (header decompression stopped)"
    inflated = []
    for c in range(1, 1 + conns):
        bomb = _spdy_bomb_exchanges(got, c, blocks)
        n = len([e for e in bomb if e["error"] == over_cap])
        assert [e["error"] for e in bomb] == [over_cap] * n + [stopped] * (blocks - n)
        assert all(e["request_headers"] == [] and e["status"] is None for e in bomb[1:])
        inflated.append(n)
    per_conn = DEFAULT_LIMITS["decompress_bytes"] // raw
    assert inflated[:3] == [per_conn] * 3  # (the next one ran out part-way: not decoded either way)
    assert sum(inflated) * raw <= DEFAULT_LIMITS["decompress_bytes_capture"] + 5 * raw
    assert inflated[-1] < inflated[0]
    summary = _summary(cap)
    assert len(summary["warnings"]) == 1 and summary["warnings"][0].startswith("budget decompress_bytes for the capture")
    for c, n in zip(summary["connections"][1:], inflated):
        stops = [x for x in c["notes"] if "header decompression stopped" in x]
        caps = [x for x in c["notes"] if x.endswith(over_cap)]  # (a frame over the per-block cap says so)
        budgets = [x for x in c["notes"] if x.startswith("budget decompress_bytes")]
        assert len(stops) <= 2 and len(caps) == n and len(budgets) == 1
        assert len(c["notes"]) == len(stops) + len(caps) + len(budgets), c["notes"]


# ------------------------------------------------------------------ finding 4: one huge SPDY block


def test_spdy_huge_header_block_is_not_inflated_to_the_end(tmp_path):
    """A 16 MB SYN_STREAM block that inflates to 2.6 GB was inflated to the end (to keep zlib
    in step): 120 s and more.  Now at most 16 MiB of it are inflated, the client's zlib stream
    stops there (said once), its later blocks are marked; the server's blocks, the DATA and
    the PINGs still decode."""
    cap = tmp_path / "spdy-huge-block.pcap"
    cap.write_bytes(hostile.spdy_huge_block())
    assert cap.stat().st_size > 16 << 20
    r = cli(cap)
    assert r.rc == 0, r.err
    assert r.seconds < 20 and r.maxrss < 400 * MIB, (r.seconds, r.maxrss)
    got = r.json()
    assert_sample_kept(got, _sample_run(tmp_path, hostile.SPDY_SAMPLE))
    ex = {e["stream_id"]: e for e in got if e["connection"] == 1}
    assert sorted(ex) == [1, 3, 5]
    assert ex[1]["url"] == "http://spdy.test/s1" and ex[1]["error"] is None
    for sid in (3, 5):
        assert ex[sid]["request_headers"] == [] and ex[sid]["error"].startswith("header block")
    for sid, body in ((1, b"one"), (3, b"three"), (5, b"five")):
        e = ex[sid]
        assert e["status"] == 200 and e["content_type"] == "text/plain" and e["response_body_bytes"] == len(body)
    frames = [f for f in cli(cap, "frames").json() if f["connection"] == 1]
    assert [(f["direction"], f["type"], f["stream_id"]) for f in frames] == [
        ("c2s", "SYN_STREAM", 1), ("s2c", "SYN_REPLY", 1), ("s2c", "DATA", 1),
        ("c2s", "SYN_STREAM", 3), ("s2c", "SYN_REPLY", 3), ("s2c", "DATA", 3),
        ("c2s", "SYN_STREAM", 5), ("c2s", "PING", None), ("s2c", "SYN_REPLY", 5), ("s2c", "DATA", 5), ("s2c", "PING", None)]
    assert [f["fields"].get("not_decoded") for f in frames if f["direction"] == "c2s" and f["type"] == "SYN_STREAM"] == \
        [None, "spdy_header_block", "spdy_header_block"]
    assert all(f["fields"].get("ping_id") == 7 for f in frames if f["type"] == "PING")
    assert frames[3]["length"] == (1 << 24) - 1
    notes = _summary(cap)["connections"][1]["notes"]
    assert len(notes) == 1 and "header decompression stopped (client→server)" in notes[0], notes


# ------------------------------------------------------------------ finding 11: frame length over the maximum


def _frame_keys(frames, conn, direction):
    return [(f["type"], f["stream_id"], f["flags"], f["length"], f["packet"]) for f in frames
            if f["connection"] == conn and f["direction"] == direction]


@pytest.mark.parametrize("client_port,direction,ftype,nth", [
    (35274, 1, 0, 10),  # a DATA frame in the middle of the 300 KB response
    (35264, 0, 1, 12),  # a request HEADERS frame: the HPACK state is unknown after it
], ids=["data", "headers"])
def test_frame_longer_than_max_frame_size_is_an_error_and_framing_resynchronises(tmp_path, client_port, direction, ftype, nth):
    """Two damaged length bytes made a frame header announce 8 MB where SETTINGS_MAX_FRAME_SIZE
    is 16384: the dissector waited for it to the end of the capture, and the rest of that
    direction (260 KB) gave no frame and no note.  Now that header is a FRAME_SIZE_ERROR frame
    with a note, framing resynchronises on the next frame, and every other frame and exchange
    is the one of the undamaged capture."""
    conn = {35264: 0, 35274: 1}[client_port]
    dname = ("c2s", "s2c")[direction]
    sample = cli(_copy(tmp_path, hostile.H2C_SAMPLE), "frames").json()
    pcap, facts = _damage(client_port, direction, ftype, nth)
    cap = tmp_path / "damaged.pcap"
    cap.write_bytes(pcap)
    r = cli(cap, "frames")
    assert r.rc == 0, r.err
    frames = r.json()
    want, have = _frame_keys(sample, conn, dname), _frame_keys(frames, conn, dname)
    assert len(want) == len(have)
    bad = [i for i, (a, b) in enumerate(zip(want, have)) if a != b]
    assert len(bad) == 1  # the damaged frame only, at its place
    i = bad[0]
    assert have[i][:2] == want[i][:2] and have[i][3] == facts["damaged_length"] > 16384
    mine = [f for f in frames if f["connection"] == conn and f["direction"] == dname][i]
    assert mine["error"].startswith(f"FRAME_SIZE_ERROR: frame length {facts['damaged_length']} exceeds the maximum frame size 16384")
    assert mine["fields"]["max_frame_size"] == 16384 and mine["headers"] is None
    # frames of the other connections and of the other direction: as in the undamaged capture
    for c, d in ((0, "c2s"), (0, "s2c"), (1, "c2s"), (1, "s2c"), (2, "c2s"), (2, "s2c")):
        if (c, d) != (conn, dname):
            assert _frame_keys(frames, c, d) == _frame_keys(sample, c, d)
    notes = _summary(cap)["connections"][conn]["notes"]
    assert notes[0].startswith(f"packet {want[i][4]}: {('DATA', 'HEADERS')[ftype]} FRAME_SIZE_ERROR")
    assert notes[1].endswith(f": HTTP/2 resynchronised after skipping {facts['length']} bytes in direction {direction}")
    assert len(notes) == 2

    ex_sample = {(e["connection"], e["stream_id"]): e for e in _sample_run(tmp_path, hostile.H2C_SAMPLE)}
    ex = {(e["connection"], e["stream_id"]): e for e in cli(cap).json()}
    assert ex.keys() == ex_sample.keys()
    # ids number exchanges as they appear: the damaged request's appears with its response
    renumbered = direction == 0
    for key, a in ex_sample.items():
        b = ex[key]
        if renumbered:
            a, b = dict(a, id=0), dict(b, id=0)
        if key != (conn, facts["stream_id"]):
            if direction == 1 or key[0] != conn or key[1] < facts["stream_id"]:
                assert a == b
            else:  # after the damaged request: HPACK references to entries of before are <unknown>
                other = ("request_headers", "request_header_bytes_decoded", "url", "sources", "request_header_fields_unknown")
                assert {k: v for k, v in a.items() if k not in other} == {k: v for k, v in b.items() if k not in other}
                assert b["request_header_fields_unknown"] == sum(n == "<unknown>" for n, _v in b["request_headers"])
                # an unknown :authority: the request's host is <unknown> (analyzer.authority: no SNI, no DNS), its path kept
                assert b["url"] == a["url"] or (b["url"].startswith("http://<unknown>/") and b["sources"] == {"authority": "unknown"}
                                                and a["url"].endswith(b["url"][len("http://<unknown>"):]))
                assert len(a["request_headers"]) == len(b["request_headers"])
                for (wn, wv), (gn, gv) in zip(a["request_headers"], b["request_headers"]):
                    assert (gn, gv) == (wn, wv) or gn == "<unknown>" and gv in ("", wv)
        elif direction == 1:  # the damaged DATA frame's payload is not counted: all else is as it was
            assert b["response_body_bytes"] == a["response_body_bytes"] - facts["length"]
            assert {k: v for k, v in a.items() if not k.startswith("response_body")} == \
                {k: v for k, v in b.items() if not k.startswith("response_body")}
        else:  # the damaged request HEADERS: the request is unknown, its response is there
            assert b["request_headers"] == [] and b["method"] is None
            assert (b["status"], b["response_headers"], b["response_body_bytes"]) == \
                (a["status"], a["response_headers"], a["response_body_bytes"])


def _copy(tmp_path: Path, src: Path) -> Path:
    dst = tmp_path / src.name
    dst.write_bytes(src.read_bytes())
    return dst


def _damage(client_port, direction, ftype, nth):
    return hostile.h2_frame_size_damage(client_port=client_port, nth=nth, direction=direction, frame_type=ftype)


# ------------------------------------------------------------------ the rules below the CLI (sans-IO)


def test_max_frame_size_is_the_one_the_receiver_announced():
    """RFC 9113 section 4.2 / 6.5.2: a frame may be as long as the receiver's
    SETTINGS_MAX_FRAME_SIZE (16384 until it says more).  Over it: FRAME_SIZE_ERROR and the
    next frame is found; within it, however long, the frame is read.  A capture that starts
    inside a connection has not seen the SETTINGS: no length is called impossible there."""
    import struct

    from wirefall.dissectors.http2 import H2Connection

    h2frame = hostile.h2frame
    ping = h2frame(6, 0, 0, struct.pack(">Q", 5))
    data = h2frame(0, 0, 1, b"x" * 20000)
    for announced in (None, 32768):
        c = H2Connection()
        server_settings = b"" if announced is None else struct.pack(">HI", 5, announced)
        c.receive(1, h2frame(4, 0, 0, server_settings), 1)  # the server: what the client may send
        frames = c.receive(0, hostile.PREFACE + h2frame(4, 0, 0, b"") + data + ping, 2)
        names = [(f.name, f.length, f.error is None) for f in frames]
        if announced:
            assert names == [("SETTINGS", 0, True), ("DATA", 20000, True), ("PING", 8, True)]
        else:
            assert names == [("SETTINGS", 0, True), ("DATA", 20000, False), ("PING", 8, True)]
            assert frames[1].unread and frames[1].error.startswith("FRAME_SIZE_ERROR") and frames[1].data_length == 0
            assert any("resynchronised after skipping 20000 bytes" in n for n in c.notes)
    c = H2Connection(mid_stream=True)  # (found from a chain of two frame headers, then read on)
    frames = c.receive(0, ping + ping + data + ping, 1)
    assert [(f.name, f.length, f.error) for f in frames] == [("PING", 8, None), ("PING", 8, None), ("DATA", 20000, None), ("PING", 8, None)]


def test_the_end_of_a_capture_inside_a_frame_is_said():
    """A frame the capture stopped inside of is told at the end (it was silent)."""
    from wirefall.analyzer.sessions.http2 import H2Session

    from tests.test_http2 import _ctx

    ctx, conn = _ctx()
    s = H2Session(ctx, conn)
    s.data(0, hostile.PREFACE + hostile.h2frame(4, 0, 0, b"") + hostile.h2frame(0, 0, 1, b"y" * 1000)[:509], 0, 1)
    s.end()
    assert [f.type for f in ctx.analysis.frames] == ["SETTINGS"]
    assert conn.notes == ["HTTP/2: the capture ends inside a frame of 1009 bytes in direction 0 (509 of them seen)"]


@pytest.mark.parametrize("size", [0, 1, 1000, (1 << 16) - 1, 1 << 16, (1 << 20) - 40, (1 << 20) - 20, 1 << 20, 3 << 20])
def test_spdy_inflater_in_steps_gives_what_zlib_gives_in_one(size):
    """The inflater feeds zlib at most 64 KB and asks at most 1 MiB at a time (bounded work per
    step, and the budget checked between steps); the blocks it returns are zlib's, byte for
    byte, up to the cap (1 MiB) and at it, and the stream stays in step after an over-cap block."""
    import random
    import zlib

    from wirefall.dissectors.budget import Budget
    from wirefall.dissectors.spdy import HeaderInflater, dictionary

    rng = random.Random(size)
    c = hostile.spdy_compressor()
    inf = HeaderInflater(3, 1 << 20, Budget("decompress_bytes", 1 << 30))
    one = zlib.decompressobj(zdict=dictionary(3))
    for _ in range(3):
        half = size // 2  # half compressible, half not: zlib's output comes in steps of both kinds
        raw = bytes(rng.choice(b"ab\0") for _ in range(min(half, 4096))) * (half // 4096 + 1)
        raw = raw[:half] + rng.randbytes(size - half)
        block = c.compress(raw) + c.flush(zlib.Z_SYNC_FLUSH)
        got, err = inf.inflate(block)
        assert one.decompress(block) == raw
        if size <= 1 << 20:
            assert err is None and got == raw
        else:
            assert got is None and "cap" in err
    assert inf.budget.used == 3 * size


def test_connection_0s_budget_is_not_the_captures():
    """Connection ids start at 0: its budget once took the capture's place, so every later
    connection's budget charged connection 0's and the capture's cap was the connection's."""
    from wirefall.analyzer.model import Connection
    from tests.test_http2 import _ctx

    ctx, conn0 = _ctx()
    conn1 = Connection(id=1, transport="tcp", client=("127.0.0.1", 3), server=("127.0.0.1", 2))
    ctx.analysis.connections.append(conn1)
    b0, b1, top = ctx.budget("header_decoded_bytes", conn0), ctx.budget("header_decoded_bytes", conn1), ctx.budget("header_decoded_bytes")
    assert b0 is not top and b1.parent is top and b0.parent is top
    assert (b0.cap, top.cap) == (DEFAULT_LIMITS["header_decoded_bytes"], DEFAULT_LIMITS["header_decoded_bytes_capture"])
    assert b0.take(b0.cap) and not b0.take(1) and b1.take(1)
    ctx.report_budgets()
    assert ctx.analysis.budgets_hit == {"header_decoded_bytes": [0]} and ctx.analysis.warnings == []
    assert len(conn0.notes) == 1 and conn1.notes == []
