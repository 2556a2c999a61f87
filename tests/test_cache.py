"""The analysis cache's content digest is remembered by file identity and stamps, and a
changed file is always hashed again."""
from __future__ import annotations

import hashlib
import os

import pytest

from wirefall.analyzer import cache


def test_digest_memo_follows_content(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cache.cache_dir(create=True)
    f = tmp_path / "cap.bin"
    data = os.urandom(3 << 20)
    f.write_bytes(data)
    want = hashlib.sha256(data).hexdigest()
    assert cache.file_digest(str(f)) == want
    memo = cache.cache_dir(create=False) / cache.DIGEST_MEMO
    assert memo.exists() and want in memo.read_text()
    calls = []
    monkeypatch.setattr(cache, "_sha256_file", lambda p: calls.append(p) or "x")
    assert cache.file_digest(str(f)) == want and calls == []  # unchanged: not read again
    with open(f, "r+b") as fh:  # same size, same mtime put back: ctime still changes
        st = os.stat(f)
        fh.write(b"\0")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cache.file_digest(str(f)) == "x" and calls == [str(f)]


def test_reopened_analysis_unpacks_frames_and_requests_on_first_use(tmp_path, monkeypatch):
    """A cache hit reads the summary part only; frames, requests, maps and decrypted-record
    lists come back, equal to a fresh analysis, each part when first asked for (the requests
    without the frames).  A body part damaged on disk costs that part (with a warning), a
    damaged body all of them, never the summary, the other parts or a traceback."""
    from pathlib import Path

    from wirefall.analyzer.jsonout import exchange_dict, frame_dict, summary_dict
    from wirefall.analyzer.model import LAZY_FIELDS

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = Path(__file__).resolve().parents[1] / "sample_captures" / "http"
    cap, keys = str(root / "h2-tls.pcap"), [str(root / "h2-tls.keys")]
    fresh, hit = cache.analyze_cached(cap, keys)
    assert not hit and fresh.exchanges and fresh.frames and fresh.tls_records
    again, hit = cache.analyze_cached(cap, keys)
    assert hit
    assert not any(name in again.__dict__ for name in LAZY_FIELDS)  # still packed
    assert summary_dict(again) == summary_dict(fresh)
    assert not any(name in again.__dict__ for name in LAZY_FIELDS)  # a summary needs none of them
    assert again.count("exchanges") == len(fresh.exchanges) and again.count("frames") == len(fresh.frames)
    assert again.requests_per_connection() == fresh.requests_per_connection() != {}
    assert again.frame_protocols() == {f.protocol for f in fresh.frames} and fresh.frame_protocols() is None
    assert not any(name in again.__dict__ for name in LAZY_FIELDS)  # counted from the summary part
    assert [exchange_dict(e) for e in again.exchanges] == [exchange_dict(e) for e in fresh.exchanges]
    assert [name for name in LAZY_FIELDS if name in again.__dict__] == ["exchanges"]  # that part only
    assert [frame_dict(f) for f in again.frames] == [frame_dict(f) for f in fresh.frames]
    assert "_wf_lazy" in again.__dict__ and "maps" not in again.__dict__
    assert sorted(again.maps) == sorted(fresh.maps) and sorted(again.tls_records) == sorted(fresh.tls_records)
    for k, m in fresh.maps.items():
        assert list(again.maps[k].starts) == list(m.starts) and list(again.maps[k].packets) == list(m.packets)

    assert list(again.index.ts) == list(fresh.index.ts) and list(again.index.offset) == list(fresh.index.offset)
    assert list(again.index.proto) == list(fresh.index.proto) and list(again.index.conn) == list(fresh.index.conn)
    assert again.quic_packets == fresh.quic_packets and "_wf_lazy" not in again.__dict__  # all parts read: the loader is gone
    blob = cache.dumps(fresh)
    _, _, body = cache._parts(blob)
    b = len(blob) - len(body)  # where the body starts
    parts = cache._body_parts(body)
    assert list(parts) == list(cache.BODY_PARTS)
    ex_at = b + bytes(body).index(bytes(parts["exchanges"]))  # where the requests' part starts
    damaged = blob[: ex_at + 20] + bytes(x ^ 0xFF for x in blob[ex_at + 20 : ex_at + 60]) + blob[ex_at + 60 :]
    broken = cache.loads(damaged)
    assert summary_dict(broken)["connections"] == summary_dict(fresh)["connections"]
    assert broken.exchanges == [] and [frame_dict(f) for f in broken.frames] == [frame_dict(f) for f in fresh.frames]
    assert sorted(broken.maps) == sorted(fresh.maps)
    assert [w for w in broken.warnings if "unreadable" in w] == [w for w in broken.warnings if "requests unreadable" in w] != []
    damaged = blob[: b + 3] + bytes(x ^ 0xFF for x in blob[b + 3 : b + 12]) + blob[b + 12 :]  # the first part's name and size
    broken = cache.loads(damaged)
    assert summary_dict(broken)["connections"] == summary_dict(fresh)["connections"]
    assert broken.exchanges == [] and broken.frames == [] and broken.maps == {}
    assert any("unreadable" in w for w in broken.warnings)
    for cut in (len(blob) - len(body) - 10, 30):  # cut inside the index or the head: a miss, not a traceback
        try:
            cache.loads(blob[:cut])
        except ValueError:
            pass
        else:
            raise AssertionError(f"a cache entry cut at {cut} loaded")


@pytest.mark.parametrize("where", ["exchanges", "table"])
def test_a_damaged_entry_is_removed_so_the_next_open_analyses_again(tmp_path, monkeypatch, where):
    """An entry whose requests' part (or its body's table) turns out damaged on disk: the
    reopened analysis says so and the entry is removed, so that the next open analyses the
    capture again and has every request (it kept the damaged entry, a hit that lacked them,
    until the cache was cleared by hand). An entry stored again meanwhile is not removed."""
    from pathlib import Path

    from wirefall.analyzer.jsonout import exchange_dict

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = Path(__file__).resolve().parents[1] / "sample_captures" / "http"
    cap, keys = str(root / "h2-tls.pcap"), [str(root / "h2-tls.keys")]
    fresh, hit = cache.analyze_cached(cap, keys)
    entry = cache.cache_dir(create=False) / (cache.cache_key(cap, keys) + cache.SUFFIX)
    blob = entry.read_bytes()
    _, _, body = cache._parts(blob)
    b = len(blob) - len(body)
    at = b + bytes(body).index(bytes(cache._body_parts(body)["exchanges"])) + 20 if where == "exchanges" else b + 3
    entry.write_bytes(blob[:at] + bytes(x ^ 0xFF for x in blob[at : at + 9]) + blob[at + 9 :])
    broken, hit = cache.analyze_cached(cap, keys)
    assert hit and broken.exchanges == []
    assert any("unreadable" in w and "the cache entry is removed" in w for w in broken.warnings), broken.warnings
    assert not entry.exists()
    again, hit = cache.analyze_cached(cap, keys)  # analysed anew, and stored again
    assert not hit and [exchange_dict(e) for e in again.exchanges] == [exchange_dict(e) for e in fresh.exchanges]
    assert entry.exists()
    # a damaged part found after another process stored the entry anew: that entry stays
    entry.write_bytes(blob[:at] + bytes(x ^ 0xFF for x in blob[at : at + 9]) + blob[at + 9 :])
    broken, hit = cache.analyze_cached(cap, keys)
    entry.unlink(missing_ok=True)  # (a damaged table is found on reading it: removed already)
    cache.store(cache.cache_key(cap, keys), fresh)
    assert broken.exchanges == [] and entry.exists()


def test_reopened_analysis_unpacks_once_under_concurrent_readers(tmp_path, monkeypatch):
    """The web app reads one analysis from several callback threads: each gets the frames,
    and each part of the body is unpacked once."""
    import threading
    from pathlib import Path

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = Path(__file__).resolve().parents[1] / "sample_captures" / "http"
    cap, keys = str(root / "h2-tls.pcap"), [str(root / "h2-tls.keys")]
    fresh, _ = cache.analyze_cached(cap, keys)
    for _ in range(5):
        an, hit = cache.analyze_cached(cap, keys)
        assert hit
        load, calls = an.__dict__["_wf_lazy"], []
        an.__dict__["_wf_lazy"] = lambda name: calls.append(name) or load(name)
        got, errors = [], []
        barrier = threading.Barrier(8)

        def read(name):
            try:
                barrier.wait()
                got.append(len(getattr(an, name)))
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=read, args=("frames" if i % 2 else "exchanges",)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and sorted(calls) == ["exchanges", "frames"]  # each part once
        assert sorted(got) == sorted([len(fresh.frames)] * 4 + [len(fresh.exchanges)] * 4)


def test_reopened_analysis_brings_its_packet_to_frames_index(tmp_path, monkeypatch):
    """An analysis of BULK_FRAMES frames or more is stored with its packet → frames index
    (the TUI's packet list needs it before its first screen): reopened, the index is the
    stored one, not built again, and lists for every packet the frames a fresh analysis's
    index — built one frame at a time — lists; a stored index that does not fit the frames
    is not taken."""
    from pathlib import Path

    from wirefall.analyzer import detail
    from wirefall.analyzer.pipeline import analyze

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = Path(__file__).resolve().parents[1] / "sample_captures" / "page"
    cap, keys = str(root / "page-h2.pcapng"), [str(root / "page-h2.keys")]
    one_by_one = analyze(cap, keys)
    want = detail._frame_index(one_by_one)  # (fewer than BULK_FRAMES frames: indexed one by one)
    assert one_by_one.__dict__["_wf_frame_index"][2] > 0
    monkeypatch.setattr(detail, "BULK_FRAMES", 1)
    fresh = analyze(cap, keys)
    blob = cache.dumps(fresh)
    again = cache.loads(blob)
    assert cache.FRAME_INDEX not in again.__dict__  # with the frames, not the summary part
    built = []
    bulk = detail._bulk_index
    monkeypatch.setattr(detail, "_bulk_index", lambda *a: built.append(a) or None)
    got = detail._frame_index(again)
    assert not built and again.__dict__[cache.FRAME_INDEX][1] is got
    assert type(got.off).__name__ == type(got.ids).__name__ == "array"  # stored as plain arrays (no numpy to read them)
    n = len(one_by_one.index.ts)
    assert [list(got.get(p)) for p in range(n + 2)] == [list(want.get(p)) for p in range(n + 2)]
    assert sum(len(want.get(p)) for p in range(n + 2)) > len(one_by_one.frames)  # frames spanning packets: more entries than frames
    # an analysis indexed one frame at a time while it was read (the TUI, loading) is stored with
    # a whole index all the same: reopened, it is not built again
    assert one_by_one.__dict__["_wf_frame_index"][2] > 0  # (incremental)
    monkeypatch.setattr(detail, "_bulk_index", bulk)
    blob1 = cache.dumps(one_by_one)
    monkeypatch.setattr(detail, "_bulk_index", lambda *a: built.append(a) or None)
    again = cache.loads(blob1)
    got = detail._frame_index(again)
    assert not built and again.__dict__[cache.FRAME_INDEX][1] is got
    assert [list(got.get(p)) for p in range(n + 2)] == [list(want.get(p)) for p in range(n + 2)]
    # stored as a part of its own, its arrays as they lie in memory; one whose frame or packet count
    # is not the body's is refused (built again on use)
    raw = cache._body_parts(cache._parts(blob)[2])[cache.FRAME_INDEX_PART]
    nf, npk = len(fresh.frames), len(fresh.index.ts)
    assert cache._frame_index_from(raw, nf, npk)[1].get(3) == want.get(3)
    for bad in ((nf - 1, npk), (nf, 0)):
        with pytest.raises(ValueError):
            cache._frame_index_from(raw, *bad)


def test_frames_of_a_big_analysis_come_back_a_chunk_at_a_time(tmp_path, monkeypatch):
    """An analysis of two chunks of frames or more (``FRAME_CHUNK``, made small here) stores its
    frames in chunks: reopened, their count is known at once, reading one frame unpacks its
    chunk only, and in order, by index and by slice they are a fresh analysis's frames; pickled
    again they are a plain list.  A damaged chunk costs its own frames (kept in number, marked,
    one warning), never the others.  The HTTP/1 filter fields, which skip frames reopened
    without any HTTP/1 protocol, match the packets they match on a fresh analysis."""
    import pickle
    from pathlib import Path

    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.filter import filter_packets
    from wirefall.analyzer.jsonout import frame_dict
    from wirefall.analyzer.pipeline import analyze

    monkeypatch.setattr(cache, "FRAME_CHUNK", 4)
    root = Path(__file__).resolve().parents[1] / "sample_captures" / "http"
    fresh = analyze(str(root / "h2-tls.pcap"), [str(root / "h2-tls.keys")])
    want = [frame_dict(f) for f in fresh.frames]
    assert len(want) >= 12
    again = cache.loads(cache.dumps(fresh))
    fr = again.frames
    assert isinstance(fr, cache.FrameChunks) and len(fr) == len(want)
    assert not any(c is not None for c in fr._chunks)
    assert frame_dict(fr[5]) == want[5] and [c is not None for c in fr._chunks].count(True) == 1
    assert frame_dict(fr[-1]) == want[-1] and [frame_dict(f) for f in fr[2:11:3]] == want[2:11:3]
    assert [frame_dict(f) for f in fr] == want
    assert fr.protocols == {f.protocol for f in fresh.frames} and not any(p.startswith("http/1") for p in fr.protocols)
    assert fr == list(fr) and type(pickle.loads(pickle.dumps(fr))) is list
    try:
        fr[len(want)]
    except IndexError:
        pass
    else:
        raise AssertionError("a frame past the end")
    n, packed, protos = cache._frame_chunks(fresh.frames)
    packed[1] = packed[1][:10]
    warns: list[str] = []
    hurt = cache.FrameChunks(n, packed, protos, warn=warns.append)
    got = list(hurt)
    assert len(got) == n and [frame_dict(f) for f in got[:4] + got[8:]] == want[:4] + want[8:]
    assert all(f.error and f.connection == -1 for f in got[4:8]) and len(warns) == 1 and "frames 5-8" in warns[0]

    for name, expr in (("h2-tls.pcap", "http"), ("http1-nginx.pcap", "http.request or http.response.code == 200")):
        fresh = analyze(str(root / name), [])
        again = cache.loads(cache.dumps(fresh))
        src = PacketSource(str(root / name))
        try:
            a, b = list(filter_packets(fresh, src, expr)), list(filter_packets(again, src, expr))
        finally:
            src.close()
        assert a == b and (name == "h2-tls.pcap") == (a == [])


def test_reopened_analysis_holds_the_certificate_subject_without_x509(tmp_path):
    """The cache stores each server certificate's subject resolved (analyzer.cache): a
    reopened analysis shows it without loading cryptography.x509 (~20 ms of a start), in a
    fresh process; while a parallel worker's part (model.TlsInfo.__getstate__) goes with the
    DER unparsed, which the worker never pays for."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    cap, keys = str(root / "sample_captures" / "http" / "h2-tls.pcap"), str(root / "sample_captures" / "http" / "h2-tls.keys")
    code = f"""
import sys, pickle
from wirefall.analyzer import cache
an, hit = cache.analyze_cached({cap!r}, [{keys!r}])
subjects = [c.tls.certificate_subject for c in an.connections if c.tls is not None]
print(hit, "cryptography.x509" in sys.modules, subjects)
if not hit:
    fresh = __import__("wirefall.analyzer.pipeline", fromlist=["analyze"]).analyze({cap!r}, [{keys!r}])
    t = next(c.tls for c in fresh.connections if c.tls is not None and c.tls.has_certificate)
    assert t._cert_der is not None and pickle.loads(pickle.dumps(t))._cert_der == t._cert_der
"""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"), PYTHONPATH=str(root))
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout.split(" ", 2)
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout.split(" ", 2)
    assert first[0] == "False" and again[0] == "True"
    assert again[1] == "False"  # (reopened: x509 not loaded, the subject there all the same)
    assert again[2] == first[2] and "CN=" in again[2]


def test_reopened_summary_takes_its_byte_total_from_the_entry(tmp_path, monkeypatch):
    """The index's bytes on the wire are stored with it: a reopened summary does not add up
    the lengths again (30 ms on 1.2 M packets), and says what the capture's lengths add up
    to; an entry written before (no total) still gives that, added up."""
    import json
    from pathlib import Path

    from wirefall.analyzer import jsonout

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = Path(__file__).resolve().parents[1] / "sample_captures" / "http"
    cap, keys = str(root / "h2-tls.pcap"), [str(root / "h2-tls.keys")]
    fresh, _ = cache.analyze_cached(cap, keys)
    want = sum(fresh.index.origlen)
    assert want > 0 and jsonout.summary_dict(fresh)["bytes"] == want
    blob = cache.dumps(fresh)
    summed = []
    real_sum = sum
    monkeypatch.setattr(jsonout, "sum", lambda xs: summed.append(1) or real_sum(xs), raising=False)
    again = cache.loads(blob)
    assert jsonout.summary_dict(again)["bytes"] == want and summed == []
    # the same entry with the total taken out of the index's description: added up on demand
    _, idx, _ = cache._parts(blob)
    n = int.from_bytes(idx[:4], "little")
    desc = json.loads(bytes(idx[4 : 4 + n]))
    assert desc.pop("on_wire") == [len(fresh.index.origlen), want]
    d = json.dumps(desc).encode()
    new_idx = len(d).to_bytes(4, "little") + d + bytes(idx[4 + n :])
    start = bytes(blob).index(bytes(idx)) - 8
    old = blob[:start] + len(new_idx).to_bytes(8, "little") + new_idx + blob[start + 8 + len(idx) :]
    older = cache.loads(old)
    assert jsonout.summary_dict(older)["bytes"] == want and summed == [1]
    assert list(older.index.origlen) == list(fresh.index.origlen) and list(older.index.ts) == list(fresh.index.ts)


def test_reopened_packet_list_needs_no_numpy(tmp_path):
    """A big analysis's packet → frames index is built with numpy but stored as plain arrays: a
    fresh process that reopens it and reads the frames on a packet does not import numpy (~0.1 s
    of the TUI's first screen), and finds the frames a fresh analysis finds."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    cap, keys = str(root / "sample_captures" / "page" / "page-h2.pcapng"), str(root / "sample_captures" / "page" / "page-h2.keys")
    code = f"""
import sys
from wirefall.analyzer import cache, detail
detail.BULK_FRAMES = 1
an, hit = cache.analyze_cached({cap!r}, [{keys!r}])
fi = detail._frame_index(an)
print(hit, "numpy" in sys.modules, [fi.get(p) for p in range(1, an.packets + 1)])
"""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"), PYTHONPATH=str(root))
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout.split(" ", 2)
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout.split(" ", 2)
    assert first[:2] == ["False", "True"] and again[:2] == ["True", "False"]
    assert again[2] == first[2] and "[0" in first[2]


def test_reopened_text_summary_unpacks_no_body_part(tmp_path, monkeypatch, capsys):
    """`wirefall summary FILE --cache`, text or JSON, reopened: the request count comes from the
    summary part (Analysis.count), no part of the body is unpacked (h2-small's text summary
    unpickled its 60 k requests: 0.6-0.9 s and 138 MB against 0.1 s and 21 MB), and the text is
    the fresh one's; `requests --json` reopened unpacks the requests, not the frames."""
    from pathlib import Path

    from wirefall.ui import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = Path(__file__).resolve().parents[1] / "sample_captures" / "http"
    argv = ["summary", str(root / "h2-tls.pcap"), "--keylog", str(root / "h2-tls.keys"), "--cache"]
    unpacked: list[str] = []
    real = cache._PartLoader.__call__
    monkeypatch.setattr(cache._PartLoader, "__call__", lambda self, name: unpacked.append(name) or real(self, name))
    outs = []
    for extra in ([], [], ["--json"]):
        assert cli.main(argv + extra) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and " 14 requests" in outs[0].splitlines()[0] and '"connections"' in outs[2]
    assert unpacked == []
    # `requests --json` reopened: the requests only (no DNS among the frames' protocols: the
    # waterfall plan looks for lookups without reading the frames), the fresh output
    rq = ["requests", *argv[1:-1], "--json"]
    assert cli.main(rq) == 0
    fresh = capsys.readouterr().out
    assert cli.main(rq + ["--cache"]) == 0 and cli.main(rq + ["--cache"]) == 0
    assert capsys.readouterr().out == fresh * 2 and '"url"' in fresh
    assert unpacked == ["exchanges", "exchanges"]  # (one per reopening)


def test_first_digest_is_remembered_without_a_cache_folder(tmp_path, monkeypatch):
    """On a machine where ``--cache`` was never used the folder does not exist yet: the first
    key's digest is remembered all the same, so the next launch (a cache hit) does not read
    the capture again (session 34: the TUI's first reopen of h2-big-mtu hashed 1.7 GB, 1.73 s
    to its first row against 0.58 s after)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert not cache.cache_dir(create=False).exists()
    f = tmp_path / "cap.bin"
    data = os.urandom(2 << 20)
    f.write_bytes(data)
    key = cache.cache_key(str(f))
    memo = cache.cache_dir(create=False) / cache.DIGEST_MEMO
    assert memo.exists() and hashlib.sha256(data).hexdigest() in memo.read_text()
    assert oct(cache.cache_dir(create=False).stat().st_mode & 0o777) == oct(0o700)
    calls = []
    monkeypatch.setattr(cache, "_sha256_file", lambda p: calls.append(p) or "x")
    assert cache.cache_key(str(f)) == key and calls == []


def test_small_file_digest_makes_no_folder(tmp_path, monkeypatch):
    """A file below the memo's size is hashed each time (faster than reading the memo): its
    key makes no cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    f = tmp_path / "small.pcap"
    f.write_bytes(b"x" * 100)
    assert cache.file_digest(str(f)) == hashlib.sha256(b"x" * 100).hexdigest()
    assert not cache.cache_dir(create=False).exists()
