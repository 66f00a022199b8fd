#ifndef RUVLLM_CORE_CACHE_TIER_HPP
#define RUVLLM_CORE_CACHE_TIER_HPP

// The CacheTier policy family: a KV cache is an ordered list of tiers, hottest
// first, each a storage precision and a capacity in tokens. The oldest blocks
// of a full tier migrate to the next one; the last tier is unbounded.

#include <concepts>
#include <cstddef>
#include <limits>
#include <tuple>
#include <type_traits>

#include "ruvllm/core/precision.hpp"

namespace ruvllm {

inline constexpr std::size_t unbounded_tokens = std::numeric_limits<std::size_t>::max();

namespace detail {
struct cache_tier_category {};
struct cache_tiers_category {};

// At namespace scope: clang rejects a constant-expression call to a member
// function of a class that is still being defined.
template <std::size_t... Capacities>
constexpr bool only_last_unbounded() {
  constexpr std::size_t capacities[] = {Capacities...};
  for (std::size_t i = 0; i + 1 < sizeof...(Capacities); ++i)
    if (capacities[i] == unbounded_tokens) return false;
  return true;
}
}  // namespace detail

/// One KV tier: blocks stored in precision P, at most CapacityTokens tokens.
template <Precision P, std::size_t CapacityTokens = unbounded_tokens>
struct tier {
  static_assert(CapacityTokens > 0, "a tier must hold at least one token");
  using cache_tier_category = detail::cache_tier_category;
  using precision = P;
  static constexpr std::size_t capacity_tokens = CapacityTokens;
};

/// A single KV tier: a Precision and a capacity in tokens.
template <class T>
concept CacheTier = std::is_empty_v<T> && requires {
  typename T::cache_tier_category;
  typename T::precision;
  { T::capacity_tokens } -> std::convertible_to<std::size_t>;
} && std::same_as<typename T::cache_tier_category, detail::cache_tier_category> && Precision<typename T::precision>;

/// Tiers hottest first. Only the coldest may be unbounded, so every token has
/// somewhere to go.
template <CacheTier... Tiers>
struct tiers {
  static_assert(sizeof...(Tiers) >= 1, "a KV cache needs at least one tier");
  static_assert(sizeof...(Tiers) <= 4, "at most four KV tiers are supported");
  using cache_tiers_category = detail::cache_tiers_category;
  static constexpr std::size_t count = sizeof...(Tiers);

  static_assert(detail::only_last_unbounded<Tiers::capacity_tokens...>(), "only the coldest KV tier may be unbounded");

  template <std::size_t I>
  using at = std::tuple_element_t<I, std::tuple<Tiers...>>;
  template <std::size_t I>
  static constexpr std::size_t capacity = at<I>::capacity_tokens;
};

/// An ordered list of KV tiers: a specialization of ruvllm::tiers.
template <class T>
concept CacheTiers = requires {
  typename T::cache_tiers_category;
}
&&std::same_as<typename T::cache_tiers_category, detail::cache_tiers_category>;

}  // namespace ruvllm

#endif  // RUVLLM_CORE_CACHE_TIER_HPP
