#ifndef RUVLLM_TESTS_SUPPORT_PROPERTY_HPP
#define RUVLLM_TESTS_SUPPORT_PROPERTY_HPP

// A small property-test driver: runs a body over many seeded trials and,
// on failure, reports the seed and trial so the case replays exactly
// (RUVLLM_TEST_SEED=<seed> and the trial index).

#include <cstddef>
#include <cstdint>

#include <catch2/catch.hpp>

#include "support/rng.hpp"

namespace ruvllm::test {

/// Runs body(rng&, trial) for `trials` trials; each trial has its own
/// generator derived from the base seed, `stream` and the trial index.
template <class Body>
void check_property(std::uint64_t stream, std::size_t trials, Body&& body) {
  for (std::size_t trial = 0; trial < trials; ++trial) {
    rng gen(stream * 1'000'003u + trial);
    INFO("property trial " << trial << " of stream " << stream << ", seed " << base_seed());
    body(gen, trial);
  }
}

}  // namespace ruvllm::test

#endif  // RUVLLM_TESTS_SUPPORT_PROPERTY_HPP
