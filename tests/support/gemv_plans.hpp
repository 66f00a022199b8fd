#ifndef RUVLLM_TESTS_SUPPORT_GEMV_PLANS_HPP
#define RUVLLM_TESTS_SUPPORT_GEMV_PLANS_HPP

// Runs a test body under every gemv plan, so the kernels of the plan this
// CPU does not choose are tested too (each plan has row loops of its own).

#include <catch2/catch.hpp>

#include "ruvllm/kernels/gemv_plan.hpp"

namespace ruvllm::test {

/// Puts the plan in use back when destroyed, also when a REQUIRE throws, so
/// later test cases start from the detected plan.
struct gemv_plan_restorer {
  kernels::gemv_plan before = kernels::gemv_plan_in_use();
  gemv_plan_restorer() = default;
  gemv_plan_restorer(const gemv_plan_restorer&) = delete;
  gemv_plan_restorer& operator=(const gemv_plan_restorer&) = delete;
  ~gemv_plan_restorer() { kernels::use_gemv_plan(before); }
};

/// Runs fn(plan) under every gemv plan, restoring the plan in use afterwards.
template <class Fn>
void for_each_gemv_plan(Fn fn) {
  const gemv_plan_restorer restore;
  for (const kernels::gemv_plan plan : {kernels::gemv_plan::pairs_l1_l2, kernels::gemv_plan::rows_l1}) {
    kernels::use_gemv_plan(plan);
    INFO("gemv plan " << kernels::gemv_plan_name(plan));
    fn(plan);
  }
}

}  // namespace ruvllm::test

#endif  // RUVLLM_TESTS_SUPPORT_GEMV_PLANS_HPP
