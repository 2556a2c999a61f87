#!/bin/sh
# Regenerates wirefall's SPDY sample captures: for spdy/2, spdy/3 and spdy/3.1, cleartext and
# TLS (ALPN, TLS key log from the client), real npm spdy/spdy-transport server and client on
# loopback, captured by tcpdump.  Writes to sample_captures/spdy/ (or $1):
#   spdy<V>-<plain|tls>.pcap, spdy<V>-tls.keys, spdy<V>-<mode>.{client,server}.jsonl
# Needs: node (20), npm, tcpdump, openssl; run as root (tcpdump on lo).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/../../sample_captures/spdy}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$HERE"
[ -d node_modules/spdy ] || npm ci --no-audit --no-fund 2>/dev/null || npm install --no-audit --no-fund
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null

run() { # version mode port
  v=$1 mode=$2 port=$3
  name=spdy$v-$mode
  rm -f "$OUT/$name".*
  if [ "$mode" = tls ]; then
    node server.js --port "$port" --version "$v" --key "$TMP/key.pem" --cert "$TMP/cert.pem" --log "$OUT/$name.server.jsonl" >"$TMP/server.out" 2>&1 &
  else
    node server.js --port "$port" --version "$v" --log "$OUT/$name.server.jsonl" >"$TMP/server.out" 2>&1 &
  fi
  spid=$!
  sleep 1
  tcpdump -i lo -w "$OUT/$name.pcap" -U "tcp port $port" >/dev/null 2>&1 &
  tpid=$!
  sleep 1
  if [ "$mode" = tls ]; then
    node --tls-keylog="$OUT/$name.keys" client.js --port "$port" --version "$v" --tls 1 --log "$OUT/$name.client.jsonl" >"$TMP/client.out" 2>&1
  else
    node client.js --port "$port" --version "$v" --log "$OUT/$name.client.jsonl" >"$TMP/client.out" 2>&1
  fi
  sleep 1
  kill "$tpid"; wait "$tpid" 2>/dev/null || true
  kill "$spid"; wait "$spid" 2>/dev/null || true
  echo "$name: $(wc -l <"$OUT/$name.client.jsonl") client / $(wc -l <"$OUT/$name.server.jsonl") server header blocks"
  cat "$TMP/client.out"
}

run 2 plain 18320
run 3 plain 18330
run 3.1 plain 18331
run 2 tls 18420
run 3 tls 18430
run 3.1 tls 18431
echo "node $(node --version), spdy $(node -p "require('spdy/package.json').version"), spdy-transport $(node -p "require('spdy-transport/package.json').version"), $(tcpdump --version 2>&1 | head -1)"
