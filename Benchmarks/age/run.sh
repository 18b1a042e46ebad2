#!/usr/bin/env bash
# sf encrypt/decrypt against age on a 1 GiB file, in one run: page cache → /dev/null and
# file → file, with hyperfine; CPU seconds on one core (taskset) and on all (cpu.py); then the peak
# resident memory of each (GNU time -v). The native
# stream (`sf seal --stream` / `sf open`, SFS1, under a key file from `sf random`) runs on the same
# file, to /dev/null, with both of its AEADs: both formats share SecureCore's STREAM engine.
# Usage (from the package root): Benchmarks/age/run.sh [size in MiB, default 1024]
set -euo pipefail
cd "$(dirname "$0")/../.."
size_mib="${1:-1024}"
for tool in hyperfine age age-keygen /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install hyperfine age time)" >&2; exit 1; }
done

flock /tmp/sf-build.lock swift build -j 2 -c release --product sf >&2
sf="$(swift build -c release --show-bin-path)/sf"

work="${BENCH_DIR:-$(mktemp -d /tmp/sf-age-bench.XXXXXX)}"
trap 'rm -rf "$work"' EXIT
head -c $((size_mib << 20)) /dev/urandom > "$work/plain"
age-keygen -o "$work/key" 2>/dev/null
recipient="$(age-keygen -y "$work/key")"
"$sf" encrypt -r "$recipient" -o "$work/sf.age" "$work/plain"
age -r "$recipient" -o "$work/age.age" "$work/plain"
"$sf" random > "$work/sfkey"
"$sf" seal --stream --key-file "$work/sfkey" -o "$work/gcm.sfs" "$work/plain"
"$sf" seal --stream --algorithm chacha20-poly1305 --key-file "$work/sfkey" -o "$work/chacha.sfs" "$work/plain"
cat "$work/plain" "$work/sf.age" "$work/age.age" "$work/gcm.sfs" "$work/chacha.sfs" > /dev/null   # warm the page cache

flock /tmp/sf-build.lock hyperfine --warmup 1 --runs "${RUNS:-5}" --export-markdown "$work/results.md" \
    -n "sf encrypt → /dev/null"  "$sf encrypt -r $recipient $work/plain > /dev/null" \
    -n "sf seal --stream → /dev/null" "$sf seal --stream --key-file $work/sfkey $work/plain > /dev/null" \
    -n "sf seal --stream chacha → /dev/null" "$sf seal --stream --algorithm chacha20-poly1305 --key-file $work/sfkey $work/plain > /dev/null" \
    -n "age encrypt → /dev/null" "age -r $recipient $work/plain > /dev/null" \
    -n "sf decrypt → /dev/null"  "$sf decrypt -i $work/key $work/age.age > /dev/null" \
    -n "sf open (SFS1 AES-GCM) → /dev/null" "$sf open --key-file $work/sfkey $work/gcm.sfs > /dev/null" \
    -n "sf open (SFS1 ChaCha) → /dev/null" "$sf open --key-file $work/sfkey $work/chacha.sfs > /dev/null" \
    -n "age decrypt → /dev/null" "age -d -i $work/key $work/age.age > /dev/null" \
    -n "sf encrypt file → file"  "$sf encrypt -r $recipient -o $work/out.age $work/plain" \
    -n "age encrypt file → file" "age -r $recipient -o $work/out.age $work/plain" \
    -n "sf decrypt file → file"  "$sf decrypt -i $work/key -o $work/out $work/age.age" \
    -n "age decrypt file → file" "age -d -i $work/key -o $work/out $work/age.age"
cat "$work/results.md"

# CPU per byte: the same page-cache → /dev/null runs on one core and on all, CPU seconds beside wall.
echo
for cores in --one-core ""; do
    flock /tmp/sf-build.lock python3 Benchmarks/age/cpu.py $cores "${RUNS:-5}" \
        "sf encrypt" "$sf encrypt -r $recipient $work/plain" \
        "sf encrypt, glibc memmove without rep movsb" \
        "env GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=4294967295 $sf encrypt -r $recipient $work/plain" \
        "age encrypt" "age -r $recipient $work/plain" \
        "sf decrypt" "$sf decrypt -i $work/key $work/age.age" \
        "age decrypt" "age -d -i $work/key $work/age.age"
    echo
done

echo
exec 9>/tmp/sf-build.lock && flock 9   # hold the build lock for the memory runs too
echo "| command | peak RSS (MiB) |"
echo "|---|---|"
peak() { /usr/bin/time -v "$@" 2>&1 >/dev/null | awk '/Maximum resident/ { printf "%.1f", $6 / 1024 }'; }
echo "| sf encrypt | $(peak "$sf" encrypt -r "$recipient" "$work/plain") |"
echo "| sf seal --stream | $(peak "$sf" seal --stream --key-file "$work/sfkey" "$work/plain") |"
echo "| sf seal --stream chacha | $(peak "$sf" seal --stream --algorithm chacha20-poly1305 --key-file "$work/sfkey" "$work/plain") |"
echo "| age encrypt | $(peak age -r "$recipient" "$work/plain") |"
echo "| sf decrypt | $(peak "$sf" decrypt -i "$work/key" "$work/age.age") |"
echo "| sf open (SFS1 AES-GCM) | $(peak "$sf" open --key-file "$work/sfkey" "$work/gcm.sfs") |"
echo "| sf open (SFS1 ChaCha) | $(peak "$sf" open --key-file "$work/sfkey" "$work/chacha.sfs") |"
echo "| age decrypt | $(peak age -d -i "$work/key" "$work/age.age") |"
