#ifndef RUVLLM_STORE_HNSW_STORE_HPP
#define RUVLLM_STORE_HNSW_STORE_HPP

// hnsw_store<Metric, Precision>: a durable hnsw_index in a directory.
//
//   <dir>/index.hnsw   the last checkpoint (hnsw_format.hpp), holding every
//                      logged write up to its header's sequence number
//   <dir>/index.wal    the write-ahead log since then (wal.hpp)
//
// Every mutation is validated, appended to the log (durable before the call
// returns under durability::every_write), then applied to the in-memory
// index; opening loads the checkpoint (every checksum and invariant
// verified: a corrupt checkpoint is an error, never a served graph) and
// replays the log records after its sequence. checkpoint() saves a new
// index.hnsw (temporary file, fsync, rename) and then starts an empty log;
// a crash between the two is harmless because replay skips records the
// checkpoint already holds. The store checkpoints by itself when the log
// passes options.checkpoint_bytes, and compact() rebuilds the graph without
// tombstones and checkpoints.
//
// Concurrency: writers are serialized by the store's mutex, so the log order
// is the apply order; searches go straight to the index (its shared lock)
// and run alongside a writer's logging. Errors: ruvllm::result everywhere.

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ruvllm/core/error.hpp"
#include "ruvllm/store/hnsw_index.hpp"
#include "ruvllm/store/wal.hpp"

namespace ruvllm::store {

/// Options of an hnsw_store.
struct hnsw_store_options {
  /// Parameters of a new index (ignored when the directory holds one).
  hnsw_options index{};
  wal_options wal{};
  /// Checkpoint automatically once the log exceeds this many bytes (0: never).
  std::uint64_t checkpoint_bytes = 64ull << 20;
};

namespace detail {
enum class store_op : std::uint32_t { insert = 1, upsert = 2, remove = 3 };
}  // namespace detail

/// A durable vector index in a directory; see the file comment.
template <Metric M, VectorPrecision P, Backend B = backend::highway>
class hnsw_store {
 public:
  using index_type = hnsw_index<M, P, B>;

  /// Opens or creates the store in dir (created when missing) and recovers
  /// it. Errors: io_error, corrupt_data naming the file and offset.
  [[nodiscard]] static result<hnsw_store> open(std::string_view dir, const hnsw_store_options& options) {
    hnsw_store s;
    s.dir_.assign(dir);
    s.options_ = options;
    if (::mkdir(s.dir_.c_str(), 0755) != 0 && errno != EEXIST) return detail::os_error("cannot create", dir);
    const std::string index_path = s.index_path();
    if (file_exists(index_path)) {
      RUVLLM_TRY_ASSIGN(auto loaded, index_type::load(index_path));
      s.index_ = std::make_unique<index_type>(std::move(loaded));
    } else {
      RUVLLM_TRY_ASSIGN(auto created, index_type::create(options.index));
      s.index_ = std::make_unique<index_type>(std::move(created));
    }
    const std::uint64_t done = s.index_->sequence();
    index_type& index = *s.index_;
    const std::uint32_t dim = index.dimension();
    const std::string wal_path = s.wal_path();
    auto apply = [&](std::uint64_t seq, std::uint32_t type, std::span<const std::byte> payload) -> result<void> {
      if (seq <= done) return {};  // already in the checkpoint
      std::uint64_t key = 0;
      if (payload.size() < 8) return make_error(errc::corrupt_data, "log record ", seq, " is too short").at(wal_path);
      std::memcpy(&key, payload.data(), 8);
      switch (static_cast<detail::store_op>(type)) {
        case detail::store_op::insert:
        case detail::store_op::upsert: {
          if (payload.size() != 8 + std::size_t{dim} * 4)
            return make_error(errc::corrupt_data, "log record ", seq, " has ", payload.size(), " bytes").at(wal_path);
          std::vector<float> v(dim);
          std::memcpy(v.data(), payload.data() + 8, std::size_t{dim} * 4);
          auto r = index.upsert(key, v);
          if (!r) return std::move(r).error().at(wal_path);
          return {};
        }
        case detail::store_op::remove: {
          auto r = index.remove(key);
          if (!r && r.error().code() != errc::not_found) return std::move(r).error().at(wal_path);
          return {};
        }
      }
      return make_error(errc::corrupt_data, "log record ", seq, " has unknown type ", type).at(wal_path);
    };
    RUVLLM_TRY_ASSIGN(s.wal_, write_ahead_log::open(wal_path, options.wal, done, apply));
    s.mutex_ = std::make_unique<std::mutex>();
    return s;
  }

  hnsw_store(hnsw_store&&) noexcept = default;
  hnsw_store& operator=(hnsw_store&&) noexcept = default;
  hnsw_store(const hnsw_store&) = delete;
  hnsw_store& operator=(const hnsw_store&) = delete;
  /// Syncs the log (errors are lost here; call sync() to see them).
  ~hnsw_store() {
    if (mutex_) (void)wal_.sync();
  }

  /// The in-memory index, for searches (thread-safe, see hnsw_index).
  [[nodiscard]] const index_type& index() const noexcept { return *index_; }

  /// Logs and applies an insert. Errors: already_exists, invalid_argument, io_error.
  [[nodiscard]] result<void> insert(std::uint64_t key, std::span<const float> v) {
    return write(detail::store_op::insert, key, v);
  }
  /// Logs and applies an insert-or-update.
  [[nodiscard]] result<void> upsert(std::uint64_t key, std::span<const float> v) {
    return write(detail::store_op::upsert, key, v);
  }
  /// Logs and applies a removal. Errors: not_found, io_error.
  [[nodiscard]] result<void> remove(std::uint64_t key) {
    std::lock_guard g(*mutex_);
    if (!index_->contains(key)) return make_error(errc::not_found, "key ", key, " is not in the store");
    std::byte payload[8];
    std::memcpy(payload, &key, 8);
    RUVLLM_TRY(wal_.append(static_cast<std::uint32_t>(detail::store_op::remove), payload));
    RUVLLM_TRY(index_->remove(key));
    return maybe_checkpoint();
  }

  /// Forces every logged write to stable storage (group_commit, none).
  [[nodiscard]] result<void> sync() {
    std::lock_guard g(*mutex_);
    return wal_.sync();
  }

  /// Saves index.hnsw with every logged write and starts an empty log.
  [[nodiscard]] result<void> checkpoint() {
    std::lock_guard g(*mutex_);
    return checkpoint_locked();
  }

  /// Rebuilds the graph without tombstones, then checkpoints.
  [[nodiscard]] result<void> compact(thread_pool* pool = nullptr) {
    std::lock_guard g(*mutex_);
    RUVLLM_TRY(index_->compact(pool));
    return checkpoint_locked();
  }

  /// Checks the index (invariants) and, when present, index.hnsw's checksums.
  [[nodiscard]] result<void> verify() const {
    RUVLLM_TRY(index_->verify());
    if (file_exists(index_path())) {
      RUVLLM_TRY_ASSIGN(auto view, index_type::open_view(index_path()));
      RUVLLM_TRY(view.verify());
    }
    return {};
  }

  /// Sequence number of the last logged write.
  [[nodiscard]] std::uint64_t sequence() const {
    std::lock_guard g(*mutex_);
    return wal_.last_sequence();
  }
  [[nodiscard]] std::string index_path() const { return dir_ + "/index.hnsw"; }
  [[nodiscard]] std::string wal_path() const { return dir_ + "/index.wal"; }

 private:
  hnsw_store() = default;

  [[nodiscard]] result<void> write(detail::store_op op, std::uint64_t key, std::span<const float> v) {
    const std::uint32_t dim = index_->dimension();
    if (v.size() != dim) return make_error(errc::invalid_argument, "vector dimension ", v.size(), " != ", dim);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i])) return make_error(errc::invalid_argument, "vector element ", i, " is not finite");
    std::lock_guard g(*mutex_);
    if (op == detail::store_op::insert && index_->contains(key))
      return make_error(errc::already_exists, "key ", key, " is already in the store");
    payload_.resize(8 + v.size_bytes());
    std::memcpy(payload_.data(), &key, 8);
    std::memcpy(payload_.data() + 8, v.data(), v.size_bytes());
    RUVLLM_TRY(wal_.append(static_cast<std::uint32_t>(op), payload_));
    RUVLLM_TRY(index_->upsert(key, v));
    return maybe_checkpoint();
  }

  [[nodiscard]] result<void> maybe_checkpoint() {
    if (options_.checkpoint_bytes != 0 && wal_.bytes() > options_.checkpoint_bytes) return checkpoint_locked();
    return {};
  }

  [[nodiscard]] result<void> checkpoint_locked() {
    const std::uint64_t seq = wal_.last_sequence();
    RUVLLM_TRY(wal_.sync());
    RUVLLM_TRY(index_->save(index_path(), seq));
    return wal_.reset(seq);
  }

  std::string dir_;
  hnsw_store_options options_{};
  std::unique_ptr<index_type> index_;
  write_ahead_log wal_;
  std::vector<std::byte> payload_;
  std::unique_ptr<std::mutex> mutex_;
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_HNSW_STORE_HPP
