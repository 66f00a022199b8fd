#ifndef RUVLLM_TESTS_KV_REF_BLOCK_STORE_HPP
#define RUVLLM_TESTS_KV_REF_BLOCK_STORE_HPP

// A reference BlockStore for the kv tests: refcounted blocks whose "KV" is
// one 64-bit tag per token slot, so a test can check that every block a
// cache serves holds the KV of exactly the prefix (and namespace) it was
// asked for. Misuse (retain/release/copy of a free block) is recorded, not
// asserted, so the test reports it on the main thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ruvllm/core/error.hpp"

namespace ruvllm::test {

class ref_block_store {
 public:
  ref_block_store(std::size_t capacity, std::size_t tokens_per_block)
      : refs_(capacity, 0), tags_(capacity, std::vector<std::uint64_t>(tokens_per_block, 0)) {
    for (std::size_t i = capacity; i-- > 0;) free_.push_back(static_cast<std::uint32_t>(i));
  }

  [[nodiscard]] result<std::uint32_t> allocate() {
    if (free_.empty()) return make_error(errc::out_of_memory, "ref_block_store full");
    const std::uint32_t id = free_.back();
    free_.pop_back();
    refs_[id] = 1;
    std::fill(tags_[id].begin(), tags_[id].end(), 0);
    ++in_use_;
    return id;
  }
  void retain(std::uint32_t id) {
    if (!live(id, "retain")) return;
    ++refs_[id];
  }
  void release(std::uint32_t id) {
    if (!live(id, "release")) return;
    if (--refs_[id] == 0) {
      free_.push_back(id);
      --in_use_;
    }
  }
  [[nodiscard]] std::uint32_t ref_count(std::uint32_t id) const { return id < refs_.size() ? refs_[id] : 0; }
  [[nodiscard]] std::size_t block_bytes() const { return 64; }
  [[nodiscard]] std::size_t blocks_in_use() const { return in_use_; }
  [[nodiscard]] std::size_t capacity_blocks() const { return refs_.size(); }
  [[nodiscard]] result<std::uint32_t> copy_block(std::uint32_t src, std::size_t tokens) {
    if (!live(src, "copy_block")) return make_error(errc::invalid_argument, "copy of a free block");
    if (tokens > tags_[src].size()) {
      failure_ = "copy_block of too many tokens";
      return make_error(errc::invalid_argument, failure_);
    }
    if (fail_copies_) return make_error(errc::out_of_memory, "copy disabled");
    RUVLLM_TRY_ASSIGN(const std::uint32_t id, allocate());
    for (std::size_t t = 0; t < tokens; ++t) tags_[id][t] = tags_[src][t];
    return id;
  }

  // Test access.
  [[nodiscard]] std::vector<std::uint64_t>& tags(std::uint32_t id) { return tags_[id]; }
  [[nodiscard]] const std::string& failure() const { return failure_; }
  [[nodiscard]] std::uint64_t total_refs() const {
    std::uint64_t s = 0;
    for (const std::uint32_t r : refs_) s += r;
    return s;
  }
  void set_fail_copies(bool fail) { fail_copies_ = fail; }

 private:
  bool live(std::uint32_t id, const char* what) {
    if (id >= refs_.size() || refs_[id] == 0) {
      if (failure_.empty()) failure_ = std::string(what) + " of free block " + std::to_string(id);
      return false;
    }
    return true;
  }

  std::vector<std::uint32_t> refs_;
  std::vector<std::vector<std::uint64_t>> tags_;
  std::vector<std::uint32_t> free_;
  std::size_t in_use_ = 0;
  std::string failure_;
  bool fail_copies_ = false;
};

}  // namespace ruvllm::test

#endif  // RUVLLM_TESTS_KV_REF_BLOCK_STORE_HPP
