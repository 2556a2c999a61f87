"""`stats`, `compare` and the cache counted, not timed (review 20, perf defects #3, #6, #8).

- ``stats.compute`` fills each connection from its exchanges once (``_fill_exchanges`` once per
  connection, ``_sides`` once per exchange) and adds the connection's block into its protocol's
  and the capture's; it was three fills and four ``_sides`` per exchange.  The page is found
  once, with the phases made only for the rows whose start is not their request's
  (``stats.page_once``); ``page_of`` made every row's phases.
- ``max_in_flight`` (two sorted lists, one walk) gives the old event sort's count, ties and
  ends before starts included.
- ``compare`` finds each side's page once and normalises each distinct URL once per mode.
- ``analyze_cached`` takes ``workers``: a miss stored with ``-j 2`` is the serial analysis,
  field by field, and ``load()`` and ``_compare`` pass ``-j`` on.
"""
from __future__ import annotations

import argparse
import dataclasses
import random
from array import array
from pathlib import Path

import pytest

from wirefall.analyzer import compare as compare_mod
from wirefall.analyzer import stats, waterfall
from wirefall.analyzer.model import Analysis, Exchange
from wirefall.analyzer.pipeline import analyze

SAMPLES = Path(__file__).resolve().parents[1] / "sample_captures"


def _cap(rel: str) -> tuple[str, list[str]]:
    p = SAMPLES / rel
    k = p.with_suffix(".keys")
    return str(p), [str(k)] if k.exists() else []


def _analysis(rel: str) -> Analysis:
    path, keys = _cap(rel)
    an = analyze(path, keylogs=keys)
    from wirefall.analyzer import completeness

    completeness.compute(an)  # (kept on the analysis: its own page_of, if any, is not counted below)
    return an


class _Counter:
    """Wraps ``module.name``, counting its calls."""

    def __init__(self, monkeypatch, module, name: str):
        self.n = 0
        real = getattr(module, name)

        def counted(*a, **kw):
            self.n += 1
            return real(*a, **kw)

        monkeypatch.setattr(module, name, counted)


def _old_start(e: Exchange) -> float | None:
    return next((t for t in (e.request_start, e.request_end, e.response_start, e.response_end) if t is not None), None)


def _old_end(e: Exchange) -> float | None:
    return next((t for t in (e.response_end, e.response_start, e.request_end, e.request_start) if t is not None), None)


def _old_max_in_flight(exs: list[Exchange]) -> int:
    """``max_in_flight`` as it was: an event sort, starts before ends at the same instant."""
    ev = []
    for e in exs:
        a, b = _old_start(e), _old_end(e)
        if a is None:
            continue
        ev.append((a, 1))
        ev.append((b if b is not None else a, -1))
    ev.sort(key=lambda x: (x[0], -x[1]))
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best


def _ex(i: int, times: list[float | None]) -> Exchange:
    e = Exchange(id=i, connection=0, protocol="h2")
    e.request_start, e.request_end, e.response_start, e.response_end = times
    return e


def test_max_in_flight_is_the_event_sort():
    """Random times on a coarse clock (many ties), any of the four missing, an end before its
    start: the same count as the old event sort, and _start/_end as the old generators."""
    rnd = random.Random(20)
    for _ in range(600):
        exs = []
        for i in range(rnd.randrange(0, 30)):
            exs.append(_ex(i, [rnd.choice([None, None, float(rnd.randrange(10))]) for _ in range(4)]))
        for e in exs:
            assert (stats._start(e), stats._end(e)) == (_old_start(e), _old_end(e))
        assert stats.max_in_flight(exs) == _old_max_in_flight(exs)


@pytest.mark.parametrize("rel", ["page/page-h2.pcapng", "http/h2c-upgrade.pcap", "page/bg-mixed.pcapng",
                                 "page/page-h3.pcapng", "quic/page-multi-late.pcapng"])
def test_stats_fills_each_connection_once_and_finds_the_page_once(rel, monkeypatch):
    an = _analysis(rel)
    listed = {c.id for c in an.connections}
    on_listed = sum(1 for e in an.exchanges if e.connection in listed)
    assert on_listed and an.connections
    fill = _Counter(monkeypatch, stats, "_fill_exchanges")
    sides = _Counter(monkeypatch, stats, "_sides")
    first_rest = _Counter(monkeypatch, stats, "_first_rest")
    page = _Counter(monkeypatch, waterfall, "page_of")
    phases = _Counter(monkeypatch, waterfall, "exchange_phases")
    by_exchange = _Counter(monkeypatch, waterfall, "phases_by_exchange")
    st = stats.compute(an, tcp_analysis=True)
    assert fill.n == first_rest.n == len(an.connections)  # (was 3 fills per connection)
    assert sides.n == on_listed  # (was 4 per exchange)
    assert page.n == 1 and by_exchange.n == 0
    # the phases of the rows whose start is not their request's own: a connection's first row,
    # a pushed one, one whose times are out of order (page_of made every row's)
    plain = sum(1 for e in an.exchanges if not e.pushed and None not in (e.request_start, e.request_end, e.response_start, e.response_end)
                and e.request_start <= e.request_end <= e.response_start <= e.response_end)
    assert phases.n <= len(an.exchanges) - plain + len(an.connections)
    # the protocol rows and the capture row add up the connections' (an h2c Upgrade's HTTP/1.1
    # heads counted on top, under HTTP/1.1 and in the capture's row)
    d = stats.to_dict(st)
    for key in ("connections", "packets", "bytes", "requests", "pushes", "resets", "frames"):
        per = [c[key] for c in d["connections"]]
        tot = [sum(x[i] for x in per) for i in range(2)] if isinstance(per[0], list) else sum(per)
        assert d["capture"][key] == tot, key
        assert sum(p[key] if not isinstance(p[key], list) else p[key][0] + p[key][1] for p in d["protocols"].values()) == (
            tot if not isinstance(tot, list) else tot[0] + tot[1]), key


def test_a_request_heavy_connection_makes_few_phases(monkeypatch):
    """h2c-nghttp's requests, in order on their connections: phases only for the rows that are
    not a request sent then answered (a connection's first row, pushed ones) — far fewer than
    the requests."""
    an = _analysis("http/h2c-nghttp.pcap")
    phases = _Counter(monkeypatch, waterfall, "exchange_phases")
    stats.compute(an)
    first_or_pushed = len({e.connection for e in an.exchanges}) + sum(1 for e in an.exchanges if e.pushed)
    assert phases.n <= first_or_pushed + sum(1 for e in an.exchanges if None in (e.request_start, e.request_end))
    assert len(an.exchanges) >= 3 * max(phases.n, 1) or phases.n < len(an.exchanges)


@pytest.mark.parametrize("a,b", [("page/page-h1.pcapng", "page/page-h2.pcapng"), ("page/bg-mixed.pcapng", "page/page-h2.pcapng")])
def test_compare_finds_each_page_once(a, b, monkeypatch):
    an_a, an_b = _analysis(a), _analysis(b)
    page = _Counter(monkeypatch, waterfall, "page_of")
    by_exchange = _Counter(monkeypatch, waterfall, "phases_by_exchange")
    norm = _Counter(monkeypatch, compare_mod, "normalise_url")
    res = compare_mod.compare(an_a, an_b)
    assert page.n == 2 and by_exchange.n == 0  # one page per side
    urls = {e.url for an in (an_a, an_b) for e in an.exchanges if e.url}
    assert norm.n <= 3 * len(urls)  # each distinct URL once per mode (url, path) and for the matched rows
    assert res["matched"] and res["page"]["requests"]["a"] is not None


def test_page_once_is_page_of():
    for rel in ("page/page-h2.pcapng", "page/bg-mixed.pcapng", "quic/page-multi-late.pcapng", "http/h2c-nghttp.pcap"):
        an = _analysis(rel)
        assert repr(stats.page_once(an)) == repr(waterfall.page_of(an)), rel


# ------------------------------------------------------------------------- the cache and -j


def _norm(v, depth: int = 0):
    """A comparable form of a model value: dataclasses and objects field by field, arrays as bytes."""
    assert depth < 12
    if isinstance(v, (str, bytes, int, float, bool, type(None))):
        return v
    if isinstance(v, array):
        return (v.typecode, v.tobytes())
    if isinstance(v, (list, tuple)):
        return [_norm(x, depth + 1) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted(repr(x) for x in v)
    if isinstance(v, dict):
        return sorted((repr(k), _norm(x, depth + 1)) for k, x in v.items())
    if dataclasses.is_dataclass(v):
        return (type(v).__name__, [(f.name, _norm(getattr(v, f.name), depth + 1)) for f in dataclasses.fields(v)])
    slots = [s for c in type(v).__mro__ for s in getattr(c, "__slots__", ())]
    if slots:
        return (type(v).__name__, [(s, _norm(getattr(v, s, None), depth + 1)) for s in slots])
    if hasattr(v, "__dict__"):
        return (type(v).__name__, _norm({k: x for k, x in vars(v).items() if not k.startswith("_wf_")}, depth + 1))
    if hasattr(v, "tobytes"):
        return v.tobytes()
    return repr(v)


def _fields(an: Analysis) -> dict:
    for c in an.connections:  # (as the cache stores them: the certificate's subject resolved, its DER dropped)
        if c.tls is not None:
            _ = c.tls.certificate_subject
    out = {f.name: _norm(getattr(an, f.name)) for f in dataclasses.fields(Analysis) if f.name not in ("keylog", "index")}
    idx = an.index
    out["index"] = {name: _norm(getattr(idx, name)) for name in ("ts", "conn", "proto", "offset", "caplen", "origlen", "linktype")}
    return out


def test_cache_miss_analysed_with_workers_is_the_serial_analysis(tmp_path, monkeypatch):
    """page-h1 (6 TLS connections: really sharded with -j 2) stored through the cache with
    workers=2: the analysis returned and the one reopened from the entry equal the serial one,
    field by field; the entry is the one a serial miss stores (same key, so a serial reopen hits)."""
    from wirefall.analyzer import cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path, keys = _cap("page/page-h1.pcapng")
    serial = analyze(path, keylogs=keys)
    par, hit = cache.analyze_cached(path, keys, workers=2)
    assert not hit and par.__dict__.get("_wf_parallel") == "parallel: 2 workers"
    want = _fields(serial)
    got = _fields(par)
    for k in want:
        assert got[k] == want[k], k
    again, hit = cache.analyze_cached(path, keys)  # (serial asker: the same key)
    assert hit and "_wf_parallel" not in again.__dict__
    got = _fields(again)
    for k in want:
        assert got[k] == want[k], k
    assert stats.to_dict(stats.compute(again)) == stats.to_dict(stats.compute(serial))


def test_analyze_cached_passes_workers_only_when_asked(tmp_path, monkeypatch):
    from wirefall.analyzer import cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    seen = []

    def stand_in(path, keylogs=None, progress=None, **kw):  # (a stand-in analyze that takes no workers)
        seen.append(kw)
        return analyze(path, keylogs=keylogs)

    path, keys = _cap("http/h2c-curl.pcap")
    cache.analyze_cached(path, keys, analyze=stand_in, use_cache=False)
    cache.analyze_cached(path, keys, analyze=stand_in, use_cache=False, workers=1)
    cache.analyze_cached(path, keys, analyze=stand_in, use_cache=False, workers="auto")
    assert seen == [{}, {}, {"workers": "auto"}]


def test_load_and_compare_pass_the_workers_on(tmp_path, monkeypatch, capsys):
    from wirefall.analyzer import cache, pipeline
    from wirefall.ui import cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    got = []
    real_cached, real_analyze = cache.analyze_cached, pipeline.analyze

    def cached(*a, **kw):
        got.append(("cached", kw.get("workers")))
        return real_cached(*a, **kw)

    def plain(*a, **kw):
        got.append(("analyze", kw.get("workers")))
        return real_analyze(*a, **kw)

    monkeypatch.setattr(cache, "analyze_cached", cached)
    monkeypatch.setattr(pipeline, "analyze", plain)
    path, keys = _cap("page/page-h2.pcapng")
    args = argparse.Namespace(file=path, keylog=keys, cache=True, workers=2, json=True, limit=None, har=None, netlog=None, qlog=None)
    cli.load(args)
    assert got[0] == ("cached", 2)
    got.clear()
    b, _ = _cap("page/page-h3.pcapng")
    for use_cache in (False, True):
        args = argparse.Namespace(a=path, b=b, keylog=None, keylog_b=None, cache=use_cache, workers=2, json=True, limit=None,
                                  output=None, force=False)
        assert cli._compare(args) == 0
    # (without --cache: A and B analysed; with it: A and B through the cache, and B's miss — A was
    # stored by load() above — analysed by analyze_cached, with the workers too)
    assert got == [("analyze", 2), ("analyze", 2), ("cached", 2), ("cached", 2), ("analyze", 2)]
    capsys.readouterr()
