// libFuzzer target for the SONA exchange file (sona/exchange.hpp): any byte
// string must decode or fail with an error naming its source and an offset;
// what decodes must route, search, and re-encode to a file that decodes to
// the same state. Built
// with RUVLLM_BUILD_FUZZERS=ON (clang, -fsanitize=fuzzer,address).
//
// Also a seed generator: `sona_exchange_fuzz --write-seeds <dir>` writes
// valid files of a few shapes for the corpus.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "ruvllm/sona/exchange.hpp"

namespace {

namespace sona = ruvllm::sona;

int write_seeds(const char* dir) {
  for (int variant = 0; variant < 3; ++variant) {
    const std::size_t dim = 4 + 4 * static_cast<std::size_t>(variant);
    auto router =
        sona::fastgrnn_router<float>::create(
            {.query_dim = dim, .hidden_dim = 4, .rank_w = 2, .rank_u = 2, .sparsity = variant == 1 ? 0.5 : 0.0})
            .value();
    if (variant == 1) router.sparsify();
    router.consolidate();
    auto bank = sona::reasoning_bank<>::create({.dim = dim,
                                                .models = 4,
                                                .params_dim = static_cast<std::size_t>(variant),
                                                .max_samples = 64,
                                                .kmeans = {.k = 2}})
                    .value();
    std::vector<float> x(dim), params(static_cast<std::size_t>(variant), 0.5f);
    for (int i = 0; i < 20; ++i) {
      for (std::size_t d = 0; d < dim; ++d) x[d] = static_cast<float>((i * 7 + static_cast<int>(d)) % 5) - 2.0f;
      bank.record(x, static_cast<std::uint32_t>(i % 4), 0.25f * static_cast<float>(i % 4), params);
    }
    if (!bank.consolidate()) return 1;
    const auto bytes = sona::encode_learning(router, bank);
    const std::string path = std::string(dir) + "/seed" + std::to_string(variant) + ".sona";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return 1;
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (*argc >= 3 && std::strcmp((*argv)[1], "--write-seeds") == 0) std::exit(write_seeds((*argv)[2]));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto state = sona::decode_learning<>(bytes, "fuzz input");
  if (!state) {
    if (state.error().file() != "fuzz input" || !state.error().has_offset()) std::abort();
    return 0;
  }
  // A decoded state is usable and its encoding is the input.
  auto ws = state->router.make_workspace();
  std::vector<float> q(state->router.options().query_dim, 0.5f);
  (void)state->router.route(q, {}, ws);
  std::vector<std::pair<std::size_t, float>> hits;
  std::vector<float> p(state->bank.options().dim, 0.25f);
  state->bank.search(p, 3, hits);
  // Encoding is canonical: what decodes re-encodes to bytes that decode to
  // the same state and encode to the same bytes.
  const auto once = sona::encode_learning(state->router, state->bank);
  auto back = sona::decode_learning<>(once, "re-encoded");
  if (!back) std::abort();
  if (sona::encode_learning(back->router, back->bank) != once) std::abort();
  return 0;
}
