#ifndef RUVLLM_TESTS_STORE_MEMORY_TEST_SUPPORT_HPP
#define RUVLLM_TESTS_STORE_MEMORY_TEST_SUPPORT_HPP

// Helpers of the memory_store and role tests: scratch directories, seeded
// ids and vectors, and a complete image of a store's observable state
// (records, edges, every vector by record id) to assert that a rejected
// call changed nothing, in memory and after reopening.

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "ruvllm/store/memory_store.hpp"
#include "support/rng.hpp"

namespace mem_support {

namespace st = ruvllm::store;

/// A fresh scratch directory, removed by the destructor.
class scratch_dir {
 public:
  explicit scratch_dir(const std::string& name) {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("ruvllm_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
                .string();
    std::filesystem::remove_all(path_);
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

inline st::uuid random_id(ruvllm::test::rng& gen) { return st::make_uuid_v4(gen.next_u64(), gen.next_u64()); }

/// Everything a store shows: records by id (key zeroed: it is an internal
/// handle), edges, and per space the vectors by record id.
struct store_image {
  std::map<st::uuid, st::record> records;
  std::map<std::tuple<st::uuid, st::uuid, int>, float> edges;
  std::vector<std::map<st::uuid, std::vector<float>>> vectors;
  friend bool operator==(const store_image&, const store_image&) = default;
};

template <class Store>
store_image image_of(const Store& store) {
  store_image img;
  std::map<std::uint64_t, st::uuid> id_of_key;
  store.read([&](const st::record_graph& g) {
    g.for_each([&](const st::record& r) {
      st::record copy = r;
      id_of_key[r.key] = r.id;
      copy.key = 0;
      img.records[r.id] = copy;
    });
    g.for_each_edge([&](const st::edge& e) { img.edges[{e.from, e.to, static_cast<int>(e.type)}] = e.weight; });
    return 0;
  });
  img.vectors.resize(store.space_count());
  for (std::uint32_t s = 0; s < store.space_count(); ++s)
    store.index(s).for_each([&](std::uint64_t key, std::span<const float> v) {
      REQUIRE(id_of_key.contains(key));
      img.vectors[s][id_of_key[key]].assign(v.begin(), v.end());
    });
  return img;
}

}  // namespace mem_support

#endif  // RUVLLM_TESTS_STORE_MEMORY_TEST_SUPPORT_HPP
