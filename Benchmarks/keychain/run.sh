#!/usr/bin/env bash
# SecureKeychain benchmark, one command: Benchmarks/keychain/run.sh
# Release build; 100,000-item figures for SecureKeychain and raw SQLite, then Python keyring with the
# keyrings.cryptfile backend (installed from PyPI here) timed over a few hundred operations.
set -euo pipefail
cd "$(dirname "$0")"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Builds share the machine: take the team's build lock when flock is available.
lock=(); command -v flock >/dev/null && lock=(flock /tmp/sf-build.lock)
"${lock[@]}" swift build -c release -j 2 --product KeychainBenchmark >&2
bin=$(swift build -c release --show-bin-path)/KeychainBenchmark

"$bin" run "$scratch" | tee "$scratch/swift.txt"
# Opening and reading in a fresh process, so its peak memory is the keychain's alone.
for round in 1 2 3; do
    "$bin" open-read "$scratch/bench-keychain.db" | sed "s/^/keychain (100,000 items, fresh process, round $round): /"
done
echo "targets: open <= 200 ms, >= 500,000 reads/s, peak memory <= 64 MiB"

python3 -c 'import keyring, keyrings.cryptfile' 2>/dev/null || python3 -m pip install -q keyring keyrings.cryptfile >&2
per_op_us=$(sed -n 's/.*(\([0-9.]*\) µs\/op.*/\1/p' "$scratch/swift.txt")
OPS=${KEYRING_OPS:-200} SCRATCH="$scratch" PER_OP_US="$per_op_us" python3 - <<'PY'
import os, time
from keyrings.cryptfile.cryptfile import CryptFileKeyring
ring = CryptFileKeyring()
ring.file_path = os.path.join(os.environ["SCRATCH"], "cryptfile.cfg")
ring.keyring_key = "benchmark passphrase"
ops = int(os.environ["OPS"])
start = time.perf_counter()
for i in range(ops // 2):
    ring.set_password(f"service-{i % 100}", f"account-{i}@example.com", f"password-{i}-" + "x" * 16)
for i in range(ops // 2):
    assert ring.get_password(f"service-{i % 100}", f"account-{i}@example.com") == f"password-{i}-" + "x" * 16
elapsed = time.perf_counter() - start
per_op_us = elapsed / ops * 1e6
ours = float(os.environ["PER_OP_US"])
print(f"python keyring + keyrings.cryptfile: {ops} ops ({ops // 2} set + {ops // 2} get) in {elapsed:.2f} s "
      f"({ops / elapsed:.1f} ops/s, {per_op_us:.0f} µs/op); SecureKeychain coalesced write is {per_op_us / ours:.0f}x faster per op")
PY
