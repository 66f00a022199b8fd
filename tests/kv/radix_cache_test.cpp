// radix_cache against a reference model: plain sets of token vectors per
// namespace, a brute-force longest-prefix search, and a block store whose
// blocks carry per-token tags derived from (namespace, prefix), so every
// served block is checked to hold the KV of exactly the requested prefix.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kv/ref_block_store.hpp"
#include "ruvllm/core/eviction.hpp"
#include "ruvllm/kv/block_allocator.hpp"
#include "ruvllm/kv/radix_cache.hpp"
#include "support/property.hpp"

namespace radix_cache_test {

namespace {

namespace kv = ruvllm::kv;
namespace ev = ruvllm::eviction;
using ruvllm::test::ref_block_store;
using tokens_t = std::vector<kv::token_id>;

static_assert(kv::BlockStore<ref_block_store>);
static_assert(kv::BlockStore<kv::block_allocator>);

/// How a test reads and writes the per-token tags of a store's blocks.
template <class S>
struct store_access;

template <>
struct store_access<ref_block_store> {
  static std::uint64_t get(ref_block_store& s, std::uint32_t id, std::size_t t) { return s.tags(id)[t]; }
  static void set(ref_block_store& s, std::uint32_t id, std::size_t t, std::uint64_t v) { s.tags(id)[t] = v; }
  static std::uint64_t total_refs(const ref_block_store& s) { return s.total_refs(); }
  static std::string failure(const ref_block_store& s) { return s.failure(); }
};

/// kv::block_allocator: the tag sits in the first 8 bytes of the token's key
/// row (f16 keys, head 0, layer 0), which copy_block copies with the token.
template <>
struct store_access<kv::block_allocator> {
  static std::byte* row(kv::block_allocator& s, std::uint32_t id, std::size_t t) {
    return s.k_block(0, id) + t * s.layout().head_dim * 2;
  }
  static std::uint64_t get(kv::block_allocator& s, std::uint32_t id, std::size_t t) {
    std::uint64_t v;
    std::memcpy(&v, row(s, id, t), sizeof v);
    return v;
  }
  static void set(kv::block_allocator& s, std::uint32_t id, std::size_t t, std::uint64_t v) {
    std::memcpy(row(s, id, t), &v, sizeof v);
  }
  static std::uint64_t total_refs(const kv::block_allocator& s) {
    std::uint64_t r = 0;
    for (std::uint32_t id = 0; id < s.capacity_blocks(); ++id) r += s.ref_count(id);
    return r;
  }
  static std::string failure(const kv::block_allocator&) { return {}; }  // misuse asserts in debug builds
};

kv::kv_namespace make_ns(std::uint64_t model, std::uint64_t adapter, std::uint64_t version, std::uint64_t salt = 0) {
  return kv::kv_namespace{kv::model_id{model}, kv::adapter_id{adapter}, kv::adapter_version{version},
                          kv::tenant_salt{salt}};
}

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

/// The "KV" of each position of a sequence: a hash of the namespace and the
/// prefix up to and including that token (attention state depends on all of it).
std::vector<std::uint64_t> kv_tags(const kv::kv_namespace& ns, const tokens_t& t) {
  std::uint64_t h = mix(static_cast<std::uint64_t>(ns.model) * 31 + static_cast<std::uint64_t>(ns.adapter));
  h = mix(h ^ static_cast<std::uint64_t>(ns.version) * 7 ^ static_cast<std::uint64_t>(ns.salt) * 13);
  std::vector<std::uint64_t> out(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) out[i] = h = mix(h ^ (t[i] + 0x1234567ull));
  return out;
}

/// Allocates and fills the blocks of a computed sequence (the caller owns one reference each).
template <class Store>
std::vector<std::uint32_t> compute_blocks(Store& store, const kv::kv_namespace& ns, const tokens_t& t, std::size_t T) {
  const auto tags = kv_tags(ns, t);
  std::vector<std::uint32_t> blocks((t.size() + T - 1) / T);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    auto id = store.allocate();
    REQUIRE(id.has_value());
    blocks[b] = *id;
    for (std::size_t i = 0; i < T && b * T + i < t.size(); ++i)
      store_access<Store>::set(store, *id, i, tags[b * T + i]);
  }
  return blocks;
}

std::size_t lcp(const tokens_t& a, std::span<const kv::token_id> b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

template <class Cache>
std::vector<tokens_t> leaves(const Cache& c, const kv::kv_namespace& ns) {
  std::vector<tokens_t> out;
  c.for_each_cached_prefix(ns, [&](std::span<const kv::token_id> p) { out.emplace_back(p.begin(), p.end()); });
  return out;
}

std::size_t longest(const std::vector<tokens_t>& set, std::span<const kv::token_id> q) {
  std::size_t best = 0;
  for (const auto& s : set) best = std::max(best, lcp(s, q));
  return best;
}

bool is_prefix_of_some(const tokens_t& p, const std::vector<tokens_t>& set) {
  return std::any_of(set.begin(), set.end(), [&](const tokens_t& s) { return lcp(s, p) == p.size(); });
}

}  // namespace

TEST_CASE("radix_cache basic insert, split and match", "[kv][radix]") {
  constexpr std::size_t T = 4;
  ref_block_store store(64, T);
  kv::radix_cache<ref_block_store, T> cache(store);
  const auto ns = make_ns(1, 0, 0);
  const tokens_t a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  auto ab = compute_blocks(store, ns, a, T);
  auto ins = cache.insert(ns, a, ab);
  REQUIRE(ins.has_value());
  CHECK(ins->new_tokens == 10);
  CHECK(cache.stats().cached_tokens == 10);
  CHECK(cache.stats().cached_blocks == 3);
  for (auto b : ab) CHECK(store.ref_count(b) == 2);

  // Diverges inside block 1 (token 6): split after block 0, branch.
  const tokens_t b = {1, 2, 3, 4, 5, 6, 99, 8};
  CHECK(cache.peek_prefix_len(ns, b) == 6);
  auto bb = compute_blocks(store, ns, b, T);
  REQUIRE(cache.insert(ns, b, bb).has_value());
  CHECK(cache.stats().nodes == 3);
  CHECK(cache.stats().cached_tokens == 14);  // b adds tokens 4..7 in its own block
  REQUIRE(cache.check_invariants().has_value());

  // Match of a query ending mid-block: one shared block plus a copied tail.
  std::uint32_t out[8];
  const tokens_t q = {1, 2, 3, 4, 5, 6, 7, 1000};
  auto m = cache.match(ns, q, out);
  CHECK(m.tokens == 7);
  CHECK(m.shared_blocks == 1);
  CHECK(m.blocks == 2);
  CHECK(m.copied_tail);
  CHECK(out[0] == ab[0]);
  CHECK(out[1] != ab[1]);
  CHECK(store.ref_count(out[1]) == 1);
  const auto qt = kv_tags(ns, q);
  for (std::size_t t = 0; t < 3; ++t) CHECK(store.tags(out[1])[t] == qt[4 + t]);
  store.release(out[0]);
  store.release(out[1]);

  // Another namespace sees nothing.
  CHECK(cache.peek_prefix_len(make_ns(1, 0, 1), a) == 0);
  CHECK(cache.peek_prefix_len(make_ns(1, 0, 0, 5), a) == 0);
  auto miss = cache.match(make_ns(2, 0, 0), a, out);
  CHECK(miss.tokens == 0);
  CHECK(miss.node.empty());
  CHECK(cache.stats().lookups == 2);
  CHECK(cache.stats().misses == 1);
  CHECK(cache.stats().partial_hits == 1);

  for (auto x : ab) store.release(x);
  for (auto x : bb) store.release(x);
  cache.clear();
  CHECK(store.blocks_in_use() == 0);
  CHECK(store.failure().empty());
}

TEST_CASE("radix_cache extends a partial leaf and falls back when the tail copy fails", "[kv][radix]") {
  constexpr std::size_t T = 4;
  ref_block_store store(64, T);
  kv::radix_cache<ref_block_store, T> cache(store);
  const auto ns = make_ns(1, 2, 3);
  const tokens_t a = {1, 2, 3, 4, 5, 6};
  const tokens_t b = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto ab = compute_blocks(store, ns, a, T);
  auto bb = compute_blocks(store, ns, b, T);
  REQUIRE(cache.insert(ns, a, ab).has_value());
  auto r = cache.insert(ns, b, bb);
  REQUIRE(r.has_value());
  CHECK(r->new_tokens == 5);
  CHECK(cache.peek_prefix_len(ns, b) == 9);
  REQUIRE(cache.check_invariants().has_value());

  std::uint32_t out[3];
  store.set_fail_copies(true);
  auto m = cache.match(ns, tokens_t{1, 2, 3, 4, 5, 6, 7, 0}, out);
  CHECK(m.tokens == 4);
  CHECK(m.blocks == 1);
  CHECK_FALSE(m.copied_tail);
  CHECK(cache.stats().tail_copy_failures == 1);
  store.release(out[0]);
  store.set_fail_copies(false);

  for (auto x : ab) store.release(x);
  for (auto x : bb) store.release(x);
  cache.clear();
  CHECK(store.blocks_in_use() == 0);
}

TEST_CASE("radix_cache evicts unlocked leaves only and keeps pinned prefixes", "[kv][radix]") {
  constexpr std::size_t T = 2;
  ref_block_store store(64, T);
  kv::radix_cache<ref_block_store, T> cache(store);
  const auto ns = make_ns(7, 0, 0);
  const tokens_t sys = {9, 9, 8, 8};
  std::vector<tokens_t> seqs = {{9, 9, 8, 8, 1, 1}, {9, 9, 8, 8, 2, 2}, {9, 9, 8, 8, 3, 3}};
  for (const auto& s : seqs) {
    auto bl = compute_blocks(store, ns, s, T);
    REQUIRE(cache.insert(ns, s, bl).has_value());
    for (auto x : bl) store.release(x);
  }
  auto pin = cache.pin(ns, sys);
  REQUIRE(pin.has_value());
  CHECK_FALSE(cache.pin(ns, tokens_t{9, 9, 7}).has_value());
  std::uint32_t out[4];
  auto m = cache.match(ns, seqs[0], out);  // touches leaf 0: leaf 1 is now the oldest
  REQUIRE(m.tokens == 6);
  cache.lock(m.node);
  for (std::size_t i = 0; i < m.blocks; ++i) store.release(out[i]);

  CHECK(cache.evict(1) == 1);  // leaf 1 (least recent, unlocked)
  CHECK(cache.peek_prefix_len(ns, seqs[1]) == 4);
  CHECK(cache.peek_prefix_len(ns, seqs[2]) == 6);
  CHECK(cache.evict(100) == 1);  // leaf 2; leaf 0 locked, the system prompt pinned and inner
  CHECK(cache.peek_prefix_len(ns, seqs[0]) == 6);
  REQUIRE(cache.check_invariants().has_value());
  cache.unlock(m.node);
  CHECK(cache.evict(100) == 1);  // leaf 0; the pinned prompt stays
  CHECK(cache.peek_prefix_len(ns, sys) == 4);
  cache.unpin(*pin);
  CHECK(cache.evict(100) == 2);
  CHECK(cache.stats().cached_blocks == 0);
  CHECK(cache.stats().namespaces == 0);
  REQUIRE(cache.check_invariants().has_value());
  CHECK(store.blocks_in_use() == 0);
  CHECK(store.failure().empty());
}

namespace {

struct running {
  kv::kv_namespace ns;
  tokens_t tokens;  // the locked path is cached for this many tokens
  std::vector<std::uint32_t> blocks;
  bool pinned = false;
};

ref_block_store make_store(ref_block_store*, std::size_t capacity, std::size_t T) { return {capacity, T}; }
kv::block_allocator make_store(kv::block_allocator*, std::size_t capacity, std::size_t T) {
  auto layout = kv::block_layout::make(1, 1, 16, T, ruvllm::kernels::kv_format_of<ruvllm::precision::f16>,
                                       ruvllm::kernels::kv_format_of<ruvllm::precision::f16>);
  REQUIRE(layout.has_value());
  auto a = kv::block_allocator::create(*layout, capacity);
  REQUIRE(a.has_value());
  return std::move(*a);
}

template <class Policy, std::size_t T, class Store = ref_block_store>
void run_radix_property(std::uint64_t stream, std::size_t trials, std::size_t steps) {
  using access = store_access<Store>;
  ruvllm::test::check_property(stream, trials, [&](ruvllm::test::rng& rng, std::size_t) {
    Store store = make_store(static_cast<Store*>(nullptr), 4096, T);
    using cache_t = kv::radix_cache<Store, T, Policy>;
    auto cache = std::make_unique<cache_t>(store, kv::radix_cache_options{.max_blocks = 24 + rng.uniform_index(0, 40)});
    // Namespaces: two models x (base, adapter 1) with a current version each, and a salted tenant.
    struct space {
      std::uint64_t model, adapter, version, salt;
    };
    std::vector<space> spaces = {{1, 0, 0, 0}, {1, 1, 0, 0}, {2, 1, 0, 0}, {1, 0, 0, 77}};
    const auto ns_of = [](const space& s) { return make_ns(s.model, s.adapter, s.version, s.salt); };
    // Reference model: what each namespace should cache (maximal sequences), and the retired ones.
    std::map<std::size_t, std::vector<tokens_t>> model;
    std::vector<kv::kv_namespace> retired;
    std::vector<running> held;                          // locked or pinned paths with the blocks the "sequence" holds
    std::vector<typename cache_t::node_ref> lock_refs;  // parallel to held
    std::uint64_t held_refs = 0;
    const std::size_t alphabet = 2 + rng.uniform_index(0, 3);  // small: many shared prefixes and splits

    const auto random_query = [&](std::size_t si) {
      tokens_t q;
      auto& seqs = model[si];
      if (!seqs.empty() && rng.chance(0.8)) {
        const auto& base = seqs[rng.uniform_index(0, seqs.size() - 1)];
        q.assign(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(rng.uniform_index(0, base.size())));
      }
      const std::size_t extra = rng.uniform_index(0, 3 * T);
      for (std::size_t i = 0; i < extra; ++i) q.push_back(static_cast<kv::token_id>(rng.uniform_index(0, alphabet)));
      return q;
    };

    for (std::size_t step = 0; step < steps; ++step) {
      const std::size_t si = rng.uniform_index(0, spaces.size() - 1);
      const kv::kv_namespace ns = ns_of(spaces[si]);
      const std::uint64_t evicted_before = cache->stats().evicted_tokens;
      const int op = static_cast<int>(rng.uniform_index(0, 99));
      INFO("step " << step << " op " << op);
      if (op < 35) {  // a sequence finishes prefill: insert it (sometimes keep it locked)
        tokens_t s = random_query(si);
        if (s.empty()) s.push_back(1);
        auto blocks = compute_blocks(store, ns, s, T);
        const bool lock = rng.chance(0.3);
        auto r = cache->insert(ns, s, blocks, lock);
        REQUIRE(r.has_value());
        model[si].push_back(s);
        if (lock) {  // the returned node (holding the last token) is locked: the sequence keeps running
          held.push_back({ns, s, blocks, false});
          held_refs += blocks.size();
          lock_refs.push_back(r->node);
        } else {
          for (auto b : blocks) store.release(b);
        }
      } else if (op < 65) {  // a request arrives: match (and maybe keep the prefix locked while it runs)
        const tokens_t q = random_query(si);
        const std::size_t expect = longest(leaves(*cache, ns), q);
        CHECK(cache->peek_prefix_len(ns, q) == expect);
        std::vector<std::uint32_t> out((q.size() + T - 1) / T + 1);
        auto m = cache->match(ns, q, out);
        REQUIRE(m.tokens == expect);
        REQUIRE(m.blocks == (expect + T - 1) / T);
        CHECK(m.shared_blocks == expect / T);
        const auto qt = kv_tags(ns, q);
        for (std::size_t b = 0; b < m.blocks; ++b)
          for (std::size_t t = 0; t < T && b * T + t < m.tokens; ++t)
            REQUIRE(access::get(store, out[b], t) == qt[b * T + t]);
        if (m.copied_tail) CHECK(store.ref_count(out[m.blocks - 1]) == 1);
        for (std::size_t b = 0; b < m.shared_blocks; ++b) CHECK(store.ref_count(out[b]) >= 2);
        if (m.tokens > 0 && rng.chance(0.3)) {
          cache->lock(m.node);
          held.push_back({ns, tokens_t(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(m.tokens)),
                          std::vector<std::uint32_t>(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(m.blocks)),
                          false});
          held_refs += m.blocks;
          lock_refs.push_back(m.node);
        } else {
          for (std::size_t b = 0; b < m.blocks; ++b) store.release(out[b]);
        }
      } else if (op < 75) {  // a sequence ends: unlock / unpin
        if (!held.empty()) {
          const std::size_t i = rng.uniform_index(0, held.size() - 1);
          if (held[i].pinned) {
            cache->unpin(lock_refs[i]);
          } else {
            cache->unlock(lock_refs[i]);
          }
          for (auto b : held[i].blocks) store.release(b);
          held_refs -= held[i].blocks.size();
          held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
          lock_refs.erase(lock_refs.begin() + static_cast<std::ptrdiff_t>(i));
        }
      } else if (op < 83) {  // pin a cached prefix (a system prompt)
        const auto ls = leaves(*cache, ns);
        if (!ls.empty()) {
          const auto& l = ls[rng.uniform_index(0, ls.size() - 1)];
          const tokens_t p(l.begin(), l.begin() + static_cast<std::ptrdiff_t>(rng.uniform_index(1, l.size())));
          auto pin = cache->pin(ns, p);
          REQUIRE(pin.has_value());
          held.push_back({ns, p, {}, true});
          lock_refs.push_back(*pin);
        }
        CHECK_FALSE(cache->pin(ns, tokens_t{1000, 1001}).has_value());
      } else if (op < 93) {  // memory pressure
        cache->evict(rng.uniform_index(0, 8));
      } else {  // adapter update: bump the version, retire the old namespace
        cache->retire(ns);
        retired.push_back(ns);
        model[si].clear();
        spaces[si].version += 1;
      }

      // ---- invariants after every step
      REQUIRE(access::failure(store).empty());
      auto inv = cache->check_invariants();
      if (!inv) FAIL(inv.error().describe());
      REQUIRE(access::total_refs(store) == cache->stats().cached_blocks + held_refs);
      const auto& st = cache->stats();
      CHECK(st.lookups == st.full_hits + st.partial_hits + st.misses);
      CHECK(st.cached_bytes == st.cached_blocks * store.block_bytes());
      if (op < 35 && st.cached_blocks > cache->max_blocks())
        CHECK(cache->eviction_queue().size() <= 1);  // after an insert only the newest entry may stay evictable
      for (std::size_t i = 0; i < held.size(); ++i) {
        // Locked and pinned paths stay cached, also in retired namespaces (where nothing matches).
        const bool is_retired = std::find(retired.begin(), retired.end(), held[i].ns) != retired.end();
        if (!is_retired) REQUIRE(cache->peek_prefix_len(held[i].ns, held[i].tokens) == held[i].tokens.size());
      }
      for (const auto& r : retired) {
        bool current = false;
        for (const auto& s : spaces) current = current || ns_of(s) == r;
        if (!current) REQUIRE(leaves(*cache, r).empty());
      }
      for (std::size_t s = 0; s < spaces.size(); ++s) {
        const auto ls = leaves(*cache, ns_of(spaces[s]));
        // No phantom content: every cached path is a prefix of something inserted in that namespace.
        for (const auto& l : ls) REQUIRE(is_prefix_of_some(l, model[s]));
        if (cache->stats().evicted_tokens == evicted_before) {
          // Nothing evicted in this step: everything inserted is still cached.
          for (const auto& m : model[s]) REQUIRE(cache->peek_prefix_len(ns_of(spaces[s]), m) == m.size());
        } else {
          model[s] = ls;  // eviction only removes: continue from what is cached
        }
      }
    }
    // Drain: every reference returns to zero.
    for (std::size_t i = 0; i < held.size(); ++i) {
      if (held[i].pinned) {
        cache->unpin(lock_refs[i]);
      } else {
        cache->unlock(lock_refs[i]);
      }
      for (auto b : held[i].blocks) store.release(b);
    }
    lock_refs.clear();
    CHECK(cache->stats().references == 0);
    REQUIRE(cache->check_invariants().has_value());
    cache->evict(1u << 30);
    CHECK(cache->stats().cached_blocks == 0);
    CHECK(cache->stats().nodes == 0);
    CHECK(store.blocks_in_use() == 0);
    CHECK(access::failure(store).empty());
    cache.reset();
    CHECK(access::total_refs(store) == 0);
  });
}

}  // namespace

TEMPLATE_TEST_CASE("radix_cache random operations match the reference model", "[kv][radix][property]", ev::lru, ev::lfu,
                   ev::hysteresis<ev::lru>) {
  run_radix_property<TestType, 4>(101, 6, 400);
  run_radix_property<TestType, 1>(102, 3, 300);
  run_radix_property<TestType, 16>(103, 3, 300);
}

TEST_CASE("radix_cache over kv::block_allocator", "[kv][radix][property]") {
  run_radix_property<ev::lru, 16, kv::block_allocator>(104, 3, 300);
  run_radix_property<ev::lru, 4, kv::block_allocator>(105, 3, 300);
}

TEST_CASE("radix_cache long random operation sequences", "[kv][radix][property][slow]") {
  run_radix_property<ev::lru, 4>(201, 20, 3000);
  run_radix_property<ev::lfu, 8>(202, 10, 3000);
}

TEST_CASE("radix_cache peek_prefix_len from two threads", "[kv][radix][threads]") {
  // Contract: const members may run concurrently while no mutating call runs.
  constexpr std::size_t T = 8;
  ref_block_store store(8192, T);
  kv::radix_cache<ref_block_store, T> cache(store);
  const auto ns = make_ns(3, 1, 4);
  ruvllm::test::rng rng(301);
  std::vector<tokens_t> seqs;
  for (int i = 0; i < 200; ++i) {
    tokens_t s;
    if (!seqs.empty() && rng.chance(0.7)) {
      const auto& b = seqs[rng.uniform_index(0, seqs.size() - 1)];
      s.assign(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(rng.uniform_index(0, b.size())));
    }
    for (std::size_t k = rng.uniform_index(1, 40); k > 0; --k)
      s.push_back(static_cast<kv::token_id>(rng.uniform_index(0, 3)));
    auto blocks = compute_blocks(store, ns, s, T);
    REQUIRE(cache.insert(ns, s, blocks).has_value());
    for (auto b : blocks) store.release(b);
    seqs.push_back(s);
  }
  std::vector<tokens_t> queries;
  std::vector<std::size_t> expected;
  for (int i = 0; i < 400; ++i) {
    tokens_t q = seqs[rng.uniform_index(0, seqs.size() - 1)];
    q.resize(rng.uniform_index(0, q.size()));
    q.push_back(static_cast<kv::token_id>(rng.uniform_index(0, 4)));
    expected.push_back(longest(seqs, q));
    queries.push_back(std::move(q));
  }
  const auto& shared = cache;
  std::vector<std::size_t> got[2];
  std::thread workers[2];
  for (int w = 0; w < 2; ++w)
    workers[w] = std::thread([&, w] {
      for (int round = 0; round < 20; ++round)
        for (const auto& q : queries) got[w].push_back(shared.peek_prefix_len(ns, q));
    });
  for (auto& t : workers) t.join();
  for (int w = 0; w < 2; ++w) {
    REQUIRE(got[w].size() == 20 * queries.size());
    for (std::size_t i = 0; i < got[w].size(); ++i) REQUIRE(got[w][i] == expected[i % queries.size()]);
  }
}

}  // namespace radix_cache_test
