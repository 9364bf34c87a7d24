#!/usr/bin/env bash
# Training on measured time (issue 17): a learned placer (`hdp`) and `mcmc`
# whose every sampled placement runs on this machine's CPUs by the real
# executor (`place --reward measured`), against the one-shot baselines'
# placements run for real the same way (`devplace run`, the same protocol).
# Prints each method's measured step time and the learned run's curve
# (samples, seconds, best so far), for BENCHMARKS.md.
#
#   bash bench/measured_reward.sh                 # 240 s per search
#   SEARCH_SAMPLES=300 bash bench/measured_reward.sh   # a sample budget instead
#   OUT=runs/measured bash bench/measured_reward.sh    # keep the run folders
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-$PWD/build/devplace}
[ -x "$devplace" ] || bash scripts/build.sh
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
budget=(--max-seconds "${SEARCH_SECONDS:-240}")
[ -n "${SEARCH_SAMPLES:-}" ] && budget=(--max-samples "$SEARCH_SAMPLES")
steps=${RUN_STEPS:-3}
# A fresh process runs its first steps slowly for longer than the one step
# the protocol drops (a small RNNLM's dp_split placement: 0.092 s a step
# over 3 steps, 0.063 over 10, 0.054 over 20), while the searches measure in
# one warm process; so the one-shot baselines, each its own `devplace run`,
# run more steps.
baseline_steps=${BASELINE_RUN_STEPS:-20}

"$devplace" clusters --detect --no-gpus --cpu-devices 2 -o "$out/host.json" > /dev/null
# A small RNNLM: 1,682 ops, some 0.03 s a step on one core.
"$devplace" generate rnnlm --layers 2 --hidden 256 --steps 10 --batch 32 --vocab 2000 -o "$out/rnnlm.json" > /dev/null

echo "| method | measured step (s) | simulated (s) | search (s) | real runs |"
echo "|---|---:|---:|---:|---:|"
for method in single_cpu expert m_etf m_sct metis scotch dp_split; do
  "$devplace" place --overwrite --graph "$out/rnnlm.json" --cluster "$out/host.json" --method "$method" --out "$out/$method" --json > "$out/$method.json" 2> /dev/null || continue
  "$devplace" run --graph "$out/rnnlm.json" --cluster "$out/host.json" --placement "$out/$method/best_placement.json" \
    --steps "$baseline_steps" --json > "$out/$method.run.json" 2> /dev/null || { echo "| $method | failed | | | |"; continue; }
  python3 - "$method" "$out/$method.json" "$out/$method.run.json" <<'PY'
import json, sys
placed, ran = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
sim = placed["step_time_s"]
print(f"| {sys.argv[1]} | {ran['step_time_s']:.4f} | {sim:.4f} | {placed['search_seconds']:.1f} | {ran['steps_averaged'] + 1} |")
PY
done
for method in hdp mcmc; do
  "$devplace" place --overwrite --graph "$out/rnnlm.json" --cluster "$out/host.json" --method "$method" --reward measured \
    --run-steps "$steps" "${budget[@]}" --out "$out/$method-measured" --json > "$out/$method-measured.json" 2> "$out/$method-measured.log"
  python3 - "$method --reward measured" "$out/$method-measured.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
sim = r.get("simulated_step_time_s") or float("nan")
print(f"| {sys.argv[1]} | {r['measured_step_time_s']:.4f} | {sim:.4f} | {r['search_seconds']:.1f} | {r['real_runs']} |")
PY
done
echo
echo "hdp --reward measured, its curve (best measured step so far):"
python3 - "$out/hdp-measured/curve.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
shown = set()
for i, row in enumerate(rows):
    mark = int(i * 8 / max(len(rows), 1))
    if mark in shown and i != len(rows) - 1: continue
    shown.add(mark)
    print(f"  step {row.get('step')}: {row.get('samples')} samples, {float(row.get('seconds', 0)):.0f} s, best {row.get('best_step_time_s')} s")
PY
