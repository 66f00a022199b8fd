#ifndef RUVLLM_STORE_FILE_IO_HPP
#define RUVLLM_STORE_FILE_IO_HPP

// POSIX file plumbing shared by the store's writers: an owned descriptor,
// write-all and pwrite-all that retry short writes and EINTR, fsync of a
// file and of its directory, and the atomic replace every full save uses
// (write path.tmp, fsync, rename over path, fsync the directory), so an
// interrupted save leaves the previous good file in place.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "ruvllm/core/error.hpp"

namespace ruvllm::store {

/// An owned file descriptor (move-only; closes on destruction).
class file_handle {
 public:
  file_handle() noexcept = default;
  explicit file_handle(int fd) noexcept : fd_(fd) {}
  file_handle(file_handle&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  file_handle& operator=(file_handle&& o) noexcept {
    if (this != &o) {
      close();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  file_handle(const file_handle&) = delete;
  file_handle& operator=(const file_handle&) = delete;
  ~file_handle() { close(); }

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  void close() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

namespace detail {

[[nodiscard]] inline error os_error(std::string_view what, std::string_view path) {
  return make_error(errc::io_error, what, ": ", std::strerror(errno)).at(path);
}

[[nodiscard]] inline std::string parent_directory(std::string_view path) {
  const auto slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace detail

/// Opens path with flags (O_CLOEXEC added) and mode.
[[nodiscard]] inline result<file_handle> open_file(std::string_view path, int flags, mode_t mode = 0644) {
  const std::string p(path);
  const int fd = ::open(p.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) return detail::os_error("cannot open", path);
  return file_handle(fd);
}

/// Writes all of bytes at the current position.
[[nodiscard]] inline result<void> write_all(const file_handle& f, std::span<const std::byte> bytes,
                                            std::string_view path) {
  const std::byte* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(f.get(), p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return detail::os_error("cannot write", path);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return {};
}

/// Flushes a file's data and metadata to stable storage.
[[nodiscard]] inline result<void> sync_file(const file_handle& f, std::string_view path) {
  if (::fsync(f.get()) != 0) return detail::os_error("cannot fsync", path);
  return {};
}

/// Flushes a directory entry (after a create or rename inside it).
[[nodiscard]] inline result<void> sync_directory(std::string_view dir) {
  RUVLLM_TRY_ASSIGN(auto d, open_file(dir, O_RDONLY | O_DIRECTORY));
  if (::fsync(d.get()) != 0) return detail::os_error("cannot fsync directory", dir);
  return {};
}

/// Atomically replaces path with tmp_path (already written and fsynced):
/// rename, then fsync the directory so the new name survives a crash.
[[nodiscard]] inline result<void> replace_file(std::string_view tmp_path, std::string_view path) {
  const std::string from(tmp_path), to(path);
  if (::rename(from.c_str(), to.c_str()) != 0) return detail::os_error("cannot rename over", path);
  return sync_directory(detail::parent_directory(path));
}

/// Writes `bytes` as the whole content of path atomically: path + ".tmp" is
/// written and fsynced, then renamed over path and the directory fsynced, so
/// a crash leaves either the previous file or the new one, never a mix.
[[nodiscard]] inline result<void> write_file_atomically(std::string_view path, std::span<const std::byte> bytes) {
  const std::string tmp = std::string(path) + ".tmp";
  {
    RUVLLM_TRY_ASSIGN(auto f, open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC));
    RUVLLM_TRY(write_all(f, bytes, tmp));
    RUVLLM_TRY(sync_file(f, tmp));
  }
  return replace_file(tmp, path);
}

/// Whether path names an existing file.
[[nodiscard]] inline bool file_exists(std::string_view path) {
  struct stat st {};
  return ::stat(std::string(path).c_str(), &st) == 0;
}

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_FILE_IO_HPP
