"""A request cut off by a TLS record that did not decrypt says so in the JSON's ``error`` and the
HAR's ``_error`` (session 32): they said "no response in the capture" while its response's bytes
were in the capture, encrypted (only the request detail said otherwise).

The truth: tshark decodes no HTTP/2 frame of the server's from the damaged packet on, and the
streams whose :status it shows are the exchanges whose status wirefall knows
(tests/test_completeness32b.py builds the damaged capture and checks those)."""
from __future__ import annotations

import json

from test_browserlog import _cli
from test_completeness32b import DAMAGED, KEYS, _damage, _tshark_h2


def test_json_and_har_errors_say_the_record_did_not_decrypt(tmp_path):
    bad = _damage(tmp_path)
    rows = _tshark_h2(bad)
    server_ports = {r[1] for r in rows if r[3]}
    statused = {int(s) for r in rows if r[1] in server_ports and r[3] for s in r[2].split(",")}
    reqs = json.loads(_cli("requests", bad, "--keylog", KEYS, "--json").stdout)
    lost = [r for r in reqs if r["stream_id"] not in statused]
    assert lost and all(r["status"] is None or r["response_start"] is not None for r in lost)
    for r in lost:
        assert "no response in the capture" not in (r["error"] or ""), r
        assert f"packet {DAMAGED}" in r["error"] and "did not decrypt" in r["error"], r["error"]
    # those whose :status tshark shows: no error, or a body the record cut ("decrypted only in part")
    seen = [r for r in reqs if r["stream_id"] in statused]
    assert seen and all(not r["error"] or r["error"].startswith("response decrypted only in part") for r in seen)
    lost += [r for r in seen if r["error"]]
    har = tmp_path / "x.har"
    _cli("export", bad, "--keylog", KEYS, "-o", har)
    entries = json.loads(har.read_text())["log"]["entries"]
    errs = [en.get("_error") or "" for en in entries]
    assert sum("did not decrypt" in x for x in errs) == len(lost)
    assert not any("no response in the capture" in x for x in errs)
