// scene.h — what examples/vulkan_embed simulates and draws, shared with the
// test that runs the same simulation through grove::Program and compares
// frames (tests/api/embed_frames_test.cpp).
#pragma once

#include <array>
#include <cstdint>

namespace vulkan_embed {

struct Patch {
  int32_t x0, y0;
  uint32_t salt;
};
// Random patches seeded into the 128 x 128 world of `grove aot sparse_life --size 128`.
constexpr std::array<Patch, 3> kPatches{{{8, 8, 1u}, {80, 20, 2u}, {40, 76, 3u}}};

constexpr int kPanel = 384;  // each panel's side, in pixels (the life module's map is 384 x 384)
constexpr int kWidth = 2 * kPanel, kHeight = kPanel;

// The colours (RGBA) of the frame: a live cell, a dead cell of an active
// block, a cell of an inactive block (left panel: the `alive` field); an
// active block's mark on the map and the map's background (right panel:
// the `map` field, which the `snapshot` kernel fills).
constexpr std::array<uint8_t, 4> kLive{255, 255, 255, 255};
constexpr std::array<uint8_t, 4> kDead{24, 40, 64, 255};
constexpr std::array<uint8_t, 4> kInactive{0, 0, 0, 255};
constexpr std::array<uint8_t, 4> kMapMark{255, 160, 0, 255};
constexpr std::array<uint8_t, 4> kMapEmpty{16, 16, 16, 255};

// Cells per pixel side in the left panel for a world of n x n cells.
constexpr int zoom_for(int n) { return n >= kPanel ? 1 : kPanel / n; }

}  // namespace vulkan_embed
