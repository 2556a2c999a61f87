#!/usr/bin/env python3
"""HTTP/1.1 pipelining from a raw socket (curl dropped pipelining): sends several requests
in one write, reads until the server closes, prints the status lines it got.
Usage: pipeline_client.py HOST PORT PATH [PATH...]   (the last request says Connection: close)"""
import socket
import sys

host, port, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
reqs = []
for i, p in enumerate(paths):
    method = "HEAD" if p.startswith("HEAD:") else "GET"
    p = p.split(":", 1)[1] if method == "HEAD" else p
    close = "Connection: close\r\n" if i == len(paths) - 1 else ""
    reqs.append(f"{method} {p} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: wirefall-pipeline/1\r\nAccept-Encoding: gzip\r\n{close}\r\n")
s = socket.create_connection((host, port))
s.sendall("".join(reqs).encode())
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
s.close()
for line in data.split(b"\r\n"):
    if line.startswith(b"HTTP/1."):
        print(line.decode())
