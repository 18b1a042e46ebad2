#!/usr/bin/env bash
# Builds the fuzz targets (under the build lock) and runs each for SECONDS_PER_TARGET (default 60)
# over its corpus, one libFuzzer process at a time. Prints executions, coverage (cov/ft) and crashes
# per target; crashing inputs land in Fuzz/.build/artifacts/<target>/. Exit status 1 if any crashed.
# FUZZ_RUNS=N also stops each target after N executions.
# Usage: Fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]
set -uo pipefail
source "$(dirname "$0")/common.sh"
seconds=${1:-60}; shift || true
[ $# -gt 0 ] && TARGETS=("$@")
fuzz_build || exit 1
[ "$seconds" -gt 0 ] || exit 0
failed=0
for target in "${TARGETS[@]}"; do fuzz_run "$target" "$seconds" || failed=1; done
exit $failed
