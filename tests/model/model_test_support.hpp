#ifndef RUVLLM_TESTS_MODEL_MODEL_TEST_SUPPORT_HPP
#define RUVLLM_TESTS_MODEL_MODEL_TEST_SUPPORT_HPP

// Paths of the conformance data (tiny GGUF models with llama.cpp's outputs,
// tests/data/conformance/README.md) for the model tests.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/json.hpp"

#ifndef RUVLLM_CONFORMANCE_DIR
#error "RUVLLM_CONFORMANCE_DIR must name tests/data/conformance"
#endif

namespace ruvllm::test {

inline std::string conformance_path(std::string_view file) {
  return std::string(RUVLLM_CONFORMANCE_DIR) + "/" + std::string(file);
}

/// Every conformance model, without the .gguf suffix.
inline constexpr std::array<std::string_view, 9> conformance_models = {
    "tiny-f32",       "tiny-f16",      "tiny-q8_0",          "tiny-q4_0",           "tiny-f32-ffn172",
    "tiny-qwen2-f32", "small256-q4_k", "tiny-bpe-qwen2-f32", "tiny-bpe-llama3-q8_0"};

/// Token ids of a JSON array (prompt_ids, greedy, ids in the conformance files).
inline std::vector<std::int32_t> ids_of(const json& array) {
  std::vector<std::int32_t> ids;
  for (const json& v : array.items()) ids.push_back(static_cast<std::int32_t>(v.integer()));
  return ids;
}

}  // namespace ruvllm::test

#endif  // RUVLLM_TESTS_MODEL_MODEL_TEST_SUPPORT_HPP
