#!/usr/bin/env bash
# CI: builds the fuzz targets and runs each briefly (FUZZ_SECONDS, default 10), failing on any crash.
# The build is the slow part (measured: see README.md); the runs take one FUZZ_SECONDS per target (18 targets).
set -uo pipefail
source "$(dirname "$0")/common.sh"
start=$(date +%s)
fuzz_build || { echo "fuzz build failed" >&2; exit 1; }
echo "fuzz build: $(( $(date +%s) - start )) s"
failed=0
for target in "${TARGETS[@]}"; do fuzz_run "$target" "${FUZZ_SECONDS:-10}" || failed=1; done
echo "fuzz total: $(( $(date +%s) - start )) s"
exit $failed
