#!/usr/bin/env bash
# SecureRecords benchmark, one command: Benchmarks/records/run.sh
# Release build; 100,000 vault-keyed inserts vs raw SQLite, blind-index and FTS5 search over 1,000,000.
set -euo pipefail
cd "$(dirname "$0")"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
lock=(); command -v flock >/dev/null && lock=(flock /tmp/sf-build.lock)
"${lock[@]}" swift build -c release -j 2 --product RecordsBenchmark >&2
bin=$(swift build -c release --show-bin-path)/RecordsBenchmark
"$bin" "$scratch"
