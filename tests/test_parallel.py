"""Parallel analysis (analyzer/parallel.py) gives the serial result, byte for byte: the JSON of
``summary``, ``requests`` and ``frames`` (connection ids, exchange ids, frame order, notes,
warnings, statistics, completeness), the packet index and the per-connection maps, on every
sample capture and third-party capture; and where sharding cannot be exact, it falls back to
the serial pass and says why."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from fuzz.profiles import fuzz_settings
from wirefall.analyzer.jsonout import dumps, exchange_dict, frame_dict, phases_dicts, summary_dict
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.waterfall import page_of

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"
CAPTURE_EXT = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz", ".cap.gz")
SHARED_KEYS = {  # ../shared/captures/README.md
    "tls12/capture.pcap": ["tls12/keylog.txt"],
    "tls13/capture.pcap": ["tls13/keylog.txt"],
    "quic-illustrated/capture.pcap": ["quic-illustrated/keylog.txt"],
    "pageload-amazon/amazon1.cap.gz": ["pageload-amazon/amazon1.key_log.txt.gz"],
}


def _cases() -> list[tuple[str, Path, list[str]]]:
    rows = []
    readme = SAMPLES / "README.md"
    for line in readme.read_text().splitlines() if readme.exists() else []:
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) >= 4 and cols[0] and not cols[0].startswith(("file", "---")):
            rows.append((cols[0], re.findall(r"[\w./-]+\.keys\b", cols[-1])))
    out = []
    for p in sorted(SAMPLES.rglob("*")):
        if p.is_file() and p.name.endswith(CAPTURE_EXT):
            rel = str(p.relative_to(SAMPLES))
            stem = re.sub(r"\.(pcapng|pcap|cap)(\.gz)?$", "", p.name)
            keys = [p.parent / f"{stem}.keys"]
            if not keys[0].exists():
                keys = [SAMPLES / k for col, ks in rows if rel in col or p.name in col for k in ks]
            out.append((rel, p, [str(k) for k in keys if k.exists()]))
    for p in sorted(SHARED.rglob("*")) if SHARED.is_dir() else []:
        if p.is_file() and p.name.endswith(CAPTURE_EXT):
            rel = str(p.relative_to(SHARED))
            out.append(("shared/" + rel, p, [str(SHARED / k) for k in SHARED_KEYS.get(rel, [])]))
    return out


CASES = _cases()


def _outputs(an) -> dict:
    """Everything the JSON commands print, and the parts of the model views read."""
    ph = phases_dicts(an)
    page = page_of(an)
    exs = sorted(an.exchanges, key=lambda e: (e.request_start or e.response_start or 0.0, e.id))
    return {
        "summary": dumps(summary_dict(an)),
        "requests": dumps([exchange_dict(e, phases=ph.get(e.id), page=page) for e in exs]),
        "frames": dumps([frame_dict(f) for f in an.frames]),  # in the order the pass made them
        "index": (bytes(an.index.conn), bytes(an.index.proto), bytes(an.index.ts)),
        "maps": sorted((k, bytes(m.starts), bytes(m.packets)) for k, m in an.maps.items()),
        "tls_records": sorted((k, bytes(r.packet)) for k, r in an.tls_records.items()),
        "quic_packets": sorted((k, bytes(r.packet)) for k, r in an.quic_packets.items()),
        "quic_stats": repr(sorted(an.quic_stats.items())),
        "budgets_hit": an.budgets_hit,
        "offsets": [f.offset for f in an.frames],
    }


def _same(a, b) -> None:
    oa, ob = _outputs(a), _outputs(b)
    for k in oa:
        assert oa[k] == ob[k], k


@pytest.mark.parametrize("rel,path,keys", CASES, ids=[c[0] for c in CASES])
def test_parallel_is_serial(rel, path, keys):
    serial = analyze(str(path), keylogs=keys)
    for n in (2, 3):
        par = analyze(str(path), keylogs=keys, workers=n)
        how = par.__dict__.get("_wf_parallel", "")
        assert how.startswith(("parallel:", "serial:")), how
        _same(serial, par)


SPLIT_CASES = [c for c in CASES if c[1].name.endswith((".pcap", ".cap")) and "shared/" not in c[0]]


@pytest.mark.parametrize("rel,path,keys", SPLIT_CASES, ids=[c[0] for c in SPLIT_CASES])
def test_parallel_with_the_scan_split_is_serial(rel, path, keys, monkeypatch):
    """Every sample pcap with its scan's two halves walked at once (demux._pcap_split, from
    SPLIT_MIN bytes: 0 here): the analysis is still the serial one."""
    from wirefall.analyzer import demux

    monkeypatch.setattr(demux, "SPLIT_MIN", 0)
    par = analyze(str(path), keylogs=keys, workers=2)
    _same(analyze(str(path), keylogs=keys), par)
    if par.__dict__.get("_wf_parallel_mode") == "scanned":
        assert par.__dict__["_wf_parallel_times"]["scan"] >= 0


def test_a_multi_connection_capture_is_really_sharded():
    """page-h1: Chromium's 6 TLS connections; every worker gets some of them."""
    path = SAMPLES / "page" / "page-h1.pcapng"
    keys = [str(SAMPLES / "page" / "page-h1.keys")]
    par = analyze(str(path), keylogs=keys, workers=2)
    assert par.__dict__["_wf_parallel"] == "parallel: 2 workers"
    assert len(par.connections) >= 6 and len(par.exchanges) == 13
    _same(analyze(str(path), keylogs=keys), par)


@pytest.mark.parametrize("cap,why", [(30000, "ran out in a worker"), (150000, "more than half")])
def test_budget_for_the_capture_falls_back_to_serial(cap, why):
    """A capture budget that runs out in a worker, or that the workers together used more than
    half of, depends on how connections were split (the serial pass may refuse work the
    shards did not): the capture is analysed serially, and the result is the serial one.
    http1-nginx: 6 connections, 113 KB of gzip output in all."""
    path = SAMPLES / "http" / "http1-nginx.pcap"
    limits = {"decompress_bytes_capture": cap}
    par = analyze(str(path), workers=2, limits=limits)
    assert par.__dict__["_wf_parallel"].startswith("serial: budget decompress_bytes") and why in par.__dict__["_wf_parallel"]
    serial = analyze(str(path), limits=limits)
    assert bool(serial.budgets_hit.get("decompress_bytes")) == (cap < 112948)
    _same(serial, par)
    assert analyze(str(path), workers=2).__dict__["_wf_parallel"] == "parallel: 2 workers"  # with the default budgets


def test_tls12_resumption_across_workers_falls_back_to_serial():
    """A TLS 1.2 session resumed on a connection another worker decodes: the serial pass finds
    the master secret in the session cache the first connection filled; the shards would not,
    so the capture is analysed serially (and the resumed connection is decrypted)."""
    cands = [(p, k) for p, k in ((SHARED / "tls12" / "capture.pcap", SHARED / "tls12" / "keylog.txt"),)
             if p.exists()]
    cands += [(SAMPLES / "tls" / f"{s}.pcap", SAMPLES / "tls" / f"{s}.keys") for s in ("tls12_resumed", "tls12_ticket")
              if (SAMPLES / "tls" / f"{s}.pcap").exists()]
    found = False
    for path, keys in cands:
        serial = analyze(str(path), keylogs=[str(keys)])
        resumed = [c for c in serial.connections if c.tls is not None and c.tls.resumed and c.tls.version != "TLS 1.3"]
        if not resumed:
            continue
        found = True
        for n in (2, 3):
            par = analyze(str(path), keylogs=[str(keys)], workers=n)
            how = par.__dict__["_wf_parallel"]
            if how.startswith("parallel:"):  # every resumption's first connection in the same worker
                continue
            assert "tls12_" in how, how
            _same(serial, par)
    if not found:
        pytest.skip("no TLS 1.2 resumption among the samples")


def test_shards_split_connections_round_robin_and_both_directions_agree():
    from wirefall.analyzer.parallel import Shard

    a, b = Shard(0, 2), Shard(1, 2)
    keys = [(b"\x7f\0\0\1", 40000 + i, b"\x7f\0\0\2", 443) for i in range(6)]
    for s in (a, b):
        for k in keys:
            s.foreign(k)
    for i, k in enumerate(keys):
        rev = (k[2], k[3], k[0], k[1])
        assert a.foreign(k) == a.foreign(rev) == (i % 2 == 1)
        assert b.foreign(k) == b.foreign(rev) == (i % 2 == 0)


def test_cli_workers_option_gives_the_same_bytes():
    path = SAMPLES / "page" / "page-h1.pcapng"
    keys = SAMPLES / "page" / "page-h1.keys"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    outs = []
    for j in ("1", "2", "auto"):
        p = subprocess.run([sys.executable, "-m", "wirefall", "requests", str(path), "--keylog", str(keys), "--json", "-j", j],
                           capture_output=True, env=env, timeout=120)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout)
    assert outs[0] == outs[1] == outs[2] and outs[0].startswith(b"[\n  {\n    \"id\": ")
    p = subprocess.run([sys.executable, "-m", "wirefall", "summary", str(path), "-j", "0"], capture_output=True, env=env, timeout=60)
    assert p.returncode == 2 and b"between 1 and 256" in p.stderr


def test_auto_is_serial_below_the_threshold(tmp_path):
    from wirefall.analyzer.parallel import AUTO_MIN_BYTES, worker_count

    small = SAMPLES / "page" / "page-h1.pcapng"
    assert small.stat().st_size < AUTO_MIN_BYTES
    assert worker_count("auto", str(small)) == 1
    big = tmp_path / "big.pcap"
    with open(big, "wb") as f:
        f.truncate(AUTO_MIN_BYTES)
    assert worker_count("auto", str(big)) == (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    assert worker_count(3, str(small)) == 3


def test_cross_worker_state_decides_serial():
    """The merge's checks (module docstring of analyzer.parallel) on the facts workers report."""
    from wirefall.analyzer.parallel import _unshardable

    def facts(stored=(), missed=(), claimed=(), offered=(), budgets=None):
        return {"tls": {"tls12_sessions": (set(stored), set(missed)), "tls12_tickets": (set(), set())},
                "claimed": set(claimed), "offered": set(offered), "budgets": budgets or {"x": (False, 10, 100)}}

    assert _unshardable(facts(stored=[b"a"]), [facts(missed=[b"b"])]) is None
    assert "another worker" in _unshardable(facts(stored=[b"a"]), [facts(missed=[b"a"])])
    assert "two workers" in _unshardable(facts(stored=[b"a"]), [facts(stored=[b"a"])])
    assert _unshardable(facts(offered=[b"r"]), [facts(claimed=[b"s"])]) is None
    assert "QUIC trial" in _unshardable(facts(offered=[b"r"]), [facts(claimed=[b"r"])])
    assert "ran out" in _unshardable(facts(budgets={"x": (True, 10, 100)}), [facts()])
    assert "half" in _unshardable(facts(budgets={"x": (False, 45, 100)}), [facts(budgets={"x": (False, 6, 100)})])


class _Out:
    """A text stream's stand-in with a binary ``buffer`` (what ``requests_json`` writes to)."""

    def __init__(self):
        import io

        self.buffer = io.BytesIO()

    def write(self, s: str) -> None:
        self.buffer.write(s.encode())

    def flush(self) -> None:
        pass


def _serial_and_forked(rel: str, keys: str | None, chunk: int):
    from wirefall.analyzer.parallel import requests_json

    path = SAMPLES / rel
    an = analyze(str(path), keylogs=[str(SAMPLES / keys)] if keys else None)
    exs = sorted(an.exchanges, key=lambda e: (e.request_start or e.response_start or 0.0, e.id))
    one, two = _Out(), _Out()
    requests_json(an, exs, 1, one)
    requests_json(an, exs, 2, two, chunk=chunk)
    return an, exs, one.buffer.getvalue(), two.buffer.getvalue()


@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_requests_json_on_two_cores_writes_the_serial_bytes(chunk):
    """``requests --json`` with 2 workers: a forked child encodes its share of the chunks into
    a memory file while the parent computes the page, the parent the rest and writes them all
    in order — the bytes of the serial writer (jsonout.dump) for page-h1's 13 requests (tshark
    shows 13), whatever the chunking."""
    an, exs, one, two = _serial_and_forked("page/page-h1.pcapng", "page/page-h1.keys", chunk)
    assert len(exs) == 13
    assert two == one
    ph, page = phases_dicts(an), page_of(an)
    assert one.decode() == dumps([exchange_dict(e, phases=ph.get(e.id), page=page) for e in exs]) + "\n"


@pytest.mark.parametrize("chunk", [1, 3])
def test_requests_json_on_two_cores_encodes_again_what_the_page_makes_background(chunk):
    """The child encodes its chunks before the page is known, as if no request were
    background; a chunk holding a request the page makes background (bg-mixed: 6 of its 16,
    among them an agent's and a link-local long-poll) is encoded again by the parent with the
    page: the serial bytes, every background flag and reason in place."""
    import json

    an, exs, one, two = _serial_and_forked("page/bg-mixed.pcapng", "page/bg-mixed.keys", chunk)
    assert two == one
    rows = json.loads(one)
    assert len(rows) == 16 and sum(r["background"] for r in rows) == 6
    assert all(r["background_reason"] for r in rows if r["background"])
    from wirefall.analyzer.parallel import _CHILD_SHARE, _child_chunks

    theirs = {j for i in _child_chunks(-(-16 // chunk), _CHILD_SHARE) for j in range(i * chunk, (i + 1) * chunk)}
    assert any(rows[j]["background"] for j in theirs)  # (a chunk of the child's was encoded again)


def test_requests_json_child_that_fails_costs_only_time(monkeypatch):
    """A child that dies (here: its encoder raises in the child only, after its first chunk,
    or at once) sends nothing more: the parent encodes the rest of its chunks itself."""
    from wirefall.analyzer import jsonout, parallel

    path = SAMPLES / "page" / "page-h1.pcapng"
    an = analyze(str(path), keylogs=[str(SAMPLES / "page" / "page-h1.keys")])
    exs = sorted(an.exchanges, key=lambda e: (e.request_start or e.response_start or 0.0, e.id))
    one = _Out()
    parallel.requests_json(an, exs, 1, one)
    parent = os.getpid()
    real_encode = jsonout._encode
    for after in (1, 0):
        calls = [0]

        def encode(obj, after=after, calls=calls):
            if os.getpid() != parent:
                calls[0] += 1
                if calls[0] > after:
                    raise MemoryError("a child's failure")
            return real_encode(obj)

        monkeypatch.setattr(jsonout, "_encode", encode)
        two = _Out()
        parallel.requests_json(an, exs, 2, two, chunk=2)
        assert two.buffer.getvalue() == one.buffer.getvalue()


def test_requests_json_output_closed_ends_the_child(monkeypatch):
    """The output closing under it (``| head``) raises in the parent as the serial writer
    would, and the child encoding for it is killed and reaped, not waited for."""
    import io

    from wirefall.analyzer import parallel

    path = SAMPLES / "page" / "page-h1.pcapng"
    an = analyze(str(path), keylogs=[str(SAMPLES / "page" / "page-h1.keys")])
    exs = sorted(an.exchanges, key=lambda e: (e.request_start or e.response_start or 0.0, e.id))
    reaped = []
    real_reap = parallel._reap
    monkeypatch.setattr(parallel, "_reap", lambda pid, r, kill=False: reaped.append(kill) or real_reap(pid, r, kill))
    forked = []
    real_fork = os.fork

    def fork():
        pid = real_fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)

    class Closed(io.BytesIO):
        def write(self, b):
            if self.tell():
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(b)

    out = _Out()
    out.buffer = Closed()
    with pytest.raises(BrokenPipeError):
        parallel.requests_json(an, exs, 2, out, chunk=2)
    assert reaped[0] is True and len(forked) == 1
    with pytest.raises(ChildProcessError):  # (its child reaped: none left behind — asked of that child, not of
        os.waitpid(forked[0], os.WNOHANG)   # any: another test's, e.g. the TUI's TCP-analysis child, may be alive)


def test_requests_json_without_a_fork_writes_serially(monkeypatch):
    """No process to be had (``fork`` fails: a process limit, memory): the output is written
    serially, the same bytes, no descriptor left open."""
    from wirefall.analyzer import parallel

    path = SAMPLES / "page" / "page-h1.pcapng"
    an = analyze(str(path), keylogs=[str(SAMPLES / "page" / "page-h1.keys")])
    exs = sorted(an.exchanges, key=lambda e: (e.request_start or e.response_start or 0.0, e.id))
    one, two = _Out(), _Out()
    parallel.requests_json(an, exs, 1, one)
    before = len(os.listdir("/proc/self/fd"))

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    parallel.requests_json(an, exs, 2, two, chunk=2)
    assert two.buffer.getvalue() == one.buffer.getvalue()
    assert len(os.listdir("/proc/self/fd")) == before


def test_child_chunks_share():
    """The child's share of the chunks, spread evenly, the first among them."""
    from wirefall.analyzer.parallel import _child_chunks

    assert _child_chunks(7, 2 / 3) == [0, 1, 3, 4, 6]
    assert _child_chunks(1, 2 / 3) == [0]
    assert _child_chunks(4, 0.5) == [0, 2]


# ------------------------------------------------------------------ the lean demultiplexer (analyzer/demux.py)

PLAIN = [c for c in CASES if c[1].name.endswith((".pcap", ".pcapng", ".cap"))]


@pytest.mark.parametrize("rel,path,keys", PLAIN, ids=[c[0] for c in PLAIN])
def test_scan_gives_the_readers_records_and_the_serial_connections(rel, path, keys):
    """demux.scan, on every uncompressed sample it takes, finds the records read_capture yields
    (time, lengths, link type, file offset, interface), the reader's capture facts (format,
    interfaces, statistics, secrets blocks and where they stand), and groups packets so that
    every connection of the serial pass lies in one group and nothing but TCP is in a group."""
    from wirefall.analyzer.capture import CaptureInfo, read_capture
    from wirefall.analyzer.demux import scan

    sc = scan(str(path), 2)
    if sc is None:
        pytest.skip("not scanned: the reader's own path (see test_scan_declines_...)")
    info = CaptureInfo()
    recs = []
    for r in read_capture(str(path), info):
        recs.append((r.ts, r.caplen, r.origlen, r.linktype, r.offset, r.interface))
        info.secrets.append(len(recs))  # (a marker: where the secrets seen so far stand)
    assert [tuple(x) for x in zip(sc.ts, sc.caplen, sc.origlen, sc.linktype, sc.offset, sc.interface)] == recs
    assert sc.format == info.format
    assert [vars(i) for i in sc.interfaces] == [vars(i) for i in info.interfaces]
    assert sc.interface_stats == info.interface_stats
    real = [s for s in info.secrets if isinstance(s, tuple)]
    assert [(t, d) for _, t, d in sc.secrets] == real
    # where each secrets block stands: after the packets counted before it in the reader's order
    at, n = [], 0
    for s in info.secrets:
        if isinstance(s, int):
            n = s
        else:
            at.append(n)
    assert [p for p, _, _ in sc.secrets] == at
    serial = analyze(str(path), keylogs=keys)
    by_conn: dict = {}
    for i, c in enumerate(serial.index.conn):
        if c >= 0 and serial.connections[c].transport == "tcp":
            by_conn.setdefault(c, set()).add(sc.group[i])
        else:
            assert sc.group[i] == -1, (i + 1, c)
    assert all(len(g) == 1 and min(g) >= 0 for g in by_conn.values())


def _pcap(path, records, linktype=1) -> None:
    import struct

    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
        for ts, data, origlen in records:
            f.write(struct.pack("<IIII", int(ts), int(round((ts % 1) * 1e6)), len(data), origlen) + data)


def _nginx_records():
    from wirefall.analyzer.capture import read_capture

    return [(r.ts, bytes(r.data), r.origlen) for r in read_capture(str(SAMPLES / "http" / "http1-nginx.pcap"))]


def _ipv4_fragments(ts: float) -> list:
    """A UDP datagram to port 9 in two IPv4 fragments (Ethernet)."""
    import struct

    eth = b"\x02\0\0\0\0\1\x02\0\0\0\0\2\x08\0"
    udp = struct.pack("!HHHH", 40000, 9, 8 + 24, 0) + bytes(24)
    out = []
    for off, more, chunk in ((0, 1, udp[:16]), (2, 0, udp[16:])):
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(chunk), 7, (more << 13) | off, 64, 17, 0, b"\x0a\0\0\1", b"\x0a\0\0\2")
        out.append((ts, eth + ip + chunk, len(eth + ip + chunk)))
    return out


@pytest.mark.parametrize("what", ["snap length", "fragment", "truncated", "short block"])
def test_scan_declines_what_only_the_reader_handles(tmp_path, what):
    """A packet cut by the snap length (the pass counts them into one warning), an IPv4
    fragment (reassembly is stateful), a file ending inside a record (the reader's warning),
    a pcapng block shorter than its fixed fields (the reader skips it with a warning,
    capture.PCAPNG_FIXED): the scan declines, and the capture — http1-nginx's real packets
    around it — is demultiplexed the old way (the parent's pass over read_capture), with the
    serial result."""
    from wirefall.analyzer.demux import scan

    recs = _nginx_records()
    if what == "snap length":
        ts, data, orig = recs[5]
        recs[5] = (ts, data[: len(data) - 10], orig)
    elif what == "fragment":
        recs[3:3] = _ipv4_fragments(recs[3][0])
    p = tmp_path / "c.pcap"
    _pcap(p, recs)
    if what == "truncated":
        with open(p, "ab") as f:
            f.write(bytes(9))
    elif what == "short block":
        sys.path.insert(0, str(ROOT))
        from scripts.hostile.capture_inputs import short_blocks

        p = short_blocks(tmp_path)
    assert scan(str(p), 2) is None
    serial = analyze(str(p))
    assert len(serial.exchanges) >= 6  # (tshark: 6 HTTP requests in http1-nginx)
    if what == "short block":
        assert any("shorter than its fixed fields" in w for w in serial.warnings)
    par = analyze(str(p), workers=2)
    assert par.__dict__["_wf_parallel"] == "parallel: 2 workers" and par.__dict__["_wf_parallel_mode"] == "streamed"
    _same(serial, par)


def test_scanned_and_streamed_modes_give_the_serial_result(monkeypatch):
    """The scanned mode is the default for an uncompressed capture; the older streamed mode
    (forced here) still gives the same result; page-h1's 6 TLS connections go to both processes."""
    path = SAMPLES / "page" / "page-h1.pcapng"
    keys = [str(SAMPLES / "page" / "page-h1.keys")]
    serial = analyze(str(path), keylogs=keys)
    for n in (2, 3):
        par = analyze(str(path), keylogs=keys, workers=n)
        assert par.__dict__["_wf_parallel_mode"] == "scanned"
        _same(serial, par)
    monkeypatch.setenv("WF_PARALLEL_MODE", "streamed")
    for n in (2, 3):
        par = analyze(str(path), keylogs=keys, workers=n)
        assert par.__dict__["_wf_parallel_mode"] == "streamed"
        _same(serial, par)


def test_scan_gives_the_busiest_connections_to_different_processes():
    """Longest first to the least loaded: 4 equal busy 4-tuples and 3 idle ones on 2
    processes: 2 busy each; worker 0 starts with the packets that are not TCP."""
    from wirefall.analyzer.demux import Scan, _assign

    sc = Scan("pcap", [])
    sc.load = [0, 100, 1, 100, 1, 100, 1, 100]
    _assign(sc, 2)
    busy = [w for g, w in enumerate(sc.worker) if g in (0, 2, 4, 6)]
    assert sorted(busy) == [0, 0, 1, 1]
    sc.load = [150, 100, 100, 100]  # worker 0's UDP outweighs one connection, not two
    _assign(sc, 2)
    assert sc.worker == [1, 1, 0]


@pytest.mark.parametrize("where", ["head", "chunk"])
def test_a_worker_that_fails_while_sending_its_part_gives_the_serial_result(monkeypatch, where):
    """A worker's part goes as a stream of pickles (its part, then chunks of frames and
    exchanges): one that fails before or in the middle of it (here: building the part, or its
    exchanges' tuples, in the child only) makes the parent analyse the capture serially."""
    from wirefall.analyzer import parallel

    parent = os.getpid()
    real = parallel._part if where == "head" else parallel._exchange_tuple

    def failing(*a):
        if os.getpid() != parent:
            raise MemoryError("a worker's failure")
        return real(*a)

    monkeypatch.setattr(parallel, "_part" if where == "head" else "_exchange_tuple", failing)
    path = SAMPLES / "page" / "page-h1.pcapng"
    keys = [str(SAMPLES / "page" / "page-h1.keys")]
    par = analyze(str(path), keylogs=keys, workers=2)
    assert par.__dict__["_wf_parallel"] == "serial: MemoryError: a worker's failure"
    _same(analyze(str(path), keylogs=keys), par)


def test_index_merged_with_numpy_equals_the_loops(monkeypatch):
    """From ``_NP_INDEX`` packets, with numpy loaded (the vectorised scan loads it), a worker
    picks its packets' connection and protocol with numpy and the merge writes them into the
    packet index's columns with numpy: the same columns as
    its loops, and the serial pass's, on every sample the scan takes (the threshold lowered)."""
    import numpy  # noqa: F401 - (what makes the numpy path possible)

    from wirefall.analyzer import parallel

    seen = []
    real = parallel._index_numpy
    monkeypatch.setattr(parallel, "_NP_INDEX", 1)  # (a worker's part's columns with numpy too: _part)
    monkeypatch.setattr(parallel, "_index_numpy", lambda *a: seen.append(1) or real(*a))
    for rel, path, keys in PLAIN:
        serial = analyze(str(path), keylogs=keys)
        par = analyze(str(path), keylogs=keys, workers=2)
        if not par.__dict__["_wf_parallel"].startswith("parallel"):
            continue
        assert list(par.index.conn) == list(serial.index.conn), rel
        assert list(par.index.proto) == list(serial.index.proto), rel
    assert len(seen) > 10


def test_a_fork_that_fails_stops_the_workers_and_runs_serially(monkeypatch):
    """The second of two workers cannot be forked (a process limit): the first is stopped and
    reaped, its pipe closed, and the capture analysed serially: the serial result, said so."""
    from wirefall.analyzer.jsonout import exchange_dict

    path = SAMPLES / "page" / "page-h1.pcapng"
    keys = [str(SAMPLES / "page" / "page-h1.keys")]
    serial = analyze(str(path), keylogs=keys)
    real_fork, calls, pids = os.fork, [], []

    def fork():
        calls.append(1)
        if len(calls) == 2:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "fork", fork)
    an = analyze(str(path), keylogs=keys, workers=3)
    monkeypatch.setattr(os, "fork", real_fork)
    assert len(calls) == 2 and an.__dict__["_wf_parallel"].startswith("serial: BlockingIOError")
    assert [exchange_dict(e) for e in an.exchanges] == [exchange_dict(e) for e in serial.exchanges]
    assert len(os.listdir("/proc/self/fd")) == before
    # The forked worker was reaped. (Asked of its own pid: in CI the same pytest worker may have
    # other children of its own, from fixtures that start servers or browsers.)
    assert len(pids) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(pids[0], os.WNOHANG)


@fuzz_settings(12)
@given(st.data())
def test_mutated_captures_give_the_serial_result_in_parallel(data):
    """Sample captures with bytes changed or cut (hostile input built here), analysed with 2
    workers — the merge's numpy paths forced — give the serial result: requests, summary and
    the packet index's connection and protocol columns.  (A differential run of 23 k such
    inputs found no difference; WIREFALL_FUZZ_PROFILE=long runs 3000 here.)"""
    import tempfile

    import numpy  # noqa: F401 - (what makes the merge's numpy paths possible)

    from wirefall.analyzer import parallel

    rel, path, keys = data.draw(st.sampled_from([c for c in PLAIN if c[1].stat().st_size < 1_500_000]))
    b = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(24, max(len(b) - 1, 24)))
        if data.draw(st.booleans()):
            b[i : i + 1] = bytes([data.draw(st.integers(0, 255))])
        else:
            del b[i : i + data.draw(st.integers(1, 200))]
    with tempfile.NamedTemporaryFile(suffix=path.suffix) as f:
        f.write(b)
        f.flush()
        try:
            serial = analyze(f.name, keylogs=keys, listing=False)
        except Exception:  # noqa: BLE001 - not a capture any more: the serial pass's answer, not this test's
            return
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(parallel, "_NP_INDEX", 1)
            par = analyze(f.name, keylogs=keys, listing=False, workers=2)
    assert [exchange_dict(e) for e in par.exchanges] == [exchange_dict(e) for e in serial.exchanges], rel
    assert summary_dict(par) == summary_dict(serial), rel
    assert list(par.index.conn) == list(serial.index.conn) and list(par.index.proto) == list(serial.index.proto), rel
