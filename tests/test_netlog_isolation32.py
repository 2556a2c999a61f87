"""The NetLog's facts of whose request it is are in ``requests --json`` as data (session 32):
``browser.isolation`` — ``browser_initiated``, ``network_isolation_key`` and its sites — beside
the ``background`` reason text made from them, which was all a script could read.

The truth: each request's URL_REQUEST_START_JOB params in the NetLog, read with json alone
(``test_netlog_page31.start_jobs``)."""
from __future__ import annotations

import json

from test_browserlog import _cli
from test_netlog_page31 import BG_CAP, BG_KEYS, BG_NL, _netlog, start_jobs


def _sites(key: str) -> tuple[str | None, str | None]:
    parts = key.split(" ")
    site = [None if p in ("null", "") or p.startswith("_") else p for p in parts[:2]]
    return site[0], site[1] if len(site) > 1 else None


def test_isolation_facts_are_the_netlogs_own():
    jobs = start_jobs(_netlog(BG_NL))
    out = _cli("requests", str(BG_CAP), "--keylog", str(BG_KEYS), "--netlog", str(BG_NL), "--json")
    rows = [r for r in json.loads(out.stdout) if r.get("browser")]
    assert rows
    seen = 0
    for r in rows:
        b = r["browser"]
        p = jobs.get(str(b["id"]))
        assert p is not None, b["id"]
        key = p.get("network_isolation_key")
        iso = b["isolation"]
        if key is None and p.get("initiator") != "not an origin":
            assert iso is None, (b["id"], iso)
            continue
        seen += 1
        assert iso["browser_initiated"] == (p.get("initiator") == "not an origin"), (b["id"], p, iso)
        assert iso["network_isolation_key"] == key, (b["id"], p, iso)
        assert (iso["top_frame_site"], iso["frame_site"]) == _sites(key), (b["id"], key, iso)
        # the reason text is made from these facts: a background row names its key
        if b["background"]:
            assert key in b["background"], b
    # bg-mixed: the page's 10 requests and Chromium's own (ListAccounts, the component updater)
    assert seen >= 12, seen
    assert sum(r["browser"]["isolation"]["browser_initiated"] for r in rows if r["browser"]["isolation"]) >= 5
