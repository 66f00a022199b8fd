// session_index: sessions survive reopening; lookup by id, by user and by
// context similarity; the per-turn update; expiry by last activity.
// Encryption at rest (when libsodium is compiled in): no plaintext on disk,
// a wrong key, a tampered byte, a moved payload, a changed time and a
// downgrade to plaintext all fail authentication with a clear error;
// without a cipher a key is refused. Concurrent turns of one session are
// not lost; bad input changes nothing.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ruvllm/store/session_index.hpp"
#include "store/memory_test_support.hpp"
#include "store/store_test_support.hpp"
#include "support/rng.hpp"

namespace session_index_test {

namespace {

namespace st = ruvllm::store;
using mem_support::image_of;
using mem_support::random_id;
using st::uuid;
using store_t = st::memory_store<st::metric::cosine, ruvllm::precision::f32>;
using sessions_t = st::session_index<store_t>;
constexpr std::uint32_t dim = 8;

st::memory_store_options options() {
  return st::role_store_options(dim, st::hnsw_options{.m = 12, .ef_construction = 64});
}

st::session random_session(ruvllm::test::rng& gen, int users = 5) {
  st::session s;
  s.id = random_id(gen);
  s.user_id = "user-" + std::to_string(gen.uniform_index(0, static_cast<std::size_t>(users - 1)));
  s.state = static_cast<st::session_state>(gen.uniform_index(1, 4));
  s.kv = st::kv_cache_ref{static_cast<st::kv_tier>(gen.uniform_index(0, 3)), gen.next_u64(),
                          static_cast<std::uint32_t>(gen.uniform_index(0, 4096))};
  s.active_adapter = gen.chance(0.5) ? "adapter-" + std::to_string(gen.uniform_index(0, 3)) : "";
  s.turn_count = static_cast<std::uint32_t>(gen.uniform_index(0, 50));
  s.last_activity = static_cast<std::int64_t>(gen.uniform_index(0, 100'000));
  return s;
}

st::session_key key_of(std::uint8_t seed) {
  st::session_key k;
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(seed * 31 + i);
  return k;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The whole scenario, with or without a key.
void exercise(std::optional<st::session_key> key) {
  const mem_support::scratch_dir dir("session");
  ruvllm::test::rng gen(131);
  std::map<uuid, st::session> model;
  std::map<uuid, std::vector<float>> contexts;
  auto store = std::make_optional(store_t::open(dir.path(), options()).value());
  auto open_index = [&] { return sessions_t::open(*store, {.key = key}).value(); };
  auto sessions = std::make_optional(open_index());
  CHECK(sessions->encrypted() == key.has_value());
  for (int i = 0; i < 200; ++i) {
    const st::session s = random_session(gen);
    const auto ctx = gen.uniform_vector(dim);
    REQUIRE(sessions->insert(s, ctx));
    model[s.id] = s;
    contexts[s.id] = ctx;
  }
  // Per-turn updates and full updates.
  for (int i = 0; i < 60; ++i) {
    auto it = std::next(model.begin(), static_cast<long>(gen.uniform_index(0, model.size() - 1)));
    st::session& s = it->second;
    if (i % 2 == 0) {
      const st::kv_cache_ref kv{st::kv_tier::warm, gen.next_u64(), 77};
      const std::int64_t now = s.last_activity + 1000;
      REQUIRE(sessions->record_turn(s.id, now, kv));
      s.turn_count += 1;
      s.last_activity = now;
      s.kv = kv;
      s.state = st::session_state::active;
    } else {
      const uuid id = s.id;
      s = random_session(gen);
      s.id = id;
      contexts[id] = gen.uniform_vector(dim);
      REQUIRE(sessions->update(s, contexts[id]));
    }
  }
  sessions.reset();
  store.reset();
  store.emplace(store_t::open(dir.path(), options()).value());
  sessions.emplace(open_index());
  REQUIRE(sessions->size() == model.size());
  for (auto& [id, s] : model) REQUIRE(sessions->get(id).value() == s);
  for (int u = 0; u < 5; ++u) {
    const std::string user = "user-" + std::to_string(u);
    std::vector<st::session> want;
    for (auto& [id, s] : model)
      if (s.user_id == user) want.push_back(s);
    auto got = sessions->by_user(user).value();
    std::sort(got.begin(), got.end(), [](auto& a, auto& b) { return a.id < b.id; });
    REQUIRE(got == want);
  }
  CHECK(sessions->by_user("nobody").value().empty());
  // Similarity against brute force.
  for (int q = 0; q < 10; ++q) {
    const auto query = gen.uniform_vector(dim);
    uuid best{};
    double best_d = 1e9;
    for (auto& [id, c] : contexts) {
      const double d = st_support::reference_distance<st::metric::cosine>(query, c);
      if (d < best_d) best_d = d, best = id;
    }
    auto hits = sessions->similar(query, 3, {.ef = 200}).value();
    REQUIRE(hits.size() == 3);
    CHECK(hits[0].value.id == best);
    CHECK(hits[0].value == model[best]);
  }
  // Expiry: everything idle since before the cutoff goes, oldest first.
  const std::int64_t cutoff = 50'000;
  std::vector<std::pair<std::int64_t, uuid>> old;
  for (auto& [id, s] : model)
    if (s.last_activity < cutoff) old.emplace_back(s.last_activity, id);
  std::sort(old.begin(), old.end());
  std::vector<uuid> want_ids;
  for (auto& o : old) want_ids.push_back(o.second);
  REQUIRE(sessions->stale(cutoff) == want_ids);
  REQUIRE(sessions->expire(cutoff, 16).value() == want_ids);  // several logged batches
  for (auto& id : want_ids) {
    CHECK(sessions->get(id).error().code() == ruvllm::errc::not_found);
    model.erase(id);
  }
  CHECK(sessions->stale(cutoff).empty());
  CHECK(store->index(st::role_space::session).size() == model.size());
  sessions.reset();
  store.reset();
  store.emplace(store_t::open(dir.path(), options()).value());
  sessions.emplace(open_index());
  REQUIRE(sessions->size() == model.size());
  for (auto& [id, s] : model) REQUIRE(sessions->get(id).value() == s);
  // At rest: with a key, no user id or adapter name appears in the log or
  // (after a checkpoint) in the snapshot.
  for (int pass = 0; pass < 2; ++pass) {
    const std::string text = file_text(dir.path() + (pass == 0 ? "/store.wal" : "/records.snap"));
    CHECK((text.find("user-") == std::string::npos) == key.has_value());
    CHECK((text.find("adapter-") == std::string::npos) == key.has_value());
    if (pass == 0) REQUIRE(store->checkpoint());
  }
}

}  // namespace

TEST_CASE("session_index without encryption", "[store][roles][session]") { exercise(std::nullopt); }

#if defined(RUVLLM_WITH_SODIUM)
TEST_CASE("session_index encrypted at rest", "[store][roles][session][crypto]") { exercise(key_of(7)); }

TEST_CASE("session_index: wrong key, tampering, moved payloads and downgrades fail authentication",
          "[store][roles][session][crypto]") {
  const mem_support::scratch_dir dir("session_crypto");
  ruvllm::test::rng gen(132);
  auto store = store_t::open(dir.path(), options()).value();
  auto sessions = sessions_t::open(store, {.key = key_of(1)}).value();
  const st::session a = random_session(gen), b = random_session(gen);
  REQUIRE(sessions.insert(a));
  REQUIRE(sessions.insert(b));
  // A fresh nonce per write: the same session written twice seals differently.
  const auto sealed_once = store.get(a.id)->payload;
  REQUIRE(sessions.update(a));
  CHECK(store.get(a.id)->payload != sealed_once);
  CHECK(sessions.get(a.id).value() == a);

  auto expect_auth_failure = [](auto r) {
    REQUIRE(!r);
    CHECK(r.error().code() == ruvllm::errc::corrupt_data);
    CHECK(r.error().message().find("authentication") != std::string::npos);
  };
  {
    auto wrong = sessions_t::open(store, {.key = key_of(2)}).value();
    expect_auth_failure(wrong.get(a.id));
    CHECK(wrong.by_user(a.user_id).value().empty());  // the keyed user hash differs too
  }
  // Without a key, a sealed payload is refused (not shown as garbage).
  {
    auto keyless = sessions_t::open(store).value();
    auto r = keyless.get(a.id);
    REQUIRE(!r);
    CHECK(r.error().code() == ruvllm::errc::corrupt_data);
    CHECK(r.error().message().find("no key") != std::string::npos);
  }
  auto tamper = [&](const uuid& id, auto edit) {
    REQUIRE(store.modify(id, [&](st::record& r) -> ruvllm::result<void> {
      edit(r);
      return {};
    }));
  };
  // Every single flipped ciphertext byte is caught.
  const auto payload = store.get(a.id)->payload;
  for (std::size_t at = 1; at < payload.size(); ++at) {
    tamper(a.id, [&](st::record& r) { r.payload[at] ^= std::byte{0x01}; });
    expect_auth_failure(sessions.get(a.id));
    tamper(a.id, [&](st::record& r) { r.payload[at] ^= std::byte{0x01}; });
  }
  REQUIRE(sessions.get(a.id).value() == a);
  // The associated data binds id, time and user hash.
  tamper(a.id, [&](st::record& r) { r.time += 1; });
  expect_auth_failure(sessions.get(a.id));
  tamper(a.id, [&](st::record& r) { r.time -= 1; });
  tamper(a.id, [&](st::record& r) { r.group ^= 1; });
  expect_auth_failure(sessions.get(a.id));
  tamper(a.id, [&](st::record& r) { r.group ^= 1; });
  const auto b_payload = store.get(b.id)->payload;
  tamper(a.id, [&](st::record& r) { r.payload = b_payload; });  // b's sealed payload moved onto a
  expect_auth_failure(sessions.get(a.id));
  // A plaintext payload where a key is configured is a downgrade: refused.
  {
    const mem_support::scratch_dir plain_dir("session_plain");
    auto plain_store = store_t::open(plain_dir.path(), options()).value();
    auto plain = sessions_t::open(plain_store).value();
    REQUIRE(plain.insert(b));
    const auto plain_payload = plain_store.get(b.id)->payload;
    tamper(b.id, [&](st::record& r) {
      r.payload = plain_payload;
      r.group = sessions.user_hash(b.user_id);
    });
    auto r = sessions.get(b.id);
    REQUIRE(!r);
    CHECK(r.error().message().find("unencrypted") != std::string::npos);
  }
}
#endif

TEST_CASE("session_index without a cipher refuses a key", "[store][roles][session]") {
  const mem_support::scratch_dir dir("session_nocipher");
  auto store = store_t::open(dir.path(), options()).value();
  auto r = st::session_index<store_t, st::cipher::none>::open(store, {.key = key_of(1)});
  REQUIRE(!r);
  CHECK(r.error().code() == ruvllm::errc::unsupported);
  CHECK(r.error().message().find("RUVLLM_WITH_SODIUM") != std::string::npos);
  // Without a key it works, storing plain payloads.
  auto plain = st::session_index<store_t, st::cipher::none>::open(store).value();
  ruvllm::test::rng gen(133);
  const st::session s = random_session(gen);
  REQUIRE(plain.insert(s));
  CHECK(plain.get(s.id).value() == s);
}

TEST_CASE("session_index: bad input is refused and changes nothing", "[store][roles][session]") {
  const mem_support::scratch_dir dir("session_bad");
  ruvllm::test::rng gen(134);
  auto store = std::make_optional(store_t::open(dir.path(), options()).value());
  auto sessions = sessions_t::open(*store).value();
  const st::session good = random_session(gen);
  REQUIRE(sessions.insert(good, gen.uniform_vector(dim)));
  const auto before = image_of(*store);
  using ruvllm::errc;
  auto bad = [&](auto edit, std::vector<float> ctx = {}) {
    st::session s = random_session(gen);
    edit(s);
    return sessions.insert(s, ctx).error().code();
  };
  CHECK(bad([](st::session& s) { s.id = uuid{}; }) == errc::invalid_argument);
  CHECK(bad([&](st::session& s) { s.id = good.id; }) == errc::already_exists);
  CHECK(bad([](st::session& s) { s.state = static_cast<st::session_state>(0); }) == errc::invalid_argument);
  CHECK(bad([](st::session& s) { s.kv.tier = static_cast<st::kv_tier>(4); }) == errc::invalid_argument);
  CHECK(bad([](st::session& s) { s.user_id.assign(5000, 'u'); }) == errc::invalid_argument);
  CHECK(bad([](st::session&) {}, std::vector<float>(dim + 1, 1.0f)) == errc::invalid_argument);
  std::vector<float> nan_ctx(dim, 1.0f);
  nan_ctx[0] = std::numeric_limits<float>::quiet_NaN();
  CHECK(bad([](st::session&) {}, nan_ctx) == errc::invalid_argument);
  const st::session stranger = random_session(gen);
  CHECK(sessions.update(stranger).error().code() == errc::not_found);
  CHECK(sessions.record_turn(stranger.id, 1, {}).error().code() == errc::not_found);
  CHECK(sessions.remove(stranger.id).error().code() == errc::not_found);
  CHECK(sessions.get(stranger.id).error().code() == errc::not_found);
  CHECK(sessions.similar(std::vector<float>(3, 1.0f), 2).error().code() == errc::invalid_argument);
  CHECK(sessions_t::open(*store, {.space = 17}).error().code() == errc::invalid_argument);
  REQUIRE(image_of(*store) == before);
  store.reset();
  store.emplace(store_t::open(dir.path(), options()).value());
  REQUIRE(image_of(*store) == before);
}

TEST_CASE("session_index: concurrent turns of one session are all counted", "[store][roles][session][concurrency]") {
  const mem_support::scratch_dir dir("session_concurrent");
  auto o = options();
  o.wal.mode = st::durability::none;
  auto store = store_t::open(dir.path(), o).value();
#if defined(RUVLLM_WITH_SODIUM)
  auto sessions = sessions_t::open(store, {.key = key_of(3)}).value();
#else
  auto sessions = sessions_t::open(store).value();
#endif
  ruvllm::test::rng gen(135);
  st::session s = random_session(gen);
  s.turn_count = 0;
  REQUIRE(sessions.insert(s));
  constexpr int turns = 200;
  std::atomic<int> failures{0};
  auto worker = [&](int t) {
    for (int i = 0; i < turns; ++i)
      if (!sessions.record_turn(s.id, t * 1000 + i, st::kv_cache_ref{st::kv_tier::hot, 1, 1})) ++failures;
  };
  std::thread reader([&] {
    for (int i = 0; i < turns; ++i)
      if (!sessions.get(s.id)) ++failures;
  });
  std::thread a(worker, 1), b(worker, 2);
  a.join();
  b.join();
  reader.join();
  CHECK(failures.load() == 0);
  CHECK(sessions.get(s.id).value().turn_count == 2 * turns);
}

}  // namespace session_index_test
