#ifndef RUVLLM_MODEL_LLAMA_HPP
#define RUVLLM_MODEL_LLAMA_HPP

// The llama-family forward pass over a GGUF file: llama (and mistral, which
// GGUF stores as llama) and qwen2 (q/k/v biases, NeoX RoPE, usually tied
// embeddings). Weights are used in place from the file's mapping in every
// stored type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K); nothing is copied or dequantized ahead of time.
//
// ------------------------------------------------------------- arithmetic
// Each matrix product is computed the way llama.cpp's CPU backend computes
// it, so logits agree with llama.cpp's to the precision of the weights:
//  * F32 weights: f32 activations (GEMV for one token, tiled GEMM for more);
//  * F16 / BF16 weights: activations rounded to F16 / BF16 first (ggml's
//    vec_dot_type for those weights), then multiplied in f32;
//  * Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL weights: activations quantized to
//    Q8_0 blocks, Q2_K-Q6_K / IQ4_XS weights: to Q8_K blocks, then integer block dots
//    (kernels::quantized_gemv for one token, quantized_gemm for a batch).
// RMSNorm, RoPE (normal or NeoX layout from the architecture, base and
// linear scaling from metadata), causal flash attention with GQA, SwiGLU.
//
// ------------------------------------------------------------- KV and memory
// llama_context keeps K and V in a kv::paged_kv_cache whose shape comes from
// the GGUF metadata (kv::runtime_kv_config), in blocks shared between
// sequences copy-on-write. Decode attention reads the blocks in place (the
// paged decode kernel); a batch gathers its sequence's K/V into a dense
// scratch for the flash-attention prefill kernel. Every buffer is allocated
// by create(); eval() allocates nothing except an error message. Results are
// deterministic for a given thread count: every row of every product and
// every attention item is computed by one kernel call whose arithmetic does
// not depend on how rows are split among threads.

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <memory>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ruvllm/core/aligned_buffer.hpp"
#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/core/precision.hpp"
#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/kernels/matmul.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "ruvllm/kv/paged_kv_cache.hpp"
#include "ruvllm/memory/page_memory.hpp"
#include "ruvllm/model/gguf.hpp"
#include "ruvllm/model/projection_hook.hpp"

namespace ruvllm::model {

using token_id = std::int32_t;

/// The architectures the forward pass implements.
enum class llama_arch : std::uint8_t { llama, qwen2 };

/// Shape and numerics of a llama-family model, from GGUF metadata.
struct llama_hparams {
  llama_arch arch = llama_arch::llama;
  std::string architecture;  ///< general.architecture as stored
  std::size_t n_embd = 0;
  std::size_t n_layer = 0;
  std::size_t n_head = 0;
  std::size_t n_head_kv = 0;
  std::size_t head_dim = 0;
  std::size_t n_ff = 0;
  std::size_t n_vocab = 0;
  std::size_t n_ctx_train = 0;
  float rms_eps = 1e-5f;
  double rope_base = 10000.0;
  kernels::rope_layout rope_layout = kernels::rope_layout::normal;
  kernels::rope_scaling rope_scaling = kernels::rope_scaling::none;
  double rope_scale = 1.0;

  /// Reads `{arch}.*` keys. Errors name the key and the file: an
  /// unsupported architecture, a missing key, a zero or inconsistent size
  /// (heads not dividing the embedding, KV heads not dividing heads).
  [[nodiscard]] static result<llama_hparams> from_gguf(const gguf_file& f) {
    llama_hparams h;
    RUVLLM_TRY_ASSIGN(const std::string_view arch, f.get<std::string_view>("general.architecture"));
    h.architecture.assign(arch);
    if (arch == "llama" || arch == "mistral") {
      h.arch = llama_arch::llama;
      h.rope_layout = kernels::rope_layout::normal;
    } else if (arch == "qwen2") {
      h.arch = llama_arch::qwen2;
      h.rope_layout = kernels::rope_layout::neox;
    } else {
      return make_error(errc::unsupported, "architecture '", arch,
                        "' is not a llama-family model (llama, mistral, qwen2)")
          .at(f.source());
    }
    const auto key = [&](std::string_view suffix) {
      std::string k(arch);
      k += '.';
      k += suffix;
      return k;
    };
    const auto size_of = [&](std::string_view suffix) -> result<std::size_t> {
      RUVLLM_TRY_ASSIGN(const std::uint32_t v, f.get<std::uint32_t>(key(suffix)));
      if (v == 0) return make_error(errc::invalid_argument, "metadata key '", key(suffix), "' is 0").at(f.source());
      return std::size_t{v};
    };
    RUVLLM_TRY_ASSIGN(h.n_embd, size_of("embedding_length"));
    RUVLLM_TRY_ASSIGN(h.n_layer, size_of("block_count"));
    RUVLLM_TRY_ASSIGN(h.n_head, size_of("attention.head_count"));
    RUVLLM_TRY_ASSIGN(h.n_ff, size_of("feed_forward_length"));
    RUVLLM_TRY_ASSIGN(h.n_ctx_train, size_of("context_length"));
    if (f.find(key("attention.head_count_kv")) != nullptr) {
      RUVLLM_TRY_ASSIGN(h.n_head_kv, size_of("attention.head_count_kv"));
    } else {
      h.n_head_kv = h.n_head;
    }
    RUVLLM_TRY_ASSIGN(h.rms_eps, f.get<float>(key("attention.layer_norm_rms_epsilon")));
    if (!std::isfinite(h.rms_eps) || !(h.rms_eps >= 0.0f))
      return make_error(errc::invalid_argument, "metadata key '", key("attention.layer_norm_rms_epsilon"), "' is ",
                        h.rms_eps, ", must be finite and >= 0")
          .at(f.source());
    RUVLLM_TRY_ASSIGN(const float base, f.get_or<float>(key("rope.freq_base"), 10000.0f));
    h.rope_base = base;
    RUVLLM_TRY_ASSIGN(const std::string_view scaling, f.get_or<std::string_view>(key("rope.scaling.type"), "none"));
    if (scaling == "linear") {
      RUVLLM_TRY_ASSIGN(const float factor, f.get<float>(key("rope.scaling.factor")));
      h.rope_scaling = factor > 1.0f ? kernels::rope_scaling::linear : kernels::rope_scaling::none;
      h.rope_scale = std::max(1.0, static_cast<double>(factor));
    } else if (scaling != "none") {
      return make_error(errc::unsupported, "rope scaling '", scaling, "' (supported: none, linear)").at(f.source());
    }
    if (h.n_embd % h.n_head != 0)
      return make_error(errc::invalid_argument, "embedding length ", h.n_embd, " is not a multiple of the ", h.n_head,
                        " heads")
          .at(f.source());
    if (h.n_head % h.n_head_kv != 0)
      return make_error(errc::invalid_argument, "KV heads ", h.n_head_kv, " do not divide the ", h.n_head, " heads")
          .at(f.source());
    h.head_dim = h.n_embd / h.n_head;
    if (f.find(key("attention.key_length")) != nullptr) {
      RUVLLM_TRY_ASSIGN(const std::size_t kl, size_of("attention.key_length"));
      if (kl != h.head_dim)
        return make_error(errc::unsupported, "key length ", kl, " differs from embedding / heads = ", h.head_dim)
            .at(f.source());
    }
    if (h.head_dim % 2 != 0 || h.head_dim > kernels::kv_max_head_dim)
      return make_error(errc::unsupported, "head dimension ", h.head_dim, " must be even and at most ",
                        kernels::kv_max_head_dim)
          .at(f.source());
    return h;
  }
};

/// A 2-D weight used in place: `rows` rows of `cols` elements, `row_bytes`
/// apart, in GGUF storage type `type`.
struct weight_matrix {
  gguf_type type = gguf_type::f32;
  const std::byte* data = nullptr;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t row_bytes = 0;
};

/// The tensors of one transformer block.
struct llama_layer {
  const float* attn_norm = nullptr;
  weight_matrix wq, wk, wv, wo;
  const float* bq = nullptr;  // qwen2 only
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* ffn_norm = nullptr;
  weight_matrix gate, up, down;
};

/// A loaded model: the GGUF file (owned, mapped) and views of its tensors.
/// Move-only; the views stay valid as long as the model lives. Immutable
/// after load, so any number of contexts on any threads may share it.
class llama_model {
 public:
  llama_model(llama_model&&) noexcept = default;
  llama_model& operator=(llama_model&&) noexcept = default;
  llama_model(const llama_model&) = delete;
  llama_model& operator=(const llama_model&) = delete;
  ~llama_model() = default;

  /// Maps and checks `path` (see load).
  [[nodiscard]] static result<llama_model> open(std::string_view path) {
    RUVLLM_TRY_ASSIGN(auto file, gguf_file::open(path));
    return load(std::move(file));
  }

  /// Takes the parsed file and checks every tensor the forward pass reads:
  /// present, a supported type, the shape the metadata implies, rows a whole
  /// number of blocks (and, for quantized matrices, the column count a
  /// multiple of the block the activations are quantized to). Errors name
  /// the tensor and the file.
  [[nodiscard]] static result<llama_model> load(gguf_file file) {
    RUVLLM_TRY_ASSIGN(auto hp, llama_hparams::from_gguf(file));
    llama_model m(std::move(file), std::move(hp));
    RUVLLM_TRY(m.bind());
    return m;
  }

  [[nodiscard]] const llama_hparams& hparams() const noexcept { return hp_; }
  [[nodiscard]] const gguf_file& file() const noexcept { return file_; }
  [[nodiscard]] std::span<const llama_layer> layers() const noexcept { return layers_; }
  [[nodiscard]] const weight_matrix& token_embd() const noexcept { return token_embd_; }
  [[nodiscard]] const weight_matrix& output() const noexcept { return output_; }
  [[nodiscard]] const float* output_norm() const noexcept { return output_norm_; }
  /// Whether the output projection reuses the token embeddings.
  [[nodiscard]] bool tied_embeddings() const noexcept { return tied_; }

 private:
  llama_model(gguf_file file, llama_hparams hp) : file_(std::move(file)), hp_(std::move(hp)) {}

  [[nodiscard]] result<weight_matrix> matrix(std::string_view name, std::size_t rows, std::size_t cols) const {
    RUVLLM_TRY_ASSIGN(const gguf_tensor* t, file_.tensor(name));
    if (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows)
      return make_error(errc::invalid_argument, "tensor '", name, "' has shape [", t->ne[0], ", ", t->ne[1],
                        "], expected [", cols, ", ", rows, "]")
          .at(file_.source(), t->info_offset);
    switch (t->type) {
      case gguf_type::f32:
      case gguf_type::f16:
      case gguf_type::bf16: break;
      case gguf_type::q8_0:
      case gguf_type::q4_0:
      case gguf_type::q4_1:
      case gguf_type::q5_0:
      case gguf_type::q5_1:
      case gguf_type::iq4_nl:
        if (cols % 32 != 0)
          return make_error(errc::invalid_argument, "tensor '", name, "': ", cols, " columns are not whole Q8_0 blocks")
              .at(file_.source(), t->info_offset);
        break;
      case gguf_type::q2_k:
      case gguf_type::q3_k:
      case gguf_type::iq4_xs:
      case gguf_type::q4_k:
      case gguf_type::q5_k:
      case gguf_type::q6_k:
        if (cols % qk_k != 0)
          return make_error(errc::invalid_argument, "tensor '", name, "': ", cols, " columns are not whole Q8_K blocks")
              .at(file_.source(), t->info_offset);
        break;
      default:
        return make_error(errc::unsupported, "tensor '", name, "' has type ",
                          ggml_type_name(static_cast<std::uint32_t>(t->type)), ", not supported for matrices")
            .at(file_.source(), t->info_offset);
    }
    return weight_matrix{t->type, t->data, rows, cols, static_cast<std::size_t>(t->row_bytes)};
  }

  [[nodiscard]] result<const float*> vector(std::string_view name, std::size_t n) const {
    RUVLLM_TRY_ASSIGN(const gguf_tensor* t, file_.tensor(name));
    if (t->type != gguf_type::f32 || t->n_elements() != n)
      return make_error(errc::invalid_argument, "tensor '", name, "' must be F32 with ", n, " elements, has ",
                        t->n_elements(), " of type ", ggml_type_name(static_cast<std::uint32_t>(t->type)))
          .at(file_.source(), t->info_offset);
    return reinterpret_cast<const float*>(t->data);
  }

  [[nodiscard]] result<void> bind() {
    const std::size_t d = hp_.n_embd, q_dim = hp_.n_head * hp_.head_dim, kv_dim = hp_.n_head_kv * hp_.head_dim;
    const gguf_tensor* embd = file_.find_tensor("token_embd.weight");
    if (embd == nullptr) return make_error(errc::not_found, "tensor 'token_embd.weight' is missing").at(file_.source());
    hp_.n_vocab = static_cast<std::size_t>(embd->ne[1]);
    if (hp_.n_vocab == 0 || hp_.n_vocab > static_cast<std::size_t>(std::numeric_limits<token_id>::max()))
      return make_error(errc::invalid_argument, "tensor 'token_embd.weight' has ", hp_.n_vocab,
                        " rows: the vocabulary must have 1 to 2^31 - 1 tokens")
          .at(file_.source(), embd->info_offset);
    RUVLLM_TRY_ASSIGN(token_embd_, matrix("token_embd.weight", hp_.n_vocab, d));
    RUVLLM_TRY_ASSIGN(output_norm_, vector("output_norm.weight", d));
    tied_ = file_.find_tensor("output.weight") == nullptr;
    if (tied_) {
      output_ = token_embd_;
    } else {
      RUVLLM_TRY_ASSIGN(output_, matrix("output.weight", hp_.n_vocab, d));
    }
    // Every layer has nine tensors or more. The check comes before the
    // layer table is sized: a block count the file cannot hold would
    // otherwise make it allocate whatever the count asks (up to 2^32 layers).
    constexpr std::size_t tensors_per_layer = 9;
    if (hp_.n_layer > file_.tensors().size() / tensors_per_layer)
      return make_error(errc::invalid_argument, "metadata key '", hp_.architecture, ".block_count' is ", hp_.n_layer,
                        ": that many layers need at least ", tensors_per_layer, " tensors each, the file has ",
                        file_.tensors().size())
          .at(file_.source());
    layers_.resize(hp_.n_layer);
    for (std::size_t i = 0; i < hp_.n_layer; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      llama_layer& l = layers_[i];
      RUVLLM_TRY_ASSIGN(l.attn_norm, vector(p + "attn_norm.weight", d));
      RUVLLM_TRY_ASSIGN(l.wq, matrix(p + "attn_q.weight", q_dim, d));
      RUVLLM_TRY_ASSIGN(l.wk, matrix(p + "attn_k.weight", kv_dim, d));
      RUVLLM_TRY_ASSIGN(l.wv, matrix(p + "attn_v.weight", kv_dim, d));
      RUVLLM_TRY_ASSIGN(l.wo, matrix(p + "attn_output.weight", d, q_dim));
      if (hp_.arch == llama_arch::qwen2) {
        RUVLLM_TRY_ASSIGN(l.bq, vector(p + "attn_q.bias", q_dim));
        RUVLLM_TRY_ASSIGN(l.bk, vector(p + "attn_k.bias", kv_dim));
        RUVLLM_TRY_ASSIGN(l.bv, vector(p + "attn_v.bias", kv_dim));
      }
      RUVLLM_TRY_ASSIGN(l.ffn_norm, vector(p + "ffn_norm.weight", d));
      RUVLLM_TRY_ASSIGN(l.gate, matrix(p + "ffn_gate.weight", hp_.n_ff, d));
      RUVLLM_TRY_ASSIGN(l.up, matrix(p + "ffn_up.weight", hp_.n_ff, d));
      RUVLLM_TRY_ASSIGN(l.down, matrix(p + "ffn_down.weight", d, hp_.n_ff));
    }
    return {};
  }

  gguf_file file_;
  llama_hparams hp_;
  std::vector<llama_layer> layers_;
  weight_matrix token_embd_{}, output_{};
  const float* output_norm_ = nullptr;
  bool tied_ = false;
};

/// Which positions of an eval() batch produce logits.
enum class logits_for : std::uint8_t { last, all };

namespace detail {

/// Activations prepared once for every weight type that reads them: the
/// floats themselves (F32 weights), rounded to F16 or BF16 and kept in that
/// type (F16 / BF16 weights, as ggml rounds them; the GEMV widens them per
/// load), Q8_0 quads (Q8_0 / Q4_0 weights) or Q8_K blocks (Q4_K / Q6_K
/// weights). Only the forms a product needs are filled.
struct prepared_input {
  const float* f32 = nullptr;
  const f16* as_f16 = nullptr;
  const bf16* as_bf16 = nullptr;
  const kernels::q8_0_quad* quads = nullptr;
  const block_q8_k* q8_k = nullptr;
};

/// Rows [r0, r1) of a weight matrix times prepared activations, into out
/// (r1 - r0 floats), on backend B: one dispatched kernel call. Every row's
/// result is independent of r0 and r1, so any split of the rows gives the
/// same numbers.
template <Backend B>
inline void matrix_rows(const weight_matrix& m, const prepared_input& in, std::size_t r0, std::size_t r1,
                        float* out) noexcept {
  using kops = kernels::ops<B>;
  const std::byte* first = m.data + r0 * m.row_bytes;
  const std::size_t rows = r1 - r0;
  switch (m.type) {
    case gguf_type::f32:
      kops::gemv(reinterpret_cast<const float*>(first), m.row_bytes / sizeof(float), in.f32, out, rows, m.cols);
      return;
    case gguf_type::f16:
      kops::gemv(reinterpret_cast<const f16*>(first), m.row_bytes / sizeof(f16), in.as_f16, out, rows, m.cols);
      return;
    case gguf_type::bf16:
      kops::gemv(reinterpret_cast<const bf16*>(first), m.row_bytes / sizeof(bf16), in.as_bf16, out, rows, m.cols);
      return;
    case gguf_type::q8_0:
      kops::dot_q8_0_quad_rows(reinterpret_cast<const block_q8_0*>(first), m.row_bytes, rows, in.quads, m.cols, out);
      return;
    case gguf_type::q4_0:
      kops::dot_q4_0_quad_rows(reinterpret_cast<const block_q4_0*>(first), m.row_bytes, rows, in.quads, m.cols, out);
      return;
    case gguf_type::q5_0:
      kops::dot_q5_0_quad_rows(reinterpret_cast<const block_q5_0*>(first), m.row_bytes, rows, in.quads, m.cols, out);
      return;
    case gguf_type::q4_1:
      kops::dot_q4_1_quad_rows(reinterpret_cast<const block_q4_1*>(first), m.row_bytes, rows, in.quads, m.cols, out);
      return;
    case gguf_type::iq4_nl:
      kops::dot_iq4_nl_quad_rows(reinterpret_cast<const block_iq4_nl*>(first), m.row_bytes, rows, in.quads, m.cols,
                                 out);
      return;
    case gguf_type::q5_1:
      kops::dot_q5_1_quad_rows(reinterpret_cast<const block_q5_1*>(first), m.row_bytes, rows, in.quads, m.cols, out);
      return;
    case gguf_type::q2_k:
      kops::dot_q2_k_q8_k_rows(reinterpret_cast<const block_q2_k*>(first), m.row_bytes, rows, in.q8_k, m.cols, out);
      return;
    case gguf_type::q3_k:
      kops::dot_q3_k_q8_k_rows(reinterpret_cast<const block_q3_k*>(first), m.row_bytes, rows, in.q8_k, m.cols, out);
      return;
    case gguf_type::iq4_xs:
      kops::dot_iq4_xs_q8_k_rows(reinterpret_cast<const block_iq4_xs*>(first), m.row_bytes, rows, in.q8_k, m.cols, out);
      return;
    case gguf_type::q4_k:
      kops::dot_q4_k_q8_k_rows(reinterpret_cast<const block_q4_k*>(first), m.row_bytes, rows, in.q8_k, m.cols, out);
      return;
    case gguf_type::q5_k:
      kops::dot_q5_k_q8_k_rows(reinterpret_cast<const block_q5_k*>(first), m.row_bytes, rows, in.q8_k, m.cols, out);
      return;
    case gguf_type::q6_k:
      kops::dot_q6_k_q8_k_rows(reinterpret_cast<const block_q6_k*>(first), m.row_bytes, rows, in.q8_k, m.cols, out);
      return;
    default: RUVLLM_ASSERT(false && "weight types are checked by llama_model::load"); return;
  }
}

/// Rows per work item of a decode product of `rows` rows and `bytes` bytes
/// of weights on a pool of `threads` threads: items of up to ~512 KiB, their
/// count rounded up to a multiple of the thread count so that every thread
/// gets the same share. Items may straddle the matrices of a stacked job
/// (the bodies make one kernel call per matrix they touch).
/// Each item restarts the kernel's software prefetch, whose first lines
/// arrive cold, and costs a claim and a publish in the pool, so small items
/// cost bandwidth: 2-thread 1B q4_0 decode read 0.55 of the probe's bandwidth
/// with 64 KiB items, 0.60 with 256 KiB and 0.64 with 512 KiB (medians of
/// three interleaved runs). With the one-row GEMVs, items of an eighth of a
/// thread's share (64-512 KiB) ran 110M q4_0 2-thread decode at 456-488
/// tok/s against 555-573 with 512 KiB, and 1 MiB items were no faster there
/// and slower on 1B. Half a megabyte is still ~20 us of streaming, so a chunk
/// the caller takes over from a descheduled worker costs little. A count
/// that is not a multiple of the threads idles one of them for the last
/// item: a 110M q4_0 model's output and down projections (332 and 884 KiB) made
/// three items, two for one thread and one for the other. (These figures
/// predate the pool's home ranges, under which a thread's items are
/// consecutive rows; items of 128 and 256 KiB then decoded 110M and 1B
/// within the host's noise of 512 KiB at two threads.)
[[nodiscard]] inline std::size_t decode_grain(std::size_t rows, std::size_t bytes, std::size_t threads) noexcept {
  using kernels::attention_detail::ceil_div, kernels::attention_detail::round_up;
  constexpr std::size_t item_bytes = std::size_t{512} << 10;
  const std::size_t items = std::max<std::size_t>(1, ceil_div(bytes, item_bytes));
  return std::max<std::size_t>(1, ceil_div(rows, round_up(items, std::max<std::size_t>(threads, 1))));
}

}  // namespace detail

/// The KV cache a llama_context keeps by default: F16 keys and values (as
/// llama.cpp's default), 16 tokens per block, shape from the model.
using default_kv = kv::runtime_kv_config<precision::f16, precision::f16, 16>;
/// F32 keys and values: attention with float K/V, as llama.cpp's F32 KV cache.
using f32_kv = kv::runtime_kv_config<precision::f32, precision::f32, 16>;

/// One sequence's inference state over a shared model: its K and V in a
/// paged KV cache (kv::paged_kv_cache), the activation buffers and the
/// thread pool the products run on.
///
/// Template parameters: B, the kernel Backend; KvConfig, a
/// kv::runtime_kv_config<KPrecision, VPrecision, TokensPerBlock> choosing how
/// K and V are stored (default_kv: f16; f32_kv; q8_0 keys or values), the
/// cache's shape (layers, KV heads, head_dim) coming from the model.
///
/// KV: the context owns a block_allocator and a paged_kv_cache over it
/// (kv_cache()), and runs one of its sequences (sequence()). Positions live
/// in blocks of TokensPerBlock tokens, so sequences can share prefixes: fork()
/// makes a copy-on-write sibling of the current sequence, and blocks cached
/// elsewhere (a radix cache hit) become a new sequence through
/// kv_cache().add_sequence; use_sequence() switches to any live one.
/// Decode attention reads the blocks in place with the paged decode kernel;
/// a batch (prefill) gathers the sequence's K/V into a dense scratch for the
/// flash-attention prefill kernel, so both see the stored precision.
///
/// Decode (eval of one token) runs five pool jobs per layer (Q/K/V in one,
/// attention, output projection, gate/up/SwiGLU in one, down projection),
/// each through thread_pool::run_replicated, so a worker the OS deschedules
/// mid-step never stalls the step. Batches run the products as tiled GEMMs.
///
/// Every buffer (KV blocks, activations, quantized activations, attention
/// workspaces, the RoPE table) is allocated by create(); eval() allocates
/// nothing except an error message. Results are deterministic for a given
/// thread count and batch split.
///
/// Hook (projection_hook.hpp) adds to projection outputs, e.g. LoRA
/// adapters; set_hook() attaches one. The cached K and V are tied to the
/// hook's kv_key() when they were computed: once the key changes (another
/// adapter, an updated one, or none), n_past() reports 0 and eval() refuses
/// to continue the stale positions until reset() or truncate(0), so no KV
/// computed under other weights is ever reused. Each sequence keeps its own
/// key: fork() inherits the current one, use_sequence() restores the one the
/// sequence was computed under.
///
/// Thread-safety: one thread calls a context at a time (it runs the pool);
/// different contexts of one model may run concurrently on different pools.
template <Backend B = backend::highway, class KvConfig = default_kv, ProjectionHook Hook = no_projection_hook>
class llama_context {
  static_assert(kv::KvCacheConfig<KvConfig> && kv::paged_kv_cache<KvConfig, B>::runtime_shape,
                "llama_context<B, KvConfig>: KvConfig must be a kv::runtime_kv_config<KPrecision, VPrecision, "
                "TokensPerBlock> (the cache's shape comes from the model)");

 public:
  using cache_type = kv::paged_kv_cache<KvConfig, B>;
  static constexpr std::size_t tokens_per_block = KvConfig::tokens_per_block;

  struct options {
    std::size_t n_ctx = 0;         ///< positions per sequence; 0 means the model's training context
    std::size_t max_batch = 256;   ///< tokens per internal step of eval (longer inputs are chunked)
    std::size_t kv_sequences = 1;  ///< live sequences the KV cache can hold (forks, shared prefixes)
    std::size_t kv_blocks = 0;     ///< KV blocks; 0 means kv_sequences full contexts
    /// Bytes the context may hold (KV cache, activation buffers, RoPE
    /// table); 0 means memory::memory_limit_bytes() (physical memory, or a
    /// container's lower cgroup limit). n_ctx = 0 takes the
    /// file's context_length, up to 2^24 positions: the limit turns a
    /// context larger than the machine into an error instead of gigabytes
    /// written before the system refuses.
    std::size_t max_bytes = 0;
  };

  llama_context(llama_context&& other) noexcept
      : model_(other.model_),
        pool_(std::exchange(other.pool_, nullptr)),
        hook_(other.hook_),
        kv_key_(other.kv_key_),
        seq_keys_(std::move(other.seq_keys_)),
        opt_(other.opt_),
        n_past_(other.n_past_),
        seq_(other.seq_),
        blocks_(std::move(other.blocks_)),
        cache_(std::move(other.cache_)),
        ws_(std::move(other.ws_)),
        buf_(std::move(other.buf_)) {}
  /// Waits for late pool workers still reading this context's buffers
  /// (thread_pool::quiesce) before they are replaced.
  llama_context& operator=(llama_context&& other) noexcept {
    if (this != &other) {
      if (pool_ != nullptr) pool_->quiesce();
      // The cache refers to the allocator: drop it first.
      cache_ = cache_type{};
      model_ = other.model_;
      pool_ = std::exchange(other.pool_, nullptr);
      hook_ = other.hook_;
      kv_key_ = other.kv_key_;
      seq_keys_ = std::move(other.seq_keys_);
      opt_ = other.opt_;
      n_past_ = other.n_past_;
      seq_ = other.seq_;
      blocks_ = std::move(other.blocks_);
      cache_ = std::move(other.cache_);
      ws_ = std::move(other.ws_);
      buf_ = std::move(other.buf_);
    }
    return *this;
  }
  llama_context(const llama_context&) = delete;
  llama_context& operator=(const llama_context&) = delete;
  /// Waits for late pool workers still reading this context's buffers.
  ~llama_context() {
    if (pool_ != nullptr) pool_->quiesce();
  }

  /// Allocates every buffer for n_ctx positions, and a KV cache of kv_blocks
  /// blocks holding up to kv_sequences sequences, with one empty sequence
  /// current. `model` and `pool` must outlive the context. Errors: n_ctx,
  /// max_batch or kv_sequences 0 after defaults, n_ctx beyond 2^24
  /// positions, a head_dim the KV format cannot store (kv::block_layout),
  /// out_of_memory (beyond max_bytes, naming it, or refused by the system).
  [[nodiscard]] static result<llama_context> create(const llama_model& model, thread_pool& pool, options o = {}) {
    const llama_hparams& h = model.hparams();
    if (o.n_ctx == 0) o.n_ctx = h.n_ctx_train;
    if (o.n_ctx == 0 || o.n_ctx > kernels::attention_max_positions)
      return make_error(errc::invalid_argument, "n_ctx ", o.n_ctx, " must be in [1, ", kernels::attention_max_positions,
                        "]");
    if (o.max_batch == 0) return make_error(errc::invalid_argument, "max_batch must be at least 1");
    if (o.kv_sequences == 0 || o.kv_sequences > (1u << 24))
      return make_error(errc::invalid_argument, "kv_sequences ", o.kv_sequences, " must be in [1, 2^24]");
    o.max_batch = std::min(o.max_batch, o.n_ctx);
    const std::size_t per_sequence = (o.n_ctx + tokens_per_block - 1) / tokens_per_block;
    if (o.kv_blocks == 0) o.kv_blocks = o.kv_sequences * per_sequence;
    llama_context c(model, pool, o);
    RUVLLM_TRY(c.allocate());
    return c;
  }

  [[nodiscard]] const llama_model& model() const noexcept { return *model_; }
  /// Positions of the current sequence (the next token's position); 0 when
  /// they were computed under another hook key.
  [[nodiscard]] std::size_t n_past() const noexcept { return kv_current() ? n_past_ : 0; }
  [[nodiscard]] std::size_t n_ctx() const noexcept { return opt_.n_ctx; }

  /// Attaches (or, with nullptr, detaches) the projection hook; it must
  /// outlive its use. Positions cached under another key become stale.
  void set_hook(const Hook* hook) noexcept { hook_ = hook; }

  /// The KV cache and the sequence eval() runs.
  [[nodiscard]] cache_type& kv_cache() noexcept { return cache_; }
  [[nodiscard]] const cache_type& kv_cache() const noexcept { return cache_; }
  [[nodiscard]] kv::seq_id sequence() const noexcept { return seq_; }

  /// A new sequence sharing every position of the current one (copy on
  /// write), under the same hook key; the current sequence stays current.
  /// Errors: out_of_memory when kv_sequences are live.
  [[nodiscard]] result<kv::seq_id> fork() {
    RUVLLM_TRY_ASSIGN(const kv::seq_id child, cache_.fork(seq_));
    remember_key(child, kv_key_);
    return child;
  }

  /// Makes `s`, a live sequence of kv_cache(), the one eval() continues. A
  /// sequence this context never ran (added to kv_cache() from a prefix
  /// cache, which keys on the adapter version) counts as computed under the
  /// current hook key. Errors: not_found (s), out_of_range (s longer than
  /// n_ctx).
  [[nodiscard]] result<void> use_sequence(kv::seq_id s) {
    RUVLLM_TRY_ASSIGN(const std::size_t length, cache_.length(s));
    if (length > opt_.n_ctx)
      return make_error(errc::out_of_range, "sequence of ", length, " positions exceeds the context of ", opt_.n_ctx);
    remember_key(seq_, kv_key_);
    kv_key_ = recall_key(s);
    seq_ = s;
    n_past_ = length;
    return {};
  }

  /// Forgets positions n and later of the current sequence (n <= n_past()):
  /// the next eval continues at position n, reusing the cached prefix.
  [[nodiscard]] result<void> truncate(std::size_t n) {
    if (n > n_past())
      return make_error(errc::out_of_range, "cannot truncate to ", n, " past the ", n_past(), " cached positions");
    RUVLLM_TRY(cache_.truncate(seq_, n));
    n_past_ = n;
    if (n == 0) kv_key_ = hook_key();
    return {};
  }
  /// Empties the current sequence.
  void reset() noexcept {
    if (cache_.truncate(seq_, 0).has_value()) {
      n_past_ = 0;
      kv_key_ = hook_key();
    }
  }

  /// Runs `tokens` at positions n_past() .. n_past() + size - 1 of the
  /// current sequence, appends their K and V, and writes vocab-sized logits:
  /// of the last token (logits.size() >= n_vocab) or of every token,
  /// token-major (logits.size() >= tokens.size() * n_vocab). Errors, with
  /// nothing changed: an empty batch, a token id outside the vocabulary, a
  /// batch past n_ctx, a logits span too small, KV blocks exhausted
  /// (out_of_memory), a current sequence freed through kv_cache() (not_found).
  [[nodiscard]] result<void> eval(std::span<const token_id> tokens, std::span<float> logits,
                                  logits_for which = logits_for::last) {
    const llama_hparams& h = model_->hparams();
    if (tokens.empty()) return make_error(errc::invalid_argument, "eval needs at least one token");
    if (!kv_current()) {
      if (n_past_ > 0)
        return make_error(errc::invalid_argument, "the ", n_past_,
                          " cached positions were computed under another adapter state; reset() or truncate(0) first");
      kv_key_ = hook_key();
    }
    if (tokens.size() > opt_.n_ctx - n_past_)
      return make_error(errc::out_of_range, "batch of ", tokens.size(), " tokens at position ", n_past_,
                        " exceeds the context of ", opt_.n_ctx);
    const std::size_t want = (which == logits_for::all ? tokens.size() : 1) * h.n_vocab;
    if (logits.size() < want)
      return make_error(errc::invalid_argument, "logits span holds ", logits.size(), " floats, needs ", want);
    for (std::size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] < 0 || static_cast<std::size_t>(tokens[i]) >= h.n_vocab)
        return make_error(errc::out_of_range, "token id ", tokens[i], " at index ", i, " is outside the vocabulary of ",
                          h.n_vocab);
    RUVLLM_TRY_ASSIGN(const std::size_t length, cache_.length(seq_));
    if (length != n_past_) return make_error(errc::invalid_argument, "the current sequence changed outside eval");
    // Count the blocks the whole batch needs first, so running out of them
    // changes nothing even when the batch runs in several steps.
    const std::size_t free_blocks = blocks_->capacity_blocks() - blocks_->blocks_in_use();
    const std::size_t held = (n_past_ + tokens_per_block - 1) / tokens_per_block;
    std::size_t need = (n_past_ + tokens.size() + tokens_per_block - 1) / tokens_per_block - held;
    if (n_past_ % tokens_per_block != 0) {
      // A partial last block shared with another sequence is copied first.
      RUVLLM_TRY_ASSIGN(const auto table, cache_.block_table(seq_));
      if (blocks_->ref_count(table[held - 1]) > 1) ++need;
    }
    if (need > free_blocks)
      return make_error(errc::out_of_memory, "KV cache: ", tokens.size(), " tokens at position ", n_past_,
                        " need up to ", need, " blocks, ", free_blocks, " free");
    if (tokens.size() == 1) {
      RUVLLM_TRY(decode(tokens[0], logits.data()));
      return {};
    }
    for (std::size_t begin = 0; begin < tokens.size(); begin += opt_.max_batch) {
      const std::size_t n = std::min(opt_.max_batch, tokens.size() - begin);
      const bool last_chunk = begin + n == tokens.size();
      float* out = which == logits_for::all ? logits.data() + begin * h.n_vocab : logits.data();
      RUVLLM_TRY(step(tokens.subspan(begin, n), which == logits_for::all || last_chunk ? out : nullptr, which));
    }
    return {};
  }

 private:
  using kops = kernels::ops<B>;

  [[nodiscard]] std::uint64_t hook_key() const noexcept {
    if constexpr (Hook::enabled) {
      return hook_ != nullptr ? hook_->kv_key() : 0;
    } else {
      return 0;
    }
  }
  [[nodiscard]] bool kv_current() const noexcept { return kv_key_ == hook_key(); }
  [[nodiscard]] bool adapts_ffn_up() const noexcept {
    if constexpr (Hook::enabled) {
      return hook_ != nullptr && (Hook::adapts(projection::gate) || Hook::adapts(projection::up));
    } else {
      return false;
    }
  }

  // The hook keys of sequences other than the current one. Only contexts
  // with a hook keep them; entries of sequences no longer live are dropped
  // when the list outgrows the cache's sequence count.
  void remember_key(kv::seq_id s, std::uint64_t key) {
    if constexpr (Hook::enabled) {
      for (auto& [seq, k] : seq_keys_)
        if (seq == s) {
          k = key;
          return;
        }
      if (seq_keys_.size() >= opt_.kv_sequences)
        std::erase_if(seq_keys_, [&](const auto& e) { return !cache_.length(e.first).has_value(); });
      seq_keys_.emplace_back(s, key);
    } else {
      (void)s, (void)key;
    }
  }
  [[nodiscard]] std::uint64_t recall_key(kv::seq_id s) const noexcept {
    if constexpr (Hook::enabled) {
      for (const auto& [seq, k] : seq_keys_)
        if (seq == s) return k;
    } else {
      (void)s;
    }
    return hook_key();
  }

  // y += the hook's addition for projection p of layer `layer` (nothing
  // without a hook).
  void adapt(std::size_t layer, projection p, const float* x, std::size_t x_stride, float* y, std::size_t y_stride,
             std::size_t tokens) const noexcept {
    if constexpr (Hook::enabled) {
      if (hook_ != nullptr) hook_->apply(layer, p, x, x_stride, y, y_stride, tokens);
    }
  }

  /// Every activation buffer of a context; allocate() makes them.
  struct buffers {
    aligned_buffer<float> x, xn, q, attn, gate, up, rounded, qkv, k_new, v_new, k_dense, v_dense;
    // decode_ffn_up's up rows, n_ff per pool thread. Its own buffer: a worker
    // still finishing a discarded, late chunk of that job (thread_pool::
    // run_replicated) writes its slice after the step has moved on, so no
    // other computation may read or write it. In up, a batch's up
    // projection of token 1 was overwritten that way when a prompt followed
    // decode steps (two threads, an intermittent conformance failure).
    aligned_buffer<float> up_by_thread;
    aligned_buffer<f16> half;
    aligned_buffer<kernels::q8_0_quad> act_q8_0;
    aligned_buffer<block_q8_k> act_q8_k;
    aligned_buffer<std::byte> workspace;  // per thread: prefill attention tiles, or a decode item's state
    std::size_t workspace_bytes = 0;
    kernels::rope_table rope;
  };

  llama_context(const llama_model& model, thread_pool& pool, options o) : model_(&model), pool_(&pool), opt_(o) {}

  [[nodiscard]] result<void> allocate() {
    const llama_hparams& h = model_->hparams();
    const std::size_t nb = opt_.max_batch, d = h.n_embd, q_dim = h.n_head * h.head_dim,
                      kv_dim = h.n_head_kv * h.head_dim, group = h.n_head / h.n_head_kv;
    const std::size_t widest = std::max({d, q_dim, h.n_ff});
    // Every allocation is charged to max_bytes before it is made, so a
    // context past the limit fails before any of its memory is written.
    const std::size_t limit = opt_.max_bytes != 0 ? opt_.max_bytes : memory::memory_limit_bytes();
    std::size_t left = limit;
    const auto charge = [&](std::size_t count, std::size_t unit, std::string_view what) -> result<void> {
      if (unit != 0 && count > left / unit)
        return make_error(errc::out_of_memory, "a context of ", opt_.n_ctx, " positions exceeds its limit of ", limit,
                          " bytes (options::max_bytes, else the memory limit) at its ", what, ": ", count, " x ", unit,
                          " bytes with ", left, " left; lower options::n_ctx or raise options::max_bytes");
      left -= count * unit;
      return {};
    };
    const auto take = [&]<class T>(aligned_buffer<T>& out, std::size_t count, std::string_view what) -> result<void> {
      RUVLLM_TRY(charge(count, sizeof(T), what));
      RUVLLM_TRY_ASSIGN(out, aligned_buffer<T>::allocate(count));
      return {};
    };
    // KV: the allocator is on the heap so the cache's pointer to it survives moves.
    RUVLLM_TRY_ASSIGN(const kv::block_layout layout, cache_type::layout(h.n_layer, h.n_head_kv, h.head_dim));
    RUVLLM_TRY(charge(opt_.kv_blocks, layout.block_bytes(), "KV cache"));
    RUVLLM_TRY_ASSIGN(auto blocks, kv::block_allocator::create(layout, opt_.kv_blocks));
    blocks_ = std::make_unique<kv::block_allocator>(std::move(blocks));
    RUVLLM_TRY_ASSIGN(cache_, cache_type::create(*blocks_, {static_cast<std::uint32_t>(opt_.kv_sequences),
                                                            static_cast<std::uint32_t>(opt_.n_ctx)}));
    ws_ = cache_.make_workspace(1);
    RUVLLM_TRY_ASSIGN(seq_, cache_.add_sequence());
    buffers& b = buf_;
    RUVLLM_TRY(take(b.k_dense, opt_.n_ctx * kv_dim, "dense keys"));
    RUVLLM_TRY(take(b.v_dense, opt_.n_ctx * kv_dim, "dense values"));
    RUVLLM_TRY(take(b.x, nb * d, "activations"));
    RUVLLM_TRY(take(b.xn, nb * d, "activations"));
    RUVLLM_TRY(take(b.q, nb * q_dim, "activations"));
    RUVLLM_TRY(take(b.attn, nb * q_dim, "activations"));
    RUVLLM_TRY(take(b.gate, nb * h.n_ff, "activations"));
    RUVLLM_TRY(take(b.up, nb * h.n_ff, "activations"));
    RUVLLM_TRY(take(b.up_by_thread, pool_->size() * h.n_ff, "activations"));
    RUVLLM_TRY(take(b.qkv, q_dim + 2 * kv_dim, "activations"));
    RUVLLM_TRY(take(b.k_new, nb * kv_dim, "activations"));
    RUVLLM_TRY(take(b.v_new, nb * kv_dim, "activations"));
    RUVLLM_TRY(take(b.rounded, nb * widest, "activations"));
    RUVLLM_TRY(take(b.half, widest, "activations"));
    RUVLLM_TRY(take(b.act_q8_0, nb * kernels::q8_0_quads(widest), "activations"));
    RUVLLM_TRY(take(b.act_q8_k, nb * (widest / qk_k + 1), "activations"));
    const std::size_t decode_state =
        decode_items_bytes(h.n_head_kv) + h.n_head_kv * (2 * group + group * h.head_dim) * sizeof(float);
    b.workspace_bytes =
        (std::max(kernels::attention_prefill_workspace_bytes(h.head_dim), decode_state) + 127) / 64 * 64;
    RUVLLM_TRY(take(b.workspace, b.workspace_bytes * pool_->size(), "workspace"));
    RUVLLM_TRY(charge(opt_.n_ctx, h.head_dim * sizeof(float), "RoPE table"));
    kernels::rope_params rp;
    rp.head_dim = h.head_dim;
    rp.max_positions = opt_.n_ctx;
    rp.base = h.rope_base;
    rp.scaling = h.rope_scaling;
    rp.scaling_factor = h.rope_scale;
    RUVLLM_TRY_ASSIGN(b.rope, kernels::rope_table::build(rp));
    return {};
  }

  // ------------------------------------------------------------- decode

  /// Prepares one token's activations x (cols floats) for every weight type
  /// among `types`, in this context's buffers.
  [[nodiscard]] detail::prepared_input prepare(const float* x, std::size_t cols,
                                               std::initializer_list<gguf_type> types) noexcept {
    detail::prepared_input in;
    in.f32 = x;
    for (const gguf_type t : types) {
      switch (t) {
        case gguf_type::f16:
          if (in.as_f16 == nullptr) in.as_f16 = narrow_to_f16(x, cols);
          break;
        case gguf_type::bf16:
          if (in.as_bf16 == nullptr) in.as_bf16 = narrow_to_bf16(x, cols);
          break;
        case gguf_type::q8_0:
        case gguf_type::q4_0:
        case gguf_type::q4_1:
        case gguf_type::q5_0:
        case gguf_type::q5_1:
        case gguf_type::iq4_nl:
          if (in.quads == nullptr) {
            kops::quantize_q8_0_quads(x, buf_.act_q8_0.data(), cols);
            in.quads = buf_.act_q8_0.data();
          }
          break;
        case gguf_type::q2_k:
        case gguf_type::q3_k:
        case gguf_type::iq4_xs:
        case gguf_type::q4_k:
        case gguf_type::q5_k:
        case gguf_type::q6_k:
          if (in.q8_k == nullptr) {
            kops::quantize_q8_k(x, buf_.act_q8_k.data(), cols);
            in.q8_k = buf_.act_q8_k.data();
          }
          break;
        default: break;
      }
    }
    return in;
  }

  /// x rounded to F16 or BF16 and back into out (ggml multiplies F16 / BF16
  /// weights with activations rounded to the same type).
  void round_activations(gguf_type type, const float* x, float* out, std::size_t n) noexcept {
    if (type == gguf_type::f16)
      kops::convert_f16_to_f32(narrow_to_f16(x, n), out, n);
    else
      kops::convert_bf16_to_f32(narrow_to_bf16(x, n), out, n);
  }

  /// x rounded to F16 in buf_.half (which holds one half-type row, F16 or
  /// BF16, for whichever product reads it next).
  f16* narrow_to_f16(const float* x, std::size_t n) noexcept {
    kops::convert_f32_to_f16(x, buf_.half.data(), n);
    return buf_.half.data();
  }
  /// x rounded to BF16 in buf_.half.
  bf16* narrow_to_bf16(const float* x, std::size_t n) noexcept {
    auto* b = reinterpret_cast<bf16*>(buf_.half.data());
    kops::convert_f32_to_bf16(x, b, n);
    return b;
  }

  /// Whether matrices of types a and b can share one prepared input (the
  /// F16 and BF16 forms are kept in the same buffer).
  static bool shareable(gguf_type a, gguf_type b) noexcept {
    const auto rounded = [](gguf_type t) { return t == gguf_type::f16 || t == gguf_type::bf16; };
    return !(rounded(a) && rounded(b) && a != b);
  }

  /// y[0 .. sum of rows) = [m0; m1; m2] x for one token, as one replicated
  /// pool job over the stacked rows (m1, m2 optional). The matrices read the
  /// same input, prepared once per weight type.
  void decode_product(const float* x, float* y, const weight_matrix& m0, const weight_matrix* m1 = nullptr,
                      const weight_matrix* m2 = nullptr) {
    const weight_matrix* ms[3] = {&m0, m1, m2};
    for (const weight_matrix* m : ms)
      if (m != nullptr && !shareable(m0.type, m->type)) {
        // F16 beside BF16 (no such model in practice): one job per matrix.
        std::size_t offset = 0;
        for (const weight_matrix* each : ms) {
          if (each == nullptr) continue;
          decode_product(x, y + offset, *each);
          offset += each->rows;
        }
        return;
      }
    const detail::prepared_input in =
        prepare(x, m0.cols, {m0.type, m1 != nullptr ? m1->type : m0.type, m2 != nullptr ? m2->type : m0.type});
    struct segments {
      weight_matrix m[3];
      std::size_t end[3];  // cumulative row counts
    } seg{};
    std::size_t rows = 0, bytes = 0;
    for (std::size_t i = 0; i < 3; ++i) {
      const weight_matrix* m = ms[i] != nullptr ? ms[i] : &m0;
      seg.m[i] = *m;
      if (ms[i] != nullptr) {
        rows += m->rows;
        bytes += m->rows * m->row_bytes;
      }
      seg.end[i] = rows;
    }
    // Any range of the stacked rows: one kernel call per matrix it touches
    // (a caller running alone gets the whole range, and the kernels' software
    // prefetch then runs through whole matrices).
    const std::size_t grain = detail::decode_grain(rows, bytes, pool_->size());
    pool_->run_replicated(rows, grain, y, 1,
                          [seg, in](std::size_t begin, std::size_t end, std::size_t, float* dst) noexcept {
                            std::size_t first = 0;
                            for (std::size_t i = 0; i < 3 && begin < end; first = seg.end[i++]) {
                              if (begin >= seg.end[i]) continue;
                              const std::size_t stop = std::min(end, seg.end[i]);
                              detail::matrix_rows<B>(seg.m[i], in, begin - first, stop - first, dst);
                              dst += stop - begin;
                              begin = stop;
                            }
                          });
  }

  /// h = silu(gate x) * up x for one token, as one replicated job: each
  /// work item computes its rows of both products and their SwiGLU.
  void decode_ffn_up(const llama_layer& l, const float* x, float* h_out) {
    if (!shareable(l.gate.type, l.up.type)) {
      decode_product(x, buf_.gate.data(), l.gate);
      decode_product(x, buf_.up.data(), l.up);
      kops::swiglu(buf_.gate.data(), buf_.up.data(), h_out, l.gate.rows);
      return;
    }
    const detail::prepared_input in = prepare(x, l.gate.cols, {l.gate.type, l.up.type});
    const std::size_t grain =
        detail::decode_grain(l.gate.rows, l.gate.rows * (l.gate.row_bytes + l.up.row_bytes), pool_->size());
    const weight_matrix gate = l.gate, up = l.up;
    // The up rows of a range go to the thread's own scratch (a late worker
    // must write nothing shared): n_ff floats per thread in buf_.up_by_thread.
    float* scratch = buf_.up_by_thread.data();
    const std::size_t n_ff = l.gate.rows;
    pool_->run_replicated(
        l.gate.rows, grain, h_out, 1,
        [gate, up, in, scratch, n_ff](std::size_t begin, std::size_t end, std::size_t thread, float* dst) noexcept {
          float* u = scratch + thread * n_ff;
          detail::matrix_rows<B>(gate, in, begin, end, dst);
          detail::matrix_rows<B>(up, in, begin, end, u);
          kops::swiglu(dst, u, dst, end - begin);
        });
  }

  /// Decode attention of layer `layer` for the token just appended: replicated
  /// work items of consecutive KV heads (sized like the decode products' by
  /// the KV bytes they read), each running the paged decode kernel over the
  /// sequence's blocks, its heads span by span of pages, into its thread's
  /// own state (so a late worker never writes shared memory) and normalizing
  /// its groups of heads into attn.
  void decode_attention(std::size_t layer, const float* q, float* attn) {
    const llama_hparams& h = model_->hparams();
    const std::size_t hd = h.head_dim, group = h.n_head / h.n_head_kv;
    const kernels::paged_kv_desc kvd = cache_.view_unchecked(ws_, layer).desc();
    kernels::attention_decode_plan base;
    base.batch = 1;
    base.n_heads = static_cast<std::uint32_t>(h.n_head);
    base.n_kv_heads = static_cast<std::uint32_t>(h.n_head_kv);
    base.head_dim = static_cast<std::uint32_t>(hd);
    base.group = static_cast<std::uint32_t>(group);
    base.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
    std::byte* ws = buf_.workspace.data();
    const std::size_t ws_bytes = buf_.workspace_bytes;
    const std::size_t kv_bytes = std::size_t{kvd.pages(0)} * (kvd.k_page_bytes + kvd.v_page_bytes);
    const std::size_t grain = detail::decode_grain(h.n_head_kv, kv_bytes, pool_->size());
    pool_->run_replicated(
        h.n_head_kv, grain, attn, group * hd,
        [kvd, base, q, ws, ws_bytes](std::size_t begin, std::size_t end, std::size_t thread, float* dst) noexcept {
          const std::size_t D = base.head_dim, G = base.group, n = end - begin;
          std::byte* mine = ws + thread * ws_bytes;
          auto* items = reinterpret_cast<kernels::attention_decode_item*>(mine);
          auto* state = reinterpret_cast<float*>(mine + decode_items_bytes(base.n_kv_heads));
          for (std::size_t i = 0; i < n; ++i)
            items[i] = kernels::attention_decode_item{0, static_cast<std::uint32_t>(begin + i), 0, kvd.pages(0)};
          kernels::attention_decode_plan plan = base;
          plan.items = items;
          plan.n_items = static_cast<std::uint32_t>(n);
          plan.state_ml = state;
          plan.state_acc = state + 2 * G * n;
          kops::attention_decode(plan, kvd, q, 0, n);
          // One item per head group: its state is the whole softmax (as
          // attention_decode_merge computes for a single item).
          for (std::size_t i = 0; i < n; ++i) {
            float* out = dst + i * G * D;
            for (std::size_t g = 0; g < G; ++g) {
              const float m = plan.ml(i, g)[0], l = plan.ml(i, g)[1];
              const float inv = m != -std::numeric_limits<float>::infinity() && l > 0.0f ? 1.0f / l : 0.0f;
              const float* acc = plan.acc(i, g);
              for (std::size_t c = 0; c < D; ++c) out[g * D + c] = acc[c] * inv;
            }
          }
        });
  }

  /// Bytes of decode_attention's item array for n KV heads (keeps the state
  /// after it 64-byte aligned).
  static constexpr std::size_t decode_items_bytes(std::size_t n_kv_heads) noexcept {
    return (n_kv_heads * sizeof(kernels::attention_decode_item) + 63) / 64 * 64;
  }

  /// One token at position n_past_, through every layer; logits to `out`.
  [[nodiscard]] result<void> decode(token_id token, float* out) {
    const llama_hparams& h = model_->hparams();
    const std::size_t d = h.n_embd, hd = h.head_dim, q_dim = h.n_head * hd, kv_dim = h.n_head_kv * hd;
    const std::size_t pos = n_past_;
    const kv::step_entry entry{seq_, 1};
    RUVLLM_TRY(cache_.plan(std::span(&entry, 1), ws_));
    float* x = buf_.x.data();
    float* xn = buf_.xn.data();
    float* qkv = buf_.qkv.data();
    float* attn = buf_.attn.data();
    embed(token, x);
    for (std::size_t il = 0; il < h.n_layer; ++il) {
      const llama_layer& l = model_->layers()[il];
      kops::rms_norm_rows(x, l.attn_norm, xn, 1, d, h.rms_eps);
      decode_product(xn, qkv, l.wq, &l.wk, &l.wv);
      float* q = qkv;
      float* k = qkv + q_dim;
      float* v = k + kv_dim;
      if (l.bq != nullptr) {
        add_bias(q, l.bq, 1, q_dim);
        add_bias(k, l.bk, 1, kv_dim);
        add_bias(v, l.bv, 1, kv_dim);
      }
      adapt(il, projection::q, xn, d, q, q_dim, 1);
      adapt(il, projection::k, xn, d, k, kv_dim, 1);
      adapt(il, projection::v, xn, d, v, kv_dim, 1);
      kops::rope_apply(buf_.rope, h.rope_layout, q, 1, h.n_head, pos);
      kops::rope_apply(buf_.rope, h.rope_layout, k, 1, h.n_head_kv, pos);
      RUVLLM_TRY(cache_.append(ws_, il, 0, std::span<const float>(k, kv_dim), std::span<const float>(v, kv_dim)));
      decode_attention(il, q, attn);
      decode_product(attn, xn, l.wo);
      adapt(il, projection::o, attn, q_dim, xn, d, 1);
      add_rows(x, xn, d);
      kops::rms_norm_rows(x, l.ffn_norm, xn, 1, d, h.rms_eps);
      float* hidden = buf_.gate.data();
      if (adapts_ffn_up()) {
        // The hook adds to gate and up before SwiGLU: the two products run
        // apart instead of fused.
        decode_product(xn, buf_.gate.data(), l.gate);
        decode_product(xn, buf_.up.data(), l.up);
        adapt(il, projection::gate, xn, d, buf_.gate.data(), h.n_ff, 1);
        adapt(il, projection::up, xn, d, buf_.up.data(), h.n_ff, 1);
        kops::swiglu(buf_.gate.data(), buf_.up.data(), hidden, h.n_ff);
      } else {
        decode_ffn_up(l, xn, hidden);
      }
      decode_product(hidden, xn, l.down);
      adapt(il, projection::down, hidden, h.n_ff, xn, d, 1);
      add_rows(x, xn, d);
    }
    n_past_ += 1;
    kops::rms_norm_rows(x, model_->output_norm(), xn, 1, d, h.rms_eps);
    decode_product(xn, out, model_->output());
    // Every decode step runs the same jobs: the pool's adaptive probe then
    // compares whole steps with and without its workers.
    pool_->end_step();
    return {};
  }

  // ------------------------------------------------------------ batches

  /// y[t] = W x[t] for t < tokens (x rows `x_stride` floats apart, y rows
  /// `y_stride` apart), with llama.cpp's activation precision for W's type.
  void matmul(const weight_matrix& w, const float* x, std::size_t x_stride, float* y, std::size_t y_stride,
              std::size_t tokens) {
    switch (w.type) {
      case gguf_type::f32:
        dense_matmul(reinterpret_cast<const float*>(w.data), w, x, x_stride, y, y_stride, tokens);
        return;
      case gguf_type::f16:
      case gguf_type::bf16: {
        float* r = buf_.rounded.data();
        for (std::size_t t = 0; t < tokens; ++t) round_activations(w.type, x + t * x_stride, r + t * w.cols, w.cols);
        if (w.type == gguf_type::f16) {
          dense_matmul(reinterpret_cast<const f16*>(w.data), w, r, w.cols, y, y_stride, tokens);
        } else {
          dense_matmul(reinterpret_cast<const bf16*>(w.data), w, r, w.cols, y, y_stride, tokens);
        }
        return;
      }
      case gguf_type::q8_0:
        quantized(reinterpret_cast<const block_q8_0*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_0.data());
        return;
      case gguf_type::q4_0:
        quantized(reinterpret_cast<const block_q4_0*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_0.data());
        return;
      case gguf_type::q5_0:
        quantized(reinterpret_cast<const block_q5_0*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_0.data());
        return;
      case gguf_type::q4_1:
        quantized(reinterpret_cast<const block_q4_1*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_0.data());
        return;
      case gguf_type::iq4_nl:
        quantized(reinterpret_cast<const block_iq4_nl*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_0.data());
        return;
      case gguf_type::q5_1:
        quantized(reinterpret_cast<const block_q5_1*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_0.data());
        return;
      case gguf_type::q2_k:
        quantized(reinterpret_cast<const block_q2_k*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_k.data());
        return;
      case gguf_type::q3_k:
        quantized(reinterpret_cast<const block_q3_k*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_k.data());
        return;
      case gguf_type::iq4_xs:
        quantized(reinterpret_cast<const block_iq4_xs*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_k.data());
        return;
      case gguf_type::q4_k:
        quantized(reinterpret_cast<const block_q4_k*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_k.data());
        return;
      case gguf_type::q5_k:
        quantized(reinterpret_cast<const block_q5_k*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_k.data());
        return;
      case gguf_type::q6_k:
        quantized(reinterpret_cast<const block_q6_k*>(w.data), w, x, x_stride, y, y_stride, tokens,
                  buf_.act_q8_k.data());
        return;
      default: RUVLLM_ASSERT(false && "weight types are checked by llama_model::load"); return;
    }
  }

  template <class Block>
  void quantized(const Block* w, const weight_matrix& m, const float* x, std::size_t x_stride, float* y,
                 std::size_t y_stride, std::size_t tokens, kernels::activation_block_t<Block>* act) {
    if (tokens == 1) {
      kernels::quantized_gemv<B>(*pool_, w, m.row_bytes, x, y, m.rows, m.cols, act);
    } else {
      kernels::quantized_gemm<B>(*pool_, w, m.row_bytes, x, x_stride, y, y_stride, m.rows, tokens, m.cols, act);
    }
  }

  template <class W>
  void dense_matmul(const W* w, const weight_matrix& m, const float* x, std::size_t x_stride, float* y,
                    std::size_t y_stride, std::size_t tokens) {
    const std::size_t stride = m.row_bytes / sizeof(W);
    if (tokens == 1) {
      kernels::gemv<B>(*pool_, w, stride, x, y, m.rows, m.cols);
    } else {
      kernels::gemm<B>(*pool_, w, stride, x, x_stride, y, y_stride, m.rows, tokens, m.cols);
    }
  }

  /// Row `id` of the token embeddings as floats.
  void embed(token_id id, float* out) const {
    const weight_matrix& e = model_->token_embd();
    const std::byte* row = e.data + static_cast<std::size_t>(id) * e.row_bytes;
    switch (e.type) {
      case gguf_type::f32: std::memcpy(out, row, e.cols * sizeof(float)); return;
      case gguf_type::f16: kops::convert_f16_to_f32(reinterpret_cast<const f16*>(row), out, e.cols); return;
      case gguf_type::bf16: kops::convert_bf16_to_f32(reinterpret_cast<const bf16*>(row), out, e.cols); return;
      case gguf_type::q8_0: kops::dequantize_q8_0(reinterpret_cast<const block_q8_0*>(row), out, e.cols); return;
      case gguf_type::q4_0: kops::dequantize_q4_0(reinterpret_cast<const block_q4_0*>(row), out, e.cols); return;
      case gguf_type::q5_0: kops::dequantize_q5_0(reinterpret_cast<const block_q5_0*>(row), out, e.cols); return;
      case gguf_type::q4_1: kops::dequantize_q4_1(reinterpret_cast<const block_q4_1*>(row), out, e.cols); return;
      case gguf_type::iq4_nl: kops::dequantize_iq4_nl(reinterpret_cast<const block_iq4_nl*>(row), out, e.cols); return;
      case gguf_type::q5_1: kops::dequantize_q5_1(reinterpret_cast<const block_q5_1*>(row), out, e.cols); return;
      case gguf_type::q2_k: kops::dequantize_q2_k(reinterpret_cast<const block_q2_k*>(row), out, e.cols); return;
      case gguf_type::q3_k: kops::dequantize_q3_k(reinterpret_cast<const block_q3_k*>(row), out, e.cols); return;
      case gguf_type::iq4_xs: kops::dequantize_iq4_xs(reinterpret_cast<const block_iq4_xs*>(row), out, e.cols); return;
      case gguf_type::q4_k: kops::dequantize_q4_k(reinterpret_cast<const block_q4_k*>(row), out, e.cols); return;
      case gguf_type::q5_k: kops::dequantize_q5_k(reinterpret_cast<const block_q5_k*>(row), out, e.cols); return;
      case gguf_type::q6_k: kops::dequantize_q6_k(reinterpret_cast<const block_q6_k*>(row), out, e.cols); return;
      default: RUVLLM_ASSERT(false && "weight types are checked by llama_model::load"); return;
    }
  }

  /// The sequence's keys and values of layer `layer`, positions [0, n), as
  /// dense [position][kv_head][dim] floats in k_dense / v_dense (read from the
  /// blocks, so in the stored precision), on every pool thread.
  void gather_kv(std::size_t layer, std::size_t n) {
    const llama_hparams& h = model_->hparams();
    const kernels::paged_kv_desc kvd = cache_.view_unchecked(ws_, layer).desc();
    const std::size_t hd = h.head_dim, kv_dim = h.n_head_kv * hd, pages = (n + tokens_per_block - 1) / tokens_per_block;
    float* k = buf_.k_dense.data();
    float* v = buf_.v_dense.data();
    pool_->run(pages, 4, [&](std::size_t begin, std::size_t end, std::size_t) {
      for (std::size_t p = begin; p < end; ++p) {
        const std::size_t first = p * tokens_per_block, count = std::min(tokens_per_block, n - first);
        for (std::size_t head = 0; head < h.n_head_kv; ++head) {
          kops::kv_dequantize_page_head(kvd.k_format, kernels::kv_role::key,
                                        kvd.k_head(0, static_cast<std::uint32_t>(p), head), 0, count, hd,
                                        k + first * kv_dim + head * hd, kv_dim);
          kops::kv_dequantize_page_head(kvd.v_format, kernels::kv_role::value,
                                        kvd.v_head(0, static_cast<std::uint32_t>(p), head), 0, count, hd,
                                        v + first * kv_dim + head * hd, kv_dim);
        }
      }
    });
  }

  /// One chunk of at most max_batch tokens; logits to `out` when non-null.
  [[nodiscard]] result<void> step(std::span<const token_id> tokens, float* out, logits_for which) {
    const llama_hparams& h = model_->hparams();
    const std::size_t n = tokens.size(), d = h.n_embd, hd = h.head_dim;
    const std::size_t q_dim = h.n_head * hd, kv_dim = h.n_head_kv * hd;
    const std::size_t pos = n_past_;
    const kv::step_entry entry{seq_, static_cast<std::uint32_t>(n)};
    RUVLLM_TRY(cache_.plan(std::span(&entry, 1), ws_));
    float* x = buf_.x.data();
    float* xn = buf_.xn.data();
    float* q = buf_.q.data();
    float* attn = buf_.attn.data();
    float* k_new = buf_.k_new.data();
    float* v_new = buf_.v_new.data();
    for (std::size_t t = 0; t < n; ++t) embed(tokens[t], x + t * d);

    for (std::size_t il = 0; il < h.n_layer; ++il) {
      const llama_layer& l = model_->layers()[il];
      kops::rms_norm_rows(x, l.attn_norm, xn, n, d, h.rms_eps);
      matmul(l.wq, xn, d, q, q_dim, n);
      matmul(l.wk, xn, d, k_new, kv_dim, n);
      matmul(l.wv, xn, d, v_new, kv_dim, n);
      if (l.bq != nullptr) {
        add_bias(q, l.bq, n, q_dim);
        add_bias(k_new, l.bk, n, kv_dim);
        add_bias(v_new, l.bv, n, kv_dim);
      }
      adapt(il, projection::q, xn, d, q, q_dim, n);
      adapt(il, projection::k, xn, d, k_new, kv_dim, n);
      adapt(il, projection::v, xn, d, v_new, kv_dim, n);
      kops::rope_apply(buf_.rope, h.rope_layout, q, n, h.n_head, pos);
      kops::rope_apply(buf_.rope, h.rope_layout, k_new, n, h.n_head_kv, pos);
      RUVLLM_TRY(cache_.append(ws_, il, 0, std::span<const float>(k_new, n * kv_dim),
                               std::span<const float>(v_new, n * kv_dim)));
      gather_kv(il, pos + n);

      const auto args = kernels::attention_prefill_args::dense(q, buf_.k_dense.data(), buf_.v_dense.data(), attn, n,
                                                               pos + n, h.n_head, h.n_head_kv, hd);
      const std::size_t items = kernels::attention_prefill_work_items(args);
      std::byte* ws = buf_.workspace.data();
      const std::size_t ws_bytes = buf_.workspace_bytes;
      pool_->run(items, 1, [&](std::size_t begin, std::size_t end, std::size_t thread) {
        kops::attention_prefill(args, std::span<std::byte>(ws + thread * ws_bytes, ws_bytes), begin, end);
      });

      // Residual adds: the projections land in xn, then x += xn.
      matmul(l.wo, attn, q_dim, xn, d, n);
      adapt(il, projection::o, attn, q_dim, xn, d, n);
      add_rows(x, xn, n * d);
      kops::rms_norm_rows(x, l.ffn_norm, xn, n, d, h.rms_eps);
      matmul(l.gate, xn, d, buf_.gate.data(), h.n_ff, n);
      matmul(l.up, xn, d, buf_.up.data(), h.n_ff, n);
      adapt(il, projection::gate, xn, d, buf_.gate.data(), h.n_ff, n);
      adapt(il, projection::up, xn, d, buf_.up.data(), h.n_ff, n);
      kops::swiglu(buf_.gate.data(), buf_.up.data(), buf_.gate.data(), n * h.n_ff);
      matmul(l.down, buf_.gate.data(), h.n_ff, xn, d, n);
      adapt(il, projection::down, buf_.gate.data(), h.n_ff, xn, d, n);
      add_rows(x, xn, n * d);
    }
    n_past_ += n;
    if (out == nullptr) return {};
    // Only the rows whose logits are wanted go through the output head.
    const std::size_t first = which == logits_for::all ? 0 : n - 1;
    const std::size_t rows = n - first;
    kops::rms_norm_rows(x + first * d, model_->output_norm(), xn, rows, d, h.rms_eps);
    matmul(model_->output(), xn, d, out, h.n_vocab, rows);
    return {};
  }

  static void add_bias(float* y, const float* bias, std::size_t rows, std::size_t n) noexcept {
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < n; ++i) y[r * n + i] += bias[i];
  }
  static void add_rows(float* x, const float* y, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
  }

  const llama_model* model_ = nullptr;
  thread_pool* pool_ = nullptr;
  const Hook* hook_ = nullptr;
  std::uint64_t kv_key_ = 0;  // the hook key the current sequence was computed under
  std::vector<std::pair<kv::seq_id, std::uint64_t>> seq_keys_;
  options opt_{};
  std::size_t n_past_ = 0;
  kv::seq_id seq_ = 0;
  std::unique_ptr<kv::block_allocator> blocks_;
  cache_type cache_;
  kv::step_workspace ws_;
  buffers buf_;
};

}  // namespace ruvllm::model

#endif  // RUVLLM_MODEL_LLAMA_HPP
