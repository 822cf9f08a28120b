#!/bin/sh
# scripts/gpu-bundle.sh — packs what the CUDA suite and benchmarks need into
# one archive, out/gpu-bundle.tar.xz, for a GPU machine that has NVIDIA's
# driver but none of Grove's build dependencies: the test programs of
# build/ and grove_bench of build-release/ (both built here first, stripped
# into the archive), the shared libraries they load that a bare machine may
# lack (LLVM, oneTBB, OpenVDB and theirs; not the C and C++ runtimes, which
# any newer system has, nor the driver), and scripts/gpu-run.sh, which runs
# them there. Compressed, it stays well under the 64 MiB a remote run may
# carry (about 50 MB with LLVM's 129 MB library).
#
#   make build && make configure-release && cmake --build build-release --target grove_bench
#   scripts/gpu-bundle.sh            # then, on the GPU machine: scripts/gpu-run.sh
set -eu

BUILD=${BUILD:-build}
RELEASE=${RELEASE:-build-release}
ARCHIVE=${ARCHIVE:-out/gpu-bundle.tar.xz}

programs="$BUILD/tests/grove_api_tests $BUILD/tests/grove_cuda_tests $RELEASE/bench/grove_bench"
for p in $programs; do
  if [ ! -x "$p" ]; then
    echo "gpu-bundle: $p is not built (see the usage at the top of $0)" >&2
    exit 1
  fi
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
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
cp scripts/gpu-run.sh "$stage/"
mkdir -p "$(dirname "$ARCHIVE")"
tar -C "$stage" -cf - . | xz -T2 -6 > "$ARCHIVE.tmp"
mv "$ARCHIVE.tmp" "$ARCHIVE"
echo "gpu-bundle: wrote $ARCHIVE ($(du -k "$ARCHIVE" | cut -f1) KiB): $(ls "$stage/bin" | tr '\n' ' ')and $(ls "$stage/lib" | wc -l) libraries"
