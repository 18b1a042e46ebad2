#!/usr/bin/env bash
# ServiceDiscovery codec throughput, one command: Benchmarks/discovery/run.sh
# Release build; messages parsed/serialized per second by our codec, then python-zeroconf's
# DNSIncoming parsing the same announcement bytes in the same run (installed from PyPI if missing).
set -euo pipefail
cd "$(dirname "$0")"
lock=(); command -v flock >/dev/null && lock=(flock /tmp/sf-build.lock)
"${lock[@]}" swift build -c release -j 2 --product DiscoveryBenchmark >&2
bin=$(swift build -c release --show-bin-path)/DiscoveryBenchmark
out=$("$bin")
echo "$out" | grep -v '^ANNOUNCEMENT_HEX='
hex=$(echo "$out" | sed -n 's/^ANNOUNCEMENT_HEX=//p')
python3 -c 'import zeroconf' 2>/dev/null || python3 -m pip install -q zeroconf >&2
HEX="$hex" python3 - <<'PY'
import os, statistics, time
from zeroconf import DNSIncoming
data = bytes.fromhex(os.environ["HEX"])
assert len(DNSIncoming(data).answers()) == 6
rates = []
for _ in range(5):
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < 0.5:
        for _ in range(100):
            DNSIncoming(data).answers()
        n += 100
    rates.append(n / (time.perf_counter() - start))
print(f"python-zeroconf {__import__('zeroconf').__version__} parse announcement: {int(statistics.median(rates))} messages/s")
PY
