#!/bin/bash
# Regenerate sample_captures/tcp-port-reuse.pcap: two HTTP/1.1 GETs from the same client
# port to the same server, one after the other, so one 4-tuple carries two TCP connections
# (different ISNs; Linux reuses the TIME_WAIT port on loopback, net.ipv4.tcp_tw_reuse).
# Tools: python3 -m http.server, curl --local-port, tcpdump.  Run as root from the repository root.
set -e
OUT=${1:-sample_captures}
PORT=18080
CPORT=$(shuf -i 40000-49999 -n 1)  # a port with no TIME_WAIT left from an earlier run
DIR=$(mktemp -d)
head -c 8192 /dev/urandom | base64 > "$DIR/index.html"
python3 -m http.server --bind 127.0.0.1 --directory "$DIR" $PORT >/dev/null 2>&1 &
SRV=$!
trap 'kill $SRV 2>/dev/null; rm -rf "$DIR"' EXIT
sleep 1
tcpdump -i lo -w "$OUT/tcp-port-reuse.pcap" -U "tcp port $PORT" 2>/dev/null &
T=$!
sleep 1
curl -s -o /dev/null --local-port $CPORT http://127.0.0.1:$PORT/
sleep 0.5
curl -s -o /dev/null --local-port $CPORT http://127.0.0.1:$PORT/
sleep 1
kill $T
wait $T 2>/dev/null || true
