"""``wirefall objects``: bodies equal to tshark's --export-objects, byte for byte and name for
name (HTTP/1, where tshark 4.0 exports); HTTP/2, HTTP/3 and SPDY loads of the lab page equal
tshark's export of its HTTP/1 load (same files, same names) and the clients' own logs; the
crafted inputs of scripts/hostile/objects_inputs.py bounded and named as tshark names them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wirefall.analyzer.objects import basename, export_objects, massage

ROOT = Path(__file__).resolve().parent.parent
S = ROOT / "sample_captures"
sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
import objects_inputs  # noqa: E402

needs_tshark = pytest.mark.skipif(subprocess.run(["which", "tshark"], capture_output=True).returncode != 0,
                                  reason="tshark not installed")


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in d.iterdir()}


def _tshark_export(cap: Path, keys: Path | None, out: Path) -> dict[str, bytes]:
    out.mkdir()
    cmd = ["tshark", "-n", "-q", "-r", str(cap), "-o", "tcp.reassemble_out_of_order:TRUE", "--export-objects", f"http,{out}"]
    if keys:
        cmd += ["-o", f"tls.keylog_file:{keys}"]
    subprocess.run(cmd, capture_output=True, check=True, timeout=300)
    return _files(out)


def _ours(cap: Path, keys: Path | None, out: Path, **kw):
    res = export_objects(str(cap), str(out), keylogs=[str(keys)] if keys else [], **kw)
    return res, _files(out)


def _pipelined(res) -> set[str]:
    """Names of our objects on exchanges sent pipelined (a request before the previous
    response on its connection ended): tshark 4.0 names those after the last request sent."""
    an = res.analysis
    late: set[int] = set()
    by_conn: dict[int, list] = {}
    for e in an.exchanges:
        by_conn.setdefault(e.connection, []).append(e)
    for exs in by_conn.values():
        for a, b in zip(exs, exs[1:]):
            if a.response_end_packet and b.request_start_packet and b.request_start_packet < a.response_end_packet:
                late |= {a.id, b.id}
    return {o.name for o in res.objects if o.exchange in late}


H1 = [("http/http1-nginx.pcap", None), ("http/http1-node.pcap", None), ("secrets/cookies-h1.pcap", None),
      ("page/page-h1.pcapng", "page/page-h1.keys"), ("page/page-h1c.pcapng", None), ("page/pw-h1.pcapng", "page/pw-h1.keys"),
      ("lossy/page-h1.pcapng", "lossy/page-h1.keys")]


@needs_tshark
@pytest.mark.parametrize("cap,keys", H1, ids=[c for c, _ in H1])
def test_http1_objects_equal_tshark_export(cap, keys, tmp_path):
    cap_p, keys_p = S / cap, (S / keys if keys else None)
    theirs = _tshark_export(cap_p, keys_p, tmp_path / "tshark")
    res, ours = _ours(cap_p, keys_p, tmp_path / "ours")
    assert theirs, "tshark exported nothing: the comparison would prove nothing"
    piped = _pipelined(res)
    mine = {k: v for k, v in ours.items() if k not in piped}
    piped_bytes = {ours[k] for k in piped}
    # tshark's files of pipelined responses: the same bytes under another request's name
    theirs_piped = {k for k, v in theirs.items() if k not in mine and v in piped_bytes}
    assert {k: v for k, v in theirs.items() if k not in theirs_piped} == mine
    assert len(piped) >= len(theirs_piped)
    if cap == "http/http1-nginx.pcap":  # the POST's upload is exported as tshark does, and pipelining is seen
        assert ours["a.txt"] == theirs["a.txt"] and next(o for o in res.objects if o.name == "a.txt").direction == 0
        assert piped and theirs_piped
    else:
        assert not piped


PAGE = [("page/page-h2.pcapng", "page/page-h2.keys"), ("page/page-h3.pcapng", "page/page-h3.keys"),
        ("page/page-spdy.pcapng", "page/page-spdy.keys"), ("page/pw-h2.pcapng", "page/pw-h2.keys"),
        ("lossy/page-h2.pcapng", "lossy/page-h2.keys"), ("lossy/page-h3.pcapng", "lossy/page-h3.keys"),
        ("lossy/page-spdy.pcapng", "lossy/page-spdy.keys")]


@pytest.fixture(scope="module")
def page_h1_export(tmp_path_factory):
    """The lab page as tshark exports its HTTP/1.1 load: the same files every protocol served."""
    if subprocess.run(["which", "tshark"], capture_output=True).returncode:
        pytest.skip("tshark not installed")
    d = tmp_path_factory.mktemp("page-h1")
    return _tshark_export(S / "page/page-h1.pcapng", S / "page/page-h1.keys", d / "x")


@pytest.mark.parametrize("cap,keys", PAGE, ids=[c for c, _ in PAGE])
def test_h2_h3_spdy_objects_equal_the_pages_http1_export(cap, keys, tmp_path, page_h1_export):
    res, ours = _ours(S / cap, S / keys, tmp_path / "o")
    assert len(page_h1_export) == 13
    assert ours == page_h1_export
    assert all(not o.truncated and o.error is None for o in res.objects)


def test_spdy_bodies_match_the_clients_log(tmp_path):
    res, ours = _ours(S / "page/page-spdy.pcapng", S / "page/page-spdy.keys", tmp_path / "o", protocol="spdy")
    log = [json.loads(x) for x in (S / "page/page-spdy.client.log").read_text().splitlines() if x.startswith("{")]
    assert len(log) == 13
    got = {o.url.split("/", 3)[3] if o.url.count("/") >= 3 else "": o.size for o in res.objects}
    assert got == {e["path"].lstrip("/"): e["bytes"] for e in log}


def test_h2_content_codings_undone_as_the_client_decoded_them(tmp_path):
    """h2c-node: gzip, br and deflate bodies; the Node client logged wire and decoded sizes."""
    res, ours = _ours(S / "http/h2c-node.pcap", None, tmp_path / "o", protocol="http2")
    log = {(e["path"]): e for e in map(json.loads, (S / "http/h2c-node.client.jsonl").read_text().splitlines())}
    resp = {o.url.rsplit("/", 1)[1]: o for o in res.objects if o.direction == 1}
    for path in ("/gzip", "/br", "/deflate"):
        o = resp[path[1:]]
        assert (o.wire_bytes, o.size, o.decoded) == (log[path]["body"], log[path]["decoded"], True), path
    assert ours["gzip"] == ours["br"] == ours["deflate"]
    assert resp["pushed.css"].size == log["/pushed.css"]["body"]


def test_protocol_option_selects_one_family(tmp_path):
    res, _ = _ours(S / "page/page-h3.pcapng", S / "page/page-h3.keys", tmp_path / "a", protocol="http2")
    assert res.objects == []
    res, ours = _ours(S / "page/page-h3.pcapng", S / "page/page-h3.keys", tmp_path / "b", protocol="http3")
    assert len(ours) == 13


def test_tshark_name_rules():
    assert basename(b"/") == b"/" and basename(b"//") == b"/" and basename(b"/dir/") == b"dir" and basename(b"") == b"."
    assert basename(b"/a?b=c/d") == b"d" and basename(b"http://h/abs/p.js") == b"p.js"
    assert massage(b"/") == b"%2f" and massage(b"x<y>:z|w*.txt") == b"x%3cy%3e%3az%7cw%2a.txt"
    assert massage(b"e\x01x") == b"e%01x" and massage(b"q?x=1") == b"q%3fx=1"
    long = massage(b"n" * 300 + b".html")
    assert len(long) == 255 and long.endswith(b".html")
    assert massage(b"a.b.c", 1) == b"a.b(1).c" and massage(b"dup", 2) == b"dup(2)" and massage(b".", 1) == b"(1)."


@needs_tshark
def test_odd_names_as_tshark_names_them(tmp_path):
    cap = objects_inputs.odd_names(tmp_path / "odd.pcap")
    theirs = _tshark_export(Path(cap), None, tmp_path / "t")
    res, ours = _ours(Path(cap), None, tmp_path / "o")
    piped = _pipelined(res)  # the normal exchange's pipelined connection (see above)
    mine = {k: v for k, v in ours.items() if k not in piped}
    theirs = {k: v for k, v in theirs.items() if k in mine or v not in {ours[x] for x in piped}}
    assert theirs == mine
    for i, t in enumerate(objects_inputs.ODD_TARGETS):  # every odd target's body is there
        assert objects_inputs.odd_body(i, t) in mine.values(), t
    assert {"(1).", ".(1).", ".(2).", "%2f", "%2f(1)", "dup(1).txt", "a.b(1).c"} <= set(mine)


def test_a_file_in_the_directory_is_never_replaced(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "%2f").write_bytes(b"mine")
    os.symlink("/etc/passwd", out / "main.css")
    res, files = _ours(S / "page/page-h1.pcapng", S / "page/page-h1.keys", out)
    assert files["%2f"] == b"mine" and os.readlink(out / "main.css") == "/etc/passwd"
    assert files["%2f(1)"].startswith(b"<!DOCTYPE html>") and files["main(1).css"].startswith(b"/* /css/main.css")
    assert not set(os.listdir(tmp_path)) - {"o"}  # nothing written beside DIR


def test_bomb_is_cut_at_the_budget_and_good_data_survives(tmp_path):
    cap = objects_inputs.bomb(tmp_path / "bomb.pcap", size=256 << 20)
    code = f"""
import resource, sys, json
resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))
sys.path.insert(0, {str(ROOT)!r})
from wirefall.analyzer.objects import export_objects
r = export_objects({cap!r}, {str(tmp_path / 'o')!r}, keylogs=[], limits={{"body_decoded_bytes": 8 << 20}})
print(json.dumps([o.to_dict() for o in r.objects]))
print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')))  # not ru_maxrss: Linux keeps the pre-exec peak there
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.splitlines()
    objs = {o["name"]: o for o in json.loads(lines[0])}
    assert int(lines[1]) < 400_000  # KiB: the decoded bomb is streamed to disk, never held
    bomb = objs["bomb.bin"]
    assert bomb["size"] == 8 << 20 and "body_decoded_bytes" in bomb["truncated"]
    assert (tmp_path / "o" / "bomb.bin").stat().st_size == 8 << 20
    assert (tmp_path / "o" / "data.json").read_text() == objects_inputs.HOSTILE_TEXT
    assert (tmp_path / "o" / "index.html").read_bytes() == _index_html()  # the normal exchange survives


def _index_html() -> bytes:
    """index.html of the normal exchange: its gzip body (read again by the body reader) inflated."""
    import gzip

    from wirefall.analyzer.objects import exchange_body
    from wirefall.analyzer.pipeline import analyze

    an = analyze(str(S / "http/http1-nginx.pcap"))
    assert an.exchanges[0].url.endswith("/index.html")
    return gzip.decompress(exchange_body(an, an.exchanges[0]).data)


def test_object_bytes_budget_cuts_a_connection_and_says_so(tmp_path):
    cap = objects_inputs.big_bodies(tmp_path / "big.pcap", n=4, size=50_000)
    res, files = _ours(Path(cap), None, tmp_path / "o", limits={"object_bytes": 120_000})
    big = {o.name: o for o in res.objects if o.name.startswith("big")}
    assert [big[f"big{i}.bin"].size for i in range(4)] == [50_000, 50_000, 20_000, 0]
    assert big["big3.bin"].wire_bytes == 50_000 and "object_bytes" in big["big3.bin"].truncated  # listed, and why it is empty
    assert big["big0.bin"].truncated is None and "object_bytes" in (big["big2.bin"].truncated or "")
    assert files["big0.bin"] == b"A" * 50_000
    # the normal exchange's connections have their own budget: untouched
    assert files["index.html"].startswith(b"<!doctype html>") and len(files["lorem.txt"]) == 54001


def test_bad_content_encoding_is_written_as_it_came(tmp_path):
    cap = objects_inputs.bad_gzip(tmp_path / "bad.pcap")
    res, files = _ours(Path(cap), None, tmp_path / "o")
    o = next(x for x in res.objects if x.name == "bad.txt")
    assert files["bad.txt"] == objects_inputs.BAD_GZIP and not o.decoded and "gzip" in o.error


def test_cli_objects_json_and_errors(tmp_path):
    def run(*a):
        return subprocess.run([sys.executable, "-m", "wirefall", *a], capture_output=True, text=True, cwd=ROOT, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})

    r = run("objects", str(S / "page/page-h2.pcapng"), "--keylog", str(S / "page/page-h2.keys"), "-o", str(tmp_path / "o"), "--json")
    assert r.returncode == 0, r.stderr
    objs = json.loads(r.stdout)
    assert len(objs) == 13 and {o["name"] for o in objs} == set(os.listdir(tmp_path / "o"))
    assert {"name", "exchange", "direction", "packet", "size", "wire_bytes", "decoded", "error", "truncated"} <= set(objs[0])
    r = run("objects", str(tmp_path / "o" / "main.css"), "-o", str(tmp_path / "p"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
