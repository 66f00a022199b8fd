#ifndef RUVLLM_CORE_BACKEND_HPP
#define RUVLLM_CORE_BACKEND_HPP

// The Backend policy family: where kernels come from. The tags live here so
// that every layer can name them; kernels/ specializes kernels::ops<B> with
// the static entry points, so core/ never depends on a SIMD library.

#include <concepts>
#include <string_view>
#include <type_traits>

namespace ruvllm {

namespace backend {

namespace detail {
struct backend_category {};
}  // namespace detail

/// Plain C++, no intrinsics: the reference every other backend is tested against.
struct scalar {
  using backend_category = detail::backend_category;
  static constexpr std::string_view name = "scalar";
  static constexpr bool runtime_dispatch = false;
};

/// Google Highway: every kernel compiled for each SIMD target Highway supports,
/// the best one for this CPU chosen at run time (or one static target under
/// RUVLLM_STATIC_DISPATCH).
struct highway {
  using backend_category = detail::backend_category;
  static constexpr std::string_view name = "highway";
  static constexpr bool runtime_dispatch = true;
  /// Name of the Highway target chosen on this CPU, e.g. "AVX3". Defined by
  /// ruvllm/kernels/dispatch.hpp.
  [[nodiscard]] static const char* target_name() noexcept;
};

/// xsimd: compile-time architecture, so it is only fast in units compiled for
/// the machine (-march=native); never put -march on a shared target.
struct xsimd {
  using backend_category = detail::backend_category;
  static constexpr std::string_view name = "xsimd";
  static constexpr bool runtime_dispatch = false;
  /// Name of the xsimd architecture this unit was compiled for, e.g. "avx2".
  /// Defined by ruvllm/kernels/xsimd.hpp.
  [[nodiscard]] static const char* target_name() noexcept;
};

}  // namespace backend

/// A kernel source: one of the tags in ruvllm::backend.
template <class B>
concept Backend = std::is_empty_v<B> && requires {
  typename B::backend_category;
  { B::name } -> std::convertible_to<std::string_view>;
  { B::runtime_dispatch } -> std::convertible_to<bool>;
} && std::same_as<typename B::backend_category, backend::detail::backend_category>;

namespace kernels {

template <class>
inline constexpr bool dependent_false = false;

/// Static kernel entry points of backend B; each backend's header in
/// ruvllm/kernels/ specializes it.
template <Backend B>
struct ops {
  static_assert(dependent_false<B>,
                "ruvllm::kernels::ops<B>: no kernels for this backend in this unit; include "
                "ruvllm/kernels/ops.hpp");
};

}  // namespace kernels

}  // namespace ruvllm

#endif  // RUVLLM_CORE_BACKEND_HPP
