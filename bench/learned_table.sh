#!/usr/bin/env bash
# The learned placers, `rl` (the 2017 seq2seq placer), `hdp` (the 2018
# Grouper + Placer) and `gdp` (METHODS="gdp"), against the baselines of `devplace compare` and
# FlexFlow's `mcmc` search at the same budget on
#   - the 2017 paper's Table 2 settings (RNNLM, NMT, Inception-V3 on
#     1 CPU + 2 K80 and 1 CPU + 4 K80) and the large RNNLM and NMT on 4 K80s;
#   - GDP's twelve settings (its Table 1), each on the P100 preset with the
#     device count GDP gives (../shared/papers/README.md).
# Every learned run is cold (no warm start) and both methods get the same
# budget. Search cost per run is read from its curve.csv: the seconds and
# samples until the best so far first came within 1 % of the run's final best.
# Writes the tables into BENCHMARKS.md between the learned markers.
#
#   bash bench/learned_table.sh                          # 180 s a learned run
#   LEARNED_SECONDS=600 bash bench/learned_table.sh      # a longer time budget
#   LEARNED_SAMPLES=5000 bash bench/learned_table.sh     # a sample budget instead
#                                                        # (independent of machine load)
#   ROWS="nmt:k80x4 gnmt8:p100x8" bash bench/learned_table.sh   # a subset of rows
#   LEARNED_RUNS=runs/learned bash bench/learned_table.sh        # keep every run's folder
#   METHODS=hdp SECTION=learned-gdp ROWS="..." bash bench/learned_table.sh
#       # one learned method only (the other's columns show "-"), written to
#       # its own section of BENCHMARKS.md so the other table stays (TITLE:
#       # the heading a new section gets)
set -euo pipefail
cd "$(dirname "$0")/.."
devplace=${DEVPLACE:-build/devplace}
[ -x "$devplace" ] || bash scripts/build.sh

paper2017="rnnlm:k80x2 rnnlm:k80x4 nmt:k80x2 nmt:k80x4 inception_v3:k80x2 inception_v3:k80x4 rnnlm_large:k80x4 nmt_large:k80x4"
# GDP's Table 1: RNNLM 2 and 4 layers, GNMT 2/4/8, Transformer-XL 2/4/8,
# Inception-V3, AmoebaNet, WaveNet 2x18 and 4x36, on 2, 4 or 8 P100s.
gdp="rnnlm:p100x2 rnnlm4:p100x4 gnmt2:p100x2 gnmt4:p100x4 gnmt8:p100x8 transformer_xl2:p100x2 transformer_xl4:p100x4 transformer_xl8:p100x8 inception_v3:p100x2 amoebanet:p100x4 wavenet2x18:p100x2 wavenet4x36:p100x4"
rows=${ROWS:-"$paper2017 $gdp"}
# mcmc runs with the learned placers' budget, like one of them: the same
# seconds (LEARNED_SECONDS) or the same number of evaluations as they get
# samples (LEARNED_SAMPLES), so every row says what plain search does with it.
methods=${METHODS:-"rl hdp mcmc"}
section_name=${SECTION:-learned}

# The budget: a sample budget when LEARNED_SAMPLES is given, else seconds.
if [ -n "${LEARNED_SAMPLES:-}" ]; then
  budget=(--max-samples "$LEARNED_SAMPLES")
  budget_words="$LEARNED_SAMPLES sampled placements"
  command="LEARNED_SAMPLES=$LEARNED_SAMPLES"
else
  seconds=${LEARNED_SECONDS:-180}
  budget=(--max-seconds "$seconds")
  budget_words="$seconds s of search"
  command="LEARNED_SECONDS=$seconds"
fi
[ -n "${ROWS:-}" ] && command="$command ROWS=\"$ROWS\""
[ -n "${METHODS:-}" ] && command="$command METHODS=\"$METHODS\""
[ -n "${SECTION:-}" ] && command="$command SECTION=$SECTION"
command="$command bash bench/learned_table.sh"

if [ -n "${LEARNED_RUNS:-}" ]; then
  runs=$LEARNED_RUNS
  mkdir -p "$runs"
  section=$(mktemp)
  trap 'rm -f "$section"' EXIT
else
  runs=$(mktemp -d)
  section=$(mktemp)
  trap 'rm -rf "$runs" "$section"' EXIT
fi

source bench/lib/run_json.sh

for row in $rows; do
  model=${row%%:*}
  cluster=${row##*:}
  name="$model-$cluster"
  echo "== $name: baselines" >&2
  run_json "$runs/$name.compare.json" compare --graph "$model" --cluster "$cluster" --json
  for method in $methods; do
    echo "== $name: $method (${budget[*]})" >&2
    rm -rf "$runs/$name-$method"
    run_json "$runs/$name.$method.json" place --overwrite --graph "$model" --cluster "$cluster" --method "$method" \
      "${budget[@]}" --out "$runs/$name-$method" --json
  done
done

python3 - "$runs" "$command" "$budget_words" "$(nproc)" "$(date -u +%Y-%m-%d)" \
  "$paper2017" "$gdp" "$methods" "$section_name" $rows > "$section" <<'EOF'
import sys
sys.path.insert(0, "bench/lib")
from bench_results import load, search_cost
runs, command, budget, cores, day, paper2017, gdp, methods, section_name = sys.argv[1:10]
rows = sys.argv[10:]
methods = methods.split()

def baseline_time(row):
    return None if row["oom"] or row["invalid"] else row["step_time_s"]

def fmt(t):
    return "OOM" if t is None else f"{t:.3f}"

def learned_time(out):
    return None if out is None or out["oom"] or out["step_time_s"] is None else out["step_time_s"]

# rl and hdp always have columns (a table of one shows "-" for the other);
# a later method (gdp) gets its own when it runs.
shown = ["rl", "hdp"] + [m for m in methods if m not in ("rl", "hdp")]
header = ("| model | cluster | fastest baseline | expert | METIS | " + " | ".join(shown) + " | "
          + " | ".join(f"{m} vs fastest" for m in shown) + " | "
          + " | ".join(f"{m} to 1 % (s / samples)" for m in shown) + " | "
          + " | ".join(f"{m} samples/s" for m in shown) + " |")

def table_row(model, cluster):
    name = f"{runs}/{model}-{cluster}"
    compare = load(f"{name}.compare.json")
    if compare is None:
        baselines = {}
        cells = [model, cluster, "error", "error", "error"]
    else:
        baselines = {r["method"]: baseline_time(r) for r in compare}
        ran = sorted((t, m) for m, t in baselines.items() if t is not None and m != "random")
        fastest = f"{ran[0][1]} {ran[0][0]:.3f}" if ran else "none (all OOM)"
        cells = [model, cluster, fastest, fmt(baselines.get("expert")), fmt(baselines.get("metis"))]
    ran = [t for m, t in baselines.items() if t is not None and m != "random"]
    fastest_t = min(ran) if ran else None
    outs = {m: load(f"{name}.{m}.json") for m in shown}
    for m in shown:
        if m not in methods:
            cells.append("-")
            continue
        cells.append("error" if outs[m] is None else fmt(learned_time(outs[m])))
    for m in shown:
        t = learned_time(outs[m])
        cells.append("-" if t is None or fastest_t is None else f"{fastest_t / t:.3f}x")
    for m in shown:
        if m not in methods:
            cells.append("-")
            continue
        cost = None if outs[m] is None else search_cost(f"{name}-{m}/curve.csv")
        cells.append("none" if cost is None else f"{cost[0]:.1f} / {cost[1]}")
    for m in shown:
        out = outs[m]
        if out is None or not out["search_seconds"]:
            cells.append("-")
        else:
            cells.append(f"{out['samples'] / out['search_seconds']:.1f}")
    return "| " + " | ".join(cells) + " |"

groups = [("The 2017 paper's Table 2 settings and the large variants (K80 presets)", paper2017.split()),
          ("GDP's Table 1 settings (P100 presets, GDP's device counts)", gdp.split())]
known = set(paper2017.split()) | set(gdp.split())
groups.append(("Other settings", [r for r in rows if r not in known]))

print(f"<!-- {section_name}:begin -->")
ran = " and ".join(f"`{m}`" for m in methods)
print(f"Produced by `{command}` on {day}, {cores} cores; every learned run cold (no warm start), "
      f"default settings, {budget} each for {ran}. Step times in simulated seconds.")
for title, members in groups:
    chosen = [r for r in rows if r in members]
    if not chosen:
        continue
    print()
    print(f"{title}:")
    print()
    print(header)
    print("|" + "---|" * header.count(" | ") + "---|")
    for r in chosen:
        model, cluster = r.split(":")
        print(table_row(model, cluster))
print()
print("\"vs fastest\" is the fastest baseline's step time (`random` left out) over the learned placement's: "
      "above 1 the learned placement is faster. \"to 1 %\" is the search time and the samples until the run's "
      "best so far first came within 1 % of its final best (from its curve.csv); \"none\" when no sampled "
      "placement ran, OOM when no placement fitted.")
print(f"<!-- {section_name}:end -->")
EOF

bash bench/splice_section.sh "$section_name" "$section" "${TITLE:-The learned placers: rl and hdp (issue 13)}"
