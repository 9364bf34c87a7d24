#!/usr/bin/env bash
# Installs what devplace needs, builds it, and runs the whole test suite.
#
#   bash scripts/test.sh              # Release build in build/; the learned
#                                     # placers' tests also under each other
#                                     # CPU capability (below)
#   bash scripts/test.sh --sanitize   # the same suite built with AddressSanitizer and
#                                     # UndefinedBehaviorSanitizer, in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

# The CPU capabilities ATen's kernels can take here besides the one it picks
# itself (avx2 where the CPU has AVX2 and FMA; libtorch 1.13 keeps avx512
# opt-in): `default` (no vector kernels) and `avx512` where the CPU has it.
# Float results differ between them, so a test that holds on one only
# fails on another machine (docs/rl.md, "What is reproducible").
other_capabilities() {
  local flags
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2> /dev/null || true)
  if [[ " $flags " == *" avx2 "* && " $flags " == *" fma "* ]]; then
    echo default
    if [[ " $flags " == *" avx512f "* && " $flags " == *" avx512vl "* && " $flags " == *" avx512bw "* &&
          " $flags " == *" avx512dq "* ]]; then
      echo avx512
    fi
  fi
}

if [ "${1:-}" != "--sanitize" ]; then
  bash scripts/build.sh
  cd build && ctest --output-on-failure -j "$(nproc)"
  # The learned placers' tests (ctest label `learned`, tests/CMakeLists.txt)
  # again under each other capability.
  for capability in $(other_capabilities); do
    echo "== the learned placers' tests with ATEN_CPU_CAPABILITY=$capability"
    ATEN_CPU_CAPABILITY=$capability ctest --output-on-failure -j "$(nproc)" -L learned
  done
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
launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD"
fi
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DDEVPLACE_SANITIZE=ON -DDEVPLACE_BUILD_BENCH=OFF \
  "${launcher[@]}" > /dev/null
cmake --build build-asan -j "$(nproc)"
cd build-asan && ctest --output-on-failure -j "$(nproc)"
