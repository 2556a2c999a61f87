"""``packets``' listing made by two processes (analyzer/parallel.py ``split_output``) is the
serial listing byte for byte, which tests/test_crosscheck.py holds against tshark's; a child
that fails costs only time, and its rows are made by the parent."""
from __future__ import annotations

import os
import sys

import pytest

from conftest import SAMPLES

from wirefall.analyzer import parallel

CAPTURES = [("page/page-h2.pcapng", "page/page-h2.keys"), ("page/bg-mixed.pcapng", "page/bg-mixed.keys"),
            ("quic/page-h3-late.pcapng", None), ("lossy/page-h2.pcapng", "lossy/page-h2.keys")]


def _listing(monkeypatch, tmp_path, cap: str, keys: str | None, j: int) -> bytes:
    from wirefall.ui import cli

    out = tmp_path / f"rows-{j}.txt"
    args = ["packets", str(SAMPLES / cap), "-j", str(j)] + (["--keylog", str(SAMPLES / keys)] if keys else [])
    with open(out, "w", encoding="utf-8") as f:
        monkeypatch.setattr(sys, "stdout", f)
        assert cli.main(args) == 0
        f.flush()
    return out.read_bytes()


@pytest.mark.parametrize("cap,keys", CAPTURES)
def test_listing_in_two_processes_is_the_serial_one(monkeypatch, tmp_path, cap, keys):
    if not (SAMPLES / cap).exists():
        pytest.skip(cap)
    monkeypatch.setattr(parallel, "ROWS_SPLIT_MIN", 4)  # (every sample is split)
    forks = []
    real_fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or real_fork())
    serial = _listing(monkeypatch, tmp_path, cap, keys, 1)
    assert not forks
    two = _listing(monkeypatch, tmp_path, cap, keys, 2)
    assert forks and serial.count(b"\n") > 4
    assert two == serial


def test_a_child_that_fails_costs_only_time(tmp_path):
    parent = os.getpid()

    def encode(a, b):
        for i in range(a, b):
            if os.getpid() != parent and i == b - 3:
                raise RuntimeError("the child dies")
            yield f"row {i} é\n"

    out = tmp_path / "out.txt"
    with open(out, "w", encoding="utf-8") as f:
        parallel.split_output(1000, encode, 2, out=f, share=0.5)
    assert out.read_text(encoding="utf-8") == "".join(f"row {i} é\n" for i in range(1000))


@pytest.mark.parametrize("n,workers", [(0, 2), (1, 2), (2, 2), (3, 2), (1000, 1), (1000, 2)])
def test_every_item_once_in_order(tmp_path, n, workers):
    out = tmp_path / "out.txt"
    with open(out, "w", encoding="utf-8") as f:
        parallel.split_output(n, lambda a, b: (f"{i}\n" for i in range(a, b)), workers, out=f, share=0.48)
    assert out.read_text(encoding="utf-8") == "".join(f"{i}\n" for i in range(n))
