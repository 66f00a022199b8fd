#ifndef RUVLLM_STORE_WAL_HPP
#define RUVLLM_STORE_WAL_HPP

// write_ahead_log: the append-only log through which every mutation of a
// store passes before it is applied, so that after a crash (kill -9 at any
// instant) reopening replays every acknowledged write.
//
// Format (version 1, little-endian):
//   header, 32 bytes: "RUVWAL01", u32 version (1), u32 0, u64 base sequence
//     (the sequence the log starts after), u32 0, u32 CRC-32C of bytes 0..28
//   records, back to back:
//     u32 payload bytes (<= wal_max_payload)
//     u32 CRC-32C of everything after this field (sequence .. payload end)
//     u64 sequence (previous + 1; the first is base + 1)
//     u32 type (the owner's operation code), u32 0
//     payload
// Recovery reads records while each is complete, has a valid CRC and the
// next sequence number; the first that is not marks the torn tail of a
// crashed append and the file is truncated there. A record is acknowledged
// only after its append returned, which under durability::every_write
// includes fdatasync, so every acknowledged record precedes the tail.
//
// Durability (wal_options::mode):
//   every_write  fdatasync before append() returns (acknowledged = durable)
//   group_commit fdatasync once group_records appends or group_interval have
//                accumulated, and on sync(); a crash loses at most that group
//   none         the OS decides; sync() still forces
// A new log (the first of a store, or reset()'s after a checkpoint) is
// written with the same write-temporary, fsync, rename sequence as every
// full save.
//
// A failed write is cut off the file before append() returns its error; a
// failed fdatasync (or a failed cut) leaves the log refusing further
// appends until it is reopened, because the kernel may have dropped pages
// that earlier appends wrote.
//
// Thread-safety: none; the owning store serializes appends. Allocation:
// append() reuses one growing buffer.

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ruvllm/core/byte_reader.hpp"
#include "ruvllm/core/checksum.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/mapped_file.hpp"
#include "ruvllm/store/file_io.hpp"

namespace ruvllm::store {

/// When appended records reach stable storage.
enum class durability : std::uint8_t { every_write, group_commit, none };

/// Options of a write_ahead_log.
struct wal_options {
  durability mode = durability::every_write;
  /// group_commit: sync after this many appends ...
  std::uint32_t group_records = 64;
  /// ... or once this much time has passed since the first unsynced append.
  std::chrono::milliseconds group_interval{10};
};

/// Counters of a write_ahead_log since it was opened (the durability mode's
/// contract is visible in them: every_write syncs once per append,
/// group_commit once per group, none only on sync()).
struct wal_stats {
  std::uint64_t appends = 0;
  std::uint64_t syncs = 0;  // fdatasync calls that flushed appended records
  std::uint64_t bytes_appended = 0;
};

inline constexpr std::array<char, 8> wal_magic = {'R', 'U', 'V', 'W', 'A', 'L', '0', '1'};
inline constexpr std::uint32_t wal_format_version = 1;
inline constexpr std::size_t wal_header_bytes = 32;
inline constexpr std::size_t wal_record_header_bytes = 24;
/// Largest payload of one record (a guard against a corrupt length).
inline constexpr std::uint32_t wal_max_payload = 64u << 20;

/// The append-only log; see the file comment.
class write_ahead_log {
 public:
  write_ahead_log() = default;

  /// Opens (creating when missing, with base sequence `base`) the log at
  /// path, calls apply(sequence, type, payload) for every valid record in
  /// order, truncates a torn tail, and positions for appends. apply returns
  /// result<void>; its error stops the open. Errors: io_error, corrupt_data
  /// (bad header) naming the file and offset.
  template <class Apply>
  [[nodiscard]] static result<write_ahead_log> open(std::string_view path, wal_options options, std::uint64_t base,
                                                    Apply&& apply) {
    write_ahead_log log;
    log.path_.assign(path);
    log.options_ = options;
    if (!file_exists(path)) RUVLLM_TRY(create_empty(path, base));
    std::uint64_t valid_end = wal_header_bytes;
    {
      RUVLLM_TRY_ASSIGN(auto map, mapped_file::open(path));
      byte_reader r(map.bytes(), path);
      RUVLLM_TRY_ASSIGN(auto head, r.read_bytes(wal_header_bytes, "write-ahead log header"));
      if (std::memcmp(head.data(), wal_magic.data(), wal_magic.size()) != 0)
        return make_error(errc::corrupt_data, "not a write-ahead log (bad magic)").at(path, 0);
      std::uint32_t version, crc;
      std::memcpy(&version, head.data() + 8, 4);
      std::memcpy(&log.base_, head.data() + 16, 8);
      std::memcpy(&crc, head.data() + 28, 4);
      if (crc32c(head.first(28)) != crc) return make_error(errc::corrupt_data, "log header checksum").at(path, 28);
      if (version != wal_format_version)
        return make_error(errc::unsupported, "log version ", version, " != ", wal_format_version).at(path, 8);
      log.last_ = log.base_;
      while (r.remaining() >= wal_record_header_bytes) {
        const std::uint64_t at = r.file_offset();
        RUVLLM_TRY_ASSIGN(auto rh, r.read_bytes(wal_record_header_bytes, "record header"));
        std::uint32_t len, rcrc, type;
        std::uint64_t seq;
        std::memcpy(&len, rh.data(), 4);
        std::memcpy(&rcrc, rh.data() + 4, 4);
        std::memcpy(&seq, rh.data() + 8, 8);
        std::memcpy(&type, rh.data() + 16, 4);
        if (len > wal_max_payload || len > r.remaining() || seq != log.last_ + 1) break;
        RUVLLM_TRY_ASSIGN(auto payload, r.read_bytes(len, "record payload"));
        const std::uint32_t computed = crc32c(payload, crc32c(rh.subspan(8)));
        if (computed != rcrc) break;
        RUVLLM_TRY(apply(seq, type, payload));
        log.last_ = seq;
        valid_end = at + wal_record_header_bytes + len;
      }
    }
    RUVLLM_TRY_ASSIGN(log.file_, open_file(path, O_WRONLY));
    if (::ftruncate(log.file_.get(), static_cast<off_t>(valid_end)) != 0)
      return detail::os_error("cannot truncate the torn tail of", path);
    if (::lseek(log.file_.get(), static_cast<off_t>(valid_end), SEEK_SET) < 0)
      return detail::os_error("cannot seek in", path);
    RUVLLM_TRY(sync_file(log.file_, path));
    log.bytes_ = valid_end;
    return log;
  }

  /// Appends one record with the next sequence number and returns it once
  /// the durability mode is satisfied. Errors: io_error (the record may be
  /// partly written; recovery drops it), invalid_argument (payload too big).
  [[nodiscard]] result<std::uint64_t> append(std::uint32_t type, std::span<const std::byte> payload) {
    if (payload.size() > wal_max_payload)
      return make_error(errc::invalid_argument, "log payload of ", payload.size(), " bytes exceeds ", wal_max_payload);
    const std::uint64_t seq = last_ + 1;
    buffer_.resize(wal_record_header_bytes + payload.size());
    const auto len = static_cast<std::uint32_t>(payload.size());
    const std::uint32_t zero = 0;
    std::memcpy(buffer_.data(), &len, 4);
    std::memcpy(buffer_.data() + 8, &seq, 8);
    std::memcpy(buffer_.data() + 16, &type, 4);
    std::memcpy(buffer_.data() + 20, &zero, 4);
    if (!payload.empty()) std::memcpy(buffer_.data() + wal_record_header_bytes, payload.data(), payload.size());
    const std::uint32_t crc = crc32c(std::span<const std::byte>(buffer_).subspan(8));
    std::memcpy(buffer_.data() + 4, &crc, 4);
    if (broken_) return make_error(errc::io_error, "an earlier write or sync failed; reopen the log").at(path_);
    if (auto written = write_all(file_, buffer_, path_); !written) {
      // Cut the partial record off, so a later append cannot land behind
      // garbage that recovery would stop at (dropping acknowledged records).
      if (::ftruncate(file_.get(), static_cast<off_t>(bytes_)) != 0 ||
          ::lseek(file_.get(), static_cast<off_t>(bytes_), SEEK_SET) < 0)
        broken_ = true;
      return std::move(written).error();
    }
    last_ = seq;
    bytes_ += buffer_.size();
    ++stats_.appends;
    stats_.bytes_appended += buffer_.size();
    if (pending_ == 0) first_pending_ = std::chrono::steady_clock::now();
    ++pending_;
    switch (options_.mode) {
      case durability::every_write: RUVLLM_TRY(sync()); break;
      case durability::group_commit:
        if (pending_ >= options_.group_records ||
            std::chrono::steady_clock::now() - first_pending_ >= options_.group_interval)
          RUVLLM_TRY(sync());
        break;
      case durability::none: break;
    }
    return seq;
  }

  /// Forces every appended record to stable storage.
  [[nodiscard]] result<void> sync() {
    if (pending_ == 0) return {};
    if (broken_) return make_error(errc::io_error, "an earlier write or sync failed; reopen the log").at(path_);
    // After a failed fdatasync the kernel may have dropped the dirty pages:
    // nothing appended since the last good sync can be trusted any more.
    if (::fdatasync(file_.get()) != 0) {
      broken_ = true;
      return detail::os_error("cannot fdatasync", path_);
    }
    pending_ = 0;
    ++stats_.syncs;
    return {};
  }

  /// Whether appended records await a sync (group_commit, none).
  [[nodiscard]] bool has_unsynced() const noexcept { return pending_ != 0; }
  [[nodiscard]] const wal_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] const wal_options& options() const noexcept { return options_; }

  /// Replaces the log with an empty one starting after `base` (a checkpoint
  /// holding every record up to base was saved): atomic like every save.
  [[nodiscard]] result<void> reset(std::uint64_t base) {
    RUVLLM_TRY(sync());
    RUVLLM_TRY(create_empty(path_, base));
    RUVLLM_TRY_ASSIGN(file_, open_file(path_, O_WRONLY | O_APPEND));
    base_ = base;
    last_ = base;
    bytes_ = wal_header_bytes;
    pending_ = 0;
    return {};
  }

  /// Sequence number of the last record (base when empty).
  [[nodiscard]] std::uint64_t last_sequence() const noexcept { return last_; }
  /// Sequence the log starts after.
  [[nodiscard]] std::uint64_t base_sequence() const noexcept { return base_; }
  /// Bytes in the log file, header included.
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  /// Writes an empty log at path atomically (write_file_atomically), for a
  /// new log as for reset(): a crash while the first log of a store is being
  /// created must leave no log at all, which the next open creates again,
  /// rather than a file with half a header, which it must refuse.
  [[nodiscard]] static result<void> create_empty(std::string_view path, std::uint64_t base) {
    std::array<std::byte, wal_header_bytes> h{};
    std::memcpy(h.data(), wal_magic.data(), 8);
    std::memcpy(h.data() + 8, &wal_format_version, 4);
    std::memcpy(h.data() + 16, &base, 8);
    const std::uint32_t crc = crc32c(std::span<const std::byte>(h).first(28));
    std::memcpy(h.data() + 28, &crc, 4);
    return write_file_atomically(path, h);
  }

  std::string path_;
  wal_options options_{};
  file_handle file_;
  std::uint64_t base_ = 0;
  std::uint64_t last_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint32_t pending_ = 0;
  std::chrono::steady_clock::time_point first_pending_{};
  wal_stats stats_{};
  bool broken_ = false;
  std::vector<std::byte> buffer_;
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_WAL_HPP
