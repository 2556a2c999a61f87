"""``wirefall objects`` on many bodies of one name (review 20, defect 2): the names tshark gives,
found in linear work (``Names.take`` tried ``(1)``, ``(2)`` … from the start for every body,
massaging and ``os.stat``-ing each: O(k²) for k bodies of a name, and 1000 candidates for every
body past tshark's limit); the bodies written and not written counted apart (the command said
"wrote 6296 objects" where 1000 files were there).  Inputs: scripts/hostile/objects20_inputs.py."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wirefall.analyzer import objects
from wirefall.analyzer.objects import Names, export_objects, massage

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
import objects20_inputs  # noqa: E402

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def _old_take(used: set, exists, base_name: bytes, raw: bytes | None) -> bytes | None:
    """Names.take as it was (every candidate from the start): the reference for the names."""
    count = 0
    name = base_name
    while name in used or exists(name):
        count += 1
        if count >= objects.MAX_DUPLICATES:
            return None
        name = massage(raw, count) if raw is not None else objects._with_dup(base_name, count)
    used.add(name)
    return name


@pytest.mark.parametrize("seed", range(6))
def test_names_are_the_old_search_s(seed, monkeypatch):
    """Random runs of names whose candidates collide (``x.txt``'s ``x(1).txt`` is also a name of
    its own), some there before, long names cut to the limit, a small limit of duplicates: the
    same name or refusal, body for body, as the search from ``(1)`` every time."""
    monkeypatch.setattr(objects, "MAX_DUPLICATES", 12)
    rnd = random.Random(seed)
    pool = [b"x.txt", b"x(1).txt", b"x(2).txt", b"x(1)(1).txt", b"obj", b"obj(3)", b"a.b.c", b"a.b(1).c", b"(1).",
            b".", b"\xe2\x80\xae.exe", b"y" * 300 + b".txt", b"y" * 296 + b"(1).txt", b"z" * 260]
    before = {massage(rnd.choice(pool), rnd.randrange(4)) for _ in range(5)}
    exists = before.__contains__
    names, used = Names(exists), set()
    for _ in range(400):
        raw = rnd.choice(pool)
        assert names.take(massage(raw), raw) == _old_take(used, exists, massage(raw), raw)
    assert sum(names.refused.values()) > 0  # the limit was reached


def _count_work(monkeypatch, cap: str, out: Path) -> tuple[int, int, objects.ObjectsResult]:
    calls = {"massage": 0, "stat": 0}
    real_massage, real_stat = objects.massage, os.stat

    def counted_massage(*a, **kw):
        calls["massage"] += 1
        return real_massage(*a, **kw)

    def counted_stat(*a, **kw):
        if "dir_fd" in kw:  # (the candidates' tests in the output directory)
            calls["stat"] += 1
        return real_stat(*a, **kw)

    monkeypatch.setattr(objects, "massage", counted_massage)
    monkeypatch.setattr(os, "stat", counted_stat)
    try:
        res = export_objects(cap, str(out), keylogs=[])
    finally:
        monkeypatch.undo()
    return calls["massage"], calls["stat"], res


def test_work_on_names_grows_linearly(tmp_path, monkeypatch):
    """n, 2n and 4n requests of /obj (and n/2 of page.html, n/4 of x.txt) on one connection,
    4n past tshark's 1000 files of a name: the names massaged and tested on disk grow as the
    bodies (the old search: 0.5 M, 2.0 M, 4.5 M stat calls); every body past the limit refused
    with no test at all."""
    got = {}
    for n in (300, 600, 1200):
        cap = objects20_inputs.same_names(tmp_path / f"s{n}.pcap", n)
        got[n] = _count_work(monkeypatch, cap, tmp_path / f"o{n}")
    for n, (m, st, res) in got.items():
        bodies = len(res.objects)
        assert bodies == n + (n + 1) // 2 + (n + 3) // 4 + 1
        assert st <= bodies + 2, (n, st, bodies)  # one test per body written (+ x(1).txt's clash)
        assert m <= 2 * bodies + 2, (n, m, bodies)
    (m1, s1, _), (m2, s2, _), (m4, s4, _) = got[300], got[600], got[1200]
    assert s2 <= 2.1 * s1 and s4 <= 2.1 * s2 and m2 <= 2.1 * m1 and m4 <= 2.1 * m2
    res = got[1200][2]
    assert len(res.refused) == 200 and res.full_names == {"obj": 200}
    assert len(res.written) == len(os.listdir(tmp_path / "o1200")) == len(res.objects) - 200


def _tshark_names(cap: str, out: Path) -> dict[str, bytes]:
    subprocess.run(["tshark", "-n", "-Q", "-r", cap, "--export-objects", f"http,{out}"], check=True, timeout=300,
                   capture_output=True)
    return {p.name: p.read_bytes() for p in out.iterdir()}


def _run_cli(*a):
    return subprocess.run([sys.executable, "-m", "wirefall", *a], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def _compare_with_tshark(cap: str, tmp_path: Path, n_obj: int) -> None:
    """Names (and bodies) equal tshark's, files already there skipped by both and left alone;
    past 1000 files of a name tshark overwrites the last (``obj(999)``), wirefall refuses; the
    CLI's written and not-written counts, text and --json, are the files in DIR."""
    there = {"obj(5)": b"there before\n", "x(3).txt": b"mine\n", "page.html": b"mine too\n"}
    dirs = {}
    for who in ("tshark", "text", "json"):
        d = dirs[who] = tmp_path / who
        d.mkdir()
        for k, v in there.items():
            (d / k).write_bytes(v)
    theirs = _tshark_names(cap, dirs["tshark"])
    r = _run_cli("objects", cap, "-o", str(dirs["json"]), "--json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    t = _run_cli("objects", cap, "-o", str(dirs["text"]))
    assert t.returncode == 0, t.stderr
    mine = {p.name: p.read_bytes() for p in dirs["json"].iterdir()}
    assert mine == {p.name: p.read_bytes() for p in dirs["text"].iterdir()}
    assert set(mine) == set(theirs)
    assert {k: v for k, v in mine.items() if k != "obj(999)"} == {k: v for k, v in theirs.items() if k != "obj(999)"}
    assert all(mine[k] == v for k, v in there.items())  # never replaced
    written = [o for o in listed if o["written"]]
    refused = [o for o in listed if not o["written"]]
    assert len(written) == len(mine) - len(there) and {o["name"] for o in written} == set(mine) - set(there)
    assert all(o["name"] == "" and o["url"].endswith("/obj") and "1000 files" in o["error"] for o in refused)
    assert len(refused) == n_obj - 999  # obj, obj(1) … obj(999) but obj(5), there before
    for err in (r.stderr, t.stderr):
        assert f"wrote {len(written)} objects to" in err
        assert f"{len(refused)} not written: obj had 1000 files already" in err


@needs_tshark
def test_synthetic_names_equal_tsharks_past_the_limit(tmp_path):
    n = 1100
    cap = objects20_inputs.same_names(tmp_path / "s.pcap", n)
    _compare_with_tshark(cap, tmp_path, n)


@needs_tshark
@pytest.mark.skipif(shutil.which("tcpdump") is None or os.geteuid() != 0, reason="tcpdump on lo needs root")
def test_real_capture_names_equal_tsharks(tmp_path):
    """A real HTTP/1.1 server and client on lo (tcpdump), two uploads among the GETs."""
    n = 1100
    cap = objects20_inputs.real_same_names(tmp_path / "r.pcap", n)
    _compare_with_tshark(cap, tmp_path, n + 4)  # each upload: its request body and its response


def test_no_refusal_no_note(tmp_path):
    cap = objects20_inputs.same_names(tmp_path / "s.pcap", 8)
    r = _run_cli("objects", cap, "-o", str(tmp_path / "o"), "--json")
    assert r.returncode == 0 and all(o["written"] for o in json.loads(r.stdout))
    assert r.stderr.strip().endswith(f"wrote {len(os.listdir(tmp_path / 'o'))} objects to {tmp_path / 'o'}")
