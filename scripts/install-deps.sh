#!/usr/bin/env bash
# Installs the Debian 12 packages devplace needs to build and test, skipping
# those already installed. Safe to run again and again. With --fuzz, also
# clang and libFuzzer for bench/fuzz.sh.
set -euo pipefail

packages=(
  cmake ninja-build g++        # the build
  nlohmann-json3-dev           # graph, cluster and placement files
  libcli11-dev                 # the command line
  libgtest-dev                 # tests
  libbenchmark-dev             # benchmarks under bench/
  libscotch-dev                # Scotch static mapping: the 2017 paper's baseline
  libmetis-dev                 # METIS k-way partitioning: GDP's baseline
  libtorch-dev                 # the learned placers' networks, autograd and Adam (src/learned only)
  libgloo-dev                  # gloo's headers, which torch's ProcessGroupGloo.hpp includes: bench/transport_bench
  libopenblas0-serial          # a fast single-threaded BLAS for torch (the reference BLAS is 3x slower)
  libonnx-dev libprotobuf-dev  # devplace import: ONNX models, their checker and shape inference
  python3-torch python3-torchvision  # tools/: the ONNX test models (torchvision) and the PyTorch exporter
  pybind11-dev python3-dev     # the Python module devplace (python/), built for /usr/bin/python3
  python3-numpy python3-pytest # the Python module's arrays and its tests (ctest -L python)
  chromium                     # tests: the HTML report, loaded in headless Chromium, must check itself ok
)
# bench/fuzz.sh only (install-deps.sh --fuzz): libFuzzer comes with clang's
# runtime libraries, which clang only recommends.
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang libclang-rt-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
