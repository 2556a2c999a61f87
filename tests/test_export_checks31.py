"""Review 31, findings 4 and 10.

4. A HAR written without --include-sensitive said nothing of the Cookie, Set-Cookie and
   Authorization headers it left out (the amazon load's h3 GET of www.amazon.com/ carries the
   WAF token cookie: its entry had no Cookie header, ``cookies: []``, no comment, while
   ``headersSize`` counted it).  Now each such header keeps its place with the value
   ``LEFT_OUT``, the entry's comment names it and ``log.comment`` counts the entries.  Checked
   header by header against the wire: tshark's HTTP/2 header blocks (PDML ``http2.header.name``/
   ``.value``) and, for HTTP/3 — tshark 4.0 does not decode QPACK (no ``http3.header*`` field) —
   Chrome's own NetLog of the same load (``HTTP3_HEADERS_SENT``/``HTTP3_HEADERS_DECODED``: the
   header lists Chrome sent and decoded), not wirefall's own QPACK decode.
5. (10) ``wirefall export CAPTURE -o x.pdf`` (or .parquet, or into a missing folder, or onto a
   file without --force) analysed the whole capture and only then failed; now the output is
   checked first: the analysis (``ui.cli.load``) is never called.
"""
from __future__ import annotations

import gzip
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import run_tool, shared, unpack_amazon

from wirefall.analyzer import export as ex

SCHEMA = json.loads((Path(__file__).parent / "data" / "har-1.2.schema.json").read_text())
AMAZON_GET = ("GET", "https://www.amazon.com/", "h3")  # (the request carrying the WAF token cookie)


@pytest.fixture(autouse=True)
def _no_env_keylog(monkeypatch):
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)


@pytest.fixture(scope="module")
def amazon(tmp_path_factory):
    from wirefall.analyzer.pipeline import analyze

    cap, keys = unpack_amazon(tmp_path_factory.mktemp("amazon"))
    return cap, keys, analyze(str(cap), keylogs=[str(keys)])


def _validate(doc: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    errors = list(jsonschema.Draft7Validator(SCHEMA).iter_errors(doc))
    assert not errors, errors[:3]


def _tshark_h2_blocks(cap: Path, keys: Path) -> dict[int, tuple[list, list]]:
    """tshark's HTTP/2 header blocks: request HEADERS packet -> (request headers, response
    headers), each [(name, value)] in wire order, from PDML (a packet's several frames and
    streams kept apart); the response is the next block on the same TCP stream and HTTP/2 stream."""
    root = ET.fromstring(run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "http2.type == 1", "-T", "pdml"))
    by_stream: dict[tuple[int, int], list[tuple[int, list]]] = {}
    for pkt in root.iter("packet"):
        num = tcp = None
        for f in pkt.iter("field"):
            if f.get("name") == "num" and num is None:
                num = int(f.get("show") or 0)
            elif f.get("name") == "tcp.stream":
                tcp = int(f.get("show") or 0)
        for st in pkt.iter("field"):
            if st.get("name") != "http2.stream":
                continue
            kids = {f.get("name"): f.get("show") for f in st}
            if kids.get("http2.type") != "1":
                continue
            hs = []
            for h in st.iter("field"):
                if h.get("name") == "http2.header":
                    sub = {g.get("name"): g.get("show") for g in h}
                    hs.append((sub["http2.header.name"], sub.get("http2.header.value", "")))
            assert num is not None and tcp is not None
            by_stream.setdefault((tcp, int(kids["http2.streamid"] or 0)), []).append((num, hs))
    out = {}
    for blocks in by_stream.values():
        assert len(blocks) == 2, blocks  # (request, response: amazon's h2 streams have no trailers or 1xx)
        out[blocks[0][0]] = (blocks[0][1], blocks[1][1])
    return out


def _netlog_h3_blocks() -> dict[tuple[str, str, int], tuple[list, list]]:
    """Chrome's NetLog of the same load: (method, URL, stream id) -> (request headers it sent,
    response headers it decoded), [(name, value)] as Chrome logged them, for HTTP/3."""
    nl = json.loads(gzip.decompress(shared("pageload-amazon/amazon1_netlog.json.gz").read_bytes()))
    types = {v: k for k, v in nl["constants"]["logEventTypes"].items()}

    def pairs(lines):
        out = []
        for s in lines:
            i = s.index(": ", 1 if s.startswith(":") else 0)
            out.append((s[:i], s[i + 2 :]))
        return out

    sent, got = {}, {}
    for ev in nl["events"]:
        t = types.get(ev["type"])
        if t in ("HTTP3_HEADERS_SENT", "HTTP3_HEADERS_DECODED"):
            (sent if t == "HTTP3_HEADERS_SENT" else got)[(ev["source"]["id"], ev["params"]["stream_id"])] = pairs(ev["params"]["headers"])
    out = {}
    for k, req in sent.items():
        d = dict(req)
        key = (d[":method"], f"https://{d[':authority']}{d[':path']}", k[1])
        assert key not in out  # (the key names one request)
        out[key] = (req, got[k])
    return out


def _truth(amazon) -> dict[int, tuple[list, list]]:
    """Exchange id -> (request, response) header lists from outside wirefall: tshark for HTTP/2,
    the NetLog for HTTP/3 (tshark 4.0 does not decode QPACK)."""
    cap, keys, an = amazon
    h2, h3 = _tshark_h2_blocks(cap, keys), _netlog_h3_blocks()
    doc = ex.har(an, include_sensitive=True)
    out = {}
    for en in doc["log"]["entries"]:
        if en["_protocol"] == "h2":
            out[en["_exchange"]] = h2.pop(en["_packets"]["request_start"])
        else:
            assert en["_protocol"] == "h3"
            out[en["_exchange"]] = h3.pop((en["request"]["method"], en["request"]["url"], en["_stream_id"]))
    assert not h2 and not h3, (h2, h3)  # every request the wire (and Chrome) shows is an entry
    return out


def test_har_names_every_sensitive_header_it_leaves_out(amazon, tmp_path):
    cap, keys, an = amazon
    truth = _truth(amazon)
    assert len(truth) == 15
    out = tmp_path / "amz.har"
    ex.export(an, str(out))
    text = out.read_text(encoding="utf-8")
    doc = json.loads(text)
    _validate(doc)
    left: set[tuple[int, str, str]] = set()
    for en in doc["log"]["entries"]:
        req, resp = truth[en["_exchange"]]
        for side, wire in (("request", req), ("response", resp)):
            har = [(h["name"], h["value"]) for h in en[side]["headers"]]
            # the header list keeps the wire's shape: every name, in order (before: Cookie dropped)
            assert [n for n, _ in har] == [n for n, _ in wire], (en["_exchange"], side)
            for (n, v), (_, hv) in zip(wire, har):
                if n.lower() in ex.SENSITIVE:
                    left.add((en["_exchange"], side, n))
                    assert hv == ex.LEFT_OUT
                    assert n in en["comment"] and "--include-sensitive keeps them" in en["comment"]
                    # the value appears nowhere in the file, nor any cookie's value in it
                    assert v not in text
                    for part in v.split(";"):
                        assert part.strip().partition("=")[2] not in text
                else:
                    assert hv == v, (en["_exchange"], side, n)
            assert en[side]["cookies"] == []
    ids = {(en["request"]["method"], en["request"]["url"], en["_protocol"]): en["_exchange"] for en in doc["log"]["entries"]}
    # the one sensitive header of this load: the WAF token cookie of the h3 GET of www.amazon.com/
    assert left == {(ids[AMAZON_GET], "request", "cookie")}
    en7 = next(en for en in doc["log"]["entries"] if en["_exchange"] == ids[AMAZON_GET])
    assert "request cookie" in en7["comment"] and en7["request"]["headersSize"] == 665  # (headersSize counts it: the header is there)
    lc = doc["log"]["comment"]
    assert "header values in 1 entry" in lc and "3 request bodies" in lc and "--include-sensitive keeps them" in lc
    # no other entry's comment speaks of left-out headers
    assert sum("header values left out" in (en.get("comment") or "") for en in doc["log"]["entries"]) == 1


def test_har_with_include_sensitive_keeps_them(amazon, tmp_path):
    cap, keys, an = amazon
    truth = _truth(amazon)
    out = tmp_path / "amz.har"
    ex.export(an, str(out), include_sensitive=True)
    doc = json.loads(out.read_text(encoding="utf-8"))
    _validate(doc)
    assert ex.LEFT_OUT not in out.read_text(encoding="utf-8")
    for en in doc["log"]["entries"]:
        req, resp = truth[en["_exchange"]]
        assert [(h["name"], h["value"]) for h in en["request"]["headers"]] == req
        assert [(h["name"], h["value"]) for h in en["response"]["headers"]] == resp
        assert "header values left out" not in (en.get("comment") or "")
        cookie = [v for n, v in req if n == "cookie"]
        assert en["request"]["cookies"] == [{"name": p.strip().partition("=")[0], "value": p.strip().partition("=")[2]}
                                            for v in cookie for p in v.split(";") if "=" in p]
    ids = {(en["request"]["method"], en["request"]["url"], en["_protocol"]): en for en in doc["log"]["entries"]}
    assert [c["name"] for c in ids[AMAZON_GET]["request"]["cookies"]] == ["aws-waf-token"]
    assert "Left out" not in doc["log"]["comment"]


def test_reimported_har_does_not_take_the_placeholder_for_a_value(amazon, tmp_path):
    from wirefall.analyzer.pipeline import analyze

    cap, keys, an = amazon
    out = tmp_path / "amz.har"
    ex.export(an, str(out))
    back = analyze(str(out))
    assert not [(e.id, k) for e in back.exchanges for k, v in e.request_headers + e.response_headers if v == ex.LEFT_OUT]
    # the header is there, its value unknown and counted so (the JSON's *_header_fields_unknown)
    from wirefall.analyzer.jsonout import UNKNOWN, unknown_fields

    from wirefall.analyzer.browserlog import har

    assert har._LEFT_OUT == ex.LEFT_OUT and har._SENSITIVE == ex.SENSITIVE  # (the reader knows the writer's words)
    hit = [e for e in back.exchanges if ("cookie", UNKNOWN) in e.request_headers]
    assert len(hit) == 1 and unknown_fields(hit[0].request_headers) == 1


# ------------------------------------------------------------------ finding 10


@pytest.fixture
def spy_load(monkeypatch):
    """Calls of ``ui.cli.load`` (the analysis), which then runs as before."""
    from wirefall.ui import cli

    calls = []
    real = cli.load

    def load(args, *a, **kw):
        calls.append(args.file)
        return real(args, *a, **kw)

    monkeypatch.setattr(cli, "load", load)
    return calls


def _export(capsys, *argv) -> tuple[int, list[str]]:
    from wirefall.ui import cli

    capsys.readouterr()
    rc = cli.main(["export", *argv])
    return rc, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("name,extra,want", [
    ("x.pdf", [], "unknown export format 'pdf' (choose from png, svg, html, har, json, qlog)"),
    ("x.parquet", [], "export does not write Parquet: `wirefall batch INPUT… -o OUT` does"),
    ("nonexistdir/x.png", [], "cannot write: no such folder"),
    ("exists.har", [], "exists (use --force to overwrite)"),
    ("adir", [], "cannot write: it is a folder"),
    ("x.har", ["-Y", "status == 200"], "a filter applies to the waterfall images (png, svg, html), not to har"),
])
def test_bad_output_fails_before_the_analysis(amazon, spy_load, capsys, tmp_path, name, extra, want):
    cap, keys, _ = amazon
    (tmp_path / "exists.har").write_text("keep me")
    (tmp_path / "adir").mkdir()
    rc, err = _export(capsys, str(cap), "--keylog", str(keys), "-o", str(tmp_path / name), *extra)
    assert rc == 2 and len(err) == 1 and want in err[0], err
    assert spy_load == []  # the capture was not analysed
    assert (tmp_path / "exists.har").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "exists.har"]  # (nothing written, no temporary file left)


def test_good_output_is_analysed_and_written(amazon, spy_load, capsys, tmp_path):
    cap, keys, _ = amazon
    (tmp_path / "exists.har").write_text("old")
    rc, err = _export(capsys, str(cap), "--keylog", str(keys), "-o", str(tmp_path / "exists.har"), "--force")
    assert rc == 0 and spy_load == [str(cap)], err
    assert json.loads((tmp_path / "exists.har").read_text())["log"]["version"] == "1.2"


def test_data_export_checks_the_folder_before_making_the_document(amazon, monkeypatch, tmp_path):
    """The library call too: a missing folder is said before the HAR's document is made."""
    _, _, an = amazon
    monkeypatch.setattr(ex, "har_stream", lambda *a, **k: pytest.fail("the document was made"))
    with pytest.raises(ex.ExportError, match="no such folder"):
        ex.export(an, str(tmp_path / "missing" / "x.har"))
