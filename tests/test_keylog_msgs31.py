"""Review 31, finding 5: a key log given that could not be read, that is no key log, or that
is cut mid-line was reported as "capture damaged (1 warning)", and every connection said
"not decrypted: no key log given; next: pass --keylog FILE" — though the capture is whole
(tshark reads every frame of it) and a key log was given.

Now the key log's own problems are completeness issues of their own (``keylog_unreadable``,
``keylog_no_secrets``, ``keylog_damaged``, with the file), made from the key log's typed facts
(``KeyLog.problems``, ``KeyLog.read_from``), never ``capture_damaged``; and each connection not
decrypted for want of a secret says which case it is.  Truths: tshark (the frame count of the
capture; which TLS connections the same key log decrypts), and the key log file itself."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SHARED, unpack_amazon

CAP = SHARED / "pageload-amazon" / "amazon1.cap.gz"
KEYS = SHARED / "pageload-amazon" / "amazon1.key_log.txt.gz"

pytestmark = pytest.mark.skipif(not CAP.exists() or not KEYS.exists(), reason="third-party captures not present")


def _summary(*keylogs: str, json_out: bool = True) -> tuple[dict | str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SSLKEYLOGFILE"}
    args = [a for k in keylogs for a in ("--keylog", k)]
    p = subprocess.run([sys.executable, "-m", "wirefall.ui.cli", "summary", str(CAP), *args, *(["--json"] if json_out else [])],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    return (json.loads(p.stdout) if json_out else p.stdout), p.stderr


def _tshark_frames() -> int:
    tshark = __import__("shutil").which("tshark")
    if not tshark:
        pytest.skip("tshark (the oracle) not installed")
    out = subprocess.run([tshark, "-r", str(CAP), "-T", "fields", "-e", "frame.number"], capture_output=True, text=True, check=True)
    return len(out.stdout.split())


def _kinds(s: dict) -> list[str]:
    return [i["kind"] for i in s["completeness"]["issues"]]


def _not_decrypted(s: dict) -> list[dict]:
    return [i for i in s["completeness"]["issues"] if i["kind"] == "not_decrypted"]


@pytest.fixture(scope="module")
def no_keylog() -> dict:
    return _summary()[0]


def test_a_missing_key_log_is_no_damage_to_the_capture(tmp_path, no_keylog):
    missing = str(tmp_path / "nonexist.keys")
    s, err = _summary(missing)
    assert s["packets"] == _tshark_frames() == 752  # the capture is whole
    c = s["completeness"]
    assert "capture_damaged" not in _kinds(s) and c["warnings"] == []
    assert "capture damaged" not in c["headline"]
    assert "key log nonexist.keys could not be read" in c["headline"]
    kl = [i for i in c["issues"] if i["kind"].startswith("keylog_")]
    assert [(i["kind"], i["file"], i["connection"]) for i in kl] == [("keylog_unreadable", missing, None)]
    assert "No such file or directory" in kl[0]["detail"]
    # the very connections that are not decrypted without any key log, each saying why
    nd = _not_decrypted(s)
    assert [i["connection"] for i in nd] == [i["connection"] for i in _not_decrypted(no_keylog)] and nd
    for i in nd:
        assert "not decrypted: the key log given could not be read" in i["detail"], i
        assert "no key log given" not in i["detail"]
        assert missing in i["next_step"] and "could not be read" in i["next_step"]
    # (the warning itself still goes to stderr and to the analysis' warnings)
    assert f"{missing}: cannot read key log" in err and any("cannot read key log" in w for w in s["warnings"])


def test_a_file_that_is_no_key_log(no_keylog):
    s, _ = _summary(str(CAP))  # the capture itself given as the key log
    c = s["completeness"]
    assert "capture_damaged" not in _kinds(s) and "capture damaged" not in c["headline"]
    kl = [i for i in c["issues"] if i["kind"].startswith("keylog_")]
    assert [(i["kind"], i["file"]) for i in kl] == [("keylog_no_secrets", str(CAP))]
    assert "lines not understood, the first at line 1" in kl[0]["detail"]
    assert "key log amazon1.cap.gz holds no secret" in c["headline"]
    nd = _not_decrypted(s)
    assert [i["connection"] for i in nd] == [i["connection"] for i in _not_decrypted(no_keylog)]
    assert all("not decrypted: the key log given holds no secret" in i["detail"] for i in nd)


def test_no_key_log_at_all_still_says_so(no_keylog):
    c = no_keylog["completeness"]
    assert not [k for k in _kinds(no_keylog) if k.startswith("keylog_")]
    for i in _not_decrypted(no_keylog):
        assert "not decrypted: no key log given" in i["detail"]
        assert i["next_step"].startswith("pass --keylog FILE")
    assert c["headline"].startswith("Incomplete: 1 connection joined mid-way, 10 connections not decrypted")


def _tshark_decrypted_ports(keylog) -> set[int]:
    """Client ports of the TCP connections tshark decrypts HTTP/2 or HTTP/1 on with ``keylog``."""
    tshark = __import__("shutil").which("tshark")
    if not tshark:
        pytest.skip("tshark (the oracle) not installed")
    out = subprocess.run([tshark, "-r", str(CAP), "-o", f"tls.keylog_file:{keylog}", "-Y", "http2 or http", "-T", "fields",
                          "-e", "tcp.srcport", "-e", "tcp.dstport"], capture_output=True, text=True, check=True).stdout
    ports = set()
    for ln in out.splitlines():
        src, dst = (int(x) for x in ln.split())
        ports.add(src if dst == 443 else dst)
    return ports


def test_a_key_log_cut_mid_line(tmp_path, no_keylog):
    lines = gzip.decompress(KEYS.read_bytes()).decode().splitlines(keepends=True)
    keep = 40
    cut = tmp_path / "cut.keys"
    cut.write_text("".join(lines[:keep]) + lines[keep][: len(lines[keep]) // 2])  # cut in the middle of line 41
    s, _ = _summary(str(cut))
    c = s["completeness"]
    assert "capture_damaged" not in _kinds(s) and "capture damaged" not in c["headline"]
    kl = [i for i in c["issues"] if i["kind"].startswith("keylog_")]
    assert [(i["kind"], i["file"]) for i in kl] == [("keylog_damaged", str(cut))]
    assert f"1 line not understood, the first at line {keep + 1}" in kl[0]["detail"]
    assert "key log cut.keys read in part" in c["headline"]
    nd = _not_decrypted(s)
    assert nd
    tls = {x["id"]: x for x in s["connections"] if x["tls"] is not None and x["transport"] == "tcp"}
    for i in nd:
        assert "no key log given" not in i["detail"] and "could not be read" not in i["detail"]
        assert str(cut) in i["next_step"]  # the key log's problem named where it may be the cause
        if i["connection"] in tls:  # TLS: the layer's own words, a key log with secrets but not this one
            assert i["detail"].endswith("not decrypted: no key for this client random")
    # the TLS connections left encrypted are those tshark cannot decrypt with the same cut key log
    ours = {int(x["client"].rsplit(":", 1)[1]) for x in tls.values() if x["tls"]["decrypted"]}
    assert ours == _tshark_decrypted_ports(cut) and ours


def test_a_key_log_with_a_junk_line_that_decrypts_everything_is_complete(tmp_path):
    """Every connection decrypted: the junk line cost nothing here (its warning stays on stderr
    and in the analysis' warnings); before, the page read "Incomplete: capture damaged"."""
    good, _ = _summary(str(KEYS))
    junk = tmp_path / "junk.keys"
    junk.write_bytes(gzip.decompress(KEYS.read_bytes()) + b"CLIENT_RANDOM zz zz\n")
    s, err = _summary(str(junk))
    assert "1 lines not understood" in err
    assert s["completeness"] == good["completeness"]
    assert s["completeness"]["page_complete"] and s["completeness"]["headline"].startswith("Page complete")


def test_the_text_says_it_first(tmp_path):
    missing = str(tmp_path / "nonexist.keys")
    out, _ = _summary(missing, json_out=False)
    head, first = out.splitlines()[1:3]
    assert head == ("Incomplete: 1 connection joined mid-way, 10 connections not decrypted, key log nonexist.keys could not "
                    "be read")
    assert first.startswith(f"  - key log {missing} could not be read (No such file or directory)")
    assert "no key log given" not in out.split("\nid ", 1)[0]


# ------------------------------------------------------------------ the key log's typed facts


def test_keylog_problems_are_typed_and_the_warnings_unchanged(tmp_path):
    from wirefall.analyzer.keylog import KeyLog

    _cap, keys = unpack_amazon(tmp_path)
    lines = keys.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "bad.keys"
    bad.write_bytes(b"".join(lines[:3]) + b"junk\nCLIENT_RANDOM zz zz\n" + lines[3][:50])
    kl = KeyLog()
    kl.add_file(str(tmp_path / "none.keys"))
    kl.add_file(str(bad))
    broken = tmp_path / "broken.keys.gz"
    broken.write_bytes(gzip.compress(keys.read_bytes())[:600])
    kl.add_file(str(broken))
    ps = kl.problems
    assert [(p.source, p.kind) for p in ps] == [(str(tmp_path / "none.keys"), "unreadable"), (str(broken), "broken_gzip"),
                                                (str(bad), "lines_skipped"), (str(broken), "lines_skipped")]
    assert ps[0].why == "No such file or directory"
    assert (ps[2].lines, ps[2].first_line) == (3, 4)  # "junk", the bad hex, the cut line: 3 lines from line 4
    assert kl.warnings == [p.text for p in ps]
    assert kl.warnings[2] == (f"{bad}: 3 lines not understood, the first at line 4 (2 malformed: not LABEL CLIENT_RANDOM SECRET, "
                              "1 with a value that is not hex); skipped")
    assert kl.read_from[str(bad)] == 3 and str(tmp_path / "none.keys") not in kl.read_from
    assert all(kl.said(w) for w in kl.warnings) and not kl.said("truncated capture")


def test_the_expert_list_says_a_key_log_problem_once(tmp_path):
    """The key log's warning is one expert item; its completeness issue (keylog_unreadable) is not
    listed again beside it, and the connections say why they are not decrypted."""
    from wirefall.analyzer import expert
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.pipeline import analyze

    missing = str(tmp_path / "nonexist.keys")
    an = analyze(str(CAP), keylogs=[missing])
    src = PacketSource(str(CAP))
    try:
        items = expert.compute(an, src)
    finally:
        src.close()
    said = [it for it in items if any("nonexist.keys" in str(a) for a in it.args)]
    assert [it.kind for it in said] == ["wirefall.warning"], said
    assert not [it for it in items if it.kind.startswith("wirefall.completeness.keylog_")]
    nd = [it for it in items if it.kind == "wirefall.completeness.not_decrypted"]
    assert nd and all("the key log given could not be read" in it.args[0] for it in nd)


def test_the_connection_reason_says_a_key_log_was_given(tmp_path, monkeypatch):
    """A connection's own reason (the summary's tls column, JSON tls.reason / quic.reason) says "the
    key log given holds no secret" where a key log was given that holds none, "no key log given"
    where none was; its kind stays no_keylog either way."""
    from wirefall.analyzer.model import NO_KEYLOG_GIVEN, ReasonKind
    from wirefall.analyzer.pipeline import analyze

    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)

    def reasons(an):
        got = [x.reason for c in an.connections for x in (c.tls, c.quic) if x is not None and x.reason]
        assert len(got) >= 10 and all(r.kind is ReasonKind.NO_KEYLOG for r in got), got
        return got

    assert all(r.startswith(NO_KEYLOG_GIVEN) for r in reasons(analyze(str(CAP), keylogs=[str(tmp_path / "nonexist.keys")])))
    assert all(r.startswith("no key log given") for r in reasons(analyze(str(CAP))))
