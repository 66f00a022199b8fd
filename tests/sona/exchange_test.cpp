// The SONA exchange file: a trained router and pattern bank survive export
// and import bit for bit (same routing decisions on a fresh node); every
// flipped byte and every truncation is an error naming the file and offset;
// files with valid checksums but hostile contents (huge counts, NaN weights,
// out-of-range models) are rejected before anything is allocated for them;
// a failed import leaves the caller's learned state as it was.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ruvllm/core/checksum.hpp"
#include "ruvllm/sona/exchange.hpp"
#include "sona/routing_task.hpp"

namespace exchange_test {

namespace {

namespace sona = ruvllm::sona;
using bank_t = sona::reasoning_bank<>;

struct trained {
  sona::fastgrnn_router<float> router;
  bank_t bank;
  ruvllm::test::routing_task task;
};

// A router trained on the routing task, sparsified and anchored for EWC++,
// and a bank consolidated from the same traffic: every part of the state is
// nonzero.
trained make_trained(std::size_t hidden = 16, std::size_t dim = 32, std::size_t trajectories = 400) {
  std::mt19937_64 gen(11);
  auto task = ruvllm::test::routing_task::make(4, dim, 4, 0, gen);
  sona::router_options ro;
  ro.query_dim = dim;
  ro.hidden_dim = hidden;
  ro.rank_w = 4;
  ro.rank_u = 4;
  ro.sparsity = 0.25;
  ro.ewc.lambda = 10.0;
  auto router = sona::fastgrnn_router<float>::create(ro).value();
  auto ws = router.make_workspace();
  ruvllm::test::run_trajectories(router, ws, task, trajectories, gen);
  router.consolidate();
  router.sparsify();
  ruvllm::test::run_trajectories(router, ws, task, trajectories / 4, gen);
  auto bank =
      bank_t::create({.dim = dim, .models = 4, .params_dim = 2, .max_samples = 256, .kmeans = {.k = 4}}).value();
  std::vector<float> x;
  for (int i = 0; i < 200; ++i) {
    const std::size_t k = task.sample(gen, x);
    const float params[2] = {0.1f * static_cast<float>(k), 0.9f};
    bank.record(x, task.best[k], 0.8f, params);
  }
  REQUIRE(bank.consolidate());
  return {std::move(router), std::move(bank), std::move(task)};
}

// REQUIRE(r) that prints the error when it fails.
template <class R>
void require_ok(const R& r) {
  if (!r) FAIL(r.error().describe());
}

template <class T>
bool same(std::span<const T> a, std::span<const T> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

void require_same(const sona::fastgrnn_router<float>& a, const sona::fastgrnn_router<float>& b) {
  REQUIRE(same(a.parameters(), b.parameters()));
  REQUIRE(same(a.sparsity_mask(), b.sparsity_mask()));
  REQUIRE(same(a.optimizer().first_moment(), b.optimizer().first_moment()));
  REQUIRE(same(a.optimizer().second_moment(), b.optimizer().second_moment()));
  REQUIRE(a.optimizer().steps() == b.optimizer().steps());
  REQUIRE(same(a.ewc_state().running_fisher(), b.ewc_state().running_fisher()));
  REQUIRE(same(a.ewc_state().penalty_fisher(), b.ewc_state().penalty_fisher()));
  REQUIRE(same(a.ewc_state().anchor(), b.ewc_state().anchor()));
  REQUIRE(a.ewc_state().anchored() == b.ewc_state().anchored());
  REQUIRE(a.ewc_state().consolidations() == b.ewc_state().consolidations());
  REQUIRE(a.version() == b.version());
  REQUIRE(a.options().hidden_dim == b.options().hidden_dim);
  REQUIRE(a.options().ewc.lambda == b.options().ewc.lambda);
}

void require_same(const bank_t& a, const bank_t& b) {
  REQUIRE(a.patterns().size() == b.patterns().size());
  REQUIRE(a.consolidations() == b.consolidations());
  for (std::size_t i = 0; i < a.patterns().size(); ++i) {
    const auto &p = a.patterns()[i], &q = b.patterns()[i];
    REQUIRE(p.centroid == q.centroid);
    REQUIRE(p.count == q.count);
    REQUIRE(p.mean_quality == q.mean_quality);
    REQUIRE(p.best_model == q.best_model);
    REQUIRE(p.model_quality == q.model_quality);
    REQUIRE(p.model_count == q.model_count);
    REQUIRE(p.params == q.params);
  }
}

// Recomputes every checksum of an exchange file, independently of the
// library's writer, so a test can hand it contents that only semantic checks
// can reject.
void reseal(std::vector<std::byte>& f) {
  std::uint32_t n = 0;
  std::memcpy(&n, f.data() + 12, 4);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::byte* e = f.data() + 32 + 32 * i;
    std::uint64_t off = 0, size = 0;
    std::memcpy(&off, e + 8, 8);
    std::memcpy(&size, e + 16, 8);
    const std::uint32_t crc = ruvllm::crc32c(std::span<const std::byte>(f.data() + off, size));
    std::memcpy(e + 24, &crc, 4);
  }
  const std::uint32_t table = ruvllm::crc32c(std::span<const std::byte>(f.data() + 32, 32 * n));
  std::memcpy(f.data() + 24, &table, 4);
  const std::uint32_t head = ruvllm::crc32c(std::span<const std::byte>(f.data(), 28));
  std::memcpy(f.data() + 28, &head, 4);
}

std::uint64_t section_offset(const std::vector<std::byte>& f, int index) {
  std::uint64_t off = 0;
  std::memcpy(&off, f.data() + 32 + 32 * index + 8, 8);
  return off;
}

struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    path = std::filesystem::temp_directory_path() / ("ruvllm_exchange_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~temp_dir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("exchange: export then import on a fresh node reproduces routing and every learned array",
          "[sona][exchange]") {
  auto t = make_trained();
  temp_dir dir;
  const std::string file = (dir.path / "node_a.sona").string();
  require_ok(sona::export_learning(file, t.router, t.bank));

  // The fresh node starts from other options and an empty bank.
  auto router = sona::fastgrnn_router<float>::create({.query_dim = 8, .models = 3, .seed = 99}).value();
  auto bank = bank_t::create({.dim = 8, .models = 3}).value();
  require_ok(sona::import_learning(file, router, bank));
  require_same(t.router, router);
  require_same(t.bank, bank);

  std::mt19937_64 gen(12);
  auto wa = t.router.make_workspace(), wb = router.make_workspace();
  std::vector<float> x;
  for (int i = 0; i < 200; ++i) {
    t.task.sample(gen, x);
    const auto a = t.router.route(x, {}, wa), b = router.route(x, {}, wb);
    REQUIRE(a.model == b.model);
    REQUIRE(a.model_probability == b.model_probability);
    REQUIRE(a.temperature == b.temperature);
    REQUIRE(a.confidence == b.confidence);
  }
  // Training continues identically: the Adam moments and EWC++ state came along.
  ruvllm::test::run_trajectories(t.router, wa, t.task, 50, gen);
  std::mt19937_64 gen2(12);
  for (int i = 0; i < 200; ++i) t.task.sample(gen2, x);
  ruvllm::test::run_trajectories(router, wb, t.task, 50, gen2);
  REQUIRE(same(t.router.parameters(), router.parameters()));

  // Pattern search agrees too.
  std::vector<std::pair<std::size_t, float>> ha, hb;
  t.bank.search(t.task.centers[0], 3, ha);
  bank.search(t.task.centers[0], 3, hb);
  CHECK(ha == hb);
}

TEST_CASE("exchange: every flipped byte and every truncation is an error with a file offset", "[sona][exchange]") {
  auto t = make_trained(8, 16, 200);
  const auto good = sona::encode_learning(t.router, t.bank);
  require_ok(sona::decode_learning<>(good, "good"));
  INFO("file of " << good.size() << " bytes");
  for (std::size_t i = 0; i < good.size(); ++i) {
    auto bad = good;
    bad[i] ^= std::byte{0x40};
    const auto r = sona::decode_learning<>(bad, "flipped");
    if (r) FAIL("flipping byte " << i << " went unnoticed");
    REQUIRE(r.error().file() == "flipped");
  }
  for (std::size_t n = 0; n < good.size(); ++n) {
    const auto r = sona::decode_learning<>(std::span<const std::byte>(good.data(), n), "truncated");
    if (r) FAIL("a file truncated to " << n << " bytes was accepted");
  }
  // Appended bytes contradict the recorded file size.
  auto longer = good;
  longer.push_back(std::byte{0});
  CHECK_FALSE(sona::decode_learning<>(longer));
}

TEST_CASE("exchange: valid checksums over hostile contents are rejected", "[sona][exchange]") {
  auto t = make_trained(8, 16, 200);
  const auto good = sona::encode_learning(t.router, t.bank);
  const std::uint64_t router_at = section_offset(good, 0), patterns_at = section_offset(good, 1);
  const auto reject = [](std::vector<std::byte> f, const char* what) {
    reseal(f);
    const auto r = sona::decode_learning<>(f, "hostile");
    INFO(what);
    REQUIRE_FALSE(r);
    INFO(r.error().describe());
    CHECK(r.error().has_offset());
    return r.error().describe();
  };
  const auto put_u64 = [](std::vector<std::byte>& f, std::uint64_t at, std::uint64_t v) {
    std::memcpy(f.data() + at, &v, 8);
  };
  {
    auto f = good;  // hidden_dim 2^40: rejected before any size arithmetic
    put_u64(f, router_at + 16, std::uint64_t{1} << 40);
    reject(f, "huge hidden_dim");
  }
  {
    auto f = good;  // parameter count far beyond the section
    put_u64(f, router_at + 8 * 8 + 8 * 12 + 8 + 8 * 3 + 8 + 8, std::uint64_t{1} << 60);
    reject(f, "huge parameter count");
  }
  {
    auto f = good;  // a NaN weight
    const std::uint64_t first_param = router_at + 8 * 8 + 8 * 12 + 8 + 8 * 3 + 8 + 5 * 8;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(f.data() + first_param, &nan, 4);
    reject(f, "NaN parameter");
  }
  {
    auto f = good;  // pattern count 2^50
    put_u64(f, patterns_at + 5 * 8 + 8 + 4 * 8 + 8, std::uint64_t{1} << 50);
    reject(f, "huge pattern count");
  }
  {
    auto f = good;  // a bank asking for a 2^40-float sample buffer
    put_u64(f, patterns_at + 3 * 8, std::uint64_t{1} << 23);
    put_u64(f, patterns_at, std::uint64_t{1} << 17);
    reject(f, "huge sample buffer");
  }
  {
    auto f = good;  // best model out of range in the first pattern
    const std::uint64_t first = patterns_at + 5 * 8 + 8 + 4 * 8 + 8 + 8;
    const std::uint32_t model = 77;
    std::memcpy(f.data() + first + 16 + 12, &model, 4);
    reject(f, "best model out of range");
  }
  {
    auto f = good;  // two patterns with one id
    const std::uint64_t first = patterns_at + 5 * 8 + 8 + 4 * 8 + 8 + 8;
    const std::uint64_t per = 32 + 4 * 16 + 12 * 4 + 4 * 2;
    std::memcpy(f.data() + first + per, f.data() + first, 16);
    reject(f, "duplicate pattern id");
  }
  {
    auto f = good;  // an unknown section kind
    const std::uint32_t kind = 9;
    std::memcpy(f.data() + 32, &kind, 4);
    reject(f, "unknown section kind");
  }
  {
    auto f = good;  // the patterns section moved onto the router section
    put_u64(f, 32 + 32 + 8, router_at);
    reject(f, "duplicated section");
  }
  {
    auto f = good;  // a future version
    const std::uint32_t v = 2;
    std::memcpy(f.data() + 8, &v, 4);
    CHECK(reject(f, "version 2").find("version 2") != std::string::npos);
  }
}

TEST_CASE("exchange: a failed import leaves the learned state untouched", "[sona][exchange]") {
  auto t = make_trained(8, 16, 200);
  temp_dir dir;
  const std::string file = (dir.path / "bad.sona").string();
  auto bytes = sona::encode_learning(t.router, t.bank);
  bytes[bytes.size() - 3] ^= std::byte{1};  // inside the patterns section
  {
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  auto router =
      sona::fastgrnn_router<float>::create({.query_dim = 16, .hidden_dim = 8, .rank_w = 4, .rank_u = 4}).value();
  auto bank = bank_t::create({.dim = 16, .models = 4}).value();
  const std::vector<float> before(router.parameters().begin(), router.parameters().end());
  const auto r = sona::import_learning(file, router, bank);
  REQUIRE_FALSE(r);
  CHECK(r.error().file() == file);
  CHECK(std::vector<float>(router.parameters().begin(), router.parameters().end()) == before);
  CHECK(bank.patterns().empty());
  CHECK_FALSE(sona::import_learning((dir.path / "missing.sona").string(), router, bank));
}

}  // namespace exchange_test
