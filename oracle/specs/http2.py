"""HTTP/2 as tshark shows it (``http2.stream`` units): type, stream id, length, flags and the decoded header list.

A ``Spec`` (``oracle.spec``) registered on import; ``oracle.crosscheck`` imports this module
for the ``http2`` registry descriptor."""
from __future__ import annotations

from wirefall.analyzer.model import Analysis
from wirefall.dissectors.registry import descriptor
from wirefall.oracle.spec import (
    TCP_ARGS,
    Spec,
    _oracle,
    register,
)


# -- HTTP/2 ----------------------------------------------------------------------------------
def _h2_type(v: str) -> str:
    from wirefall.dissectors.http2 import frame_name

    return frame_name(int(v, 0))


def _h2_decode_as(an: Analysis) -> list[str]:
    ports = set()
    upgraded = {f.connection for f in an.frames if f.protocol.startswith("http/1")}
    for c in an.connections:
        if c.protocol == "h2c" and c.id not in upgraded and c.transport == "tcp":
            ports.add(c.server[1])
    args = []
    for p in sorted(ports):
        args += ["-d", f"tcp.port=={p},http2"]
    return args


register(Spec(
    name="http2",
    layer=_oracle("http2").layer,
    unit="http2.stream",
    protocols=descriptor("http2").protocols,
    fields=dict(_oracle("http2").fields),
    type_field=_oracle("http2").type_field or "",
    type_name=_h2_type,
    skip=lambda u: "http2.type" not in u,  # the connection preface ("http2.magic")
    headers=("http2.header", "http2.header.name", "http2.header.value"),
    decode_as=_h2_decode_as,
    args=TCP_ARGS,
))
