// libFuzzer target for the GGUF reader: any input must parse to an error or
// to a file whose every view lies inside the input. Seed corpus: the
// conformance models in tests/data/conformance (libFuzzer skips the JSON
// files quickly: they fail at the magic).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "ruvllm/model/gguf.hpp"

namespace {

using ruvllm::model::gguf_value;
using ruvllm::model::gguf_value_type;

void check(bool ok) {
  if (!ok) std::abort();
}

std::uint64_t walk(const gguf_value& v, int depth) {
  check(depth <= ruvllm::model::gguf_max_array_depth);
  std::uint64_t h = static_cast<std::uint64_t>(v.type());
  if (!v.is_array()) {
    for (auto b : v.payload()) h += std::to_integer<unsigned>(b);
    return h;
  }
  if (v.element_type() == gguf_value_type::string) {
    auto s = v.strings();
    check(s.has_value());
    for (auto sv : *s) h += sv.size();
  }
  auto elements = v.elements();
  check(elements.has_value() && elements->size() == v.size());
  for (const auto& e : *elements) h += walk(e, depth + 1);
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A private copy of exactly `size` bytes, so ASan flags any over-read.
  std::vector<std::byte> bytes(size);
  if (size > 0) std::memcpy(bytes.data(), data, size);
  auto f = ruvllm::model::gguf_file::parse(bytes, "fuzz.gguf");
  if (!f) {
    check(f.error().file() == "fuzz.gguf");
    check(!f.error().message().empty());
    return 0;
  }
  std::uint64_t h = 0;
  for (const auto& kv : f->metadata()) {
    check(f->find(kv.key) != nullptr);
    h += walk(kv.value, 1);
  }
  for (const auto& t : f->tensors()) {
    check(f->find_tensor(t.name) == &t);
    check(t.data >= bytes.data() && t.n_bytes <= size && t.data + t.n_bytes <= bytes.data() + size);
    check(t.row_bytes * t.rows() == t.n_bytes);
    if (t.n_bytes > 0) h += std::to_integer<unsigned>(t.data[0]) + std::to_integer<unsigned>(t.data[t.n_bytes - 1]);
  }
  volatile std::uint64_t sink = h;
  (void)sink;
  return 0;
}
