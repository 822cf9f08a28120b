#!/bin/sh
# scripts/gpu-bundle.sh — packs what the CUDA suite and benchmarks need into
# one archive, out/gpu-bundle.tar.xz, for a GPU machine that has NVIDIA's
# driver but none of Grove's build dependencies: the test programs of
# build/ and grove_bench of build-release/ (both built here first, stripped
# into the archive), the shared libraries they load that a bare machine may
# lack (LLVM, oneTBB, OpenVDB and theirs; not the C and C++ runtimes, which
# any newer system has, nor the driver), what Vulkan needs besides NVIDIA's
# driver, and scripts/gpu-run.sh, which runs them there. Compressed, it
# stays under the 64 MiB a remote run may carry with the working tree
# (about 55 MiB with LLVM's 129 MB library; xz -9 takes two minutes).
#
#   make build && make configure-release && cmake --build build-release --target grove_bench
#   scripts/gpu-bundle.sh            # then, on the GPU machine: scripts/gpu-run.sh
set -eu

BUILD=${BUILD:-build}
RELEASE=${RELEASE:-build-release}
ARCHIVE=${ARCHIVE:-out/gpu-bundle.tar.xz}

programs="$BUILD/tests/grove_api_tests $BUILD/tests/grove_cuda_tests $BUILD/tests/grove_runtime_aot_tests
          $BUILD/tests/grove_c_api_test $RELEASE/bench/grove_bench"
# sparse_life's CUDA module, as `grove aot` wrote it for the ctest run.
modules="$BUILD/tests/life128_cuda.grove"
for p in $programs; do
  if [ ! -x "$p" ]; then
    echo "gpu-bundle: $p is not built (see the usage at the top of $0)" >&2
    exit 1
  fi
done
# (Written by the ctest run; made here where that has not run.)
if [ ! -e "$BUILD/tests/life128_cuda.grove" ]; then
  "$BUILD/tools/grove" aot sparse_life --size 128 --arch cuda -o "$BUILD/tests/life128_cuda.grove" ||
    { echo "gpu-bundle: cannot make sparse_life's CUDA module (is $BUILD/tools/grove built?)" >&2; exit 1; }
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/data"
cp $modules "$stage/data/"
for p in $programs; do
  strip -o "$stage/bin/$(basename "$p")" "$p"
done
# The libraries the programs load, as ldd resolves them here, less the C and
# C++ runtimes and the loader (present on every system, and a newer one
# there must not be shadowed by Debian's).
for p in $programs; do
  ldd "$p" | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libstdc++.so.*|libgcc_s.so.*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
# For Vulkan on the GPU, whose machine may have NVIDIA's driver but no
# Vulkan loader: Debian's loader, the GL dispatch libraries NVIDIA's Vulkan
# driver loads, and the validation layer the suite turns on (kept apart in
# vk/ and layers/: gpu-run.sh adds them for the Vulkan runs only).
mkdir -p "$stage/vk" "$stage/layers"
for lib in libvulkan.so.1 libGLdispatch.so.0 libGLX.so.0 libEGL.so.1 libOpenGL.so.0 libGL.so.1 \
           libVkLayer_khronos_validation.so; do
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ { print $NF; exit }')
  [ -n "$path" ] || path=/usr/lib/x86_64-linux-gnu/$lib
  if [ -e "$path" ]; then cp -L "$path" "$stage/vk/$lib"; else echo "gpu-bundle: no $lib here; Vulkan may not run there" >&2; fi
done
layer_json=/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
[ -e "$layer_json" ] && cp "$layer_json" "$stage/layers/"
cp scripts/gpu-run.sh "$stage/"
mkdir -p "$(dirname "$ARCHIVE")"
tar -C "$stage" -cf - . | xz -T2 -9 > "$ARCHIVE.tmp"
mv "$ARCHIVE.tmp" "$ARCHIVE"
if [ "$(du -k "$ARCHIVE" | cut -f1)" -gt $((60 * 1024)) ]; then
  echo "gpu-bundle: $ARCHIVE is over 60 MiB: with the working tree it may not fit in a 64 MiB carry" >&2
fi
echo "gpu-bundle: wrote $ARCHIVE ($(du -k "$ARCHIVE" | cut -f1) KiB): $(ls "$stage/bin" | tr '\n' ' ')and $(ls "$stage/lib" "$stage/vk" | wc -l) libraries"
