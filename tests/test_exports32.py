"""Exports used as a user hands them to other tools (review 32).

- wirefall's own HAR of the amazon load, laid back over the same capture (``--har``), matches
  every entry to the exchange it was written from (the entry's ``_exchange``): before, 13 of 15
  — Chrome opened two TCP connections to www.amazon.com 2.7 ms apart (#8, which carried the
  HTML and favicon.ico, and #9, which carried nothing), and the HAR's connection, matched by its
  connect time alone, took #9.
- A HAR shaped as Chrome DevTools writes one (HARLog.ts: ``connection`` is the server's port,
  "443"; the socket id is ``_connectionId``; an IPv6 ``serverIPAddress`` in brackets) matches
  every entry too: before, ``connection`` "443" was taken as a socket id, so the h2 and the h3
  connections to one address were one connection of the log.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import shared

from wirefall.analyzer import export
from wirefall.analyzer.browserlog import overlay
from wirefall.analyzer.pipeline import analyze


def _amazon() -> tuple[str, str]:
    d = shared("pageload-amazon")
    return str(d / "amazon1.cap.gz"), str(d / "amazon1.key_log.txt.gz")


@pytest.fixture(scope="module")
def amazon_har(tmp_path_factory) -> tuple[Path, dict]:
    cap, keys = _amazon()
    an = analyze(cap, keylogs=[keys])
    doc = export.har(an)
    p = tmp_path_factory.mktemp("har32") / "amazon.har"
    p.write_text(json.dumps(doc))
    return p, doc


def _laid_over(har_path: Path) -> tuple[dict, dict[str, int]]:
    """(the overlay's summary, HAR entry index -> the wire exchange it was matched to)."""
    cap, keys = _amazon()
    an = analyze(cap, keylogs=[keys])
    summ = overlay(an, str(har_path))
    got = {e.browser["id"]: e.id for e in an.exchanges if isinstance(e.browser, dict) and e.browser.get("id") is not None}
    return summ, got


def _check_every_entry(summ: dict, got: dict[str, int], doc: dict) -> None:
    entries = doc["log"]["entries"]
    assert (summ["matched"], summ["unmatched"], summ["wire_only"]) == (len(entries), 0, 0), summ["unmatched_requests"]
    # each entry on the exchange it was written from (its _exchange: the outside truth here)
    assert got == {str(i): en["_exchange"] for i, en in enumerate(entries)}


def test_own_har_read_back_matches_every_entry(amazon_har, tmp_path):
    path, doc = amazon_har
    # the load has the two sockets to one server this is about (8 carried requests, 9 none)
    conns = {en["connection"] for en in doc["log"]["entries"] if en["serverIPAddress"] == "2600:9000:215a:6200:7:49a5:5fd6:da1"}
    assert conns == {"8", "19"}
    summ, got = _laid_over(path)
    _check_every_entry(summ, got, doc)
    assert summ["connections_matched"] == summ["connections"] == 7


def _devtools(doc: dict) -> dict:
    """``doc`` as Chrome DevTools writes a HAR (models/har/Log.ts): creator WebInspector, no
    wirefall extension, ``connection`` the remote port, ``_connectionId`` the socket id, an
    IPv6 ``serverIPAddress`` with its brackets (DevTools' replace(/\\[\\]/g) removes none)."""
    d = copy.deepcopy(doc)
    d["log"]["creator"] = {"name": "WebInspector", "version": "537.36"}
    for en in d["log"]["entries"]:
        cid = en["_connection"]
        for k in [k for k in en if k.startswith("_")]:
            del en[k]
        en["connection"] = "443"
        en["_connectionId"] = str(1000 + cid)
        ip = en["serverIPAddress"]
        en["serverIPAddress"] = f"[{ip}]" if ":" in ip else ip
    d["log"].pop("_orphans", None)
    return d


def test_devtools_shaped_har_matches_every_entry(amazon_har, tmp_path):
    path, doc = amazon_har
    p = tmp_path / "devtools.har"
    p.write_text(json.dumps(_devtools(doc)))
    summ, got = _laid_over(p)
    _check_every_entry(summ, got, doc)
    assert summ["connections_matched"] == summ["connections"] == 7


def test_devtools_har_without_connection_id_groups_by_server(amazon_har, tmp_path):
    """An older DevTools HAR (no ``_connectionId``): its ``connection`` "443" names no socket,
    so the entries are grouped by server, port and protocol (as a HAR with no connection id),
    not taken as one socket."""
    path, doc = amazon_har
    d = _devtools(doc)
    for en in d["log"]["entries"]:
        del en["_connectionId"]
    p = tmp_path / "devtools-old.har"
    p.write_text(json.dumps(d))
    summ, got = _laid_over(p)
    _check_every_entry(summ, got, doc)
