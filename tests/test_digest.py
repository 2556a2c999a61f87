"""The JSON outputs on every sample and shared capture are the ones recorded in
tests/data/json_digests.json (sha256 of ``wirefall summary|requests|frames|packets FILE
--json`` per file, with its key log; benchmarks/digest.py computes them).  A refactoring must
leave them all unchanged; when an output change is intended, regenerate the file with
``benchmarks/digest.py --write tests/data/json_digests.json`` and commit it with the change
(the diff then names each output that changed)."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DIGESTS = ROOT / "tests" / "data" / "json_digests.json"


def _digest_module():
    spec = importlib.util.spec_from_file_location("wf_digest", ROOT / "benchmarks" / "digest.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["wf_digest"] = mod
    spec.loader.exec_module(mod)
    return mod


digest = _digest_module()


def test_every_input_is_recorded():
    """The digest file covers every sample (and every shared capture present): a new sample
    must be added to it, a removed one taken out."""
    recorded = json.loads(DIGESTS.read_text())["digests"]
    found = {path: keylog for path, keylog in digest.sample_inputs()}
    samples = {p for p in found if not p.startswith("..")}
    assert samples == {p for p in recorded if not p.startswith("..")}
    shared_present = {p for p in found if p.startswith("..")}
    assert shared_present <= set(recorded)
    assert len(samples) >= 70  # the sample tree as it is (tests/test_samples.py lists its captures)
    for path, keylog in found.items():
        assert recorded[path]["keylog"] == keylog, path  # same key log as when recorded
    # every output ran: only the WebPageTest JSON result is refused (not a format wirefall reads)
    refused = {p for p, v in recorded.items() for c in digest.COMMANDS if v[c]["rc"] != 0}
    assert refused <= {"../shared/captures/hars/webpagetest-amazon.json.gz"}


@pytest.mark.slow
def test_json_outputs_unchanged():
    recorded = json.loads(DIGESTS.read_text())["digests"]
    inputs = [i for i in digest.sample_inputs() if i[0] in recorded]
    got = digest.compute(inputs)
    expected = {k: v for k, v in recorded.items() if k in got}
    diffs = digest.compare(expected, got)
    assert not diffs, "JSON output changed (intended? regenerate with benchmarks/digest.py --write " \
                      "tests/data/json_digests.json):\n" + "\n".join(diffs)


def test_digest_sees_a_change(monkeypatch, tmp_path):
    """The digest is of the output itself: one changed note string changes summary's digest
    and nothing else's (so a reworded note cannot hide)."""
    monkeypatch.chdir(tmp_path)  # compute() reads from the checkout and comes back here
    path = "sample_captures/http/h2c-curl.pcap"
    before = digest.compute([(path, None)])[path]
    from wirefall.analyzer import jsonout

    real = jsonout.summary_dict

    def changed(an, *a, **kw):
        d = real(an, *a, **kw)
        d["connections"][0]["notes"] = list(d["connections"][0]["notes"]) + ["x"]
        return d

    monkeypatch.setattr(jsonout, "summary_dict", changed)
    after = digest.compute([(path, None)])[path]
    assert before["summary"] != after["summary"]
    assert all(before[c] == after[c] for c in ("requests", "frames", "packets"))
    assert os.getcwd() == str(tmp_path)
