# Shared by run.sh and ci.sh: the fuzz build and one libFuzzer run. Sourced, not run.
FUZZ_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TARGETS=(FuzzAgeDecrypt FuzzAgeArmor FuzzAgeKeys FuzzEnvelope FuzzStreamEnvelope FuzzVault FuzzHybrid
    FuzzHeimdall FuzzKeyImport FuzzSignatures FuzzRSAPadding FuzzDNS FuzzNoise FuzzChannelFrames FuzzRecords FuzzFullTextQuery
    FuzzLegacyIMAS FuzzLegacyKeychain)
# -sanitize=fuzzer,address instruments the Swift code (ours, swift-crypto's Swift, swift-asn1);
# BoringSSL's C is not instrumented. lld, because gold fails on these binaries (internal error in
# format_file_lineno). Under the shared build lock, with -j 2, like every build on this machine.
# FUZZ_CONFIG=release builds with -O (BoringSSL's C too), for long runs of targets whose cost is the
# C curve arithmetic (FuzzNoise, FuzzChannelFrames); CI keeps the debug build.
FUZZ_CONFIG=${FUZZ_CONFIG:-debug}
FUZZ_BUILD_FLAGS=(-c "$FUZZ_CONFIG" -j 2 -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld)

fuzz_build() {
    (cd "$FUZZ_DIR" && flock /tmp/sf-build.lock swift build "${FUZZ_BUILD_FLAGS[@]}" 2>&1 |
        grep -v "Cannot export local symbol" | tail -n 5)
    BIN=$(cd "$FUZZ_DIR" && swift build -c "$FUZZ_CONFIG" --show-bin-path)
}

# fuzz_run TARGET SECONDS: runs TARGET over its committed corpus (read-only) plus a work corpus in
# .build/corpus, for SECONDS; prints one summary line; returns 1 on a crash, leak-free timeout or OOM.
fuzz_run() {
    local target=$1 seconds=$2 work="$FUZZ_DIR/.build/corpus/$1" artifacts="$FUZZ_DIR/.build/artifacts/$1"
    local log="$FUZZ_DIR/.build/logs/$1.log"
    mkdir -p "$work" "$artifacts" "$(dirname "$log")"
    local seeds=("$FUZZ_DIR/Corpus/$target")
    [ -d "$FUZZ_DIR/Regressions/$target" ] && seeds+=("$FUZZ_DIR/Regressions/$target")
    # Leak checking is off: Swift's runtime caches read as leaks at exit; ASan still catches memory errors.
    ASAN_OPTIONS=detect_leaks=0 "$BIN/$target" -max_total_time="$seconds" ${FUZZ_RUNS:+-runs=$FUZZ_RUNS} -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" "${seeds[@]}" >"$log" 2>&1
    local status=$?
    local runs speed cov ft crashes
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    crashes=$(find "$artifacts" -type f 2>/dev/null | wc -l)
    printf '%-20s execs %10s  exec/s %6s  cov %5s  ft %6s  crashes %s\n' "$target" "${runs:-?}" "${speed:-?}" \
        "${cov:-?}" "${ft:-?}" "$crashes"
    if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        echo "  $target FAILED (exit $status): see $log and $artifacts" >&2
        grep -m 5 -E 'ERROR|Fatal error|SUMMARY' "$log" >&2 || true
        return 1
    fi
}
