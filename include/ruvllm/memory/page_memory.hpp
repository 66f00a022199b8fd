#ifndef RUVLLM_MEMORY_PAGE_MEMORY_HPP
#define RUVLLM_MEMORY_PAGE_MEMORY_HPP

// Whole-page memory from the operating system: the one place the memory layer
// asks for bytes. On Linux an anonymous private mapping aligned to the page
// size (2 MiB by default) with MADV_HUGEPAGE, so the kernel may back it with
// transparent huge pages: a KV slab read at every decode step then costs one
// TLB entry per 2 MiB instead of 512. Pages are committed on first touch, so
// a large mapping costs address space, not RAM, until it is written. Where
// mmap is unavailable (or refuses), aligned operator new is the fallback.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "ruvllm/core/error.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <unistd.h>
#define RUVLLM_MEMORY_HAVE_MMAP 1
#else
#define RUVLLM_MEMORY_HAVE_MMAP 0
#endif

namespace ruvllm::memory {

/// Default page of the pool: 2 MiB, the x86-64 and AArch64 huge page.
inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

/// The machine's physical memory in bytes, or SIZE_MAX where the system
/// does not say.
[[nodiscard]] inline std::size_t physical_memory_bytes() noexcept {
#if RUVLLM_MEMORY_HAVE_MMAP && defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && static_cast<std::size_t>(pages) <= SIZE_MAX / static_cast<std::size_t>(page))
    return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
#endif
  return SIZE_MAX;
}

namespace detail {

/// The text of a small system file (a /proc or cgroup file), at most 64 KiB;
/// empty when it cannot be read.
[[nodiscard]] inline std::string read_small_file(const std::string& path) {
  std::string text;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return text;
  char chunk[4096];
  std::size_t got = 0;
  while (text.size() < (std::size_t{1} << 16) && (got = std::fread(chunk, 1, sizeof chunk, f)) > 0)
    text.append(chunk, got);
  std::fclose(f);
  return text;
}

/// A cgroup memory limit file's value: a byte count, or SIZE_MAX for
/// cgroup v2's "max" and for anything that is not a plain number.
[[nodiscard]] inline std::size_t parse_cgroup_limit(std::string_view text) noexcept {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return SIZE_MAX;
  std::size_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return SIZE_MAX;
    const auto digit = static_cast<std::size_t>(c - '0');
    if (value > (SIZE_MAX - digit) / 10) return SIZE_MAX;
    value = value * 10 + digit;
  }
  return value;
}

/// The lowest limit in `file` of the cgroup `path` (as /proc/self/cgroup
/// names it) and of its ancestors, under the hierarchy mounted at `mount`.
/// Every level counts because a parent's limit binds its children; levels
/// whose file is missing (outside a namespace's view, or the root, which
/// has none) are skipped, so a container that mounts only its own group
/// still finds that group's limit at the mount's top.
[[nodiscard]] inline std::size_t lowest_cgroup_limit(const std::string& mount, std::string_view path,
                                                     const char* file) {
  std::size_t lowest = SIZE_MAX;
  while (true) {
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    const std::string dir = mount + std::string(path);
    lowest = std::min(lowest, parse_cgroup_limit(read_small_file(dir + "/" + file)));
    if (path.empty()) return lowest;
    const std::size_t slash = path.rfind('/');
    path = path.substr(0, slash == std::string_view::npos ? 0 : slash);
  }
}

/// The memory limit of the cgroups named by `self_cgroup` (the text of
/// /proc/self/cgroup) with the cgroup file systems under `root`
/// (/sys/fs/cgroup): cgroup v2's memory.max, at the top or under "unified"
/// on a hybrid system, and v1's memory.limit_in_bytes under "memory". SIZE_MAX
/// when none is set.
[[nodiscard]] inline std::size_t cgroup_memory_limit(const std::string& root, std::string_view self_cgroup) {
  std::size_t lowest = SIZE_MAX;
  while (!self_cgroup.empty()) {
    const std::size_t end = std::min(self_cgroup.find('\n'), self_cgroup.size());
    const std::string_view line = self_cgroup.substr(0, end);
    self_cgroup.remove_prefix(std::min(end + 1, self_cgroup.size()));
    // "hierarchy-id:controller,controller:path"; v2's line is "0::path".
    const std::size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string_view::npos || second == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
    if (controllers.empty()) {
      lowest = std::min({lowest, lowest_cgroup_limit(root, path, "memory.max"),
                         lowest_cgroup_limit(root + "/unified", path, "memory.max")});
      continue;
    }
    for (std::string_view list = controllers; !list.empty();) {
      const std::size_t comma = std::min(list.find(','), list.size());
      if (list.substr(0, comma) == "memory")
        lowest = std::min(lowest, lowest_cgroup_limit(root + "/memory", path, "memory.limit_in_bytes"));
      list.remove_prefix(std::min(comma + 1, list.size()));
    }
  }
  return lowest;
}

}  // namespace detail

/// The memory this process may use: the lower of the machine's physical
/// memory and its cgroups' limit (a container's --memory), or SIZE_MAX
/// where neither is known. The default limit of buffers sized from a file's
/// metadata: past it a process can only end in an out-of-memory kill.
[[nodiscard]] inline std::size_t memory_limit_bytes() {
#if defined(__linux__)
  const std::size_t cgroup =
      detail::cgroup_memory_limit("/sys/fs/cgroup", detail::read_small_file("/proc/self/cgroup"));
  return std::min(physical_memory_bytes(), cgroup);
#else
  return physical_memory_bytes();
#endif
}

/// An owning run of zero-filled bytes aligned to `align` (a power of two).
/// Move-only; not synchronized (a value). allocate() is the only call that
/// allocates; the destructor returns the memory to the operating system.
class page_memory {
 public:
  page_memory() noexcept = default;
  page_memory(page_memory&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        map_base_(std::exchange(o.map_base_, nullptr)),
        map_size_(std::exchange(o.map_size_, 0)),
        align_(std::exchange(o.align_, 0)) {}
  page_memory& operator=(page_memory&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      map_base_ = std::exchange(o.map_base_, nullptr);
      map_size_ = std::exchange(o.map_size_, 0);
      align_ = std::exchange(o.align_, 0);
    }
    return *this;
  }
  page_memory(const page_memory&) = delete;
  page_memory& operator=(const page_memory&) = delete;
  ~page_memory() { reset(); }

  /// Maps `bytes` (> 0, a multiple of `align`) zero-filled bytes aligned to
  /// `align` (a power of two >= 4096). Errors: out_of_memory when the system
  /// refuses, invalid_argument for a bad size or alignment.
  [[nodiscard]] static result<page_memory> allocate(std::size_t bytes, std::size_t align = huge_page_bytes) {
    if (align < 4096 || (align & (align - 1)) != 0)
      return make_error(errc::invalid_argument, "page alignment ", align, " must be a power of two >= 4096");
    if (bytes == 0 || bytes % align != 0)
      return make_error(errc::invalid_argument, "page memory size ", bytes, " must be a positive multiple of ", align);
    if (bytes > (std::size_t{1} << 47))
      return make_error(errc::out_of_memory, "page memory size ", bytes, " exceeds the address space limit 2^47");
    page_memory m;
    m.align_ = align;
#if RUVLLM_MEMORY_HAVE_MMAP
    // Over-map by one alignment and trim, so the run starts on a huge page;
    // mmap alone already aligns to the 4 KiB base page.
    const std::size_t map_size = align > 4096 ? bytes + align : bytes;
    void* p = ::mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      auto* base = static_cast<std::byte*>(p);
      const auto addr = reinterpret_cast<std::uintptr_t>(base);
      const std::size_t lead = (align - (addr & (align - 1))) & (align - 1);
      if (lead != 0) ::munmap(base, lead);
      const std::size_t tail = map_size - lead - bytes;
      if (tail != 0) ::munmap(base + lead + bytes, tail);
      m.data_ = base + lead;
      m.size_ = bytes;
      m.map_base_ = m.data_;
      m.map_size_ = bytes;
#ifdef MADV_HUGEPAGE
      // Advice only: a kernel without THP (or with it disabled) ignores it.
      if (align >= huge_page_bytes) static_cast<void>(::madvise(m.data_, bytes, MADV_HUGEPAGE));
#endif
      return m;
    }
#endif
    void* q = ::operator new (bytes, std::align_val_t{align}, std::nothrow);
    if (q == nullptr)
      return make_error(errc::out_of_memory, "allocating ", bytes, " bytes of page memory aligned to ", align,
                        " failed");
    std::memset(q, 0, bytes);
    m.data_ = static_cast<std::byte*>(q);
    m.size_ = bytes;
    return m;
  }

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return data_ == nullptr; }
  /// Whether the bytes come from mmap (true) or the aligned-new fallback.
  [[nodiscard]] bool mapped() const noexcept { return map_base_ != nullptr; }

  /// Returns the memory; the object becomes empty.
  void reset() noexcept {
    if (data_ == nullptr) return;
#if RUVLLM_MEMORY_HAVE_MMAP
    if (map_base_ != nullptr) {
      ::munmap(map_base_, map_size_);
    } else {
      ::operator delete (data_, std::align_val_t{align_});
    }
#else
    ::operator delete (data_, std::align_val_t{align_});
#endif
    data_ = nullptr;
    size_ = 0;
    map_base_ = nullptr;
    map_size_ = 0;
  }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::byte* map_base_ = nullptr;
  std::size_t map_size_ = 0;
  std::size_t align_ = 0;
};

}  // namespace ruvllm::memory

#endif  // RUVLLM_MEMORY_PAGE_MEMORY_HPP
