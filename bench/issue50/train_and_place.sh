#!/usr/bin/env bash
# Issue 50's architecture measurement: trains one device-head GDP policy per
# variant on two graphs and four clusters (2, 3, 4 and 5 devices), then
# places held-out graphs zero-shot on held-out clusters of 6 and 9 devices.
# Usage: SECONDS_PER_VARIANT=60 bash bench/issue50/train_and_place.sh
set -euo pipefail
devplace=${DEVPLACE:-build/devplace}
budget=${SECONDS_PER_VARIANT:-60}
out=${OUT:-runs/issue50}
mkdir -p "$out"
here=bench/issue50
"$devplace" generate synthetic --ops 300 --seed 1 -o "$out/train_synthetic.json" > /dev/null
"$devplace" generate rnnlm --layers 2 --steps 8 --hidden 1024 -o "$out/train_rnnlm.json" > /dev/null
"$devplace" generate synthetic --ops 500 --seed 9 --width 6 -o "$out/held_synthetic.json" > /dev/null
"$devplace" generate rnnlm --layers 3 --steps 6 --hidden 1536 -o "$out/held_rnnlm.json" > /dev/null
clusters="k80x2,p100x4,$here/train_two.json,$here/train_mixed4.json"
declare -A variants=([mlp_links]="--gdp-device-scoring mlp" [dot_nolinks]="--gdp-device-scoring dot --gdp-no-device-links")
for v in "${!variants[@]}"; do
  [ -n "${SKIP_TRAIN:-}" ] && continue
  "$devplace" train --graphs "$out/train_synthetic.json,$out/train_rnnlm.json" --cluster "$clusters" -o "$out/$v.pt" \
    --gdp-head devices ${variants[$v]} --max-seconds "$budget" --workers 1 --seed 1 --quiet --overwrite | head -1
done
printf '| graph | cluster | expert s | metis s |'
for v in "${!variants[@]}"; do printf ' %s zero-shot s | %s network alone s |' "$v" "$v"; done
echo
for g in held_synthetic held_rnnlm train_rnnlm; do
  for c in h100x8 "$here/held_mixed6.json"; do
    row="| $g | $(basename "$c" .json) |"
    for m in expert metis; do
      t=$("$devplace" place --graph "$out/$g.json" --cluster "$c" --method $m --out "$out/runs/$g-$(basename "$c" .json)-$m" --overwrite 2>/dev/null | grep -o 'step time [0-9.e+-]*' | head -1 | awk '{print $3}' || true)
      row="$row ${t:-fail} |"
    done
    for v in "${!variants[@]}"; do
      # Zero-shot (the start probes, then the most likely placement), and the
      # network alone (--start-bias 0: no probes, its most likely placement).
      for bias in "" "--start-bias 0"; do
        t=$("$devplace" place --graph "$out/$g.json" --cluster "$c" --method gdp --policy "$out/$v.pt" --samples-per-step 1 --seed 1 $bias --out "$out/runs/$g-$(basename "$c" .json)-$v${bias:+-alone}" --overwrite 2>/dev/null | grep -o 'step time [0-9.e+-]*' | head -1 | awk '{print $3}' || true)
        row="$row ${t:-fail} |"
      done
    done
    echo "$row"
  done
done
