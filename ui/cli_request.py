"""``wirefall requests FILE --detail N``: one request's detail as the TUI's request view
shows it (``ui.tui.request_view.detail_text`` of ``analyzer.request_detail.request_detail``),
as plain text.  ``N`` is the exchange's ``id`` (as in ``requests --json``)."""
from __future__ import annotations

import sys


def cmd_request_detail(args, an) -> int:
    from wirefall.analyzer.request_detail import request_detail
    from wirefall.ui.cli import UsageError
    from wirefall.ui.tui.request_view import detail_text  # (Rich only: no Textual)

    if args.json:
        raise UsageError("requests: --detail N is text; `requests --json` already holds every field of each request")
    e = next((x for x in an.exchanges if x.id == args.detail), None)
    if e is None:
        ids = [x.id for x in an.exchanges]
        if ids:
            why = f"(ids {min(ids)}–{max(ids)}; see `requests --json`)"
        else:  # (none seen: say why, as the summary would — encrypted without a key log is the usual reason)
            from wirefall.analyzer import completeness

            head = completeness.compute(an).summary
            why = "(the capture shows none" + ("" if head.startswith("Complete") else f"; {head[:1].lower()}{head[1:]}") + ")"
        raise UsageError(f"requests: no request with id {args.detail} {why}")
    sys.stdout.write(detail_text(request_detail(an, e)).plain.rstrip("\n") + "\n")
    return 0
