"""The analysis cache's content digest is remembered by file identity and stamps, and a
changed file is always hashed again."""
from __future__ import annotations

import hashlib
import os

from analyzer import cache


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
