#ifndef RUVLLM_MODEL_GGUF_HPP
#define RUVLLM_MODEL_GGUF_HPP

// GGUF reader: metadata and tensor views over a read-only memory map, weights
// used in place (no copies).
//
// The format (versions 2 and 3, little-endian; all integers unaligned):
//
//   u32 magic "GGUF"   u32 version   u64 tensor_count   u64 kv_count
//   kv_count x { string key, u32 value_type, value }
//   tensor_count x { string name, u32 n_dims (1..4), u64 ne[n_dims],
//                    u32 ggml_type, u64 offset (from the data section) }
//   padding to `general.alignment` (u32, a power of two, default 32)
//   data section: each tensor at its offset, a multiple of the alignment
//
//   string = u64 length + bytes (no terminator)
//   value  = one of u8 i8 u16 i16 u32 i32 f32 bool(u8) string u64 i64 f64
//            or array = u32 element_type + u64 count + count elements
//            (arrays may nest; nesting depth is limited to gguf_max_array_depth)
//
// Version 1 (u32 counts) and big-endian files are rejected as unsupported.
//
// Hostile input: every count, length and offset is checked against the bytes
// that remain before it is used, and every size computation is
// overflow-checked, so a corrupt file yields a ruvllm::error naming the file
// and byte offset, never a crash, a hang or an allocation larger than the
// file warrants (the vectors built while parsing hold at most one entry per
// 13 bytes of file, because a key-value pair and a tensor info take at least
// that much).
//
// Memory layout: gguf_file owns the mapping (or borrows the caller's span)
// and two vectors: the key-value pairs and the tensor infos, both in file
// order, each holding string_views and spans into the mapped bytes, plus two
// sorted index vectors for O(log n) lookup and duplicate detection. The
// mapping's address does not change when gguf_file moves, so the views stay
// valid for the object's lifetime.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ruvllm/core/byte_reader.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/mapped_file.hpp"
#include "ruvllm/core/precision.hpp"

namespace ruvllm::model {

/// "GGUF" read as a little-endian u32.
inline constexpr std::uint32_t gguf_magic = 0x46554747u;
/// Alignment of the data section and of every tensor when the file does not
/// set general.alignment.
inline constexpr std::uint32_t gguf_default_alignment = 32;
/// Deepest array nesting accepted (an array of arrays is depth 2). Bounds the
/// recursion a hostile file can cause.
inline constexpr int gguf_max_array_depth = 8;
/// Most dimensions a tensor may have (ggml's GGML_MAX_DIMS).
inline constexpr std::uint32_t gguf_max_dims = 4;

/// GGUF metadata value types.
enum class gguf_value_type : std::uint32_t {
  uint8 = 0,
  int8 = 1,
  uint16 = 2,
  int16 = 3,
  uint32 = 4,
  int32 = 5,
  float32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  uint64 = 10,
  int64 = 11,
  float64 = 12,
};

/// Name of a value type for messages ("u32", "string", ...); "type <n>" style
/// names are produced by describe_value_type for unknown ids.
[[nodiscard]] constexpr std::string_view to_string(gguf_value_type t) noexcept {
  switch (t) {
    case gguf_value_type::uint8: return "u8";
    case gguf_value_type::int8: return "i8";
    case gguf_value_type::uint16: return "u16";
    case gguf_value_type::int16: return "i16";
    case gguf_value_type::uint32: return "u32";
    case gguf_value_type::int32: return "i32";
    case gguf_value_type::float32: return "f32";
    case gguf_value_type::boolean: return "bool";
    case gguf_value_type::string: return "string";
    case gguf_value_type::array: return "array";
    case gguf_value_type::uint64: return "u64";
    case gguf_value_type::int64: return "i64";
    case gguf_value_type::float64: return "f64";
  }
  return "unknown";
}

/// Bytes of one fixed-size value of type t; 0 for string and array.
[[nodiscard]] constexpr std::size_t gguf_value_size(gguf_value_type t) noexcept {
  switch (t) {
    case gguf_value_type::uint8:
    case gguf_value_type::int8:
    case gguf_value_type::boolean: return 1;
    case gguf_value_type::uint16:
    case gguf_value_type::int16: return 2;
    case gguf_value_type::uint32:
    case gguf_value_type::int32:
    case gguf_value_type::float32: return 4;
    case gguf_value_type::uint64:
    case gguf_value_type::int64:
    case gguf_value_type::float64: return 8;
    case gguf_value_type::string:
    case gguf_value_type::array: return 0;
  }
  return 0;
}

/// The ggml type name of a tensor type id ("F32", "Q4_K", "IQ2_XXS", ...),
/// covering ggml's whole table so an unsupported tensor is named in errors.
[[nodiscard]] constexpr std::string_view ggml_type_name(std::uint32_t id) noexcept {
  constexpr std::array<std::string_view, 40> names = {
      "F32",      "F16",      "Q4_0",    "Q4_1",  "Q4_2",       "Q4_3",       "Q5_0",       "Q5_1",
      "Q8_0",     "Q8_1",     "Q2_K",    "Q3_K",  "Q4_K",       "Q5_K",       "Q6_K",       "Q8_K",
      "IQ2_XXS",  "IQ2_XS",   "IQ3_XXS", "IQ1_S", "IQ4_NL",     "IQ3_S",      "IQ2_S",      "IQ4_XS",
      "I8",       "I16",      "I32",     "I64",   "F64",        "IQ1_M",      "BF16",       "Q4_0_4_4",
      "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",   "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4"};
  return id < names.size() ? names[id] : std::string_view("unknown");
}

/// Block geometry of the tensor types ruvllm reads from GGUF.
struct gguf_type_traits {
  gguf_type type;
  std::uint32_t block_size;       // elements per block
  std::uint32_t bytes_per_block;  // bytes per block
  std::uint32_t alignment;        // alignof the element/block struct

  /// Bytes in a row of `columns` elements (a multiple of block_size), or an
  /// error when that overflows 64 bits: column counts come from files.
  [[nodiscard]] result<std::uint64_t> row_bytes(std::uint64_t columns) const {
    return checked_mul(columns / block_size, bytes_per_block, "tensor row bytes");
  }
};

/// The tensor types ruvllm reads, with their block geometry.
inline constexpr std::array<gguf_type_traits, 15> gguf_supported_types = {{
    {gguf_type::f32, 1, 4, alignof(float)},
    {gguf_type::f16, 1, 2, alignof(f16)},
    {gguf_type::bf16, 1, 2, alignof(bf16)},
    {gguf_type::q8_0, 32, sizeof(block_q8_0), alignof(block_q8_0)},
    {gguf_type::q4_0, 32, sizeof(block_q4_0), alignof(block_q4_0)},
    {gguf_type::q4_1, 32, sizeof(block_q4_1), alignof(block_q4_1)},
    {gguf_type::q5_0, 32, sizeof(block_q5_0), alignof(block_q5_0)},
    {gguf_type::q5_1, 32, sizeof(block_q5_1), alignof(block_q5_1)},
    {gguf_type::iq4_nl, 32, sizeof(block_iq4_nl), alignof(block_iq4_nl)},
    {gguf_type::iq4_xs, qk_k, sizeof(block_iq4_xs), alignof(block_iq4_xs)},
    {gguf_type::q2_k, qk_k, sizeof(block_q2_k), alignof(block_q2_k)},
    {gguf_type::q3_k, qk_k, sizeof(block_q3_k), alignof(block_q3_k)},
    {gguf_type::q4_k, qk_k, sizeof(block_q4_k), alignof(block_q4_k)},
    {gguf_type::q5_k, qk_k, sizeof(block_q5_k), alignof(block_q5_k)},
    {gguf_type::q6_k, qk_k, sizeof(block_q6_k), alignof(block_q6_k)},
}};

/// Geometry of a supported tensor type (gguf_supported_types), or nullptr for
/// every other ggml type.
[[nodiscard]] constexpr const gguf_type_traits* find_gguf_type(std::uint32_t id) noexcept {
  for (const auto& t : gguf_supported_types)
    if (static_cast<std::uint32_t>(t.type) == id) return &t;
  return nullptr;
}

/// "F32, F16, ... and Q6_K": the supported types' names, for error messages.
[[nodiscard]] inline std::string gguf_supported_type_names() {
  std::string names;
  for (std::size_t i = 0; i < gguf_supported_types.size(); ++i) {
    if (i > 0) names += i + 1 == gguf_supported_types.size() ? " and " : ", ";
    names += ggml_type_name(static_cast<std::uint32_t>(gguf_supported_types[i].type));
  }
  return names;
}

namespace detail {

template <class T>
struct gguf_scalar_of;
template <>
struct gguf_scalar_of<std::uint8_t> : std::integral_constant<gguf_value_type, gguf_value_type::uint8> {};
template <>
struct gguf_scalar_of<std::int8_t> : std::integral_constant<gguf_value_type, gguf_value_type::int8> {};
template <>
struct gguf_scalar_of<std::uint16_t> : std::integral_constant<gguf_value_type, gguf_value_type::uint16> {};
template <>
struct gguf_scalar_of<std::int16_t> : std::integral_constant<gguf_value_type, gguf_value_type::int16> {};
template <>
struct gguf_scalar_of<std::uint32_t> : std::integral_constant<gguf_value_type, gguf_value_type::uint32> {};
template <>
struct gguf_scalar_of<std::int32_t> : std::integral_constant<gguf_value_type, gguf_value_type::int32> {};
template <>
struct gguf_scalar_of<float> : std::integral_constant<gguf_value_type, gguf_value_type::float32> {};
template <>
struct gguf_scalar_of<bool> : std::integral_constant<gguf_value_type, gguf_value_type::boolean> {};
template <>
struct gguf_scalar_of<std::uint64_t> : std::integral_constant<gguf_value_type, gguf_value_type::uint64> {};
template <>
struct gguf_scalar_of<std::int64_t> : std::integral_constant<gguf_value_type, gguf_value_type::int64> {};
template <>
struct gguf_scalar_of<double> : std::integral_constant<gguf_value_type, gguf_value_type::float64> {};

[[nodiscard]] constexpr bool known_value_type(std::uint32_t t) noexcept { return t <= 12; }

}  // namespace detail

/// A fixed-size GGUF scalar type: u8..u64, i8..i64, f32, f64, bool.
template <class T>
concept GgufScalar = requires {
  detail::gguf_scalar_of<T>::value;
};

/// The GGUF value type a C++ scalar maps to (std::uint32_t -> u32, ...).
template <GgufScalar T>
inline constexpr gguf_value_type gguf_type_of = detail::gguf_scalar_of<T>::value;

/// One metadata value, viewing the file's bytes. For a scalar the payload is
/// its raw bytes; for a string, its characters; for an array, its element
/// bytes (already validated when the file was parsed). Cheap to copy; valid
/// while the gguf_file (or the caller's buffer) lives. Thread-safe to read.
class gguf_value {
 public:
  gguf_value() = default;
  gguf_value(gguf_value_type type, gguf_value_type element_type, std::uint64_t count,
             std::span<const std::byte> payload, std::uint64_t file_offset) noexcept
      : type_(type), element_type_(element_type), count_(count), payload_(payload), offset_(file_offset) {}

  [[nodiscard]] gguf_value_type type() const noexcept { return type_; }
  [[nodiscard]] bool is_array() const noexcept { return type_ == gguf_value_type::array; }
  /// Element type of an array (meaningless for other values).
  [[nodiscard]] gguf_value_type element_type() const noexcept { return element_type_; }
  /// Elements of an array; 1 for other values.
  [[nodiscard]] std::uint64_t size() const noexcept { return count_; }
  /// File offset of the value's payload (for messages).
  [[nodiscard]] std::uint64_t file_offset() const noexcept { return offset_; }
  [[nodiscard]] std::span<const std::byte> payload() const noexcept { return payload_; }

  /// The value as T, which must be its exact type (no conversions): a GGUF
  /// scalar type or std::string_view. Errors name the expected and actual types.
  template <class T>
  [[nodiscard]] result<T> as() const {
    if constexpr (std::is_same_v<T, std::string_view>) {
      if (type_ != gguf_value_type::string) return mismatch("string");
      return std::string_view(reinterpret_cast<const char*>(payload_.data()), payload_.size());
    } else {
      static_assert(GgufScalar<T>, "gguf_value::as<T>: T must be a GGUF scalar type or std::string_view");
      if (type_ != gguf_type_of<T>) return mismatch(to_string(gguf_type_of<T>));
      return load<T>(payload_.data());
    }
  }

  /// Element i of an array of scalars of exactly type T.
  template <GgufScalar T>
  [[nodiscard]] result<T> at(std::uint64_t i) const {
    if (!is_array() || element_type_ != gguf_type_of<T>) return mismatch_array(to_string(gguf_type_of<T>));
    if (i >= count_) return make_error(errc::out_of_range, "array index ", i, " >= size ", count_);
    return load<T>(payload_.data() + i * sizeof(T));
  }

  /// All elements of an array of scalars of exactly type T. Allocates size()
  /// elements (bounded by the file size).
  template <GgufScalar T>
  [[nodiscard]] result<std::vector<T>> numbers() const {
    if (!is_array() || element_type_ != gguf_type_of<T>) return mismatch_array(to_string(gguf_type_of<T>));
    std::vector<T> out(static_cast<std::size_t>(count_));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = load<T>(payload_.data() + i * sizeof(T));
    return out;
  }

  /// All elements of an array of strings, viewing the file. Allocates size()
  /// views (bounded by the file size).
  [[nodiscard]] result<std::vector<std::string_view>> strings() const {
    if (!is_array() || element_type_ != gguf_value_type::string) return mismatch_array("string");
    std::vector<std::string_view> out;
    out.reserve(static_cast<std::size_t>(count_));
    byte_reader r(payload_, {}, offset_);
    for (std::uint64_t i = 0; i < count_; ++i) {
      RUVLLM_TRY_ASSIGN(const auto n, r.read<std::uint64_t>("string length"));
      RUVLLM_TRY_ASSIGN(const auto s, r.read_string(n, "string"));
      out.push_back(s);
    }
    return out;
  }

  /// Every element of an array as a gguf_value (works for any element type,
  /// including nested arrays). Allocates size() values.
  [[nodiscard]] result<std::vector<gguf_value>> elements() const;

 private:
  template <class T>
  static T load(const std::byte* p) noexcept {
    if constexpr (std::is_same_v<T, bool>) {
      return std::to_integer<std::uint8_t>(*p) != 0;
    } else {
      T v;
      std::memcpy(&v, p, sizeof(T));
      return v;
    }
  }
  [[nodiscard]] error mismatch(std::string_view wanted) const {
    return make_error(errc::invalid_argument, "type mismatch: expected ", wanted, ", found ", describe_type());
  }
  [[nodiscard]] error mismatch_array(std::string_view wanted) const {
    return make_error(errc::invalid_argument, "type mismatch: expected array of ", wanted, ", found ", describe_type());
  }
  [[nodiscard]] std::string describe_type() const {
    std::string out(to_string(type_));
    if (is_array()) {
      out.append(" of ");
      out.append(to_string(element_type_));
    }
    return out;
  }

  gguf_value_type type_ = gguf_value_type::uint8;
  gguf_value_type element_type_ = gguf_value_type::uint8;
  std::uint64_t count_ = 0;
  std::span<const std::byte> payload_;
  std::uint64_t offset_ = 0;
};

/// One metadata key-value pair.
struct gguf_kv {
  std::string_view key;
  gguf_value value;
};

namespace detail {

// Reads one value of type `type` at the reader's position, validating it
// entirely (strings and nested arrays included). The loops are bounded by the
// remaining bytes: every element consumes at least one byte, and counts are
// checked against the remaining bytes before anything is reserved.
[[nodiscard]] inline result<gguf_value> read_gguf_value(byte_reader& r, std::uint32_t raw_type, int depth) {
  const std::uint64_t start = r.file_offset();
  if (!known_value_type(raw_type)) return r.fail(errc::corrupt_data, "unknown metadata value type ", raw_type);
  const auto type = static_cast<gguf_value_type>(raw_type);
  if (type == gguf_value_type::string) {
    RUVLLM_TRY_ASSIGN(const auto n, r.read<std::uint64_t>("string length"));
    RUVLLM_TRY_ASSIGN(const auto s, r.read_bytes(n, "string"));
    return gguf_value(type, type, 1, s, start + 8);
  }
  if (type != gguf_value_type::array) {
    RUVLLM_TRY_ASSIGN(const auto s, r.read_bytes(gguf_value_size(type), to_string(type)));
    if (type == gguf_value_type::boolean && std::to_integer<std::uint8_t>(s[0]) > 1)
      return make_error(errc::corrupt_data, "bool value ", std::to_integer<int>(s[0]), " is neither 0 nor 1")
          .at(r.source(), start);
    return gguf_value(type, type, 1, s, start);
  }
  if (depth >= gguf_max_array_depth)
    return r.fail(errc::unsupported, "arrays nested deeper than ", gguf_max_array_depth, " levels");
  RUVLLM_TRY_ASSIGN(const auto elem_raw, r.read<std::uint32_t>("array element type"));
  if (!known_value_type(elem_raw))
    return make_error(errc::corrupt_data, "unknown array element type ", elem_raw).at(r.source(), start);
  RUVLLM_TRY_ASSIGN(const auto count, r.read<std::uint64_t>("array length"));
  const auto elem = static_cast<gguf_value_type>(elem_raw);
  const std::uint64_t payload_offset = r.file_offset();
  const std::size_t payload_pos = r.position();
  if (const std::size_t size = gguf_value_size(elem); size != 0) {
    RUVLLM_TRY_ASSIGN(const auto bytes, checked_mul(count, size, "array byte size"));
    if (bytes > r.remaining())
      return r.fail(errc::corrupt_data, "array of ", count, " ", to_string(elem), " needs ", bytes, " bytes but ",
                    r.remaining(), " remain");
    RUVLLM_TRY_ASSIGN(const auto s, r.read_bytes(bytes, "array"));
    if (elem == gguf_value_type::boolean)
      for (std::size_t i = 0; i < s.size(); ++i)
        if (std::to_integer<std::uint8_t>(s[i]) > 1)
          return make_error(errc::corrupt_data, "bool array element ", i, " is neither 0 nor 1")
              .at(r.source(), payload_offset + i);
    return gguf_value(type, elem, count, s, payload_offset);
  }
  // Strings take at least 8 bytes and nested arrays 12: reject a count the
  // remaining bytes cannot hold before walking it.
  const std::uint64_t min_size = elem == gguf_value_type::string ? 8 : 12;
  if (count > r.remaining() / min_size)
    return r.fail(errc::corrupt_data, "array of ", count, " ", to_string(elem), " needs at least ", min_size,
                  " bytes each but ", r.remaining(), " remain");
  for (std::uint64_t i = 0; i < count; ++i) RUVLLM_TRY(read_gguf_value(r, elem_raw, depth + 1));
  const auto all = r.position() - payload_pos;
  RUVLLM_TRY(r.seek(payload_pos));
  RUVLLM_TRY_ASSIGN(const auto s, r.read_bytes(all, "array"));
  return gguf_value(type, elem, count, s, payload_offset);
}

}  // namespace detail

inline result<std::vector<gguf_value>> gguf_value::elements() const {
  if (!is_array()) return mismatch("array");
  std::vector<gguf_value> out;
  out.reserve(static_cast<std::size_t>(count_));
  byte_reader r(payload_, {}, offset_);
  for (std::uint64_t i = 0; i < count_; ++i) {
    RUVLLM_TRY_ASSIGN(auto v, detail::read_gguf_value(r, static_cast<std::uint32_t>(element_type_), 1));
    out.push_back(v);
  }
  return out;
}

/// A tensor stored in the file: its name, type and shape, and a pointer to its
/// bytes inside the mapping. ne[0] is the innermost (contiguous) dimension,
/// as in ggml; unused dimensions are 1. A 2-D weight with ne = [in, out] is a
/// row-major [out][in] matrix of rows() rows of row_bytes bytes each.
struct gguf_tensor {
  std::string_view name;
  gguf_type type = gguf_type::f32;
  std::uint32_t n_dims = 0;
  std::array<std::uint64_t, gguf_max_dims> ne{1, 1, 1, 1};
  std::uint64_t offset = 0;     // absolute file offset of the data
  std::uint64_t n_bytes = 0;    // total bytes
  std::uint64_t row_bytes = 0;  // stride between rows (ne[0] elements)
  std::uint32_t block_size = 1;
  const std::byte* data = nullptr;
  std::uint64_t info_offset = 0;  // file offset of the tensor info (for messages)

  [[nodiscard]] std::uint64_t n_elements() const noexcept { return ne[0] * ne[1] * ne[2] * ne[3]; }
  [[nodiscard]] std::uint64_t row_elements() const noexcept { return ne[0]; }
  [[nodiscard]] std::uint64_t rows() const noexcept { return ne[1] * ne[2] * ne[3]; }
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return {data, static_cast<std::size_t>(n_bytes)}; }
  /// Pointer to row r (r < rows()).
  [[nodiscard]] const std::byte* row(std::uint64_t r) const noexcept { return data + r * row_bytes; }

  /// The data as blocks of format P (P::gguf must equal type): e.g.
  /// as<precision::q4_k>() gives std::span<const block_q4_k>. Errors on a
  /// type mismatch or a misaligned buffer (only possible with a caller buffer
  /// that is not aligned; mapped files are page-aligned).
  template <Precision P>
  [[nodiscard]] result<std::span<const typename P::block_type>> as() const {
    using block = typename P::block_type;
    if (P::gguf != type)
      return make_error(errc::invalid_argument, "tensor '", name, "' is ",
                        ggml_type_name(static_cast<std::uint32_t>(type)), ", not ",
                        ggml_type_name(static_cast<std::uint32_t>(P::gguf)));
    if (reinterpret_cast<std::uintptr_t>(data) % alignof(block) != 0)
      return make_error(errc::invalid_argument, "tensor '", name, "' data is not aligned to ", alignof(block),
                        " bytes");
    return std::span<const block>(reinterpret_cast<const block*>(data),
                                  static_cast<std::size_t>(n_bytes / sizeof(block)));
  }
};

/// A parsed GGUF file. Holds the mapping (open) or views a caller's buffer
/// (parse). Move-only. All accessors are const and safe to call from many
/// threads. Lookups allocate nothing except to build an error.
class gguf_file {
 public:
  gguf_file(gguf_file&&) noexcept = default;
  gguf_file& operator=(gguf_file&&) noexcept = default;
  gguf_file(const gguf_file&) = delete;
  gguf_file& operator=(const gguf_file&) = delete;
  ~gguf_file() = default;

  /// Maps `path` read-only and parses it. Allocates the metadata and tensor
  /// tables (proportional to their counts, bounded by the file size).
  [[nodiscard]] static result<gguf_file> open(std::string_view path) {
    RUVLLM_TRY_ASSIGN(auto map, mapped_file::open(path));
    gguf_file out;
    out.source_ = map.path();
    out.bytes_ = map.bytes();
    out.map_ = std::move(map);
    RUVLLM_TRY(out.parse_all());
    return out;
  }

  /// Parses a GGUF image held by the caller, who keeps `bytes` alive and
  /// unchanged while the result is used. `source` names it in errors.
  [[nodiscard]] static result<gguf_file> parse(std::span<const std::byte> bytes, std::string_view source = "<memory>") {
    gguf_file out;
    out.source_.assign(source);
    out.bytes_ = bytes;
    RUVLLM_TRY(out.parse_all());
    return out;
  }

  [[nodiscard]] std::uint32_t version() const noexcept { return version_; }
  [[nodiscard]] std::uint32_t alignment() const noexcept { return alignment_; }
  /// File offset of the data section.
  [[nodiscard]] std::uint64_t data_offset() const noexcept { return data_offset_; }
  [[nodiscard]] const std::string& source() const noexcept { return source_; }
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }
  /// Metadata in file order.
  [[nodiscard]] std::span<const gguf_kv> metadata() const noexcept { return kvs_; }
  /// Tensors in file order.
  [[nodiscard]] std::span<const gguf_tensor> tensors() const noexcept { return tensors_; }

  /// The value of `key`, or nullptr.
  [[nodiscard]] const gguf_value* find(std::string_view key) const noexcept {
    const auto it = std::lower_bound(kv_index_.begin(), kv_index_.end(), key,
                                     [&](std::uint32_t i, std::string_view k) { return kvs_[i].key < k; });
    return it != kv_index_.end() && kvs_[*it].key == key ? &kvs_[*it].value : nullptr;
  }

  /// The value of `key` as exactly T (a GGUF scalar type, std::string_view or
  /// gguf_value). Errors: not_found for a missing key, invalid_argument for a
  /// type mismatch; both name the key and the file.
  template <class T>
  [[nodiscard]] result<T> get(std::string_view key) const {
    const gguf_value* v = find(key);
    if (v == nullptr) return make_error(errc::not_found, "metadata key '", key, "' is missing").at(source_);
    if constexpr (std::is_same_v<T, gguf_value>) {
      return *v;
    } else {
      auto r = v->as<T>();
      if (!r)
        return make_error(errc::invalid_argument, "metadata key '", key, "': ", r.error().message())
            .at(source_, v->file_offset());
      return r;
    }
  }

  /// Like get, but a missing key yields `fallback` (a type mismatch is still an error).
  template <class T>
  [[nodiscard]] result<T> get_or(std::string_view key, T fallback) const {
    if (find(key) == nullptr) return fallback;
    return get<T>(key);
  }

  /// The tensor named `name`, or nullptr.
  [[nodiscard]] const gguf_tensor* find_tensor(std::string_view name) const noexcept {
    const auto it = std::lower_bound(tensor_index_.begin(), tensor_index_.end(), name,
                                     [&](std::uint32_t i, std::string_view k) { return tensors_[i].name < k; });
    return it != tensor_index_.end() && tensors_[*it].name == name ? &tensors_[*it] : nullptr;
  }

  /// The tensor named `name`, or not_found naming it and the file.
  [[nodiscard]] result<const gguf_tensor*> tensor(std::string_view name) const {
    const gguf_tensor* t = find_tensor(name);
    if (t == nullptr) return make_error(errc::not_found, "tensor '", name, "' is missing").at(source_);
    return t;
  }

 private:
  gguf_file() = default;

  [[nodiscard]] result<void> parse_all() {
    byte_reader r(bytes_, source_);
    RUVLLM_TRY_ASSIGN(const auto magic, r.read<std::uint32_t>("magic"));
    if (magic != gguf_magic)
      return make_error(errc::corrupt_data, "bad magic 0x", hex(magic), " (not a GGUF file)").at(source_, 0);
    RUVLLM_TRY_ASSIGN(const auto version, r.read<std::uint32_t>("version"));
    if (version == 1)
      return make_error(errc::unsupported, "GGUF version 1 is not supported (versions 2 and 3 are)").at(source_, 4);
    if (version != 2 && version != 3) {
      if (version == 0x02000000u || version == 0x03000000u)
        return make_error(errc::unsupported, "big-endian GGUF files are not supported").at(source_, 4);
      return make_error(errc::unsupported, "GGUF version ", version, " is not supported (versions 2 and 3 are)")
          .at(source_, 4);
    }
    version_ = version;
    RUVLLM_TRY_ASSIGN(const auto n_tensors, r.read<std::uint64_t>("tensor count"));
    RUVLLM_TRY_ASSIGN(const auto n_kv, r.read<std::uint64_t>("metadata count"));
    // A key-value pair takes at least 13 bytes (key length, type, one byte), a
    // tensor info at least 32 (name length, n_dims, one dim, type, offset).
    if (n_kv > r.remaining() / 13)
      return make_error(errc::corrupt_data, "metadata count ", n_kv, " cannot fit in the ", r.remaining(),
                        " bytes that remain")
          .at(source_, 16);
    if (n_tensors > r.remaining() / 32)
      return make_error(errc::corrupt_data, "tensor count ", n_tensors, " cannot fit in the ", r.remaining(),
                        " bytes that remain")
          .at(source_, 8);
    if (n_kv >= std::numeric_limits<std::uint32_t>::max() || n_tensors >= std::numeric_limits<std::uint32_t>::max())
      return make_error(errc::unsupported, "more than 2^32 metadata entries or tensors").at(source_, 8);

    kvs_.reserve(static_cast<std::size_t>(n_kv));
    for (std::uint64_t i = 0; i < n_kv; ++i) {
      RUVLLM_TRY_ASSIGN(const auto key_len, r.read<std::uint64_t>("metadata key length"));
      RUVLLM_TRY_ASSIGN(const auto key, r.read_string(key_len, "metadata key"));
      RUVLLM_TRY_ASSIGN(const auto type, r.read<std::uint32_t>("metadata value type"));
      auto value = detail::read_gguf_value(r, type, 0);
      if (!value)
        return make_error(value.error().code(), "metadata key '", key, "': ", value.error().message())
            .at(source_, value.error().has_offset() ? value.error().offset() : r.file_offset());
      kvs_.push_back({key, *value});
    }
    RUVLLM_TRY(build_index(
        kvs_, kv_index_, [](const gguf_kv& kv) { return kv.key; }, "metadata key"));

    alignment_ = gguf_default_alignment;
    if (const gguf_value* a = find("general.alignment")) {
      auto v = a->as<std::uint32_t>();
      if (!v)
        return make_error(errc::corrupt_data, "general.alignment: ", v.error().message()).at(source_, a->file_offset());
      if (*v == 0 || !std::has_single_bit(*v))
        return make_error(errc::corrupt_data, "general.alignment ", *v, " is not a power of two")
            .at(source_, a->file_offset());
      alignment_ = *v;
    }

    tensors_.reserve(static_cast<std::size_t>(n_tensors));
    for (std::uint64_t i = 0; i < n_tensors; ++i) RUVLLM_TRY(read_tensor_info(r));
    RUVLLM_TRY(build_index(
        tensors_, tensor_index_, [](const gguf_tensor& t) { return t.name; }, "tensor name"));

    // The data section starts at the next multiple of the alignment. A file
    // without tensors may end right after the infos.
    RUVLLM_TRY_ASSIGN(const auto padded, checked_add(r.file_offset(), alignment_ - 1, "data section offset"));
    data_offset_ = padded / alignment_ * alignment_;
    if (n_tensors == 0) return {};
    if (data_offset_ > bytes_.size())
      return make_error(errc::corrupt_data, "data section at ", data_offset_, " starts past the end of the file (",
                        bytes_.size(), " bytes)")
          .at(source_, r.file_offset());
    const std::uint64_t data_size = bytes_.size() - data_offset_;
    for (auto& t : tensors_) {
      if (t.offset % alignment_ != 0)
        return make_error(errc::corrupt_data, "tensor '", t.name, "' offset ", t.offset,
                          " is not a multiple of the alignment ", alignment_)
            .at(source_, t.info_offset);
      if (t.offset > data_size || t.n_bytes > data_size - t.offset)
        return make_error(errc::corrupt_data, "tensor '", t.name, "' data [", t.offset, ", +", t.n_bytes,
                          ") lies outside the data section of ", data_size, " bytes")
            .at(source_, t.info_offset);
      t.offset += data_offset_;
      t.data = bytes_.data() + t.offset;
    }
    return {};
  }

  [[nodiscard]] result<void> read_tensor_info(byte_reader& r) {
    gguf_tensor t;
    t.info_offset = r.file_offset();
    RUVLLM_TRY_ASSIGN(const auto name_len, r.read<std::uint64_t>("tensor name length"));
    RUVLLM_TRY_ASSIGN(t.name, r.read_string(name_len, "tensor name"));
    RUVLLM_TRY_ASSIGN(t.n_dims, r.read<std::uint32_t>("tensor dimension count"));
    if (t.n_dims == 0 || t.n_dims > gguf_max_dims)
      return r.fail(errc::corrupt_data, "tensor '", t.name, "' has ", t.n_dims, " dimensions (1..", gguf_max_dims,
                    " allowed)");
    std::uint64_t elements = 1;
    for (std::uint32_t d = 0; d < t.n_dims; ++d) {
      RUVLLM_TRY_ASSIGN(t.ne[d], r.read<std::uint64_t>("tensor dimension"));
      if (t.ne[d] > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return r.fail(errc::corrupt_data, "tensor '", t.name, "' dimension ", d, " = ", t.ne[d], " is negative");
      auto e = checked_mul(elements, t.ne[d], "tensor element count");
      if (!e) return r.fail(errc::corrupt_data, "tensor '", t.name, "': ", e.error().message());
      elements = *e;
    }
    const std::uint64_t type_offset = r.file_offset();
    RUVLLM_TRY_ASSIGN(const auto type, r.read<std::uint32_t>("tensor type"));
    RUVLLM_TRY_ASSIGN(t.offset, r.read<std::uint64_t>("tensor offset"));
    const gguf_type_traits* traits = find_gguf_type(type);
    if (traits == nullptr)
      return make_error(errc::unsupported, "tensor '", t.name, "' has type ", ggml_type_name(type), " (", type,
                        "), which ruvllm does not read (", gguf_supported_type_names(), " are supported)")
          .at(source_, type_offset);
    t.type = traits->type;
    t.block_size = traits->block_size;
    if (t.ne[0] % traits->block_size != 0)
      return make_error(errc::corrupt_data, "tensor '", t.name, "' row of ", t.ne[0], " elements is not a multiple of ",
                        ggml_type_name(type), "'s block size ", traits->block_size)
          .at(source_, t.info_offset);
    auto row = traits->row_bytes(t.ne[0]);
    if (!row)
      return make_error(errc::corrupt_data, "tensor '", t.name, "': ", row.error().message())
          .at(source_, t.info_offset);
    t.row_bytes = *row;
    auto total = checked_mul(t.row_bytes, t.rows(), "tensor byte size");
    if (!total)
      return make_error(errc::corrupt_data, "tensor '", t.name, "': ", total.error().message())
          .at(source_, t.info_offset);
    t.n_bytes = *total;
    tensors_.push_back(t);
    return {};
  }

  [[nodiscard]] static std::uint64_t offset(const gguf_kv& kv) noexcept { return kv.value.file_offset(); }
  [[nodiscard]] static std::uint64_t offset(const gguf_tensor& t) noexcept { return t.info_offset; }

  template <class Item, class Key>
  [[nodiscard]] result<void> build_index(const std::vector<Item>& items, std::vector<std::uint32_t>& index, Key key,
                                         std::string_view what) {
    index.resize(items.size());
    for (std::uint32_t i = 0; i < index.size(); ++i) index[i] = i;
    std::sort(index.begin(), index.end(), [&](std::uint32_t a, std::uint32_t b) {
      const auto ka = key(items[a]);
      const auto kb = key(items[b]);
      return ka < kb || (ka == kb && a < b);
    });
    for (std::size_t i = 1; i < index.size(); ++i)
      if (key(items[index[i]]) == key(items[index[i - 1]]))
        return make_error(errc::corrupt_data, "duplicate ", what, " '", key(items[index[i]]), "'")
            .at(source_, offset(items[index[i]]));
    return {};
  }

  [[nodiscard]] static std::string hex(std::uint32_t v) {
    std::string out(8, '0');
    for (int i = 7; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = "0123456789abcdef"[v & 15];
    return out;
  }

  mapped_file map_;
  std::string source_;
  std::span<const std::byte> bytes_;
  std::uint32_t version_ = 0;
  std::uint32_t alignment_ = gguf_default_alignment;
  std::uint64_t data_offset_ = 0;
  std::vector<gguf_kv> kvs_;
  std::vector<std::uint32_t> kv_index_;
  std::vector<gguf_tensor> tensors_;
  std::vector<std::uint32_t> tensor_index_;
};

}  // namespace ruvllm::model

#endif  // RUVLLM_MODEL_GGUF_HPP
