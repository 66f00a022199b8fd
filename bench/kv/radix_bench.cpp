// Radix prefix cache benchmarks (radix_bench):
//  * kv/radix_match/<policy>/<prefixes>x<tokens>/threads:1: match() of a
//    1,000-token prompt among 10,000 cached 1,000-token prefixes (16 tokens
//    per block): 10 system prompts of 300 tokens (not block-aligned, so each
//    prompt's 1,000 continuations share the prompt's last 12 tokens in their
//    first block), each continued by 1,000 random 700-token contexts. The
//    queries cycle through a full hit (a cached prefix), a partial hit
//    diverging at a random position (a copied tail block when it is inside a
//    block), and a new context after a cached system prompt. Each call is
//    timed on its own (steady clock); counters p50_us and p99_us (target:
//    p50 < 5 us), hit_tokens (mean tokens matched). The blocks a match
//    returns are released outside the timed call.
//  * baseline/kv/radix_match/...: the hash-per-block prefix cache a simple
//    engine uses (ADR-011's option A, vLLM's block hashes): one hash map from
//    the rolling hash of every whole-block prefix to its block, walked block
//    by block until a miss; no partial blocks. Same queries, same timing.
//  * kv/radix_insert/...: inserting a new 1,000-token prompt whose 300-token
//    system prompt is cached and whose 700-token context is not (p50_us,
//    p99_us per insert, including the eviction of about one prefix that keeps
//    the cache at its budget).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "ruvllm/kv/radix_cache.hpp"
#include "support/bench.hpp"

namespace {

namespace kv = ruvllm::kv;
namespace rb = ruvllm::bench;

constexpr std::size_t tpb = 16;
constexpr std::size_t n_prompts = 10;
constexpr std::size_t prompt_len = 300;
constexpr std::size_t per_prompt = 1000;
constexpr std::size_t context_len = 700;
constexpr std::size_t query_len = 1000;
constexpr std::size_t n_queries = 3000;

/// A BlockStore that only counts references: the benchmark measures the
/// tree, not KV memory.
class counting_store {
 public:
  explicit counting_store(std::size_t capacity) : refs_(capacity, 0) {
    free_.reserve(capacity);
    for (std::size_t i = capacity; i-- > 0;) free_.push_back(static_cast<std::uint32_t>(i));
  }
  ruvllm::result<std::uint32_t> allocate() {
    if (free_.empty()) return ruvllm::make_error(ruvllm::errc::out_of_memory, "counting_store full");
    const std::uint32_t id = free_.back();
    free_.pop_back();
    refs_[id] = 1;
    return id;
  }
  void retain(std::uint32_t id) { ++refs_[id]; }
  void release(std::uint32_t id) {
    if (--refs_[id] == 0) free_.push_back(id);
  }
  std::uint32_t ref_count(std::uint32_t id) const { return refs_[id]; }
  std::size_t block_bytes() const { return 2 * tpb * 8 * 128 * 2; }  // f16 K + V, 8 KV heads of 128
  std::size_t blocks_in_use() const { return refs_.size() - free_.size(); }
  std::size_t capacity_blocks() const { return refs_.size(); }
  ruvllm::result<std::uint32_t> copy_block(std::uint32_t, std::size_t) { return allocate(); }

 private:
  std::vector<std::uint32_t> refs_;
  std::vector<std::uint32_t> free_;
};

struct workload {
  std::vector<std::vector<kv::token_id>> prefixes;
  std::vector<std::vector<kv::token_id>> queries;
};

std::vector<kv::token_id> random_tokens(std::mt19937_64& gen, std::size_t n) {
  std::uniform_int_distribution<kv::token_id> tok(0, 127'999);
  std::vector<kv::token_id> t(n);
  for (auto& x : t) x = tok(gen);
  return t;
}

const workload& the_workload() {
  static const workload w = [] {
    workload r;
    std::mt19937_64 gen(2026);
    std::vector<std::vector<kv::token_id>> prompts;
    for (std::size_t p = 0; p < n_prompts; ++p) prompts.push_back(random_tokens(gen, prompt_len));
    for (std::size_t p = 0; p < n_prompts; ++p)
      for (std::size_t c = 0; c < per_prompt; ++c) {
        auto s = prompts[p];
        const auto ctx = random_tokens(gen, context_len);
        s.insert(s.end(), ctx.begin(), ctx.end());
        r.prefixes.push_back(std::move(s));
      }
    std::uniform_int_distribution<std::size_t> pick(0, r.prefixes.size() - 1);
    std::uniform_int_distribution<std::size_t> cut(prompt_len, query_len - 1);
    for (std::size_t i = 0; i < n_queries; ++i) {
      auto q = r.prefixes[pick(gen)];
      if (i % 3 == 1) {  // partial hit: a new suffix from a random position
        const std::size_t at = cut(gen);
        const auto tail = random_tokens(gen, query_len - at);
        std::copy(tail.begin(), tail.end(), q.begin() + static_cast<std::ptrdiff_t>(at));
      } else if (i % 3 == 2) {  // a new context after a cached system prompt
        const auto tail = random_tokens(gen, query_len - prompt_len);
        std::copy(tail.begin(), tail.end(), q.begin() + static_cast<std::ptrdiff_t>(prompt_len));
      }
      r.queries.push_back(std::move(q));
    }
    return r;
  }();
  return w;
}

const kv::kv_namespace bench_ns{kv::model_id{1}, kv::adapter_id{0}, kv::adapter_version{0}, kv::tenant_salt{0}};

/// Inserts every prefix (each with fresh blocks the store hands out).
template <class Cache>
void fill(Cache& cache, counting_store& store) {
  std::vector<std::uint32_t> blocks;
  for (const auto& s : the_workload().prefixes) {
    blocks.clear();
    for (std::size_t b = 0; b < (s.size() + tpb - 1) / tpb; ++b) blocks.push_back(*store.allocate());
    if (!cache.insert(bench_ns, s, blocks)) std::abort();
    for (auto id : blocks) store.release(id);
  }
}

struct latency {
  std::vector<double> us;
  void add(std::chrono::steady_clock::duration d) {
    us.push_back(std::chrono::duration<double, std::micro>(d).count());
  }
  double quantile(double q) {
    if (us.empty()) return 0.0;
    auto at = us.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(us.size() - 1));
    std::nth_element(us.begin(), at, us.end());
    return *at;
  }
};

/// The baseline: whole-block prefix hashes -> block, as a hash-table prefix cache keeps them.
struct block_hash_cache {
  std::unordered_map<std::uint64_t, std::uint32_t> map;

  static std::uint64_t step(std::uint64_t h, const kv::token_id* t) {
    for (std::size_t i = 0; i < tpb; ++i) h = (h ^ t[i]) * 0x100000001B3ull;
    return h ^ (h >> 29);
  }
  void insert(const std::vector<kv::token_id>& s, counting_store& store) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::size_t b = 0; b + tpb <= s.size(); b += tpb) {
      h = step(h, s.data() + b);
      if (map.emplace(h, 0u).second) map[h] = *store.allocate();
    }
  }
  std::size_t match(const std::vector<kv::token_id>& q, std::uint32_t* out, counting_store& store) const {
    std::uint64_t h = 0xcbf29ce484222325ull;
    std::size_t n = 0;
    for (std::size_t b = 0; b + tpb <= q.size(); b += tpb) {
      h = step(h, q.data() + b);
      const auto it = map.find(h);
      if (it == map.end()) break;
      store.retain(it->second);
      out[n++] = it->second;
    }
    return n * tpb;
  }
};

/// The baseline, built once, for set_speedup when its row did not run first.
struct baseline_env {
  counting_store store{4'000'000};
  block_hash_cache cache;
  std::vector<std::uint32_t> out = std::vector<std::uint32_t>(query_len / tpb + 1);
  std::size_t next = 0;
  baseline_env() {
    for (const auto& s : the_workload().prefixes) cache.insert(s, store);
  }
  void step() {
    const auto& q = the_workload().queries[next++ % the_workload().queries.size()];
    const std::size_t n = cache.match(q, out.data(), store);
    for (std::size_t b = 0; b < n / tpb; ++b) store.release(out[b]);
  }
};

template <class Policy>
void register_match(const char* policy) {
  const std::string shape = rb::shape({n_prompts * per_prompt, query_len});
  const std::string row = rb::row_name("kv", "radix_match", policy, shape, 1);
  const std::string base = rb::baseline_of(row);

  benchmark::RegisterBenchmark(base.c_str(), [base](benchmark::State& state) {
    counting_store store(4'000'000);
    block_hash_cache cache;
    for (const auto& s : the_workload().prefixes) cache.insert(s, store);
    const auto& queries = the_workload().queries;
    std::vector<std::uint32_t> out(query_len / tpb + 1);
    latency lat;
    lat.us.reserve(1 << 20);
    std::size_t i = 0, tokens = 0, calls = 0;
    rb::timed_loop(state, [&] {
      const auto& q = queries[i++ % queries.size()];
      const auto t0 = std::chrono::steady_clock::now();
      const std::size_t n = cache.match(q, out.data(), store);
      lat.add(std::chrono::steady_clock::now() - t0);
      for (std::size_t b = 0; b < n / tpb; ++b) store.release(out[b]);
      tokens += n;
      ++calls;
    });
    rb::record_baseline(state, base);
    state.counters["p50_us"] = benchmark::Counter(lat.quantile(0.5));
    state.counters["p99_us"] = benchmark::Counter(lat.quantile(0.99));
    state.counters["hit_tokens"] = benchmark::Counter(static_cast<double>(tokens) / static_cast<double>(calls));
  });

  benchmark::RegisterBenchmark(row.c_str(), [base](benchmark::State& state) {
    counting_store store(4'000'000);
    kv::radix_cache<counting_store, tpb, Policy> cache(store);
    fill(cache, store);
    const auto& queries = the_workload().queries;
    std::vector<std::uint32_t> out(query_len / tpb + 1);
    latency lat;
    lat.us.reserve(1 << 20);
    std::size_t i = 0, tokens = 0, calls = 0;
    rb::timed_loop(state, [&] {
      const auto& q = queries[i++ % queries.size()];
      const auto t0 = std::chrono::steady_clock::now();
      const auto m = cache.match(bench_ns, q, out);
      lat.add(std::chrono::steady_clock::now() - t0);
      for (std::size_t b = 0; b < m.blocks; ++b) store.release(out[b]);
      tokens += m.tokens;
      ++calls;
    });
    rb::set_speedup(state, base, [] {
      static baseline_env env;
      env.step();
    });
    state.counters["p50_us"] = benchmark::Counter(lat.quantile(0.5));
    state.counters["p99_us"] = benchmark::Counter(lat.quantile(0.99));
    state.counters["hit_tokens"] = benchmark::Counter(static_cast<double>(tokens) / static_cast<double>(calls));
    state.counters["nodes"] = benchmark::Counter(static_cast<double>(cache.stats().nodes));
  });
}

void register_insert() {
  const std::string row = rb::row_name("kv", "radix_insert", "lru", rb::shape({n_prompts * per_prompt, query_len}), 1);
  benchmark::RegisterBenchmark(row.c_str(), [](benchmark::State& state) {
    counting_store store(4'000'000);
    kv::radix_cache<counting_store, tpb> cache(store);
    fill(cache, store);
    // Keep the cache at its size: every insert evicts about one prefix.
    cache.set_max_blocks(cache.stats().cached_blocks);
    std::mt19937_64 gen(7);
    std::vector<std::vector<kv::token_id>> news;
    for (int i = 0; i < 512; ++i) {
      auto s = the_workload().prefixes[static_cast<std::size_t>(i) * 17 % the_workload().prefixes.size()];
      const auto tail = random_tokens(gen, query_len - prompt_len);
      std::copy(tail.begin(), tail.end(), s.begin() + static_cast<std::ptrdiff_t>(prompt_len));
      news.push_back(std::move(s));
    }
    std::vector<std::uint32_t> blocks(query_len / tpb + 1);
    std::size_t i = 0;
    latency lat;
    lat.us.reserve(1 << 20);
    rb::timed_loop(state, [&] {
      auto& s = news[i % news.size()];
      // A context never seen before: the counter in its first two tokens.
      s[prompt_len] = static_cast<kv::token_id>(128'000 + i % 1'000'000);
      s[prompt_len + 1] = static_cast<kv::token_id>(128'000 + i / 1'000'000);
      ++i;
      const std::size_t nb = (s.size() + tpb - 1) / tpb;
      for (std::size_t b = 0; b < nb; ++b) blocks[b] = *store.allocate();
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = cache.insert(bench_ns, s, std::span<const std::uint32_t>(blocks.data(), nb));
      lat.add(std::chrono::steady_clock::now() - t0);
      benchmark::DoNotOptimize(r.has_value());
      for (std::size_t b = 0; b < nb; ++b) store.release(blocks[b]);
    });
    state.counters["p50_us"] = benchmark::Counter(lat.quantile(0.5));
    state.counters["p99_us"] = benchmark::Counter(lat.quantile(0.99));
  });
}

[[maybe_unused]] const bool registered = [] {
  register_match<ruvllm::eviction::lru>("lru");
  register_match<ruvllm::eviction::lfu>("lfu");
  register_insert();
  return true;
}();

}  // namespace
