// The KV block allocator and the paged cache's per-step work (kv_bench).
//  * kv/block_alloc_free/<k>_<v>/<layers>x<heads>x<dim>x<T>: allocate + release
//    of one block (mutex-guarded free stack, atomic count); baseline: malloc
//    + free of the same block_bytes, what a cache without a block pool pays.
//  * kv/block_fork/...: retain + release of a shared block (lock-free path).
//  * kv/plan_decode/...: plan() of a decode step for 32 sequences of 512
//    tokens (one new token each, one block crossing in 16 steps on average),
//    including truncating back so every iteration plans the same step;
//    baseline: copying the 32 block tables into a std::vector CSR (the
//    allocating way to build the same page table).
//  * kv/append_token/...: append of one token's K and V for all layers of one
//    sequence (quantizer dispatch per page-head).
// Shapes are a 1B-class llama: 16 layers, 8 KV heads, head_dim 64, 16 tokens
// per block.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "ruvllm/kv/paged_kv_cache.hpp"
#include "support/bench.hpp"

namespace {

namespace rb = ruvllm::bench;
namespace kv = ruvllm::kv;
namespace p = ruvllm::precision;

using cfg = kv::kv_config<16, 8, 64, p::f16, p::f16, 16>;
using cache_t = kv::paged_kv_cache<cfg>;
const std::string shape = rb::shape({16, 8, 64, 16});

kv::block_allocator make_blocks(std::size_t capacity) {
  return kv::block_allocator::create(cache_t::layout().value(), capacity).value();
}

void register_alloc() {
  const std::string row = rb::row_name("kv", "block_alloc_free", "f16_f16", shape, 1);
  const std::string base = rb::baseline_of(row);
  const std::size_t bytes = cache_t::layout().value().block_bytes();
  const auto malloc_body = [bytes] {
    void* q = std::malloc(bytes);
    benchmark::DoNotOptimize(q);
    std::free(q);
  };
  benchmark::RegisterBenchmark(base.c_str(), [base, malloc_body](benchmark::State& state) {
    rb::timed_loop(state, malloc_body);
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
    rb::record_baseline(state, base);
  });
  benchmark::RegisterBenchmark(row.c_str(), [base, malloc_body](benchmark::State& state) {
    auto blocks = make_blocks(1024);
    rb::timed_loop(state, [&] {
      const auto b = blocks.try_allocate();
      benchmark::DoNotOptimize(b);
      blocks.release(b);
    });
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
    state.counters["block_bytes"] = static_cast<double>(blocks.block_bytes());
    rb::set_speedup(state, base, malloc_body);
  });
  const std::string fork_row = rb::row_name("kv", "block_fork", "f16_f16", shape, 1);
  benchmark::RegisterBenchmark(fork_row.c_str(), [](benchmark::State& state) {
    auto blocks = make_blocks(16);
    const auto b = blocks.try_allocate();
    rb::timed_loop(state, [&] {
      blocks.retain(b);
      blocks.release(b);
    });
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
  });
}

struct decode_batch {
  static constexpr std::size_t batch = 32, prompt = 512;
  kv::block_allocator blocks = make_blocks(batch * (prompt / 16 + 2));
  cache_t cache = cache_t::create(blocks, {64, 4096}).value();
  kv::step_workspace ws = cache.make_workspace(batch);
  std::vector<kv::step_entry> entries;

  decode_batch() {
    std::vector<kv::step_entry> prefill;
    for (std::size_t s = 0; s < batch; ++s) {
      const auto id = cache.add_sequence().value();
      prefill.push_back({id, static_cast<std::uint32_t>(prompt - s % 16)});  // last blocks filled unevenly
      entries.push_back({id, 1});
    }
    cache.plan(prefill, ws).value();
  }
};

void register_plan() {
  const std::string row = rb::row_name("kv", "plan_decode", "f16_f16", shape + "/batch32", 1);
  const std::string base = rb::baseline_of(row);
  auto shared = std::make_shared<decode_batch>();
  const auto vector_csr = [shared] {
    std::vector<std::uint32_t> indptr{0}, ids, last;
    for (const auto& e : shared->entries) {
      const auto table = shared->cache.block_table(e.seq).value();
      ids.insert(ids.end(), table.begin(), table.end());
      indptr.push_back(static_cast<std::uint32_t>(ids.size()));
      last.push_back(static_cast<std::uint32_t>(shared->cache.length(e.seq).value() % 16));
    }
    benchmark::DoNotOptimize(ids.data());
  };
  benchmark::RegisterBenchmark(base.c_str(), [base, vector_csr](benchmark::State& state) {
    rb::timed_loop(state, vector_csr);
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
    rb::record_baseline(state, base);
  });
  benchmark::RegisterBenchmark(row.c_str(), [shared, base, vector_csr](benchmark::State& state) {
    decode_batch& d = *shared;
    std::vector<std::size_t> lens;
    for (const auto& e : d.entries) lens.push_back(d.cache.length(e.seq).value());
    rb::timed_loop(state, [&] {
      d.cache.plan(d.entries, d.ws).value();
      for (std::size_t i = 0; i < d.entries.size(); ++i) static_cast<void>(d.cache.truncate(d.entries[i].seq, lens[i]));
    });
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
    state.counters["ns_per_seq"] = rb::seconds_per_iteration(state) * 1e9 / decode_batch::batch;
    rb::set_speedup(state, base, vector_csr);
  });
}

void register_append() {
  const std::string row = rb::row_name("kv", "append_token", "f16_f16", shape, 1);
  benchmark::RegisterBenchmark(row.c_str(), [](benchmark::State& state) {
    auto blocks = make_blocks(8);
    auto cache = cache_t::create(blocks, {4, 64}).value();
    auto ws = cache.make_workspace(1);
    const auto s = cache.add_sequence().value();
    const kv::step_entry e{s, 1};
    cache.plan(std::span<const kv::step_entry>(&e, 1), ws).value();
    const auto k = rb::random_floats(cache_t::row_floats, 1), v = rb::random_floats(cache_t::row_floats, 2);
    rb::timed_loop(state, [&] {
      for (std::size_t layer = 0; layer < cfg::layers; ++layer)
        static_cast<void>(cache.append(ws, layer, 0, k.span(), v.span()));
    });
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
  });
}

const bool registered = [] {
  register_alloc();
  register_plan();
  register_append();
  return true;
}();

}  // namespace
