#!/usr/bin/env bash
# make bench: release builds of the benchmarks, each starting (and stopping) its own PostgreSQL, run one
# after the other; prints everything and writes docs/performance.md (date, machine, summary, outputs).
# Figures, not pass/fail. Run it on a quiet machine: every figure shares the same 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
out=$(mktemp -d /tmp/shopledger-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT

products=(shopledger PostgresBench LedgerBench ReceiptsBench LoadBench)
[ -d Benchmarks/ReportsBench ] && products+=(ReportsBench)
products+=(ConsoleBench)
for product in "${products[@]}"; do
    $SWIFT build -c release --product "$product"
done
# The myinfo peer LoadBench measures ours against (issue 30): a package of its own, outside the product's build.
$SWIFT build -c release --package-path Benchmarks/MyinfoPeer
peer="$PWD/Benchmarks/MyinfoPeer/.build/release/myinfo-peer"

run() { # name command...
    local name=$1
    shift
    echo
    echo "== $name: $*"
    "$@" 2>&1 | tee "$out/$name.txt"
}

# BASELINE=path/to/an/earlier/shopledger: LoadBench also times myinfo and new purchases against that build (e.g.
# the previous main's release binary) on the same database, alternately: a change's before and after in one run.
run LoadBench .build/release/LoadBench --peer "$peer" ${BASELINE:+--baseline "$BASELINE"} ${LOAD_ARGS:-}
run LedgerBench .build/release/LedgerBench
run PostgresBench .build/release/PostgresBench 5
run ReceiptsBench taskset -c 0 .build/release/ReceiptsBench 20000
if [ -x .build/release/ReportsBench ]; then
    run ReportsBench .build/release/ReportsBench ${REPORTS_ARGS:-1000000}
fi
# The operators' console over a month of 20,000 purchases: a customer's page of 200 purchases, the reports.
run ConsoleBench .build/release/ConsoleBench --server "$PWD/.build/release/shopledger"

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
memory=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
postgres=$( (ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1 | xargs -I{} /usr/lib/postgresql/{}/bin/postgres --version) || postgres --version)
{
    echo "# Performance"
    echo
    echo "Written by \`make bench\` on $(date -u '+%Y-%m-%d %H:%M UTC')."
    echo
    echo "Machine: $(nproc) cores ($cpu), $memory, $(uname -sr); $postgres; $($SWIFT --version 2>&1 | head -1)."
    echo "PostgreSQL runs on the same machine as the server and the load generator, durable (fsync on,"
    echo "synchronous_commit on). Figures from one run; the machine is shared, so compare ratios within a run."
    echo
    echo "Each figure appears once, in the section of the benchmark that measured it: end to end (LoadBench)"
    echo "first, then each benchmark's own output. The lean write path's comparison (the schema before migration"
    echo "0007 against the current one, measured again on every run) is the first table of the LedgerBench section."
    echo
    echo "## End to end (LoadBench)"
    echo
    sed -n '/^LoadBench (/,$p' "$out/LoadBench.txt"
    for name in LedgerBench PostgresBench ReceiptsBench ReportsBench ConsoleBench; do
        [ -f "$out/$name.txt" ] || continue
        echo
        echo "## $name"
        echo
        echo '```'
        # Without the log lines (timestamped progress on stderr); the console run keeps them.
        grep -v '^[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T' "$out/$name.txt" || true
        echo '```'
    done
} > docs/performance.md
echo
echo "Wrote docs/performance.md"
