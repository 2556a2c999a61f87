"""DNS datagram session: one ``Frame`` per DNS message (protocol ``dns``, type ``QUERY`` or
``RESPONSE``, ``stream_id`` = the DNS id), so the waterfall can draw the DNS phase.

Hook: ``KINDS["dns"] = ("wirefall.analyzer.sessions.dns", "DnsSession")`` (pipeline's ``_udp_session``
already hands port-53/5353 flows to the ``dns`` kind when it is registered).
"""
from __future__ import annotations

from wirefall.dissectors import dns as dnsd

from ..model import Frame


def message_fields(msg: dnsd.DnsMessage) -> dict:
    return {
        "id": msg.id,
        "qname": msg.qname,
        "qtype": msg.qtype,
        "rcode": msg.rcode,
        "answers": [[a.name, a.type, a.ttl, a.value] for a in msg.answers],
    }


class DnsSession:
    def __init__(self, ctx, conn, **kw):
        self.ctx = ctx
        self.conn = conn
        conn.protocol = conn.protocol or "dns"

    def datagram(self, direction, data, packet):
        msg = dnsd.parse(data)
        f = Frame(
            packet=packet,
            first_packet=packet,
            time=self.ctx.time(packet),
            connection=self.conn.id,
            direction=direction,
            protocol="dns",
            stream_id=msg.id,
            type="RESPONSE" if msg.response else "QUERY",
            length=len(data),
            fields=message_fields(msg),
            error=msg.error,
        )
        if msg.error:
            self.ctx.note(self.conn, f"packet {packet}: DNS: {msg.error}")
        self.ctx.add_frame(f, "DNS")

    def data(self, direction, data, offset, packet):  # DNS over TCP is not decoded
        pass

    def gap(self, direction, offset, length, packet):
        pass

    def end(self):
        pass
