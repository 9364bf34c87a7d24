#!/usr/bin/env bash
# Configures and builds devplace (Release) into build/. Uses ccache when it
# is installed (not required), keyed relative to this checkout so that other
# clones share the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" > /dev/null
cmake --build build -j "$(nproc)"
