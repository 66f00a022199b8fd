// libFuzzer target for the hnsw file loader: any byte string, written to a
// file, must open as a view or fail with an error naming the file; a view
// that opens must survive searches and verify(); a read-write load must
// either fail or produce an index whose invariants hold and that accepts
// writes. Built with RUVLLM_BUILD_FUZZERS=ON (clang, -fsanitize=fuzzer,address).
//
// Also a seed generator: `hnsw_file_fuzz --write-seeds <dir>` writes valid
// files of a few shapes for the corpus.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "ruvllm/store/hnsw_index.hpp"

namespace {

namespace st = ruvllm::store;
using index_t = st::hnsw_index<st::metric::l2, ruvllm::precision::f32>;
constexpr std::uint32_t dim = 4;

const std::string& scratch_path() {
  static const std::string path = "/tmp/ruvllm_hnsw_fuzz_" + std::to_string(::getpid()) + ".hnsw";
  return path;
}

void exercise(const std::string& path) {
  const float queries[3][dim] = {{0, 0, 0, 0}, {1, -1, 0.5f, 2}, {-3, 0.25f, 7, 1}};
  if (auto view = index_t::open_view(path)) {
    for (const auto& q : queries) {
      (void)view->search(std::span<const float>(q, dim), 5);
      (void)view->search(std::span<const float>(q, dim), 3, {}, [](std::uint64_t key) { return key % 2 == 0; });
    }
    (void)view->verify();
    // Key lookups binary-search the file's key order: every probe bounds-checked.
    for (std::uint64_t key = 0; key < 8; ++key) (void)view->contains(key);
    (void)view->contains(~std::uint64_t{0});
  } else if (view.error().file() != path) {
    std::abort();  // every file error must name the file
  }
  if (auto loaded = index_t::load(path)) {
    if (!loaded->check_invariants()) std::abort();  // load verified them
    const float v[dim] = {0.5f, 0.5f, 0.5f, 0.5f};
    (void)loaded->upsert(1u << 20, v);
    (void)loaded->remove(1u << 20);
    if (!loaded->check_invariants()) std::abort();
  }
}

int write_seeds(const char* dir) {
  for (int variant = 0; variant < 4; ++variant) {
    auto index = index_t::create(st::hnsw_options{.dimension = dim,
                                                  .m = 2 + static_cast<std::uint32_t>(variant),
                                                  .ef_construction = 8,
                                                  .keep_originals = variant % 2 == 1,
                                                  .half_originals = variant == 3})
                     .value();
    const int n = variant == 0 ? 0 : 6 * variant;
    for (int i = 0; i < n; ++i) {
      const float v[dim] = {static_cast<float>(i), static_cast<float>(i % 3), -static_cast<float>(i % 5), 1.0f};
      (void)index.insert(static_cast<std::uint64_t>(i), v);
    }
    if (n > 4) (void)index.remove(2);
    const std::string path = std::string(dir) + "/seed" + std::to_string(variant) + ".hnsw";
    if (!index.save(path)) return 1;
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (*argc == 3 && std::strcmp((*argv)[1], "--write-seeds") == 0) std::exit(write_seeds((*argv)[2]));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = scratch_path();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
  exercise(path);
  std::remove(path.c_str());  // libFuzzer's exit skips atexit handlers
  return 0;
}
