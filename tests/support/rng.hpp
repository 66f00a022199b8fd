#ifndef RUVLLM_TESTS_SUPPORT_RNG_HPP
#define RUVLLM_TESTS_SUPPORT_RNG_HPP

// Seeded randomness for tests. Every test draws from a fixed seed so a
// failure reproduces; RUVLLM_TEST_SEED overrides it to explore further.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

namespace ruvllm::test {

/// The seed of this run: RUVLLM_TEST_SEED if set, else a fixed constant.
inline std::uint64_t base_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("RUVLLM_TEST_SEED");
    return env != nullptr ? std::strtoull(env, nullptr, 0) : std::uint64_t{0x5eed'2026};
  }();
  return seed;
}

/// A generator for one test, distinct per `stream` so tests do not share draws.
class rng {
 public:
  explicit rng(std::uint64_t stream = 0) : engine_(base_seed() ^ (stream * 0x9E3779B97F4A7C15ull)) {}

  std::uint64_t next_u64() { return engine_(); }
  std::uint32_t next_u32() { return static_cast<std::uint32_t>(engine_() >> 32); }
  /// Uniform integer in [lo, hi].
  std::size_t uniform_index(std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(engine_);
  }
  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(engine_); }
  float normal(float mean = 0.0f, float stddev = 1.0f) {
    return std::normal_distribution<float>(mean, stddev)(engine_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(engine_); }

  std::vector<float> uniform_vector(std::size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(n);
    for (auto& x : v) x = uniform(lo, hi);
    return v;
  }

  std::mt19937_64& engine() { return engine_; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace ruvllm::test

#endif  // RUVLLM_TESTS_SUPPORT_RNG_HPP
