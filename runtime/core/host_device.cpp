// runtime/core/host_device.cpp — see host_device.h.
#include "runtime/core/host_device.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace grove::rt {

void Words::advise_large_pages(size_t offset, size_t count) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kPage = uintptr_t{2} << 20;
  const uintptr_t from = reinterpret_cast<uintptr_t>(data() + offset);
  const uintptr_t lo = (from + kPage - 1) & ~(kPage - 1);
  const uintptr_t hi = (from + count * sizeof(uint32_t)) & ~(kPage - 1);
  // (A kernel without transparent huge pages refuses: nothing changes.)
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
  (void)offset;
  (void)count;
#endif
}

}  // namespace grove::rt
