#!/usr/bin/env bash
# Fits guided's shipped screen (policies/guided_screen.pt): guided searches
# on 16 (graph, cluster) pairs that no benchmark row uses (eight graphs:
# built-in models at sizes the tables never use and two synthetic ones;
# clusters from `generate cluster` with seeds 1-8 of the mixed profile,
# 31-34 tight and 41-44 hetero), one after another, each search's screen
# starting from the one before with all its rows, EVALUATIONS evaluations
# each. BENCHMARKS.md, "A screen fitted on other graphs".
# Usage: EVALUATIONS=5000 bash bench/train_screen.sh [OUT.pt]
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-build/devplace}
evaluations=${EVALUATIONS:-5000}
work=${WORK:-runs/train_screen}
screen=${1:-$work/guided_screen.pt}
mkdir -p "$work"
"$devplace" generate synthetic --ops 600 --seed 2 --width 4 -o "$work/g1.json" > /dev/null
"$devplace" generate synthetic --ops 2000 --seed 5 --width 8 -o "$work/g2.json" > /dev/null
"$devplace" generate rnnlm --layers 4 --steps 10 --hidden 2048 -o "$work/g3.json" > /dev/null
"$devplace" generate nmt --layers 2 --length 12 --hidden 768 -o "$work/g4.json" > /dev/null
"$devplace" generate transformer_xl2 --layers 3 --length 256 --memory 256 -o "$work/g5.json" > /dev/null
"$devplace" generate wavenet2x18 --stacks 3 --layers 12 -o "$work/g6.json" > /dev/null
"$devplace" generate bert_base --layers 4 -o "$work/g7.json" > /dev/null
"$devplace" generate gnmt2 --length 24 --hidden 768 -o "$work/g8.json" > /dev/null
for s in 1 2 3 4 5 6 7 8; do "$devplace" generate cluster --seed $s --profile mixed --max-devices 8 -o "$work/c$s.json" > /dev/null; done
for s in 31 32 33 34; do "$devplace" generate cluster --seed $s --profile tight --min-devices 3 --max-devices 8 -o "$work/c$s.json" > /dev/null; done
for s in 41 42 43 44; do "$devplace" generate cluster --seed $s --profile hetero --min-devices 3 --max-devices 8 -o "$work/c$s.json" > /dev/null; done
previous=none
i=0
for pair in g1:c1 g2:c2 g3:c3 g4:c4 g5:c5 g6:c6 g7:c7 g8:c8 g1:c31 g3:c32 g5:c33 g7:c34 g2:c41 g4:c42 g6:c43 g8:c44; do
  IFS=: read -r g c <<< "$pair"
  i=$((i + 1))
  "$devplace" place --graph "$work/$g.json" --cluster "$work/$c.json" --method guided --max-samples "$evaluations" \
    --seed "$i" --guided-screen "$previous" --guided-screen-rows 4096 --guided-screen-out "$work/screen$i.pt" --out "$work/run$i" --overwrite --json \
    | python3 -c "import json,sys; r=json.load(sys.stdin); print('$g $c', r['step_time_s'], r['samples'])"
  previous=$work/screen$i.pt
done
cp "$previous" "$screen"
echo "screen: $screen"
