#!/usr/bin/env bash
# SecureKeys benchmarks next to OpenSSL, in one run.
#   Benchmarks/keys.sh            from the repository root or from Benchmarks/
# Prints: ordo-one/benchmark results (release build; throughput = operations/s) for RSA-2048/3072
# sign/verify (PKCS#1 v1.5 and PSS), RSA-OAEP-SHA256 wrap/unwrap, P-256 ECDSA, Ed25519, X25519 and
# hybrid encrypt/decrypt (X25519 HPKE and RSA-2048) of 1 KiB and 1 MiB; then `openssl speed` for the
# same primitives (one core).
set -euo pipefail
cd "$(dirname "$0")"

echo "== SecureKeys (release build, ordo-one/benchmark; throughput column = ops/s) =="
swift package --disable-sandbox benchmark --target KeysBenchmarks --no-progress --format markdown \
    --time-units microseconds

echo
echo "== Peer: openssl speed (one core) =="
openssl speed -seconds 2 rsa2048 rsa3072 ecdsap256 ed25519 ecdhx25519 2>/dev/null | grep -E "sign|rsa|ecdsa|Ed25519|X25519|op/s"
echo "-- AEAD bulk rate behind hybrid 1 KiB / 1 MiB (bytes/s; divide by the size for messages/s) --"
openssl speed -seconds 2 -bytes 1024 -evp chacha20-poly1305 2>/dev/null | tail -1
openssl speed -seconds 2 -bytes 1048576 -evp chacha20-poly1305 2>/dev/null | tail -1
openssl speed -seconds 2 -bytes 1048576 -evp aes-256-gcm 2>/dev/null | tail -1
