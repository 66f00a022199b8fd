// Crash recovery of the memory_store through all three roles: a forked
// child writes policies, sessions (encrypted when libsodium is compiled
// in), edges and witness batches, expires, retains, checkpoints and
// compacts, announcing each operation before it starts (intent) and after
// it returned (acknowledged) through a pipe; the parent SIGKILLs it at a
// random moment, reopens the store and checks that
//   * every acknowledged operation is there, exactly,
//   * the one operation in flight is there entirely or not at all (a
//     witness batch of up to 100 entries is atomic),
//   * verify() passes and searching each stored embedding finds its record.
// Each trial uses one durability mode in turn (every_write, group_commit,
// none: a process crash loses nothing acknowledged in any of them; only a
// power loss would tell them apart). The [slow] case runs 60 trials.

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ruvllm/store/roles.hpp"
#include "store/memory_test_support.hpp"
#include "support/rng.hpp"

namespace store_crash_test {

namespace {

namespace st = ruvllm::store;
using mem_support::random_id;
using st::uuid;
using store_t = st::memory_store<st::metric::l2, ruvllm::precision::f32>;
constexpr std::uint32_t dim = 8;

st::memory_store_options options(st::durability mode) {
  auto o = st::role_store_options(dim, st::hnsw_options{.m = 8, .ef_construction = 48});
  o.wal.mode = mode;
  o.wal.group_records = 16;
  // Automatic checkpoints every few witness batches, so kills land in them
  // too (a checkpoint costs ~15 fsyncs, tens of ms here).
  o.checkpoint_bytes = 256 << 10;
  return o;
}

st::session_index_options session_options() {
  st::session_index_options o;
#if defined(RUVLLM_WITH_SODIUM)
  st::session_key key;
  for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<std::uint8_t>(0xA5 ^ i);
  o.key = key;
#endif
  return o;
}

// ---- deterministic contents: everything follows from (id, gen) -------------

std::vector<float> vec(const uuid& id, std::uint64_t gen) {
  std::uint64_t x = id.lo ^ (id.hi * 31) ^ (gen * 0x9E3779B97F4A7C15ull);
  std::vector<float> v(dim);
  for (auto& f : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    f = static_cast<float>(static_cast<std::int64_t>(x >> 40) % 2001 - 1000) / 1000.0f;
  }
  return v;
}

st::policy policy_of(const uuid& id, std::uint64_t gen) {
  st::policy p;
  p.id = id;
  p.type = static_cast<st::policy_type>(1 + gen % 4);
  p.source = static_cast<st::learning_loop>(1 + gen % 3);
  p.confidence = static_cast<float>(gen % 101) / 100.0f;
  p.updated = static_cast<std::int64_t>(gen);
  p.parameters = vec(id, gen + 1);
  if (gen % 2 == 1)
    for (float x : vec(id, gen + 2)) p.fisher_diagonal.push_back(x < 0 ? -x : x);
  return p;
}

st::session session_of(const uuid& id, std::uint64_t gen) {
  st::session s;
  s.id = id;
  s.user_id = "user" + std::to_string(gen % 5);
  s.state = st::session_state::idle;
  s.kv = st::kv_cache_ref{static_cast<st::kv_tier>(gen % 4), gen, static_cast<std::uint32_t>(gen % 1000)};
  s.active_adapter = gen % 2 ? "adapter" : "";
  s.turn_count = static_cast<std::uint32_t>(gen % 10);
  s.last_activity = static_cast<std::int64_t>(gen);
  return s;
}

float quality_of(std::uint64_t gen) { return static_cast<float>(gen % 101) / 100.0f; }

st::witness_record witness_of(const uuid& id, std::uint64_t gen, const uuid& session, const uuid& pattern) {
  st::witness_record w;
  w.request_id = id;
  w.session_id = session;
  w.pattern_id = pattern;
  w.time = static_cast<std::int64_t>(gen);
  w.routing = st::witness_routing{static_cast<std::uint32_t>(gen % 4), 0.5f, 1, 0.7f, 0.9f, 0.6f};
  w.latency = st::latency_breakdown{static_cast<std::uint32_t>(gen % 100), 2000, 30000, 32100};
  w.quality = quality_of(gen);
  if (gen % 7 == 0) {
    w.error_code = 2;
    w.error_message = "timeout";
  }
  return w;
}

// ---- the protocol ----------------------------------------------------------------

enum op_code : std::uint32_t {
  policy_insert = 1,
  policy_confidence,
  policy_remove,
  policy_params,
  session_insert,
  session_turn,
  session_expire,
  link_edge,
  scale_edge,
  witness_batch,
  witness_retain,
  checkpoint,
  compact,
};

struct message {
  std::uint32_t magic = 0x52555643;
  std::uint32_t ack = 0;  // 0 intent, 1 acknowledged
  std::uint32_t op = 0;
  std::uint32_t count = 0;  // witness entries following an intent
  std::uint64_t gen = 0;
  uuid a{}, b{};
};
struct witness_item {
  uuid id{}, session{}, pattern{};
  std::uint64_t gen = 0;
};

// The logical state: what the roles return.
using edge_key = std::tuple<uuid, uuid, int>;
struct state {
  std::map<uuid, st::policy> policies;
  std::map<uuid, std::vector<float>> policy_vectors;
  std::map<uuid, st::session> sessions;
  std::map<uuid, std::vector<float>> session_vectors;
  std::map<uuid, st::witness_record> witness;
  std::map<uuid, std::vector<float>> query_vectors, response_vectors;
  std::map<edge_key, float> edges;
  friend bool operator==(const state&, const state&) = default;

  void drop(const uuid& id) {
    policies.erase(id);
    policy_vectors.erase(id);
    sessions.erase(id);
    session_vectors.erase(id);
    witness.erase(id);
    query_vectors.erase(id);
    response_vectors.erase(id);
    std::erase_if(edges, [&](auto& e) { return std::get<0>(e.first) == id || std::get<1>(e.first) == id; });
  }
  [[nodiscard]] bool exists(const uuid& id) const {
    return policies.contains(id) || sessions.contains(id) || witness.contains(id);
  }
};

struct operation {
  message m;
  std::vector<witness_item> items;
};

void apply(state& s, const operation& op) {
  const message& m = op.m;
  switch (m.op) {
    case policy_insert:
      s.policies[m.a] = policy_of(m.a, m.gen);
      if (m.gen % 5 != 0) s.policy_vectors[m.a] = vec(m.a, m.gen);
      break;
    case policy_confidence:
      s.policies[m.a].confidence = quality_of(m.gen);
      s.policies[m.a].updated = static_cast<std::int64_t>(m.gen);
      break;
    case policy_params: {
      auto& p = s.policies[m.a];
      p.parameters = vec(m.a, m.gen + 7);
      p.fisher_diagonal.clear();
      p.updated = static_cast<std::int64_t>(m.gen);
      break;
    }
    case policy_remove: s.drop(m.a); break;
    case session_insert:
      s.sessions[m.a] = session_of(m.a, m.gen);
      s.session_vectors[m.a] = vec(m.a, m.gen);
      break;
    case session_turn: {
      auto& x = s.sessions[m.a];
      x.turn_count += 1;
      x.last_activity = static_cast<std::int64_t>(m.gen);
      x.kv = st::kv_cache_ref{st::kv_tier::hot, m.gen, 1};
      x.state = st::session_state::active;
      break;
    }
    case session_expire: {
      std::vector<uuid> old;
      for (auto& [id, x] : s.sessions)
        if (x.last_activity < static_cast<std::int64_t>(m.gen)) old.push_back(id);
      for (auto& id : old) s.drop(id);
      break;
    }
    case link_edge:
      s.edges[{m.a, m.b, static_cast<int>(st::edge_type::session_pattern)}] = static_cast<float>(m.gen % 50) / 10.0f;
      break;
    case scale_edge: s.edges[{m.a, m.b, static_cast<int>(st::edge_type::session_pattern)}] *= 1.05f; break;
    case witness_batch:
      for (auto& it : op.items) {
        const auto w = witness_of(it.id, it.gen, it.session, it.pattern);
        s.witness[it.id] = w;
        s.query_vectors[it.id] = vec(it.id, it.gen);
        if (it.gen % 3 != 0) s.response_vectors[it.id] = vec(it.id, it.gen + 1);
        if (s.sessions.contains(it.session))
          s.edges[{it.id, it.session, static_cast<int>(st::edge_type::session_witness)}] = 1.0f;
        if (s.policies.contains(it.pattern))
          s.edges[{it.id, it.pattern, static_cast<int>(st::edge_type::pattern_witness)}] = w.quality;
      }
      break;
    case witness_retain: {
      std::vector<uuid> old;
      for (auto& [id, w] : s.witness)
        if (w.time < static_cast<std::int64_t>(m.gen)) old.push_back(id);
      for (auto& id : old) s.drop(id);
      break;
    }
    default: break;  // checkpoint, compact: no logical change
  }
}

// Reads the logical state back through the roles.
state read_state(store_t& store) {
  state s;
  auto policies = st::policy_store<store_t>::open(store).value();
  auto sessions = st::session_index<store_t>::open(store, session_options()).value();
  auto witness = st::witness_log<store_t>::open(store).value();
  std::vector<uuid> ids[st::record_kind_count];
  store.read([&](const st::record_graph& g) {
    g.for_each([&](const st::record& r) { ids[static_cast<int>(r.kind)].push_back(r.id); });
    g.for_each_edge([&](const st::edge& e) { s.edges[{e.from, e.to, static_cast<int>(e.type)}] = e.weight; });
    return 0;
  });
  REQUIRE(ids[0].empty());
  std::vector<float> v(dim);
  auto vector_of = [&](std::uint32_t space, const uuid& id, std::map<uuid, std::vector<float>>& out) {
    if (store.embedding(space, id, v)) out[id] = v;
  };
  for (auto& id : ids[static_cast<int>(st::record_kind::policy)]) {
    s.policies[id] = policies.get(id).value();
    vector_of(st::role_space::policy, id, s.policy_vectors);
  }
  for (auto& id : ids[static_cast<int>(st::record_kind::session)]) {
    s.sessions[id] = sessions.get(id).value();
    vector_of(st::role_space::session, id, s.session_vectors);
  }
  for (auto& id : ids[static_cast<int>(st::record_kind::witness)]) {
    s.witness[id] = witness.get(id).value();
    vector_of(st::role_space::witness_query, id, s.query_vectors);
    vector_of(st::role_space::witness_response, id, s.response_vectors);
  }
  return s;
}

// ---- the child ------------------------------------------------------------------

[[noreturn]] void child(const std::string& dir, int fd, st::durability mode, std::uint64_t seed, std::uint64_t gen0) {
  auto store = store_t::open(dir, options(mode));
  if (!store) _exit(10);
  auto policies = st::policy_store<store_t>::open(*store).value();
  auto sessions = st::session_index<store_t>::open(*store, session_options()).value();
  auto witness = st::witness_log<store_t>::open(*store).value();
  // What exists now (the child only needs ids, to pick valid operations).
  std::vector<uuid> pol, ses;
  std::vector<std::pair<uuid, uuid>> links;
  store->read([&](const st::record_graph& g) {
    g.for_each([&](const st::record& r) {
      if (r.kind == st::record_kind::policy) pol.push_back(r.id);
      if (r.kind == st::record_kind::session) ses.push_back(r.id);
    });
    g.for_each_edge([&](const st::edge& e) {
      if (e.type == st::edge_type::session_pattern) links.emplace_back(e.from, e.to);
    });
    return 0;
  });
  ruvllm::test::rng gen(seed);
  auto send = [&](const void* p, std::size_t n) {
    if (::write(fd, p, n) != static_cast<ssize_t>(n)) _exit(11);
  };
  auto ok = [](bool b) {
    if (!b) _exit(12);
  };
  auto forget = [&](const uuid& id) {
    std::erase(pol, id);
    std::erase(ses, id);
    std::erase_if(links, [&](auto& l) { return l.first == id || l.second == id; });
  };
  for (std::uint64_t i = 0;; ++i) {
    operation op;
    message& m = op.m;
    m.gen = gen0 + i;
    const std::size_t r = gen.uniform_index(0, 99);
    if (r < 14 || pol.size() < 2) {
      m.op = policy_insert;
      m.a = random_id(gen);
    } else if (r < 22) {
      m.op = policy_confidence;
      m.a = pol[gen.uniform_index(0, pol.size() - 1)];
    } else if (r < 25) {
      m.op = policy_params;
      m.a = pol[gen.uniform_index(0, pol.size() - 1)];
    } else if (r < 29) {
      m.op = policy_remove;
      m.a = pol[gen.uniform_index(0, pol.size() - 1)];
    } else if (r < 40 || ses.size() < 2) {
      m.op = session_insert;
      m.a = random_id(gen);
    } else if (r < 54) {
      m.op = session_turn;
      m.a = ses[gen.uniform_index(0, ses.size() - 1)];
    } else if (r < 56) {
      m.op = session_expire;
      m.gen = m.gen - std::min<std::uint64_t>(m.gen, 150);  // the cutoff: idle for 150 operations
    } else if (r < 63) {
      m.op = link_edge;
      m.a = ses[gen.uniform_index(0, ses.size() - 1)];
      m.b = pol[gen.uniform_index(0, pol.size() - 1)];
    } else if (r < 67 && !links.empty()) {
      m.op = scale_edge;
      std::tie(m.a, m.b) = links[gen.uniform_index(0, links.size() - 1)];
    } else if (r < 92) {
      m.op = witness_batch;
      // Mostly small batches (cheap to index, so each trial does more); one in
      // five between 50 and 100 entries, the most one written batch holds.
      const std::size_t n = gen.chance(0.2) ? gen.uniform_index(50, 100) : gen.uniform_index(1, 10);
      for (std::size_t k = 0; k < n; ++k) {
        witness_item it;
        it.id = random_id(gen);
        it.gen = m.gen * 1000 + k;
        it.session = gen.chance(0.9) ? ses[gen.uniform_index(0, ses.size() - 1)] : random_id(gen);
        if (gen.chance(0.5)) it.pattern = pol[gen.uniform_index(0, pol.size() - 1)];
        op.items.push_back(it);
      }
      m.count = static_cast<std::uint32_t>(n);
    } else if (r < 95) {
      m.op = witness_retain;
      m.gen = (m.gen - std::min<std::uint64_t>(m.gen, 150)) * 1000;  // the cutoff: 150 operations ago, in witness time
    } else if (r < 99) {
      m.op = checkpoint;
    } else {
      m.op = compact;
    }
    send(&m, sizeof m);
    for (auto& it : op.items) send(&it, sizeof it);
    switch (m.op) {
      case policy_insert: {
        const auto e = vec(m.a, m.gen);
        ok(static_cast<bool>(policies.insert(policy_of(m.a, m.gen), m.gen % 5 != 0 ? e : std::vector<float>{})));
        pol.push_back(m.a);
        break;
      }
      case policy_confidence:
        ok(static_cast<bool>(policies.set_confidence(m.a, quality_of(m.gen), static_cast<std::int64_t>(m.gen))));
        break;
      case policy_params:
        ok(static_cast<bool>(policies.set_parameters(m.a, vec(m.a, m.gen + 7), {}, static_cast<std::int64_t>(m.gen))));
        break;
      case policy_remove:
        ok(static_cast<bool>(policies.remove(m.a)));
        forget(m.a);
        break;
      case session_insert:
        ok(static_cast<bool>(sessions.insert(session_of(m.a, m.gen), vec(m.a, m.gen))));
        ses.push_back(m.a);
        break;
      case session_turn:
        ok(static_cast<bool>(
            sessions.record_turn(m.a, static_cast<std::int64_t>(m.gen), st::kv_cache_ref{st::kv_tier::hot, m.gen, 1})));
        break;
      case session_expire: {
        auto gone = sessions.expire(static_cast<std::int64_t>(m.gen));
        ok(static_cast<bool>(gone));
        for (auto& id : *gone) forget(id);
        break;
      }
      case link_edge:
        ok(static_cast<bool>(
            store->link(m.a, m.b, st::edge_type::session_pattern, static_cast<float>(m.gen % 50) / 10.0f)));
        if (std::find(links.begin(), links.end(), std::pair{m.a, m.b}) == links.end()) links.emplace_back(m.a, m.b);
        break;
      case scale_edge:
        ok(static_cast<bool>(store->scale_weight(m.a, m.b, st::edge_type::session_pattern, 1.05f)));
        break;
      case witness_batch:
        for (auto& it : op.items) {
          const auto w = witness_of(it.id, it.gen, it.session, it.pattern);
          const auto q = vec(it.id, it.gen);
          const auto resp = it.gen % 3 != 0 ? vec(it.id, it.gen + 1) : std::vector<float>{};
          ok(static_cast<bool>(
              witness.push(st::witness_entry{w.request_id, w.session_id, w.pattern_id, w.time, q, resp, w.routing,
                                             w.latency, w.quality, w.error_code, w.error_message})));
        }
        // At most batch_max (100) entries: one atomic logged batch.
        ok(witness.flush().value_or(0) == op.items.size());
        break;
      case witness_retain: ok(static_cast<bool>(witness.remove_older_than(static_cast<std::int64_t>(m.gen)))); break;
      case checkpoint: ok(static_cast<bool>(store->checkpoint())); break;
      case compact: ok(static_cast<bool>(store->compact())); break;
      default: _exit(13);
    }
    message ack = m;
    ack.ack = 1;
    ack.count = 0;
    send(&ack, sizeof ack);
  }
}

// ---- the parent -----------------------------------------------------------------

void run_crash_trials(int trials, std::uint64_t seed) {
  const mem_support::scratch_dir dir("store_crash");
  ruvllm::test::rng gen(seed);
  state model;
  std::size_t acknowledged = 0, in_flight_applied = 0, in_flight_absent = 0;
  std::uint64_t gen0 = 1;
  for (int trial = 0; trial < trials; ++trial) {
    const auto mode = static_cast<st::durability>(trial % 3);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      child(dir.path(), fds[1], mode, seed * 1000 + static_cast<std::uint64_t>(trial), gen0);
    }
    ::close(fds[1]);
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    // Read while the child writes (a full pipe would stall it), then kill it.
    std::vector<char> bytes;
    char buf[1 << 16];
    auto drain = [&] {
      for (;;) {
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n <= 0) return;
        bytes.insert(bytes.end(), buf, buf + n);
      }
    };
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::microseconds(gen.uniform_index(30'000, 800'000));
    while (std::chrono::steady_clock::now() < deadline) {
      drain();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    drain();
    ::close(fds[0]);
    INFO("trial " << trial << " (mode " << static_cast<int>(mode) << "), child status " << status);
    REQUIRE(WIFSIGNALED(status));
    // Replay the messages: acknowledged operations into the model; the last
    // intent without its acknowledgement is the operation in flight.
    std::optional<operation> pending;
    std::size_t at = 0;
    std::uint64_t max_gen = gen0;
    while (bytes.size() - at >= sizeof(message)) {
      operation op;
      std::memcpy(&op.m, bytes.data() + at, sizeof(message));
      REQUIRE(op.m.magic == message{}.magic);
      const std::size_t need = sizeof(message) + op.m.count * sizeof(witness_item);
      if (bytes.size() - at < need) break;  // an intent cut off by the kill: never started
      for (std::uint32_t k = 0; k < op.m.count; ++k) {
        witness_item it;
        std::memcpy(&it, bytes.data() + at + sizeof(message) + k * sizeof(witness_item), sizeof it);
        op.items.push_back(it);
      }
      at += need;
      if (op.m.ack == 0) {
        REQUIRE(!pending);
        pending = std::move(op);
      } else {
        REQUIRE(pending);
        REQUIRE(pending->m.op == op.m.op);
        apply(model, *pending);
        max_gen = std::max(max_gen, pending->m.gen);
        ++acknowledged;
        pending.reset();
      }
    }
    // Recover and compare.
    auto store = store_t::open(dir.path(), options(mode));
    REQUIRE(store);
    REQUIRE(store->verify());
    const state got = read_state(*store);
    if (got == model) {
      if (pending) ++in_flight_absent;
    } else {
      REQUIRE(pending);
      INFO("in-flight operation " << pending->m.op << " with " << pending->items.size() << " witness entries");
      apply(model, *pending);
      REQUIRE(got == model);  // all of the operation, never a part of it
      ++in_flight_applied;
    }
    // Every stored embedding is found by searching for it.
    auto policies = st::policy_store<store_t>::open(*store).value();
    auto sessions = st::session_index<store_t>::open(*store, session_options()).value();
    auto witness = st::witness_log<store_t>::open(*store).value();
    for (auto& [id, v] : model.policy_vectors) {
      auto hits = policies.search(model.policies[id].type, v, 1, 0.0f, {.ef = 128}).value();
      REQUIRE(!hits.empty());
      CHECK(hits[0].id == id);
    }
    for (auto& [id, v] : model.session_vectors) {
      auto hits = sessions.similar(v, 1, {.ef = 128}).value();
      REQUIRE(!hits.empty());
      CHECK(hits[0].value.id == id);
    }
    std::size_t sampled = 0;
    for (auto& [id, v] : model.query_vectors) {
      if (++sampled > 60) break;
      auto hits = witness.similar_queries(v, 1, {.ef = 128}).value();
      REQUIRE(!hits.empty());
      CHECK(hits[0].entry.request_id == id);
    }
    gen0 = max_gen + 1;  // the next child continues the generations (and times)
  }
  INFO("acknowledged " << acknowledged << ", in flight applied " << in_flight_applied << ", absent "
                       << in_flight_absent);
  CHECK(acknowledged > static_cast<std::size_t>(trials));
  CHECK(!model.witness.empty());
}

}  // namespace

TEST_CASE("memory_store and roles keep every acknowledged write across kill -9", "[store][crash]") {
  run_crash_trials(8, 161);
}

TEST_CASE("memory_store and roles across kill -9, 60 trials", "[store][crash][slow]") { run_crash_trials(60, 162); }

}  // namespace store_crash_test
