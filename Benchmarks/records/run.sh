#!/usr/bin/env bash
# SecureRecords benchmark, one command: Benchmarks/records/run.sh
# Release build; 100,000 vault-keyed inserts vs raw SQLite, blind-index and FTS5 search over 1,000,000;
# then the same insert on PostgreSQL (a throw-away cluster started here with
# scripts/postgres-test-cluster.sh) next to COPY through psql, and blind-index search over 1,000,000 there.
# RECORDS_BENCH_POSTGRES_ONLY=1 runs the PostgreSQL part alone; NO_POSTGRES=1 skips it.
set -euo pipefail
cd "$(dirname "$0")"
scratch=$(mktemp -d)
pg_dir=$(mktemp -u /tmp/sf-bench-postgres.XXXXXX)
trap '../../scripts/postgres-test-cluster.sh stop "$pg_dir"; rm -rf "$scratch"' EXIT
lock=(); command -v flock >/dev/null && lock=(flock /tmp/sf-build.lock)
"${lock[@]}" swift build -c release -j 2 --product RecordsBenchmark >&2
bin=$(swift build -c release --show-bin-path)/RecordsBenchmark
if [ -z "${NO_POSTGRES:-}" ]; then
    RECORDS_BENCH_POSTGRES_URL=$(../../scripts/postgres-test-cluster.sh start "$pg_dir")
    export RECORDS_BENCH_POSTGRES_URL RECORDS_BENCH_POSTGRES_PASSWORD_FILE="$pg_dir/password"
fi
"$bin" "$scratch"
