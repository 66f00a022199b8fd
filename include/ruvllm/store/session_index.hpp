#ifndef RUVLLM_STORE_SESSION_INDEX_HPP
#define RUVLLM_STORE_SESSION_INDEX_HPP

// session_index<Store, Cipher>: multi-turn session state (Ruvector's role
// B): the session's state, where its KV cache lives, the active adapter,
// the turn count, the user and the last activity; found by id on every
// request (a hash lookup), by user, and by similarity of the conversation
// context; stale sessions expire by last activity.
//
// Storage: one record per session in a memory_store (kind session; time =
// last activity, so expiry walks the (kind, time) index; group = a 64-bit
// hash of the user id, so lookup by user walks the (kind, group) index;
// payload = the session's fields) and its context embedding in one vector
// space (role_space::session by default).
//
// Encryption at rest: with a key configured, each payload is sealed with
// XChaCha20-Poly1305 (libsodium's IETF AEAD; a fresh random 192-bit nonce
// per write, so nonces never repeat in practice) and the associated data
// binds the record id, its last-activity time and its user hash, so a
// payload moved to another record, or a tampered time, fails to open. The
// user hash is then keyed BLAKE2b of the user id, so the store does not
// reveal which sessions share a user to someone without the key. Not
// encrypted: the context embedding (the index must compare it), the
// last-activity time and the keyed user hash. A wrong key or any changed
// byte gives errc::corrupt_data ("failed authentication"), never garbage;
// a plain payload where a key is configured is refused the same way (a
// downgrade is an attack), as is a sealed payload without a key. Building
// without libsodium (RUVLLM_WITH_SODIUM undefined) selects cipher::none,
// with which configuring a key is errc::unsupported.
//
// Template parameters: Store, a memory_store; Cipher, a SessionCipher
// (cipher::xchacha20poly1305 when libsodium is compiled in, else
// cipher::none).
// Thread-safety: the store's (any thread; lookups concurrent with one
// writer); the index itself holds the store pointer, its options and the
// key, all immutable after open. Updates are read-modify-write under the
// store's writer mutex, so concurrent turns of one session are not lost.
// Allocation: every call allocates (records, decoded strings).

#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(RUVLLM_WITH_SODIUM)
#include <sodium.h>
#endif

#include "ruvllm/core/byte_reader.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/store/memory_store.hpp"
#include "ruvllm/store/records.hpp"

namespace ruvllm::store {

/// A 256-bit session encryption key.
using session_key = std::array<std::uint8_t, 32>;

/// The authenticated cipher of session payloads: `available` says whether
/// it can encrypt; when it can, init() prepares it once, seal() appends
/// nonce + ciphertext + tag of a plaintext bound to associated data, open()
/// reverses it (false when authentication fails), and keyed_hash() is a
/// 64-bit keyed hash.
template <class C>
concept SessionCipher = requires {
  { C::available } -> std::convertible_to<bool>;
}
&&(!C::available || requires(const session_key& key, std::span<const std::byte> bytes, std::vector<std::byte>& out) {
  { C::init() } -> std::same_as<result<void>>;
  C::seal(key, bytes, bytes, out);
  { C::open(key, bytes, bytes, out) } -> std::same_as<bool>;
  { C::keyed_hash(key, bytes) } -> std::same_as<std::uint64_t>;
});

namespace cipher {

/// No cipher compiled in: payloads are stored plain; configuring a key is
/// errc::unsupported.
struct none {
  static constexpr bool available = false;
};

#if defined(RUVLLM_WITH_SODIUM)
/// XChaCha20-Poly1305 (libsodium, IETF construction): 24-byte random nonce,
/// 16-byte tag; keyed BLAKE2b for the user hash.
struct xchacha20poly1305 {
  static constexpr bool available = true;
  static constexpr std::size_t nonce_bytes = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
  static constexpr std::size_t tag_bytes = crypto_aead_xchacha20poly1305_ietf_ABYTES;
  static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == std::tuple_size_v<session_key>);

  [[nodiscard]] static result<void> init() {
    if (sodium_init() < 0) return make_error(errc::unsupported, "libsodium failed to initialize");
    return {};
  }
  static void seal(const session_key& key, std::span<const std::byte> ad, std::span<const std::byte> plain,
                   std::vector<std::byte>& out) {
    const std::size_t at = out.size();
    out.resize(at + nonce_bytes + plain.size() + tag_bytes);
    auto* nonce = reinterpret_cast<unsigned char*>(out.data() + at);
    randombytes_buf(nonce, nonce_bytes);
    unsigned long long written = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(
        nonce + nonce_bytes, &written, reinterpret_cast<const unsigned char*>(plain.data()), plain.size(),
        reinterpret_cast<const unsigned char*>(ad.data()), ad.size(), nullptr, nonce, key.data());
  }
  [[nodiscard]] static bool open(const session_key& key, std::span<const std::byte> ad,
                                 std::span<const std::byte> sealed, std::vector<std::byte>& out) {
    if (sealed.size() < nonce_bytes + tag_bytes) return false;
    const auto* nonce = reinterpret_cast<const unsigned char*>(sealed.data());
    out.resize(sealed.size() - nonce_bytes - tag_bytes);
    unsigned long long written = 0;
    return crypto_aead_xchacha20poly1305_ietf_decrypt(reinterpret_cast<unsigned char*>(out.data()), &written, nullptr,
                                                      nonce + nonce_bytes, sealed.size() - nonce_bytes,
                                                      reinterpret_cast<const unsigned char*>(ad.data()), ad.size(),
                                                      nonce, key.data()) == 0;
  }
  [[nodiscard]] static std::uint64_t keyed_hash(const session_key& key, std::span<const std::byte> bytes) {
    unsigned char h[crypto_generichash_BYTES_MIN];
    crypto_generichash(h, sizeof h, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), key.data(),
                       key.size());
    std::uint64_t out;
    std::memcpy(&out, h, sizeof out);
    return out;
  }
};
#endif

}  // namespace cipher

#if defined(RUVLLM_WITH_SODIUM)
using default_session_cipher = cipher::xchacha20poly1305;
#else
using default_session_cipher = cipher::none;
#endif

/// Lifecycle of a session.
enum class session_state : std::uint8_t { active = 1, idle = 2, suspended = 3, closed = 4 };

/// Where a session's KV cache lives.
enum class kv_tier : std::uint8_t { none = 0, hot = 1, warm = 2, cold = 3 };

/// A reference to a session's KV cache: the tier holding it, the cache's
/// sequence id (kv::seq_id) and how many tokens it holds.
struct kv_cache_ref {
  kv_tier tier = kv_tier::none;
  std::uint64_t sequence = 0;
  std::uint32_t cached_tokens = 0;
  friend bool operator==(const kv_cache_ref&, const kv_cache_ref&) = default;
};

/// A session as stored (the context embedding is passed separately).
struct session {
  uuid id{};
  std::string user_id;
  session_state state = session_state::active;
  kv_cache_ref kv{};
  std::string active_adapter;  // empty: none
  std::uint32_t turn_count = 0;
  timestamp_ms last_activity = 0;  // ms UTC
  friend bool operator==(const session&, const session&) = default;
};

/// A session found by context similarity.
struct session_hit {
  session value;
  float distance = 0.0f;
};

/// Options of a session_index.
struct session_index_options {
  /// The store's vector space of session context embeddings.
  std::uint32_t space = role_space::session;
  /// Encrypt payloads at rest with this key (see the file comment).
  std::optional<session_key> key{};
};

namespace detail {
// FNV-1a over the bytes, then a 64-bit finalizer (FNV alone mixes the last
// bytes poorly): the unkeyed user hash.
[[nodiscard]] inline std::uint64_t text_hash(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}
}  // namespace detail

/// Session state over a memory_store; see the file comment.
template <class Store, SessionCipher Cipher = default_session_cipher>
class session_index {
 public:
  /// Largest user id and adapter name, in bytes.
  static constexpr std::size_t max_text_bytes = 4096;

  /// A session index over store (which must outlive it). Errors:
  /// invalid_argument (the space does not exist), unsupported (a key
  /// without a cipher compiled in, or libsodium failing to initialize).
  [[nodiscard]] static result<session_index> open(Store& store, session_index_options options = {}) {
    if (options.space >= store.space_count())
      return make_error(errc::invalid_argument, "session space ", options.space, " >= the store's space count ",
                        store.space_count());
    if (options.key) {
      if constexpr (!Cipher::available) {
        return make_error(errc::unsupported,
                          "session encryption needs libsodium: build with RUVLLM_WITH_SODIUM (a key was configured)");
      } else {
        RUVLLM_TRY(Cipher::init());
      }
    }
    return session_index(store, std::move(options));
  }

  session_index(session_index&& o) noexcept : store_(o.store_), options_(std::move(o.options_)) { o.wipe(); }
  session_index& operator=(session_index&& o) noexcept {
    if (this != &o) {
      wipe();
      store_ = o.store_;
      options_ = std::move(o.options_);
      o.wipe();
    }
    return *this;
  }
  session_index(const session_index&) = delete;
  session_index& operator=(const session_index&) = delete;
  ~session_index() { wipe(); }

  /// Whether payloads are encrypted.
  [[nodiscard]] bool encrypted() const noexcept { return options_.key.has_value(); }

  /// Stores a new session with its context embedding (empty: none).
  /// Errors: already_exists, invalid_argument, io_error.
  [[nodiscard]] result<void> insert(const session& s, std::span<const float> context = {}) {
    RUVLLM_TRY(check(s));
    const embedding_ref e{options_.space, context};
    RUVLLM_TRY(store_->insert(to_record(s), as_span(e)));
    return {};
  }

  /// Replaces a stored session and, when given, its context embedding.
  /// Errors: not_found, invalid_argument, io_error.
  [[nodiscard]] result<void> update(const session& s, std::span<const float> context = {}) {
    RUVLLM_TRY(check(s));
    const embedding_ref e{options_.space, context};
    return store_->modify(
        s.id,
        [&](record& r) -> result<void> {
          if (r.kind != record_kind::session) return not_a_session(s.id);
          r = to_record(s);
          return {};
        },
        as_span(e));
  }

  /// The per-request update: one more turn at `now`, the KV cache now at
  /// kv, state active. Errors: not_found, corrupt_data (payload fails
  /// authentication), io_error.
  [[nodiscard]] result<void> record_turn(const uuid& id, timestamp_ms now, const kv_cache_ref& kv) {
    return store_->modify(id, [&](record& r) -> result<void> {
      if (r.kind != record_kind::session) return not_a_session(id);
      RUVLLM_TRY_ASSIGN(auto s, from_record(r));
      s.turn_count = s.turn_count == std::numeric_limits<std::uint32_t>::max() ? s.turn_count : s.turn_count + 1;
      s.last_activity = now;
      s.kv = kv;
      s.state = session_state::active;
      RUVLLM_TRY(check(s));
      r = to_record(s);
      return {};
    });
  }

  /// The session with id: one hash lookup and one decryption. Errors:
  /// not_found, corrupt_data (wrong key, tampered payload, not a session).
  [[nodiscard]] result<session> get(const uuid& id) const {
    return store_->read([&](const record_graph& g) -> result<session> {
      const record* r = g.get(id);
      if (r == nullptr) return make_error(errc::not_found, "session ", to_string(id));
      if (r->kind != record_kind::session) return not_a_session(id);
      return from_record(*r);
    });
  }

  /// Every session of a user, by id. Errors: as get.
  [[nodiscard]] result<std::vector<session>> by_user(std::string_view user_id) const {
    const std::uint64_t group = user_hash(user_id);
    return store_->read([&](const record_graph& g) -> result<std::vector<session>> {
      std::vector<session> out;
      std::optional<error> failure;
      g.visit_group(record_kind::session, group, [&](const record& r) {
        auto s = from_record(r);
        if (!s) {
          failure = std::move(s).error();
          return false;
        }
        if (s->user_id == user_id) out.push_back(std::move(*s));  // hash collisions are filtered here
        return true;
      });
      if (failure) return std::move(*failure);
      return out;
    });
  }

  /// The k sessions whose context is nearest to context, closest first.
  /// Errors: invalid_argument (dimension), as get.
  [[nodiscard]] result<std::vector<session_hit>> similar(std::span<const float> context, std::size_t k,
                                                         search_params params = {}) const {
    std::vector<session_hit> out;
    std::optional<error> failure;
    RUVLLM_TRY(store_->visit_nearest(
        options_.space, context, k, [](const record& r) { return r.kind == record_kind::session; },
        [&](const record& r, float d) {
          if (failure) return;
          auto s = from_record(r);
          if (!s)
            failure = std::move(s).error();
          else
            out.push_back(session_hit{std::move(*s), d});
        },
        params));
    if (failure) return std::move(*failure);
    return out;
  }

  /// Ids of the sessions whose last activity is before cutoff, oldest first.
  [[nodiscard]] std::vector<uuid> stale(timestamp_ms cutoff) const {
    return store_->read([&](const record_graph& g) {
      return g.in_time_range(record_kind::session, std::numeric_limits<timestamp_ms>::min(), cutoff);
    });
  }

  /// Removes every session whose last activity is before cutoff (with its
  /// edges and context embedding) and returns their ids, oldest first. Each
  /// logged batch removes up to `batch` sessions atomically. Errors: io_error
  /// (the sessions of earlier batches stay removed).
  [[nodiscard]] result<std::vector<uuid>> expire(timestamp_ms cutoff, std::size_t batch = 4096) {
    std::vector<uuid> removed;
    for (;;) {
      std::size_t n = 0;
      RUVLLM_TRY(store_->commit_with([&](const record_graph& g, memory_batch& b) -> result<void> {
        g.visit_time_range(record_kind::session, std::numeric_limits<timestamp_ms>::min(), cutoff,
                           [&](const record& r) {
                             b.remove(r.id);
                             removed.push_back(r.id);
                             return ++n < batch;
                           });
        return {};
      }));
      if (n < batch) return removed;
    }
  }

  /// Removes a session. Errors: not_found, io_error.
  [[nodiscard]] result<void> remove(const uuid& id) {
    return store_->commit_with([&](const record_graph& g, memory_batch& b) -> result<void> {
      const record* r = g.get(id);
      if (r == nullptr) return make_error(errc::not_found, "session ", to_string(id));
      if (r->kind != record_kind::session) return not_a_session(id);
      b.remove(id);
      return {};
    });
  }

  /// Sessions stored.
  [[nodiscard]] std::size_t size() const {
    return store_->read([](const record_graph& g) { return g.count(record_kind::session); });
  }

  /// The group (user hash) sessions of user_id are stored under.
  [[nodiscard]] std::uint64_t user_hash(std::string_view user_id) const {
    if constexpr (Cipher::available) {
      if (options_.key)
        return Cipher::keyed_hash(*options_.key, std::as_bytes(std::span<const char>(user_id.data(), user_id.size())));
    }
    return detail::text_hash(user_id);
  }

 private:
  static constexpr std::byte plain_format{0};
  static constexpr std::byte sealed_format{1};
  static constexpr std::uint8_t body_version = 1;

  session_index(Store& store, session_index_options options) noexcept : store_(&store), options_(std::move(options)) {}

  void wipe() noexcept {
    if (!options_.key) return;
    volatile std::uint8_t* p = options_.key->data();
    for (std::size_t i = 0; i < options_.key->size(); ++i) p[i] = 0;
    options_.key.reset();
  }

  [[nodiscard]] static error not_a_session(const uuid& id) {
    return make_error(errc::invalid_argument, "record ", to_string(id), " is not a session");
  }

  [[nodiscard]] static std::span<const embedding_ref> as_span(const embedding_ref& e) noexcept {
    return e.vector.empty() ? std::span<const embedding_ref>{} : std::span<const embedding_ref>(&e, 1);
  }

  [[nodiscard]] static result<void> check(const session& s) {
    if (s.id.is_nil()) return make_error(errc::invalid_argument, "session id is nil");
    const auto state = static_cast<std::uint8_t>(s.state);
    if (state < 1 || state > 4) return make_error(errc::invalid_argument, "session state ", state, " is not 1 .. 4");
    if (static_cast<std::uint8_t>(s.kv.tier) > 3)
      return make_error(errc::invalid_argument, "KV tier ", static_cast<unsigned>(s.kv.tier), " is not 0 .. 3");
    if (s.user_id.size() > max_text_bytes)
      return make_error(errc::invalid_argument, "user id of ", s.user_id.size(), " bytes exceeds ", max_text_bytes);
    if (s.active_adapter.size() > max_text_bytes)
      return make_error(errc::invalid_argument, "adapter name of ", s.active_adapter.size(), " bytes exceeds ",
                        max_text_bytes);
    return {};
  }

  // Associated data: format, id, time and group of the record.
  [[nodiscard]] static std::array<std::byte, 33> associated(const record& r, std::byte format) noexcept {
    std::array<std::byte, 33> ad{};
    ad[0] = format;
    std::memcpy(ad.data() + 1, &r.id.hi, 8);
    std::memcpy(ad.data() + 9, &r.id.lo, 8);
    std::memcpy(ad.data() + 17, &r.time, 8);
    std::memcpy(ad.data() + 25, &r.group, 8);
    return ad;
  }

  [[nodiscard]] record to_record(const session& s) const {
    record r;
    r.id = s.id;
    r.kind = record_kind::session;
    r.time = s.last_activity;
    r.group = user_hash(s.user_id);
    std::vector<std::byte> body;
    body.reserve(32 + s.user_id.size() + s.active_adapter.size());
    detail::put_bytes(body, body_version);
    detail::put_bytes(body, static_cast<std::uint8_t>(s.state));
    detail::put_bytes(body, static_cast<std::uint8_t>(s.kv.tier));
    detail::put_bytes(body, s.kv.sequence);
    detail::put_bytes(body, s.kv.cached_tokens);
    detail::put_bytes(body, s.turn_count);
    detail::put_text(body, s.user_id);
    detail::put_text(body, s.active_adapter);
    if constexpr (Cipher::available) {
      if (options_.key) {
        r.payload.push_back(sealed_format);
        const auto ad = associated(r, sealed_format);
        Cipher::seal(*options_.key, ad, body, r.payload);
        return r;
      }
    }
    r.payload.push_back(plain_format);
    r.payload.insert(r.payload.end(), body.begin(), body.end());
    return r;
  }

  [[nodiscard]] result<session> from_record(const record& r) const {
    if (r.payload.empty()) return make_error(errc::corrupt_data, "session ", to_string(r.id), " has no payload");
    const std::byte format = r.payload[0];
    const auto rest = std::span<const std::byte>(r.payload).subspan(1);
    std::vector<std::byte> plain;
    std::span<const std::byte> body;
    if (format == sealed_format) {
      if (!options_.key)
        return make_error(errc::corrupt_data, "session ", to_string(r.id), " is encrypted and no key is configured");
      if constexpr (Cipher::available) {
        const auto ad = associated(r, sealed_format);
        if (!Cipher::open(*options_.key, ad, rest, plain))
          return make_error(errc::corrupt_data, "session ", to_string(r.id),
                            " failed authentication (wrong key or tampered data)");
        body = plain;
      } else {
        return make_error(errc::unsupported, "no session cipher is compiled in");
      }
    } else if (format == plain_format) {
      if (options_.key)
        return make_error(errc::corrupt_data, "session ", to_string(r.id),
                          " is stored unencrypted but a key is configured (refused: it could be a downgrade)");
      body = rest;
    } else {
      return make_error(errc::corrupt_data, "session ", to_string(r.id), " has payload format ",
                        static_cast<unsigned>(format));
    }
    session s;
    s.id = r.id;
    s.last_activity = r.time;
    byte_reader b(body, "session payload");
    auto fail = [&](const error& e) {
      return make_error(errc::corrupt_data, "session ", to_string(r.id), ": ", e.message());
    };
    auto version = b.read<std::uint8_t>("version");
    if (!version) return fail(version.error());
    if (*version != body_version) return fail(make_error(errc::corrupt_data, "payload version ", *version));
    auto state = b.read<std::uint8_t>("state");
    auto tier = b.read<std::uint8_t>("KV tier");
    auto seq = b.read<std::uint64_t>("KV sequence");
    auto tokens = b.read<std::uint32_t>("cached tokens");
    auto turns = b.read<std::uint32_t>("turn count");
    if (!state || !tier || !seq || !tokens || !turns) return fail(make_error(errc::corrupt_data, "truncated"));
    s.state = static_cast<session_state>(*state);
    s.kv = kv_cache_ref{static_cast<kv_tier>(*tier), *seq, *tokens};
    s.turn_count = *turns;
    auto user = detail::read_text(b, "user id");
    if (!user) return fail(user.error());
    s.user_id.assign(*user);
    auto adapter = detail::read_text(b, "adapter");
    if (!adapter) return fail(adapter.error());
    s.active_adapter.assign(*adapter);
    if (b.remaining() != 0) return fail(make_error(errc::corrupt_data, b.remaining(), " trailing bytes"));
    if (auto ok = check(s); !ok) return fail(ok.error());
    return s;
  }

  Store* store_;
  session_index_options options_;
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_SESSION_INDEX_HPP
