#!/usr/bin/env bash
# Issue 50's targets for the shipped policy (policies/gdp_any_cluster.pt) on
# pairs held out from its training: four models (two imported torchvision
# models, two built-in ones at sizes training never used) x four clusters
# (two 9-device presets, training saw 3-8 devices; two generated with seeds
# training never used: one hetero, one tight). Per pair and seed:
#   zero-shot: `place --method gdp` (the shipped policy) step time and the
#              wall time of the whole process, start included;
#   one-shot:  the fastest of compare's one-shot baselines;
#   mcmc:      `place --method mcmc` with MCMC_SECONDS (and MCMC_SAMPLES when set);
#   +search:   zero-shot, then guided search from the zero-shot placement for
#              the rest of SEARCH_SECONDS (`--policy FILE --max-seconds`).
# Usage: SEEDS="1 2 3" MCMC_SECONDS=60 SEARCH_SECONDS=10 bash bench/issue50/held_out.sh
# MODELS / CLUSTERS (space-separated names of the lists below) run a subset.
set -euo pipefail
devplace=${DEVPLACE:-build/devplace}
policy=${POLICY:-policies/gdp_any_cluster.pt}
out=${OUT:-runs/issue50_held_out}
seeds=${SEEDS:-1 2 3}
mcmc_seconds=${MCMC_SECONDS:-60}
mcmc_samples=${MCMC_SAMPLES:-0}
search_seconds=${SEARCH_SECONDS:-10}
mkdir -p "$out/runs"
source bench/lib/run_json.sh

# Models: imported (tools/export_pytorch.py, Debian's python3-torchvision)
# at a batch where no single GPU of the tight cluster fits, and built-in.
[ -s "$out/resnet18.json" ] || /usr/bin/python3 tools/export_pytorch.py resnet18 --batch 128 -o "$out/resnet18.json"
[ -s "$out/vgg11.json" ] || /usr/bin/python3 tools/export_pytorch.py vgg11 --batch 64 -o "$out/vgg11.json"
"$devplace" generate rnnlm --layers 3 --steps 12 --hidden 1536 -o "$out/rnnlm3.json" > /dev/null
"$devplace" generate gnmt2 --length 16 -o "$out/gnmt2_16.json" > /dev/null
"$devplace" generate cluster --seed 9001 --profile hetero --min-devices 4 --max-devices 8 -o "$out/hetero9001.json" > /dev/null
"$devplace" generate cluster --seed 9002 --profile tight --min-devices 4 --max-devices 8 -o "$out/tight9002.json" > /dev/null
models=${MODELS:-resnet18 vgg11 rnnlm3 gnmt2_16}
clusters=${CLUSTERS:-p100x8 h100x8 hetero9001 tight9002}
one_shot=single_cpu,single_gpu,expert,scotch,mincut,metis,m_topo,m_etf,m_sct,dp_split

cluster_arg() { if [ -f "$out/$1.json" ]; then echo "$out/$1.json"; else echo "$1"; fi; }
mcmc_budget=(--max-seconds "$mcmc_seconds")
[ "$mcmc_samples" != 0 ] && mcmc_budget+=(--max-samples "$mcmc_samples")
for m in $models; do
  for c in $clusters; do
    for s in $seeds; do
      r="$out/runs/$m-$c-$s"
      g=(--graph "$out/$m.json" --cluster "$(cluster_arg "$c")" --seed "$s")
      start=$(date +%s.%N)
      run_json "$r-zero.json" place "${g[@]}" --method gdp --policy "$policy" --json --out "$r-zero" --overwrite
      echo "$(date +%s.%N) - $start" | bc > "$r-zero.wall"
      # The baselines do not depend on the policy: kept from a previous run
      # of this script (remove $out to measure them again).
      [ -s "$r-compare.json" ] || run_json "$r-compare.json" compare "${g[@]}" --methods "$one_shot" --json
      [ -s "$r-mcmc.json" ] || run_json "$r-mcmc.json" place "${g[@]}" --method mcmc "${mcmc_budget[@]}" --json --out "$r-mcmc" --overwrite
      run_json "$r-search.json" place "${g[@]}" --method gdp --policy "$policy" --max-seconds "$search_seconds" --json --out "$r-search" --overwrite
    done
  done
done
python3 - "$out" "$models" "$clusters" "$seeds" <<'PY'
import json, sys
sys.path.insert(0, "bench/lib")
from bench_results import load
out, models, clusters, seeds = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split()
def t(j):
    return None if not j or j.get("oom") or j.get("invalid") else j.get("step_time_s")
def f(x):
    return "fail" if x is None else "%.4g" % x
print("| model | cluster | seed | zero-shot wall s | zero-shot s | best one-shot s (method) | zero-shot / one-shot | mcmc s | zero-shot / mcmc | +search s | +search / mcmc |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
counts = {"rows": 0, "under 2 s": 0, "one-shot": 0, "within 10 %": 0, "search": 0}
for m in models:
    for c in clusters:
        for s in seeds:
            r = "%s/runs/%s-%s-%s" % (out, m, c, s)
            zero = t(load(r + "-zero.json"))
            wall = open(r + "-zero.wall").read().strip()
            rows = load(r + "-compare.json") or []
            ok = [(x["step_time_s"], x["method"]) for x in rows if t(x) is not None]
            best = min(ok) if ok else (None, "-")
            mcmc = t(load(r + "-mcmc.json"))
            search = t(load(r + "-search.json"))
            ratio = lambda a, b: "-" if a is None or b is None else "%.3f" % (a / b)
            counts["rows"] += 1
            counts["under 2 s"] += float(wall) < 2
            counts["one-shot"] += zero is not None and (best[0] is None or zero <= best[0])
            counts["within 10 %"] += zero is not None and mcmc is not None and zero <= 1.1 * mcmc
            counts["search"] += search is not None and (mcmc is None or search <= mcmc)
            print("| %s | %s | %s | %.2f | %s | %s (%s) | %s | %s | %s | %s | %s |" % (
                m, c, s, float(wall), f(zero), f(best[0]), best[1], ratio(zero, best[0]), f(mcmc), ratio(zero, mcmc),
                f(search), ratio(search, mcmc)))
print()
print("Rows: %(rows)d; zero-shot under 2 s: %(under 2 s)d; zero-shot at least as fast as every one-shot baseline: %(one-shot)d; "
      "zero-shot within 10 %% of mcmc: %(within 10 %)d; zero-shot + search at least as fast as mcmc: %(search)d." % counts)
PY
