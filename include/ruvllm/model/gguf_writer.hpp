#ifndef RUVLLM_MODEL_GGUF_WRITER_HPP
#define RUVLLM_MODEL_GGUF_WRITER_HPP

// GGUF writer for tests, benchmarks and tools: builds a version 3 file (the
// layout is documented in model/gguf.hpp) that ruvllm's reader and
// llama.cpp's gguf loader both accept. llama.cpp requires tensors to follow
// each other in info order, each padded to the alignment, starting at an
// aligned data section; the writer lays them out exactly that way.
//
// Memory layout: metadata is serialized into one byte vector as it is added;
// tensor data is copied into the writer (one vector per tensor), so the
// caller's buffers need not outlive the calls. A writer is single-threaded.

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
#include <vector>

#include "ruvllm/core/error.hpp"
#include "ruvllm/model/gguf.hpp"

namespace ruvllm::model {

namespace detail {
inline void put_bytes(std::vector<std::byte>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n);
}
template <class T>
void put(std::vector<std::byte>& out, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    out.push_back(std::byte{v ? std::uint8_t{1} : std::uint8_t{0}});
  } else {
    put_bytes(out, &v, sizeof v);
  }
}
inline void put_string(std::vector<std::byte>& out, std::string_view s) {
  put<std::uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}
}  // namespace detail

/// Builds an array value element by element (arrays of arrays included).
/// Pushing an element of the wrong type records an error that add_array
/// reports. Allocates as elements are pushed.
class gguf_array_builder {
 public:
  explicit gguf_array_builder(gguf_value_type element) noexcept : element_(element) {}

  template <GgufScalar T>
  gguf_array_builder& push(T value) {
    if (check(gguf_type_of<T>)) detail::put(bytes_, value);
    return *this;
  }
  gguf_array_builder& push_string(std::string_view s) {
    if (check(gguf_value_type::string)) detail::put_string(bytes_, s);
    return *this;
  }
  gguf_array_builder& push_array(const gguf_array_builder& inner) {
    if (check(gguf_value_type::array)) {
      if (inner.bad_) bad_ = true;
      inner.serialize(bytes_);
    }
    return *this;
  }

  [[nodiscard]] gguf_value_type element_type() const noexcept { return element_; }
  [[nodiscard]] std::uint64_t size() const noexcept { return count_; }
  /// False when an element of the wrong type was pushed (here or in a nested array).
  [[nodiscard]] bool valid() const noexcept { return !bad_; }

  /// Appends element type, count and elements to `out`.
  void serialize(std::vector<std::byte>& out) const {
    detail::put(out, static_cast<std::uint32_t>(element_));
    detail::put<std::uint64_t>(out, count_);
    out.insert(out.end(), bytes_.begin(), bytes_.end());
  }

 private:
  bool check(gguf_value_type t) {
    if (t != element_) {
      bad_ = true;
      return false;
    }
    ++count_;
    return true;
  }
  gguf_value_type element_;
  std::uint64_t count_ = 0;
  bool bad_ = false;
  std::vector<std::byte> bytes_;
};

/// Writes a GGUF v3 file. Keys and tensor names must be unique; tensor shapes
/// and data sizes are checked as the reader checks them. Every add_* call
/// allocates; to_bytes builds the whole image in memory.
class gguf_writer {
 public:
  /// `alignment` (a power of two) applies to the data section and every
  /// tensor; a value other than 32 is recorded as general.alignment.
  explicit gguf_writer(std::uint32_t alignment = gguf_default_alignment) : alignment_(alignment) {}

  template <GgufScalar T>
  [[nodiscard]] result<void> add(std::string_view key, T value) {
    RUVLLM_TRY(begin_key(key, gguf_type_of<T>));
    detail::put(kv_bytes_, value);
    return {};
  }
  [[nodiscard]] result<void> add_string(std::string_view key, std::string_view value) {
    RUVLLM_TRY(begin_key(key, gguf_value_type::string));
    detail::put_string(kv_bytes_, value);
    return {};
  }
  template <GgufScalar T>
  [[nodiscard]] result<void> add_array(std::string_view key, std::span<const T> values) {
    gguf_array_builder b(gguf_type_of<T>);
    for (const T& v : values) b.push(v);
    return add_array(key, b);
  }
  [[nodiscard]] result<void> add_strings(std::string_view key, std::span<const std::string_view> values) {
    gguf_array_builder b(gguf_value_type::string);
    for (auto v : values) b.push_string(v);
    return add_array(key, b);
  }
  [[nodiscard]] result<void> add_strings(std::string_view key, std::span<const std::string> values) {
    gguf_array_builder b(gguf_value_type::string);
    for (const auto& v : values) b.push_string(v);
    return add_array(key, b);
  }
  [[nodiscard]] result<void> add_array(std::string_view key, const gguf_array_builder& array) {
    if (!array.valid())
      return make_error(errc::invalid_argument, "array for key '", key, "' has elements of the wrong type");
    RUVLLM_TRY(begin_key(key, gguf_value_type::array));
    array.serialize(kv_bytes_);
    return {};
  }

  /// Adds a copy of a value read by gguf_file (any type, arrays included),
  /// e.g. to rewrite a file's metadata. The value's bytes were validated
  /// when its file was parsed.
  [[nodiscard]] result<void> add_value(std::string_view key, const gguf_value& value) {
    RUVLLM_TRY(begin_key(key, value.type()));
    if (value.type() == gguf_value_type::string) {
      detail::put<std::uint64_t>(kv_bytes_, value.payload().size());
    } else if (value.is_array()) {
      detail::put(kv_bytes_, static_cast<std::uint32_t>(value.element_type()));
      detail::put<std::uint64_t>(kv_bytes_, value.size());
    }
    kv_bytes_.insert(kv_bytes_.end(), value.payload().begin(), value.payload().end());
    return {};
  }

  /// Adds a tensor with dims ne (ne[0] innermost, 1..4 dims) of `type`; `data`
  /// must be exactly rows * row bytes long. Copies the data.
  [[nodiscard]] result<void> add_tensor(std::string_view name, gguf_type type, std::span<const std::uint64_t> ne,
                                        std::span<const std::byte> data) {
    const gguf_type_traits* traits = find_gguf_type(static_cast<std::uint32_t>(type));
    if (traits == nullptr)
      return make_error(errc::unsupported, "tensor '", name, "': type ",
                        ggml_type_name(static_cast<std::uint32_t>(type)), " cannot be written");
    if (ne.empty() || ne.size() > gguf_max_dims)
      return make_error(errc::invalid_argument, "tensor '", name, "' has ", ne.size(), " dimensions (1..",
                        gguf_max_dims, " allowed)");
    for (const auto& t : tensors_)
      if (t.name == name) return make_error(errc::already_exists, "duplicate tensor name '", name, "'");
    if (ne[0] % traits->block_size != 0)
      return make_error(errc::invalid_argument, "tensor '", name, "' row of ", ne[0],
                        " elements is not a multiple of the block size ", traits->block_size);
    const auto row = traits->row_bytes(ne[0]);
    if (!row) return make_error(errc::out_of_range, "tensor '", name, "': ", row.error().message());
    std::uint64_t bytes = *row;
    for (std::size_t d = 1; d < ne.size(); ++d) {
      RUVLLM_TRY_ASSIGN(bytes, checked_mul(bytes, ne[d], "tensor bytes"));
    }
    if (bytes != data.size())
      return make_error(errc::invalid_argument, "tensor '", name, "' needs ", bytes, " bytes, got ", data.size());
    tensor_entry t;
    t.name.assign(name);
    t.type = type;
    t.ne.assign(ne.begin(), ne.end());
    t.data.assign(data.begin(), data.end());
    tensors_.push_back(std::move(t));
    return {};
  }

  /// The complete file image.
  [[nodiscard]] result<std::vector<std::byte>> to_bytes() const {
    if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0)
      return make_error(errc::invalid_argument, "alignment ", alignment_, " is not a power of two");
    std::vector<std::byte> out;
    const bool record_alignment = alignment_ != gguf_default_alignment;
    detail::put(out, gguf_magic);
    detail::put<std::uint32_t>(out, 3);
    detail::put<std::uint64_t>(out, tensors_.size());
    detail::put<std::uint64_t>(out, n_kv_ + (record_alignment ? 1 : 0));
    out.insert(out.end(), kv_bytes_.begin(), kv_bytes_.end());
    if (record_alignment) {
      detail::put_string(out, "general.alignment");
      detail::put(out, static_cast<std::uint32_t>(gguf_value_type::uint32));
      detail::put(out, alignment_);
    }
    std::uint64_t offset = 0;
    for (const auto& t : tensors_) {
      detail::put_string(out, t.name);
      detail::put<std::uint32_t>(out, static_cast<std::uint32_t>(t.ne.size()));
      for (auto d : t.ne) detail::put(out, d);
      detail::put(out, static_cast<std::uint32_t>(t.type));
      detail::put(out, offset);
      offset += padded(t.data.size());
    }
    out.resize(padded(out.size()));
    for (const auto& t : tensors_) {
      out.insert(out.end(), t.data.begin(), t.data.end());
      out.resize(padded(out.size()));
    }
    return out;
  }

  /// Writes the file: path.tmp, fsync, rename over path, so an interrupted
  /// write never leaves a partial file under `path`.
  [[nodiscard]] result<void> write(std::string_view path) const {
    RUVLLM_TRY_ASSIGN(const auto image, to_bytes());
    const std::string final_path(path);
    const std::string tmp = final_path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return make_error(errc::io_error, "cannot create: ", std::strerror(errno)).at(tmp);
    std::size_t done = 0;
    while (done < image.size()) {
      const auto n = ::write(fd, image.data() + done, image.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        auto e = make_error(errc::io_error, "cannot write: ", std::strerror(errno)).at(tmp, done);
        ::close(fd);
        ::unlink(tmp.c_str());
        return e;
      }
      done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
      ::unlink(tmp.c_str());
      return make_error(errc::io_error, "cannot sync: ", std::strerror(errno)).at(tmp);
    }
    if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
      auto e = make_error(errc::io_error, "cannot rename: ", std::strerror(errno)).at(final_path);
      ::unlink(tmp.c_str());
      return e;
    }
    return {};
  }

 private:
  struct tensor_entry {
    std::string name;
    gguf_type type = gguf_type::f32;
    std::vector<std::uint64_t> ne;
    std::vector<std::byte> data;
  };

  // The alignment key is reserved so the recorded value cannot disagree with
  // the layout the writer produces.
  [[nodiscard]] result<void> begin_key(std::string_view key, gguf_value_type type) {
    for (const auto& k : keys_)
      if (k == key) return make_error(errc::already_exists, "duplicate metadata key '", key, "'");
    if (key == "general.alignment")
      return make_error(errc::invalid_argument, "general.alignment is set by the writer's constructor");
    keys_.emplace_back(key);
    ++n_kv_;
    detail::put_string(kv_bytes_, key);
    detail::put(kv_bytes_, static_cast<std::uint32_t>(type));
    return {};
  }
  [[nodiscard]] std::size_t padded(std::size_t n) const noexcept {
    return (n + alignment_ - 1) / alignment_ * alignment_;
  }

  std::uint32_t alignment_;
  std::uint64_t n_kv_ = 0;
  std::vector<std::string> keys_;
  std::vector<std::byte> kv_bytes_;
  std::vector<tensor_entry> tensors_;
};

}  // namespace ruvllm::model

#endif  // RUVLLM_MODEL_GGUF_WRITER_HPP
