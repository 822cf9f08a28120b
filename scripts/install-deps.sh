#!/usr/bin/env bash
# Installs the Debian packages Grove needs to build, test and benchmark.
#
# Safe to run any number of times: when every package is already installed it
# checks with dpkg-query and returns at once, without touching apt. Otherwise
# it runs `apt-get update` once and installs only the missing packages,
# non-interactively. Runs as root directly, or through sudo otherwise.
set -euo pipefail

packages=(
  # Toolchain and build.
  build-essential cmake ninja-build ccache pkg-config
  # Tests and benchmarks.
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # make fuzz: clang with libFuzzer and the sanitizer runtimes.
  clang libclang-rt-14-dev
  # PNG writing in the examples (stb_image_write.h).
  libstb-dev
  # The Vulkan backend: loader and headers, Mesa's drivers (lavapipe runs
  # compute on the CPU), the Khronos validation layer, SPIR-V tools and
  # headers, and glslang for the hand-written shaders.
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers
  # volk loads the Vulkan entry points (as source, compiled into Grove).
  libvulkan-volk-dev
  spirv-tools spirv-headers glslang-tools
  # The LLVM CPU backend (and later CUDA through NVPTX): LLVM 19, the newest
  # Debian packages, as a shared library; lld links each kernel into a
  # shared object; oneTBB runs parallel tasks.
  llvm-19-dev liblld-19-dev libtbb-dev
  # OpenVDB and NanoVDB exchange (Grove::vdb, `grove vdb`), and OpenVDB as
  # the baseline of the CPU backend's sparse rows (its headers need Boost's).
  libopenvdb-dev libnanovdb-dev libboost-dev
  # The examples' window (a Vulkan swapchain through GLFW; X11 and XRandR
  # headers for its screenshots), and Xvfb, the X server without a screen
  # that the window test runs an example under.
  libglfw3-dev libx11-dev libxrandr-dev xvfb
  # Not used by Grove: with it installed, LLVM's CMake package checks a C
  # header, which broke consumer projects that loaded it; the consumer test
  # (tests/consumer, C++ only) runs with it present to show they no longer do.
  libedit-dev
)

is_installed() {
  local status
  status=$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) || return 1
  [[ "$status" == "installed" ]]
}

missing=()
for pkg in "${packages[@]}"; do
  if ! is_installed "$pkg"; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: not running as root and sudo is not available;" \
    "install them as root, e.g. apt-get install ${missing[*]}" >&2
  exit 1
fi

# env passes DEBIAN_FRONTEND through sudo, which would otherwise drop it.
apt_opts=(-y -q -o DPkg::Lock::Timeout=600)

echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get "${apt_opts[@]}" install --no-install-recommends "${missing[@]}"

still_missing=()
for pkg in "${missing[@]}"; do
  if ! is_installed "$pkg"; then
    still_missing+=("$pkg")
  fi
done
if [[ ${#still_missing[@]} -ne 0 ]]; then
  echo "install-deps: still missing after apt-get install: ${still_missing[*]}" >&2
  exit 1
fi
echo "install-deps: installed ${missing[*]}"
