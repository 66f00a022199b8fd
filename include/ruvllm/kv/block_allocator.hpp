#ifndef RUVLLM_KV_BLOCK_ALLOCATOR_HPP
#define RUVLLM_KV_BLOCK_ALLOCATOR_HPP

// kv::block_allocator -- fixed-size KV blocks with reference counts.
//
// ------------------------------------------------------------- the interface
// (stable; the paged KV cache, the radix prefix cache and the KV tiers are
// built on exactly these calls)
//   using block_id = std::uint32_t;
//   result<block_id> allocate();            a free block, reference count 1;
//                                           errc::out_of_memory when none is free
//   void retain(block_id);                  +1 reference (the block must be live)
//   void release(block_id);                 -1 reference; the block is free at 0
//   std::uint32_t ref_count(block_id) const;   0 for a free block
//   std::size_t block_bytes() const;        K + V bytes of one block, all layers
//   std::size_t blocks_in_use() const;      blocks with a reference count > 0
//   std::size_t capacity_blocks() const;    blocks the allocator can ever hold
//   result<block_id> copy_block(block_id src, std::size_t tokens);
//                                           copy-on-write helper: a new block
//                                           (count 1) holding src's first
//                                           `tokens` tokens of every layer
// plus the addressing the kernels need: k_block(layer, id), v_block(layer, id),
// k_slab(layer), v_slab(layer), layout(). A block's bytes are never touched by
// the allocator except in copy_block (allocate does not clear them).
//
// ------------------------------------------------------------------ layout
// One contiguous region, split into 2 x layers slabs, 64-byte aligned each:
//   [layer 0 K: capacity x k_page_bytes][layer 0 V: capacity x v_page_bytes]
//   [layer 1 K ...][layer 1 V ...] ...
// Block id b of layer l lives at k_slab(l) + b * k_page_bytes (keys) and
// v_slab(l) + b * v_page_bytes (values): exactly the addressing of
// kernels::paged_kv_view (k_pages = k_slab(l), v_pages = v_slab(l)), so one
// CSR page table of block ids serves every layer. Inside a block, each half
// is the view's head_token_dim page ([kv_head][token][dim], per precision).
// Why slabs per layer and role rather than one record per block holding all
// layers: decode attention of layer l reads only layer l's keys and then its
// values, so with slabs those bytes sit in a region 2 x layers times denser --
// fewer huge pages and TLB entries per step, and blocks allocated one after
// another by a growing sequence are adjacent, which keeps the hardware
// prefetcher streaming across block boundaries.
//
// The region is one allocation made when the allocator is created: either
// page memory of its own, or (create(pool, ...)) a pinned kv_pages
// allocation of a memory::unified_pool charged to a tenant, so the pool's
// budget covers the whole cache. Each 2 MiB pool page holds many blocks of
// one slab. Capacity is fixed (vLLM's model: size the cache once, recycle
// blocks); memory pages are still committed by the OS only when first
// written.
//
// ------------------------------------------------------------ thread-safety
// Every call may be made from any thread concurrently. allocate and the
// release that frees a block take a mutex around the free list (a stack of
// ids, preallocated: no call after create allocates, except error messages);
// retain, ref_count, blocks_in_use and the address functions are lock-free
// (atomic reference counts). The caller owns the synchronization of block
// *contents*: write a block only while no reader uses it (copy-on-write
// exists so shared blocks are never written).
//
// Errors: create() validates the layout and capacity. retain/release of an
// id that is out of range or not live is a caller bug: asserted in debug
// builds, ignored in release builds (never memory corruption).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>

#include "ruvllm/core/error.hpp"
#include "ruvllm/kernels/paged_kv_view.hpp"
#include "ruvllm/memory/page_memory.hpp"
#include "ruvllm/memory/unified_pool.hpp"

namespace ruvllm::kv {

/// Shape and formats of one KV block: layers x (K page + V page), each page
/// kv_heads page-heads of tokens_per_block tokens of head_dim channels in the
/// paged_kv_view byte layouts. A value; make() validates it.
struct block_layout {
  std::uint32_t layers = 0;
  std::uint32_t kv_heads = 0;
  std::uint32_t head_dim = 0;
  std::uint32_t tokens_per_block = 0;
  kernels::kv_format_desc k_format{};
  kernels::kv_format_desc v_format{};

  [[nodiscard]] std::size_t k_head_bytes() const noexcept {
    return kernels::kv_page_head_bytes(k_format, kernels::kv_role::key, tokens_per_block, head_dim);
  }
  [[nodiscard]] std::size_t v_head_bytes() const noexcept {
    return kernels::kv_page_head_bytes(v_format, kernels::kv_role::value, tokens_per_block, head_dim);
  }
  /// Bytes of one layer's key (value) page of a block.
  [[nodiscard]] std::size_t k_page_bytes() const noexcept { return std::size_t{kv_heads} * k_head_bytes(); }
  [[nodiscard]] std::size_t v_page_bytes() const noexcept { return std::size_t{kv_heads} * v_head_bytes(); }
  /// K + V bytes of one block over all layers.
  [[nodiscard]] std::size_t block_bytes() const noexcept {
    return std::size_t{layers} * (k_page_bytes() + v_page_bytes());
  }

  /// A checked layout: formats as kernels::kv_format_check; layers in
  /// [1, 4096]; kv_heads in [1, 65535].
  [[nodiscard]] static result<block_layout> make(std::size_t layers, std::size_t kv_heads, std::size_t head_dim,
                                                 std::size_t tokens_per_block, kernels::kv_format_desc k_format,
                                                 kernels::kv_format_desc v_format) {
    if (layers == 0 || layers > 4096)
      return make_error(errc::invalid_argument, "KV layers ", layers, " must be in [1, 4096]");
    if (kv_heads == 0 || kv_heads > 0xFFFF)
      return make_error(errc::invalid_argument, "KV heads ", kv_heads, " must be in [1, 65535]");
    RUVLLM_TRY(kernels::kv_format_check(k_format, kernels::kv_role::key, tokens_per_block, head_dim));
    RUVLLM_TRY(kernels::kv_format_check(v_format, kernels::kv_role::value, tokens_per_block, head_dim));
    block_layout l;
    l.layers = static_cast<std::uint32_t>(layers);
    l.kv_heads = static_cast<std::uint32_t>(kv_heads);
    l.head_dim = static_cast<std::uint32_t>(head_dim);
    l.tokens_per_block = static_cast<std::uint32_t>(tokens_per_block);
    l.k_format = k_format;
    l.v_format = v_format;
    return l;
  }

  /// The layout of precisions KPrecision / VPrecision with TokensPerBlock tokens.
  template <kernels::KvPrecision KPrecision, kernels::KvPrecision VPrecision, std::size_t TokensPerBlock>
  [[nodiscard]] static result<block_layout> of(std::size_t layers, std::size_t kv_heads, std::size_t head_dim) {
    return make(layers, kv_heads, head_dim, TokensPerBlock, kernels::kv_format_of<KPrecision>,
                kernels::kv_format_of<VPrecision>);
  }
};

/// Reference-counted fixed-size KV blocks in per-layer K and V slabs (see the
/// file comment for the interface, layout and thread-safety contract).
/// Movable (the state lives behind one pointer, so the address of the slabs
/// and of the synchronization never changes); create() allocates once.
class block_allocator {
 public:
  using block_id = std::uint32_t;
  /// Never returned by allocate(); a convenient "no block" marker.
  static constexpr block_id no_block = 0xFFFF'FFFFu;
  /// Largest capacity (ids stay below no_block; 2^31 leaves room for flags).
  static constexpr std::size_t max_capacity_blocks = std::size_t{1} << 31;

  block_allocator() noexcept = default;

  /// An allocator of capacity_blocks blocks in page memory of its own.
  /// Errors: capacity 0 or above max_capacity_blocks, a byte size that
  /// overflows, or the system refusing the memory.
  [[nodiscard]] static result<block_allocator> create(const block_layout& layout, std::size_t capacity_blocks) {
    RUVLLM_TRY_ASSIGN(const std::size_t bytes, region_bytes(layout, capacity_blocks));
    RUVLLM_TRY_ASSIGN(auto mem, memory::page_memory::allocate(bytes, memory::huge_page_bytes));
    auto s = std::make_unique<state>(layout, capacity_blocks);
    s->base = mem.data();
    s->own = std::move(mem);
    block_allocator a;
    a.s_ = std::move(s);
    return a;
  }

  /// An allocator whose region is a pinned alloc_kind::kv_pages allocation
  /// of `pool` charged to `tenant`, returned to the pool when the allocator
  /// is destroyed; the pool must outlive the allocator. Errors: as create,
  /// plus the pool's (budget, quota) under pressure policy `policy`.
  template <class Pool>
  [[nodiscard]] static result<block_allocator> create(
      Pool& pool, const block_layout& layout, std::size_t capacity_blocks, memory::tenant_id tenant = 0,
      memory::pressure_policy policy = memory::pressure_policy::reject) {
    RUVLLM_TRY_ASSIGN(const std::size_t bytes, region_bytes(layout, capacity_blocks));
    memory::alloc_request req;
    req.kind = memory::alloc_kind::kv_pages;
    req.tenant = tenant;
    req.policy = policy;
    req.pinned = true;
    RUVLLM_TRY_ASSIGN(const memory::allocation handle, pool.allocate(bytes, req));
    auto s = std::make_unique<state>(layout, capacity_blocks);
    s->base = pool.data(handle);
    s->pool = &pool;
    s->pool_handle = handle;
    s->pool_free = [](void* p, memory::allocation h) noexcept { static_cast<void>(static_cast<Pool*>(p)->free(h)); };
    block_allocator a;
    a.s_ = std::move(s);
    return a;
  }

  /// A free block with reference count 1 (contents unspecified). Errors:
  /// out_of_memory when every block is in use (the message names capacity).
  [[nodiscard]] result<block_id> allocate() {
    const block_id id = try_allocate();
    if (id == no_block)
      return make_error(errc::out_of_memory, "all ", s_->capacity, " KV blocks of ", s_->layout.block_bytes(),
                        " bytes are in use");
    return id;
  }

  /// allocate() without an error object: no_block when none is free. The
  /// allocation-free form for hot paths (plan()).
  [[nodiscard]] block_id try_allocate() noexcept {
    block_id id;
    {
      std::lock_guard<std::mutex> lock(s_->mutex);
      if (s_->free_top == 0) return no_block;
      id = s_->free_stack[--s_->free_top];
      s_->in_use.store(s_->in_use.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    s_->refs[id].store(1, std::memory_order_release);
    return id;
  }

  /// Adds a reference to live block `id` (lock-free).
  void retain(block_id id) noexcept {
    if (RUVLLM_UNLIKELY(id >= s_->capacity)) {
      RUVLLM_ASSERT(id < s_->capacity);
      return;
    }
    [[maybe_unused]] const std::uint32_t before = s_->refs[id].fetch_add(1, std::memory_order_relaxed);
    RUVLLM_ASSERT(before > 0);
  }

  /// Drops a reference to live block `id`; the last one frees it.
  void release(block_id id) noexcept {
    if (RUVLLM_UNLIKELY(id >= s_->capacity)) {
      RUVLLM_ASSERT(id < s_->capacity);
      return;
    }
    std::uint32_t cur = s_->refs[id].load(std::memory_order_relaxed);
    do {
      if (RUVLLM_UNLIKELY(cur == 0)) {
        RUVLLM_ASSERT(cur > 0);  // releasing a free block
        return;
      }
    } while (!s_->refs[id].compare_exchange_weak(cur, cur - 1, std::memory_order_acq_rel, std::memory_order_relaxed));
    if (cur != 1) return;
    std::lock_guard<std::mutex> lock(s_->mutex);
    s_->free_stack[s_->free_top++] = id;
    s_->in_use.store(s_->in_use.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }

  /// References held on `id` (0 when free or out of range).
  [[nodiscard]] std::uint32_t ref_count(block_id id) const noexcept {
    return id < s_->capacity ? s_->refs[id].load(std::memory_order_acquire) : 0;
  }

  /// A new block (count 1) whose first `tokens` tokens equal src's in every
  /// layer, K and V; the rest is unspecified. src must be live and stay so
  /// during the call. Errors: out_of_memory (no free block), out_of_range
  /// (src or tokens > tokens_per_block).
  [[nodiscard]] result<block_id> copy_block(block_id src, std::size_t tokens) {
    if (src >= s_->capacity || ref_count(src) == 0)
      return make_error(errc::out_of_range, "copy_block source ", src, " is not a live block (capacity ", s_->capacity,
                        ")");
    if (tokens > s_->layout.tokens_per_block)
      return make_error(errc::out_of_range, "copy_block of ", tokens, " tokens exceeds the block's ",
                        s_->layout.tokens_per_block);
    RUVLLM_TRY_ASSIGN(const block_id dst, allocate());
    copy_tokens(src, dst, tokens);
    return dst;
  }

  /// Copies the first `tokens` tokens of every layer's K and V pages from
  /// block src to block dst (both live, tokens <= tokens_per_block).
  void copy_tokens(block_id src, block_id dst, std::size_t tokens) noexcept {
    const block_layout& l = s_->layout;
    const std::size_t kh = l.k_head_bytes(), vh = l.v_head_bytes();
    const std::size_t kn = prefix_bytes(l.k_format, kernels::kv_role::key, tokens);
    const std::size_t vn = prefix_bytes(l.v_format, kernels::kv_role::value, tokens);
    for (std::size_t layer = 0; layer < l.layers; ++layer) {
      const std::byte* ks = k_block(layer, src);
      std::byte* kd = k_block(layer, dst);
      const std::byte* vs = v_block(layer, src);
      std::byte* vd = v_block(layer, dst);
      for (std::size_t h = 0; h < l.kv_heads; ++h) {
        std::memcpy(kd + h * kh, ks + h * kh, kn);
        std::memcpy(vd + h * vh, vs + h * vh, vn);
      }
    }
  }

  /// K + V bytes of one block over all layers.
  [[nodiscard]] std::size_t block_bytes() const noexcept { return s_->layout.block_bytes(); }
  /// Blocks with a reference count above zero (a relaxed snapshot).
  [[nodiscard]] std::size_t blocks_in_use() const noexcept { return s_->in_use.load(std::memory_order_relaxed); }
  /// Blocks the allocator holds in total.
  [[nodiscard]] std::size_t capacity_blocks() const noexcept { return s_ ? s_->capacity : 0; }
  /// The block shape and formats.
  [[nodiscard]] const block_layout& layout() const noexcept { return s_->layout; }

  /// Start of layer `layer`'s key slab: kernels::paged_kv_view::k_pages.
  [[nodiscard]] std::byte* k_slab(std::size_t layer) const noexcept { return s_->base + s_->k_off[layer]; }
  /// Start of layer `layer`'s value slab: kernels::paged_kv_view::v_pages.
  [[nodiscard]] std::byte* v_slab(std::size_t layer) const noexcept { return s_->base + s_->v_off[layer]; }
  /// Keys of block id in layer `layer` (kv_heads page-heads).
  [[nodiscard]] std::byte* k_block(std::size_t layer, block_id id) const noexcept {
    return k_slab(layer) + std::size_t{id} * s_->k_page;
  }
  /// Values of block id in layer `layer`.
  [[nodiscard]] std::byte* v_block(std::size_t layer, block_id id) const noexcept {
    return v_slab(layer) + std::size_t{id} * s_->v_page;
  }

 private:
  struct state {
    state(const block_layout& l, std::size_t cap)
        : layout(l),
          capacity(static_cast<std::uint32_t>(cap)),
          k_page(l.k_page_bytes()),
          v_page(l.v_page_bytes()),
          refs(std::make_unique<std::atomic<std::uint32_t>[]>(cap)),
          free_stack(std::make_unique<block_id[]>(cap)),
          k_off(std::make_unique<std::size_t[]>(l.layers)),
          v_off(std::make_unique<std::size_t[]>(l.layers)) {
      // Low ids on top: a fresh allocator hands out 0, 1, 2 ... so a growing
      // sequence's blocks are adjacent in every slab.
      for (std::size_t i = 0; i < cap; ++i) free_stack[i] = static_cast<block_id>(cap - 1 - i);
      free_top = capacity;
      std::size_t off = 0;
      for (std::size_t layer = 0; layer < l.layers; ++layer) {
        k_off[layer] = off;
        off = round_up(off + cap * k_page, 64);
        v_off[layer] = off;
        off = round_up(off + cap * v_page, 64);
      }
    }
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {
      if (pool_free != nullptr) pool_free(pool, pool_handle);
    }

    block_layout layout;
    std::uint32_t capacity;
    std::size_t k_page, v_page;
    std::unique_ptr<std::atomic<std::uint32_t>[]> refs;
    std::unique_ptr<block_id[]> free_stack;
    std::unique_ptr<std::size_t[]> k_off, v_off;
    std::uint32_t free_top = 0;  // guarded by mutex
    std::atomic<std::size_t> in_use{0};
    std::mutex mutex;
    std::byte* base = nullptr;
    memory::page_memory own;
    void* pool = nullptr;
    memory::allocation pool_handle{};
    void (*pool_free)(void*, memory::allocation) noexcept = nullptr;
  };

  [[nodiscard]] static constexpr std::size_t round_up(std::size_t x, std::size_t a) noexcept {
    return (x + a - 1) / a * a;
  }

  // Bytes of a page-head holding the first `tokens` tokens: token-major
  // formats scale with tokens; KIVI keys hold whole groups of tokens.
  [[nodiscard]] std::size_t prefix_bytes(kernels::kv_format_desc f, kernels::kv_role r,
                                         std::size_t tokens) const noexcept {
    const block_layout& l = s_->layout;
    const bool kivi = f.format == kernels::kv_format::kivi2 || f.format == kernels::kv_format::kivi4;
    if (kivi && r == kernels::kv_role::key) {
      const std::size_t groups = (tokens + f.group - 1) / f.group;
      return kernels::kv_page_head_bytes(f, r, groups * f.group, l.head_dim);
    }
    return kernels::kv_page_head_bytes(f, r, tokens, l.head_dim);
  }

  // Bytes of the whole region, 64-byte aligned slabs, rounded to huge pages.
  [[nodiscard]] static result<std::size_t> region_bytes(const block_layout& l, std::size_t capacity) {
    if (l.layers == 0 || l.kv_heads == 0 || l.k_page_bytes() == 0 || l.v_page_bytes() == 0)
      return make_error(errc::invalid_argument, "KV block layout is empty: build it with block_layout::make");
    if (capacity == 0 || capacity > max_capacity_blocks)
      return make_error(errc::invalid_argument, "KV block capacity ", capacity, " must be in [1, ", max_capacity_blocks,
                        "]");
    const std::size_t per_layer = round_up(capacity * l.k_page_bytes(), 64) + round_up(capacity * l.v_page_bytes(), 64);
    const std::size_t limit = std::size_t{1} << 46;
    if (per_layer / capacity > (std::size_t{1} << 32) || per_layer > limit / l.layers)
      return make_error(errc::out_of_memory, "KV region of ", capacity, " blocks x ", l.block_bytes(),
                        " bytes exceeds the limit ", limit);
    return round_up(per_layer * l.layers, memory::huge_page_bytes);
  }

  std::unique_ptr<state> s_;
};

}  // namespace ruvllm::kv

#endif  // RUVLLM_KV_BLOCK_ALLOCATOR_HPP
