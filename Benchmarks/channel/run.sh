#!/usr/bin/env bash
# SecureChannel benchmark, one command: Benchmarks/channel/run.sh
# Release build, then in one run on 127.0.0.1: XX handshakes/s (next to Python noiseprotocol
# in-process and openssl s_time TLS 1.3); the single-core seal/open ceiling of swift-crypto (and
# openssl speed) for both Noise ciphers; 1 GiB through one channel with ChaChaPoly and with AESGCM
# (next to openssl s_server/s_client TLS 1.3); memory per idle connection with 1,000 held open; and
# the share of honest clients served while 1,000 idle sockets (re-opened as soon as they are
# closed) or 70 idle sockets (re-opened every 9 s) hold the server's handshake slots; and 1 GiB
# through `sf channel` between pipes next to openssl s_client/s_server (pipes.py).
# Builds AND measurements run under the team's build lock, so no build shares the two cores.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")"
if [[ -z "${SF_CHANNEL_BENCH_LOCKED:-}" ]] && command -v flock >/dev/null; then
    export SF_CHANNEL_BENCH_LOCKED=1
    exec flock /tmp/sf-build.lock "$self" "$@"
fi
SECONDS_PER_RUN=${SECONDS_PER_RUN:-3}
scratch=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$scratch"; }
trap cleanup EXIT

swift build -c release -j 2 --product ChannelBenchmark >&2
bin=$(swift build -c release --show-bin-path)/ChannelBenchmark
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_listening() {  # bounded: at most 5 s; looks at the listening sockets without connecting
    for _ in $(seq 50); do ss -Hltn "sport = :$1" | grep -q . && return 0; sleep 0.1; done
    echo "server on port $1 did not start" >&2; return 1
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost -days 1 \
    -keyout "$scratch/key.pem" -out "$scratch/cert.pem" 2>/dev/null
tls_server=(openssl s_server -cert "$scratch/cert.pem" -key "$scratch/key.pem" -tls1_3 -groups X25519 -quiet)

echo "== 1. handshakes (target >= 1,500/s)"
"$bin" handshakes "$SECONDS_PER_RUN"
python3 -c 'import noise' 2>/dev/null || python3 -m pip install -q noiseprotocol >&2
SECONDS_PER_RUN=$SECONDS_PER_RUN python3 - <<'PY'
import os, time
from noise.connection import NoiseConnection, Keypair
from cryptography.hazmat.primitives.asymmetric import x25519
from cryptography.hazmat.primitives import serialization
def raw(k): return k.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
ik, rk = raw(x25519.X25519PrivateKey.generate()), raw(x25519.X25519PrivateKey.generate())
name = b"Noise_XX_25519_ChaChaPoly_SHA256"
def one():
    i, r = NoiseConnection.from_name(name), NoiseConnection.from_name(name)
    i.set_as_initiator(); r.set_as_responder()
    i.set_keypair_from_private_bytes(Keypair.STATIC, ik); r.set_keypair_from_private_bytes(Keypair.STATIC, rk)
    i.set_prologue(b"SecureChannel/2"); r.set_prologue(b"SecureChannel/2")
    i.start_handshake(); r.start_handshake()
    r.read_message(i.write_message()); i.read_message(r.write_message()); r.read_message(i.write_message())
    assert i.handshake_finished and r.handshake_finished and i.get_handshake_hash() == r.get_handshake_hash()
seconds, n, start = float(os.environ["SECONDS_PER_RUN"]), 0, time.perf_counter()
while time.perf_counter() - start < seconds and n < 100000:
    one(); n += 1
e = time.perf_counter() - start
print(f"python noiseprotocol XX, initiator and responder in one thread, no network (its upper bound): {n} in {e:.2f} s = {n/e:.0f} handshakes/s")
PY
port=$(free_port)
"${tls_server[@]}" -accept "127.0.0.1:$port" >/dev/null 2>&1 </dev/null & pids+=($!)
wait_listening "$port"
start=$(date +%s.%N)
out=$(openssl s_time -connect "127.0.0.1:$port" -new -tls1_3 -time "$SECONDS_PER_RUN" 2>&1 </dev/null)
end=$(date +%s.%N)
n=$(echo "$out" | sed -n 's/^\([0-9]*\) connections in [0-9.]*s;.*/\1/p')
user=$(echo "$out" | sed -n 's/.*connections in [0-9.]*s; \([0-9.]*\) connections\/user sec.*/\1/p')
python3 -c "import sys; n=int(sys.argv[1]); s=float(sys.argv[3])-float(sys.argv[2]); print(f'openssl s_time -new -tls1_3 against s_server (P-256 cert, X25519, one connection at a time, TCP connect + handshake + close): {n} in {s:.2f} s wall = {n/s:.0f} handshakes/s ({sys.argv[4]} per s_time user-CPU second)')" "$n" "$start" "$end" "$user"
kill "${pids[-1]}" 2>/dev/null || true

echo "== 2. bulk 1 GiB through one connection (target >= 1 GB/s)"
"$bin" ceiling
for cipher in chacha20-poly1305 aes-256-gcm; do
    openssl speed -evp "$cipher" -bytes 65536 -seconds 1 2>/dev/null | awk -v c="$cipher" 'tolower($1) == c { v = $NF; sub(/k$/, "", v); printf "openssl speed -evp %s, 64 KiB blocks, one thread: %.2f GB/s\n", c, v * 1000 / 1e9 }'
done
"$bin" bulk Noise_XX_25519_ChaChaPoly_SHA256
"$bin" bulk Noise_XX_25519_AESGCM_SHA256
port=$(free_port)
# s_server closes the connection when its stdin ends, so its stdin is a bounded sleep; it exits
# after this one connection, when it has read everything, and wc then prints the byte count.
(sleep 120 | "${tls_server[@]}" -accept "127.0.0.1:$port" -naccept 1 2>/dev/null | wc -c >"$scratch/received") & pids+=($!)
wait_listening "$port"
start=$(date +%s.%N)
head -c 1073741824 /dev/zero | timeout 60 openssl s_client -connect "127.0.0.1:$port" -tls1_3 -quiet -no_ign_eof >/dev/null 2>&1 || true
for _ in $(seq 3000); do [[ -s "$scratch/received" ]] && break; sleep 0.01; done
end=$(date +%s.%N)
echo "openssl s_server received $(cat "$scratch/received") bytes"
python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); print(f'openssl s_client -> s_server TLS 1.3 (AES-256-GCM, head -c 1GiB /dev/zero piped in; until the server exits): 1.000 GiB in {s:.2f} s = {2**30/s/1e9:.2f} GB/s ({1/s:.2f} GiB/s)')" "$start" "$end"

echo "== 3. memory per idle connection (target <= 64 KiB)"
"$bin" idle 1000

echo "== 4. honest clients served during idle-socket floods (target >= 95%)"
"$bin" flood 1000 0
"$bin" flood 70 9

echo "== 5. sf channel through pipes, next to openssl (target: >= openssl's throughput, <= its CPU-seconds)"
(cd ../.. && swift build -c release -j 2 --product sf >&2)
sf=$(cd ../.. && swift build -c release --show-bin-path)/sf
printf 'benchmark passphrase\n' >"$scratch/passphrase"
for who in alice bob; do
    "$sf" key generate --type x25519 --tag "$who" --keychain "$scratch/$who.db" --key-passphrase-file "$scratch/passphrase" >/dev/null
    "$sf" key export --tag "$who" --keychain "$scratch/$who.db" --format spki-pem -o "$scratch/$who.pub"
done
# Each partner key is imported authenticated (sealed with the passphrase that unlocks the key
# store): a partner key stored without it is refused wherever a passphrase is given.
"$sf" key import --tag bob --keychain "$scratch/alice.db" --key-passphrase-file "$scratch/passphrase" "$scratch/bob.pub" >/dev/null
"$sf" key import --tag alice --keychain "$scratch/bob.db" --key-passphrase-file "$scratch/passphrase" "$scratch/alice.pub" >/dev/null
python3 pipes.py "$sf" "$scratch" $((1 << 30)) 3
