"""``wirefall objects`` names made from hostile request targets (review 19): safe (valid UTF-8,
no control or bidi character, at most 255 bytes, cut on a character boundary) and tshark's
``--export-objects`` name wherever tshark's is safe; each difference is one of docs/OBJECTS.md."""
from __future__ import annotations

import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from wirefall.analyzer.objects import export_objects, massage

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts" / "hostile"))
import objects19_inputs  # noqa: E402

needs_tshark = pytest.mark.skipif(subprocess.run(["which", "tshark"], capture_output=True).returncode != 0,
                                  reason="tshark not installed")
FFFD = "\ufffd"


def _by_body(d: Path) -> dict[bytes, bytes]:
    """body -> file name (as bytes), for a directory of exported objects."""
    out: dict[bytes, bytes] = {}
    for p in Path(d).iterdir():
        out.setdefault(p.read_bytes(), bytes(p).rsplit(b"/", 1)[1])
    return out


def _tshark(cap: str, out: Path) -> dict[bytes, bytes]:
    out.mkdir()
    subprocess.run(["tshark", "-n", "-Q", "-r", cap, "--export-objects", f"http,{out}"], check=True, timeout=120,
                   capture_output=True)
    return _by_body(out)


def _made_safe(tshark_name: bytes) -> bytes:
    """tshark's name with wirefall's documented differences: DEL as %7f, a character its cut at
    255 bytes split dropped."""
    return tshark_name.replace(b"\x7f", b"%7f").decode("utf-8", "ignore").encode()


def _assert_safe(name: bytes) -> None:
    text = name.decode("utf-8")  # valid UTF-8, or this raises
    assert len(name) <= 255, name
    bad = [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]
    assert not bad, (text, bad)
    assert "/" not in text and text not in (".", "..")


def test_massage_is_safe_and_tsharks_rule():
    assert massage(b"\xe2\x80\xaetxt.exe") == (FFFD * 3 + "txt.exe").encode()  # no RIGHT-TO-LEFT OVERRIDE
    assert massage(b"del\x7f\x85z") == ("del%7f" + FFFD + "z").encode()  # no DEL, no C1 control
    assert massage(b"nul\x00x") == b"nul%00x" and massage(b"a\x1b[1m") == b"a%1b[1m"
    cut = massage("\u00e9".encode() * 200 + b".txt")
    assert cut == (FFFD * 83 + ".txt").encode() and len(cut) == 253  # 255 would split a U+FFFD
    assert massage(b"x" * 300) == b"x" * 255
    long_ext = massage(b"a." + "\u00e9".encode() * 200)
    long_ext.decode("utf-8")
    for raw in (b"\xe2\x80\x8f" * 100, b"\xc2\x85" * 200, bytes(range(256)), b"\xf0\x9f\x98\x80" * 70 + b".js"):
        _assert_safe(massage(raw))


@needs_tshark
@pytest.mark.parametrize("port", [80, 18931])
def test_hostile_names_as_tshark_names_them_made_safe(port, tmp_path):
    cap = objects19_inputs.hostile_names(tmp_path / "h.pcap", port=port)
    theirs = _tshark(cap, tmp_path / "t")
    res = export_objects(cap, str(tmp_path / "o"))
    ours = _by_body(tmp_path / "o")
    assert len(res.objects) == len(objects19_inputs.TARGETS) == len(ours)
    for i, target in enumerate(objects19_inputs.TARGETS):
        body = objects19_inputs.body(i)
        mine = ours[body]
        _assert_safe(mine)
        if b"\r" in target and port == 80:
            # tshark ends the request line at the CR and takes the rest for a request body,
            # exported first under the name: the response is its "(1)"
            assert mine == b"tab%09here" and theirs[body] == b"tab%09here(1)"
            continue
        assert mine == _made_safe(theirs[body]), target
    named = set(ours.values())
    assert (FFFD * 3 + "txt.exe").encode() in named and ("del%7f" + FFFD + "z").encode() in named
    assert b"nul" in named  # tshark's name ends at the NUL
    if port == 18931:  # tshark's heuristic does not take "GET /tab\there" for a request
        no_request = ours[objects19_inputs.body(objects19_inputs.TARGETS.index(b"/tab\there\rcr"))]
        assert no_request.startswith(b"object") and no_request.endswith(b".text%2fplain")
    # the differences are the documented ones, and only those
    diff = {theirs[b] for b in theirs if b in ours and theirs[b] != ours[b]}
    assert all(b"\x7f" in n or n.endswith(b".txt") or n.startswith(b"tab%09here") for n in diff), diff


@needs_tshark
def test_reviewers_capture_names(tmp_path):
    """The reviewer's capture, remade: a real server on port 18931, so the CR request is no
    request to tshark and its response ``object<N>.text%2fplain``."""
    cap = objects19_inputs.hostile_names(tmp_path / "h.pcap", port=18931, content_type=b"Text/Plain; charset=x")
    theirs = _tshark(cap, tmp_path / "t")
    export_objects(cap, str(tmp_path / "o"))
    ours = _by_body(tmp_path / "o")
    i = objects19_inputs.TARGETS.index(b"/tab\there\rcr")
    assert ours[objects19_inputs.body(i)] == theirs[objects19_inputs.body(i)]
    assert theirs[objects19_inputs.body(i)].endswith(b".text%2fplain")


def test_cli_lists_safe_names(tmp_path):
    cap = objects19_inputs.hostile_names(tmp_path / "h.pcap")
    r = subprocess.run([sys.executable, "-m", "wirefall", "objects", cap, "-o", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    assert "\u202e" not in r.stdout and "\x85" not in r.stdout and "\x1b" not in r.stdout
    assert f"{FFFD * 3}txt.exe" in r.stdout
