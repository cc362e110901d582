#!/usr/bin/env bash
# A benchmark of an earlier commit beside the current tree, back to back on the same machine (a schema
# change's before and after: figures from different runs on this shared machine do not compare).
#
#   scripts/bench-previous.sh [options] COMMIT [-- BENCH ARGS...]
#
#   --product NAME   the benchmark product (default ReportsBench; LoadBench works the same way)
#   --rounds N       previous, current, previous, current... N times each (default 1)
#   --harness current
#                    build COMMIT with the current tree's Benchmarks/NAME/ copied over its own: the same
#                    harness on both sides (it must compile against COMMIT's modules; if it does not, the
#                    build fails and says so; Benchmarks/BenchSupport/ProcessCPU.swift, which depends
#                    on nothing of ours, is copied too). Default: COMMIT's own harness.
#   --keep DIR       ReportsBench only: keep the seeded clusters in DIR/previous-SHA and DIR/current-SHA
#                    and reuse them on the next run (default: seeded once per invocation, then removed)
#   BENCH ARGS       passed to both (default for ReportsBench: 1000000)
#
# What it compares, honestly: COMMIT's code and migrations against the working tree's (uncommitted changes
# included), each seeding its own schema. With COMMIT's own harness the older side prints what that harness
# printed: ReportsBench before 8e0315d times no reconcile at all, and before this script's commit no
# check one by one; `--harness current` fixes that when the harness compiles there (e.g. 460cf4e, the
# main before the lean write path). The summary at the end greps the figures from both outputs; the full
# outputs stay in the run folder it names. Builds of COMMIT are kept in
# ${BENCH_PREVIOUS_BUILDS:-/tmp/shopledger-bench-previous-builds}/SHA[-current-harness] (a first release
# build takes 10-30 minutes on 2 cores; the next run reuses it). Not run by `make bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}

product=ReportsBench
rounds=1
harness=own
keep=
while [ $# -gt 0 ]; do
    case $1 in
        --product) product=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --harness) harness=$2; shift 2 ;;
        --keep) keep=$2; shift 2 ;;
        --) shift; break ;;
        -*) echo "bench-previous: unknown option $1" >&2; exit 2 ;;
        *) [ -z "${commit:-}" ] || { echo "bench-previous: one commit only" >&2; exit 2; }; commit=$1; shift ;;
    esac
done
[ -n "${commit:-}" ] || { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
case $harness in own|current) ;; *) echo "bench-previous: --harness own|current" >&2; exit 2 ;; esac
sha=$(git rev-parse --verify "$commit^{commit}")
short=${sha:0:9}
current=$(git rev-parse --short=9 HEAD)$(git diff --quiet HEAD -- . || echo "-dirty")
args=("$@")
[ ${#args[@]} -gt 0 ] || { [ "$product" != ReportsBench ] || args=(1000000); }

run_dir=$(mktemp -d /tmp/shopledger-bench-previous.XXXXXX)
worktree="$run_dir/worktree"
builds=${BENCH_PREVIOUS_BUILDS:-/tmp/shopledger-bench-previous-builds}
scratch="$builds/$sha$(if [ "$harness" = current ]; then echo -current-harness; fi)"
cleanup() {
    git worktree remove --force "$worktree" 2>/dev/null || true
    [ -n "$keep" ] || rm -rf "$run_dir/clusters"
}
trap cleanup EXIT

# LoadBench runs the `shopledger` beside it: build that too, on both sides. One `swift build` per
# product: given --product twice, swift build builds only the last one.
products=("$product")
[ "$product" != LoadBench ] || products+=(shopledger)
build() { # swift build options...
    for name in "${products[@]}"; do $SWIFT build -c release --product "$name" "$@"; done
}
echo "== building $product at the current tree ($current)"
build
echo "== building $product at $short ($harness harness) in a worktree, build folder $scratch"
git worktree add --detach "$worktree" "$sha" >/dev/null
if [ "$harness" = current ]; then
    rm -rf "$worktree/Benchmarks/$product"
    cp -R "Benchmarks/$product" "$worktree/Benchmarks/$product"
    cp Benchmarks/BenchSupport/ProcessCPU.swift "$worktree/Benchmarks/BenchSupport/"
fi
mkdir -p "$builds"
(cd "$worktree" && build --scratch-path "$scratch")

clusters=${keep:-$run_dir/clusters}
mkdir -p "$clusters"
run() { # label binary
    local label=$1 binary=$2 extra=()
    [ "$product" != ReportsBench ] || extra=(--keep "$clusters/$label")
    echo
    echo "== $label: $product ${args[*]} ${extra[*]} ($(date -u '+%H:%M:%S UTC'), $(uptime | sed 's/.*load/load/'))"
    "$binary" "${args[@]}" "${extra[@]}" 2>&1 | tee "$run_dir/$label-$round.txt"
}
for round in $(seq 1 "$rounds"); do
    run "previous-$short" "$scratch/release/$product"
    run "current-$current" ".build/release/$product"
done

echo
echo "== summary ($product ${args[*]}; previous = $short with its $harness harness, current = $current)"
for file in $(ls -tr "$run_dir"/*.txt); do # in the order they ran
    echo "-- $(basename "$file" .txt)"
    grep -E '^== |daily report|range report|^reconcile|^  check |purchases/s|p99|^\| (POST|GET) |database ceiling' "$file" \
        | grep -v '^== ' || true
done
echo "(full outputs in $run_dir)"
