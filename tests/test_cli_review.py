"""The CLI's text outputs as a person reads them (a review): each test failed before its fix."""
from __future__ import annotations

from pathlib import Path

from wirefall.ui import cli

PAGE = Path(__file__).resolve().parents[1] / "sample_captures" / "page"


def _run(capsys, *argv: str) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_requests_table_shows_the_id_detail_takes(capsys):
    """`requests --detail N` takes the request's id, but the table had no id column: with a
    filter (or a sort by start across connections) the N-th row is not request N."""
    cap, keys = str(PAGE / "page-h1.pcapng"), str(PAGE / "page-h1.keys")
    out = _run(capsys, "requests", cap, "--keylog", keys, "-Y", 'url contains "app.js"').splitlines()
    assert out[0].split()[0] == "id"
    (row,) = out[2:]
    rid, url = row.split()[0], row.split()[-1]
    assert rid != "1" and url.endswith("/js/app.js")
    detail = _run(capsys, "requests", cap, "--keylog", keys, "--detail", rid)
    assert detail.splitlines()[0] == f"GET {url}"
