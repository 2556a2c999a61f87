"""HAR / model JSON / qlog exports are written by orjson, streamed (analyzer/export.py
``json_chunks``): the same values as the standard library's ``json.dumps`` of the same dict
(floats bit for bit), its refusals (NaN/±Infinity, non-JSON types), ``indent=2``'s layout,
and a writing memory bounded by a batch of entries, not by the document (review 20, perf #5)."""
from __future__ import annotations

import json
import os
import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirefall.analyzer import export as ex
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = {  # an HTTP/2 page (13 entries) and HTTP/3 pages over several connections (54 entries)
    "page-h2": ("sample_captures/page/page-h2.pcapng", "sample_captures/page/page-h2.keys"),
    "page-multi-late": ("sample_captures/quic/page-multi-late.pcapng", "sample_captures/quic/page-multi-late.keys"),
}
BUILDERS = {"har": lambda an: ex.har(an), "json": ex.model_json, "qlog": ex.qlog}


@pytest.fixture(scope="module")
def analyses():
    old = os.environ.pop("SSLKEYLOGFILE", None)
    try:
        return {name: analyze(str(ROOT / cap), keylogs=[str(ROOT / keys)]) for name, (cap, keys) in CAPTURES.items()}
    finally:
        if old is not None:
            os.environ["SSLKEYLOGFILE"] = old


def _same(a, b) -> bool:
    return a == b and repr(a) == repr(b)  # (repr: floats bit for bit, -0.0 too)


def _indents(text: str) -> list[int]:
    return [len(ln) - len(ln.lstrip(" ")) for ln in text.split("\n")]


@pytest.mark.parametrize("batch", [ex._BATCH, 3])
@pytest.mark.parametrize("fmt", ["har", "json", "qlog"])
@pytest.mark.parametrize("name", list(CAPTURES))
def test_export_gives_the_values_of_json_dumps(analyses, name, fmt, batch, tmp_path, monkeypatch):
    """The written file parses to json.loads(json.dumps(dict)) of the export's own dict; its
    lines are indent=2's (the same lines and indents: only a float's text may differ, 1e-7
    for 1e-07).  ``batch`` 3: the entries in many encoder calls, joined."""
    monkeypatch.setattr(ex, "_BATCH", batch)
    an = analyses[name]
    out = tmp_path / f"x.{fmt}"
    assert ex.export(an, str(out)) == fmt
    text = out.read_text(encoding="utf-8")
    doc = BUILDERS[fmt](an)
    ref = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
    assert _same(json.loads(text), json.loads(ref))
    assert _indents(text) == _indents(ref)
    if fmt == "har":
        assert len(json.loads(text)["log"]["entries"]) > 3 * batch or batch == ex._BATCH


def test_exported_har_file_is_valid_har_1_2(analyses, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).parent / "data" / "har-1.2.schema.json").read_text())
    out = tmp_path / "x.har"
    ex.export(analyses["page-multi-late"], str(out))
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(json.loads(out.read_bytes())))
    assert not errors, [e.message[:200] for e in errors[:5]]


def _deep_size(o) -> int:
    n = sys.getsizeof(o)
    if isinstance(o, dict):
        n += sum(_deep_size(k) + _deep_size(v) for k, v in o.items())
    elif isinstance(o, (list, tuple)):
        n += sum(_deep_size(x) for x in o)
    return n


def test_writing_a_har_holds_a_batch_not_the_document(analyses, tmp_path, monkeypatch):
    """tracemalloc's peak while the HAR is written (its dict already made), 4 entries per
    encoder call, on 54 entries: under half the file's size and a tenth of the dict's.  The
    former writer (json.dumps(indent=1) then .encode()) held the whole text as a str and as
    bytes at once plus the pure-Python encoder's pieces: 7.7x the file, 1.4x the dict; any
    writer that makes the document's text in one go needs at least the file's size."""
    monkeypatch.setattr(ex, "_BATCH", 4)
    doc = ex.har(analyses["page-multi-late"])
    assert len(doc["log"]["entries"]) >= 40  # (4 entries are at most a tenth of the text)
    warm = tmp_path / "warm.har"
    ex.write_atomic(str(warm), ex.json_chunks(doc))  # (imports and compiled patterns outside the count)
    out = tmp_path / "x.har"
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        ex.write_atomic(str(out), ex.json_chunks(doc))
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    size = out.stat().st_size
    assert out.read_bytes() == warm.read_bytes()
    assert peak < 0.5 * size, (peak, size)
    assert peak < 0.1 * _deep_size(doc), (peak, _deep_size(doc))


@pytest.mark.parametrize("bad", [{"log": {"entries": [{"time": float("nan")}] * 5}}, {"t": [1.5, float("inf")] * 300},
                                 {"a": {"b": {"c": {"d": [-float("inf")]}}}}])
def test_nan_and_infinity_fail_the_export_as_before(bad, tmp_path):
    out = tmp_path / "x.har"
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        ex.write_atomic(str(out), ex.json_chunks(bad))
    assert list(tmp_path.iterdir()) == []  # (no file, no temporary file left)


@pytest.mark.parametrize("bad,exc", [({"a": [b"x"]}, TypeError), ({"a": {1, 2}}, TypeError), ({"a": "\ud800"}, UnicodeEncodeError),
                                     ({"\udc00": 1}, UnicodeEncodeError)])
def test_what_json_refuses_is_refused(bad, exc, tmp_path):
    with pytest.raises(exc):
        ex.write_atomic(str(tmp_path / "x.json"), ex.json_chunks(bad))


def test_what_orjson_refuses_is_written_as_json_does():
    import enum

    class U(enum.IntEnum):
        A = 3

    for obj in ({"a": {1: 2, None: 3, 2.5: 4, False: 5}}, {"a": [2**70, -(2**80), 2**64 - 1, -(2**63)]}, {"u": [U.A, 0.1 + 0.2, -0.0, 5e-324, 1e22]},
                [{"x": [[[[[[1]]]]]]}] * 40, "é\u2028\x00\"\\"):
        text = b"".join(ex.json_chunks(obj)).decode("utf-8")
        assert _same(json.loads(text), json.loads(json.dumps(obj)))


TREE = st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda ch: st.lists(ch, max_size=40) | st.tuples(ch, ch) | st.dictionaries(st.text(), ch), max_leaves=60)


@settings(max_examples=200, deadline=None)
@given(TREE, st.integers(1, 5))
def test_layout_is_json_dumps_indent_2(x, batch):
    old = ex._BATCH
    ex._BATCH = batch
    try:
        assert b"".join(ex.json_chunks(x)) == json.dumps(x, indent=2, ensure_ascii=False).encode("utf-8")
    finally:
        ex._BATCH = old
