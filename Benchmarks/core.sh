#!/usr/bin/env bash
# SecureCore benchmarks next to their peers, in one run (issue: SecureCore benchmark targets).
#   Benchmarks/core.sh            from the repository root or from Benchmarks/
# Prints: ordo-one/benchmark results for Envelope seal/open (1 KiB, 64 KiB, 16 MiB) next to plain
# swift-crypto AES.GCM, and scrypt/PBKDF2 times; then `openssl speed -evp aes-256-gcm` and Python
# hashlib (OpenSSL) scrypt/PBKDF2 with the same parameters.
set -euo pipefail
cd "$(dirname "$0")"

echo "== SecureCore (release build, ordo-one/benchmark) =="
swift package --disable-sandbox benchmark --target CoreBenchmarks --no-progress --format markdown \
    --time-units milliseconds

echo
echo "(ordo-one throughput is operations/s: bytes/s = ops/s x message size, 16 MiB = 16,777,216 B)"
echo
echo "== SecureCore whole-process throughput, system allocator =="
swift build -c release --product Throughput >/dev/null
.build/release/Throughput
echo
echo "== Peer: openssl speed -evp aes-256-gcm (one core) =="
openssl speed -seconds 2 -bytes 16777216 -evp aes-256-gcm 2>/dev/null | tail -2
openssl speed -seconds 2 -bytes 65536 -evp aes-256-gcm 2>/dev/null | tail -1
openssl speed -seconds 2 -bytes 1024 -evp aes-256-gcm 2>/dev/null | tail -1

echo
echo "== Peer: Python hashlib (OpenSSL) =="
python3 - <<'PY'
import hashlib, time
def best(f, n=3):
    times = []
    for _ in range(n):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    return min(times) * 1000
for log_n in (17, 18):
    ms = best(lambda: hashlib.scrypt(b"password", salt=b"saltsaltsaltsalt", n=1 << log_n, r=8, p=1, maxmem=1 << 30, dklen=32))
    print(f"hashlib.scrypt logN {log_n} r 8 p 1: {ms:8.1f} ms")
ms = best(lambda: hashlib.pbkdf2_hmac("sha256", b"password", b"saltsaltsaltsalt", 600_000, 32))
print(f"hashlib.pbkdf2_hmac sha256 600k:   {ms:8.1f} ms")
PY
