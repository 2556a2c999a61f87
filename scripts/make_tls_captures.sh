#!/usr/bin/env bash
# Regenerate sample_captures/tls/: small TLS captures made on loopback by real tools
# (openssl s_server/s_client, curl, nghttp/nghttpd), each with the key log the client wrote.
#   scripts/make_tls_captures.sh [OUTDIR]        (needs root for tcpdump on lo)
#   ONLY="tls12_npn tls13_hrr" scripts/make_tls_captures.sh   # remake only these
# One capture per cipher family / feature; every file is NAME.pcap + NAME.keys.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/sample_captures/tls}
mkdir -p "$OUT"
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

cd "$WORK"
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 3650 \
    -subj "/CN=wirefall.test/O=wirefall" >/dev/null 2>&1
mkdir -p www
# 25 KB body: two TLS records or more per response; on loopback records share and cross TCP segments
python3 -c "import sys; sys.stdout.write(''.join('line %05d of the wirefall TLS sample body\n' % i for i in range(600)))" > www/body.txt
printf 'early data GET\n' > early.txt

PORT=24430
SRV=(-cert cert.pem -key key.pem -quiet)

want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

start_capture() {  # name port
    tcpdump -i lo -w "$OUT/$1.pcap" -U -s 0 "tcp port $2" >/dev/null 2>&1 &
    TCPDUMP=$!
    PIDS+=("$TCPDUMP")
    sleep 1
}

stop_capture() {
    sleep 0.5
    kill "$TCPDUMP" 2>/dev/null || true
    wait "$TCPDUMP" 2>/dev/null || true
}


# GET over openssl s_client from s_server -WWW.  $1 name, $2 server args, $3 client args
www_get() {
    local name=$1 sargs=$2 cargs=$3
    PORT=$((PORT + 1))
    want "$name" || return 0
    rm -f "$OUT/$name.keys"
    start_capture "$name" "$PORT"
    (cd www && exec openssl s_server -accept "$PORT" -WWW -naccept 1 -cert ../cert.pem -key ../key.pem -quiet $sargs) >/dev/null 2>&1 &
    local spid=$!
    PIDS+=("$spid")
    sleep 0.5
    (printf 'GET /body.txt HTTP/1.0\r\n\r\n'; sleep 1) | \
        openssl s_client -connect 127.0.0.1:"$PORT" -servername wirefall.test -keylogfile "$OUT/$name.keys" $cargs >/dev/null 2>&1 || true
    wait "$spid" 2>/dev/null || true
    stop_capture
    echo "$name: $(stat -c %s "$OUT/$name.pcap") bytes"
}

# TLS 1.3, one capture per suite
www_get tls13_aes128gcm   "-ciphersuites TLS_AES_128_GCM_SHA256"       "-tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256"
www_get tls13_aes256gcm   "-ciphersuites TLS_AES_256_GCM_SHA384"       "-tls1_3 -ciphersuites TLS_AES_256_GCM_SHA384"
www_get tls13_chacha20    "-ciphersuites TLS_CHACHA20_POLY1305_SHA256" "-tls1_3 -ciphersuites TLS_CHACHA20_POLY1305_SHA256"
www_get tls13_aes128ccm   "-ciphersuites TLS_AES_128_CCM_SHA256"       "-tls1_3 -ciphersuites TLS_AES_128_CCM_SHA256"
www_get tls13_aes128ccm8  "-ciphersuites TLS_AES_128_CCM_8_SHA256"     "-tls1_3 -ciphersuites TLS_AES_128_CCM_8_SHA256"
# HelloRetryRequest: the client's only key share (X25519) is not a group the server accepts
www_get tls13_hrr         "-groups P-256"                               "-tls1_3 -groups X25519:P-256"

# TLS 1.2, one capture per cipher family; CBC with and without encrypt-then-MAC
www_get tls12_aes128gcm   "" "-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256"
www_get tls12_aes256gcm   "" "-tls1_2 -cipher ECDHE-RSA-AES256-GCM-SHA384"
www_get tls12_chacha20    "" "-tls1_2 -cipher ECDHE-RSA-CHACHA20-POLY1305"
www_get tls12_aes128ccm   "-cipher ALL" "-tls1_2 -cipher AES128-CCM"
www_get tls12_cbc_sha1_etm    "" "-tls1_2 -cipher ECDHE-RSA-AES128-SHA"
www_get tls12_cbc_sha1_noetm  "" "-tls1_2 -cipher ECDHE-RSA-AES128-SHA -no_etm"
www_get tls12_cbc_sha256_noetm "" "-tls1_2 -cipher AES256-SHA256 -no_etm"
www_get tls12_cbc_sha384_etm  "" "-tls1_2 -cipher ECDHE-RSA-AES256-SHA384"
# TLS 1.0 (implicit CBC IVs, MD5/SHA-1 PRF) and TLS 1.1 (explicit IVs)
www_get tls10_cbc_sha1    "-cipher DEFAULT:@SECLEVEL=0" "-tls1 -cipher ECDHE-RSA-AES256-SHA:@SECLEVEL=0"
www_get tls11_cbc_sha1    "-cipher DEFAULT:@SECLEVEL=0" "-tls1_1 -cipher AES128-SHA:@SECLEVEL=0"

# TLS 1.2 without the extended master secret (OpenSSL 3.0 has no command-line switch for it;
# its SSL_CONF "Options = -ExtendedMasterSecret" sets SSL_OP_NO_EXTENDED_MASTER_SECRET)
cat > noems.cnf <<'EOF'
openssl_conf = default_conf
[default_conf]
ssl_conf = ssl_sect
[ssl_sect]
system_default = system_default_sect
[system_default_sect]
Options = -ExtendedMasterSecret
EOF
OPENSSL_CONF=$WORK/noems.cnf www_get tls12_noems "" "-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256"

# Resumption.  s_client -reconnect: 1 full + 5 abbreviated handshakes by session id.
resume_reconnect() {  # name server-args client-args
    local name=$1
    PORT=$((PORT + 1))
    want "$name" || return 0
    rm -f "$OUT/$name.keys"
    start_capture "$name" "$PORT"
    openssl s_server -accept "$PORT" -www -naccept 6 "${SRV[@]}" $2 >/dev/null 2>&1 &
    local spid=$!
    PIDS+=("$spid")
    sleep 0.5
    (printf 'GET / HTTP/1.0\r\n\r\n'; sleep 1) | \
        openssl s_client -connect 127.0.0.1:"$PORT" -reconnect -keylogfile "$OUT/$name.keys" $3 >/dev/null 2>&1 || true
    wait "$spid" 2>/dev/null || true
    stop_capture
    echo "$name: $(stat -c %s "$OUT/$name.pcap") bytes"
}
resume_reconnect tls12_resumed_sessionid "-no_ticket" "-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256"

# Two connections: a full handshake that saves the session, then one that resumes it
# (TLS 1.2 session ticket; TLS 1.3 PSK; TLS 1.3 PSK with 0-RTT early data).
resume_two() {  # name server-args client1-args client2-args
    local name=$1
    PORT=$((PORT + 1))
    want "$name" || return 0
    rm -f "$OUT/$name.keys" sess.pem
    start_capture "$name" "$PORT"
    (cd www && exec openssl s_server -accept "$PORT" -WWW -naccept 2 -cert ../cert.pem -key ../key.pem -quiet $2) >/dev/null 2>&1 &
    local spid=$!
    PIDS+=("$spid")
    sleep 0.5
    (printf 'GET /body.txt HTTP/1.0\r\n\r\n'; sleep 1) | \
        openssl s_client -connect 127.0.0.1:"$PORT" -keylogfile "$OUT/$name.keys" -sess_out sess.pem $3 >/dev/null 2>&1 || true
    sleep 0.3
    (printf 'GET /body.txt HTTP/1.0\r\n\r\n'; sleep 1) | \
        openssl s_client -connect 127.0.0.1:"$PORT" -keylogfile "$OUT/$name.keys" -sess_in sess.pem $4 >/dev/null 2>&1 || true
    wait "$spid" 2>/dev/null || true
    stop_capture
    echo "$name: $(stat -c %s "$OUT/$name.pcap") bytes"
}
resume_two tls12_resumed_ticket "" "-tls1_2 -cipher ECDHE-RSA-AES256-GCM-SHA384" "-tls1_2 -cipher ECDHE-RSA-AES256-GCM-SHA384"
resume_two tls13_resumed "" "-tls1_3" "-tls1_3"

# 0-RTT: s_server refuses -early_data with -WWW/-rev, so it runs in its plain mode (prints
# what it receives; its stdin stays open and silent), the client sends one line each time.
PORT=$((PORT + 1))
name=tls13_0rtt
if want "$name"; then
rm -f "$OUT/$name.keys" sess.pem
start_capture "$name" "$PORT"
sleep 6 | openssl s_server -accept "$PORT" -naccept 2 "${SRV[@]}" -early_data >/dev/null 2>&1 &
spid=$!
PIDS+=("$spid")
sleep 0.5
(printf 'first connection\n'; sleep 1) | \
    openssl s_client -connect 127.0.0.1:"$PORT" -tls1_3 -keylogfile "$OUT/$name.keys" -sess_out sess.pem >/dev/null 2>&1 || true
sleep 0.3
(printf 'after the early data\n'; sleep 1) | \
    openssl s_client -connect 127.0.0.1:"$PORT" -tls1_3 -keylogfile "$OUT/$name.keys" -sess_in sess.pem -early_data "$WORK/early.txt" >/dev/null 2>&1 || true
wait "$spid" 2>/dev/null || true
stop_capture
echo "$name: $(stat -c %s "$OUT/$name.pcap") bytes"
fi

# KeyUpdate: s_client's interactive commands "k" (update) and "K" (update, request the peer's)
# against s_server -rev (echoes each line reversed), so both directions change keys.
PORT=$((PORT + 1))
name=tls13_keyupdate
if want "$name"; then
rm -f "$OUT/$name.keys"
start_capture "$name" "$PORT"
openssl s_server -accept "$PORT" -rev -naccept 1 "${SRV[@]}" >/dev/null 2>&1 &
spid=$!
PIDS+=("$spid")
sleep 0.5
(printf 'before any key update\n'; sleep 0.3; printf 'k\n'; sleep 0.3; printf 'after the client key update\n'; sleep 0.3
 printf 'K\n'; sleep 0.3; printf 'after both updated\n'; sleep 0.3; printf 'k\n'; sleep 0.3; printf 'third generation\n'; sleep 0.5) | \
    openssl s_client -connect 127.0.0.1:"$PORT" -tls1_3 -keylogfile "$OUT/$name.keys" >/dev/null 2>&1 || true
wait "$spid" 2>/dev/null || true
stop_capture
echo "$name: $(stat -c %s "$OUT/$name.pcap") bytes"
fi

# curl (HTTP/1.1 ALPN, SSLKEYLOGFILE) against s_server -WWW, and curl --http2 against nghttpd (h2
# ALPN; nghttp 1.52 itself writes no key log)
PORT=$((PORT + 1))
name=curl_http11
if want "$name"; then
rm -f "$OUT/$name.keys"
start_capture "$name" "$PORT"
(cd www && exec openssl s_server -accept "$PORT" -WWW -naccept 1 -alpn http/1.1 -cert ../cert.pem -key ../key.pem -quiet) >/dev/null 2>&1 &
spid=$!
PIDS+=("$spid")
sleep 0.5
SSLKEYLOGFILE=$OUT/$name.keys curl -sk --http1.1 -o /dev/null https://127.0.0.1:"$PORT"/body.txt || true
wait "$spid" 2>/dev/null || true
stop_capture
echo "$name: $(stat -c %s "$OUT/$name.pcap") bytes"
fi

PORT=$((PORT + 1))
name=curl_h2_nghttpd
if want "$name"; then
rm -f "$OUT/$name.keys"
start_capture "$name" "$PORT"
nghttpd -d www "$PORT" key.pem cert.pem </dev/null >/dev/null 2>&1 &
spid=$!
PIDS+=("$spid")
sleep 1  # (no probe connection: it would end up in the capture)
SSLKEYLOGFILE=$OUT/$name.keys curl -sk --http2 -o /dev/null https://127.0.0.1:"$PORT"/body.txt || true
sleep 0.5
kill "$spid" 2>/dev/null || true
wait "$spid" 2>/dev/null || true
stop_capture
echo "$name: $(stat -c %s "$OUT/$name.pcap") bytes"
fi

# TLS 1.2 protocol negotiation seen in the clear (ALPN in the ServerHello) and NPN (the
# client's choice travels in the encrypted NextProtocol handshake message)
www_get tls12_alpn "-alpn http/1.1" "-tls1_2 -alpn http/1.1"
www_get tls12_npn  "-nextprotoneg http/1.1" "-tls1_2 -nextprotoneg http/1.1"
