// runtime/core/sanitizers.h — GROVE_TSAN: 1 in ThreadSanitizer builds (make
// tsan; GCC's __SANITIZE_THREAD__ or clang's feature), else 0. The CPU code
// generator instruments kernels by it, and the CPU device tells the
// sanitizer what its thread pool orders.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define GROVE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GROVE_TSAN 1
#endif
#endif
#ifndef GROVE_TSAN
#define GROVE_TSAN 0
#endif
