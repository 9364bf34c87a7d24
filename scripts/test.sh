#!/usr/bin/env bash
# Installs what devplace needs, builds it, and runs the whole test suite.
#
#   bash scripts/test.sh              # Release build in build/; the learned
#                                     # placers' tests once more with avx512
#                                     # kernels where the CPU has them (below)
#   bash scripts/test.sh --sanitize   # the same suite built with AddressSanitizer and
#                                     # UndefinedBehaviorSanitizer, in build-asan/,
#                                     # with ATen's plain (non-vector) kernels
#   bash scripts/test.sh --sanitize-core
#                                     # the layers below the learned ones (no torch)
#                                     # and their tests (label `core`), sanitized
#                                     # as --sanitize does: CI's sanitizer run
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

# ATen picks its kernels by CPU capability (avx2 where the CPU has AVX2 and
# FMA; libtorch 1.13 keeps avx512 opt-in), and float results differ between
# them, so a test that holds on one only fails on another machine
# (docs/rl.md, "What is reproducible"). The learned placers' tests run under
# each capability this CPU has: the plain run under ATen's own choice, the
# sanitizer run (--sanitize) under `default` (no vector kernels), and the
# learned tests once more here under avx512 where the CPU has it.
has_avx512() {
  local flags
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2> /dev/null || true)
  [[ " $flags " == *" avx512f "* && " $flags " == *" avx512vl "* && " $flags " == *" avx512bw "* &&
     " $flags " == *" avx512dq "* ]]
}

mode="${1:-}"
case "$mode" in
  "" | --sanitize | --sanitize-core) ;;
  *) echo "scripts/test.sh: unknown option '$mode' (none, --sanitize or --sanitize-core)" >&2; exit 2 ;;
esac

if [ -z "$mode" ]; then
  bash scripts/build.sh
  cd build && ctest --output-on-failure -j "$(nproc)"
  if has_avx512; then
    echo "== the learned placers' tests (ctest -L learned) with ATEN_CPU_CAPABILITY=avx512"
    ATEN_CPU_CAPABILITY=avx512 ctest --output-on-failure -j "$(nproc)" -L learned
  fi
  exit 0
fi

# The sanitizers' settings, for the build (gtest_discover_tests runs each
# test program to list its tests) and for ctest:
# - Undefined behaviour is compiled as non-recoverable
#   (-fno-sanitize-recover=undefined, CMakeLists.txt), so the first one aborts
#   the program and fails its test; halt_on_error repeats that for any check
#   built recoverable.
# - detect_container_overflow=0: libtorch, libonnx and libprotobuf are not
#   instrumented, and a container filled on one side of that line and read
#   on the other gives false reports. (libstdc++ annotates its containers only
#   with _GLIBCXX_SANITIZE_VECTOR, which we do not set; this keeps it off.)
# - LeakSanitizer stays on for our code; scripts/lsan.supp names the
#   uninstrumented libraries whose process-lifetime allocations (op
#   registries, protobuf descriptors, thread pools) it would report.
export ASAN_OPTIONS="detect_container_overflow=0:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
# ATen's plain kernels here (above): the third capability the learned tests meet.
export ATEN_CPU_CAPABILITY=default
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD"
  # -g1 puts the build folder in the debug info, which ccache then hashes:
  # every clone in a new folder (CI's) would miss the whole cache. The line
  # numbers are what the sanitizers' reports need, and they do not move.
  export CCACHE_NOHASHDIR=true
fi
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEVPLACE_SANITIZE=ON -DDEVPLACE_BUILD_BENCH=OFF \
  "${launcher[@]}" > /dev/null
# --sanitize-core: a clean clone builds the whole sanitized suite in about
# 35 minutes on 2 cores and runs it in 25 more, most of both in torch, which
# is not instrumented anyway; CI's time holds the layers below it (the
# graph, simulator, searches and baselines: about 10 minutes in all).
if [ "$mode" = --sanitize-core ]; then
  cmake --build build-asan -j "$(nproc)" --target core_tests
  cd build-asan && ctest --output-on-failure -j "$(nproc)" -L core
  exit 0
fi
cmake --build build-asan -j "$(nproc)"
cd build-asan && ctest --output-on-failure -j "$(nproc)"
