// libFuzzer target for the GGUF reader and what is built from a parsed file:
// any input must parse to an error or to a file whose every view lies inside
// the input; a tokenizer built from a parsed file must encode and decode
// without crashing, with ids in range and valid UTF-8 out; a llama model
// loaded from it must evaluate a prompt and a decode step (or refuse with an
// error) and its logits, whatever the weights made of them, must sample to an
// id in range. Seed corpus: the conformance models in tests/data/conformance
// (libFuzzer skips the JSON files quickly: they fail at the magic), plus,
// written by `gguf_fuzz --write-seeds <dir> <conformance dir>`,
// metadata-only copies of them (small files that parse, so mutations reach
// the tokenizer quickly) and tests/support/small_llama.hpp's model in each of
// small_llama_forms: the conformance models exceed
// the fuzzer's input length, so mutations reach the model loader and the
// forward pass through these.

#include <dirent.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/model/gguf.hpp"
#include "ruvllm/model/gguf_writer.hpp"
#include "ruvllm/model/llama.hpp"
#include "ruvllm/model/sampler.hpp"
#include "ruvllm/model/tokenizer.hpp"
#include "support/small_llama.hpp"

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

// Writes <dir>/<name>.meta.gguf for every <src>/<name>.gguf (its metadata
// and no tensors) and the model seeds. Returns a process exit status.
int write_seeds(const std::string& dir, const std::string& src) {
  DIR* d = ::opendir(src.c_str());
  if (d == nullptr) return 1;
  int written = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 5 || name.compare(name.size() - 5, 5, ".gguf") != 0) continue;
    auto f = ruvllm::model::gguf_file::open(src + "/" + name);
    if (!f) continue;
    ruvllm::model::gguf_writer w(f->alignment());
    bool ok = true;
    for (const auto& kv : f->metadata())
      if (kv.key != "general.alignment") ok = ok && w.add_value(kv.key, kv.value).has_value();
    if (ok && w.write(dir + "/" + name.substr(0, name.size() - 5) + ".meta.gguf")) ++written;
  }
  ::closedir(d);
  for (const auto& form : ruvllm::test::small_llama_forms) {
    const auto w = ruvllm::test::small_llama::in(form).writer();
    if (w && w->write(dir + "/" + form.name + ".model.gguf")) ++written;
  }
  std::printf("gguf_fuzz: wrote %d seeds to %s\n", written, dir.c_str());
  return written > 0 ? 0 : 1;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  if (*argc == 4 && std::strcmp((*argv)[1], "--write-seeds") == 0) std::exit(write_seeds((*argv)[2], (*argv)[3]));
  return 0;
}

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
  if (auto tok = ruvllm::model::tokenizer::from_gguf(*f)) {
    const auto ids = tok->encode("Hello world <|im_start|>caf\xC3\xA9 12345\n\xFF \xF0\x9F\xA6\x99", true, true);
    for (auto id : ids) check(id >= 0 && static_cast<std::size_t>(id) < tok->n_vocab());
    auto text = tok->decode(ids, {.remove_special = true, .render_special = true});
    check(text.has_value() && ruvllm::model::unicode::valid_utf8(*text));
    h += ids.size();
  }
  if (auto model = ruvllm::model::llama_model::load(std::move(*f))) {
    const std::size_t vocab = model->hparams().n_vocab;
    static ruvllm::thread_pool pool(1);
    auto ctx = ruvllm::model::llama_context<>::create(
        *model, pool, {.n_ctx = std::min<std::size_t>(model->hparams().n_ctx_train, 16), .max_batch = 4});
    if (ctx) {
      std::vector<float> logits(vocab);
      const std::int32_t last = static_cast<std::int32_t>(vocab - 1);
      const std::vector<std::int32_t> prompt = {0, last, 0, last, std::min(1, last)};
      // A model that loads, in a context that was created, runs tokens in
      // range: an error here is a bug, not a bad file.
      const std::size_t fits = std::min(prompt.size(), ctx->n_ctx());
      check(ctx->eval(std::span(prompt).first(fits), logits).has_value());
      auto s = ruvllm::model::sampler::create({}, vocab);
      check(s.has_value());
      const std::int32_t next = s->sample(logits);
      check(next >= 0 && static_cast<std::size_t>(next) < vocab);
      if (ctx->n_past() < ctx->n_ctx()) check(ctx->eval(std::span(&next, 1), logits).has_value());
    }
  }
  volatile std::uint64_t sink = h;
  (void)sink;
  return 0;
}
