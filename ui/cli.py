"""The ``wirefall`` command.

Every subcommand imports only what it uses: ``wirefall summary`` never loads Textual,
Plotly or Dash.  Errors are one line on stderr and an exit code (2 for a file that is not
a capture or a bad argument); ``--debug`` shows the traceback.
"""
from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from collections.abc import Set

from wirefall.analyzer.safetext import printable, printable_lines

COMMANDS = ("summary", "packets", "frames", "requests", "stats", "expert", "export", "objects", "crosscheck", "tui", "web", "compare", "lab", "capture", "batch")


class UsageError(Exception):
    """A usage error, said in one line; ``layout=True``: a message of several lines of our own
    layout (a filter error's expression and caret under it), each line escaped on its own."""

    def __init__(self, msg: str, layout: bool = False):
        super().__init__(msg)
        self.layout = layout


def limit_names() -> list[str]:
    """What ``--limit NAME=N`` accepts: each budget's per-connection name and its
    ``NAME_capture`` (``DEFAULT_LIMITS`` in analyzer/sessions/__init__.py)."""
    from wirefall.analyzer.sessions import CAPTURE_SUFFIX, CAPTURE_WIDE, DEFAULT_LIMITS

    names = set(DEFAULT_LIMITS)
    names |= {k + CAPTURE_SUFFIX for k in DEFAULT_LIMITS if not k.endswith(CAPTURE_SUFFIX) and k not in CAPTURE_WIDE}
    return sorted(names)


_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_limit(text: str) -> tuple[str, int]:
    """``NAME=N`` (N a whole number, optionally with k/M/G = 2**10/20/30) → (NAME, N)."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=N")
    valid = limit_names()
    if name not in valid:
        raise argparse.ArgumentTypeError(f"unknown limit {name!r}; valid names: {', '.join(valid)}")
    v = value.strip().replace("_", "")
    mult = _UNITS.get(v[-1:].lower(), 1)
    if mult != 1:
        v = v[:-1]
    try:
        n = int(v) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: N must be a whole number (optionally with k, M or G)") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: N must not be negative")
    return name, n


def limits_of(args) -> dict | None:
    """The ``--limit`` options as ``analyze(limits=...)`` takes them (None: the defaults),
    with ``--har-page`` as ``har_page`` (analyzer.browserlog.pages)."""
    pairs = dict(getattr(args, "limit", None) or [])
    if getattr(args, "har_page", None) is not None:
        pairs["har_page"] = args.har_page
    return pairs or None


def _har_page(text: str) -> int:
    """``--har-page N|all`` → N (1-based) or 0 (every page)."""
    if text.strip().lower() == "all":
        return 0
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a page number (1, 2, …) or all")
    return int(text)


def _fmt_time(t: float | None, t0: float) -> str:
    return "" if t is None else f"{t - t0:.6f}"


def _progress_printer(enabled: bool):
    if not enabled:
        return None
    start = time.monotonic()

    def cb(packets: int, done: int, total: int) -> None:
        if time.monotonic() - start < 0.5:
            return
        pct = f"{100 * done / total:5.1f}%" if total else ""
        sys.stderr.write(f"\r  reading: {packets:>10,} packets {pct}")
        if total and done >= total:
            sys.stderr.write("\r" + " " * 50 + "\r")
        sys.stderr.flush()

    return cb


def load(args, listing: bool = True):
    """The capture's analysis (from the cache with --cache), browser logs laid over it.
    ``listing=False``: without the per-packet listing of frames, which a command that prints
    exchanges only never reads (``analyzer.sessions.Context.listing``)."""
    import gc

    from wirefall.analyzer.gcpause import freeze_model

    progress = _progress_printer(sys.stderr.isatty() and not getattr(args, "json", False))
    # no cyclic collection between the pass (which pauses it) and the freeze below: the first
    # one after it would walk the whole model once more
    gc.disable()
    if getattr(args, "cache", False):
        from wirefall.analyzer.cache import analyze_cached

        # (-j: a miss is analysed with the workers too; the cache keeps the whole model, listing included)
        an, _hit = analyze_cached(args.file, args.keylog, progress=progress, limits=limits_of(args),
                                  workers=getattr(args, "workers", None))
    else:
        from wirefall.analyzer.pipeline import analyze

        an = analyze(args.file, keylogs=args.keylog, progress=progress, limits=limits_of(args),
                     workers=getattr(args, "workers", None), listing=listing)
    _overlay(an, args)
    for w in an.warnings:
        print(f"wirefall: warning: {printable(w)}", file=sys.stderr)
    if getattr(an, "source", "capture") == "har":  # a HAR of several pages: which one is shown
        from wirefall.analyzer.browserlog.comparison import page_notices

        for n in page_notices(an):
            print(f"wirefall: note: {printable(n)}", file=sys.stderr)
    if not args.keylog and not os.environ.get("SSLKEYLOGFILE"):  # (neither --keylog nor $SSLKEYLOGFILE)
        _keylog_hint(an, args.file)
    freeze_model()  # the model lives to the end of the command: no collection need walk it again
    gc.enable()
    return an


def _keylog_hint(an, path: str) -> None:
    """No key log given and connections left encrypted for want of one: say so on stderr,
    naming the key log beside the capture (NAME.keys, as ``compare`` and ``batch`` find it),
    which this command does not read unasked (a "wrote 0 objects" was all ``objects`` said)."""
    from wirefall.analyzer.completeness import _for_want_of_keys, _not_decrypted
    from wirefall.analyzer.safetext import plural

    n = sum(1 for c in an.connections if (r := _not_decrypted(c)) and _for_want_of_keys(r))
    if not n:
        return
    from wirefall.analyzer.batch.inputs import keylogs_beside

    beside = keylogs_beside(path)
    if beside:
        print(f"wirefall: note: {plural(n, 'connection')} not decrypted: no key log given; {printable(beside[0])} "
              f"lies beside the capture: --keylog {printable(beside[0])}", file=sys.stderr)


def overlay_args(args, suffix: str = "") -> list[tuple[str, str]]:
    """--har/--netlog/--qlog as (kind, path), in that order (``suffix`` "_b": compare's
    --har-b/--netlog-b/--qlog-b, B's logs)."""
    return [(k, f) for k in ("har", "netlog", "qlog") for f in (getattr(args, k + suffix, None) or [])]


def _overlay(an, args, logs: list[tuple[str, str]] | None = None) -> None:
    """--har/--netlog/--qlog (or ``logs``): lay each browser log over the capture (analyzer.browserlog)."""
    logs = overlay_args(args) if logs is None else logs
    if logs:
        from wirefall.analyzer.browserlog import overlay

        for kind, path in logs:
            overlay(an, path, kind=kind, limits=limits_of(args))
        from wirefall.analyzer.browserlog import comparison as cmp

        for s in cmp.overlays(an):  # how much of each log matched the wire (stderr, beside the notes; the TUI and the page show it too)
            print(printable(cmp.summary_line(s)), file=sys.stderr)


def _filter(args, scope: str | None = None):
    """The -Y filter compiled for what the command lists (before the capture is read: a bad
    filter fails at once, with the column and, for an unknown field, the closest name)."""
    if not getattr(args, "filter", None) and scope in ("frames", "exchanges"):
        return _everything  # (no -Y: the filter module and its field registry, a third of start-up, stay unloaded)
    from wirefall.analyzer.filter import FilterError, compile_filter

    try:
        return compile_filter(getattr(args, "filter", None) or "", scope)
    except FilterError as e:
        raise UsageError(f"bad filter: {e}", layout=True) from None


def _everything(_obj) -> bool:
    return True


def _dump(obj) -> None:
    """``obj`` as JSON (analyzer.jsonout: the layout of ``json.dump(obj, indent=2,
    ensure_ascii=False)``, written by orjson) + newline; a generator is written as a list,
    a batch of elements at a time."""
    from wirefall.analyzer.jsonout import dump

    dump(obj, sys.stdout)
    sys.stdout.write("\n")


def _table(rows: list[list], headers: list[str], right: Set[int] = frozenset()) -> str:
    widths = [len(h) for h in headers]
    srows = [["" if v is None else printable(v) for v in r] for r in rows]  # captured text: escapes, never raw controls
    for r in srows:
        for i, v in enumerate(r):
            widths[i] = max(widths[i], len(v))
    def line(vals):
        return "  ".join(v.rjust(widths[i]) if i in right else v.ljust(widths[i]) for i, v in enumerate(vals)).rstrip()
    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in srows]
    return "\n".join(out)


def cmd_summary(args) -> int:
    from wirefall.analyzer.jsonout import summary_dict

    an = load(args)
    d = summary_dict(an, subjects=args.json)  # (the text shows no certificate subject: not parsed)
    if args.json:
        _dump(d)
        return 0
    from wirefall.analyzer import completeness
    from wirefall.analyzer.model import connections_text, log_alone

    # (a browser log's requests that never reached the network are rows, on a connection of their
    # own that the wire never had: counted apart, as stats does, not as a connection of the
    # capture: model.connections_text)
    # a browser log opened alone has no packet: what only the wire gives (packets, bytes, the
    # capture's span) is unknown, "–" as stats and the web app say, not "0 packets, 0.000 s"
    # (read as a load that sent nothing); its connections' times count from the page's start
    alone = log_alone(an)
    wire = ("a browser log, no packets (what only the wire gives is unknown: –)" if alone else
            f"{d['packets']} packets, {d['bytes']} bytes, {d['duration']:.3f} s")
    print(f"{printable(an.path)}: {d['format']}{' (' + d['compression'] + ')' if d['compression'] else ''}, {wire}, "
          + connections_text(an))

    print("\n".join(printable(ln) for ln in completeness.render_text(completeness.compute(an))))
    if an.undecoded:
        print("undecoded packets: " + ", ".join(f"{n} ({printable(r)})" for r, n in sorted(an.undecoded.items())))
    t0 = d["first_time"] if d["first_time"] is not None else (an.start_time if alone else 0.0) or 0.0
    rows = []
    for c in d["connections"]:
        tls = c["tls"] or {}
        quic = c["quic"] or {}
        dec = ""
        if c["quic"]:
            dec = "decrypted" if quic.get("decrypted") else f"not decrypted: {quic.get('reason') or '?'}"
            if quic.get("retry"):  # (stateless address validation: the rtt is timed from the Initial after it)
                dec = f"Retry{' ×' + str(quic['retry']) if quic['retry'] > 1 else ''}, {dec}"
        elif c["tls"]:
            dec = "decrypted" if tls.get("decrypted") else f"not decrypted: {tls.get('reason') or '?'}"
        rows.append([c["id"], c["transport"], c["client"], c["server"], c["protocol"] or "",
                     "–" if alone else f"{c['packets'][0]}/{c['packets'][1]}", "–" if alone else f"{c['bytes'][0]}/{c['bytes'][1]}",
                     f"{c['start'] - t0:.3f}", f"{c['end'] - t0:.3f}", tls.get("sni") or quic.get("sni") or "", dec])
    print(_table(rows, ["id", "proto", "client", "server", "protocol", "packets c/s", "bytes c/s", "start", "end", "sni", "tls"], {0, 5, 6, 7, 8}))
    return 0


def cmd_packets(args) -> int:
    # -Y filters packets with tshark's semantics (analyzer.filter.filter_packets); the text and
    # JSON outputs list the same packets, each from the one packet record that the TUI and the
    # web packet list show too (analyzer.packet_record)
    pred = _filter(args, "packets")
    an = load(args)
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.filter import filter_packets
    from wirefall.analyzer.packet_record import packet_records

    src = PacketSource(args.file)
    try:
        shown = filter_packets(an, src, pred)
        if args.write:  # -w OUT: as tshark -w (ui/cli_objects.py)
            from wirefall.ui.cli_objects import write_packets

            return write_packets(args, an, src, shown)
        if args.json:
            _dump(r.json() for r in packet_records(an, src, shown))
        else:
            from wirefall.analyzer.parallel import ROWS_CHILD_SHARE, ROWS_SPLIT_MIN, _plain_capture, split_output, worker_count

            rows = shown if isinstance(shown, (list, range)) else list(shown)
            P = printable

            def lines(a: int, b: int):
                for r in packet_records(an, src, rows[a:b]):
                    yield f"{r.number:>7} {r.relative:>11.6f} {P(r.source):>22} → {P(r.destination):<22} {P(r.protocol):<10} {r.length:>6} {P(r.info)}\n"

            # a long listing is made by two processes where -j allows (analyzer.parallel.split_output:
            # the rows are independent once the analysis is done; a plain file is read by offset)
            n = worker_count(getattr(args, "workers", None), args.file) if len(rows) >= ROWS_SPLIT_MIN and _plain_capture(args.file) else 1
            split_output(len(rows), lines, n, share=ROWS_CHILD_SHARE)
    finally:
        src.close()
    return 0


def cmd_frames(args) -> int:
    from wirefall.analyzer.jsonout import frame_dict

    pred = _filter(args, "frames")
    an = load(args)
    frames = [f for f in an.frames if pred(f)]
    frames.sort(key=lambda f: f.packet)  # stable: frames of one packet stay in the order they were decoded
    if args.json:
        _dump(frame_dict(f, shared=True) for f in frames)
        return 0
    t0 = an.index.ts[0] if an.packets else 0.0
    w = sys.stdout.write
    for f in frames:
        hdr = ""
        if f.headers:
            hdr = " " + " ".join(f"{printable(k)}: {printable(v)}" for k, v in f.headers[:6]) + (" …" if len(f.headers) > 6 else "")
        sid = "" if f.stream_id is None else f.stream_id
        w(f"{f.packet:>7} {f.time - t0:>11.6f} c{f.connection:<4} {'→' if f.direction == 0 else '←'} {printable(f.protocol):<8} {sid!s:>6} {printable(f.type):<16} "
          f"{f.flags:#04x} {f.length:>7}{hdr}{'  [' + printable(f.error) + ']' if f.error else ''}\n")
    return 0


def cmd_requests(args) -> int:
    pred = _filter(args, "exchanges")
    # (the exchanges only: no frame listing, unless one request's detail is asked for, which
    # shows its frames, or browser logs are laid over the capture: their matching left as it was)
    an = load(args, listing=args.detail is not None or bool(overlay_args(args)))
    if args.detail is not None:  # one request's detail (ui/cli_request.py)
        from wirefall.ui.cli_request import cmd_request_detail

        return cmd_request_detail(args, an)
    exs = [e for e in an.exchanges if pred(e)]
    exs.sort(key=lambda e: (e.request_start or e.response_start or 0.0, e.id))
    if args.json:  # (with -j N: the post-pass and the JSON on N cores; the same bytes)
        from wirefall.analyzer.gcpause import gc_paused
        from wirefall.analyzer.parallel import requests_json, worker_count

        # (no cyclic collection while the page, the phases and the JSON are made, nor while their
        # modules load: every row's dicts live until it is encoded, and the ~10 young collections
        # walked them again, ~1 ms of h3-aioquic's 300 rows)
        with gc_paused():
            requests_json(an, exs, worker_count(getattr(args, "workers", None), args.file))
        return 0
    from wirefall.analyzer.request_detail import body_lower_bound, not_sent_of, size_text, status_cell, ttfb_start

    t0 = an.start_time
    rows = []
    for e in exs:
        ms = lambda a, b: "" if a is None or b is None else f"{(b - a) * 1000:.1f}"
        rows.append([e.id, e.connection, e.protocol, "" if e.stream_id is None else e.stream_id, ("push " if e.pushed else "") + (e.method or ""),
                     status_cell(e.status, e.reset, e.response_start is not None, not_sent_of(e.browser)), _fmt_time(e.request_start if e.request_start is not None else e.response_start, t0),
                     ms(ttfb_start(e), e.response_start), ms(e.response_start, e.response_end),
                     size_text(e.response_body_bytes, body_lower_bound(e, 1)), e.url or UNKNOWN_URL])
    # (id first: the N that `--detail N`, --json and the TUI's waterfall number the request by;
    # ttfb: the request's last byte to the response's first — DevTools' and WebPageTest's TTFB,
    # the detail's "Waiting (TTFB)": from the request's start it counted an upload's send in;
    # the rule is analyzer.request_detail.ttfb_start, compare's too)
    print(_table(rows, ["id", "conn", "protocol", "stream", "method", "status", "start s", "ttfb ms", "recv ms", "bytes", "url"],
                 {0, 1, 3, 6, 7, 8, 9}))
    return 0


# a row whose URL the capture does not hold (a QPACK entry inserted before the capture): said, not
# left blank (the JSON's url is null and the completeness summary counts it)
UNKNOWN_URL = "<unknown>"


def cmd_stats(args) -> int:
    from wirefall.analyzer import stats

    an = load(args)
    st = stats.compute(an, tcp_analysis=True)  # (the TCP analysis re-reads the packet headers: only here and in the TUI)
    # --phs: Wireshark's Protocol Hierarchy (tshark -q -z io,phs) after the tables, or as the JSON's "protocol_hierarchy"
    phs = stats.protocol_hierarchy(an) if getattr(args, "phs", False) else None
    if args.json:
        d = stats.to_dict(st)
        if getattr(args, "phs", False):
            d["protocol_hierarchy"] = phs
        _dump(d)
    else:
        print(printable_lines(stats.render_text(st)))
        if getattr(args, "phs", False):
            print(printable_lines(stats.render_phs(phs)))
    return 0


def cmd_export(args) -> int:
    from wirefall.ui.exports import check, export

    # the output's format, folder and --force, and the filter, before the capture is read (a
    # bad -o failed only after the whole analysis: review 31); export checks them again
    check(args.output, args.format, args.force, getattr(args, "filter", None))
    if getattr(args, "filter", None):
        _filter(args, "exchanges")  # (a bad filter fails before the capture is read, as elsewhere)
    an = load(args)
    kw = {"group_by": args.group_by} if args.group_by else {}
    if args.sort:
        kw["sort"] = args.sort
    export(an, args.output, fmt=args.format, force=args.force, include_sensitive=args.include_sensitive,
           time_span=args.time_span, expr=getattr(args, "filter", None), **kw)
    print(f"wrote {printable(args.output)}", file=sys.stderr)
    return 0


def cmd_crosscheck(args) -> int:
    """The report (the table, then each disagreement) on stdout, so that ``> report.txt`` keeps it;
    warnings and the verdict's errors on stderr.  Every count says its unit: frames (protocol
    frames), packets, header lists."""
    from wirefall.oracle.crosscheck import MAX_REPORTED, crosscheck_report

    # --cache: the analysis may come from the cache (its key includes this code's fingerprint)
    if args.cache or limits_of(args):
        an = load(args)  # (prints the capture's warnings)
    else:
        from wirefall.analyzer.pipeline import analyze

        an = analyze(args.file, keylogs=args.keylog or [])
        for w in an.warnings:  # e.g. the snap length, as every other command says it
            print(f"wirefall: warning: {printable(w)}", file=sys.stderr)
    report = crosscheck_report(args.file, args.keylog or [], analysis=an)
    problems = [p for r in report.values() for p in r.problems]
    rows = [[r.name, r.tshark_frames, r.wirefall_frames, r.matched, r.packets_matched, r.headers_compared,
             ", ".join(f"{n} {k}" for k, n in r.set_aside.items()), r.packets_differ, r.headers_differ]
            for r in report.values() if r.tshark_frames or r.wirefall_frames or r.problems]
    out = sys.stdout.write
    out(_table(rows, ["protocol", "tshark frames", "wirefall frames", "frames matched", "in packets", "header lists compared",
                      "set aside (tshark limits)", "packets differing", "header lists differing"], {1, 2, 3, 4, 5, 7, 8}) + "\n")
    compared = sum(r.matched for r in report.values())
    pk_differ = sum(r.packets_differ for r in report.values())
    hd_differ = sum(r.headers_differ for r in report.values())
    pk_matched = sum(r.packets_matched for r in report.values())
    out(f"{len(problems)} disagreements with tshark ({pk_differ} packets whose frames differ, {hd_differ} header lists "
        f"that differ); {compared} frames matched in {pk_matched} packets\n")
    for p in problems[:MAX_REPORTED]:
        out(printable(p) + "\n")
    if len(problems) > MAX_REPORTED:
        out(f"... {len(problems) - MAX_REPORTED} more disagreements\n")
    sys.stdout.flush()
    if not compared:
        print("wirefall: crosscheck compared nothing (no frame of a known protocol on either side)", file=sys.stderr)
        return 1
    return 1 if problems else 0


def _interfaces_text() -> str:
    from wirefall.analyzer.live import interfaces

    rows = interfaces()
    return "\n".join(f"{i}. {name}" + (f" ({desc})" if desc else "") for i, (name, desc) in enumerate(rows, 1))


def _live_or_list(args) -> bool:
    """``-i`` without an interface: print the interfaces (as ``dumpcap -D``) and stop."""
    if args.interface == "":
        print(printable_lines(_interfaces_text()))
        return True
    return False


def cmd_tui(args) -> int:
    from wirefall.ui.tui import run

    if args.interface is not None:
        from wirefall.analyzer.live import LiveError, LiveSession

        try:
            if _live_or_list(args):
                return 0
            session = LiveSession(args.interface, keylogs=args.keylog or [], bpf=args.capture_filter, limits=limits_of(args))
        except LiveError as e:
            raise UsageError(str(e)) from None
        from wirefall.ui.tui.live import run_live

        return run_live(session, save_to=args.write, limits=limits_of(args))
    if not args.file:
        raise UsageError("tui: give a capture FILE, or -i IFACE to capture live (-i alone lists the interfaces)")
    for path in (args.file, args.compare):  # (said here in one line, as the other commands say it, not in the full-screen app)
        if path:
            try:  # (stat, not open: a FIFO would block until its writer came)
                st = os.stat(path)
                if stat.S_ISDIR(st.st_mode):
                    raise IsADirectoryError(21, "Is a directory")
                if not os.access(path, os.R_OK):
                    raise PermissionError(13, "Permission denied")
            except OSError as e:
                raise UsageError(f"{path}: cannot open: {e.strerror or e}") from None
    return run(args.file, args.keylog or [], compare=args.compare, keylogs_b=args.keylog_b or [], use_cache=args.cache,
               limits=limits_of(args), overlays=overlay_args(args), overlays_b=overlay_args(args, "_b")) or 0


def cmd_capture(args) -> int:
    """``wirefall capture -i IFACE -w FILE``: dumpcap into FILE (a ring buffer with -b), the key
    logs followed while it runs and the secrets of the capture's own connections written into the
    file's Decryption Secrets Block at the end (with -b: beside the files, in FILE.keys).

    Ctrl+C, SIGTERM (``kill``, ``timeout``) and SIGHUP (the terminal closed) all stop it the same
    way: dumpcap stopped and waited for, FILE finished with its secrets."""
    import glob
    import math
    import signal as sig
    import subprocess

    from wirefall.analyzer.live import LiveError, LiveSession, file_client_randoms, private_file, save_with_keys, secrets_for

    if _live_or_list(args) or args.interface is None:
        if args.interface is None:
            print(printable_lines(_interfaces_text()))
        return 0
    if not args.write:
        raise UsageError("capture: -w FILE is required")
    if args.duration is not None and not (math.isfinite(args.duration) and args.duration > 0):
        raise UsageError(f"capture: --duration must be a number of seconds above 0, not {args.duration:g} "
                         "(leave it out to capture until Ctrl+C)")
    out = args.write
    where = os.path.dirname(os.path.abspath(out))
    if os.path.isdir(out):
        raise UsageError(f"cannot write {out}: it is a directory")
    if not os.path.isdir(where):
        raise UsageError(f"cannot write {out}: directory {where} does not exist")
    if not os.access(where, os.W_OK):
        raise UsageError(f"cannot write {out}: directory {where} is not writable")
    tmp = out + ".part" if not args.ring else out
    stop_by: list[str] = []

    def on_signal(signum, _frame) -> None:
        stop_by.append(sig.Signals(signum).name)

    # SIGTERM and SIGHUP stop the capture as Ctrl+C does (the file finished, not left as FILE.part);
    # once stopping, Ctrl+C no longer cuts the file's writing short either
    old = {s: sig.signal(s, on_signal) for s in (sig.SIGTERM, sig.SIGHUP)}
    try:
        try:
            session = LiveSession(args.interface, keylogs=args.keylog or [], bpf=args.capture_filter, path=tmp)
            session.capture.ring = list(args.ring or [])
            session.capture.duration = args.duration
            for note in session.keylog_notes():
                print(f"wirefall: warning: {printable(note)}", file=sys.stderr)
            session.start()
        except (LiveError, OSError) as e:
            if not args.ring and os.path.isfile(tmp):  # (dumpcap created it, then failed to start: nothing captured, not left behind)
                os.unlink(tmp)
            raise UsageError(str(e) if isinstance(e, LiveError) else f"cannot write {out}: {e.strerror or e}") from None
        print(f"capturing on {args.interface} into {out}" + (f" for {args.duration:g} s" if args.duration else "") +
              " (Ctrl+C stops)", file=sys.stderr)
        try:
            while session.capture.running and not stop_by:
                session.poll_keys()
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        old[sig.SIGINT] = sig.signal(sig.SIGINT, on_signal)
        if stop_by:
            print(f"wirefall: {stop_by[0]}: stopping the capture", file=sys.stderr)
        session.stop()
        session.poll_keys()
        if args.ring:  # dumpcap wrote the ring's files itself; their connections' keys beside them
            stem, ext = os.path.splitext(out)
            files = sorted(glob.glob(glob.escape(stem) + "_*" + ext))
            keys = secrets_for(session.keylog, randoms=file_client_randoms(files)) if len(session.keylog) else ""
            if keys:
                private_file(out + ".keys", keys)
            print(f"ring buffer files: {len(files)} beside {out} (dumpcap's numbered names); "
                  + (f"{keys.count(chr(10))} secrets of their connections in {out}.keys" if keys else "no secrets of their connections"),
                  file=sys.stderr)
            return 0
        keys = secrets_for(session.keylog, randoms=file_client_randoms([tmp])) if len(session.keylog) else ""
        try:
            save_with_keys(tmp, out, keys)
        except (LiveError, OSError, subprocess.SubprocessError) as e:
            raise UsageError(f"cannot write {out}: {e} (the capture is kept in {tmp})") from None
        os.unlink(tmp)
        k, n = keys.count("\n"), len(session.keylog)
        print(f"wrote {out}" + ("" if not session.followers else
                                f" ({k} secrets, those of its connections, in its Decryption Secrets Block"
                                + (f"; the key log's {n - k} others left out)" if n > k else ")")), file=sys.stderr)
        for note in session.keylog_notes():
            if "not there yet" in note:
                print(f"wirefall: warning: {printable(note.split(';')[0].replace('is not there yet', 'never appeared'))}", file=sys.stderr)
        return 0
    finally:
        for s, h in old.items():
            sig.signal(s, h)


def cmd_web(args) -> int:
    from wirefall.ui.web import run

    limit = int(args.upload_limit * 1048576) if args.upload_limit else None
    live = None
    if args.interface is not None:  # -i IFACE: a live capture in the capture list (ui/web/live.py)
        from wirefall.analyzer.live import LiveError, LiveSession

        try:
            if _live_or_list(args):
                return 0
            live = [(LiveSession(args.interface, keylogs=args.keylog or [], bpf=args.capture_filter, limits=limits_of(args)), args.write)]
        except LiveError as e:
            raise UsageError(str(e)) from None
    return run(args.files, keylogs=args.keylog or [], host=args.host, port=args.port, upload_limit=limit, use_cache=not args.no_cache,
               limits=limits_of(args), upload_lifetime=args.upload_lifetime * 60.0, overlays=overlay_args(args), live=live) or 0


class _PrintableText:
    """A text stream whose writes go out through ``printable_lines`` (for commands whose
    text another module prints: warnings and tables with captured URLs)."""

    def __init__(self, f) -> None:
        self._f = f

    def write(self, s: str) -> int:
        return self._f.write(printable_lines(s))

    def __getattr__(self, name):
        return getattr(self._f, name)


def cmd_compare(args) -> int:
    out, err = sys.stdout, sys.stderr
    sys.stderr = _PrintableText(err)
    if not args.json:  # JSON: its escaping keeps the exact values safe
        sys.stdout = _PrintableText(out)
    try:
        return _compare(args)
    finally:
        sys.stdout, sys.stderr = out, err


def _compare(args) -> int:
    from wirefall.analyzer.compare import compare, render_text

    limits = limits_of(args)
    # -j (default auto: every core for a capture of 16 MB or more): each capture analysed with the
    # workers, one after the other (A and B are not analysed at once: the second model would have
    # to cross a pipe whole, and each analysis already uses the cores where it is large enough)
    workers = getattr(args, "workers", None)

    if getattr(args, "cache", False):  # --cache: each capture through the analysis cache
        from wirefall.analyzer.cache import analyze_cached

        def analyze(path, keylogs):
            return analyze_cached(path, keylogs, limits=limits, workers=workers)[0]
    else:
        from wirefall.analyzer.pipeline import analyze as _analyze

        def analyze(path, keylogs):
            return _analyze(path, keylogs=keylogs, limits=limits, workers=workers)

    # each capture's key logs as `wirefall batch` finds them: NAME.keys (…) beside it, then --keylog
    # (and --keylog-b for B); with none, the pipeline reads $SSLKEYLOGFILE
    from wirefall.analyzer.batch.inputs import keylogs_beside, keylogs_for

    keys = {}
    for side, path, given in (("A", args.a, args.keylog or []), ("B", args.b, (args.keylog or []) + (args.keylog_b or []))):
        keys[side] = keylogs_for(path, given)
        beside = [k for k in keylogs_beside(path) if k not in given]
        if beside:
            print(f"wirefall: key log for {side}: {printable(beside[0])} (found beside the capture)", file=sys.stderr)
    a = analyze(args.a, keys["A"] or None)
    b = analyze(args.b, keys["B"] or None)
    logs_b = overlay_args(args, "_b")
    if overlay_args(args):  # --har/--netlog/--qlog: the browser's log of A's load, laid over A (its load event: a row)
        _overlay(a, args)
        if not logs_b:
            print("wirefall: note: --har/--netlog/--qlog laid over A only (a log of B's load: --har-b, --netlog-b, --qlog-b)",
                  file=sys.stderr)
    if logs_b:  # --har-b/--netlog-b/--qlog-b: the browser's log of B's load, laid over B
        _overlay(b, args, logs_b)
    for an in (a, b):
        for w in an.warnings:
            print(f"wirefall: warning: {printable(w)}", file=sys.stderr)
    res = compare(a, b)
    if args.output:
        from wirefall.analyzer.export import write_atomic
        from wirefall.ui.compare_figure import compare_figure, figure_bytes

        fig = compare_figure(a, b, res)
        fmt = args.output.rsplit(".", 1)[-1].lower()
        write_atomic(args.output, figure_bytes(fig, fmt), force=args.force)
        print(f"wrote {args.output}", file=sys.stderr)
    if args.json:
        _dump(res)
    else:
        print(render_text(res))  # (its own "warning:" lines end the table: not said twice on stderr)
    if args.json:
        for wmsg in res["warnings"]:
            print(f"wirefall: warning: {printable(wmsg)}", file=sys.stderr)
    return 0


def cmd_lab(args) -> int:
    from wirefall.lab.run import main as lab_main

    rc = lab_main(args) or 0
    if rc == 0 and getattr(args, "batch", None) is not None:  # the sweep's analysis through `wirefall batch`
        from wirefall.ui.cli_batch import cmd_batch

        out = args.batch or os.path.join(args.output, "batch")
        rc = cmd_batch(argparse.Namespace(inputs=[args.output], output=out, scheduler=None, workers=None, memory_limit=None,
                                          keylog=None, limit=getattr(args, "limit", None), group_by=None, retry_errors=False,
                                          no_report=False, no_images=False, verbose=False, debug=args.debug))
    return rc


def _workers(v: str):
    if v == "auto":
        return v
    try:
        n = int(v)
    except ValueError:
        raise argparse.ArgumentTypeError("N must be a number of processes or auto") from None
    if not 1 <= n <= 256:
        raise argparse.ArgumentTypeError("N must be between 1 and 256")
    return n


def live_args(sp, write: bool = True) -> None:
    sp.add_argument("-i", "--interface", nargs="?", const="", metavar="IFACE",
                    help="capture live on IFACE (dumpcap, else tcpdump; needs root or the capture capabilities); -i alone lists interfaces")
    sp.add_argument("-f", "--capture-filter", metavar="BPF", help="capture filter (BPF), e.g. 'tcp port 443 or udp port 443'")
    if write and sp.prog.split()[-1] == "tui":
        sp.add_argument("-w", "--write", metavar="FILE", help="where Ctrl+S saves the live capture (default wirefall-live-DATE.pcapng)")
    elif write and sp.prog.split()[-1] == "web":
        sp.add_argument("-w", "--write", metavar="FILE", help="where Save writes the live capture on the server (default: a download)")


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, set up (with the terminal's width, ``shutil.get_terminal_size``)
    only when it first formats help or usage: ``add_argument`` makes one per argument just to
    check the metavar, and the width lookup imported shutil (and with it bz2 and lzma), ~1.5 %
    of the instructions of a small capture's whole ``requests`` run."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        self._setup = (prog, indent_increment, max_help_position, width)

    def __getattr__(self, name: str):
        # the first attribute HelpFormatter.__init__ would have set: set them all now
        setup = self.__dict__.pop("_setup", None)
        if setup is None:
            raise AttributeError(name)
        argparse.HelpFormatter.__init__(self, *setup)
        return getattr(self, name)


class _Parser(argparse.ArgumentParser):
    """argparse's parser with ``_HelpFormatter`` (its subcommands' parsers are of its class).
    An argument the subcommand does not know is reported with the subcommand's usage (argparse
    hands a subparser's leftovers to the top level, whose usage, "wirefall [-h] COMMAND ...",
    does not say what the subcommand takes)."""

    commands: dict | None = None  # (the top level's) subcommand name -> its parser

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            sp = (self.commands or {}).get(getattr(ns, "command", None))
            (sp if isinstance(sp, argparse.ArgumentParser) else self).error("unrecognized arguments: " + " ".join(extra))
        return ns


def common_args(sp: argparse.ArgumentParser, analysis: bool = True, limit: bool = True) -> None:
    """The options every capture subcommand takes (declared on each, not copied from a parent
    parser: that built a parser and copied its actions at every start).  ``analysis`` False (a
    command that analyses nothing itself: capture, lab): only --keylog, --debug and (``limit``)
    --limit — it listed and silently ignored -j, --cache, --har … (review 24)."""
    sp.add_argument("--keylog", action="append", metavar="FILE", help="TLS key log (NSS format); repeatable; default $SSLKEYLOGFILE")
    sp.add_argument("--debug", action="store_true", help="show tracebacks")
    if not analysis:
        if limit:
            sp.add_argument("--limit", action="append", type=parse_limit, metavar="NAME=N",
                            help="with --batch: raise or lower one decoding budget of the analysis; repeatable")
        return
    sp.add_argument("-j", "--workers", type=_workers, default="auto", metavar="N",
                    help="analyse with N processes, connections sharded between them (same result); "
                         "auto (default): every core for captures of 16 MB or more, else 1")
    sp.add_argument("--cache", action="store_true", help="reuse (or store) the analysis in the zstd cache ($XDG_CACHE_HOME/wirefall); no key material is stored")
    sp.add_argument("--limit", action="append", type=parse_limit, metavar="NAME=N",
                    help="raise or lower one decoding budget (per connection, or NAME_capture for the whole capture); repeatable; "
                         "an unknown NAME lists the valid ones")
    for kind, what in (("har", "a HAR 1.2"), ("netlog", "a Chrome NetLog"), ("qlog", "a qlog")):
        sp.add_argument(f"--{kind}", action="append", metavar="FILE",
                        help=f"lay {what} of the same load over the capture: its requests matched to the wire's, "
                             "URLs the capture lacks filled in, browser-minus-wire offsets per phase; repeatable")
    sp.add_argument("--har-page", type=_har_page, metavar="N", help="a HAR of several pages (WebPageTest runs, DevTools' preserved "
                    "log): show page N (1-based, in the HAR's order), or all; default the first, over a capture the one it holds")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``command`` (one of COMMANDS), only that subcommand's
    parser is built, the others are names alone (what an unknown command's error lists): a
    start parses one subcommand, and declaring all fifteen cost as much as reading a small
    capture's packets.  ``wirefall --help`` builds them all."""

    def want(name: str) -> bool:
        return command is None or command == name

    p = _Parser(prog="wirefall", description="Protocol analyzer and waterfall visualiser for SPDY, HTTP/2, HTTP/1.x, QUIC and HTTP/3 captures.",
                epilog="`wirefall FILE` opens the terminal UI on FILE.")
    # (prog given: argparse would format a usage line to find it, setting up a formatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", prog="wirefall")
    p.commands = sub.choices
    stub = None  # what the names of the subcommands not built stand for

    def add(name, func, help, json_=True, filt=False, file=True, describe=True, analysis=True, limit=True):
        nonlocal stub
        desc = help if describe else None
        if not want(name):
            if command is None:
                return sub.add_parser(name, help=help, description=desc)
            if stub is None:
                stub = _Parser(prog=f"wirefall {name}", add_help=False)
            sub.choices[name] = stub  # never parsed: main builds the parser of argv's first word
            return None
        sp = sub.add_parser(name, help=help, description=desc)
        common_args(sp, analysis, limit)
        if file:
            sp.add_argument("file", metavar="FILE", help="pcap or pcapng capture, or a browser log (HAR, Chrome NetLog, qlog), "
                                                         "optionally gzip/xz/bzip2/zstd compressed")
        if json_:
            sp.add_argument("--json", action="store_true", help="JSON output (docs/JSON.md)")
        if filt:
            sp.add_argument("--filter", "-Y", metavar="EXPR", help='display filter, e.g. \'stream == 5 && type == "HEADERS"\'')
        sp.set_defaults(func=func)
        return sp

    add("summary", cmd_summary, "capture totals and one row per connection")
    sp = add("packets", cmd_packets, "Wireshark-style packet list", filt=True)
    if want("packets"):
        sp.add_argument("-w", "--write", metavar="OUT.pcapng", help="write the packets shown to a pcapng file (as tshark -w), "
                                                                    "with the TLS/QUIC keys they need in a Decryption Secrets Block")
        sp.add_argument("--no-keys", action="store_true", help="with -w: no Decryption Secrets Block")
        sp.add_argument("--force", action="store_true", help="with -w: overwrite OUT if it exists")
    add("frames", cmd_frames, "one row per protocol frame (HTTP/2, SPDY, QUIC, HTTP/3, TLS records, HTTP/1 messages)", filt=True)
    sp = add("requests", cmd_requests, "one row per request/response exchange", filt=True)
    if want("requests"):
        sp.add_argument("--detail", type=int, metavar="N", help="the detail of request N (its id, as in --json): headers, "
                                                                "timing with packets, frames and packets of its stream, bodies")
    sp = add("stats", cmd_stats, "packet, byte and header-compression statistics")
    if want("stats"):
        sp.add_argument("--phs", action="store_true", help="also the protocol hierarchy (Wireshark's Statistics → Protocol Hierarchy, "
                                                           "tshark -q -z io,phs): frames and bytes per layer path")
    if want("expert"):
        from wirefall.ui.cli_expert import cmd_expert  # (a few lines; imports analyzer.expert only when run)
    add("expert", cmd_expert if want("expert") else None, "expert information (tshark -z expert): notes, warnings and errors, with severity, group and packet", filt=True)
    sp = add("export", cmd_export, "export the waterfall (png, svg, html) or data (har, json, qlog)", json_=False, filt=True)
    if want("export"):
        sp.add_argument("-o", "--output", required=True, metavar="OUT")
        sp.add_argument("--format", choices=["png", "svg", "html", "har", "json", "qlog"], help="default: from OUT's extension")
        sp.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
        sp.add_argument("--include-sensitive", action="store_true", help="keep Cookie, Set-Cookie and Authorization, and request bodies (postData text), in HAR")
        sp.add_argument("--group-by", choices=["connection", "host"], help="group waterfall rows by connection or by host")
        sp.add_argument("--sort", choices=["start", "duration", "size", "host"], help="order of the waterfall rows (in each group): default start")
        sp.add_argument("--time-span", choices=["page", "capture"], default="page",
                        help="images: the time axis spans the page (default; background rows beyond it are cut at its edges, "
                             "the subtitle says how many) or the whole capture")
    if want("objects"):
        from wirefall.ui.cli_objects import cmd_objects
    sp = add("objects", cmd_objects if want("objects") else None, "write every HTTP request and response body to DIR, content-encoding undone, "
                                     "named as tshark --export-objects names them (a file there is never replaced)")
    if want("objects"):
        sp.add_argument("-o", "--output", required=True, metavar="DIR")
        sp.add_argument("--protocol", choices=["http", "http2", "http3", "spdy"], help="only this protocol's bodies (default: all)")
    add("crosscheck", cmd_crosscheck, "compare wirefall's frames and headers with tshark's; exit 1 on disagreement", json_=False)
    sp = add("tui", cmd_tui, "open the terminal UI (on FILE, or on a live capture with -i IFACE)", json_=False, file=False)
    if want("tui"):
        sp.add_argument("file", metavar="FILE", nargs="?", help="pcap or pcapng capture, or a browser log (HAR, Chrome NetLog, qlog)")
        live_args(sp)
        sp.add_argument("--compare", metavar="B", help="open the compare view of FILE (A) against capture B")
        sp.add_argument("--keylog-b", action="append", metavar="FILE", help="key log for B only (--keylog applies to both)")
        for k, what in (("har", "a HAR 1.2"), ("netlog", "a Chrome NetLog"), ("qlog", "a qlog")):
            sp.add_argument(f"--{k}-b", action="append", metavar="FILE",
                            help=f"with --compare: {what} of B's load, laid over B as --{k} is over FILE; repeatable")
    sp = add("web", cmd_web, "start the web dashboard on 127.0.0.1", json_=False, file=False)
    if want("web"):
        sp.add_argument("files", nargs="*", metavar="FILE")
        sp.add_argument("--host", default="127.0.0.1",
                        help="address to listen on; anything but loopback serves decrypted traffic to the network and requires the access token printed at start")
        sp.add_argument("--port", type=int, default=8050)
        sp.add_argument("--upload-limit", type=float, metavar="MB", help="largest upload accepted (default 200 MB)")
        sp.add_argument("--no-cache", action="store_true", help="do not use the analysis cache")
        sp.add_argument("--upload-lifetime", type=float, default=60.0, metavar="MIN",
                        help="delete a staged upload not opened for this many minutes (default 60)")
        live_args(sp)
    sp = add("capture", cmd_capture, "capture packets live into a pcapng file (dumpcap), with the key log's secrets in it", json_=False, file=False,
             analysis=False, limit=False)
    if want("capture"):
        live_args(sp)
        sp.add_argument("-w", "--write", metavar="FILE", help="the pcapng file to write")
        sp.add_argument("-b", "--ring", action="append", metavar="KEY:VALUE", help="dumpcap ring buffer, e.g. -b filesize:10240 -b files:5")
        sp.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (more than 0; without it: until Ctrl+C, SIGTERM or SIGHUP)")
    sp = add("compare", cmd_compare, "compare two captures of the same page: requests matched by URL, each side's page load and phases (docs/JSON.md)", json_=False, file=False)
    if want("compare"):
        sp.add_argument("a", metavar="A")
        sp.add_argument("b", metavar="B")
        sp.add_argument("--keylog-b", action="append", metavar="FILE",
                        help="key log for B only (--keylog applies to both; a key log beside each capture, NAME.keys, is read too)")
        for k, what in (("har", "a HAR 1.2"), ("netlog", "a Chrome NetLog"), ("qlog", "a qlog")):
            sp.add_argument(f"--{k}-b", action="append", metavar="FILE",
                            help=f"{what} of B's load, laid over B as --{k} is over A; repeatable")
        sp.add_argument("--json", action="store_true", help="JSON output (docs/JSON.md)")
        sp.add_argument("-o", "--output", metavar="OUT", help="write the side-by-side waterfall (html, png, svg)")
        sp.add_argument("--force", action="store_true", help="with -o: overwrite OUT if it exists")
    sp = add("lab", cmd_lab, "capture the same page over HTTP/1.1, SPDY, HTTP/2 and HTTP/3 (needs root and a wirefall checkout; docs/LAB.md)", json_=False, file=False,
             analysis=False)
    if want("lab"):
        sp.add_argument("--protocols", default="h1,spdy,h2,h3", metavar="LIST",
                        help="comma-separated, of h1, spdy, h2, h3 (default: h1,spdy,h2,h3)")
        sp.add_argument("--rtt", type=float, nargs="*", default=[0.0], metavar="MS",
                        help="round-trip times to add (the lab's relay: one-way delay RTT/2); every RTT x loss pair is run (default: 0)")
        sp.add_argument("--loss", type=float, nargs="*", default=[0.0], metavar="PERCENT",
                        help="random packet loss each way, in percent; every RTT x loss pair is run (default: 0)")
        sp.add_argument("--rate", type=float, default=None, help="Mbit/s each way (--down/--up set one each)")
        sp.add_argument("--down", type=float, default=None, metavar="MBIT", help="server→client rate")
        sp.add_argument("--up", type=float, default=None, metavar="MBIT", help="client→server rate")
        sp.add_argument("--buffer", default=None, help="bottleneck queue: bdp, PACKETS (64 or 64p) or MSms (docs/LAB.md)")
        sp.add_argument("--loss-burst", type=float, default=None, metavar="PACKETS", help="bursty loss: mean burst (Gilbert)")
        sp.add_argument("--push", metavar="KINDS|PATHS", help="HTTP/2 and SPDY servers push these with the HTML: css,js,images… or /a.css,/b.js")
        sp.add_argument("--batch", nargs="?", const="", default=None, metavar="OUT",
                        help="then analyse the runs with `wirefall batch` on a local cluster into OUT (default RUNS_DIR/batch)")
        sp.add_argument("--runs", type=int, default=1, metavar="N", help="page loads per protocol and RTT x loss pair (default: 1)")
        sp.add_argument("--page", default=None, metavar="HAR|DIR|NAME",
                        help="a HAR's page (one host per origin, lab DNS), a directory, or jpeg[:N[:KB]] / whitepaper (docs/LAB.md)")
        sp.add_argument("--h3-server", choices=("auto", "ngtcp2", "caddy", "aioquic"), default="auto",
                        help="HTTP/3 server (auto: the first installed of ngtcp2, caddy, aioquic)")
        sp.add_argument("-o", "--output", required=True, metavar="RUNS_DIR")
    if want("batch"):
        from wirefall.ui.cli_batch import add_parser as add_batch

        add_batch(sub, _workers, parse_limit)  # (its body: ui/cli_batch.py)
    else:
        add("batch", None, "")  # (its name alone)
    return p


# commands that read a capture, print and end: the process may end without the interpreter's teardown
PRINTING = frozenset(("summary", "packets", "frames", "requests", "stats"))


def _exit_now(rc: int) -> None:
    """End the process at once, output flushed: the interpreter's teardown would free the
    model object by object (every Frame, Exchange, field dict and module), memory the OS takes
    back whole — on h3-aioquic (2,870 packets) ~5 ms of a 150 ms ``requests --json``, more on
    a larger capture.  Returns (the normal exit follows) when a thread still runs or the
    flush fails, so that those end as they always did."""
    th = sys.modules.get("threading")
    if th is not None and th.active_count() > 1:
        return
    lg = sys.modules.get("logging")
    try:
        if lg is not None:
            lg.shutdown()  # (what its atexit hook does: flush and close the handlers)
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - the normal exit reports it as it always did
        return
    os._exit(rc)


def main(argv: list[str] | None = None) -> int:
    import gc

    # No cyclic collection while the parser is built and the capture reader's module loads:
    # what they make lives to the end, and the ~10 collections walked it (~1 % of a small
    # capture's run).  The command runs with the collector as it was (load() pauses it
    # itself), what came before frozen as load() freezes the model: else the first collection
    # after would walk it all at once.
    gc_on = gc.isenabled()
    gc.disable()
    program = argv is None  # the process's own command line (the console script, python -m wirefall)
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        # `wirefall FILE [--keylog K]` opens the TUI
        first = next((a for a in argv if not a.startswith("-")), None)
        # (and a path that does not exist: "cannot open" says more than "invalid choice" among the
        # commands; a word without "/" or "." stays a mistyped command)
        if first is not None and first not in COMMANDS and (os.path.exists(first) or "/" in first or "." in first):
            argv = ["tui"] + argv
        # the subcommand is argv's first word (the top level takes no option but --help)
        parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        debug = getattr(args, "debug", False)
        from wirefall.analyzer.capture import CaptureError
    finally:
        if gc_on:
            gc.freeze()
            gc.enable()

    spooled: list[str] = []  # folders of inputs given as pipes, copied to be read by offset (_spool_inputs)
    try:
        _spool_inputs(args, spooled)
        rc = args.func(args) or 0
        if program and args.command in PRINTING:
            _remove(spooled)
            _exit_now(rc)
        return rc
    except CaptureError as e:
        print(f"wirefall: {printable(e)}", file=sys.stderr)
        return 2
    except (UsageError, FileExistsError) as e:
        print(f"wirefall: {printable_lines(str(e)) if getattr(e, 'layout', False) else printable(e)}", file=sys.stderr)
        return 2
    except ValueError as e:
        if e.__class__.__name__ not in ("ExportError", "FilterError"):
            if debug:
                raise
            print(f"wirefall: error: {e.__class__.__name__}: {printable(e)} (run with --debug for the traceback)", file=sys.stderr)
            return 1
        print(f"wirefall: {printable(e)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except KeyboardInterrupt:
        print("wirefall: interrupted", file=sys.stderr)
        return 130
    except ModuleNotFoundError as e:
        if debug:
            raise
        print(f"wirefall: {args.command}: not available in this build ({e.name} missing)", file=sys.stderr)
        return 2
    except Exception as e:  # never a traceback unless asked
        if debug:
            raise
        print(f"wirefall: error: {e.__class__.__name__}: {printable(e)} (run with --debug for the traceback)", file=sys.stderr)
        return 1
    finally:
        _remove(spooled)


def _spool_inputs(args, spooled: list[str]) -> None:
    """A command's capture given as a pipe (a FIFO, /dev/stdin from a pipe) copied into a
    temporary folder first (``analyzer.capture.spool_stream``): ``args.file`` then names the copy."""
    v = getattr(args, "file", None)
    if not isinstance(v, str) or getattr(args, "command", "") in ("capture", "lab", "batch"):
        return
    import stat  # (loaded by os already)

    try:
        mode = os.stat(v).st_mode
    except OSError:
        return
    if not stat.S_ISFIFO(mode) and not stat.S_ISCHR(mode):
        return  # (a file, a folder: read as they are, nothing more imported)
    import shutil
    import tempfile

    from wirefall.analyzer.capture import spool_stream

    tmp = tempfile.mkdtemp(prefix="wirefall-stream-")
    try:
        got = spool_stream(v, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if got is None:
        shutil.rmtree(tmp, ignore_errors=True)
        return
    spooled.append(tmp)
    args.file = got
    print(f"wirefall: note: {printable(v)} is a stream: read into {printable(got)} first (removed at the end)", file=sys.stderr)


def _remove(folders: list[str]) -> None:
    if not folders:
        return
    import shutil

    while folders:
        shutil.rmtree(folders.pop(), ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
