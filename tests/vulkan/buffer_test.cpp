// tests/vulkan/buffer_test.cpp — storage buffers: zero-fill on creation,
// writes and reads at any offset and size, fills, id checks, errors; each
// test twice, in the device's own memory (unified on lavapipe: reads from
// the buffer's mapping) and as a discrete GPU's (staging copies).
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <cstring>
#include <string>
#include <vector>

#include "tests/vulkan/vulkan_fixture.h"

namespace grove::vk::testing {
namespace {

// The parameter: whether the device may use unified memory.
class VulkanBuffers : public VulkanTest, public ::testing::WithParamInterface<bool> {
 protected:
  DeviceOptions options() const override {
    DeviceOptions o;
    o.profile.no_unified_memory = !GetParam();
    return o;
  }
};
INSTANTIATE_TEST_SUITE_P(Memory, VulkanBuffers, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "unified" : "staged"; });

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>((i * 131 + seed * 7 + 1) & 0xff);
  return out;
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_P(VulkanBuffers, NewBuffersAreZeroAndRoundTripAtAnyOffset) {
  for (std::uint64_t size : {1ull, 4ull, 13ull, 1000ull, 4096ull, 65536ull + 12, (3ull << 20) + 5}) {
    SCOPED_TRACE("size " + std::to_string(size));
    const BufferId b = device().create_buffer(size, "roundtrip");
    EXPECT_EQ(device().buffer_size(b), size);
    std::vector<unsigned char> model(size, 0);
    std::vector<unsigned char> got(size, 0xee);
    device().read_buffer(b, 0, got.data(), size);
    ASSERT_EQ(got, model) << "a new buffer must read as zero";

    // Writes at unaligned and aligned offsets, of unaligned lengths.
    const std::uint64_t offsets[] = {0, 1, 3, 4, size / 2, size - 1};
    unsigned seed = 0;
    for (std::uint64_t offset : offsets) {
      if (offset >= size) continue;
      const std::uint64_t n = std::min<std::uint64_t>(size - offset, 1 + (offset * 7 + 5) % 3001);
      const std::vector<unsigned char> data = pattern(n, ++seed);
      device().write_buffer(b, offset, data.data(), n);
      std::memcpy(model.data() + offset, data.data(), n);
    }
    device().read_buffer(b, 0, got.data(), size);
    ASSERT_EQ(got, model);

    // A partial read at an odd offset.
    if (size > 3) {
      std::vector<unsigned char> part(size - 3);
      device().read_buffer(b, 3, part.data(), part.size());
      EXPECT_TRUE(std::equal(part.begin(), part.end(), model.begin() + 3));
    }
    device().destroy_buffer(b);
  }
}

// Larger than the 64 MiB staging buffer, so the copies go in chunks.
TEST_P(VulkanBuffers, TransfersLargerThanStagingAreChunked) {
  const std::uint64_t size = std::min<std::uint64_t>((64ull << 20) + 4096 + 8, device().info().max_storage_buffer_range);
  const BufferId b = device().create_buffer(size, "large");
  std::vector<std::uint32_t> words(size / 4);
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = static_cast<std::uint32_t>(i * 2654435761u);
  device().write_buffer(b, 0, words.data(), words.size() * 4);
  std::vector<std::uint32_t> got(words.size());
  device().read_buffer(b, 0, got.data(), got.size() * 4);
  EXPECT_TRUE(got == words);
}

TEST_P(VulkanBuffers, FillSetsWholeWordsInRange) {
  const BufferId b = device().create_buffer(4096, "fill");
  device().fill_buffer(b, 0, 4096, 0x11111111u);
  device().fill_buffer(b, 64, 128, 0xdeadbeefu);
  device().fill_buffer(b, 4092, 4, 7u);
  device().fill_buffer(b, 100 * 4, 0, 9u);  // empty: no effect
  const std::vector<std::uint32_t> words = read_words(b);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::uint32_t want = i == 1023 ? 7u : (i >= 16 && i < 48) ? 0xdeadbeefu : 0x11111111u;
    ASSERT_EQ(words[i], want) << "word " << i;
  }
}

TEST_P(VulkanBuffers, WritesFillsAndReadsAreOrdered) {
  const BufferId b = device().create_buffer(1024, "ordered");
  std::vector<std::uint32_t> ones(256, 1);
  device().write_buffer(b, 0, ones.data(), 1024);
  device().fill_buffer(b, 0, 512, 5);
  std::vector<std::uint32_t> twos(64, 2);
  device().write_buffer(b, 256, twos.data(), 256);
  const std::vector<std::uint32_t> words = read_words(b);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::uint32_t want = i < 64 ? 5u : i < 128 ? 2u : 1u;
    ASSERT_EQ(words[i], want) << "word " << i;
  }
}

TEST_P(VulkanBuffers, RecreatedBufferIsZeroAgain) {
  for (int round = 0; round < 5; ++round) {
    const BufferId b = device().create_buffer(1 << 16);
    for (std::uint32_t w : read_words(b)) ASSERT_EQ(w, 0u) << "round " << round;
    device().fill_buffer(b, 0, 1 << 16, 0xffffffffu);
    device().destroy_buffer(b);
  }
}

TEST_P(VulkanBuffers, BadRangesAndIdsAreErrorsAndLeaveTheDeviceUsable) {
  const BufferId b = device().create_buffer(100, "small");
  char data[16] = {};
  EXPECT_NE(error_of([&] { device().write_buffer(b, 90, data, 16); }).find("outside buffer 'small' of 100 bytes"),
            std::string::npos);
  EXPECT_NE(error_of([&] { device().read_buffer(b, 101, data, 0); }).find("outside"), std::string::npos);
  EXPECT_NE(error_of([&] { device().read_buffer(b, UINT64_MAX, data, 2); }).find("outside"), std::string::npos);
  EXPECT_NE(error_of([&] { device().fill_buffer(b, 2, 8, 0); }).find("multiples of 4"), std::string::npos);
  EXPECT_NE(error_of([&] { device().fill_buffer(b, 96, 8, 0); }).find("outside"), std::string::npos);
  EXPECT_NE(error_of([&] { device().read_buffer(BufferId{}, 0, data, 4); }).find("read_buffer"),
            std::string::npos);

  device().destroy_buffer(b);
  EXPECT_NE(error_of([&] { device().write_buffer(b, 0, data, 4); }).find("destroyed"), std::string::npos);
  EXPECT_NE(error_of([&] { device().destroy_buffer(b); }).find("destroy_buffer"), std::string::npos);

  // A new buffer reusing the slot does not answer to the stale id.
  const BufferId c = device().create_buffer(100, "reused");
  EXPECT_NE(b, c);
  EXPECT_NE(error_of([&] { device().buffer_size(b); }).find("buffer_size"), std::string::npos);
  std::uint32_t word = 42;
  device().write_buffer(c, 96, &word, 4);
  word = 0;
  device().read_buffer(c, 96, &word, 4);
  EXPECT_EQ(word, 42u);
}

TEST_P(VulkanBuffers, ManyBuffersLiveAtOnce) {
  std::vector<BufferId> buffers;
  for (std::uint32_t i = 0; i < 64; ++i) {
    buffers.push_back(device().create_buffer(256 + i * 4));
    device().fill_buffer(buffers.back(), 0, 256, i);
  }
  for (std::uint32_t i = 0; i < 64; ++i) {
    std::uint32_t first = 0, extra = 1;
    device().read_buffer(buffers[i], 0, &first, 4);
    EXPECT_EQ(first, i);
    if (i > 0) {
      device().read_buffer(buffers[i], 256, &extra, 4);
      EXPECT_EQ(extra, 0u);
    }
  }
  for (BufferId b : buffers) device().destroy_buffer(b);
}

// Device::host_memory: the buffer's own bytes where memory is unified,
// after the work queued before it (a fill here) has finished; host writes
// are seen by work queued after them. Nothing on a staged device.
TEST_P(VulkanBuffers, HostMemoryIsTheBufferItselfWhereMemoryIsUnified) {
  const BufferId b = device().create_buffer(4096, "mapped");
  device().fill_buffer(b, 0, 4096, 0x01020304u);
  const std::span<std::byte> bytes = device().host_memory(b);
  if (!GetParam() || !device().info().unified_memory) {
    EXPECT_TRUE(bytes.empty());
    EXPECT_FALSE(!GetParam() && device().info().unified_memory) << "the profile turns unified memory off";
    return;
  }
  ASSERT_EQ(bytes.size(), 4096u);
  std::vector<std::uint32_t> words(1024);
  std::memcpy(words.data(), bytes.data(), 4096);
  for (std::size_t i = 0; i < words.size(); ++i) ASSERT_EQ(words[i], 0x01020304u) << "word " << i;
  for (std::uint32_t i = 0; i < 1024; ++i) std::memcpy(bytes.data() + 4 * i, &i, 4);
  device().fill_buffer(b, 0, 16, 7);  // after the host's writes
  words = read_words(b);
  for (std::uint32_t i = 0; i < 1024; ++i) ASSERT_EQ(words[i], i < 4 ? 7u : i) << "word " << i;
  // Each look after new work waits for that work; a look with nothing
  // queued since the last one (which submits nothing) sees the same bytes.
  for (std::uint32_t v : {9u, 10u}) {
    device().fill_buffer(b, 16, 16, v);
    for (int look = 0; look < 2; ++look) {
      std::uint32_t w = 0;
      std::memcpy(&w, device().host_memory(b).data() + 20, 4);
      EXPECT_EQ(w, v) << "look " << look;
    }
  }
  // A new buffer: zero there too, its fill finished before the host looks.
  const BufferId c = device().create_buffer(1 << 20, "mapped_zero");
  const std::span<std::byte> zero = device().host_memory(c);
  EXPECT_TRUE(std::all_of(zero.begin(), zero.end(), [](std::byte x) { return x == std::byte{0}; }));
}

}  // namespace
}  // namespace grove::vk::testing
