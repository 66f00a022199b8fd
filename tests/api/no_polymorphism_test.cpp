// Zero virtual dispatch: every public class and class template of ruvllm,
// instantiated with the library's own policies, has no vtable. Extend the
// list with every new public type.

#include <catch2/catch.hpp>

#include <tuple>
#include <type_traits>

#include "ruvllm/ruvllm.hpp"

namespace no_polymorphism_test {

namespace {

namespace ev = ruvllm::eviction;
namespace p = ruvllm::precision;

struct lru_item : ev::lru::hook {};
struct lfu_item : ev::lfu::hook {};

// The smallest kv::BlockStore: declarations are all a type check needs.
struct declared_block_store {
  ruvllm::result<std::uint32_t> allocate();
  void retain(std::uint32_t);
  void release(std::uint32_t);
  std::uint32_t ref_count(std::uint32_t) const;
  std::size_t block_bytes() const;
  std::size_t blocks_in_use() const;
  std::size_t capacity_blocks() const;
  ruvllm::result<std::uint32_t> copy_block(std::uint32_t, std::size_t);
};
using radix_lru = ruvllm::kv::radix_cache<declared_block_store, 16>;
using radix_lfu = ruvllm::kv::radix_cache<declared_block_store, 32, ev::hysteresis<ev::lfu>>;
using kv_tiers = ruvllm::tiers<ruvllm::tier<p::f16, 256>, ruvllm::tier<p::q8_0, 1024>, ruvllm::tier<p::kivi<2>>>;
using tiered_kv = ruvllm::kv::tiered_kv_cache<kv_tiers, 32>;
using radix_tiered = ruvllm::kv::radix_cache<tiered_kv, 32>;

using public_types = std::tuple<
    // sona
    ruvllm::sona::fastgrnn_router<float>, ruvllm::sona::fastgrnn_router<double>, ruvllm::sona::router_workspace<float>,
    ruvllm::sona::router_options, ruvllm::sona::router_layout, ruvllm::sona::routing_decision,
    ruvllm::sona::router_target, ruvllm::sona::ewc<float>, ruvllm::sona::ewc<double>, ruvllm::sona::ewc_options,
    ruvllm::sona::adam<float>, ruvllm::sona::adam_options, ruvllm::sona::micro_lora<>, ruvllm::sona::base_lora<>,
    ruvllm::sona::micro_lora<ruvllm::backend::scalar>, ruvllm::sona::lora_options,
    ruvllm::sona::adapter_registry<ruvllm::sona::base_lora<>>,
    ruvllm::sona::adapter_registry<ruvllm::sona::base_lora<>>::entry, ruvllm::sona::trajectory_ring,
    ruvllm::sona::trajectory_view, ruvllm::sona::kv_stats, ruvllm::sona::reasoning_bank<>,
    ruvllm::sona::reasoning_bank<ruvllm::backend::scalar>, ruvllm::sona::reasoning_bank_options, ruvllm::sona::pattern,
    ruvllm::sona::kmeans_options, ruvllm::sona::kmeans_result, ruvllm::sona::sona_loops<>,
    ruvllm::sona::sona_loops<ruvllm::backend::scalar>, ruvllm::sona::loop_options, ruvllm::sona::tick_report,
    ruvllm::sona::no_sink, ruvllm::sona::learned_state<>, ruvllm::sona::learned_state<ruvllm::backend::scalar>,
    ruvllm::sona::lora_hook<ruvllm::sona::lora_targets::qv>,
    ruvllm::sona::lora_hook<ruvllm::sona::lora_targets::all, ruvllm::sona::base_lora<>>, ruvllm::sona::lora_targets::qv,
    ruvllm::sona::lora_targets::qkvo, ruvllm::sona::lora_targets::all, ruvllm::model::no_projection_hook,
    ruvllm::model::llama_context<ruvllm::backend::highway, ruvllm::model::default_kv,
                                 ruvllm::sona::lora_hook<ruvllm::sona::lora_targets::qv>>,
    ruvllm::sona::store_sink<ruvllm::store::memory_store<ruvllm::store::metric::cosine, p::f32>>,
    ruvllm::sona::store_adapter_backing<ruvllm::store::memory_store<ruvllm::store::metric::cosine, p::f32>>,
    ruvllm::sona::store_sink_options, ruvllm::sona::store_sink_stats, ruvllm::sona::adapter_pool_hooks,
    ruvllm::sona::memory_backing, ruvllm::sona::pooled_adapters_options,
    ruvllm::sona::pooled_adapters<ruvllm::sona::base_lora<>,
                                  ruvllm::memory::unified_pool<ev::lru, ruvllm::sona::adapter_pool_hooks>>,
    // core
    ruvllm::error, ruvllm::result<int>, ruvllm::result<void>, ruvllm::f16, ruvllm::bf16, ruvllm::aligned_buffer<float>,
    ruvllm::aligned_buffer<std::uint8_t, 4096>, ruvllm::byte_reader, ruvllm::mapped_file, ruvllm::thread_pool,
    ruvllm::thread_pool_options, ruvllm::thread_pool_stats, ruvllm::block_q8_0, ruvllm::block_q4_0, ruvllm::block_q4_k,
    ruvllm::block_q4_1, ruvllm::block_q5_0, ruvllm::block_q5_1, ruvllm::block_q5_k, ruvllm::block_q6_k,
    ruvllm::block_q2_k, ruvllm::block_q3_k, ruvllm::block_iq4_nl, ruvllm::block_iq4_xs, ruvllm::block_q8_k,
    ruvllm::block_kivi<2, 32>, ruvllm::block_kivi<4, 32>,
    // model: GGUF
    ruvllm::model::gguf_file, ruvllm::model::gguf_value, ruvllm::model::gguf_kv, ruvllm::model::gguf_tensor,
    ruvllm::model::gguf_type_traits, ruvllm::model::gguf_writer, ruvllm::model::gguf_array_builder,
    ruvllm::model::tokenizer, ruvllm::model::stream_detokenizer, ruvllm::model::decode_options,
    ruvllm::model::chat_message, ruvllm::model::unicode::utf8_sanitizer,
    // policies
    ruvllm::backend::scalar, ruvllm::backend::highway, ruvllm::backend::xsimd, p::f32, p::f16, p::bf16, p::q8_0,
    p::q4_0, p::q4_1, p::q5_0, p::q5_1, p::iq4_nl, p::iq4_xs, p::q2_k, p::q3_k, p::q4_k, p::q5_k, p::q6_k, p::q8_k,
    p::kivi<2>, p::kivi<4>, ruvllm::tier<p::f16, 256>,
    ruvllm::tiers<ruvllm::tier<p::f16, 256>, ruvllm::tier<p::q8_0, 2048>, ruvllm::tier<p::kivi<2>>>, ev::lru, ev::lfu,
    ev::hysteresis<ev::lru>, ev::watermarks, ev::lru::hook, ev::lfu::hook, ev::lru::queue<lru_item>,
    ev::lfu::queue<lfu_item>, ev::hysteresis<ev::lru>::queue<lru_item>, ev::hysteresis<ev::lfu>::queue<lfu_item>,
    // memory
    ruvllm::memory::page_memory, ruvllm::memory::arena, ruvllm::memory::unified_pool<ev::lru>,
    ruvllm::memory::unified_pool<ev::lfu>, ruvllm::memory::unified_pool<ev::hysteresis<ev::lru>>,
    ruvllm::memory::pool_options, ruvllm::memory::pool_stats, ruvllm::memory::alloc_request, ruvllm::memory::allocation,
    ruvllm::memory::allocation_info, ruvllm::memory::no_hooks,
    // kv: blocks and the paged cache
    ruvllm::kv::block_layout, ruvllm::kv::block_allocator, ruvllm::kv::kv_config<2, 2, 64>,
    ruvllm::kv::paged_kv_cache<ruvllm::kv::kv_config<2, 2, 64>>,
    ruvllm::kv::paged_kv_cache<ruvllm::kv::kv_config<1, 1, 32, p::q8_0, p::kivi<4>, 32>, ruvllm::backend::scalar>,
    ruvllm::kv::step_workspace, ruvllm::kv::step_entry, ruvllm::kv::cache_options, ruvllm::kv::runtime_kv_config<>,
    ruvllm::kv::paged_kv_cache<ruvllm::kv::runtime_kv_config<p::f32, p::f32, 16>>,
    // model: forward pass, sampling, generation
    ruvllm::model::llama_hparams, ruvllm::model::weight_matrix, ruvllm::model::llama_layer, ruvllm::model::llama_model,
    ruvllm::model::llama_context<>, ruvllm::model::llama_context<ruvllm::backend::scalar>,
    ruvllm::model::llama_context<ruvllm::backend::highway, ruvllm::model::f32_kv>, ruvllm::model::sampler_params,
    ruvllm::model::sampler, ruvllm::model::generate_options, ruvllm::model::generate_stats,
    ruvllm::model::stop_sequence_matcher,
    // kernels
    ruvllm::kernels::ops<ruvllm::backend::scalar>, ruvllm::kernels::ops<ruvllm::backend::highway>,
    ruvllm::kernels::ops<ruvllm::backend::xsimd>, ruvllm::kernels::distance_ops<ruvllm::backend::scalar>,
    ruvllm::kernels::distance_ops<ruvllm::backend::highway>, ruvllm::kernels::distance_ops<ruvllm::backend::xsimd>,
    ruvllm::kernels::quant_ops<ruvllm::backend::scalar>, ruvllm::kernels::quant_ops<ruvllm::backend::highway>,
    ruvllm::kernels::quant_ops<ruvllm::backend::xsimd>, ruvllm::kernels::q8_0_quad,
    ruvllm::kernels::norm_ops<ruvllm::backend::scalar>, ruvllm::kernels::norm_ops<ruvllm::backend::highway>,
    ruvllm::kernels::norm_ops<ruvllm::backend::xsimd>, ruvllm::kernels::activation_ops<ruvllm::backend::scalar>,
    ruvllm::kernels::activation_ops<ruvllm::backend::highway>, ruvllm::kernels::activation_ops<ruvllm::backend::xsimd>,
    ruvllm::kernels::rope_ops<ruvllm::backend::scalar>, ruvllm::kernels::rope_ops<ruvllm::backend::highway>,
    ruvllm::kernels::rope_ops<ruvllm::backend::xsimd>,
    // kernels: attention and KV quantizers
    ruvllm::kernels::attention_ops<ruvllm::backend::scalar>, ruvllm::kernels::attention_ops<ruvllm::backend::highway>,
    ruvllm::kernels::attention_ops<ruvllm::backend::xsimd>, ruvllm::kernels::kv_quant_ops<ruvllm::backend::scalar>,
    ruvllm::kernels::kv_quant_ops<ruvllm::backend::highway>, ruvllm::kernels::kv_quant_ops<ruvllm::backend::xsimd>,
    ruvllm::kernels::paged_kv_view<p::f16, p::f16, 16>, ruvllm::kernels::paged_kv_view<p::q8_0, p::kivi<2>, 32>,
    ruvllm::kernels::paged_kv_view<p::kivi<4>, p::kivi<4, 16>, 64>, ruvllm::kernels::paged_kv_desc,
    ruvllm::kernels::kv_format_desc, ruvllm::kernels::attention_prefill_args, ruvllm::kernels::attention_decode_options,
    ruvllm::kernels::attention_decode_item, ruvllm::kernels::attention_decode_plan, ruvllm::kernels::rope_table,
    ruvllm::kernels::rope_params, ruvllm::kernels::rope_strides,
    // kv: radix prefix cache
    ruvllm::kv::kv_namespace, ruvllm::kv::radix_stats, ruvllm::kv::radix_cache_options, radix_lru, radix_lfu,
    radix_lru::node_ref, radix_lru::match_result, radix_lru::insert_result, radix_tiered,
    // kv: hot/warm/cold tiers
    tiered_kv,
    ruvllm::kv::tiered_kv_cache<ruvllm::tiers<ruvllm::tier<p::q8_0, 64>, ruvllm::tier<p::kivi<4>>>, 64,
                                ruvllm::backend::scalar>,
    ruvllm::kv::tiered_kv_options, ruvllm::kv::tiered_sequence, ruvllm::kv::tiered_kv_stats,
    // store
    ruvllm::store::hnsw_index<ruvllm::store::metric::cosine, p::f32>,
    ruvllm::store::hnsw_index<ruvllm::store::metric::l2, p::f16>,
    ruvllm::store::hnsw_index<ruvllm::store::metric::dot, ruvllm::store::i8>,
    ruvllm::store::hnsw_store<ruvllm::store::metric::cosine, p::f32>,
    ruvllm::store::vector_space<ruvllm::store::metric::l2, ruvllm::store::i8>, ruvllm::store::metric::cosine,
    ruvllm::store::metric::l2, ruvllm::store::metric::dot, ruvllm::store::i8, ruvllm::store::hnsw_options,
    ruvllm::store::search_params, ruvllm::store::search_hit, ruvllm::store::no_filter, ruvllm::store::search_stats,
    ruvllm::store::hnsw_search_context, ruvllm::store::hnsw_file_header, ruvllm::store::hnsw_section_entry,
    ruvllm::store::hnsw_file_layout, ruvllm::store::write_ahead_log, ruvllm::store::wal_options,
    ruvllm::store::hnsw_store_options, ruvllm::store::file_handle, ruvllm::store::record_graph, ruvllm::store::record,
    ruvllm::store::memory_store<ruvllm::store::metric::cosine, p::f32>, ruvllm::store::memory_store_options,
    ruvllm::store::memory_hit,
    ruvllm::store::policy_store<ruvllm::store::memory_store<ruvllm::store::metric::cosine, p::f32>>,
    ruvllm::store::session_index<ruvllm::store::memory_store<ruvllm::store::metric::cosine, p::f32>>,
    ruvllm::store::witness_log<ruvllm::store::memory_store<ruvllm::store::metric::cosine, p::f32>>, ruvllm::store::uuid,
    ruvllm::store::edge,
    // store: roles
    ruvllm::store::memory_store<ruvllm::store::metric::l2, p::f16>, ruvllm::store::memory_batch,
    ruvllm::store::embedding_ref, ruvllm::store::memory_store_stats, ruvllm::store::wal_stats,
    ruvllm::store::session_index<ruvllm::store::memory_store<ruvllm::store::metric::cosine, p::f32>,
                                 ruvllm::store::cipher::none>,
    ruvllm::store::cipher::none, ruvllm::store::policy, ruvllm::store::policy_hit, ruvllm::store::policy_store_options,
    ruvllm::store::session, ruvllm::store::session_hit, ruvllm::store::kv_cache_ref,
    ruvllm::store::session_index_options, ruvllm::store::witness_entry, ruvllm::store::witness_record,
    ruvllm::store::witness_hit, ruvllm::store::witness_routing, ruvllm::store::latency_breakdown,
    ruvllm::store::latency_percentiles, ruvllm::store::latency_summary, ruvllm::store::quality_bucket,
    ruvllm::store::model_usage, ruvllm::store::witness_log_options, ruvllm::store::witness_stats>;

template <class... Ts>
constexpr bool none_polymorphic(std::tuple<Ts...>*) {
  return (!std::is_polymorphic_v<Ts> && ...);
}

// The checker itself must be able to fail.
struct with_vtable {
  virtual ~with_vtable() = default;
};

}  // namespace

TEST_CASE("no public ruvllm type is polymorphic", "[api]") {
  STATIC_REQUIRE(none_polymorphic(static_cast<public_types*>(nullptr)));
  STATIC_REQUIRE_FALSE(none_polymorphic(static_cast<std::tuple<ruvllm::error, with_vtable>*>(nullptr)));
}

}  // namespace no_polymorphism_test
