#!/usr/bin/env bash
# Fuzzes every reader of user files with libFuzzer: builds the targets of
# fuzz/ with clang, AddressSanitizer and UndefinedBehaviorSanitizer into
# build-fuzz/, then runs each for SECONDS (default 60), one at a time and at
# the lowest CPU priority, and prints per target the executions, the rate,
# and the findings. A finding (a crash, an exception other than
# devplace::Error, undefined behaviour, a leak, a timeout, running out of
# memory) is saved as build-fuzz/findings/TARGET/crash-... (or leak-,
# timeout-, oom-); make it a file in tests/bad_inputs with a line in
# cases.txt once it is fixed. The corpora grow in build-fuzz/corpus/TARGET,
# seeded from the docs' examples and tests/bad_inputs.
#
#   bash bench/fuzz.sh [SECONDS] [TARGET...]     # targets: graph cluster placement op_times onnx
#   FUZZ_RUNS=10000000 bash bench/fuzz.sh 0      # each target until 10 million executions
#
# With FUZZ_RUNS set, each target stops after that many executions (libFuzzer's
# -runs) instead of after SECONDS (0: no time limit); a budget in executions
# gives the same amount of fuzzing whatever the machine's load.
#
# Exits 1 when a target has a finding. BENCHMARKS.md ("Fuzzing") has results.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(graph cluster placement op_times onnx); fi

bash scripts/install-deps.sh --fuzz
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DDEVPLACE_FUZZ=ON -DDEVPLACE_BUILD_TESTS=OFF -DDEVPLACE_BUILD_BENCH=OFF "${launcher[@]}" > /dev/null
nice -n 19 cmake --build build-fuzz --target fuzzers -j "$(nproc)"

# Seeds per target: the good example and the corpus files of its format.
seeds() {
  case "$1" in
    graph) ls tests/bad_inputs/good_graph.json tests/bad_inputs/graph_*.json ;;
    cluster) ls tests/bad_inputs/good_cluster.json tests/bad_inputs/*cluster*.json ;;
    placement) ls tests/bad_inputs/good_placement.json tests/bad_inputs/placement_*.json ;;
    op_times) ls tests/bad_inputs/good_op_times.json tests/bad_inputs/op_times_*.json ;;
    onnx) ls tests/bad_inputs/*.onnx ;;
  esac
}

# Sanitizer settings as scripts/test.sh --sanitize uses them (see there for
# why); libFuzzer itself looks for leaks after every input that allocated.
export ASAN_OPTIONS="detect_container_overflow=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}"

status=0
printf '%-18s %8s %12s %10s %9s\n' target seconds executions "exec/s" findings
for t in "${targets[@]}"; do
  corpus="build-fuzz/corpus/$t"
  findings="build-fuzz/findings/$t"
  mkdir -p "$corpus" "$findings"
  for s in $(seeds "$t"); do cp -n "$s" "$corpus/" 2> /dev/null || true; done
  dict=(-dict=fuzz/json.dict)
  if [ "$t" = onnx ]; then dict=(); fi
  log="build-fuzz/findings/$t.log"
  # -timeout: an input taking 10 s is a hang; -rss_limit_mb: one using 2 GiB
  # is unbounded memory. Both are findings.
  budget=(-max_total_time="$seconds")
  if [ -n "${FUZZ_RUNS:-}" ]; then
    budget=(-runs="$FUZZ_RUNS")
    if [ "$seconds" != 0 ]; then budget+=(-max_total_time="$seconds"); fi
  fi
  nice -n 19 "build-fuzz/fuzz/${t}_fuzz" "$corpus" "${dict[@]}" "${budget[@]}" -max_len=8192 \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" > "$log" 2>&1 || true
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  took=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -1 | awk '{print $5}')
  found=$(find "$findings" -maxdepth 1 -type f | wc -l)
  [ "$found" -eq 0 ] || status=1
  rate=0
  if [ -n "${took:-}" ] && [ "${took:-0}" -gt 0 ]; then rate=$(( ${runs:-0} / took )); fi
  printf '%-18s %8s %12s %10s %9s\n' "${t}_fuzz" "${took:-$seconds}" "${runs:-?}" "$rate" "$found"
done
echo "logs and findings: build-fuzz/findings/"
exit "$status"
