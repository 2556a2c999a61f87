"""A browser log's times in the JSON are to the microsecond, as a capture's (docs/JSON.md):
a HAR's times are its entry's start plus fractional milliseconds, a NetLog's its base plus
ticks, a qlog's its reference time plus ms — sums whose float noise went out before
(pw-h2.har.gz's first request_start 1796119088.7096932 for the HAR's .647 + 62.693 ms).
Truth: the HAR itself, summed in decimal arithmetic."""
from __future__ import annotations

import gzip
import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from wirefall.analyzer.browserlog import open_log
from wirefall.analyzer.jsonout import exchange_dict, summary_dict

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
LOGS = [ROOT / "sample_captures/page/pw-h2.har.gz", ROOT / "sample_captures/quic/aioquic-qlog.qlog",
        SHARED / "hars/webpagetest-amazon.har.gz", SHARED / "pageload-amazon/amazon1_netlog.json.gz"]
_EPOCH_KEYS = ("request_start", "request_end", "response_start", "response_end", "response_headers_end",
               "start", "end", "dns_start", "dns_end", "connect_start", "connect_end", "tls_start", "tls_end")


def _times(o, out: list, key: str = "") -> list:
    """Every epoch time (a float > 1e9) under ``o``, with its key."""
    if isinstance(o, dict):
        for k, v in o.items():
            _times(v, out, k)
    elif isinstance(o, list):
        for v in o:
            _times(v, out, key)
    elif type(o) is float and o > 1e9:
        out.append((key, o))
    return out


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_time_is_to_the_microsecond(path: Path):
    if not path.exists():
        pytest.skip(f"{path} not here")
    an = open_log(str(path))
    rows = json.loads(json.dumps([exchange_dict(e) for e in an.exchanges]))
    summ = json.loads(json.dumps(summary_dict(an), default=str))
    got = _times(rows, []) + _times(summ, [])
    assert len(got) > 20  # (every log has rows with times)
    noisy = [(k, t) for k, t in got if t != round(t, 6)]
    assert not noisy, noisy[:5]


def test_har_response_end_is_the_entry_s_decimal_sum():
    """Each pw-h2 entry's response_end is its startedDateTime plus its timings (blocked, dns,
    connect — ssl is inside connect, HAR 1.2 — send, wait, receive; -1: none), in decimal."""
    path = ROOT / "sample_captures/page/pw-h2.har.gz"
    har = json.load(gzip.open(path))
    an = open_log(str(path))
    by_url: dict[str, list[float]] = {}
    for e in sorted(an.exchanges, key=lambda e: e.id):
        by_url.setdefault(e.url or "", []).append(e.response_end)
    checked = 0
    for en in har["log"]["entries"]:
        t = en["timings"]
        dt = datetime.fromisoformat(en["startedDateTime"].replace("Z", "+00:00"))
        start = Decimal(int(dt.timestamp())) + Decimal(dt.microsecond) / Decimal(10**6)
        ms = sum((Decimal(str(t[k])) for k in ("blocked", "dns", "connect", "send", "wait", "receive") if t.get(k, -1) >= 0), Decimal(0))
        want = float((start + ms / 1000).quantize(Decimal("0.000001")))
        ends = by_url.get(en["request"]["url"])
        assert ends, en["request"]["url"]
        assert want in ends, (en["request"]["url"], want, ends)
        checked += 1
    assert checked == len(har["log"]["entries"]) > 10
