"""Start-up of the ``wirefall`` command: what a run declares and imports (ui/cli.py
build_parser(command), the tables built on first use)."""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from wirefall.ui import cli

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"

# a valid command line of each subcommand
ARGV = {"compare": ["a", "b"], "lab": ["-o", "x"], "batch": ["x", "-o", "y"], "objects": ["x", "-o", "y"],
        "export": ["x", "-o", "y.png"], "web": [], "capture": ["-w", "x.pcapng"]}


def _help(parser, argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parser.parse_args(argv)
    return out.getvalue()


@pytest.mark.parametrize("command", cli.COMMANDS)
def test_one_subcommand_parser_is_the_full_parsers(command):
    # the parser a start builds for one subcommand says and parses what the full one does
    assert _help(cli.build_parser(command), [command, "--help"]) == _help(cli.build_parser(), [command, "--help"])
    argv = [command] + ARGV.get(command, ["x"])
    assert vars(cli.build_parser(command).parse_args(argv)) == vars(cli.build_parser().parse_args(argv))


@pytest.mark.parametrize("columns", ["60", "100"])
def test_help_is_argparse_formatters(monkeypatch, columns):
    # the formatter set up on first use formats every help and usage as argparse's own does
    monkeypatch.setenv("COLUMNS", columns)
    ours = {c: _help(cli.build_parser(c), [c, "--help"]) for c in cli.COMMANDS}
    ours["--help"] = _help(cli.build_parser(), ["--help"])
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
        cli.build_parser("requests").parse_args(["requests"])
    monkeypatch.setattr(cli, "_HelpFormatter", argparse.HelpFormatter)
    theirs = {c: _help(cli.build_parser(c), [c, "--help"]) for c in cli.COMMANDS}
    theirs["--help"] = _help(cli.build_parser(), ["--help"])
    err2 = io.StringIO()
    with contextlib.redirect_stderr(err2), pytest.raises(SystemExit):
        cli.build_parser("requests").parse_args(["requests"])
    assert ours == theirs and "usage: wirefall requests" in err.getvalue() and err.getvalue() == err2.getvalue()


def test_top_level_help_lists_every_command():
    text = _help(cli.build_parser(), ["--help"])
    for command in cli.COMMANDS:
        assert re.search(rf"^\s+{command}\s", text, re.M), command
    # an unknown subcommand is refused with the full list, as before
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
        cli.build_parser("requests").parse_args(["bogus"])
    assert "invalid choice: 'bogus'" in err.getvalue() and "batch" in err.getvalue()


@pytest.mark.parametrize("command,argv", [("compare", ["compare", "a.pcap", "b.pcap", "--keylog-a", "k"]),
                                          ("summary", ["summary", "a.pcap", "--bogus"])])
def test_an_unknown_option_is_refused_with_the_subcommands_usage(command, argv):
    """An option the subcommand does not take: exit 2 with that subcommand's usage (what it
    does take), as argparse does for a parser without subcommands; it printed the top level's
    "usage: wirefall [-h] COMMAND ...", which says nothing of the options."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as e:
        cli.build_parser(command).parse_args(argv)
    text = err.getvalue()
    assert e.value.code == 2
    assert text.startswith(f"usage: wirefall {command} ") and "--keylog FILE" in text, text
    assert f"wirefall {command}: error: unrecognized arguments: {' '.join(argv[-2 if command == 'compare' else -1:])}" in text
    err = io.StringIO()  # (an option before any command: the top level's usage, as before)
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
        cli.build_parser().parse_args(["--bogus"])
    assert "usage: wirefall [-h] COMMAND" in err.getvalue()


@pytest.mark.parametrize("command,argv,refused", [
    ("capture", ["capture", "-i", "lo", "-w", "x.pcapng"], ["-j", "--cache", "--har", "--netlog", "--qlog", "--har-page", "--limit"]),
    ("lab", ["lab", "-o", "runs"], ["-j", "--cache", "--har", "--netlog", "--qlog", "--har-page"])])
def test_commands_that_analyse_nothing_refuse_the_analysis_options(command, argv, refused):
    """capture and lab listed -j, --cache, --har … and ran on, ignoring them (review 24: `lab
    --har page.har` loaded the default page; the page is --page)."""
    p = cli.build_parser(command)
    assert p.parse_args(argv + ["--keylog", "k", "--debug"]).keylog == ["k"]
    for opt in refused:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
            p.parse_args(argv + [opt, "1"])
        assert "unrecognized arguments" in err.getvalue() and opt in err.getvalue(), opt
    if command == "lab":  # (--limit: the budgets of its --batch analysis)
        assert p.parse_args(argv + ["--limit", "tls_trial=100"]).limit


def test_requests_run_imports_only_what_it_uses():
    # a requests run on an HTTP/1.1 page load: no HTTP/2, QUIC or HTTP/3 decoder, no UI toolkit,
    # no display-filter grammar, no oracle (and the same output as in-process)
    cap, keys = PAGE / "page-h1.pcapng", PAGE / "page-h1.keys"
    code = ("import sys, json; from wirefall.ui.cli import main; sys.stdout = open(__import__('os').devnull, 'w'); rc = main(sys.argv[1:]); "
            "sys.stdout = sys.__stdout__; print(json.dumps(sorted(sys.modules))); sys.exit(rc)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code, "requests", str(cap), "--keylog", str(keys), "--json", "-j", "1"],
                         capture_output=True, text=True, env=env, timeout=120, check=True)
    mods = set(json.loads(out.stdout))
    assert "wirefall.dissectors.http1" in mods and "wirefall.analyzer.waterfall" in mods
    # nor the subcommands' own modules, nor shutil (argparse's terminal width, looked up only for help)
    for heavy in ("shutil", "wirefall.ui.cli_expert", "wirefall.ui.cli_objects", "wirefall.ui.cli_batch", "hpack", "aioquic", "pylsqpack", "wirefall.dissectors.http2", "wirefall.dissectors.http3", "wirefall.dissectors.quic",
                  "textual", "plotly", "dash", "numpy", "pyarrow", "wirefall.analyzer.filter", "wirefall.oracle", "wirefall.ui.tui",
                  "wirefall.ui.web",
                  # an IPv4 capture without DNS or redirects: no IPv6 text form (packet.addr_str takes
                  # _socket's inet_ntop), no link-local test past the prefix, no URL join
                  "socket", "selectors", "ipaddress", "urllib.parse",
                  "threading"):  # (the model's lock is _thread's: threading.Lock without the module)
        assert not any(m == heavy or m.startswith(heavy + ".") for m in mods), heavy


def test_text_summary_parses_no_certificate():
    """The text summary shows no certificate subject: it does not parse the certificate, which
    loads cryptography.x509 (~60 ms); ``summary --json`` still says the subject."""
    cap, keys = PAGE / "page-h2.pcapng", PAGE / "page-h2.keys"
    code = ("import sys, json; from wirefall.ui.cli import main; sys.stdout = open(__import__('os').devnull, 'w'); rc = main(sys.argv[1:]); "
            "sys.stdout = sys.__stdout__; print(json.dumps(sorted(sys.modules))); sys.exit(rc)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code, "summary", str(cap), "--keylog", str(keys)],
                         capture_output=True, text=True, env=env, timeout=120, check=True)
    assert not any(m.startswith("cryptography.x509") for m in json.loads(out.stdout))
    out = subprocess.run([sys.executable, "-m", "wirefall", "summary", str(cap), "--keylog", str(keys), "--json"],
                         capture_output=True, text=True, env=env, timeout=120, check=True)
    subjects = [c["tls"]["certificate_subject"] for c in json.loads(out.stdout)["connections"] if c["tls"]]
    assert subjects and all(subjects), subjects


@pytest.mark.parametrize("enabled", [True, False])
def test_main_leaves_the_collector_as_it_found_it(enabled):
    # main() pauses the cyclic collector for its start-up (and load() for the pass): the
    # command returns with it on or off as before
    import gc

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        if enabled:  # (load() itself ends with the collector on)
            with contextlib.redirect_stdout(io.StringIO()):
                assert cli.main(["requests", str(PAGE / "page-h1.pcapng"), "--keylog", str(PAGE / "page-h1.keys"), "--json", "-j", "1"]) == 0
            assert gc.isenabled()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
            cli.main(["requests", "--bogus"])
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_link_local_is_ipaddress_own():
    # waterfall._link_local imports ipaddress only for text that may name a link-local address
    import ipaddress
    import random

    from wirefall.analyzer.waterfall import _link_local

    def stock(addr: str) -> bool:
        try:
            ip = ipaddress.ip_address(addr.split("%", 1)[0])
        except ValueError:
            return False
        if ip.version == 6 and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return ip.is_link_local

    rnd = random.Random(7)
    cases = ["169.254.1.1", "169.254.01.1", "169.25.1.1", "10.0.0.1", "fe80::1", "FE80::1%eth0", "febf::1", "fec0::1",
             "::ffff:169.254.1.1", "::ffff:a9fe:101", "1.2.3", "", " 169.254.1.1", "169.254.1.1%x", "0169.254.1.1", "::1"]
    cases += [".".join(str(rnd.choice([169, 254, rnd.randint(0, 300)])) for _ in range(rnd.choice([3, 4, 4, 5]))) for _ in range(5000)]
    assert [_link_local(c) for c in cases] == [stock(c) for c in cases] and any(map(_link_local, cases))


def test_tables_built_cheaply_equal_their_definitions():
    from wirefall.dissectors import http3, tls_trial

    assert tls_trial._U16_HI == bytes(v >> 8 for v in range(1 << 16))
    assert tls_trial._U16_LO == bytes(v & 0xFF for v in range(1 << 16))
    pats = http3._grease2()
    assert pats is http3._grease2() and len(pats) == 64
    # each pattern finds exactly the two-byte varints whose value is a reserved (GREASE) type
    buf = bytes(b for v in range(0x4000) for b in (0x40 | v >> 8, v & 0xFF))
    found = sorted({m.start() for p in pats for m in p.finditer(buf)} & set(range(0, len(buf), 2)))
    assert [p // 2 for p in found] == [v for v in range(0x4000) if http3.is_grease(v)]


def _stock_repr(obj) -> str:
    # the __repr__ @dataclass itself generates, of a copy of obj's class declared the stock way
    import dataclasses

    cls = type(obj)
    ns = {"__annotations__": dict(cls.__annotations__), "__qualname__": cls.__qualname__, "__module__": cls.__module__}
    for f in dataclasses.fields(cls):
        ns[f.name] = dataclasses.field(default=None, repr=f.repr)
    ref = dataclasses.dataclass(type(cls.__name__, (), ns), eq=False)
    copy = ref.__new__(ref)
    for f in dataclasses.fields(cls):
        object.__setattr__(copy, f.name, getattr(obj, f.name))
    return repr(copy)


def test_dataclass_repr_is_the_generated_one():
    # the start-up path's dataclasses declare repr=False and share dissectors/dataclass_repr.py:
    # the text is @dataclass's own, on the objects of a real analysis
    from wirefall.analyzer import waterfall
    from wirefall.analyzer.pipeline import analyze
    from wirefall.dissectors import registry

    an = analyze(str(PAGE / "page-h2.pcapng"), keylogs=[str(PAGE / "page-h2.keys")], workers=1)
    c = an.connections[0]
    objs = [c, c.tls, c.stats[0], c.tcp, an.frames[0], an.frames[-1], an.exchanges[0], waterfall.page_of(an),
            registry.descriptor("http2"), registry.descriptor("http2").kinds, registry.descriptor("http2").oracle]
    for o in objs:
        assert type(o).__repr__.__name__ == "dataclass_repr" and repr(o) == _stock_repr(o), type(o)
    assert len(repr(an.exchanges[0])) > 200


@pytest.mark.parametrize("argv", [["tui", "/nonexistent/x.pcap"], ["/nonexistent/x.pcap"], ["tui", "/tmp"],
                                  ["tui", "sample_captures/page/page-h2.pcapng", "--compare", "/nonexistent/b.pcap"]])
def test_tui_on_a_file_it_cannot_open_says_so_in_one_line(argv):
    """As every other command: one line, exit 2; the full-screen app used to open on it with a
    notification instead."""
    r = subprocess.run([sys.executable, "-m", "wirefall", *argv], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr)
    assert r.stderr.count("\n") == 1 and "cannot open" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.stdout == ""


def test_requests_says_unknown_url_and_why_no_request_exists():
    """A row whose URL the capture does not hold says <unknown> (it was blank), and --detail N
    on a capture with no request seen says why (it said "the capture has none" of page-h2
    without its key log: 13 requests, encrypted)."""
    late = ROOT / "sample_captures/quic/page-h3-late.pcapng"
    r = subprocess.run([sys.executable, "-m", "wirefall", "requests", str(late), "--keylog", str(late.with_suffix(".keys"))],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    rows = [ln for ln in r.stdout.splitlines()[2:] if ln.strip()]
    assert len(rows) >= 20 and all(ln.rstrip().endswith(">") or "://" in ln for ln in rows), r.stdout[:800]
    assert sum(ln.rstrip().endswith(" <unknown>") for ln in rows) >= 20
    r = subprocess.run([sys.executable, "-m", "wirefall", "requests", "sample_captures/page/page-h2.pcapng", "--detail", "99"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "no request with id 99 (the capture shows none; incomplete: 2 connections not decrypted" in r.stderr, r.stderr
