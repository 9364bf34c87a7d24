#!/usr/bin/env bash
# guided against mcmc, the same budget on the same row in the same run
# (BENCHMARKS.md, "Learned against search"): for each row and seed,
# bench/guided_vs_mcmc runs mcmc and then guided with EVALUATIONS
# evaluations (and WALL_SECONDS, when set, as a wall-time cap for both; with
# EVALUATIONS=0 the wall time alone is the budget; guided starts from the
# shipped screen, as place's does, GUIDED_SCREEN_FILE=none for a fresh
# one). Prints a markdown table
# of medians over the seeds, mcmc over guided (above 1: guided is faster),
# the geometric mean, and each method's median wall time and evaluations a
# second.
#
# ROWS=memory is the memory-bound rows (no single device holds the graph,
# the cluster is tight): an imported ResNet-50 at batch 128 (bench/data,
# tools/export_pytorch.py) on a cluster of four 3 GiB GPUs and on a
# heterogeneous one, Inception-V3 at batch 64 on four 2.5 GiB GPUs, and
# GNMT-4 at batch 256 on the four 3 GiB GPUs (the two generated here).
#
#   ROWS="rnnlm:p100x2 gnmt2:p100x2" bash bench/guided_table.sh
#   ROWS=memory bash bench/guided_table.sh
#   ROWS=untuned bash bench/guided_table.sh
#
# ROWS=untuned is issue 49's rows nobody tuned for (bench/data/README.md):
# ResNet-50, ViT-B/16 and ConvNeXt-T exported from torchvision at a batch no
# single GPU holds, on a generated heterogeneous cluster and a generated one
# tight on memory. RAW=FILE keeps every run's line (each seed) in FILE.
#   EVALUATIONS=0 WALL_SECONDS=120 ROWS="..." bash bench/guided_table.sh
#
# PAIRED=1 runs mcmc and guided of one row and seed at the same time, one
# process each (MCMC_ONLY / GUIDED_ONLY), instead of one after the other: on
# a machine that other work also loads, both then see the same load, which
# is what an equal-wall-time comparison needs. On 2 cores the pair takes
# both.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${GUIDED_VS_MCMC:-build/bench/guided_vs_mcmc}
[ -x "$bin" ] && [ -x build/devplace ] || bash scripts/build.sh
evaluations=${EVALUATIONS:-2000}
seeds=${SEEDS:-1 2 3}
[ -n "${ROWS:-}" ] || { echo "guided_table.sh: set ROWS=\"model:cluster ...\" or ROWS=memory" >&2; exit 2; }

lines=$(mktemp)
graphs=$(mktemp -d)
trap 'rm -rf "$lines" "$graphs"' EXIT
if [ "$ROWS" = memory ]; then
  build/devplace generate inception_v3 --batch 64 -o "$graphs/inception_v3-b64.json" > /dev/null
  build/devplace generate gnmt4 --batch 256 -o "$graphs/gnmt4-b256.json" > /dev/null
  ROWS="bench/data/resnet50.json:bench/data/tight4.json bench/data/resnet50.json:bench/data/hetero4.json
        $graphs/inception_v3-b64.json:bench/data/tight4_small.json $graphs/gnmt4-b256.json:bench/data/tight4.json"
fi
if [ "$ROWS" = untuned ]; then
  ROWS=""
  for model in resnet50 vit_b16 convnext_tiny; do
    for cluster in hetero7154 tight7100; do ROWS="$ROWS bench/data/$model.json:bench/data/$cluster.json"; done
  done
fi
for row in $ROWS; do
  IFS=: read -r model cluster <<< "$row"
  for seed in $seeds; do
    echo "== $model $cluster seed $seed" >&2
    if [ -n "${PAIRED:-}" ]; then
      pair=$(mktemp)
      MCMC_ONLY=1 "$bin" "$model" "$cluster" "$evaluations" "$seed" ${WALL_SECONDS:+"$WALL_SECONDS"} > "$pair.mcmc" &
      GUIDED_ONLY=1 "$bin" "$model" "$cluster" "$evaluations" "$seed" ${WALL_SECONDS:+"$WALL_SECONDS"} > "$pair.guided"
      wait $!
      cat "$pair.mcmc" "$pair.guided" >> "$lines"
      rm -f "$pair" "$pair.mcmc" "$pair.guided"
    else
      "$bin" "$model" "$cluster" "$evaluations" "$seed" ${WALL_SECONDS:+"$WALL_SECONDS"} >> "$lines"
    fi
  done
done

[ -z "${RAW:-}" ] || cp "$lines" "$RAW"
python3 - "$lines" <<'EOF'
import math, re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\S+) (\S+) (\S+) seed=(\d+) (\S+) step_s=([\d.]+) evals=(\d+) wall_s=([\d.]+) evals_per_s=(\d+)', line)
    if not m:
        continue
    model, cluster, method, seed, ok, step, evals, wall, rate = m.groups()
    model, cluster = model.split('/')[-1].removesuffix('.json'), cluster.split('/')[-1].removesuffix('.json')
    r = runs.setdefault((model, cluster), {}).setdefault(method, [])
    r.append((float(step) if ok == 'ok' else math.inf, int(evals), float(wall), int(rate)))
print('| model | cluster | mcmc (s) | guided (s) | mcmc over guided | mcmc wall (s) | guided wall (s) | mcmc evals/s | guided evals/s |')
print('|---|---|---|---|---|---|---|---|---|')
ratios = []
for (model, cluster), m in runs.items():
    med = {k: statistics.median(x[0] for x in v) for k, v in m.items()}
    wall = {k: statistics.median(x[2] for x in v) for k, v in m.items()}
    rate = {k: statistics.median(x[3] for x in v) for k, v in m.items()}
    ratio = med['mcmc'] / med['guided']
    ratios.append(ratio)
    print(f"| {model} | {cluster} | {med['mcmc']:.4f} | {med['guided']:.4f} | {ratio:.3f}x | {wall['mcmc']:.1f} | {wall['guided']:.1f} | {rate['mcmc']} | {rate['guided']} |")
if ratios:
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"\nGeometric mean of mcmc over guided: {geo:.3f}x over {len(ratios)} rows; guided at least as fast on {sum(r >= 1 for r in ratios)}.")
EOF
