// The four policy concepts accept the library's tags and reject look-alikes.

#include <catch2/catch.hpp>

#include <string_view>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/cache_tier.hpp"
#include "ruvllm/core/eviction.hpp"
#include "ruvllm/core/precision.hpp"

namespace concepts_test {

namespace {

namespace p = ruvllm::precision;

// Look-alikes that must be rejected.
struct fake_backend {  // has the members but not the category
  [[maybe_unused]] static constexpr std::string_view name = "fake";
  [[maybe_unused]] static constexpr bool runtime_dispatch = false;
};
struct stateful_backend {  // a backend must be an empty tag
  using backend_category = ruvllm::backend::detail::backend_category;
  [[maybe_unused]] static constexpr std::string_view name = "stateful";
  [[maybe_unused]] static constexpr bool runtime_dispatch = false;
  int state;
};
struct wrong_size_precision {  // bytes_per_block disagrees with the block
  using precision_category = ruvllm::precision::detail::precision_category;
  using block_type = ruvllm::block_q8_0;
  static constexpr std::size_t block_size = 32;
  static constexpr std::size_t bytes_per_block = 36;
  static constexpr std::string_view name = "bad";
};
struct untagged_tier {
  using precision = p::f16;
  [[maybe_unused]] static constexpr std::size_t capacity_tokens = 16;
};
struct no_queue_policy {
  struct hook {};
};
struct incomplete_queue_policy {  // no pick_victim
  struct hook {};
  template <class T>
  struct queue {
    void insert(T&) {}
    void touch(T&) {}
    void erase(T&) {}
    std::size_t size() const { return 0; }
    bool empty() const { return true; }
  };
};

}  // namespace

TEST_CASE("Backend accepts the three backends and rejects look-alikes", "[core][concepts]") {
  STATIC_REQUIRE(ruvllm::Backend<ruvllm::backend::scalar>);
  STATIC_REQUIRE(ruvllm::Backend<ruvllm::backend::highway>);
  STATIC_REQUIRE(ruvllm::Backend<ruvllm::backend::xsimd>);
  STATIC_REQUIRE_FALSE(ruvllm::Backend<fake_backend>);
  STATIC_REQUIRE_FALSE(ruvllm::Backend<stateful_backend>);
  STATIC_REQUIRE_FALSE(ruvllm::Backend<int>);
  STATIC_REQUIRE(ruvllm::backend::highway::runtime_dispatch);
  STATIC_REQUIRE_FALSE(ruvllm::backend::scalar::runtime_dispatch);
}

TEST_CASE("Precision accepts GGUF and KV formats with ggml's sizes", "[core][concepts]") {
  STATIC_REQUIRE(ruvllm::Precision<p::f32>);
  STATIC_REQUIRE(ruvllm::Precision<p::f16>);
  STATIC_REQUIRE(ruvllm::Precision<p::bf16>);
  STATIC_REQUIRE(ruvllm::Precision<p::q8_0>);
  STATIC_REQUIRE(ruvllm::Precision<p::q4_0>);
  STATIC_REQUIRE(ruvllm::Precision<p::q4_k>);
  STATIC_REQUIRE(ruvllm::Precision<p::q4_1>);
  STATIC_REQUIRE(ruvllm::Precision<p::q5_0>);
  STATIC_REQUIRE(ruvllm::Precision<p::q5_1>);
  STATIC_REQUIRE(ruvllm::Precision<p::q5_k>);
  STATIC_REQUIRE(ruvllm::Precision<p::q6_k>);
  STATIC_REQUIRE(ruvllm::Precision<p::q2_k>);
  STATIC_REQUIRE(ruvllm::Precision<p::q3_k>);
  STATIC_REQUIRE(ruvllm::Precision<p::iq4_nl>);
  STATIC_REQUIRE(ruvllm::Precision<p::iq4_xs>);
  STATIC_REQUIRE(ruvllm::Precision<p::kivi<2>>);
  STATIC_REQUIRE(ruvllm::Precision<p::kivi<4, 64>>);
  STATIC_REQUIRE_FALSE(ruvllm::Precision<wrong_size_precision>);
  STATIC_REQUIRE_FALSE(ruvllm::Precision<float>);
  STATIC_REQUIRE_FALSE(ruvllm::Precision<ruvllm::block_q8_0>);

  // ggml's type sizes (ggml_type_size / ggml_blck_size).
  STATIC_REQUIRE(p::f32::bytes_per_block == 4);
  STATIC_REQUIRE(p::f16::bytes_per_block == 2);
  STATIC_REQUIRE(p::bf16::bytes_per_block == 2);
  STATIC_REQUIRE((p::q8_0::block_size == 32 && p::q8_0::bytes_per_block == 34));
  STATIC_REQUIRE((p::q4_0::block_size == 32 && p::q4_0::bytes_per_block == 18));
  STATIC_REQUIRE((p::q4_k::block_size == 256 && p::q4_k::bytes_per_block == 144));
  STATIC_REQUIRE((p::q4_1::block_size == 32 && p::q4_1::bytes_per_block == 20));
  STATIC_REQUIRE((p::q5_0::block_size == 32 && p::q5_0::bytes_per_block == 22));
  STATIC_REQUIRE((p::q5_1::block_size == 32 && p::q5_1::bytes_per_block == 24));
  STATIC_REQUIRE((p::q5_k::block_size == 256 && p::q5_k::bytes_per_block == 176));
  STATIC_REQUIRE((p::q6_k::block_size == 256 && p::q6_k::bytes_per_block == 210));
  STATIC_REQUIRE((p::q2_k::block_size == 256 && p::q2_k::bytes_per_block == 84));
  STATIC_REQUIRE((p::q3_k::block_size == 256 && p::q3_k::bytes_per_block == 110));
  STATIC_REQUIRE(static_cast<unsigned>(p::q2_k::gguf) == 10);
  STATIC_REQUIRE(static_cast<unsigned>(p::q3_k::gguf) == 11);
  STATIC_REQUIRE((p::iq4_nl::block_size == 32 && p::iq4_nl::bytes_per_block == 18));
  STATIC_REQUIRE(static_cast<unsigned>(p::iq4_nl::gguf) == 20);
  STATIC_REQUIRE((p::iq4_xs::block_size == 256 && p::iq4_xs::bytes_per_block == 136));
  STATIC_REQUIRE(static_cast<unsigned>(p::iq4_xs::gguf) == 23);
  STATIC_REQUIRE((p::kivi<2>::block_size == 32 && p::kivi<2>::bytes_per_block == 12));
  STATIC_REQUIRE(static_cast<unsigned>(p::q4_k::gguf) == 12);
  STATIC_REQUIRE(static_cast<unsigned>(p::bf16::gguf) == 30);
  STATIC_REQUIRE(ruvllm::row_bytes<p::q4_0>(4096) == 4096 / 32 * 18);
}

TEST_CASE("CacheTier and CacheTiers accept tier lists", "[core][concepts]") {
  using hot = ruvllm::tier<p::f16, 256>;
  using warm = ruvllm::tier<p::q8_0, 2048>;
  using cold = ruvllm::tier<p::kivi<2>>;
  using three = ruvllm::tiers<hot, warm, cold>;
  STATIC_REQUIRE(ruvllm::CacheTier<hot>);
  STATIC_REQUIRE(ruvllm::CacheTier<cold>);
  STATIC_REQUIRE_FALSE(ruvllm::CacheTier<untagged_tier>);
  STATIC_REQUIRE_FALSE(ruvllm::CacheTier<p::f16>);
  STATIC_REQUIRE(ruvllm::CacheTiers<three>);
  STATIC_REQUIRE_FALSE(ruvllm::CacheTiers<hot>);
  STATIC_REQUIRE(three::count == 3);
  STATIC_REQUIRE(three::capacity<0> == 256);
  STATIC_REQUIRE(three::capacity<2> == ruvllm::unbounded_tokens);
  STATIC_REQUIRE(std::is_same_v<three::at<1>::precision, p::q8_0>);
}

TEST_CASE("EvictionPolicy accepts lru, lfu and hysteresis", "[core][concepts]") {
  namespace ev = ruvllm::eviction;
  STATIC_REQUIRE(ruvllm::EvictionPolicy<ev::lru>);
  STATIC_REQUIRE(ruvllm::EvictionPolicy<ev::lfu>);
  STATIC_REQUIRE(ruvllm::EvictionPolicy<ev::hysteresis<ev::lru>>);
  STATIC_REQUIRE(ruvllm::EvictionPolicy<ev::hysteresis<ev::lfu>>);
  STATIC_REQUIRE_FALSE(ruvllm::EvictionPolicy<no_queue_policy>);
  STATIC_REQUIRE_FALSE(ruvllm::EvictionPolicy<incomplete_queue_policy>);
  STATIC_REQUIRE_FALSE(ruvllm::EvictionPolicy<int>);
}

}  // namespace concepts_test
