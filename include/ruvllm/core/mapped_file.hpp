#ifndef RUVLLM_CORE_MAPPED_FILE_HPP
#define RUVLLM_CORE_MAPPED_FILE_HPP

// A read-only POSIX memory map of a whole file: weights and store sections
// are used in place, and opening costs O(1) regardless of file size. (Boost.
// Interprocess is not used: it does not compile with -fno-exceptions.)

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "ruvllm/core/error.hpp"

namespace ruvllm {

/// Read-only mapping of a file. Move-only; the bytes stay valid until the
/// object is destroyed. Reading from many threads is safe. The file must not
/// be truncated by another process while mapped (the OS would raise SIGBUS).
class mapped_file {
 public:
  mapped_file() noexcept = default;
  mapped_file(mapped_file&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        path_(std::move(other.path_)) {}
  mapped_file& operator=(mapped_file&& other) noexcept {
    if (this != &other) {
      unmap();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      path_ = std::move(other.path_);
    }
    return *this;
  }
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file() { unmap(); }

  /// Maps `path` read-only. An empty file maps to an empty span. Allocates the
  /// path string only.
  [[nodiscard]] static result<mapped_file> open(std::string_view path) {
    mapped_file out;
    out.path_.assign(path);
    const int fd = ::open(out.path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return os_error("cannot open", out.path_);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      auto e = os_error("cannot stat", out.path_);
      ::close(fd);
      return e;
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return make_error(errc::invalid_argument, "not a regular file").at(out.path_);
    }
    out.size_ = static_cast<std::size_t>(st.st_size);
    if (out.size_ > 0) {
      void* p = ::mmap(nullptr, out.size_, PROT_READ, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) {
        auto e = os_error("cannot map", out.path_);
        ::close(fd);
        return e;
      }
      out.data_ = static_cast<const std::byte*>(p);
    }
    ::close(fd);  // the mapping keeps the file referenced
    return out;
  }

  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  [[nodiscard]] static error os_error(std::string_view what, const std::string& path) {
    return make_error(errc::io_error, what, ": ", std::strerror(errno)).at(path);
  }
  void unmap() noexcept {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
  }
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

}  // namespace ruvllm

#endif  // RUVLLM_CORE_MAPPED_FILE_HPP
