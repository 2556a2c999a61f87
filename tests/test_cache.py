"""The analysis cache's content digest is remembered by file identity and stamps, and a
changed file is always hashed again."""
from __future__ import annotations

import hashlib
import os

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
    lists come back, equal to a fresh analysis, when first asked for.  A body damaged on disk
    costs those parts (with a warning), never the summary and never a traceback."""
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
    assert [exchange_dict(e) for e in again.exchanges] == [exchange_dict(e) for e in fresh.exchanges]
    assert all(name in again.__dict__ for name in LAZY_FIELDS)  # one use unpacked them all
    assert [frame_dict(f) for f in again.frames] == [frame_dict(f) for f in fresh.frames]
    assert sorted(again.maps) == sorted(fresh.maps) and sorted(again.tls_records) == sorted(fresh.tls_records)
    for k, m in fresh.maps.items():
        assert list(again.maps[k].starts) == list(m.starts) and list(again.maps[k].packets) == list(m.packets)

    assert list(again.index.ts) == list(fresh.index.ts) and list(again.index.offset) == list(fresh.index.offset)
    assert list(again.index.proto) == list(fresh.index.proto) and list(again.index.conn) == list(fresh.index.conn)
    blob = cache.dumps(fresh)
    _, _, body = cache._parts(blob)
    b = len(blob) - len(body)  # where the body starts
    damaged = blob[: b + 20] + bytes(x ^ 0xFF for x in blob[b + 20 : b + 60]) + blob[b + 60 :]
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


def test_reopened_analysis_unpacks_once_under_concurrent_readers(tmp_path, monkeypatch):
    """The web app reads one analysis from several callback threads: each gets the frames,
    and the body is unpacked once."""
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
        an.__dict__["_wf_lazy"] = lambda: calls.append(1) or load()
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
        assert not errors and calls == [1]
        assert sorted(got) == sorted([len(fresh.frames)] * 4 + [len(fresh.exchanges)] * 4)
