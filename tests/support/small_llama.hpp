#ifndef RUVLLM_TESTS_SUPPORT_SMALL_LLAMA_HPP
#define RUVLLM_TESTS_SUPPORT_SMALL_LLAMA_HPP

// A one-layer llama-family model written by gguf_writer, small enough to be
// a fuzzer's seed (about 45 KB in F32): 32 wide, 2 heads of 16 (the
// smallest head the KV cache stores), 1 KV head, ffn 64, vocab 64, context
// 16. Every field can be changed, so the loader tests write the bad files
// they check from it. Matrices hold small varied values (F32, F16) or varied
// quant bytes under a small scale (Q8_0, Q4_0); qwen2 adds the attention
// biases.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ruvllm/core/error.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/model/gguf_writer.hpp"

namespace ruvllm::test {

/// One of the forms the model is written in by the fuzzer's seeds and
/// checked to load and run by the loader test.
struct small_llama_form {
  const char* name;
  const char* arch;
  gguf_type matrix_type;
};
inline constexpr small_llama_form small_llama_forms[] = {{"llama-f32", "llama", gguf_type::f32},
                                                         {"llama-q8_0", "llama", gguf_type::q8_0},
                                                         {"llama-q4_0", "llama", gguf_type::q4_0},
                                                         {"qwen2-f16", "qwen2", gguf_type::f16}};

struct small_llama {
  std::string arch = "llama";
  /// `{arch}.{suffix}` metadata sizes.
  std::vector<std::pair<std::string, std::uint32_t>> sizes = {
      {"embedding_length", 32},       {"block_count", 1},          {"attention.head_count", 2},
      {"attention.head_count_kv", 1}, {"feed_forward_length", 64}, {"context_length", 16}};
  float rms_eps = 1e-5f;
  std::string rope_scaling;                ///< empty: no such key
  gguf_type matrix_type = gguf_type::f32;  ///< F32, F16, Q8_0 or Q4_0
  std::string left_out;                    ///< a tensor not written
  std::string changed;                     ///< a tensor written as changed_type with changed_ne
  gguf_type changed_type = gguf_type::f32;
  std::vector<std::uint64_t> changed_ne;

  /// The unchanged model in `form`.
  [[nodiscard]] static small_llama in(const small_llama_form& form) {
    small_llama m;
    m.arch = form.arch;
    m.matrix_type = form.matrix_type;
    return m;
  }

  /// Sets the size `{arch}.{suffix}`.
  small_llama& size(const std::string& suffix, std::uint32_t v) {
    for (auto& [k, value] : sizes)
      if (k == suffix) value = v;
    return *this;
  }

  /// The file's bytes, or the writer's error.
  [[nodiscard]] result<std::vector<std::byte>> image() const {
    RUVLLM_TRY_ASSIGN(const model::gguf_writer w, writer());
    return w.to_bytes();
  }

  /// A writer holding the file, or the writer's error.
  [[nodiscard]] result<model::gguf_writer> writer() const {
    model::gguf_writer w;
    RUVLLM_TRY(w.add_string("general.architecture", arch));
    for (const auto& [k, v] : sizes) RUVLLM_TRY(w.add(arch + "." + k, v));
    RUVLLM_TRY(w.add(arch + ".attention.layer_norm_rms_epsilon", rms_eps));
    if (!rope_scaling.empty()) {
      RUVLLM_TRY(w.add_string(arch + ".rope.scaling.type", rope_scaling));
      RUVLLM_TRY(w.add(arch + ".rope.scaling.factor", 2.0f));
    }
    std::uint32_t state = 12345;
    const auto tensor = [&](const std::string& name, std::vector<std::uint64_t> ne, gguf_type type) -> result<void> {
      if (name == left_out) return {};
      if (name == changed) {
        type = changed_type;
        ne = changed_ne;
      }
      std::size_t n = 1;
      for (const auto d : ne) n *= static_cast<std::size_t>(d);
      return w.add_tensor(name, type, ne, values(type, n, state));
    };
    const std::vector<std::uint64_t> vec = {32}, wide = {32, 32}, kv = {32, 16}, up = {32, 64}, down = {64, 32};
    RUVLLM_TRY(tensor("token_embd.weight", {32, 64}, matrix_type));
    RUVLLM_TRY(tensor("output_norm.weight", vec, gguf_type::f32));
    RUVLLM_TRY(tensor("blk.0.attn_norm.weight", vec, gguf_type::f32));
    RUVLLM_TRY(tensor("blk.0.ffn_norm.weight", vec, gguf_type::f32));
    RUVLLM_TRY(tensor("blk.0.attn_q.weight", wide, matrix_type));
    RUVLLM_TRY(tensor("blk.0.attn_k.weight", kv, matrix_type));
    RUVLLM_TRY(tensor("blk.0.attn_v.weight", kv, matrix_type));
    if (arch == "qwen2") {
      RUVLLM_TRY(tensor("blk.0.attn_q.bias", vec, gguf_type::f32));
      RUVLLM_TRY(tensor("blk.0.attn_k.bias", {16}, gguf_type::f32));
      RUVLLM_TRY(tensor("blk.0.attn_v.bias", {16}, gguf_type::f32));
    }
    RUVLLM_TRY(tensor("blk.0.attn_output.weight", wide, matrix_type));
    RUVLLM_TRY(tensor("blk.0.ffn_gate.weight", up, matrix_type));
    RUVLLM_TRY(tensor("blk.0.ffn_up.weight", up, matrix_type));
    RUVLLM_TRY(tensor("blk.0.ffn_down.weight", down, matrix_type));
    return w;
  }

 private:
  /// n elements of `type`, varied by a linear congruential `state`.
  static std::vector<std::byte> values(gguf_type type, std::size_t n, std::uint32_t& state) {
    const auto next = [&] {
      state = state * 1664525u + 1013904223u;
      return state >> 24;
    };
    std::vector<std::byte> bytes;
    const auto append = [&](const auto& v) {
      const auto* b = reinterpret_cast<const std::byte*>(&v);
      bytes.insert(bytes.end(), b, b + sizeof v);
    };
    if (type == gguf_type::f32 || type == gguf_type::f16) {
      for (std::size_t i = 0; i < n; ++i) {
        const float v = static_cast<float>(static_cast<int>(next() % 17) - 8) / 64.0f;
        if (type == gguf_type::f32)
          append(v);
        else
          append(to_f16(v));
      }
      return bytes;
    }
    const std::size_t quant_bytes = type == gguf_type::q8_0 ? 32 : 16;  // Q8_0 or Q4_0, after the f16 scale
    for (std::size_t b = 0; b < n / 32; ++b) {
      append(to_f16(1.0f / 256.0f));
      for (std::size_t i = 0; i < quant_bytes; ++i) bytes.push_back(static_cast<std::byte>(next()));
    }
    return bytes;
  }
};

}  // namespace ruvllm::test

#endif  // RUVLLM_TESTS_SUPPORT_SMALL_LLAMA_HPP
