#!/usr/bin/env bash
# The README's test command on a busy machine: runs the whole suite RUNS times (default 3) while
# `stress-ng --cpu 4` keeps every core busy, against a throw-away PostgreSQL cluster as CI does,
# and prints each run's duration and result. Exits 1 if any run failed. Build first
# (`swift build -j 2 --build-tests -Xcc -O2`, as the README's test command builds); logs go to /tmp/sf-busy-run-N.log.
# Usage: scripts/busy-machine-test.sh [RUNS] [STRESSORS]
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3} stressors=${2:-4}
command -v stress-ng >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng; }
pg_dir=$(mktemp -u /tmp/sf-busy-postgres.XXXXXX)
SF_TEST_POSTGRES_URL=$(scripts/postgres-test-cluster.sh start "$pg_dir") || exit 1
export SF_TEST_POSTGRES_URL SF_TEST_POSTGRES_PASSWORD_FILE="$pg_dir/password" SF_TEST_POSTGRES_CA_FILE="$pg_dir/ca.pem"
stress-ng --cpu "$stressors" --quiet &
stress=$!
trap 'kill $stress 2>/dev/null; wait $stress 2>/dev/null; scripts/postgres-test-cluster.sh stop "$pg_dir"' EXIT
failed=0
for run in $(seq 1 "$runs"); do
    start=$(date +%s)
    CI=true swift test --disable-xctest -Xcc -O2 --skip-build > "/tmp/sf-busy-run-$run.log" 2>&1
    status=$?
    summary=$(grep -E "^✔ Test run|^✘ Test run" "/tmp/sf-busy-run-$run.log" | tail -1)
    echo "run $run: exit $status in $(( $(date +%s) - start )) s, load $(cut -d' ' -f1 /proc/loadavg): $summary"
    [ "$status" -eq 0 ] || { failed=1; grep -E "^✘" "/tmp/sf-busy-run-$run.log" | head -20; }
done
exit $failed
