#!/usr/bin/env bash
# Does the network place, or only its start probes? For each policy file of
# POLICIES and each held-out pair of bench/issue50/held_out.sh (its graphs
# and clusters, made there or here), one seed:
#   network alone: `place --method gdp --policy P --start-bias 0
#                  --samples-per-step 1`: no start bonus, no probes, the
#                  network's most likely placement;
#   zero-shot:     `place --method gdp --policy P`: the probes, the most
#                  likely placement and K - 1 samples, the fastest kept.
# Usage: POLICIES="policies/gdp_any_cluster.pt runs/x.pt" SEED=1 bash bench/issue50/network_alone.sh
set -euo pipefail
devplace=${DEVPLACE:-build/devplace}
policies=${POLICIES:-policies/gdp_any_cluster.pt}
out=${OUT:-runs/issue50_held_out}
seed=${SEED:-1}
mkdir -p "$out/alone"
source bench/lib/run_json.sh
[ -s "$out/resnet18.json" ] || /usr/bin/python3 tools/export_pytorch.py resnet18 --batch 128 -o "$out/resnet18.json"
[ -s "$out/vgg11.json" ] || /usr/bin/python3 tools/export_pytorch.py vgg11 --batch 64 -o "$out/vgg11.json"
[ -s "$out/rnnlm3.json" ] || "$devplace" generate rnnlm --layers 3 --steps 12 --hidden 1536 -o "$out/rnnlm3.json" > /dev/null
[ -s "$out/gnmt2_16.json" ] || "$devplace" generate gnmt2 --length 16 -o "$out/gnmt2_16.json" > /dev/null
[ -s "$out/hetero9001.json" ] || "$devplace" generate cluster --seed 9001 --profile hetero --min-devices 4 --max-devices 8 -o "$out/hetero9001.json" > /dev/null
[ -s "$out/tight9002.json" ] || "$devplace" generate cluster --seed 9002 --profile tight --min-devices 4 --max-devices 8 -o "$out/tight9002.json" > /dev/null
models=${MODELS:-resnet18 vgg11 rnnlm3 gnmt2_16}
clusters=${CLUSTERS:-p100x8 h100x8 hetero9001 tight9002}
cluster_arg() { if [ -f "$out/$1.json" ]; then echo "$out/$1.json"; else echo "$1"; fi; }
i=0
for p in $policies; do
  for m in $models; do
    for c in $clusters; do
      r="$out/alone/$i-$m-$c-$seed"
      g=(--graph "$out/$m.json" --cluster "$(cluster_arg "$c")" --seed "$seed" --method gdp --policy "$p" --json)
      run_json "$r-alone.json" place "${g[@]}" --start-bias 0 --samples-per-step 1 --out "$r-alone" --overwrite
      run_json "$r-zero.json" place "${g[@]}" --out "$r-zero" --overwrite
    done
  done
  i=$((i + 1))
done
python3 - "$out" "$models" "$clusters" "$seed" "$policies" <<'PY'
import sys
sys.path.insert(0, "bench/lib")
from bench_results import load
out, models, clusters, seed, policies = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4], sys.argv[5].split()
def t(j):
    return None if not j or j.get("oom") or j.get("invalid") else j.get("step_time_s")
def f(x):
    return "fail" if x is None else "%.4g" % x
head = "| model | cluster |" + "".join(" %s alone | %s zero-shot |" % (p.split("/")[-1], p.split("/")[-1]) for p in policies)
print(head)
print("|---|---|" + "---|---|" * len(policies))
beats = [0] * len(policies)
for m in models:
    for c in clusters:
        row = "| %s | %s |" % (m, c)
        zeros = []
        for i, p in enumerate(policies):
            r = "%s/alone/%d-%s-%s-%s" % (out, i, m, c, seed)
            alone, zero = t(load(r + "-alone.json")), t(load(r + "-zero.json"))
            zeros.append(zero)
            row += " %s | %s |" % (f(alone), f(zero))
        print(row)
        for i in range(len(policies)):
            if zeros[i] is not None and zeros[0] is not None and zeros[i] < zeros[0] * (1 - 1e-9):
                beats[i] += 1
print()
for i, p in enumerate(policies[1:], 1):
    print("%s: zero-shot faster than %s's on %d of %d pairs" % (p, policies[0], beats[i], len(models) * len(clusters)))
PY
