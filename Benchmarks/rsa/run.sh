#!/usr/bin/env bash
# RSA as issue 20 measures it, in one run (usage: Benchmarks/rsa/run.sh [size in MiB, default 1024]):
#  1. RSA-2048 PSS verification of an OpenSSL-default signature (salt = max): SecureKeys' library
#     loop next to `openssl speed rsa2048` (verify/s), then a timed loop of whole commands,
#     `sf key verify` against `openssl dgst -verify` (process start-up included, as a user runs them);
#  2. age ssh-rsa decryption of a 1 GiB file next to the X25519 recipient, with sf and with age.
set -euo pipefail
cd "$(dirname "$0")"
size_mib="${1:-1024}"
for tool in hyperfine age age-keygen ssh-keygen openssl; do
    command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install hyperfine age openssh-client openssl)" >&2; exit 1; }
done
lock=(); command -v flock >/dev/null && lock=(flock /tmp/sf-build.lock)
"${lock[@]}" swift build -c release -j 2 --product RSABenchmark >&2
bench="$(swift build -c release --show-bin-path)/RSABenchmark"
(cd ../.. && "${lock[@]}" swift build -c release -j 2 --product sf >&2)
sf="$(cd ../.. && swift build -c release --show-bin-path)/sf"

work=$(mktemp -d /tmp/sf-rsa-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/k.pem" 2>/dev/null
openssl pkey -in "$work/k.pem" -pubout -out "$work/k.pub"
head -c 1024 /dev/urandom > "$work/msg"
openssl dgst -sha256 -sign "$work/k.pem" -sigopt rsa_padding_mode:pss -out "$work/sig" "$work/msg"

echo "== RSA-2048 PSS verify (OpenSSL's default salt length), one core =="
taskset -c 1 "$bench" "$work/k.pub" "$work/sig" "$work/msg" rsa-pss-sha256 "${SECONDS_PER_RUN:-3}"
taskset -c 1 openssl speed -seconds "${SECONDS_PER_RUN:-3}" rsa2048 2>/dev/null | grep -E "^rsa +2048|sign/s|verify/s" | tail -2

runs=${VERIFY_RUNS:-300}
echo "== $runs whole commands each (process start-up included) =="
time_loop() {
    local start end
    start=$(date +%s.%N)
    for _ in $(seq "$runs"); do "$@" >/dev/null 2>&1; done
    end=$(date +%s.%N)
    awk -v s="$start" -v e="$end" -v n="$runs" -v name="$1" 'BEGIN { printf "%-10s %.1f verifications/s (%.2f ms each)\n", name, n / (e - s), (e - s) * 1000 / n }'
}
time_loop "$sf" key verify --key "$work/k.pub" --signature "$work/sig" "$work/msg"
time_loop openssl dgst -sha256 -verify "$work/k.pub" -sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:auto \
    -signature "$work/sig" "$work/msg"

echo "== age ssh-rsa against X25519: decrypting ${size_mib} MiB, page cache → /dev/null =="
head -c $((size_mib << 20)) /dev/urandom > "$work/plain"
ssh-keygen -q -t rsa -b 2048 -N "" -f "$work/id_rsa"
age-keygen -o "$work/x.key" 2>/dev/null
"$sf" encrypt -R "$work/id_rsa.pub" -o "$work/rsa.age" "$work/plain"
"$sf" encrypt -i "$work/x.key" -o "$work/x.age" "$work/plain"
cat "$work/plain" "$work/rsa.age" "$work/x.age" > /dev/null
"${lock[@]}" hyperfine --warmup 1 --runs "${RUNS:-5}" \
    -n "sf decrypt ssh-rsa" "$sf decrypt -i $work/id_rsa $work/rsa.age > /dev/null" \
    -n "sf decrypt X25519" "$sf decrypt -i $work/x.key $work/x.age > /dev/null" \
    -n "age decrypt ssh-rsa" "age -d -i $work/id_rsa $work/rsa.age > /dev/null" \
    -n "age decrypt X25519" "age -d -i $work/x.key $work/x.age > /dev/null"
echo "targets: library verify >= 0.8x openssl's verify/s; ssh-rsa decrypt within 5% of X25519"
