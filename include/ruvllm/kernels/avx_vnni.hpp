#ifndef RUVLLM_KERNELS_AVX_VNNI_HPP
#define RUVLLM_KERNELS_AVX_VNNI_HPP

// AVX-VNNI: the VEX-encoded VPDPBUSD / VPDPWSSD of Intel's client cores
// since Alder Lake (and the Alder Lake-N / N100 class), which have AVX2 but
// no AVX-512, so Highway dispatches its AVX2 target there. Highway 1.0.3 has
// no target for AVX2 + AVX-VNNI, so the AVX2 target compiles its integer-dot
// quant kernels twice (quant-inl.h) and picks the AVX-VNNI copy per call when
// this CPU has the instructions. Both copies compute the same exact integer
// sums, so results are the same bits either way; use_avx_vnni(false) lets
// tests and benchmarks run the plain AVX2 kernels on an AVX-VNNI machine.

#include <atomic>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace ruvllm::kernels {

/// Whether this CPU has AVX-VNNI: CPUID leaf 7, sub-leaf 1, EAX bit 4. The
/// operating system's support for 256-bit state is Highway's AVX2 check.
[[nodiscard]] inline bool cpu_has_avx_vnni() noexcept {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 1, eax, ebx, ecx, edx);
  return (eax >> 4) & 1u;
#else
  return false;
#endif
}

namespace detail {
inline std::atomic<bool>& avx_vnni_state() noexcept {
  static std::atomic<bool> on{cpu_has_avx_vnni()};
  return on;
}
}  // namespace detail

/// Whether the AVX2 target's quant kernels use AVX-VNNI now.
[[nodiscard]] inline bool avx_vnni_in_use() noexcept {
  return detail::avx_vnni_state().load(std::memory_order_relaxed);
}

/// Turns the AVX2 target's AVX-VNNI kernels on (only if this CPU has the
/// instructions) or off, for every later call from any thread; returns
/// whether they are on. Other targets are unaffected.
inline bool use_avx_vnni(bool on) noexcept {
  const bool usable = on && cpu_has_avx_vnni();
  detail::avx_vnni_state().store(usable, std::memory_order_relaxed);
  return usable;
}

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_AVX_VNNI_HPP
