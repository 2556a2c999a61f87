"""Property tests: every dissector and the capture reader on mutated real input.

Seeds are what the pipeline fed each sans-IO dissector while analysing real sample
captures (``fuzz/corpus.py`` records them at the dissectors' entry points).  Hypothesis
mutates them the way damaged captures and hostile peers do — bit flips, truncation,
splices of other real bytes, length fields set to boundary values, dropped, duplicated and
reordered chunks, lost bytes (gaps) — and checks that

* nothing raises (bad input is marked on the frame / in notes, never an exception),
* each input finishes within ``TIME_BOUND`` seconds (``signal.alarm``),
* the memory traced while decoding one input stays under ``MEM_BOUND``,
* nothing is lost: a capture cut short or with a packet dropped keeps every frame that
  the intact capture decoded before the damage point.

Default budget is small (the file runs in well under a minute); ``WIREFALL_FUZZ_PROFILE=long``
or ``pytest -p fuzz.profiles --hypothesis-profile=long`` runs thousands of examples per test.
"""
from __future__ import annotations

import signal
import struct
import sys
import tracemalloc
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wirefall.analyzer.capture import CaptureError, CaptureInfo, read_capture  # noqa: E402
from fuzz import corpus  # noqa: E402
from fuzz.profiles import fuzz_settings  # noqa: E402

TIME_BOUND = 10  # seconds per input (the slowest real seed decodes in milliseconds)
MEM_BOUND = 64 << 20  # bytes traced while decoding one input of at most ~200 KB


class Hang(Exception):
    pass


@contextmanager
def bounded(seconds: int = TIME_BOUND, mem: int = MEM_BOUND):
    """Fail if the body runs longer than ``seconds`` or traces more than ``mem`` bytes."""

    def alarm(signum, frame):
        raise Hang(f"input took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
        assert peak < mem, f"decoding one input traced {peak} bytes (bound {mem})"
    finally:
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


SEEDS = corpus.seeds()
SHARED_PRESENT = (ROOT.parent / "shared" / "captures").is_dir()


def _seeded(target: str):
    """Skip a target whose only seeds are in the third-party captures when those are absent
    (a checkout without ../shared/captures); with them present a missing seed still fails."""
    return pytest.mark.skipif(not SEEDS[target] and not SHARED_PRESENT,
                              reason=f"{target} seeds come from ../shared/captures, not present")


def test_libfuzzer_harness_instruments_modules_that_exist():
    """fuzz/run.py's coverage instrumentation names packages the code really imports as, and
    they hold the dissectors and the sessions the targets run: named "dissectors" and
    "analyzer" (no module is, since the code imports as wirefall.*), nothing was instrumented
    and libFuzzer mutated blind (300 k runs, corpus of one 1-byte input)."""
    import importlib.util

    from fuzz.run import INSTRUMENT, TARGETS

    mods = ["wirefall.dissectors.http2", "wirefall.dissectors.quic", "wirefall.analyzer.pipeline",
            "wirefall.analyzer.capture", "wirefall.analyzer.sessions.http2"]
    for name in mods:
        assert importlib.util.find_spec(name) is not None, name
        assert any(name == p or name.startswith(p + ".") for p in INSTRUMENT), name
    assert all(importlib.util.find_spec(p) is not None for p in INSTRUMENT)
    assert {"h2", "quic", "capture", "pipeline"} <= set(TARGETS)


def test_seeds_recorded_from_real_captures():
    """The fuzzers start from real bytes for every dissector, and the seeds decode."""
    assert corpus.available_captures(), "no sample captures"
    for target in corpus.DISSECTOR_TARGETS:
        assert SEEDS[target] or not SHARED_PRESENT, f"no seed for {target}"
    # the seeds decode to real frames: e.g. HTTP/2 HEADERS with :method, TLS ClientHello, QUIC CRYPTO
    h2 = [f for ops in SEEDS["h2"] for f in corpus.replay("h2", ops) if getattr(f, "headers", None)]
    assert any((":method", "GET") in f.headers for f in h2)
    tls = [x for ops in SEEDS["tls"] for x in corpus.replay("tls", ops) if isinstance(x, dict)]
    assert any(x.get("sni") or x.get("cipher_suites") for x in tls)
    qf = [f for ops in SEEDS["quic_frames"] for f in corpus.replay("quic_frames", ops) if getattr(f, "type", None) == "CRYPTO"]
    assert qf
    # the serialised form round-trips (what atheris mutates)
    for target in corpus.DISSECTOR_TARGETS:
        if not SEEDS[target]:
            continue  # absent only without ../shared/captures (asserted above)
        ops = SEEDS[target][0]
        assert [tuple(map(bytes, [o[-1]])) for o in corpus.decode(target, corpus.encode(target, ops))] == [(bytes(o[-1]),) for o in ops]


# ------------------------------------------------------------------ mutations

BOUNDARY = [0, 1, 0x7F, 0x80, 0xFF, 0x100, 0x3FFF, 0x4000, 0x7FFF, 0xFFFF, 0x10000, 0xFFFFFF, 0x7FFFFFFF, 0xFFFFFFFF]


def _all_chunks(target):
    return [op[-1] for ops in SEEDS[target] for op in ops if op[-1]] or [b"\0"]


@st.composite
def mutated_bytes(draw, data: bytes, donors: list[bytes]) -> bytes:
    b = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "trunc", "splice", "length", "insert", "delete", "repeat"]))
        n = len(b)
        pos = draw(st.integers(0, max(n - 1, 0)))
        if kind == "flip" and n:
            b[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "trunc":
            del b[pos:]
        elif kind == "splice":
            donor = draw(st.sampled_from(donors))
            s = draw(st.integers(0, max(len(donor) - 1, 0)))
            b[pos:pos] = donor[s : s + draw(st.integers(1, 512))]
        elif kind == "length" and n:
            w = draw(st.sampled_from([1, 2, 3, 4]))
            v = draw(st.sampled_from(BOUNDARY) | st.integers(0, (1 << (8 * w)) - 1)) & ((1 << (8 * w)) - 1)
            b[pos : pos + w] = v.to_bytes(w, "big")
        elif kind == "insert":
            b[pos:pos] = draw(st.binary(min_size=1, max_size=64))
        elif kind == "delete":
            del b[pos : pos + draw(st.integers(1, 64))]
        elif kind == "repeat":
            b[pos:pos] = b[pos : pos + draw(st.integers(1, 256))] * draw(st.integers(1, 8))
    return bytes(b)


@st.composite
def mutated_ops(draw, target: str):
    ops = [list(op) for op in draw(st.sampled_from(SEEDS[target]))]
    donors = _all_chunks(target)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["bytes", "bytes", "bytes", "drop", "dup", "swap", "cut", "header"]))
        if not ops:
            break
        i = draw(st.integers(0, len(ops) - 1))
        if kind == "bytes":
            ops[i][-1] = draw(mutated_bytes(bytes(ops[i][-1]), donors))
        elif kind == "drop":
            del ops[i]
        elif kind == "dup":  # retransmission / replayed datagram
            ops.insert(i, list(ops[i]))
        elif kind == "swap" and i + 1 < len(ops):  # reordering
            ops[i], ops[i + 1] = ops[i + 1], ops[i]
        elif kind == "cut":
            del ops[i + 1 :]
        elif kind == "header" and len(ops[i]) > 1:
            j = draw(st.integers(0, len(ops[i]) - 2))
            ops[i][j] = draw(st.sampled_from([0, 1, 0x80, 0x81, 0x40, 2, 3, 63, 255]))
    return [tuple(op) for op in ops]


def _check(target, ops, limits=None):
    with bounded():
        out = corpus.replay(target, ops, limits)
    assert isinstance(out, list)


# ------------------------------------------------------------------ one test per dissector

@fuzz_settings(60)
@given(mutated_ops("http1"))
def test_fuzz_http1(ops):
    _check("http1", ops)


@fuzz_settings(60)
@given(mutated_ops("h2"))
def test_fuzz_http2_hpack(ops):
    _check("h2", ops)


@fuzz_settings(40)
@given(mutated_ops("spdy"))
def test_fuzz_spdy_zlib(ops):
    _check("spdy", ops)


@fuzz_settings(60)
@given(mutated_ops("tls"))
def test_fuzz_tls_records(ops):
    _check("tls", ops)


@fuzz_settings(40)
@given(mutated_ops("quic"))
def test_fuzz_quic_packets(ops):
    _check("quic", ops)


@fuzz_settings(60)
@given(mutated_ops("quic_frames"))
def test_fuzz_quic_frames(ops):
    _check("quic_frames", ops)


@fuzz_settings(60)
@given(mutated_ops("h3"))
def test_fuzz_http3_qpack(ops):
    _check("h3", ops)


@fuzz_settings(40)
@_seeded("gquic")
@given(mutated_ops("gquic"))
def test_fuzz_gquic(ops):
    _check("gquic", ops)


@fuzz_settings(60)
@_seeded("dns")
@given(mutated_ops("dns"))
def test_fuzz_dns(ops):
    _check("dns", ops)


@fuzz_settings(30)
@given(st.sampled_from(corpus.DISSECTOR_TARGETS), st.binary(max_size=2048))
def test_fuzz_random_bytes_every_dissector(target, blob):
    """Bytes from nowhere (the serialised op form decodes any byte string)."""
    _check(target, corpus.decode(target, blob))


# ------------------------------------------------------------------ capture reader and whole pipeline

SMALL = corpus.small_captures(40)
SMALL_NAMES = [n for n, _, _ in SMALL]


def _frame_keys(an, before: int, skip=frozenset()) -> Counter:
    return Counter(
        (f.packet, f.first_packet, f.connection, f.direction, f.protocol, f.stream_id, f.type,
         tuple(f.headers) if getattr(f, "headers", None) else None)
        for f in an.frames if f.packet < before and not f.error and f.connection not in skip
    )


def _undecidable(an) -> frozenset:
    """TCP connections whose client sent no payload in the damaged run: their protocol cannot
    be told from the server's bytes alone (h2c SETTINGS; see the strict xfail in
    test_fuzz_regressions.py), so they are left out of the comparison."""
    return frozenset(c.id for c in an.connections if c.transport == "tcp" and not c.stats[0].payload)


_INTACT: dict = {}


def intact(name: str):
    """The undamaged run of a small capture (cached)."""
    if name not in _INTACT:
        raw, keys = next((r, k) for n, r, k in SMALL if n == name)
        _INTACT[name] = corpus.analyze_bytes(raw, keys)
    return _INTACT[name]


def test_intact_runs_decode_frames():
    """The baseline of the 'nothing lost' properties is not empty."""
    counts = {n: len(intact(n).frames) for n in SMALL_NAMES}
    assert sum(1 for v in counts.values() if v >= 3) >= len(counts) - 2, counts


@fuzz_settings(40)
@given(st.sampled_from(range(len(SMALL))), st.data())
def test_fuzz_capture_reader(i, data):
    name, raw, _ = SMALL[i]
    blob = data.draw(mutated_bytes(raw, [raw[:4096]]))
    path = Path(f"/tmp/wirefall-fuzz-reader-{id(blob)}.pcap")
    path.write_bytes(blob)
    try:
        with bounded():
            info = CaptureInfo()
            try:
                n = sum(1 for _ in read_capture(str(path), info))
            except CaptureError:
                return  # not a capture at all: the documented answer
        assert n >= 0
    finally:
        path.unlink()


@fuzz_settings(30)
@given(st.sampled_from(range(len(SMALL))), st.data())
def test_fuzz_pipeline_mutated_capture(i, data):
    """Whole pipeline on a capture with damaged packet bytes (headers left readable)."""
    name, raw, keys = SMALL[i]
    offs = corpus.record_offsets(raw)
    b = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 6))):
        j = data.draw(st.integers(0, len(offs) - 1))
        start = offs[j] + (28 if raw[:4] == b"\x0a\x0d\x0d\x0a" else 16)  # packet data, past the record header
        nxt = offs[j + 1] if j + 1 < len(offs) else len(raw)
        if nxt - start < 2:
            continue
        pos = data.draw(st.integers(start, nxt - 2))
        kind = data.draw(st.sampled_from(["flip", "length", "zero"]))
        if kind == "flip":
            b[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "length":
            b[pos : pos + 2] = data.draw(st.sampled_from(BOUNDARY)).to_bytes(4, "big")[2:]
        else:
            b[pos : min(pos + 8, nxt)] = bytes(min(8, nxt - pos))
    with bounded(mem=256 << 20):
        try:
            an = corpus.analyze_bytes(bytes(b), keys)
        except CaptureError:
            pytest.fail("a capture with damaged packet bytes was refused")
    assert len(an.index.ts) == len(offs)
    # damage is marked where it is met, never by the last line of defence (a session raising)
    stopped = [n for c in an.connections for n in c.notes if "internal error" in n]
    assert not stopped, stopped[:3]


@fuzz_settings(25)
@given(st.sampled_from(range(len(SMALL))), st.data())
def test_nothing_lost_truncated(i, data):
    """Cut the capture anywhere (mid-record too): every frame the intact capture completed
    before the cut is still there, identical; the reader says where it stopped."""
    name, raw, keys = SMALL[i]
    offs = corpus.record_offsets(raw)
    k = data.draw(st.integers(1, len(offs) - 1))
    extra = data.draw(st.integers(0, max(0, (offs[k + 1] if k + 1 < len(offs) else len(raw)) - offs[k] - 1)))
    cut = offs[k] + extra
    with bounded(mem=256 << 20):
        an = corpus.analyze_bytes(raw[:cut], keys)
    full = intact(name)
    # packets 1..k are whole in the cut file; packet k+1 may be partly there
    want = _frame_keys(full, k + 1, _undecidable(an))
    got = _frame_keys(an, k + 1)
    missing = want - got
    assert not missing, f"{name} cut at packet {k + 1} (+{extra} bytes): lost {list(missing)[:5]}"
    assert len(an.index.ts) == k
    if extra:
        assert an.warnings, "a record cut in the middle must be reported"


@fuzz_settings(25)
@given(st.sampled_from(range(len(SMALL))), st.data())
def test_nothing_lost_dropped_packets(i, data):
    """Drop packets (a lossy capture): frames completed before the first dropped packet are
    all kept; the connection notes say where bytes went missing."""
    name, raw, keys = SMALL[i]
    offs = corpus.record_offsets(raw) + [len(raw)]
    n = len(offs) - 1
    drop = sorted(set(data.draw(st.lists(st.integers(1, n - 1), min_size=1, max_size=4))))
    out = bytearray(raw[: offs[0]])
    for j in range(n):
        if j not in drop:
            out += raw[offs[j] : offs[j + 1]]
    with bounded(mem=256 << 20):
        an = corpus.analyze_bytes(bytes(out), keys)
    first = drop[0] + 1  # packet number of the first dropped packet
    missing = _frame_keys(intact(name), first, _undecidable(an)) - _frame_keys(an, first)
    assert not missing, f"{name} without packets {[d + 1 for d in drop]}: lost {list(missing)[:5]}"
    assert len(an.index.ts) == n - len(drop)


def test_nothing_lost_reports_where_tcp_stopped():
    """Dropping a data-carrying TCP packet is reported as a gap at that stream offset."""
    name = "http/http1-nginx.pcap"
    if name not in SMALL_NAMES:
        pytest.skip("sample missing")
    raw = dict((n, r) for n, r, _ in SMALL)[name]
    offs = corpus.record_offsets(raw) + [len(raw)]
    # the first packet with TCP payload (caplen > 66 on this Ethernet loopback capture) after the handshake
    j = next(j for j in range(3, len(offs) - 1) if struct.unpack_from("<I", raw, offs[j] + 8)[0] > 80)
    damaged = raw[: offs[j]] + raw[offs[j + 1] :]
    an = corpus.analyze_bytes(damaged)
    notes = [n for c in an.connections for n in c.notes]
    assert any("bytes missing from the capture" in n for n in notes), notes


@fuzz_settings(20)
@given(st.sampled_from(range(len(SMALL))), st.data())
def test_nothing_lost_reordered_packets(i, data):
    """Swap neighbouring packets (reordering in the capture): frames completed before the
    first moved packet are all kept, and no packet goes missing from the index."""
    name, raw, keys = SMALL[i]
    offs = corpus.record_offsets(raw) + [len(raw)]
    n = len(offs) - 1
    recs = [raw[offs[j] : offs[j + 1]] for j in range(n)]
    moved = sorted(set(data.draw(st.lists(st.integers(1, n - 2), min_size=1, max_size=3))))
    for j in moved:
        recs[j], recs[j + 1] = recs[j + 1], recs[j]
    with bounded(mem=256 << 20):
        an = corpus.analyze_bytes(raw[: offs[0]] + b"".join(recs), keys)
    first = moved[0] + 1
    missing = _frame_keys(intact(name), first, _undecidable(an)) - _frame_keys(an, first)
    assert not missing, f"{name} with packets {[m + 1 for m in moved]} swapped with the next: lost {list(missing)[:5]}"
    assert len(an.index.ts) == n
