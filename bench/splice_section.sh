#!/usr/bin/env bash
# Replaces the section of BENCHMARKS.md between "<!-- NAME:begin -->" and
# "<!-- NAME:end -->" with the file SECTION (which carries both markers), or
# appends it under HEADING when BENCHMARKS.md has no such section yet.
#
#   bash bench/splice_section.sh NAME SECTION "HEADING"
set -euo pipefail
name=$1
section=$2
heading=$3
cd "$(dirname "$0")/.."
spliced=$(mktemp)
trap 'rm -f "$spliced"' EXIT
if grep -q "<!-- $name:begin -->" BENCHMARKS.md; then
  awk -v file="$section" -v begin="<!-- $name:begin -->" -v end="<!-- $name:end -->" '
    $0 == begin { while ((getline line < file) > 0) print line; skipping = 1; next }
    $0 == end { skipping = 0; next }
    !skipping { print }' BENCHMARKS.md > "$spliced"
else
  { cat BENCHMARKS.md; echo; echo "## $heading"; echo; cat "$section"; } > "$spliced"
fi
mv "$spliced" BENCHMARKS.md
trap - EXIT
echo "BENCHMARKS.md updated"
