"""``wirefall objects`` and ``wirefall packets -w``: the CLI bodies (ui/cli.py parses)."""
from __future__ import annotations

import os
import sys

from wirefall.analyzer.safetext import printable


def cmd_objects(args) -> int:
    """Every HTTP body of the capture into a directory, named as tshark --export-objects."""
    from wirefall.analyzer.objects import export_objects
    from wirefall.ui.cli import _dump, limits_of

    res = export_objects(args.file, args.output, keylogs=args.keylog, protocol=args.protocol, limits=limits_of(args))
    for warning in res.analysis.warnings:
        print(f"wirefall: warning: {printable(warning)}", file=sys.stderr)
    if not args.keylog and not os.environ.get("SSLKEYLOGFILE"):
        from wirefall.ui.cli import _keylog_hint

        _keylog_hint(res.analysis, args.file)
    if args.json:
        _dump([o.to_dict() for o in res.objects])
    else:
        write = sys.stdout.write
        for o in res.objects:
            note = "; ".join(x for x in (o.error, o.truncated) if x)
            write(f"{o.packet:>7} {'req' if o.direction == 0 else 'resp'} {o.size:>10} {printable(o.name)}  "
              f"{printable(o.url or '')}{'  [' + printable(note) + ']' if note else ''}\n")
    short = [o for o in res.objects if o.truncated]
    print(f"wrote {len(res.written)} objects to {printable(args.output)}"
          + (f" ({len(short)} cut short: see the notes)" if short else "") + _refused_note(res), file=sys.stderr)
    return 0


def _refused_note(res) -> str:
    """How many bodies were not written and why (``; N not written: …``), or ""."""
    from wirefall.analyzer.objects import MAX_DUPLICATES

    refused = res.refused
    if not refused:
        return ""
    full = list(res.full_names)
    shown = ", ".join(printable(n) for n in full[:3]) + (f" and {len(full) - 3} more" if len(full) > 3 else "")
    return (f"; {len(refused)} not written: {shown} had {MAX_DUPLICATES} files{' each' if len(full) > 1 else ''} "
            f"already (NAME, NAME(1) … NAME({MAX_DUPLICATES - 1}): tshark's limit per name; tshark overwrites "
            "the last, wirefall replaces no file)")


def write_packets(args, an, src, shown) -> int:
    """``packets -w OUT``: the shown packets to a pcapng with the keys they need."""
    from wirefall.analyzer.pcapng_write import write_pcapng

    r = write_pcapng(an, shown, args.write, keys=not args.no_keys, source=src, force=args.force)
    print(f"wrote {r.packets} packets to {printable(args.write)}"
          + (f" with {r.secrets} key-log lines in a Decryption Secrets Block" if r.secrets else ""), file=sys.stderr)
    return 0
