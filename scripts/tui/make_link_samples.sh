#!/bin/sh
# Regenerate the link-layer samples used by tests/test_tui.py (detail tree vs tshark):
# one HTTP/1.1 GET over IPv4 and one over IPv6 on loopback, captured by tcpdump as
# Linux cooked (SLL), Linux cooked v2 (SLL2) and Ethernet; raw-IP is the Ethernet capture
# with the 14-byte Ethernet header removed (scripts/tui/eth_to_raw.py).
# Tools: python3 -m http.server, curl, tcpdump.  Run as root from the repository root.
set -e
OUT=${1:-sample_captures}
PORT=18089
DIR=$(mktemp -d)
echo "hello wirefall" > "$DIR/hello.txt"
python3 -m http.server --bind :: --directory "$DIR" $PORT >/dev/null 2>&1 &
SRV=$!
sleep 1
tcpdump -i any -y LINUX_SLL -w "$OUT/link-sll.pcap" -U port $PORT 2>/dev/null &
T1=$!
tcpdump -i any -y LINUX_SLL2 -w "$OUT/link-sll2.pcap" -U port $PORT 2>/dev/null &
T2=$!
tcpdump -i lo -w "$DIR/eth.pcap" -U port $PORT 2>/dev/null &
T3=$!
sleep 1
curl -s -o /dev/null http://127.0.0.1:$PORT/hello.txt
curl -s -o /dev/null "http://[::1]:$PORT/hello.txt"
sleep 1
kill $T1 $T2 $T3 $SRV
wait $T1 $T2 $T3 2>/dev/null || true
python3 "$(dirname "$0")/eth_to_raw.py" "$DIR/eth.pcap" "$OUT/link-raw.pcap"
rm -rf "$DIR"
