"""Performance work must not change output: the fast JSON writer against the standard
library's encoder (byte for byte), the analysis cache against a fresh analysis."""
from __future__ import annotations

import io
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.jsonout import dump, dumps

LEAF = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
KEYS = st.text() | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
TREE = st.recursive(LEAF, lambda ch: st.lists(ch) | st.tuples(ch, ch) | st.dictionaries(KEYS, ch), max_leaves=40)


def ref(x) -> str:
    return json.dumps(x, indent=1, ensure_ascii=False)


@settings(max_examples=400, deadline=None)
@given(TREE)
def test_dumps_is_json_dumps(x):
    assert dumps(x) == ref(x)


@settings(max_examples=100, deadline=None)
@given(st.lists(TREE))
def test_dump_streams_an_iterator_as_a_list(xs):
    f = io.StringIO()
    dump(iter(xs), f)
    assert f.getvalue() == ref(xs)
    f = io.StringIO()
    dump(xs, f)
    assert f.getvalue() == ref(xs)


def test_edge_values():
    cases = [[], {}, [[]], [{}], {"a": []}, float("nan"), float("inf"), -float("inf"), -0.0, 1e-7, 1e22, 10**30,
             "é\u2028\x00\"\\\ud800", {"k": [1, 2.5, None, True, {"z": [[]]}], 2.5: 3, None: 5}, [[[[[[[[[[1]]]]]]]]]] * 3]
    deep = cur = []
    for _ in range(100):  # deeper than the prebuilt indents
        cur.append([])
        cur = cur[0]
    cases.append(deep)
    for c in cases:
        assert dumps(c) == ref(c)


def test_unknown_type_raises_like_json():
    import pytest

    with pytest.raises(TypeError):
        dumps({"a": object()})
    with pytest.raises(TypeError):
        dumps({object(): 1})
