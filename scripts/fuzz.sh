#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (docs/testing.md, "Fuzzing"). Builds shopledger-fuzz instrumented
# (-sanitize=fuzzer coverage in every Swift module, ours and swift-asn1/swift-certificates alike) into
# .build-fuzz, then runs each target for FUZZ_SECONDS on a working copy of its corpus: what libFuzzer finds
# goes to .build-fuzz/fuzz/corpus/<target>, never into the committed Fuzz/corpus; crashes, hangs and
# out-of-memory inputs to .build-fuzz/fuzz/artifacts/<target>/. Fails when any target crashed, hung or ran
# out of memory, after running every target.
#
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TARGETS   the targets to run, space-separated (default: all, as `shopledger-fuzz --list` names them)
#   FUZZ_TIMEOUT   seconds after which one input counts as a hang (default 10)
#   FUZZ_JOBS      libFuzzer -fork jobs in parallel (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-10}
FUZZ_JOBS=${FUZZ_JOBS:-1}
scratch=.build-fuzz
out=$scratch/fuzz

# libFuzzer ships with the Swift toolchain for Linux. `swiftc -sanitize=fuzzer` would link its `main`, which
# clashes with the `main` SwiftPM gives every executable (ours and the build plugins' EmbedSQLTool): so the
# compiler instruments (-Xfrontend -sanitize=fuzzer) and the driver links the runtime without its main, and
# shopledger-fuzz starts libFuzzer itself (LLVMFuzzerRunDriver).
resources=$("$SWIFT" -print-target-info | sed -n 's/.*"runtimeResourcePath": "\(.*\)".*/\1/p')
libfuzzer=$resources/clang/lib/linux/libclang_rt.fuzzer_no_main-$(uname -m).a
if [[ ! -f $libfuzzer ]]; then
    echo "error: no libFuzzer runtime at $libfuzzer (it comes with the Swift toolchain for Linux)" >&2
    exit 1
fi
flags=(-c release --scratch-path "$scratch"
    -Xswiftc -Xfrontend -Xswiftc -sanitize=fuzzer -Xswiftc -DSHOPLEDGER_LIBFUZZER
    -Xlinker "$libfuzzer" -Xlinker -lstdc++)
"$SWIFT" build "${flags[@]}" --product shopledger-fuzz
fuzzer=$("$SWIFT" build "${flags[@]}" --show-bin-path)/shopledger-fuzz

targets=${FUZZ_TARGETS:-$("$fuzzer" --list | cut -d' ' -f1)}
mkdir -p "$out/logs"
failed=()
summary=()
for target in $targets; do
    corpus=$out/corpus/$target
    artifacts=$out/artifacts/$target
    log=$out/logs/$target.log
    rm -rf "$artifacts"
    mkdir -p "$corpus" "$artifacts"
    dictionary=()
    [[ -f Fuzz/dict/$target.dict ]] && dictionary=(-dict="Fuzz/dict/$target.dict")
    echo "== $target: ${FUZZ_SECONDS}s (log: $log)"
    # -fork: each job runs in a child process, so a crash or hang is saved and fuzzing goes on.
    "$fuzzer" "$target" -fork="$FUZZ_JOBS" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -max_total_time="$FUZZ_SECONDS" -timeout="$FUZZ_TIMEOUT" -artifact_prefix="$artifacts/" \
        "${dictionary[@]}" "$corpus" "Fuzz/corpus/$target" >"$log" 2>&1 || true
    stats=$(grep -E '^#[0-9]+: cov: ' "$log" | tail -1 || true)
    found=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | sort)
    echo "   ${stats:-no statistics (see the log)}"
    summary+=("$target: ${stats:-?}")
    if [[ -n $found ]]; then
        failed+=("$target")
        echo "   found (each replayed once for what trapped):"
        while read -r file; do
            # The -fork jobs' output is not in the log: the replay says what the Swift runtime said (a release
            # build's overflow checks trap without a message: replay those with the debug build).
            what=$(timeout 120 "$fuzzer" "$target" -timeout="$FUZZ_TIMEOUT" "$file" 2>&1 |
                grep -m1 -E 'Fatal error|ERROR: libFuzzer: (deadly signal|timeout|out-of-memory)' | cut -c1-240 || true)
            echo "     $file"
            echo "       ${what:-(no trap on replay)}"
        done <<<"$found"
    fi
done

echo
echo "== fuzzing summary (cov: edges, ft: features, corp: inputs kept)"
printf '   %s\n' "${summary[@]}"
if ((${#failed[@]} > 0)); then
    echo "FAILED: crashes, hangs or out-of-memory inputs in: ${failed[*]} (under $out/artifacts)"
    echo "Replay one with a backtrace: swift build --product shopledger-fuzz && .build/debug/shopledger-fuzz TARGET FILE"
    exit 1
fi
echo "no crashes"
