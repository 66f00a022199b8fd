#ifndef RUVLLM_TESTS_SUPPORT_PER_TARGET_HPP
#define RUVLLM_TESTS_SUPPORT_PER_TARGET_HPP

// Runs a test body once for every Highway target that is both compiled into
// the program and supported by this CPU, so SSE4 and AVX2 code is tested on
// an AVX-512 machine too, not just the best target; on a CPU with AVX-VNNI,
// AVX2 twice: with the AVX-VNNI copies of its quant kernels and without.

#include <hwy/targets.h>

#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ruvllm/kernels/avx_vnni.hpp"

namespace ruvllm::test {

/// Restores Highway's normal target choice (and AVX-VNNI's) when a
/// per-target loop ends, even if an assertion fails mid-loop.
class target_override {
 public:
  target_override() = default;
  target_override(const target_override&) = delete;
  target_override& operator=(const target_override&) = delete;
  ~target_override() {
    hwy::SetSupportedTargetsForTest(0);
    kernels::use_avx_vnni(true);
  }
  void select(std::int64_t target) { hwy::SetSupportedTargetsForTest(target); }
};

/// Every compiled and supported target, best first.
inline std::vector<std::int64_t> highway_targets() { return hwy::SupportedAndGeneratedTargets(); }

/// Calls body(target_name) with dispatch forced to each target in turn, each
/// inside its own Catch2 section so failures name the target.
template <class Body>
void for_each_highway_target(Body&& body) {
  const auto targets = highway_targets();
  REQUIRE_FALSE(targets.empty());
  for (const std::int64_t target : targets) {
    const bool both_avx_vnni_forms = target == HWY_AVX2 && kernels::cpu_has_avx_vnni();
    for (const bool avx_vnni : {true, false}) {
      if (!avx_vnni && !both_avx_vnni_forms) continue;
      target_override scope;
      scope.select(target);
      kernels::use_avx_vnni(avx_vnni);
      const std::string name = hwy::TargetName(target);
      const char* form = !both_avx_vnni_forms ? "" : avx_vnni ? " with AVX-VNNI" : " without AVX-VNNI";
      INFO("highway target " << name << form);
      body(name);
    }
  }
}

}  // namespace ruvllm::test

#endif  // RUVLLM_TESTS_SUPPORT_PER_TARGET_HPP
