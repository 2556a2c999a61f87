"""``wirefall expert FILE [--json] [-Y FILTER]``: Wireshark's Expert Information
(``analyzer.expert``), as ``tshark -q -z expert`` prints it — counts per severity, group,
protocol and summary — then one line per item.  ``-Y`` keeps the items on the packets the
display filter matches (packet-level items only, as tshark's ``-Y … -z expert``)."""
from __future__ import annotations

import sys


def cmd_expert(args) -> int:
    from wirefall.ui.cli import _dump, _filter, load

    pred = _filter(args, "packets") if getattr(args, "filter", None) else None
    an = load(args)
    from wirefall.analyzer import expert
    from wirefall.analyzer.capture import PacketSource

    src = PacketSource(args.file) if an.packets else None
    try:
        items = expert.compute(an, src)
        if pred is not None and src is not None:
            from wirefall.analyzer.filter import filter_packets

            items = expert.filtered(an, items, filter_packets(an, src, pred))
        elif pred is not None:
            items = []
    finally:
        if src is not None:
            src.close()
    if args.json:
        _dump(expert.to_dict(items))
    else:
        sys.stdout.write(expert.render_text(items).lstrip("\n") + "\n")
    return 0
