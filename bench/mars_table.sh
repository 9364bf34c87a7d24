#!/usr/bin/env bash
# Mars's claim, sample efficiency (issue 15): on Inception-V3, GNMT (4
# layers) and BERT-base, every learned method gets the same budget of
# SAMPLES sampled placements (start probes included), cold:
#   rl (2017), hdp (2018), gdp, mars without pre-training (a fresh encoder,
#   the paper's ablation), mars with the encoder `devplace pretrain` wrote,
#   mars with that encoder frozen, and gdp with the pre-trained encoder in
#   GraphSAGE's place (fine-tuned: issue 15's "does it help GDP?"),
# beside the fastest baseline of `devplace compare`. Per run: the step time
# reached, and the seconds and samples until its best so far first came
# within 1 % of its final best (from its curve.csv). Pre-training runs once,
# on PRETRAIN_GRAPHS (graphs alone, no simulator), and its cost is a row of
# the table. Writes the section "mars" of BENCHMARKS.md and, with RUNS=DIR,
# keeps every run's folder (so `devplace report --curves` can overlay them).
#
#   SAMPLES=1000 bash bench/mars_table.sh
#   SAMPLES=1000 ROWS="inception_v3:p100x2" RUNS=runs/mars bash bench/mars_table.sh
#   RUNS=runs/mars KEEP=1 bash bench/mars_table.sh   # reuse the encoder and the runs RUNS holds; run only what is missing
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-build/devplace}
[ -x "$devplace" ] || bash scripts/build.sh
samples=${SAMPLES:-1000}
rows=${ROWS:-"inception_v3:p100x2 gnmt4:p100x4 bert_base:p100x4"}
pretrain_graphs=${PRETRAIN_GRAPHS:-"rnnlm,rnnlm4,gnmt2,gnmt4,transformer_xl2,inception_v3,amoebanet,wavenet2x18,bert_base"}
pretrain_steps=${PRETRAIN_STEPS:-300}
methods=${METHODS:-"rl hdp gdp gdp-pretrained mars mars-pretrained mars-frozen mcmc"}
keep=${KEEP:-0}
if [ -n "${RUNS:-}" ]; then runs=$RUNS; mkdir -p "$runs"; else runs=$(mktemp -d); trap 'rm -rf "$runs"' EXIT; fi
section=$(mktemp)

if [ "$keep" = 1 ] && [ -s "$runs/encoder.pt" ] && [ -s "$runs/pretrain.wall" ]; then
  pretrain_wall=$(cat "$runs/pretrain.wall")
else
  echo "== pretrain on $pretrain_graphs ($pretrain_steps steps at most)" >&2
  start=$(date +%s.%N)
  "$devplace" pretrain --overwrite --method mars --graphs "$pretrain_graphs" --max-steps "$pretrain_steps" --quiet -o "$runs/encoder.pt" > "$runs/pretrain.log"
  pretrain_wall=$(python3 -c "print('%.1f' % ($(date +%s.%N) - $start))")
  echo "$pretrain_wall" > "$runs/pretrain.wall"
fi
cat "$runs/pretrain.log" >&2

source bench/lib/run_json.sh

for row in $rows; do
  model=${row%%:*}
  cluster=${row##*:}
  name="$model-$cluster"
  echo "== $name: baselines" >&2
  [ "$keep" = 1 ] && [ -s "$runs/$name.compare.json" ] ||
    run_json "$runs/$name.compare.json" compare --graph "$model" --cluster "$cluster" --json
  for method in $methods; do
    [ "$keep" = 1 ] && [ -s "$runs/$name.$method.json" ] && continue
    case $method in
      gdp-pretrained) args=(--method gdp --encoder "$runs/encoder.pt") ;;
      mars-pretrained) args=(--method mars --encoder "$runs/encoder.pt") ;;
      mars-frozen) args=(--method mars --encoder "$runs/encoder.pt" --mars-encoder-learning-rate 0) ;;
      *) args=(--method "$method") ;;
    esac
    echo "== $name: $method ($samples samples)" >&2
    rm -rf "$runs/$name-$method"
    run_json "$runs/$name.$method.json" place --overwrite --graph "$model" --cluster "$cluster" "${args[@]}" \
      --max-samples "$samples" --out "$runs/$name-$method" --json
  done
done

python3 - "$runs" "$samples" "$pretrain_graphs" "$pretrain_wall" "$(nproc)" "$(date -u +%Y-%m-%d)" "$methods" $rows > "$section" <<'PY'
import re, sys
sys.path.insert(0, "bench/lib")
from bench_results import load, search_cost as to_one_percent
runs, samples, pretrain_graphs, pretrain_wall, cores, day, methods = sys.argv[1:8]
rows, methods = sys.argv[8:], methods.split()

log = open(f"{runs}/pretrain.log").read()
m = re.search(r"pre-trained (\d+) steps in ([0-9.]+) s on (\d+) graphs(.*?); best DGI loss ([0-9.]+)", log)
print("<!-- mars:begin -->")
print(f"Produced by `SAMPLES={samples} bash bench/mars_table.sh` on {day}, {cores} cores; every run cold, default "
      f"settings, {samples} sampled placements each (start probes included). Step times in simulated seconds.")
print()
if m:
    print(f"Pre-training (once, shared by every mars-pretrained and mars-frozen run): {m.group(1)} DGI steps"
          f"{' (stopped early)' if 'stopped early' in m.group(4) else ''} on {m.group(3)} graphs ({pretrain_graphs.replace(',', ', ')}), "
          f"{m.group(2)} s of training ({pretrain_wall} s wall with loading), best loss {m.group(5)} (chance: 0.693). No simulator, no step time.")
    print()
print("| model | cluster | fastest baseline | method | step time | vs fastest | to 1 % (s / samples) | wall s | samples/s |")
print("|---|---|---|---|---|---|---|---|---|")
for row in rows:
    model, cluster = row.split(":")
    name = f"{runs}/{model}-{cluster}"
    compare = load(f"{name}.compare.json") or []
    ran = sorted((r["step_time_s"], r["method"]) for r in compare
                 if not r["oom"] and not r["invalid"] and r["method"] != "random")
    fastest = ran[0] if ran else None
    for method in methods:
        out = load(f"{name}.{method}.json")
        t = None if out is None or out["oom"] else out["step_time_s"]
        cost = to_one_percent(f"{name}-{method}/curve.csv")
        cells = [model, cluster, f"{fastest[1]} {fastest[0]:.3f}" if fastest else "none", method,
                 "error" if out is None else ("OOM" if t is None else f"{t:.3f}"),
                 f"{fastest[0] / t:.3f}x" if t and fastest else "-",
                 f"{cost[0]:.1f} / {cost[1]}" if cost else "none",
                 f"{out['search_seconds']:.0f}" if out else "-",
                 f"{out['samples'] / out['search_seconds']:.1f}" if out and out["search_seconds"] else "-"]
        print("| " + " | ".join(cells) + " |")
print()
print("\"vs fastest\": the fastest baseline's step time over the method's (above 1: faster). \"to 1 %\": seconds and "
      "samples until the run's best so far first came within 1 % of its final best. mars: a fresh encoder (the "
      "paper's ablation without pre-training); mars-pretrained: the pre-trained encoder, fine-tuned at "
      "--mars-encoder-learning-rate (default 0.0003); mars-frozen: the same encoder frozen (rate 0); gdp-pretrained: "
      "GDP with the pre-trained encoder in GraphSAGE's place, fine-tuned.")
print("<!-- mars:end -->")
PY
cat "$section"
bash bench/splice_section.sh mars "$section" "Mars: pre-trained encoder, sample efficiency (issue 15)"
rm -f "$section"
