#ifndef RUVLLM_SONA_EXCHANGE_HPP
#define RUVLLM_SONA_EXCHANGE_HPP

// Export and import of what SONA learned -- the FastGRNN router (weights,
// sparsity mask, Adam moments, EWC++ estimates and anchor) and the reasoning
// bank's patterns -- as one versioned, checksummed file, so that one node's
// learning can be loaded by another (or kept across a restart without a
// store).
//
// ------------------------------------------------------------------ format
// Little-endian; every section starts at a multiple of 8 bytes.
//   offset  size    field
//   0       8       magic "RUVSONA1"
//   8       4       format version (1)
//   12      4       section count n (1 .. 8)
//   16      8       file size in bytes
//   24      4       CRC-32C of the section table
//   28      4       CRC-32C of bytes [0, 28)
//   32      32 n    section table, per section:
//                     u32 kind (1 router, 2 patterns), u32 reserved (0),
//                     u64 offset, u64 size, u32 CRC-32C of the section, u32 reserved (0)
// Router section (kind 1):
//   u64 query_dim, extra_dim, hidden_dim, rank_w, rank_u, steps, models, context_buckets
//   f64 temperature_min, temperature_max, top_p_min, top_p_max, sparsity, zeta_init, nu_init, confidence_weight
//   f64 adam learning_rate, beta1, beta2, epsilon; u64 adam sgd (0/1)
//   f64 ewc lambda, gamma, task_decay; u64 seed
//   u64 version, parameter count n, adam steps, EWC++ consolidations, flags (bit 0 anchored, bit 1 mask present)
//   f32[n] parameters, Adam first moment, Adam second moment, running Fisher, penalty Fisher, anchor
//   u8[n] sparsity mask (when flagged)
// Patterns section (kind 2):
//   u64 dim, models, params_dim, max_samples, max_patterns; f64 merge_similarity
//   u64 kmeans k, max_iterations, restarts, seed
//   u64 consolidations, pattern count p; per pattern:
//     u64 id high, u64 id low, u64 count, f32 mean quality, u32 best model, f32[dim] centroid,
//     f32[models] per-model quality, u64[models] per-model count, f32[params_dim] parameters
//
// Reading is hostile-input safe: the header and table are checked first
// (magic, version, sizes against the file length, checksums), every size
// inside a section is bounded and checked against the section's length
// before anything is allocated, and the decoded state is validated by the
// same checks the live objects apply (finite values, shapes, ranges). An
// import builds new objects and assigns them only when everything checked
// out, so a corrupt file leaves the caller's learned state untouched. Errors
// name the file and the byte offset.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/byte_reader.hpp"
#include "ruvllm/core/byte_writer.hpp"
#include "ruvllm/core/checksum.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/mapped_file.hpp"
#include "ruvllm/sona/reasoning_bank.hpp"
#include "ruvllm/sona/router.hpp"
#include "ruvllm/store/file_io.hpp"

namespace ruvllm::sona {

/// What an exchange file holds once decoded.
template <Backend B = backend::highway>
struct learned_state {
  fastgrnn_router<float> router;
  reasoning_bank<B> bank;
};

namespace detail::exchange {

inline constexpr char magic[8] = {'R', 'U', 'V', 'S', 'O', 'N', 'A', '1'};
inline constexpr std::uint32_t version = 1;
inline constexpr std::uint32_t max_sections = 8;
inline constexpr std::size_t header_bytes = 32, table_entry_bytes = 32;
enum class section_kind : std::uint32_t { router = 1, patterns = 2 };
// Dimensions above this are rejected before any size arithmetic, which keeps
// every product below 2^63.
inline constexpr std::uint64_t max_dim = std::uint64_t{1} << 24;
// The largest reasoning-bank sample buffer an imported file may ask for
// (256 MiB of floats; the default bank uses 2 MiB).
inline constexpr std::uint64_t max_sample_floats = std::uint64_t{1} << 26;

// The router's shape and real-valued options in file order, by reference:
// the one list both the writer and the reader walk.
template <class Options>
auto router_dims(Options& o) {
  return std::tie(o.query_dim, o.extra_dim, o.hidden_dim, o.rank_w, o.rank_u, o.steps, o.models, o.context_buckets);
}
inline constexpr const char* router_dim_names[] = {"query_dim", "extra_dim", "hidden_dim", "rank_w",
                                                   "rank_u",    "steps",     "models",     "buckets"};
template <class Options>
auto router_reals(Options& o) {
  return std::tie(o.temperature_min, o.temperature_max, o.top_p_min, o.top_p_max, o.sparsity, o.zeta_init, o.nu_init,
                  o.confidence_weight, o.optimizer.learning_rate, o.optimizer.beta1, o.optimizer.beta2,
                  o.optimizer.epsilon);
}

inline void encode_router(const fastgrnn_router<float>& r, std::vector<std::byte>& out) {
  const router_options& o = r.options();
  std::apply([&](const auto&... v) { (append_value(out, static_cast<std::uint64_t>(v)), ...); }, router_dims(o));
  std::apply([&](const auto&... v) { (append_value(out, static_cast<double>(v)), ...); }, router_reals(o));
  append_value(out, std::uint64_t{o.optimizer.sgd ? 1u : 0u});
  for (double v : {o.ewc.lambda, o.ewc.gamma, o.ewc.task_decay}) append_value(out, v);
  append_value(out, std::uint64_t{o.seed});
  const auto& e = r.ewc_state();
  const auto mask = r.sparsity_mask();
  append_value(out, std::uint64_t{r.version()});
  append_value(out, std::uint64_t{r.parameter_count()});
  append_value(out, std::uint64_t{r.optimizer().steps()});
  append_value(out, std::uint64_t{e.consolidations()});
  append_value(out, std::uint64_t{(e.anchored() ? 1u : 0u) | (mask.empty() ? 0u : 2u)});
  append_array(out, r.parameters());
  append_array(out, r.optimizer().first_moment());
  append_array(out, r.optimizer().second_moment());
  append_array(out, e.running_fisher());
  append_array(out, e.penalty_fisher());
  append_array(out, e.anchor());
  append_array(out, mask);
}

template <Backend B>
void encode_patterns(const reasoning_bank<B>& bank, std::vector<std::byte>& out) {
  const reasoning_bank_options& o = bank.options();
  for (std::uint64_t v : {o.dim, o.models, o.params_dim, o.max_samples, o.max_patterns}) append_value(out, v);
  append_value(out, o.merge_similarity);
  for (std::uint64_t v : {o.kmeans.k, o.kmeans.max_iterations, o.kmeans.restarts, o.kmeans.seed}) append_value(out, v);
  append_value(out, std::uint64_t{bank.consolidations()});
  append_value(out, std::uint64_t{bank.patterns().size()});
  for (const pattern& p : bank.patterns()) {
    append_value(out, p.id.hi);
    append_value(out, p.id.lo);
    append_value(out, std::uint64_t{p.count});
    append_value(out, p.mean_quality);
    append_value(out, p.best_model);
    append_array(out, std::span<const float>(p.centroid));
    append_array(out, std::span<const float>(p.model_quality));
    append_array(out, std::span<const std::uint64_t>(p.model_count));
    append_array(out, std::span<const float>(p.params));
  }
}

// n * per, or an error at the reader's offset when it overflows.
[[nodiscard]] inline result<std::uint64_t> size_of(const byte_reader& r, std::uint64_t n, std::uint64_t per,
                                                   std::string_view what) {
  std::uint64_t out = 0;
  if (__builtin_mul_overflow(n, per, &out))
    return r.fail(errc::corrupt_data, what, ": ", n, " x ", per, " bytes overflows");
  return out;
}

// Reads n values of T into a vector after checking that they fit.
template <class T>
[[nodiscard]] result<std::vector<T>> read_array(byte_reader& r, std::uint64_t n, std::string_view what) {
  RUVLLM_TRY_ASSIGN(const std::uint64_t bytes, size_of(r, n, sizeof(T), what));
  if (bytes > r.remaining())
    return r.fail(errc::corrupt_data, "truncated: ", what, " needs ", bytes, " bytes but ", r.remaining(), " remain");
  std::vector<T> out(static_cast<std::size_t>(n));
  RUVLLM_TRY_ASSIGN(auto span, r.read_bytes(bytes, what));
  if (bytes != 0) std::memcpy(out.data(), span.data(), static_cast<std::size_t>(bytes));
  return out;
}

[[nodiscard]] inline result<std::uint64_t> read_dim(byte_reader& r, std::string_view what) {
  const std::uint64_t at = r.file_offset();
  RUVLLM_TRY_ASSIGN(const auto v, r.read<std::uint64_t>(what));
  if (v > max_dim)
    return make_error(errc::corrupt_data, what, " ", v, " exceeds the limit ", max_dim).at(r.source(), at);
  return v;
}

// An error from validating decoded state, placed at the section's offset.
[[nodiscard]] inline error at_section(const error& e, const byte_reader& r, std::uint64_t section_offset) {
  return make_error(errc::corrupt_data, e.message()).at(r.source(), section_offset);
}

[[nodiscard]] inline result<fastgrnn_router<float>> decode_router(byte_reader r) {
  const std::uint64_t start = r.file_offset();
  router_options o;
  result<void> status;
  std::size_t index = 0;
  const auto read_field = [&](auto& field, auto read) {
    if (!status) return;
    auto v = read(index++);
    if (!v) {
      status = std::move(v).error();
      return;
    }
    field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
  };
  std::apply(
      [&](auto&... field) {
        (read_field(field, [&](std::size_t i) { return read_dim(r, router_dim_names[i]); }), ...);
      },
      router_dims(o));
  std::apply(
      [&](auto&... field) { (read_field(field, [&](std::size_t) { return r.read<double>("router option"); }), ...); },
      router_reals(o));
  RUVLLM_TRY(status);
  RUVLLM_TRY_ASSIGN(const auto sgd, r.read<std::uint64_t>("adam sgd flag"));
  o.optimizer.sgd = sgd != 0;
  RUVLLM_TRY_ASSIGN(o.ewc.lambda, r.read<double>("ewc lambda"));
  RUVLLM_TRY_ASSIGN(o.ewc.gamma, r.read<double>("ewc gamma"));
  RUVLLM_TRY_ASSIGN(o.ewc.task_decay, r.read<double>("ewc task_decay"));
  RUVLLM_TRY_ASSIGN(o.seed, r.read<std::uint64_t>("seed"));
  RUVLLM_TRY_ASSIGN(const auto version_, r.read<std::uint64_t>("router version"));
  RUVLLM_TRY_ASSIGN(const auto n, r.read<std::uint64_t>("parameter count"));
  RUVLLM_TRY_ASSIGN(const auto steps, r.read<std::uint64_t>("adam steps"));
  RUVLLM_TRY_ASSIGN(const auto consolidations, r.read<std::uint64_t>("consolidations"));
  RUVLLM_TRY_ASSIGN(const auto flags, r.read<std::uint64_t>("flags"));
  if (flags > 3) return r.fail(errc::corrupt_data, "router flags ", flags, " has unknown bits");
  // The arrays must fill the rest of the section exactly; checking this
  // before create() keeps a hostile count from sizing any allocation.
  const std::uint64_t per = 6 * sizeof(float) + ((flags & 2u) != 0 ? 1 : 0);
  RUVLLM_TRY_ASSIGN(const auto want, size_of(r, n, per, "router arrays"));
  if (want != r.remaining())
    return r.fail(errc::corrupt_data, "router arrays of ", n, " parameters need ", want, " bytes, the section has ",
                  r.remaining());
  auto created = fastgrnn_router<float>::create(o);
  if (!created) return at_section(created.error(), r, start);
  fastgrnn_router<float> router = std::move(created).value();
  if (router.parameter_count() != n)
    return r.fail(errc::corrupt_data, "router of these options has ", router.parameter_count(),
                  " parameters, the file ", n);
  RUVLLM_TRY_ASSIGN(auto params, read_array<float>(r, n, "parameters"));
  RUVLLM_TRY_ASSIGN(auto m, read_array<float>(r, n, "adam first moment"));
  RUVLLM_TRY_ASSIGN(auto v, read_array<float>(r, n, "adam second moment"));
  RUVLLM_TRY_ASSIGN(auto running, read_array<float>(r, n, "running fisher"));
  RUVLLM_TRY_ASSIGN(auto penalty, read_array<float>(r, n, "penalty fisher"));
  RUVLLM_TRY_ASSIGN(auto anchor, read_array<float>(r, n, "anchor"));
  std::vector<std::uint8_t> mask;
  if ((flags & 2u) != 0) {
    RUVLLM_TRY_ASSIGN(mask, read_array<std::uint8_t>(r, n, "sparsity mask"));
  }
  auto ok = router.restore(params, mask, m, v, steps, running, penalty, anchor, (flags & 1u) != 0,
                           static_cast<std::size_t>(consolidations), version_);
  if (!ok) return at_section(ok.error(), r, start);
  return router;
}

template <Backend B>
[[nodiscard]] result<reasoning_bank<B>> decode_patterns(byte_reader r) {
  const std::uint64_t start = r.file_offset();
  reasoning_bank_options o;
  RUVLLM_TRY_ASSIGN(o.dim, read_dim(r, "dim"));
  RUVLLM_TRY_ASSIGN(o.models, read_dim(r, "models"));
  RUVLLM_TRY_ASSIGN(o.params_dim, read_dim(r, "params_dim"));
  RUVLLM_TRY_ASSIGN(o.max_samples, read_dim(r, "max_samples"));
  RUVLLM_TRY_ASSIGN(o.max_patterns, read_dim(r, "max_patterns"));
  RUVLLM_TRY_ASSIGN(o.merge_similarity, r.read<double>("merge similarity"));
  RUVLLM_TRY_ASSIGN(o.kmeans.k, read_dim(r, "kmeans k"));
  RUVLLM_TRY_ASSIGN(o.kmeans.max_iterations, read_dim(r, "kmeans iterations"));
  RUVLLM_TRY_ASSIGN(o.kmeans.restarts, read_dim(r, "kmeans restarts"));
  RUVLLM_TRY_ASSIGN(o.kmeans.seed, r.read<std::uint64_t>("kmeans seed"));
  RUVLLM_TRY_ASSIGN(const auto consolidations, r.read<std::uint64_t>("consolidations"));
  RUVLLM_TRY_ASSIGN(const auto count, r.read<std::uint64_t>("pattern count"));
  // dim, models and params_dim are below 2^24, so a pattern's size fits in 64 bits.
  const std::uint64_t per = 32 + 4 * o.dim + 12 * o.models + 4 * o.params_dim;
  RUVLLM_TRY_ASSIGN(const auto want, size_of(r, count, per, "patterns"));
  if (want != r.remaining())
    return r.fail(errc::corrupt_data, count, " patterns need ", want, " bytes, the section has ", r.remaining());
  // The new bank allocates max_samples * (dim + params_dim) floats for its
  // sample buffer: a file may not ask for more than max_sample_floats.
  RUVLLM_TRY_ASSIGN(const auto sample_floats, size_of(r, o.max_samples, o.dim + o.params_dim, "sample buffer"));
  if (sample_floats > max_sample_floats)
    return make_error(errc::corrupt_data, "a sample buffer of ", o.max_samples, " x ", o.dim + o.params_dim,
                      " floats exceeds the import limit of ", max_sample_floats)
        .at(r.source(), start);
  auto created = reasoning_bank<B>::create(o);
  if (!created) return at_section(created.error(), r, start);
  reasoning_bank<B> bank = std::move(created).value();
  std::vector<pattern> patterns(static_cast<std::size_t>(count));
  for (pattern& p : patterns) {
    RUVLLM_TRY_ASSIGN(p.id.hi, r.read<std::uint64_t>("pattern id"));
    RUVLLM_TRY_ASSIGN(p.id.lo, r.read<std::uint64_t>("pattern id"));
    RUVLLM_TRY_ASSIGN(p.count, r.read<std::uint64_t>("pattern count"));
    RUVLLM_TRY_ASSIGN(p.mean_quality, r.read<float>("pattern quality"));
    RUVLLM_TRY_ASSIGN(p.best_model, r.read<std::uint32_t>("pattern best model"));
    RUVLLM_TRY_ASSIGN(p.centroid, read_array<float>(r, o.dim, "centroid"));
    RUVLLM_TRY_ASSIGN(p.model_quality, read_array<float>(r, o.models, "model quality"));
    RUVLLM_TRY_ASSIGN(p.model_count, read_array<std::uint64_t>(r, o.models, "model count"));
    RUVLLM_TRY_ASSIGN(p.params, read_array<float>(r, o.params_dim, "pattern parameters"));
  }
  auto ok = bank.restore(std::move(patterns), consolidations);
  if (!ok) return at_section(ok.error(), r, start);
  return bank;
}

}  // namespace detail::exchange

/// The exchange file's bytes for a router and a bank (see the file comment).
template <Backend B>
[[nodiscard]] std::vector<std::byte> encode_learning(const fastgrnn_router<float>& router,
                                                     const reasoning_bank<B>& bank) {
  namespace ex = detail::exchange;
  std::vector<std::byte> sections[2];
  ex::encode_router(router, sections[0]);
  ex::encode_patterns(bank, sections[1]);
  std::vector<std::byte> out(ex::header_bytes + 2 * ex::table_entry_bytes);
  std::uint64_t offsets[2];
  for (int i = 0; i < 2; ++i) {
    append_padding(out, 8);
    offsets[i] = out.size();
    out.insert(out.end(), sections[i].begin(), sections[i].end());
  }
  std::vector<std::byte> table;
  for (int i = 0; i < 2; ++i) {
    append_value(table, static_cast<std::uint32_t>(i == 0 ? ex::section_kind::router : ex::section_kind::patterns));
    append_value(table, std::uint32_t{0});
    append_value(table, offsets[i]);
    append_value(table, std::uint64_t{sections[i].size()});
    append_value(table, crc32c(sections[i]));
    append_value(table, std::uint32_t{0});
  }
  std::memcpy(out.data(), ex::magic, 8);
  patch_value(out, 8, ex::version);
  patch_value(out, 12, std::uint32_t{2});
  patch_value(out, 16, std::uint64_t{out.size()});
  patch_value(out, 24, crc32c(table));
  std::memcpy(out.data() + ex::header_bytes, table.data(), table.size());
  patch_value(out, 28, crc32c(std::span<const std::byte>(out.data(), 28)));
  return out;
}

/// Decodes exchange-file bytes; `source` names them in errors. Errors:
/// corrupt_data / unsupported naming the source and the byte offset.
template <Backend B = backend::highway>
[[nodiscard]] result<learned_state<B>> decode_learning(std::span<const std::byte> bytes,
                                                       std::string_view source = "sona exchange") {
  namespace ex = detail::exchange;
  byte_reader r(bytes, source);
  RUVLLM_TRY_ASSIGN(const auto magic, r.read_string(8, "magic"));
  if (std::memcmp(magic.data(), ex::magic, 8) != 0)
    return make_error(errc::corrupt_data, "not a SONA exchange file (bad magic)").at(source, 0);
  RUVLLM_TRY_ASSIGN(const auto version, r.read<std::uint32_t>("version"));
  RUVLLM_TRY_ASSIGN(const auto n_sections, r.read<std::uint32_t>("section count"));
  RUVLLM_TRY_ASSIGN(const auto file_bytes, r.read<std::uint64_t>("file size"));
  RUVLLM_TRY_ASSIGN(const auto table_crc, r.read<std::uint32_t>("table checksum"));
  RUVLLM_TRY_ASSIGN(const auto header_crc, r.read<std::uint32_t>("header checksum"));
  if (crc32c(bytes.first(28)) != header_crc)
    return make_error(errc::corrupt_data, "header checksum mismatch").at(source, 28);
  if (version != ex::version)
    return make_error(errc::unsupported, "exchange format version ", version, " (this library reads ", ex::version, ")")
        .at(source, 8);
  if (file_bytes != bytes.size())
    return make_error(errc::corrupt_data, "header says ", file_bytes, " bytes, the file has ", bytes.size())
        .at(source, 16);
  if (n_sections == 0 || n_sections > ex::max_sections)
    return make_error(errc::corrupt_data, "section count ", n_sections, " is outside [1, ", ex::max_sections, "]")
        .at(source, 12);
  RUVLLM_TRY_ASSIGN(const auto table, r.read_bytes(std::uint64_t{n_sections} * ex::table_entry_bytes, "table"));
  if (crc32c(table) != table_crc)
    return make_error(errc::corrupt_data, "section table checksum mismatch").at(source, ex::header_bytes);
  const std::uint64_t sections_start = ex::header_bytes + std::uint64_t{n_sections} * ex::table_entry_bytes;
  std::span<const std::byte> found[3];
  std::uint64_t found_at[3] = {};  // 0: absent (no section can start inside the header)
  byte_reader entries(table, source, ex::header_bytes);
  for (std::uint32_t i = 0; i < n_sections; ++i) {
    const std::uint64_t entry_at = entries.file_offset();
    RUVLLM_TRY_ASSIGN(const auto kind, entries.read<std::uint32_t>("section kind"));
    RUVLLM_TRY_ASSIGN(const auto reserved_a, entries.read<std::uint32_t>("reserved"));
    RUVLLM_TRY_ASSIGN(const auto offset, entries.read<std::uint64_t>("section offset"));
    RUVLLM_TRY_ASSIGN(const auto size, entries.read<std::uint64_t>("section size"));
    RUVLLM_TRY_ASSIGN(const auto crc, entries.read<std::uint32_t>("section checksum"));
    RUVLLM_TRY_ASSIGN(const auto reserved_b, entries.read<std::uint32_t>("reserved"));
    if (reserved_a != 0 || reserved_b != 0)
      return make_error(errc::corrupt_data, "reserved fields of section ", i, " are not zero").at(source, entry_at);
    if (kind != 1 && kind != 2) return make_error(errc::unsupported, "section kind ", kind).at(source, entry_at);
    if (offset % 8 != 0 || offset < sections_start || offset > bytes.size() || size > bytes.size() - offset)
      return make_error(errc::corrupt_data, "section ", i, " at ", offset, " of ", size,
                        " bytes lies outside the file of ", bytes.size())
          .at(source, entry_at);
    if (found_at[kind] != 0)
      return make_error(errc::corrupt_data, "section kind ", kind, " appears twice").at(source, entry_at);
    const auto body = bytes.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(size));
    if (crc32c(body) != crc)
      return make_error(errc::corrupt_data, "section ", i, " checksum mismatch").at(source, offset);
    found[kind] = body;
    found_at[kind] = offset;
  }
  if (found_at[1] == 0 || found_at[2] == 0)
    return make_error(errc::corrupt_data, "the file lacks its ", found_at[1] == 0 ? "router" : "patterns", " section")
        .at(source, ex::header_bytes);
  // Bytes outside every section (alignment padding) carry no checksum, so
  // they must be zero: no byte of the file can change unnoticed.
  for (std::uint64_t at = sections_start; at < bytes.size(); ++at) {
    bool covered = false;
    for (int k = 1; k <= 2; ++k)
      if (at >= found_at[k] && at < found_at[k] + found[k].size()) {
        at = found_at[k] + found[k].size() - 1;
        covered = true;
        break;
      }
    if (!covered && bytes[static_cast<std::size_t>(at)] != std::byte{0})
      return make_error(errc::corrupt_data, "padding byte is not zero").at(source, at);
  }
  RUVLLM_TRY_ASSIGN(auto router, ex::decode_router(byte_reader(found[1], source, found_at[1])));
  RUVLLM_TRY_ASSIGN(auto bank, ex::decode_patterns<B>(byte_reader(found[2], source, found_at[2])));
  return learned_state<B>{std::move(router), std::move(bank)};
}

/// Writes the router and bank to path atomically (temporary file, fsync,
/// rename). Errors: io_error naming the path.
template <Backend B>
[[nodiscard]] result<void> export_learning(std::string_view path, const fastgrnn_router<float>& router,
                                           const reasoning_bank<B>& bank) {
  const auto bytes = encode_learning(router, bank);
  return store::write_file_atomically(path, bytes);
}

/// Reads path and replaces router and bank with its contents, or changes
/// nothing when the file is missing, corrupt or malformed. Errors:
/// io_error, corrupt_data / unsupported naming the file and byte offset.
template <Backend B>
[[nodiscard]] result<void> import_learning(std::string_view path, fastgrnn_router<float>& router,
                                           reasoning_bank<B>& bank) {
  RUVLLM_TRY_ASSIGN(auto map, mapped_file::open(path));
  RUVLLM_TRY_ASSIGN(auto state, decode_learning<B>(map.bytes(), path));
  router = std::move(state.router);
  bank = std::move(state.bank);
  return {};
}

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_EXCHANGE_HPP
