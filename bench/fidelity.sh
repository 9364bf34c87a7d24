#!/usr/bin/env bash
# The simulator against this machine (issue 17, BENCHMARKS.md "Fidelity"):
# for several graphs that run in seconds here, this machine as a cluster of
# two one-core CPU devices (`clusters --detect`), each graph profiled
# (`devplace profile`), then bench/fidelity_bench: random and optimised
# placements, each simulated with the profile and run for real, with the
# median absolute percentage error and Spearman's rank correlation.
#
#   bash bench/fidelity.sh                       # every graph, 100 random placements each
#   GRAPHS="rnnlm_small" RANDOM_PLACEMENTS=20 bash bench/fidelity.sh
#   OUT=runs/fidelity bash bench/fidelity.sh     # keep graphs, tables and samples
#
# Run it on a quiet machine: every sample is a real run, and another
# process on the cores is measured with it.
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-$PWD/build/devplace}
bench=${FIDELITY_BENCH:-$PWD/build/bench/fidelity_bench}
[ -x "$devplace" ] && [ -x "$bench" ] || bash scripts/build.sh
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
graphs=${GRAPHS:-"rnnlm_small nmt_small inception_small resnet18 mobilenet_v2"}
random=${RANDOM_PLACEMENTS:-100}
mcmc=${MCMC_RUNS:-8}
steps=${RUN_STEPS:-5}
# The profiled device's one-device placement, run after every N runs: the
# machine's drift, and errors at the profile's speed beside the raw ones.
reference_every=${REFERENCE_EVERY:-10}

[ -f "$out/host.json" ] || "$devplace" clusters --detect --no-gpus --cpu-devices 2 -o "$out/host.json" > /dev/null

make_graph() {  # NAME -> $out/NAME.json
  local g=$out/$1.json
  [ -f "$g" ] && return
  case $1 in
    rnnlm_small) "$devplace" generate rnnlm --layers 2 --hidden 256 --steps 20 --batch 32 --vocab 2000 -o "$g" ;;
    nmt_small) "$devplace" generate nmt --layers 2 --hidden 256 --length 10 --batch 16 --vocab 2000 -o "$g" ;;
    inception_small) "$devplace" generate inception_v3 --batch 1 --image 107 --classes 100 -o "$g" ;;
    resnet18 | mobilenet_v2) /usr/bin/python3 tools/export_pytorch.py "$1" --batch 4 --image-size 64 -o "$g" ;;
    *) echo "fidelity.sh: unknown graph $1" >&2; exit 2 ;;
  esac > /dev/null
}

for name in $graphs; do
  make_graph "$name"
  "$devplace" profile --graph "$out/$name.json" --cluster "$out/host.json" -o "$out/$name.op_times.json" \
    > "$out/$name.profile.txt"
  "$bench" --graph "$out/$name.json" --cluster "$out/host.json" --op-times "$out/$name.op_times.json" \
    --random "$random" --mcmc "$mcmc" --steps "$steps" --remeasure --reference-every "$reference_every" --csv "$out/$name.samples.csv" > "$out/$name.fidelity.txt"
  echo "== $name"
  awk 'summary { print } /^graph / { summary = 1 }' "$out/$name.fidelity.txt"
done
echo "(samples and profiles in $out)"
