#!/usr/bin/env bash
# GDP on graphs its policy never saw: per held-out graph, the zero-shot step
# time and the wall time to get it (the whole `devplace place` process),
# after a fine-tune of FINETUNE_STEPS updates (step time and wall time),
# GDP trained from scratch on that graph alone for SCRATCH_SECONDS, and the
# fastest baseline of `devplace compare`. Prints a Markdown table.
#
#   POLICY=runs/policies/k80x2.pt CLUSTER=k80x2 \
#     HELD="held/rnnlm_l3.json held/nmt_h512.json resnet18.json" bash bench/gdp_generalisation.sh
#
# FINETUNE_STEPS=0 or SCRATCH_SECONDS=0 leaves that column out ("-"): a
# zero-shot table for every preset's policy takes minutes, not an hour.
#
# HELD defaults to built-in models at sizes the reference training does not
# use (written to runs/held/ by `devplace generate`) and, when it exists,
# runs/held/resnet18.json (tools/export_pytorch.py resnet18, then import).
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-build/devplace}
[ -x "$devplace" ] || bash scripts/build.sh
cluster=${CLUSTER:-k80x2}
policy=${POLICY:-runs/policies/$cluster.pt}
finetune=${FINETUNE_STEPS:-50}
scratch=${SCRATCH_SECONDS:-180}
mkdir -p runs/held
if [ -z "${HELD:-}" ]; then
  "$devplace" generate rnnlm --layers 3 --hidden 1024 -o runs/held/rnnlm_l3_h1024.json > /dev/null
  "$devplace" generate nmt --hidden 512 --batch 128 -o runs/held/nmt_h512_b128.json > /dev/null
  "$devplace" generate inception_v3 --batch 64 -o runs/held/inception_v3_b64.json > /dev/null
  HELD="runs/held/rnnlm_l3_h1024.json runs/held/nmt_h512_b128.json runs/held/inception_v3_b64.json"
  [ -f runs/held/resnet18.json ] && HELD="$HELD runs/held/resnet18.json"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
field() { python3 -c "import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print('-' if v is None else v)" "$@"; }
now() { date +%s.%N; }
# A step time to four places; a column left out (or a run that placed
# nothing) stays "-".
num() { python3 -c "import sys; print(sys.argv[1] if sys.argv[1] == '-' else '%.4f' % float(sys.argv[1]))" "$1"; }
tune_head=$([ "$finetune" = 0 ] && echo "fine-tuned (not run)" || echo "fine-tuned ($finetune updates) s")
scratch_head=$([ "$scratch" = 0 ] && echo "scratch (not run)" || echo "scratch (${scratch} s) s")
echo "| held-out graph | zero-shot s | its wall s | $tune_head | its wall s | $scratch_head | fastest baseline s (method) |"
echo "|---|---|---|---|---|---|---|"
for graph in $HELD; do
  name=$(basename "$graph" .json)
  t0=$(now)
  "$devplace" place --overwrite --method gdp --graph "$graph" --cluster "$cluster" --policy "$policy" --json --out "$work/$name-zero" > "$work/zero.json" 2> /dev/null
  t1=$(now)
  echo '{"step_time_s": null}' > "$work/tune.json"
  if [ "$finetune" != 0 ]; then
    "$devplace" place --overwrite --method gdp --graph "$graph" --cluster "$cluster" --policy "$policy" --max-steps "$finetune" --json \
      --out "$work/$name-tune" > "$work/tune.json" 2> /dev/null
  fi
  t2=$(now)
  echo '{"step_time_s": null}' > "$work/scratch.json"
  if [ "$scratch" != 0 ]; then
    "$devplace" place --overwrite --method gdp --graph "$graph" --cluster "$cluster" --max-seconds "$scratch" --json \
      --out "$work/$name-scratch" > "$work/scratch.json" 2> /dev/null
  fi
  "$devplace" compare --graph "$graph" --cluster "$cluster" --json > "$work/compare.json" 2> /dev/null
  best=$(python3 -c "
import json,sys
rows=[r for r in json.load(open(sys.argv[1])) if r.get('step_time_s') is not None and not r['oom'] and not r['invalid']]
r=min(rows,key=lambda r:r['step_time_s']); print('%.4f (%s)' % (r['step_time_s'], r['method']))" "$work/compare.json")
  tune_wall=$(python3 -c "print('-' if '$finetune' == '0' else '%.1f' % ($t2 - $t1))")
  printf "| %s | %s | %.1f | %s | %s | %s | %s |\n" "$name" "$(num "$(field "$work/zero.json" step_time_s)")" \
    "$(python3 -c "print($t1 - $t0)")" "$(num "$(field "$work/tune.json" step_time_s)")" "$tune_wall" \
    "$(num "$(field "$work/scratch.json" step_time_s)")" "$best"
done
