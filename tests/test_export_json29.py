"""``wirefall export -o X.json`` writes the model as it is made (review 29), as the HAR is
(tests/test_export29.py): ``analyzer.export.model_json_stream`` gives the document's lists that
grow with the capture — exchanges, frames, the waterfall's rows and DNS lookups, the stats'
connections — as generators, each element's dict made when the writer asks for it.  The file is
the one the former whole document gave, byte for byte (that document kept below as it was);
its exchanges, frames, summary and stats are the objects ``requests``/``frames``/``summary``/
``stats --json`` print (docs/JSON.md: "the objects above").  Before, 63 k requests
(benchmarks/corpus/h2-requests.pcap) took 665 MB over the analysis for the JSON (463 MB beyond
its 202 MB waterfall: ~7.3 KB a request of dicts); now the export adds nothing over its waterfall."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from export_memory import export_peak
from conftest import ROOT, SAMPLES, analysed, sample_captures

from wirefall.analyzer import export as ex
from wirefall.analyzer import jsonout
from wirefall.analyzer.waterfall_model import Waterfall


CAPTURES = sample_captures()
_an = analysed


def _former_model_json(an) -> dict:
    """analyzer.export.model_json before review 29: the whole document, its lists made."""
    from wirefall.analyzer import stats as _stats
    from wirefall.analyzer.jsonout import SCHEMA_VERSION, exchange_dict, frame_dict, page_and_phases, summary_dict
    from wirefall.analyzer.waterfall import build

    page, ph = page_and_phases(an)
    return {
        "format": "wirefall-model",
        "version": SCHEMA_VERSION,
        "summary": summary_dict(an),
        "exchanges": [exchange_dict(e, phases=ph.get(e.id), page=page) for e in an.exchanges],
        "frames": [frame_dict(f) for f in an.frames],
        "waterfall": build(an).to_dict(),
        "stats": _stats.to_dict(_stats.compute(an, tcp_analysis=True)),
    }


@pytest.mark.parametrize("batch", [ex._BATCH, 3])
@pytest.mark.parametrize("cap,keys", CAPTURES, ids=[str(p.relative_to(SAMPLES)) for p, _ in CAPTURES])
def test_streamed_json_is_the_former_documents_bytes(cap, keys, batch, tmp_path, monkeypatch):
    """The exported file is, byte for byte, the writer's text of the former whole document
    (in batches of 3 too: exchanges, frames and rows across many encoder calls; a list of at
    most 16 containers takes the element-by-element layout, an empty one ``[]``); it parses to
    ``json.dumps``' values of it; ``model_json`` (the web view's, whole) is that document."""
    monkeypatch.setattr(ex, "_BATCH", batch)
    an = _an(cap, keys)
    out = tmp_path / "x.json"
    assert ex.export(an, str(out)) == "json"
    former = _former_model_json(an)
    assert out.read_bytes() == b"".join(ex.json_chunks(former))
    assert json.loads(out.read_bytes()) == json.loads(json.dumps(former, ensure_ascii=False))
    whole = ex.model_json(an)
    assert isinstance(whole["exchanges"], list) and isinstance(whole["waterfall"]["rows"], list)
    assert b"".join(ex.json_chunks(whole)) == out.read_bytes()



def test_amazon_json_is_the_former_documents_bytes(amazon, tmp_path):
    """The same on the third-party amazon page load (Chrome, HTTP/2 and HTTP/3, its key log)."""
    an = _an(amazon / "amazon1.cap", [str(amazon / "amazon1.key_log.txt")])
    out = tmp_path / "x.json"
    ex.export(an, str(out))
    assert len(an.exchanges) > 0
    assert out.read_bytes() == b"".join(ex.json_chunks(_former_model_json(an)))

def _cli(*args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if k != "SSLKEYLOGFILE"}
    r = subprocess.run([sys.executable, "-m", "wirefall", *args], capture_output=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-800:]
    return r.stdout


CLI_CAPTURES = ["quic/page-multi-late.pcapng", "http/http1-nginx.pcap", "spdy/spdy3.1-tls.pcap", "lossy/page-h2.pcapng"]


@pytest.mark.parametrize("cap", CLI_CAPTURES)
def test_the_exports_objects_are_the_commands_json(cap, tmp_path):
    """docs/JSON.md: the export's ``summary``, ``exchanges``, ``frames`` and ``stats`` are the
    objects of ``summary``/``requests``/``frames``/``stats --json``: each equal to what that
    command prints (the exchanges by id; the frames in packet order, as ``frames --json``
    lists them, frames of one packet in their order), every one written once."""
    path = SAMPLES / cap
    keys = path.with_suffix(".keys")
    kargs = ["--keylog", str(keys)] if keys.exists() else []
    out = tmp_path / "m.json"
    _cli("export", str(path), *kargs, "-o", str(out))
    doc = json.loads(out.read_bytes())
    reqs = json.loads(_cli("requests", str(path), *kargs, "--json"))
    frames = json.loads(_cli("frames", str(path), *kargs, "--json"))
    assert len(doc["exchanges"]) == len(reqs) > 0 and len(doc["frames"]) == len(frames) > 0
    assert sorted(doc["exchanges"], key=lambda d: d["id"]) == sorted(reqs, key=lambda d: d["id"])
    assert sorted(doc["frames"], key=lambda d: d["packet"]) == frames
    assert doc["summary"] == json.loads(_cli("summary", str(path), *kargs, "--json"))
    assert doc["stats"] == json.loads(_cli("stats", str(path), *kargs, "--json"))
    assert len(doc["waterfall"]["rows"]) == len(reqs)


def test_entries_are_made_as_they_are_written(monkeypatch, tmp_path):
    """While the JSON is written, the exchanges, frames and waterfall rows made but not yet
    written are at most a batch and the writer's look-ahead (``_FEW`` + 1) — the rows, made by
    ``Waterfall.to_dict`` a batch at a time, one batch more — whatever their number: each dict
    is made when the writer asks for it (the former export made all of them before writing the
    first byte).  Written ones are counted by a key of theirs at their indent in the file."""
    monkeypatch.setattr(ex, "_BATCH", 4)
    an = _an(SAMPLES / "quic" / "page-multi-late.pcapng", [str(SAMPLES / "quic" / "page-multi-late.keys")])
    made = {"exchanges": 0, "frames": 0, "rows": 0}
    real_ex, real_fr, real_wf = jsonout.exchange_dict, jsonout.frame_dict, Waterfall.to_dict

    def exchange_dict(*a, **k):
        made["exchanges"] += 1
        return real_ex(*a, **k)

    def frame_dict(*a, **k):
        made["frames"] += 1
        return real_fr(*a, **k)

    def to_dict(self):
        made["rows"] += len(self.rows)
        return real_wf(self)

    monkeypatch.setattr(jsonout, "exchange_dict", exchange_dict)
    monkeypatch.setattr(jsonout, "frame_dict", frame_dict)
    monkeypatch.setattr(Waterfall, "to_dict", to_dict)
    keys = {"exchanges": b'\n      "push_parent": ', "frames": b'\n      "direction": ', "rows": b'\n        "push_parent_row": '}
    written = dict.fromkeys(made, 0)
    ahead = dict.fromkeys(made, 0)

    def write_atomic(path, data, force=False):
        for piece in data:
            for k, key in keys.items():
                written[k] += piece.count(key)
                ahead[k] = max(ahead[k], made[k] - written[k])

    monkeypatch.setattr(ex, "write_atomic", write_atomic)
    ex.export(an, str(tmp_path / "x.json"))
    n = {"exchanges": len(an.exchanges), "frames": len(an.frames), "rows": len(an.exchanges)}
    assert n["exchanges"] > 80 and n["frames"] > 1000
    assert made == written == n  # (each made once, and written)
    bound = ex._BATCH + ex._FEW + 1
    assert 0 < ahead["exchanges"] <= bound and 0 < ahead["frames"] <= bound, ahead
    assert 0 < ahead["rows"] <= bound + ex._BATCH, ahead


# ------------------------------------------------------------------------ memory (slow)



@pytest.mark.slow
def test_json_export_peak_rss_is_the_waterfall_not_the_document(tmp_path):
    """On 63 k requests (benchmarks/corpus/h2-requests.pcap, made by bench.py with nghttpd and
    h2load; 215 k frames), the JSON export's peak RSS over the analysis is its waterfall (~3 KB
    a row) plus at most 1 KB a request: exchanges, frames and rows are made and written a batch
    at a time (before: 665 MB over the analysis, 463 MB beyond the waterfall, 7.3 KB a request;
    now about nothing beyond it)."""
    m = export_peak("json", tmp_path)
    n = m["exchanges"]
    assert n >= 60000 and m["size"] > 300 << 20
    beyond = (m["export_kb"] - m["waterfall_kb"]) * 1024
    assert beyond < 1024 * n, (m, beyond / n)
