#!/bin/sh
# scripts/gpu-run.sh — on a machine with an NVIDIA GPU and driver, runs what
# scripts/gpu-bundle.sh packed: the parameterised suite and the stress tests
# on Arch::Cuda, the AOT module tests on CUDA modules (saved by a Program
# and by `grove aot`, run by grove_runtime), the CUDA tests of tests/cuda,
# and the CUDA rows of
# grove_bench against nvcc's kernels; then the same suite and the Vulkan
# rows on the GPU through Vulkan (NVIDIA's Vulkan driver, with the bundled
# loader and validation layer). Results go to $OUT (default out/gpu): each
# program's output, bench-cuda.json and bench-vulkan.json (8 files, as a
# remote run brings back at most). Exits non-zero
# when a test or a benchmark failed. Where there is no driver, the tests of
# that API skip and say why, as on every machine. VULKAN=0 leaves Vulkan out.
#
#   scripts/gpu-run.sh [ARCHIVE]      (default out/gpu-bundle.tar.xz)
# The test steps run side by side, then the benchmarks one at a time. Each
# step is stopped after STEP_TIMEOUT seconds (default 240; the slow tests'
# step after SLOW_TIMEOUT), so that a hang in one leaves the others their
# time; its output so far is kept.
# CUDA_FILTER and VULKAN_FILTER replace the suite's test filters;
# BENCH_FILTER replaces the benchmarks' filter (default: every row that
# runs on CUDA, and the baselines those share with other backends); extra
# arguments for grove_bench come through BENCH_ARGS (e.g.
# BENCH_ARGS=--benchmark_repetitions=5).
set -u

ARCHIVE=${1:-out/gpu-bundle.tar.xz}
OUT=${OUT:-out/gpu}
DIR=$(mktemp -d)
mkdir -p "$OUT"
xz -dc "$ARCHIVE" | tar -C "$DIR" -xf - || { echo "gpu-run: cannot unpack $ARCHIVE" >&2; exit 1; }
export LD_LIBRARY_PATH="$DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export XDG_CACHE_HOME="$DIR/cache"
# libdevice for kernels that call math functions: the toolkit, where there is one.
[ -z "${CUDA_PATH:-}" ] && [ -d /usr/local/cuda ] && export CUDA_PATH=/usr/local/cuda

status=0
run() {  # run NAME COMMAND...: output to $OUT/NAME.txt and its last lines here
  name=$1
  shift
  echo "== $name: $*"
  timeout -k 5 "${STEP_TIMEOUT:-240}" "$@" > "$OUT/$name.txt" 2>&1
  rc=$?
  [ "$rc" -eq 124 ] && echo "gpu-run: $name stopped after ${STEP_TIMEOUT:-240} s" >> "$OUT/$name.txt"
  tail -n 15 "$OUT/$name.txt"
  echo "== $name: exit $rc"
  echo "$rc" > "$DIR/$name.rc"
  [ "$rc" -eq 0 ] || status=1
}
# The test steps run side by side (the machine has many cores, and the
# drivers' compilers take most of their time); the benchmarks run alone,
# after them. A step in the background keeps its exit status in $DIR.
collect() {
  wait
  for f in "$DIR"/*.rc; do [ -e "$f" ] && [ "$(cat "$f")" != 0 ] && status=1; done
  rm -f "$DIR"/*.rc
}

command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
# Tests whose kernels the drivers take minutes over (on an H200: 48 s and
# more through CUDA, over 100 s through Vulkan) run in a step of their own,
# with SLOW_TIMEOUT seconds (default 360; SLOW: gtest patterns, positive
# ones only).
SLOW=${SLOW-*Misuse.11_*}  # (SLOW= leaves them out)
# NVIDIA's Vulkan driver, where the loader would not find it by itself; the
# bundled loader and validation layer, for the steps that use Vulkan.
for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
           /etc/vulkan/icd.d/nvidia_icd.json; do
  if [ -z "${VK_DRIVER_FILES:-}" ] && [ -e "$icd" ]; then VK_DRIVER_FILES="$icd"; fi
done
with_vulkan() {
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$DIR/vk" VK_LAYER_PATH="$DIR/layers"
  [ -n "${VK_DRIVER_FILES:-}" ] && export VK_DRIVER_FILES
  # (The AOT tests find the CUDA module next to where this names the Vulkan one.)
  export GROVE_TEST_LIFE_MODULE="$DIR/data/life128.grove"
}

# The tests, side by side.
run suite "$DIR/bin/grove_api_tests" --gtest_filter="${CUDA_FILTER:-Backends/*/cuda:Modules/*/cuda-$SLOW}" &
# The CUDA tests of tests/cuda, then grove_runtime alone, from C++ and from C
# (whose 77 means skipped: no driver).
(export GROVE_TEST_LIFE_MODULE="$DIR/data/life128.grove"
 run cuda_tools sh -c '"$1/grove_cuda_tests" || exit 1
  "$1/grove_runtime_aot_tests" --gtest_filter="*/cuda" || exit 1
  "$1/grove_c_api_test" cuda; rc=$?; [ "$rc" -eq 77 ] && rc=0; exit "$rc"' sh "$DIR/bin") &
if [ "${VULKAN:-1}" != 0 ]; then
  (with_vulkan; run vulkan_suite "$DIR/bin/grove_api_tests" --gtest_filter="${VULKAN_FILTER:-Backends/*/vulkan-$SLOW}") &
fi
if [ -n "$SLOW" ]; then
  (with_vulkan; STEP_TIMEOUT=${SLOW_TIMEOUT:-360}
   run slow "$DIR/bin/grove_api_tests" --gtest_filter="$SLOW-*/interp:*/cpu") &
fi
collect

# The benchmarks, one at a time; then the sparse stencil again with near
# reads on (GROVE_NEAR_READS=1; off on GPUs by default), into the same
# step's output: whether GPUs should have them.
BENCH_TWICE='"$0" --benchmark_filter="$1" --out_json="$2" $4; rc=$?
echo "== $3 again, with GROVE_NEAR_READS=1"
GROVE_NEAR_READS=1 "$0" --benchmark_filter="$3" $4 || rc=1
exit $rc'
run bench sh -c "$BENCH_TWICE" "$DIR/bin/grove_bench" \
  "${BENCH_FILTER:-cuda|^dense_saxpy/baseline|^many_kernels_.*/baseline}" "$OUT/bench-cuda.json" \
  "^cuda_sparse_stencil" "${BENCH_ARGS:-}"
if [ "${VULKAN:-1}" != 0 ]; then
  (with_vulkan; run vulkan_bench sh -c "$BENCH_TWICE" "$DIR/bin/grove_bench" "${VULKAN_BENCH_FILTER:-^vk_}" \
    "$OUT/bench-vulkan.json" "^vk_sparse_stencil" "${BENCH_ARGS:-}")
fi
collect
rm -rf "$DIR"
exit $status
