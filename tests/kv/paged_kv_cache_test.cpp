// kv::paged_kv_cache: appends read back, copy-on-write forks, bad input as
// errors, plans that fail without side effects, a seeded property test of
// random add/fork/append/truncate/free against plain token vectors, and
// decode attention over the cache against naive attention.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "ruvllm/kernels/ops.hpp"
#include "ruvllm/kv/paged_kv_cache.hpp"
#include "support/property.hpp"

namespace paged_kv_cache_test {

namespace {

namespace kv = ruvllm::kv;
namespace k = ruvllm::kernels;
namespace p = ruvllm::precision;
using ruvllm::errc;

using small_cfg = kv::kv_config<2, 2, 32, p::f16, p::f16, 4>;  // 4 tokens per block: many block boundaries
using cache_t = kv::paged_kv_cache<small_cfg>;
constexpr std::size_t row = cache_t::row_floats;

// A token's K and V rows for every layer, rounded to f16 so f16 storage is exact.
struct token_rows {
  std::vector<float> k, v;  // [layer][kv_head][dim]
};

token_rows random_token(ruvllm::test::rng& gen, std::size_t layers = small_cfg::layers) {
  token_rows t;
  t.k.resize(layers * row);
  t.v.resize(layers * row);
  for (auto& x : t.k) x = ruvllm::to_float(ruvllm::to_f16(gen.normal()));
  for (auto& x : t.v) x = ruvllm::to_float(ruvllm::to_f16(gen.normal()));
  return t;
}

// Plans one step and appends every entry's tokens in every layer.
template <class Cache>
ruvllm::result<void> step(Cache& cache, kv::step_workspace& ws, const std::vector<kv::step_entry>& batch,
                          const std::vector<std::vector<token_rows>>& tokens) {
  RUVLLM_TRY(cache.plan(batch, ws));
  const std::size_t r = cache.row_size();
  std::vector<float> kk, vv;
  for (std::size_t layer = 0; layer < cache.num_layers(); ++layer)
    for (std::size_t i = 0; i < batch.size(); ++i) {
      kk.clear();
      vv.clear();
      for (const token_rows& t : tokens[i]) {
        kk.insert(kk.end(), t.k.begin() + static_cast<std::ptrdiff_t>(layer * r),
                  t.k.begin() + static_cast<std::ptrdiff_t>((layer + 1) * r));
        vv.insert(vv.end(), t.v.begin() + static_cast<std::ptrdiff_t>(layer * r),
                  t.v.begin() + static_cast<std::ptrdiff_t>((layer + 1) * r));
      }
      RUVLLM_TRY(cache.append(ws, layer, i, kk, vv));
    }
  return {};
}

// Whether every token of s reads back exactly as the model has it.
template <class Cache>
bool matches(const Cache& cache, kv::seq_id s, const std::vector<token_rows>& want) {
  if (cache.length(s).value() != want.size()) return false;
  std::vector<float> kk(row), vv(row);
  for (std::size_t layer = 0; layer < small_cfg::layers; ++layer)
    for (std::size_t pos = 0; pos < want.size(); ++pos) {
      if (!cache.read(s, layer, pos, kk, vv).has_value()) return false;
      for (std::size_t i = 0; i < row; ++i)
        if (kk[i] != want[pos].k[layer * row + i] || vv[i] != want[pos].v[layer * row + i]) return false;
    }
  return true;
}

}  // namespace

TEST_CASE("paged_kv_cache appends read back exactly and the CSR table follows the blocks", "[kv][paged]") {
  ruvllm::test::rng gen(901);
  auto blocks = kv::block_allocator::create(cache_t::layout().value(), 64).value();
  auto cache = cache_t::create(blocks, {8, 64}).value();
  auto ws = cache.make_workspace(4);
  const auto a = cache.add_sequence().value();
  const auto b = cache.add_sequence().value();
  std::vector<token_rows> ta, tb;
  for (int i = 0; i < 7; ++i) ta.push_back(random_token(gen));
  for (int i = 0; i < 3; ++i) tb.push_back(random_token(gen));
  REQUIRE(step(cache, ws, {{a, 7}, {b, 3}}, {ta, tb}).has_value());
  CHECK(matches(cache, a, ta));
  CHECK(matches(cache, b, tb));
  CHECK(ws.batch == 2);
  CHECK(ws.page_indptr[0] == 0);
  CHECK(ws.page_indptr[1] == 2);
  CHECK(ws.page_indptr[2] == 3);
  CHECK(ws.last_page_len[0] == 3);
  CHECK(ws.last_page_len[1] == 3);
  CHECK(blocks.blocks_in_use() == 3);
  const auto view = cache.view(ws, 1).value();
  CHECK(view.seq_len(0) == 7);
  CHECK(view.seq_len(1) == 3);
  CHECK(view.k_pages == blocks.k_slab(1));
  // One decode token each.
  ta.push_back(random_token(gen));
  tb.push_back(random_token(gen));
  REQUIRE(step(cache, ws, {{a, 1}, {b, 1}}, {{ta.back()}, {tb.back()}}).has_value());
  CHECK(matches(cache, a, ta));
  CHECK(matches(cache, b, tb));
  CHECK(ws.last_page_len[0] == 4);
  CHECK(cache.block_table(a).value().size() == 2);
  REQUIRE(cache.free_sequence(a).has_value());
  REQUIRE(cache.free_sequence(b).has_value());
  CHECK(blocks.blocks_in_use() == 0);
}

TEST_CASE("fork shares blocks and copies the partial last block on write", "[kv][paged]") {
  ruvllm::test::rng gen(902);
  auto blocks = kv::block_allocator::create(cache_t::layout().value(), 64).value();
  auto cache = cache_t::create(blocks, {8, 64}).value();
  auto ws = cache.make_workspace(4);
  const auto parent = cache.add_sequence().value();
  std::vector<token_rows> tp;
  for (int i = 0; i < 6; ++i) tp.push_back(random_token(gen));
  REQUIRE(step(cache, ws, {{parent, 6}}, {tp}).has_value());
  const auto child = cache.fork(parent).value();
  const auto pt = cache.block_table(parent).value();
  const auto ct = cache.block_table(child).value();
  REQUIRE(ct.size() == 2);
  CHECK(std::vector<std::uint32_t>(pt.begin(), pt.end()) == std::vector<std::uint32_t>(ct.begin(), ct.end()));
  CHECK(blocks.ref_count(pt[0]) == 2);
  CHECK(blocks.ref_count(pt[1]) == 2);
  CHECK(blocks.blocks_in_use() == 2);

  std::vector<token_rows> tc = tp;
  const token_rows np = random_token(gen), nc = random_token(gen);
  tp.push_back(np);
  tc.push_back(nc);
  REQUIRE(step(cache, ws, {{parent, 1}, {child, 1}}, {{np}, {nc}}).has_value());
  CHECK(matches(cache, parent, tp));
  CHECK(matches(cache, child, tc));
  const auto pt2 = cache.block_table(parent).value();
  const auto ct2 = cache.block_table(child).value();
  CHECK(pt2[0] == ct2[0]);  // the full block stays shared
  CHECK(pt2[1] != ct2[1]);  // the partial one was copied
  CHECK(blocks.ref_count(pt2[0]) == 2);
  CHECK(blocks.ref_count(pt2[1]) == 1);
  CHECK(blocks.ref_count(ct2[1]) == 1);
  CHECK(blocks.blocks_in_use() == 3);

  // Ending the parent leaves the child intact.
  REQUIRE(cache.free_sequence(parent).has_value());
  CHECK(matches(cache, child, tc));
  CHECK(blocks.ref_count(ct2[0]) == 1);
  // Adopting a prefix (as a radix cache hit does) shares its blocks.
  const auto adopted = cache.add_sequence(cache.block_table(child).value(), 7).value();
  CHECK(matches(cache, adopted, tc));
  CHECK(blocks.ref_count(ct2[0]) == 2);
  // Truncation releases blocks past the new end, then appends copy-on-write.
  REQUIRE(cache.truncate(adopted, 3).has_value());
  CHECK(cache.block_table(adopted).value().size() == 1);
  CHECK(blocks.ref_count(ct2[1]) == 1);
  std::vector<token_rows> ta(tc.begin(), tc.begin() + 3);
  ta.push_back(random_token(gen));
  REQUIRE(step(cache, ws, {{adopted, 1}}, {{ta.back()}}).has_value());
  CHECK(matches(cache, adopted, ta));
  CHECK(matches(cache, child, tc));
}

TEST_CASE("paged_kv_cache reports bad input as errors and failed plans change nothing", "[kv][paged]") {
  ruvllm::test::rng gen(903);
  auto blocks = kv::block_allocator::create(cache_t::layout().value(), 5).value();
  auto cache = cache_t::create(blocks, {3, 32}).value();
  auto ws = cache.make_workspace(2);
  const auto a = cache.add_sequence().value();
  const auto b = cache.add_sequence().value();
  std::vector<float> kk(row), vv(row);

  CHECK(cache.length(a + 2).error().code() == errc::not_found);  // slot 2 was never used
  CHECK(cache.length(0xFFFF'FFFF'0000'0005ull).error().code() == errc::not_found);
  CHECK(cache.read(a, 0, 0, kk, vv).error().code() == errc::out_of_range);  // empty sequence
  CHECK(cache.fork(a ^ (1ull << 40)).error().code() == errc::not_found);
  CHECK(cache.plan(std::vector<kv::step_entry>{{a, 1}, {a, 1}}, ws).error().code() == errc::invalid_argument);
  CHECK(cache.plan(std::vector<kv::step_entry>{{a, 1}, {b, 1}, {b, 1}}, ws).error().code() == errc::invalid_argument);
  CHECK(cache.plan(std::vector<kv::step_entry>{{a, 33}}, ws).error().code() == errc::out_of_range);
  CHECK(cache.view(ws, 0).error().code() == errc::invalid_argument);  // no successful plan
  CHECK(blocks.blocks_in_use() == 0);

  std::vector<token_rows> ta{random_token(gen), random_token(gen), random_token(gen)};
  REQUIRE(step(cache, ws, {{a, 3}}, {ta}).has_value());
  CHECK(cache.read(a, 0, 3, kk, vv).error().code() == errc::out_of_range);
  CHECK(cache.read(a, 2, 0, kk, vv).error().code() == errc::out_of_range);
  CHECK(cache.read(a, 0, 0, std::span<float>(kk).first(3), vv).error().code() == errc::invalid_argument);
  CHECK(cache.append(ws, 0, 1, kk, vv).error().code() == errc::out_of_range);
  CHECK(cache.append(ws, 0, 0, kk, vv).error().code() == errc::invalid_argument);  // 3 tokens need 3 rows
  CHECK(cache.view(ws, 2).error().code() == errc::out_of_range);
  CHECK(cache.truncate(a, 4).error().code() == errc::out_of_range);

  // 1 of 5 blocks is held: b (16 tokens) takes the other 4, a's 5 more tokens
  // need one beyond: the plan fails as a whole and leaves no trace.
  const std::size_t in_use = blocks.blocks_in_use();
  const auto failed = cache.plan(std::vector<kv::step_entry>{{b, 16}, {a, 5}}, ws);
  REQUIRE_FALSE(failed.has_value());
  CHECK(failed.error().code() == errc::out_of_memory);
  CHECK(blocks.blocks_in_use() == in_use);
  CHECK(cache.length(a).value() == 3);
  CHECK(cache.length(b).value() == 0);
  CHECK(matches(cache, a, ta));
  CHECK(cache.append(ws, 0, 0, kk, vv).error().code() == errc::invalid_argument);  // stale workspace

  // A failed copy-on-write rolls back too.
  const auto c = cache.fork(a).value();
  REQUIRE(cache.plan(std::vector<kv::step_entry>{{b, 16}}, ws).has_value());  // all 4 free blocks
  CHECK(blocks.blocks_in_use() == 5);
  const auto cow = cache.plan(std::vector<kv::step_entry>{{c, 1}}, ws);
  REQUIRE_FALSE(cow.has_value());
  CHECK(cache.length(c).value() == 3);
  CHECK(cache.block_table(c).value()[0] == cache.block_table(a).value()[0]);
  CHECK(blocks.ref_count(cache.block_table(a).value()[0]) == 2);
  CHECK(cache.add_sequence().error().code() == errc::out_of_memory);  // 3 slots live

  // Stale ids after free.
  REQUIRE(cache.free_sequence(c).has_value());
  CHECK(cache.free_sequence(c).error().code() == errc::not_found);
  CHECK(cache.plan(std::vector<kv::step_entry>{{c, 1}}, ws).error().code() == errc::not_found);
  // A workspace planned by another cache is refused.
  auto blocks2 = kv::block_allocator::create(cache_t::layout().value(), 4).value();
  auto cache2 = cache_t::create(blocks2, {2, 16}).value();
  auto ws2 = cache2.make_workspace(1);
  const auto d = cache2.add_sequence().value();
  REQUIRE(cache2.plan(std::vector<kv::step_entry>{{d, 1}}, ws2).has_value());
  CHECK(cache.view(ws2, 0).error().code() == errc::invalid_argument);
  CHECK(cache.append(ws2, 0, 0, kk, vv).error().code() == errc::invalid_argument);
  CHECK(cache2.append(ws2, 0, 0, kk, vv).has_value());
  // Layout mismatch.
  auto other = kv::block_allocator::create(kv::block_layout::of<p::f16, p::q8_0, 4>(2, 2, 32).value(), 4).value();
  CHECK(cache_t::create(other).error().code() == errc::invalid_argument);
}

namespace {

// Counts every block reference held by the model's sequences and checks the
// allocator agrees: nothing freed while referenced, nothing leaked.
template <class Cache>
void check_refcounts(const Cache& cache, const kv::block_allocator& blocks,
                     const std::map<kv::seq_id, std::vector<token_rows>>& model) {
  std::map<std::uint32_t, std::uint32_t> refs;
  for (const auto& [s, toks] : model) {
    const std::span<const std::uint32_t> table = cache.block_table(s).value();
    for (const std::uint32_t b : table) ++refs[b];
  }
  REQUIRE(blocks.blocks_in_use() == refs.size());
  REQUIRE(blocks.blocks_in_use() <= blocks.capacity_blocks());
  for (const auto& [b, n] : refs) REQUIRE(blocks.ref_count(b) == n);
}

}  // namespace

namespace {
// The shape of small_cfg with the dimensions given at run time.
using runtime_cfg = kv::runtime_kv_config<p::f16, p::f16, 4>;
using runtime_cache_t = kv::paged_kv_cache<runtime_cfg>;

template <class Cache>
kv::block_layout layout_of() {
  if constexpr (Cache::runtime_shape) {
    return Cache::layout(small_cfg::layers, small_cfg::kv_heads, small_cfg::head_dim).value();
  } else {
    return Cache::layout().value();
  }
}

template <class Cache>
void random_operations(std::uint64_t seed) {
  ruvllm::test::check_property(seed, 8, [](ruvllm::test::rng& gen, std::size_t) {
    using cache_t = Cache;
    const std::size_t capacity = gen.uniform_index(6, 40);
    auto blocks = kv::block_allocator::create(layout_of<Cache>(), capacity).value();
    std::map<kv::seq_id, std::vector<token_rows>> model;
    {
      auto cache = cache_t::create(blocks, {12, 48}).value();
      auto ws = cache.make_workspace(6);
      for (int stepno = 0; stepno < 300; ++stepno) {
        const std::size_t op = gen.uniform_index(0, 9);
        auto pick = [&]() {
          return std::next(model.begin(), static_cast<std::ptrdiff_t>(gen.uniform_index(0, model.size() - 1)));
        };
        if (op <= 1) {
          const auto s = cache.add_sequence();
          if (s.has_value())
            model[*s] = {};
          else
            REQUIRE(model.size() == 12);
        } else if (op == 2 && !model.empty()) {
          const auto parent = pick();
          const auto s = cache.fork(parent->first);
          if (s.has_value()) model[*s] = parent->second;
        } else if (op <= 6 && !model.empty()) {
          std::vector<kv::step_entry> batch;
          std::vector<std::vector<token_rows>> toks;
          std::set<kv::seq_id> chosen;
          const std::size_t n = gen.uniform_index(1, std::min<std::size_t>(6, model.size()));
          for (std::size_t i = 0; i < n; ++i) {
            const auto it = pick();
            if (!chosen.insert(it->first).second) continue;
            const auto new_tokens = static_cast<std::uint32_t>(gen.chance(0.7) ? 1 : gen.uniform_index(0, 9));
            batch.push_back({it->first, new_tokens});
            toks.emplace_back();
            for (std::uint32_t t = 0; t < new_tokens; ++t) toks.back().push_back(random_token(gen));
          }
          const std::size_t in_use = blocks.blocks_in_use();
          const auto r = step(cache, ws, batch, toks);
          if (r.has_value()) {
            for (std::size_t i = 0; i < batch.size(); ++i)
              model[batch[i].seq].insert(model[batch[i].seq].end(), toks[i].begin(), toks[i].end());
          } else {
            // Blocks exhausted or a length past max_tokens_per_sequence.
            REQUIRE((r.error().code() == errc::out_of_memory || r.error().code() == errc::out_of_range));
            REQUIRE(blocks.blocks_in_use() == in_use);
          }
        } else if (op == 7 && !model.empty()) {
          const auto it = pick();
          const std::size_t to = gen.uniform_index(0, it->second.size());
          REQUIRE(cache.truncate(it->first, to).has_value());
          it->second.resize(to);
        } else if (op >= 8 && !model.empty()) {
          const auto it = pick();
          REQUIRE(cache.free_sequence(it->first).has_value());
          model.erase(it);
        }
        check_refcounts(cache, blocks, model);
        for (const auto& [s, toks] : model) REQUIRE(matches(cache, s, toks));
      }
    }
    // The cache's destructor released every sequence.
    REQUIRE(blocks.blocks_in_use() == 0);
    for (std::uint32_t b = 0; b < capacity; ++b) REQUIRE(blocks.ref_count(b) == 0);
  });
}
}  // namespace

TEST_CASE("paged_kv_cache property: random add/fork/append/truncate/free against token vectors",
          "[kv][paged][property]") {
  random_operations<cache_t>(910);
}

TEST_CASE("a runtime-shaped paged_kv_cache takes its shape from the allocator and behaves as the static one",
          "[kv][paged][property]") {
  auto blocks = kv::block_allocator::create(layout_of<runtime_cache_t>(), 8).value();
  auto cache = runtime_cache_t::create(blocks).value();
  CHECK(cache.num_layers() == small_cfg::layers);
  CHECK(cache.num_kv_heads() == small_cfg::kv_heads);
  CHECK(cache.head_size() == small_cfg::head_dim);
  CHECK(cache.row_size() == cache_t::row_floats);
  // The same layout as the static Config's, so blocks are interchangeable.
  const kv::block_layout a = layout_of<runtime_cache_t>(), b = layout_of<cache_t>();
  CHECK((a.layers == b.layers && a.kv_heads == b.kv_heads && a.head_dim == b.head_dim &&
         a.tokens_per_block == b.tokens_per_block && a.k_format == b.k_format && a.v_format == b.v_format));
  // Formats or tokens per block that differ from the Config's are refused.
  auto other = kv::block_allocator::create(
                   kv::paged_kv_cache<kv::runtime_kv_config<p::q8_0, p::f16, 4>>::layout(2, 2, 32).value(), 4)
                   .value();
  CHECK_FALSE(runtime_cache_t::create(other).has_value());
  auto wider = kv::block_allocator::create(
                   kv::paged_kv_cache<kv::runtime_kv_config<p::f16, p::f16, 8>>::layout(2, 2, 32).value(), 4)
                   .value();
  CHECK_FALSE(runtime_cache_t::create(wider).has_value());
  // Bad dimensions are refused when the layout is made.
  CHECK_FALSE(runtime_cache_t::layout(0, 2, 32).has_value());
  CHECK_FALSE(runtime_cache_t::layout(2, 2, 33).has_value());
  // And it passes the static cache's property test.
  random_operations<runtime_cache_t>(911);
}

}  // namespace paged_kv_cache_test
