"""The lab's Chromium with QUIC port migration off (lab.run.CHROMIUM_QUIC_FLAGS) and its NetLog
reader (lab.measure.netlog_quic). The real load is tests/test_lab_replay.py (root, slow): it
reads the run's NetLog itself; here the reader meets the events Chromium 156 wrote when it moved
two connections of an HTTP/3 replay to new ports under stalls (ids, phases and fields as in that
log: QUIC_SESSION 336, QUIC_PORT_MIGRATION_TRIGGERED 444, begin and end each), and a log Chromium
did not close."""
from __future__ import annotations

import gzip
import json

from wirefall.lab import run
from wirefall.lab.measure import netlog_quic

CONSTANTS = {"logEventTypes": {"QUIC_SESSION": 336, "QUIC_PORT_MIGRATION_TRIGGERED": 444, "QUIC_PORT_MIGRATION_SUCCESS": 445},
             "logEventPhase": {"PHASE_BEGIN": 1, "PHASE_END": 2, "PHASE_NONE": 0}, "activeFieldTrialGroups": []}


def _session(sid, host, phase=1):
    return {"phase": phase, "source": {"id": sid, "start_time": "59477000", "type": 13}, "time": "59477000", "type": 336,
            **({"params": {"host": host, "port": 443, "connection_id": "f2dcaa79"}} if phase == 1 else {})}


def _moved(sid, phase):
    return {"phase": phase, "source": {"id": sid, "start_time": "59477441", "type": 13}, "time": "59477443", "type": 444}


EVENTS = [_session(46, "www.amazon.com"), _session(111, "images-na.ssl-images-amazon.com"), _session(114, "fls-na.amazon.com"),
          _moved(114, 1), _moved(114, 2), _moved(111, 1), _moved(111, 2),
          {"phase": 0, "source": {"id": 111, "type": 13}, "time": "59477480", "type": 445, "params": {"connection_id": "f2dc"}},
          _session(114, "fls-na.amazon.com", phase=2), _session(120, "fls-na.amazon.com")]


def _write(path, text):
    with gzip.open(path, "wt") as f:
        f.write(text)
    return path


def test_netlog_quic_counts_sessions_and_migrations_per_host(tmp_path):
    text = json.dumps({"constants": CONSTANTS, "events": EVENTS})
    want = {"sessions": {"www.amazon.com": 1, "images-na.ssl-images-amazon.com": 1, "fls-na.amazon.com": 2},
            "port_migrations": {"fls-na.amazon.com": 1, "images-na.ssl-images-amazon.com": 1}, "field_trials": []}
    assert netlog_quic(_write(tmp_path / "a.json.gz", text)) == want
    # Chromium killed before it closed the log: the events so far ("...},\n" then nothing)
    cut = json.dumps({"constants": CONSTANTS, "events": EVENTS})[:-2] + ",\n"
    assert netlog_quic(_write(tmp_path / "b.json.gz", cut)) == want
    assert "error" in netlog_quic(tmp_path / "absent.json.gz")


def test_quic_flags_only_on_a_quic_chromium():
    calls = []

    class Base:
        def chromium(self, name, url, extra):
            calls.append(extra)
            return {}

    class Sac:
        Lab = Base

    lab = run.lab_class(Sac)()
    lab.chromium("page-h2", "https://x/", [])
    lab.chromium("page-h3", "https://x/", ["--enable-quic", "--origin-to-force-quic-on=x:443"])
    assert calls[0] == []
    assert calls[1] == ["--enable-quic", "--origin-to-force-quic-on=x:443",
                        "--force-fieldtrials=*QUIC/WirefallLab",
                        "--force-fieldtrial-params=QUIC.WirefallLab:allow_port_migration/false"]
