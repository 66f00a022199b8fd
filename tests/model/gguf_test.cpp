// GGUF reader and writer: the conformance files (written by gguf-py and by
// llama.cpp's quantizer) parse with the documented shapes and metadata; the
// writer round-trips every value type and tensor type and reproduces a
// gguf-py file byte for byte; hand-made hostile files, truncations at many
// offsets and seeded byte flips give errors naming file and offset, never a
// crash; and the stored quantized tensors equal ruvllm's own quantizers
// applied to the F32 weights.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "model/gguf_copy.hpp"
#include "model/model_test_support.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "ruvllm/model/gguf.hpp"
#include "ruvllm/model/gguf_writer.hpp"
#include "support/rng.hpp"

namespace gguf_test {

namespace {

using namespace ruvllm::model;
using ruvllm::gguf_type;
using ruvllm::test::conformance_models;
using ruvllm::test::conformance_path;
using ruvllm::test::copy_to_writer;

gguf_file open_model(std::string_view name) {
  auto f = gguf_file::open(conformance_path(std::string(name) + ".gguf"));
  if (!f) FAIL(f.error().describe());
  return std::move(f).value();
}

std::vector<std::byte> read_all(const std::string& path) {
  std::vector<std::byte> out;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::byte buf[65536];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

// Everything a parsed file exposes, touched: every metadata element walked and
// the first and last byte of every tensor read. Under ASan this proves that a
// file the reader accepted only points inside its buffer.
std::uint64_t touch_everything(const gguf_file& f) {
  std::uint64_t h = f.version();
  auto walk = [&](auto&& self, const gguf_value& v) -> void {
    h += static_cast<std::uint64_t>(v.type());
    if (!v.is_array()) {
      for (auto b : v.payload()) h += std::to_integer<unsigned>(b);
      return;
    }
    if (v.element_type() == gguf_value_type::string) {
      auto s = v.strings();
      REQUIRE(s);
      for (auto sv : *s) h += sv.size();
    }
    auto elements = v.elements();
    REQUIRE(elements);
    REQUIRE(elements->size() == v.size());
    for (const auto& e : *elements) self(self, e);
  };
  for (const auto& kv : f.metadata()) {
    h += kv.key.size();
    walk(walk, kv.value);
  }
  for (const auto& t : f.tensors()) {
    REQUIRE(t.data >= f.bytes().data());
    REQUIRE(t.data + t.n_bytes <= f.bytes().data() + f.bytes().size());
    if (t.n_bytes > 0) h += std::to_integer<unsigned>(t.data[0]) + std::to_integer<unsigned>(t.data[t.n_bytes - 1]);
  }
  return h;
}

}  // namespace

TEST_CASE("gguf: conformance files parse with their documented shapes", "[model][gguf]") {
  for (auto name : conformance_models) {
    INFO(name);
    const auto f = open_model(name);
    CHECK(f.version() == 3);
    CHECK(f.alignment() == 32);
    CHECK(f.data_offset() % 32 == 0);
    const auto arch = f.get<std::string_view>("general.architecture").value();
    CHECK((arch == "llama" || arch == "qwen2"));
    const std::string prefix(arch);
    const std::uint32_t dim = name.starts_with("small256") ? 256 : 64;
    CHECK(f.get<std::uint32_t>(prefix + ".embedding_length").value() == dim);
    CHECK(f.get<std::uint32_t>(prefix + ".block_count").value() == 2);
    CHECK(f.get<std::uint32_t>(prefix + ".attention.head_count").value() == 4);
    CHECK(f.get<std::uint32_t>(prefix + ".attention.head_count_kv").value() == 2);
    const bool bpe = name.starts_with("tiny-bpe");
    const std::uint64_t vocab = bpe ? 705 : 448;
    const auto tokens = f.get<gguf_value>("tokenizer.ggml.tokens").value();
    CHECK(tokens.element_type() == gguf_value_type::string);
    CHECK(tokens.size() == vocab);
    CHECK(f.get<std::string_view>("tokenizer.ggml.model").value() == (bpe ? "gpt2" : "llama"));
    if (!bpe) CHECK(tokens.strings().value()[3] == "<0x00>");

    const gguf_tensor* embd = f.tensor("token_embd.weight").value();
    CHECK(embd->n_dims == 2);
    CHECK(embd->ne[0] == dim);
    CHECK(embd->ne[1] == vocab);
    CHECK(embd->rows() == vocab);
    CHECK(embd->row_bytes * embd->rows() == embd->n_bytes);
    CHECK(embd->offset % 32 == 0);
    const gguf_tensor* norm = f.tensor("blk.0.attn_norm.weight").value();
    CHECK(norm->type == gguf_type::f32);
    CHECK(norm->n_dims == 1);
    CHECK(norm->ne[0] == dim);
    const bool tied = name.find("qwen2") != std::string_view::npos;
    CHECK((f.find_tensor("output.weight") == nullptr) == tied);
    std::uint64_t params = 0;
    for (const auto& t : f.tensors()) params += t.n_elements();
    if (name == "tiny-f32" || name == "tiny-f16" || name == "tiny-q8_0" || name == "tiny-q4_0")
      CHECK(params == 155'968);
    if (name == "small256-q4_k") CHECK(params == 1'803'520);
    if (name == "tiny-bpe-qwen2-f32") CHECK(params == 144'000);
    if (name == "tiny-bpe-llama3-q8_0") CHECK(params == 188'864);
    // The storage type of 2-D tensors follows the file name.
    const gguf_type expect = name.ends_with("q4_k")   ? gguf_type::q4_k
                             : name.ends_with("q8_0") ? gguf_type::q8_0
                             : name.ends_with("q4_0") ? gguf_type::q4_0
                             : name.ends_with("f16")  ? gguf_type::f16
                                                      : gguf_type::f32;
    for (const auto& t : f.tensors()) CHECK(t.type == (t.n_dims == 2 ? expect : gguf_type::f32));
    touch_everything(f);
  }
}

TEST_CASE("gguf: typed metadata access names the key on a miss or a type mismatch", "[model][gguf]") {
  const auto f = open_model("tiny-f32");
  auto missing = f.get<std::uint32_t>("llama.no_such_key");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == ruvllm::errc::not_found);
  CHECK(missing.error().message().find("llama.no_such_key") != std::string::npos);
  CHECK(missing.error().file().find("tiny-f32.gguf") != std::string::npos);

  auto wrong = f.get<std::uint64_t>("llama.block_count");
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().code() == ruvllm::errc::invalid_argument);
  CHECK(wrong.error().message() == "metadata key 'llama.block_count': type mismatch: expected u64, found u32");
  CHECK(wrong.error().has_offset());

  CHECK(f.get<float>("llama.attention.layer_norm_rms_epsilon").value() == 1e-5f);
  CHECK(f.get<bool>("tokenizer.ggml.add_bos_token").value());
  CHECK_FALSE(f.get<std::string_view>("tokenizer.ggml.tokens"));
  CHECK(f.get_or<std::uint32_t>("llama.no_such_key", 7).value() == 7);
  CHECK_FALSE(f.get_or<std::uint64_t>("llama.block_count", 7));
  const auto scores = f.get<gguf_value>("tokenizer.ggml.scores").value();
  CHECK(scores.numbers<float>().value().size() == 448);
  CHECK(scores.at<float>(333).value() == 0.0f);  // "▁t", the first merge
  CHECK_FALSE(scores.at<float>(448));
  CHECK_FALSE(scores.numbers<std::int32_t>());
  CHECK(f.tensor("blk.9.attn_q.weight").error().message() == "tensor 'blk.9.attn_q.weight' is missing");

  const auto* q = f.find_tensor("blk.0.attn_q.weight");
  REQUIRE(q != nullptr);
  CHECK(q->as<ruvllm::precision::f32>().value().size() == 64 * 64);
  auto as_q8 = q->as<ruvllm::precision::q8_0>();
  REQUIRE_FALSE(as_q8);
  CHECK(as_q8.error().message() == "tensor 'blk.0.attn_q.weight' is F32, not Q8_0");
}

TEST_CASE("gguf: the writer reproduces gguf-py's files byte for byte", "[model][gguf]") {
  for (auto name : conformance_models) {
    INFO(name);
    const auto path = conformance_path(std::string(name) + ".gguf");
    const auto original = read_all(path);
    const auto f = open_model(name);
    const auto image = copy_to_writer(f).to_bytes().value();
    // gguf-py pads the last tensor too, exactly as llama.cpp's writer does.
    REQUIRE(image.size() == original.size());
    CHECK(std::memcmp(image.data(), original.data(), image.size()) == 0);
  }
}

TEST_CASE("gguf: add_value copies metadata as stored", "[model][gguf]") {
  for (auto name : conformance_models) {
    INFO(name);
    const auto f = open_model(name);
    gguf_writer w(f.alignment());
    for (const auto& kv : f.metadata()) REQUIRE(w.add_value(kv.key, kv.value));
    for (const auto& t : f.tensors())
      REQUIRE(w.add_tensor(t.name, t.type, std::span(t.ne.data(), t.n_dims), t.bytes()));
    const auto image = w.to_bytes().value();
    const auto original = read_all(conformance_path(std::string(name) + ".gguf"));
    REQUIRE(image.size() == original.size());
    CHECK(std::memcmp(image.data(), original.data(), image.size()) == 0);
  }
}

TEST_CASE("gguf: every value type and tensor type round-trips through the writer", "[model][gguf]") {
  for (std::uint32_t alignment : {32u, 64u, 1u}) {
    INFO("alignment " << alignment);
    gguf_writer w(alignment);
    REQUIRE(w.add<std::uint8_t>("u8", 200));
    REQUIRE(w.add<std::int8_t>("i8", -100));
    REQUIRE(w.add<std::uint16_t>("u16", 60000));
    REQUIRE(w.add<std::int16_t>("i16", -30000));
    REQUIRE(w.add<std::uint32_t>("u32", 4'000'000'000u));
    REQUIRE(w.add<std::int32_t>("i32", -2'000'000'000));
    REQUIRE(w.add<float>("f32", 1.5f));
    REQUIRE(w.add<bool>("bool", true));
    REQUIRE(w.add<std::uint64_t>("u64", ~std::uint64_t{0}));
    REQUIRE(w.add<std::int64_t>("i64", -(std::int64_t{1} << 62)));
    REQUIRE(w.add<double>("f64", 0.1));
    REQUIRE(w.add_string("str", std::string_view("h\0llo", 5)));
    REQUIRE(w.add_string("empty", ""));
    const std::vector<std::int32_t> ints = {1, -2, 3};
    REQUIRE(w.add_array<std::int32_t>("ints", ints));
    const std::vector<std::string> strs = {"a", "", "ccc"};
    REQUIRE(w.add_strings("strs", strs));
    gguf_array_builder nested(gguf_value_type::array);
    gguf_array_builder inner1(gguf_value_type::string);
    inner1.push_string("x").push_string("yz");
    gguf_array_builder inner2(gguf_value_type::boolean);
    inner2.push(true).push(false);
    gguf_array_builder inner3(gguf_value_type::array);
    gguf_array_builder leaf(gguf_value_type::uint16);
    leaf.push<std::uint16_t>(7);
    inner3.push_array(leaf);
    nested.push_array(inner1).push_array(inner2).push_array(inner3);
    REQUIRE(w.add_array("nested", nested));
    REQUIRE(w.add_array<float>("empty_array", std::span<const float>{}));

    CHECK(w.add<std::uint8_t>("u8", 1).error().code() == ruvllm::errc::already_exists);
    CHECK_FALSE(w.add<std::uint32_t>("general.alignment", 64));
    gguf_array_builder bad(gguf_value_type::uint32);
    bad.push<std::int32_t>(1);
    CHECK_FALSE(w.add_array("bad", bad));

    // One tensor per supported type, with recognisable bytes.
    struct spec {
      const char* name;
      gguf_type type;
      std::vector<std::uint64_t> ne;
      std::size_t bytes;
    };
    const std::vector<spec> specs = {
        {"f32", gguf_type::f32, {3, 5}, 60},
        {"f16", gguf_type::f16, {7}, 14},
        {"bf16", gguf_type::bf16, {2, 2, 2}, 16},
        {"q8_0", gguf_type::q8_0, {64, 3}, 2 * 3 * 34},
        {"q4_0", gguf_type::q4_0, {32, 1, 2, 2}, 4 * 18},
        {"q4_1", gguf_type::q4_1, {32, 3}, 3 * 20},
        {"q5_0", gguf_type::q5_0, {64, 3}, 2 * 3 * 22},
        {"q5_1", gguf_type::q5_1, {32, 2}, 2 * 24},
        {"q4_k", gguf_type::q4_k, {256, 2}, 2 * 144},
        {"q5_k", gguf_type::q5_k, {256, 3}, 3 * 176},
        {"q6_k", gguf_type::q6_k, {512}, 2 * 210},
        {"q2_k", gguf_type::q2_k, {256, 2}, 2 * 84},
        {"iq4_nl", gguf_type::iq4_nl, {96}, 3 * 18},
        {"q3_k", gguf_type::q3_k, {768}, 3 * 110},
        {"iq4_xs", gguf_type::iq4_xs, {256, 2}, 2 * 136},
    };
    std::vector<std::vector<std::byte>> data;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      std::vector<std::byte> d(specs[i].bytes);
      for (std::size_t j = 0; j < d.size(); ++j) d[j] = static_cast<std::byte>(j * 7 + i);
      REQUIRE(w.add_tensor(specs[i].name, specs[i].type, specs[i].ne, d));
      data.push_back(std::move(d));
    }
    const std::vector<std::uint64_t> odd = {33};
    CHECK_FALSE(w.add_tensor("odd", gguf_type::q8_0, odd, std::vector<std::byte>(34)));
    CHECK_FALSE(w.add_tensor("short", gguf_type::f32, odd, std::vector<std::byte>(4)));
    CHECK_FALSE(w.add_tensor("q8_k", gguf_type::q8_k, std::vector<std::uint64_t>{256}, std::vector<std::byte>(292)));
    CHECK_FALSE(w.add_tensor("f32", gguf_type::f32, std::vector<std::uint64_t>{1}, std::vector<std::byte>(4)));
    // 4 * (2^62 + 1) wraps to 4: the row size must not wrap into a match with the data.
    const auto wraps =
        w.add_tensor("wraps", gguf_type::f32, std::vector<std::uint64_t>{(1ull << 62) + 1}, std::vector<std::byte>(4));
    REQUIRE_FALSE(wraps);
    CHECK(wraps.error().code() == ruvllm::errc::out_of_range);

    const auto image = w.to_bytes().value();
    const auto f = gguf_file::parse(image, "roundtrip").value();
    CHECK(f.alignment() == alignment);
    CHECK(f.get<std::uint8_t>("u8").value() == 200);
    CHECK(f.get<std::int8_t>("i8").value() == -100);
    CHECK(f.get<std::uint16_t>("u16").value() == 60000);
    CHECK(f.get<std::int16_t>("i16").value() == -30000);
    CHECK(f.get<std::uint32_t>("u32").value() == 4'000'000'000u);
    CHECK(f.get<std::int32_t>("i32").value() == -2'000'000'000);
    CHECK(f.get<float>("f32").value() == 1.5f);
    CHECK(f.get<bool>("bool").value());
    CHECK(f.get<std::uint64_t>("u64").value() == ~std::uint64_t{0});
    CHECK(f.get<std::int64_t>("i64").value() == -(std::int64_t{1} << 62));
    CHECK(f.get<double>("f64").value() == 0.1);
    CHECK(f.get<std::string_view>("str").value() == std::string_view("h\0llo", 5));
    CHECK(f.get<std::string_view>("empty").value().empty());
    CHECK(f.get<gguf_value>("ints").value().numbers<std::int32_t>().value() == ints);
    const auto s = f.get<gguf_value>("strs").value().strings().value();
    CHECK(std::vector<std::string>(s.begin(), s.end()) == strs);
    const auto n = f.get<gguf_value>("nested").value().elements().value();
    REQUIRE(n.size() == 3);
    CHECK(n[0].strings().value() == std::vector<std::string_view>{"x", "yz"});
    CHECK(n[1].numbers<bool>().value() == std::vector<bool>{true, false});
    CHECK(n[2].elements().value()[0].at<std::uint16_t>(0).value() == 7);
    CHECK(f.get<gguf_value>("empty_array").value().size() == 0);
    CHECK(f.find("bad") == nullptr);

    REQUIRE(f.tensors().size() == specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const auto& t = f.tensors()[i];
      CHECK(t.name == specs[i].name);
      CHECK(t.type == specs[i].type);
      CHECK(t.n_dims == specs[i].ne.size());
      CHECK(t.offset % alignment == 0);
      REQUIRE(t.n_bytes == data[i].size());
      CHECK(std::memcmp(t.data, data[i].data(), t.n_bytes) == 0);
    }
    touch_everything(f);
  }
}

TEST_CASE("gguf: version 2 files read like version 3", "[model][gguf]") {
  // v2 and v3 share the layout (v3 only allowed big-endian files).
  auto bytes = read_all(conformance_path("tiny-q4_0.gguf"));
  const std::uint32_t v2 = 2;
  std::memcpy(bytes.data() + 4, &v2, 4);
  const auto f = gguf_file::parse(bytes, "v2.gguf").value();
  CHECK(f.version() == 2);
  CHECK(f.tensors().size() == 2 * 9 + 3);
  CHECK(f.tensor("output.weight").value()->type == gguf_type::q4_0);
}

TEST_CASE("gguf: the writer's files open from disk", "[model][gguf]") {
  gguf_writer w;
  REQUIRE(w.add_string("general.architecture", "llama"));
  const std::vector<float> x = {1, 2, 3, 4};
  REQUIRE(w.add_tensor("x", gguf_type::f32, std::vector<std::uint64_t>{4}, std::as_bytes(std::span(x))));
  const std::string path = "ruvllm_gguf_writer_test.gguf";
  REQUIRE(w.write(path));
  {
    const auto f = gguf_file::open(path).value();
    CHECK(f.get<std::string_view>("general.architecture").value() == "llama");
    const auto v = f.tensor("x").value()->as<ruvllm::precision::f32>().value();
    CHECK(std::vector<float>(v.begin(), v.end()) == x);
  }
  std::remove(path.c_str());
  auto bad = gguf_file::open("/nonexistent/x.gguf");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code() == ruvllm::errc::io_error);
}

namespace {

// A little-endian byte builder for hand-made hostile files.
struct raw {
  std::vector<std::byte> b;
  template <class T>
  raw& put(T v) {
    ruvllm::model::detail::put(b, v);
    return *this;
  }
  raw& str(std::string_view s) {
    ruvllm::model::detail::put_string(b, s);
    return *this;
  }
  raw& header(std::uint64_t tensors, std::uint64_t kvs, std::uint32_t version = 3) {
    return put(gguf_magic).put(version).put(tensors).put(kvs);
  }
  raw& pad(std::size_t a = 32) {
    b.resize((b.size() + a - 1) / a * a);
    return *this;
  }
};

ruvllm::error parse_error(const raw& r) {
  auto f = gguf_file::parse(r.b, "hostile.gguf");
  REQUIRE_FALSE(f);
  CHECK(f.error().file() == "hostile.gguf");
  return f.error();
}

bool mentions(const ruvllm::error& e, std::string_view what) {
  const bool ok = e.message().find(what) != std::string::npos;
  if (!ok) UNSCOPED_INFO("message: " << e.describe());
  return ok;
}

}  // namespace

TEST_CASE("gguf: hostile headers give errors with file and offset", "[model][gguf]") {
  using ruvllm::errc;
  {
    raw r;
    r.put<std::uint32_t>(0x46554746).put<std::uint32_t>(3);
    auto e = parse_error(r);
    CHECK(mentions(e, "bad magic"));
    CHECK(e.offset() == 0);
  }
  CHECK(mentions(parse_error(raw{}.header(0, 0, 1)), "version 1"));
  CHECK(mentions(parse_error(raw{}.header(0, 0, 0x03000000)), "big-endian"));
  CHECK(mentions(parse_error(raw{}.header(0, 0, 4)), "version 4"));
  CHECK(gguf_file::parse(raw{}.header(0, 0).b).has_value());
  {
    auto e = parse_error(raw{}.header(0, ~std::uint64_t{0}));
    CHECK(mentions(e, "metadata count 18446744073709551615 cannot fit"));
    CHECK(e.offset() == 16);
  }
  CHECK(mentions(parse_error(raw{}.header(std::uint64_t{1} << 40, 0)), "tensor count 1099511627776"));
  // A key whose length runs past the end.
  CHECK(mentions(parse_error(raw{}.header(0, 1).put<std::uint64_t>(1ull << 60).pad(64)), "truncated: metadata key"));
  // A string value of length 2^63.
  {
    auto e = parse_error(raw{}.header(0, 1).str("k").put<std::uint32_t>(8).put<std::uint64_t>(1ull << 63));
    CHECK(mentions(e, "metadata key 'k': truncated: string needs 9223372036854775808 bytes"));
    CHECK(e.offset() == 24 + 9 + 4 + 8);
  }
  // Arrays with hostile counts: fixed-size, strings, nested.
  CHECK(
      mentions(parse_error(raw{}.header(0, 1).str("a").put<std::uint32_t>(9).put<std::uint32_t>(10).put<std::uint64_t>(
                   ~std::uint64_t{0} / 4)),
               "overflows"));
  CHECK(mentions(parse_error(raw{}.header(0, 1).str("a").put<std::uint32_t>(9).put<std::uint32_t>(4).put<std::uint64_t>(
                     1ull << 40)),
                 "array of 1099511627776 u32 needs 4398046511104 bytes"));
  CHECK(mentions(parse_error(raw{}.header(0, 1).str("a").put<std::uint32_t>(9).put<std::uint32_t>(8).put<std::uint64_t>(
                     1ull << 40)),
                 "array of 1099511627776 string needs at least 8 bytes each"));
  CHECK(mentions(parse_error(raw{}.header(0, 1).str("a").put<std::uint32_t>(9).put<std::uint32_t>(9).put<std::uint64_t>(
                     1ull << 40)),
                 "needs at least 12 bytes each"));
  {
    raw r;
    r.header(0, 1).str("deep").put<std::uint32_t>(9);
    for (int i = 0; i < 100; ++i) r.put<std::uint32_t>(9).put<std::uint64_t>(1);
    CHECK(mentions(parse_error(r), "nested deeper than 8"));
  }
  CHECK(mentions(parse_error(raw{}.header(0, 1).str("t").put<std::uint32_t>(13).put<std::uint64_t>(0)),
                 "unknown metadata value type 13"));
  CHECK(
      mentions(parse_error(raw{}.header(0, 1).str("b").put<std::uint32_t>(7).put<std::uint8_t>(2)), "neither 0 nor 1"));
  CHECK(mentions(parse_error(raw{}
                                 .header(0, 2)
                                 .str("k")
                                 .put<std::uint32_t>(0)
                                 .put<std::uint8_t>(1)
                                 .str("k")
                                 .put<std::uint32_t>(0)
                                 .put<std::uint8_t>(2)),
                 "duplicate metadata key 'k'"));
  CHECK(mentions(parse_error(raw{}.header(0, 1).str("general.alignment").put<std::uint32_t>(4).put<std::uint32_t>(48)),
                 "general.alignment 48 is not a power of two"));
  CHECK(mentions(parse_error(raw{}.header(0, 1).str("general.alignment").put<std::uint32_t>(10).put<std::uint64_t>(32)),
                 "expected u32, found u64"));

  auto tensor = [](std::string_view name, std::vector<std::uint64_t> ne, std::uint32_t type, std::uint64_t offset,
                   std::size_t data_bytes) {
    raw r;
    r.header(1, 0).str(name).put<std::uint32_t>(static_cast<std::uint32_t>(ne.size()));
    for (auto d : ne) r.put(d);
    r.put(type).put(offset).pad();
    r.b.resize(r.b.size() + data_bytes);
    return r;
  };
  CHECK(gguf_file::parse(tensor("w", {32, 2}, 8, 0, 68).b).has_value());
  {
    auto e = parse_error(tensor("w", {32, 2}, 16, 0, 1000));
    CHECK(e.code() == errc::unsupported);
    CHECK(mentions(e,
                   "tensor 'w' has type IQ2_XXS (16), which ruvllm does not read (F32, F16, BF16, Q8_0, Q4_0, "
                   "Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K are supported)"));
  }
  CHECK(mentions(parse_error(tensor("w", {32}, 1000, 0, 64)), "type unknown (1000)"));
  CHECK(mentions(parse_error(tensor("w", {33, 2}, 8, 0, 1000)),
                 "row of 33 elements is not a multiple of Q8_0's block size 32"));
  CHECK(mentions(parse_error(tensor("w", {32, 2}, 8, 0, 67)), "outside the data section of 67 bytes"));
  CHECK(mentions(parse_error(tensor("w", {32, 2}, 8, 16, 200)), "offset 16 is not a multiple of the alignment 32"));
  CHECK(mentions(parse_error(tensor("w", {32, 2}, 8, ~std::uint64_t{0} << 5, 200)), "outside the data section"));
  CHECK(mentions(parse_error(tensor("w", {1ull << 62, 1ull << 62}, 0, 0, 64)), "overflows"));
  CHECK(mentions(parse_error(tensor("w", {1ull << 63}, 0, 0, 64)), "is negative"));
  CHECK(mentions(parse_error(tensor("w", {1ull << 61}, 0, 0, 64)), "data [0, +9223372036854775808) lies outside"));
  CHECK(mentions(parse_error(tensor("w", {1ull << 62}, 0, 0, 64)),
                 "tensor row bytes: 4611686018427387904 * 4 overflows"));
  CHECK(mentions(parse_error(tensor("w", {1, 2, 3, 4, 5}, 0, 0, 64)), "has 5 dimensions"));
  CHECK(mentions(parse_error(tensor("w", {}, 0, 0, 64)), "has 0 dimensions"));
  {
    raw r;
    r.header(2, 0);
    for (int i = 0; i < 2; ++i)
      r.str("same").put<std::uint32_t>(1).put<std::uint64_t>(1).put<std::uint32_t>(0).put<std::uint64_t>(0);
    r.pad().b.resize(r.b.size() + 32);
    CHECK(mentions(parse_error(r), "duplicate tensor name 'same'"));
  }
  // Data section past the end of the file (a tensor info ends the file).
  {
    raw r = tensor("w", {1}, 0, 0, 0);
    r.b.resize(r.b.size() - 1);
    CHECK(mentions(parse_error(r), "data section at"));
  }
}

namespace {

// Parses `bytes`; accepted files must expose only in-bounds views, rejected
// ones must carry the source name. Returns whether it parsed.
bool parse_must_not_crash(std::span<const std::byte> bytes) {
  auto f = gguf_file::parse(bytes, "mutated.gguf");
  if (!f) {
    REQUIRE(f.error().file() == "mutated.gguf");
    return false;
  }
  touch_everything(*f);
  return true;
}

void truncation_sweep(std::size_t stride) {
  for (auto name : conformance_models) {
    INFO(name);
    const auto bytes = read_all(conformance_path(std::string(name) + ".gguf"));
    const auto parsed = gguf_file::parse(bytes).value();
    const auto data_offset = parsed.data_offset();
    std::size_t data_end = 0;  // the end of the last tensor's data (padding may follow)
    for (const auto& t : parsed.tensors()) data_end = std::max<std::size_t>(data_end, t.offset + t.n_bytes);
    // Every cut before the end of the data fails (some tensor lies past it).
    for (std::size_t cut = 0; cut < data_offset; cut += stride) {
      // A fresh allocation of exactly `cut` bytes so ASan sees any over-read.
      std::vector<std::byte> head(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
      REQUIRE_FALSE(parse_must_not_crash(head));
    }
    for (std::size_t cut = data_offset; cut < data_end; cut += stride * 97) {
      std::vector<std::byte> head(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
      REQUIRE_FALSE(parse_must_not_crash(head));
    }
  }
}

void flip_sweep(std::size_t trials_per_file) {
  ruvllm::test::rng gen(0x6695);
  std::size_t accepted = 0;
  for (auto name : conformance_models) {
    INFO(name);
    const auto original = read_all(conformance_path(std::string(name) + ".gguf"));
    const auto data_offset = gguf_file::parse(original).value().data_offset();
    for (std::size_t trial = 0; trial < trials_per_file; ++trial) {
      auto bytes = original;
      const std::size_t flips = gen.uniform_index(1, 4);
      for (std::size_t i = 0; i < flips; ++i) {
        // Mostly the header (where parsing happens), sometimes anywhere.
        const std::size_t at =
            gen.chance(0.9) ? gen.uniform_index(0, data_offset - 1) : gen.uniform_index(0, bytes.size() - 1);
        bytes[at] ^= static_cast<std::byte>(1u << gen.uniform_index(0, 7));
        if (gen.chance(0.2)) bytes[at] = static_cast<std::byte>(gen.next_u32());
      }
      INFO("trial " << trial);
      accepted += parse_must_not_crash(bytes) ? 1 : 0;
    }
  }
  CHECK(accepted > 0);  // many flips land in values and names and stay valid
}

}  // namespace

TEST_CASE("gguf: truncated files fail cleanly at every sampled offset", "[model][gguf]") { truncation_sweep(61); }
TEST_CASE("gguf: truncated files fail cleanly at every offset", "[model][gguf][slow]") { truncation_sweep(1); }
TEST_CASE("gguf: seeded byte flips give an error or a valid file", "[model][gguf]") { flip_sweep(40); }
TEST_CASE("gguf: seeded byte flips, long run", "[model][gguf][slow]") { flip_sweep(3000); }

namespace {

std::vector<float> f32_tensor(const gguf_file& f, std::string_view name) {
  const auto v = f.tensor(name).value()->as<ruvllm::precision::f32>().value();
  return {v.begin(), v.end()};
}

template <class Backend, class Block>
void check_quantized_equal(const gguf_file& f32, const gguf_file& q, gguf_type type) {
  using ops = ruvllm::kernels::ops<Backend>;
  std::size_t checked = 0;
  for (const auto& t : f32.tensors()) {
    if (t.n_dims != 2) continue;
    INFO(t.name);
    const auto x = f32_tensor(f32, t.name);
    const gguf_tensor* stored = q.tensor(t.name).value();
    REQUIRE(stored->type == type);
    std::vector<Block> blocks(x.size() / 32);
    if constexpr (std::is_same_v<Block, ruvllm::block_q8_0>)
      ops::quantize_q8_0(x.data(), blocks.data(), x.size());
    else
      ops::quantize_q4_0(x.data(), blocks.data(), x.size());
    REQUIRE(stored->n_bytes == blocks.size() * sizeof(Block));
    CHECK(std::memcmp(stored->data, blocks.data(), stored->n_bytes) == 0);
    ++checked;
  }
  CHECK(checked == 2 * 7 + 2);
}

}  // namespace

TEST_CASE("gguf: stored Q8_0/Q4_0/F16 tensors equal ruvllm's quantizers on the F32 weights", "[model][gguf][quant]") {
  const auto f32 = open_model("tiny-f32");
  const auto q8 = open_model("tiny-q8_0");
  const auto q4 = open_model("tiny-q4_0");
  const auto f16 = open_model("tiny-f16");
  check_quantized_equal<ruvllm::backend::scalar, ruvllm::block_q8_0>(f32, q8, gguf_type::q8_0);
  check_quantized_equal<ruvllm::backend::highway, ruvllm::block_q8_0>(f32, q8, gguf_type::q8_0);
  check_quantized_equal<ruvllm::backend::scalar, ruvllm::block_q4_0>(f32, q4, gguf_type::q4_0);
  check_quantized_equal<ruvllm::backend::highway, ruvllm::block_q4_0>(f32, q4, gguf_type::q4_0);
  std::size_t checked = 0;
  for (const auto& t : f32.tensors()) {
    if (t.n_dims != 2) continue;
    INFO(t.name);
    const auto x = f32_tensor(f32, t.name);
    const auto h = f16.tensor(t.name).value()->as<ruvllm::precision::f16>().value();
    REQUIRE(h.size() == x.size());
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < x.size(); ++i) mismatches += h[i] == ruvllm::to_f16(x[i]) ? 0 : 1;
    CHECK(mismatches == 0);
    ++checked;
  }
  CHECK(checked == 16);
}

namespace {

// ggml's Q4_K layout unpacked again here, independently of the kernels.
void reference_dequantize_q4_k(const ruvllm::block_q4_k& b, float* y) {
  const float d = ruvllm::to_float(b.d), dmin = ruvllm::to_float(b.dmin);
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    if (j < 4) {
      sc = b.scales[j] & 63;
      m = b.scales[j + 4] & 63;
    } else {
      sc = (b.scales[j + 4] & 0xF) | ((b.scales[j - 4] >> 6) << 4);
      m = (b.scales[j + 4] >> 4) | ((b.scales[j] >> 6) << 4);
    }
    for (int l = 0; l < 32; ++l) {
      const int byte = b.qs[(j / 2) * 32 + l];
      const int q = j % 2 == 0 ? byte & 0xF : byte >> 4;
      y[j * 32 + l] = d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(m);
    }
  }
}

}  // namespace

TEST_CASE("gguf: llama.cpp's Q4_K tensors dequantize in place", "[model][gguf][quant]") {
  const auto f = open_model("small256-q4_k");
  std::size_t tensors = 0;
  for (const auto& t : f.tensors()) {
    if (t.type != gguf_type::q4_k) continue;
    INFO(t.name);
    const auto blocks = t.as<ruvllm::precision::q4_k>().value();
    const std::size_t n = static_cast<std::size_t>(t.n_elements());
    REQUIRE(blocks.size() * 256 == n);
    std::vector<float> scalar(n), highway(n), ref(n);
    ruvllm::kernels::ops<ruvllm::backend::scalar>::dequantize_q4_k(blocks.data(), scalar.data(), n);
    ruvllm::kernels::ops<ruvllm::backend::highway>::dequantize_q4_k(blocks.data(), highway.data(), n);
    for (std::size_t b = 0; b < blocks.size(); ++b) reference_dequantize_q4_k(blocks[b], ref.data() + b * 256);
    CHECK(scalar == ref);
    CHECK(highway == ref);
    // The weights were seeded normals with std 1/sqrt(fan_in) (embeddings 1):
    // the dequantized values must look like that, not like garbage.
    double sum2 = 0;
    for (float v : ref) sum2 += double(v) * v;
    const double std_dev = std::sqrt(sum2 / static_cast<double>(n));
    const double expect = t.name == "token_embd.weight" ? 1.0 : 1.0 / std::sqrt(double(t.ne[0]));
    CHECK(std_dev == Approx(expect).epsilon(0.1));
    // Rows are addressable by stride.
    CHECK(t.row(1) == t.data + t.ne[0] / 256 * 144);
    ++tensors;
  }
  CHECK(tensors == 2 * 7 + 2);
}

}  // namespace gguf_test
