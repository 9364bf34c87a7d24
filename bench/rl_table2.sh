#!/usr/bin/env bash
# The learned placer on the 2017 paper's Table 2 settings (RNNLM, NMT and
# Inception-V3 on 1 CPU + 2 K80 and 1 CPU + 4 K80) and on the large RNNLM
# and NMT, under the simulator, against every baseline of `devplace
# compare`. Each row runs `devplace place` twice with the same budget: cold
# (the paper's method as is) and warm-started from the fastest baseline
# (`--warm-start best`). Writes the table into BENCHMARKS.md between the rl
# markers.
#
#   bash bench/rl_table2.sh                 # after scripts/build.sh; 300 s a run
#   RL_SECONDS=600 bash bench/rl_table2.sh  # the issue's 10-minute budget
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-build/devplace}
[ -x "$devplace" ] || bash scripts/build.sh
seconds=${RL_SECONDS:-300}
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT

settings="rnnlm:k80x2 rnnlm:k80x4 nmt:k80x2 nmt:k80x4 inception_v3:k80x2 inception_v3:k80x4 rnnlm_large:k80x4 nmt_large:k80x4"
for setting in $settings; do
  model=${setting%%:*}
  cluster=${setting##*:}
  name="$model-$cluster"
  echo "== $name" >&2
  "$devplace" compare --graph "$model" --cluster "$cluster" --json 2>/dev/null > "$runs/$name.compare.json"
  "$devplace" place --overwrite --graph "$model" --cluster "$cluster" --max-seconds "$seconds" --out "$runs/$name-cold" --json \
    2>/dev/null > "$runs/$name.cold.json"
  "$devplace" place --overwrite --graph "$model" --cluster "$cluster" --max-seconds "$seconds" --warm-start best \
    --out "$runs/$name-warm" --json 2>/dev/null > "$runs/$name.warm.json"
done

section=$(mktemp)
trap 'rm -rf "$runs" "$section"' EXIT
python3 - "$runs" "$seconds" "$(nproc)" "$(date -u +%Y-%m-%d)" $settings > "$section" <<'EOF'
import json, sys
runs, seconds, cores, day, settings = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]

def time_of(row):
    return None if row["oom"] or row["invalid"] else row["step_time_s"]

def fmt(t):
    return "OOM" if t is None else f"{t:.3f}"

print("<!-- rl:begin -->")
print(f"Produced by `RL_SECONDS={seconds} bash bench/rl_table2.sh` on {day}, {cores} cores; "
      f"each RL run {seconds} s of search (the warm start's imitation counts in it). Step times in simulated seconds.")
print()
print("| model | cluster | fastest baseline | expert | Scotch | RL cold | RL warm | cold vs fastest | warm vs fastest | samples/s cold | samples/s warm |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for setting in settings:
    model, cluster = setting.split(":")
    name = f"{runs}/{model}-{cluster}"
    rows = json.load(open(f"{name}.compare.json"))
    by_method = {r["method"]: time_of(r) for r in rows}
    ran = [(t, m) for m, t in by_method.items() if t is not None and m != "random"]
    fastest_t, fastest_m = min(ran)
    cells = [model, cluster, f"{fastest_m} {fastest_t:.3f}", fmt(by_method.get("expert")), fmt(by_method.get("scotch"))]
    rl = {}
    for mode in ("cold", "warm"):
        out = json.load(open(f"{name}.{mode}.json"))
        rl[mode] = out
        cells.append(fmt(None if out["oom"] else out["step_time_s"]))
    for mode in ("cold", "warm"):
        t = rl[mode]["step_time_s"]
        cells.append("-" if rl[mode]["oom"] else f"{fastest_t / t:.3f}x")
    for mode in ("cold", "warm"):
        cells.append(f"{rl[mode]['samples'] / rl[mode]['search_seconds']:.1f}")
    print("| " + " | ".join(cells) + " |")
print()
print("\"vs fastest\" is the fastest baseline's step time over the RL placement's: above 1 the learned placement is faster.")
print("<!-- rl:end -->")
EOF

bash bench/splice_section.sh rl "$section" "The learned placer on the 2017 paper's settings"
