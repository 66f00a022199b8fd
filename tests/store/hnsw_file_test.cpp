// The hnsw file format: round trips through save/load/open_view, refusal of
// mutations on views, and hostile files (every truncation length class and
// byte flips at many offsets) that must give an error naming the file and
// offset, or a clean open whose searches stay in bounds; run under ASan.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ruvllm/store/hnsw_index.hpp"
#include "store/store_test_support.hpp"
#include "support/rng.hpp"

namespace hnsw_file_test {

namespace {

namespace st = ruvllm::store;
namespace p = ruvllm::precision;
using st_support::random_vectors;

std::string temp_dir(const char* name) {
  auto dir = std::filesystem::temp_directory_path() / ("ruvllm_store_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}
void write_file(const std::string& path, const std::vector<char>& bytes, std::size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(n));
}

template <class Index>
Index build(std::size_t n, std::size_t dim, bool originals, std::uint64_t seed, bool half_originals = false) {
  auto index = Index::create(st::hnsw_options{.dimension = static_cast<std::uint32_t>(dim),
                                              .m = 8,
                                              .ef_construction = 64,
                                              .keep_originals = originals,
                                              .half_originals = half_originals})
                   .value();
  auto data = random_vectors(n, dim, seed);
  for (std::size_t i = 0; i < n; ++i)
    REQUIRE(index.insert(i * 7 + 1, std::span<const float>(data.data() + i * dim, dim)));
  for (std::size_t i = 0; i < n; i += 5) REQUIRE(index.remove(i * 7 + 1));
  return index;
}

}  // namespace

TEMPLATE_TEST_CASE("hnsw save, load and open_view agree with the original", "[store][hnsw][file]",
                   (st::hnsw_index<st::metric::l2, p::f32>), (st::hnsw_index<st::metric::cosine, p::f16>),
                   (st::hnsw_index<st::metric::dot, st::i8>)) {
  const auto dir = temp_dir("roundtrip");
  const std::string path = dir + "/index.hnsw";
  constexpr std::size_t dim = 16;
  // i8 keeps f32 originals, f16 keeps f16 ones (half_originals).
  constexpr bool f32_codes = std::is_same_v<typename TestType::precision_type, p::f32>;
  constexpr bool f16_codes = std::is_same_v<typename TestType::precision_type, p::f16>;
  auto index = build<TestType>(600, dim, !f32_codes, 51, f16_codes);
  REQUIRE(index.save(path, 42));
  CHECK(!std::filesystem::exists(path + ".tmp"));
  auto view = TestType::open_view(path);
  REQUIRE(view);
  auto loaded = TestType::load(path);
  REQUIRE(loaded);
  CHECK(view->read_only());
  CHECK(view->sequence() == 42);
  CHECK(loaded->sequence() == 42);
  CHECK(view->size() == index.size());
  CHECK(loaded->size() == index.size());
  REQUIRE(view->verify());
  REQUIRE(loaded->check_invariants());
  auto queries = random_vectors(20, dim, 52);
  for (std::size_t q = 0; q < 20; ++q) {
    std::span<const float> query(queries.data() + q * dim, dim);
    auto a = index.search(query, 10).value();
    auto b = view->search(query, 10).value();
    auto c = loaded->search(query, 10).value();
    CHECK(a == b);
    CHECK(a == c);
  }
  const float v[dim] = {};
  CHECK(view->insert(999999, v).error().code() == ruvllm::errc::unsupported);
  CHECK(view->remove(8).error().code() == ruvllm::errc::unsupported);
  CHECK(view->contains(8));
  CHECK(!view->contains(1));
  // The loaded index is writable and keeps working.
  REQUIRE(loaded->insert(999999, v));
  REQUIRE(loaded->remove(8));
  REQUIRE(loaded->check_invariants());
  // An empty index round-trips too.
  auto empty = TestType::create(st::hnsw_options{.dimension = dim}).value();
  REQUIRE(empty.save(path));
  auto empty_view = TestType::open_view(path);
  REQUIRE(empty_view);
  CHECK(empty_view->size() == 0);
  CHECK(empty_view->search(std::span<const float>(v, dim), 3)->empty());
  // A view of another type is refused by the header check.
  REQUIRE(index.save(path));
  CHECK(st::hnsw_index<st::metric::l2, p::f16>::open_view(path).error().code() == ruvllm::errc::unsupported);
  std::filesystem::remove_all(dir);
}

TEST_CASE("hnsw files: truncations and byte flips fail cleanly or open safely", "[store][hnsw][file]") {
  using index_t = st::hnsw_index<st::metric::l2, p::f32>;
  const auto dir = temp_dir("corrupt");
  const std::string good = dir + "/good.hnsw", bad = dir + "/bad.hnsw";
  constexpr std::size_t dim = 8;
  auto index = build<index_t>(200, dim, true, 61);
  REQUIRE(index.save(good));
  const auto bytes = read_file(good);
  auto queries = random_vectors(4, dim, 62);
  const auto exercise = [&](const std::string& path) {
    auto view = index_t::open_view(path);
    if (!view) {
      CHECK(view.error().file() == path);
      CHECK(view.error().has_offset());
      return std::pair{false, false};
    }
    for (std::size_t q = 0; q < 4; ++q) (void)view->search(std::span<const float>(queries.data() + q * dim, dim), 5);
    const bool verified = static_cast<bool>(view->verify());
    auto loaded = index_t::load(path);
    if (!loaded) {
      CHECK(loaded.error().file() == path);
      CHECK(loaded.error().has_offset());
    } else {
      CHECK(loaded->check_invariants());
    }
    return std::pair{true, verified};
  };
  // Truncations: every length in the header and table, then a stride.
  for (std::size_t n = 0; n < bytes.size(); n += (n < 512 ? 1 : 97)) {
    write_file(bad, bytes, n);
    auto view = index_t::open_view(bad);
    REQUIRE(!view);
    CHECK(view.error().file() == bad);
    CHECK(view.error().has_offset());
    CHECK(!index_t::load(bad));
  }
  // Byte flips: every byte of the header and table, then a stride through
  // the data. A flip in the data either fails verify() or lands in padding.
  ruvllm::test::rng gen(63);
  std::size_t opened = 0, detected = 0;
  for (std::size_t at = 0; at < bytes.size(); at += (at < 512 ? 1 : 41)) {
    auto copy = bytes;
    copy[at] = static_cast<char>(copy[at] ^ static_cast<char>(1u << gen.uniform_index(0, 7)));
    write_file(bad, copy, copy.size());
    auto [ok, verified] = exercise(bad);
    opened += ok;
    detected += ok && !verified;
  }
  INFO("opened " << opened << ", verify() caught " << detected);
  CHECK(detected > 0);
  // Random multi-byte garbage in the data sections.
  for (int trial = 0; trial < 60; ++trial) {
    auto copy = bytes;
    for (int k = 0; k < 16; ++k)
      copy[gen.uniform_index(512, copy.size() - 1)] = static_cast<char>(gen.uniform_index(0, 255));
    write_file(bad, copy, copy.size());
    (void)exercise(bad);
  }
  std::filesystem::remove_all(dir);
}

namespace {

// The offsets that matter in a file: every section boundary (start, second
// byte, middle, last byte, end) and the header and table boundaries.
std::vector<std::size_t> boundaries(const std::vector<char>& bytes) {
  const auto span = std::as_bytes(std::span<const char>(bytes.data(), bytes.size()));
  auto layout = st::read_hnsw_layout(span, "good");
  REQUIRE(layout);
  std::vector<std::size_t> at = {0, 1, 8, 12, 64, 104, 124, 127, 128, 129};
  for (std::uint32_t i = 0; i <= layout->section_count; ++i) at.push_back(128 + 32 * std::size_t{i});
  for (std::uint32_t i = 0; i < layout->section_count; ++i) {
    const auto& e = layout->sections[i];
    for (const std::uint64_t o : {e.offset, e.offset + 1, e.offset + e.bytes / 2, e.offset + e.bytes - 1,
                                  e.offset + e.bytes, e.offset + e.bytes + 1, e.offset - 1})
      at.push_back(static_cast<std::size_t>(o));
  }
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  while (!at.empty() && at.back() >= bytes.size()) at.pop_back();
  return at;
}

}  // namespace

TEMPLATE_TEST_CASE("hnsw files: every section boundary, truncated or flipped, is an error naming file and offset",
                   "[store][hnsw][file]", (st::hnsw_index<st::metric::l2, p::f32>),
                   (st::hnsw_index<st::metric::cosine, st::i8>)) {
  const auto dir = temp_dir("boundaries");
  const std::string good = dir + "/good.hnsw", bad = dir + "/bad.hnsw";
  constexpr std::size_t dim = 6;
  auto index = build<TestType>(150, dim, std::is_same_v<typename TestType::precision_type, st::i8>, 71);
  REQUIRE(index.save(good));
  const auto bytes = read_file(good);
  auto queries = random_vectors(3, dim, 72);
  const auto named = [&](const ruvllm::error& e) {
    CHECK(e.file() == bad);
    CHECK(e.has_offset());
    CHECK(e.offset() <= bytes.size());
  };
  for (const std::size_t at : boundaries(bytes)) {
    INFO("offset " << at << " of " << bytes.size());
    // Truncated there: the O(1) open already sees the length mismatch.
    write_file(bad, bytes, at);
    auto view = TestType::open_view(bad);
    REQUIRE(!view);
    named(view.error());
    auto loaded = TestType::load(bad);
    REQUIRE(!loaded);
    named(loaded.error());
    // One bit flipped there: load() and verify() refuse it, and a view that
    // opens anyway answers searches without leaving the mapping (ASan).
    for (const unsigned bit : {0u, 7u}) {
      auto copy = bytes;
      copy[at] = static_cast<char>(copy[at] ^ static_cast<char>(1u << bit));
      write_file(bad, copy, copy.size());
      auto flipped = TestType::load(bad);
      REQUIRE(!flipped);
      named(flipped.error());
      if (auto v = TestType::open_view(bad)) {
        for (std::size_t q = 0; q < 3; ++q) {
          std::span<const float> query(queries.data() + q * dim, dim);
          (void)v->search(query, 5);
          (void)v->search(query, 5, {}, [](std::uint64_t key) { return key % 3 == 0; });
          (void)v->contains(8);
        }
        auto verified = v->verify();
        REQUIRE(!verified);
        named(verified.error());
      } else {
        named(v.error());
      }
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("hnsw views find every key by binary search and no absent one", "[store][hnsw][file]") {
  using index_t = st::hnsw_index<st::metric::l2, p::f32>;
  const auto dir = temp_dir("keys");
  const std::string path = dir + "/index.hnsw";
  auto index = build<index_t>(500, 4, false, 81);  // keys i * 7 + 1, every fifth removed
  // Keys out of slot order: reinserted removed keys land in reused slots.
  for (std::size_t i = 0; i < 500; i += 10) REQUIRE(index.insert(1'000'000 - i, std::vector<float>(4, 0.1f * i)));
  REQUIRE(index.save(path));
  auto view = index_t::open_view(path).value();
  REQUIRE(view.verify());
  std::size_t found = 0;
  for (std::uint64_t key = 0; key < 3600; ++key) {
    CHECK(view.contains(key) == index.contains(key));
    found += view.contains(key);
  }
  for (std::size_t i = 0; i < 500; i += 10) CHECK(view.contains(1'000'000 - i));
  CHECK(found + 50 == index.size());
  CHECK(!view.contains(~std::uint64_t{0}));
  std::vector<float> v(4);
  REQUIRE(view.get_vector(8, v));
  CHECK(view.get_vector(1, v).error().code() == ruvllm::errc::not_found);
  std::filesystem::remove_all(dir);
}

TEST_CASE("hnsw files of another format version are refused by name", "[store][hnsw][file]") {
  using index_t = st::hnsw_index<st::metric::l2, p::f32>;
  const auto dir = temp_dir("version");
  const std::string path = dir + "/index.hnsw";
  REQUIRE(build<index_t>(50, 4, false, 91).save(path));
  auto bytes = read_file(path);
  for (const std::uint32_t version : {1u, 3u}) {
    std::memcpy(bytes.data() + 8, &version, 4);
    write_file(path, bytes, bytes.size());
    auto view = index_t::open_view(path);
    REQUIRE(!view);
    CHECK(view.error().code() == ruvllm::errc::unsupported);
    CHECK(view.error().offset() == 8);
    CHECK(view.error().message().find("version " + std::to_string(version)) != std::string::npos);
    CHECK(!index_t::load(path));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace hnsw_file_test
