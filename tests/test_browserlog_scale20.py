"""A browser log of thousands of requests is laid over a capture (and opened alone) in work
that grows with its size, not its square, and still matches every request to the right
exchange.  The inputs are made by scripts/hostile/browserlog20_inputs.py, which knows the
truth: which HAR entry is which wire exchange.

The work is counted, not timed: URL normalisations (``matching._norm_url``, ``_path``) in
the request matching, log requests walked in the connection matching, exchanges walked in
``build.to_analysis``.  Before the fix each grew with N² (500,500 ``_url_fits`` calls, two
``_norm_url`` each, for 1000 pipelined requests)."""
from __future__ import annotations

import sys
from collections import Counter

from conftest import ROOT

from wirefall.analyzer.browserlog import build, matching, read_log
from wirefall.analyzer.model import Analysis
from wirefall.analyzer.pipeline import analyze

sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
import browserlog20_inputs as B  # noqa: E402

SIZES = (1000, 2000)


class _Walked(list):
    """A list that counts the items handed out by iterating it."""

    def __init__(self, items=(), counter: Counter | None = None, key: str = "walked") -> None:
        super().__init__(items)
        self.counter = counter if counter is not None else Counter()
        self.key = key

    def __iter__(self):
        for x in super().__iter__():
            self.counter[self.key] += 1
            yield x


def _counting(monkeypatch, counter: Counter, *names: str) -> None:
    for name in names:
        f = getattr(matching, name)

        def wrapped(*a, _f=f, _name=name):
            counter[_name] += 1
            return _f(*a)

        monkeypatch.setattr(matching, name, wrapped)


def _linear(work: dict[int, int], per: float) -> None:
    small, big = SIZES
    assert work[small] <= per * small, work
    assert work[big] <= per * big, work
    assert work[big] <= 2.5 * work[small], work  # doubling N: about double the work, not four times


def test_pipelined_har_matches_every_entry_by_its_url_in_linear_work(tmp_path, monkeypatch):
    work = {}
    for n in SIZES:
        cap, har, truth = B.pipelined(tmp_path, n)
        an = analyze(str(cap))
        assert [e.path for e in an.exchanges] == [f"/p{k}" for k in range(n)]
        log = read_log(str(har))
        counter: Counter = Counter()
        _counting(monkeypatch, counter, "_norm_url", "_path", "_url_fits")
        s = matching.apply(an, log)
        monkeypatch.undo()
        work[n] = sum(counter.values())
        assert (s["sent"], s["matched"], s["unmatched"], s["wire_only"]) == (n, n, 0, 0)
        for e in an.exchanges:  # each entry on the exchange of its own URL, by URL
            assert truth[e.browser["id"]] == e.path, (e.id, e.path, e.browser["id"])
            assert e.sources["match_by"] == "url+time"
        assert len({e.browser["id"] for e in an.exchanges}) == n
    _linear(work, per=8)


def test_har_of_one_connection_per_entry_in_linear_work(tmp_path):
    work = {}
    for n in SIZES:
        cap, har, truth = B.own_connections(tmp_path, n)
        an = analyze(str(cap))
        assert [e.path for e in an.exchanges] == ["/c0", "/c1"]
        log = read_log(str(har))
        assert len(log.connections) == n
        counter: Counter = Counter()
        log.requests = _Walked(log.requests, counter)
        s = matching.apply(an, log)
        work[n] = counter["walked"]
        assert (s["sent"], s["matched"], s["unmatched"], s["wire_only"], s["connections_matched"]) == (n, 2, n - 2, 0, 2)
        for e in an.exchanges:  # the entry sent while its connection was open, on that connection
            assert truth[e.browser["id"]] == e.path
            assert e.sources["match_by"] == "connection+url+time"
        assert all(truth[u["id"]] is None and u["reason"] == "its connection is not in the capture"
                   for u in s["unmatched_requests"])
    _linear(work, per=5)


def test_har_of_one_connection_per_entry_opened_alone_in_linear_work(tmp_path, monkeypatch):
    work = {}
    for n in SIZES:
        _, har, _ = B.own_connections(tmp_path, n)
        log = read_log(str(har))
        counter: Counter = Counter()

        class Counted(Analysis):
            def __init__(self, *a, **kw) -> None:
                super().__init__(*a, **kw)
                self.exchanges = _Walked((), counter)

        monkeypatch.setattr(build, "Analysis", Counted)
        an = build.to_analysis(log)
        monkeypatch.undo()
        work[n] = counter["walked"]
        assert len(an.connections) == len(an.exchanges) == n
        by_conn = {e.connection: e for e in list.__iter__(an.exchanges)}
        for c in an.connections:  # connection i (in the order of their requests) spans entry i's request, no other's
            e = by_conn[c.id]
            assert e.browser["id"] == str(c.id)
            assert (c.start, c.end) == (e.request_start, e.response_end)
    _linear(work, per=3)
