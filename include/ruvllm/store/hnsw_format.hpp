#ifndef RUVLLM_STORE_HNSW_FORMAT_HPP
#define RUVLLM_STORE_HNSW_FORMAT_HPP

// The on-disk format of an hnsw_index (version 2). Little-endian; every
// section starts at a multiple of 64 bytes so the arrays are read in place
// from a memory map with natural alignment. A reader accepts exactly the
// version it knows and names any other in its error (version 1 files, whose
// level-0 slots carried a count word and whose upper offsets were per slot,
// must be rebuilt by the writer that made them).
//
//   offset 0    file header, 128 bytes (hnsw_file_header below)
//     0   magic "RUVHNSW1"
//     8   u32 version (2)            12  u32 header bytes (128)
//     16  u32 dimension              20  u8 metric id, u8 precision id,
//                                        u8 flags (bit 0: originals, bit 1:
//                                        they are f16), u8 0
//     24  u32 m                      28  u32 m0 (2 m)
//     32  u32 ef_construction        36  u32 ef_search
//     40  u32 slot bytes             44  u32 code bytes
//     48  u64 slot count             56  u64 live count
//     64  u32 entry slot (~0: none)  68  i32 max level (-1: empty)
//     72  u64 sequence: the last write-ahead-log record folded into this file
//     80  u64 file bytes (the whole file)
//     88  u32 section count          92  u32 CRC-32C of the section table
//     96  u64 level generator seed   104 u64 upper count: slots with levels > 0
//     112 u32 x 3 reserved (0)       124 u32 CRC-32C of bytes 0..124
//   offset 128  section table: section count entries of 32 bytes
//     u32 kind, u32 CRC-32C of the section's bytes, u64 offset, u64 bytes,
//     u64 reserved (0)
//   sections (kinds), each 64-byte aligned, sizes fixed by the header:
//     1 level0     slot count * slot bytes: per slot [code, padded to 4
//                  bytes][u32 links[m0]]; a list shorter than m0 ends at the
//                  first 0xffffffff and is padded with it
//     2 keys       slot count * u64
//     3 states     slot count * u8 (1 live, 2 tombstone)
//     4 levels     slot count * u8
//     5 upper_slots   upper count * u32: the slots with levels > 0, ascending
//     6 upper_offsets upper count * u64: where each one's lists start, in u32
//                  units into upper_links
//     7 upper_links   u32 * n: per upper level of a slot, u32 links[m]
//                  (0xffffffff-padded like level 0)
//     8 originals  slot count * dimension * f32, or * f16 with flag bit 1
//                  (flag bit 0 only; for cosine, normalized)
//     9 key_order  live count * u32: the live slots sorted by key, so a
//                  read-only view finds a key by binary search
//
// Opening read-only checks the header (CRC, every field against its limit
// and against the template's metric, precision and derived sizes) and the
// section table (CRC, bounds and alignment of every section against the file
// length): O(1) in the data. Section CRCs, and that sections do not overlap
// and all padding is zero (so every byte of a file is covered by a check),
// are checked by verify() and by a read-write open (load). Searching a view bounds-checks every link it reads, so a
// file whose data sections are corrupt misleads a search but cannot crash it.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "ruvllm/core/byte_reader.hpp"
#include "ruvllm/core/checksum.hpp"
#include "ruvllm/core/error.hpp"

namespace ruvllm::store {

/// Section kinds of an hnsw file (see the file comment).
enum class hnsw_section : std::uint32_t {
  level0 = 1,
  keys = 2,
  states = 3,
  levels = 4,
  upper_slots = 5,
  upper_offsets = 6,
  upper_links = 7,
  originals = 8,
  key_order = 9,
};
inline constexpr std::uint32_t hnsw_section_kinds = 9;

inline constexpr std::array<char, 8> hnsw_magic = {'R', 'U', 'V', 'H', 'N', 'S', 'W', '1'};
inline constexpr std::uint32_t hnsw_format_version = 2;
inline constexpr std::uint32_t hnsw_max_sections = 16;
inline constexpr std::uint64_t hnsw_section_alignment = 64;

/// The 128-byte header, read and written with memcpy (layout in the file comment).
struct hnsw_file_header {
  std::array<char, 8> magic;
  std::uint32_t version;
  std::uint32_t header_bytes;
  std::uint32_t dimension;
  std::uint8_t metric;
  std::uint8_t precision;
  std::uint8_t flags;
  std::uint8_t reserved0;
  std::uint32_t m;
  std::uint32_t m0;
  std::uint32_t ef_construction;
  std::uint32_t ef_search;
  std::uint32_t slot_bytes;
  std::uint32_t code_bytes;
  std::uint64_t slot_count;
  std::uint64_t live_count;
  std::uint32_t entry;
  std::int32_t max_level;
  std::uint64_t sequence;
  std::uint64_t file_bytes;
  std::uint32_t section_count;
  std::uint32_t table_crc;
  std::uint64_t seed;
  std::uint64_t upper_count;
  std::uint32_t reserved1[3];
  std::uint32_t header_crc;
};
static_assert(sizeof(hnsw_file_header) == 128, "the hnsw file header is 128 bytes");
static_assert(offsetof(hnsw_file_header, slot_count) == 48 && offsetof(hnsw_file_header, sequence) == 72 &&
              offsetof(hnsw_file_header, upper_count) == 104 && offsetof(hnsw_file_header, header_crc) == 124);

/// One entry of the section table.
struct hnsw_section_entry {
  std::uint32_t kind;
  std::uint32_t crc;
  std::uint64_t offset;
  std::uint64_t bytes;
  std::uint64_t reserved;
};
static_assert(sizeof(hnsw_section_entry) == 32);

/// The header and section table of a file, checked for internal consistency
/// and against the file length (not yet against a template's parameters).
struct hnsw_file_layout {
  hnsw_file_header header{};
  std::array<hnsw_section_entry, hnsw_max_sections> sections{};
  std::uint32_t section_count = 0;

  /// The entry of kind, or nullptr.
  [[nodiscard]] const hnsw_section_entry* find(hnsw_section kind) const noexcept {
    for (std::uint32_t i = 0; i < section_count; ++i)
      if (sections[i].kind == static_cast<std::uint32_t>(kind)) return &sections[i];
    return nullptr;
  }
};

/// Reads and checks the header and section table of `bytes` (the whole
/// file, named `path` in errors). O(1): data sections are not read.
/// Errors: corrupt_data or unsupported with the file and offset.
[[nodiscard]] inline result<hnsw_file_layout> read_hnsw_layout(std::span<const std::byte> bytes,
                                                               std::string_view path) {
  byte_reader r(bytes, path);
  hnsw_file_layout out;
  RUVLLM_TRY_ASSIGN(auto raw, r.read_bytes(sizeof(hnsw_file_header), "hnsw file header"));
  std::memcpy(&out.header, raw.data(), sizeof out.header);
  const auto& h = out.header;
  const auto fail = [&](std::uint64_t offset, auto... parts) {
    return make_error(errc::corrupt_data, parts...).at(path, offset);
  };
  if (h.magic != hnsw_magic) return fail(0, "not an hnsw index file (bad magic)");
  if (h.version != hnsw_format_version)
    return make_error(errc::unsupported, "hnsw format version ", h.version, ", this reader knows ", hnsw_format_version)
        .at(path, 8);
  const std::uint32_t crc = crc32c(bytes.first(offsetof(hnsw_file_header, header_crc)));
  if (crc != h.header_crc) return fail(124, "header checksum ", h.header_crc, " != computed ", crc);
  if (h.header_bytes != sizeof(hnsw_file_header))
    return fail(12, "header size ", h.header_bytes, " != ", sizeof(hnsw_file_header));
  if (h.file_bytes != bytes.size())
    return fail(80, "file is ", bytes.size(), " bytes but its header says ", h.file_bytes, " (truncated?)");
  if (h.section_count == 0 || h.section_count > hnsw_max_sections)
    return fail(88, "section count ", h.section_count, " is outside 1..", hnsw_max_sections);
  out.section_count = h.section_count;
  const std::uint64_t table_bytes = std::uint64_t{h.section_count} * sizeof(hnsw_section_entry);
  RUVLLM_TRY_ASSIGN(auto table, r.read_bytes(table_bytes, "section table"));
  const std::uint32_t table_crc = crc32c(table);
  if (table_crc != h.table_crc) return fail(92, "section table checksum ", h.table_crc, " != computed ", table_crc);
  std::memcpy(out.sections.data(), table.data(), table_bytes);
  for (std::uint32_t i = 0; i < h.section_count; ++i) {
    const auto& s = out.sections[i];
    const std::uint64_t at = sizeof(hnsw_file_header) + std::uint64_t{i} * sizeof(hnsw_section_entry);
    if (s.kind < 1 || s.kind > hnsw_section_kinds) return fail(at, "section ", i, " has unknown kind ", s.kind);
    for (std::uint32_t j = 0; j < i; ++j)
      if (out.sections[j].kind == s.kind) return fail(at, "section kind ", s.kind, " appears twice");
    if (s.offset % hnsw_section_alignment != 0)
      return fail(at + 8, "section ", s.kind, " offset ", s.offset, " is not 64-byte aligned");
    if (s.offset < sizeof(hnsw_file_header) + table_bytes || s.offset > bytes.size() ||
        s.bytes > bytes.size() - s.offset)
      return fail(at + 8, "section ", s.kind, " [", s.offset, ", +", s.bytes, ") lies outside the file of ",
                  bytes.size(), " bytes");
  }
  return out;
}

/// CRC-32C check of every section, and of the padding: sections must not
/// overlap and every byte between and after them must be zero, so that no
/// byte of a file escapes the checks. The error names the offset.
[[nodiscard]] inline result<void> verify_hnsw_sections(std::span<const std::byte> bytes, const hnsw_file_layout& l,
                                                       std::string_view path) {
  std::array<std::uint32_t, hnsw_max_sections> by_offset{};
  for (std::uint32_t i = 0; i < l.section_count; ++i) {
    const auto& s = l.sections[i];
    const std::uint32_t crc = crc32c(bytes.subspan(s.offset, s.bytes));
    if (crc != s.crc)
      return make_error(errc::corrupt_data, "section ", s.kind, " checksum ", s.crc, " != computed ", crc)
          .at(path, s.offset);
    by_offset[i] = i;
  }
  std::sort(by_offset.begin(), by_offset.begin() + l.section_count,
            [&](std::uint32_t a, std::uint32_t b) { return l.sections[a].offset < l.sections[b].offset; });
  const auto zeros = [&](std::uint64_t from, std::uint64_t to) -> result<void> {
    for (std::uint64_t at = from; at < to; ++at)
      if (bytes[at] != std::byte{0}) return make_error(errc::corrupt_data, "padding byte is not zero").at(path, at);
    return {};
  };
  std::uint64_t cursor = sizeof(hnsw_file_header) + std::uint64_t{l.section_count} * sizeof(hnsw_section_entry);
  for (std::uint32_t k = 0; k < l.section_count; ++k) {
    const auto& s = l.sections[by_offset[k]];
    if (s.offset < cursor)
      return make_error(errc::corrupt_data, "section ", s.kind, " overlaps the bytes before it").at(path, s.offset);
    RUVLLM_TRY(zeros(cursor, s.offset));
    cursor = s.offset + s.bytes;
  }
  return zeros(cursor, bytes.size());
}

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_HNSW_FORMAT_HPP
