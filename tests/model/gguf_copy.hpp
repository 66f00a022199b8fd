#ifndef RUVLLM_TESTS_MODEL_GGUF_COPY_HPP
#define RUVLLM_TESTS_MODEL_GGUF_COPY_HPP

// Copies of parsed GGUF files into a writer, for tests that rewrite a file
// (write-read round trips, conformance models stored in another format).

#include <cstdint>
#include <span>
#include <string_view>

#include <catch2/catch.hpp>

#include "ruvllm/model/gguf.hpp"
#include "ruvllm/model/gguf_writer.hpp"

namespace ruvllm::test {

using model::gguf_array_builder;
using model::gguf_file;
using model::gguf_value;
using model::gguf_value_type;
using model::gguf_writer;

// Copies a parsed value into an array builder or writer (nested arrays too).
inline void copy_element(gguf_array_builder& b, const gguf_value& v) {
  switch (v.type()) {
    case gguf_value_type::uint8: b.push(v.as<std::uint8_t>().value()); break;
    case gguf_value_type::int8: b.push(v.as<std::int8_t>().value()); break;
    case gguf_value_type::uint16: b.push(v.as<std::uint16_t>().value()); break;
    case gguf_value_type::int16: b.push(v.as<std::int16_t>().value()); break;
    case gguf_value_type::uint32: b.push(v.as<std::uint32_t>().value()); break;
    case gguf_value_type::int32: b.push(v.as<std::int32_t>().value()); break;
    case gguf_value_type::float32: b.push(v.as<float>().value()); break;
    case gguf_value_type::boolean: b.push(v.as<bool>().value()); break;
    case gguf_value_type::uint64: b.push(v.as<std::uint64_t>().value()); break;
    case gguf_value_type::int64: b.push(v.as<std::int64_t>().value()); break;
    case gguf_value_type::float64: b.push(v.as<double>().value()); break;
    case gguf_value_type::string: b.push_string(v.as<std::string_view>().value()); break;
    case gguf_value_type::array: {
      gguf_array_builder inner(v.element_type());
      const auto elements = v.elements().value();
      for (const auto& e : elements) copy_element(inner, e);
      b.push_array(inner);
      break;
    }
  }
}

/// A writer holding f's metadata (its alignment included) and no tensors.
inline gguf_writer copy_metadata(const gguf_file& f) {
  gguf_writer w(f.alignment());
  for (const auto& kv : f.metadata()) {
    if (kv.key == "general.alignment") continue;
    const auto& v = kv.value;
    ruvllm::result<void> r;
    switch (v.type()) {
      case gguf_value_type::uint8: r = w.add(kv.key, v.as<std::uint8_t>().value()); break;
      case gguf_value_type::int8: r = w.add(kv.key, v.as<std::int8_t>().value()); break;
      case gguf_value_type::uint16: r = w.add(kv.key, v.as<std::uint16_t>().value()); break;
      case gguf_value_type::int16: r = w.add(kv.key, v.as<std::int16_t>().value()); break;
      case gguf_value_type::uint32: r = w.add(kv.key, v.as<std::uint32_t>().value()); break;
      case gguf_value_type::int32: r = w.add(kv.key, v.as<std::int32_t>().value()); break;
      case gguf_value_type::float32: r = w.add(kv.key, v.as<float>().value()); break;
      case gguf_value_type::boolean: r = w.add(kv.key, v.as<bool>().value()); break;
      case gguf_value_type::uint64: r = w.add(kv.key, v.as<std::uint64_t>().value()); break;
      case gguf_value_type::int64: r = w.add(kv.key, v.as<std::int64_t>().value()); break;
      case gguf_value_type::float64: r = w.add(kv.key, v.as<double>().value()); break;
      case gguf_value_type::string: r = w.add_string(kv.key, v.as<std::string_view>().value()); break;
      case gguf_value_type::array: {
        gguf_array_builder b(v.element_type());
        const auto elements = v.elements().value();
        for (const auto& e : elements) copy_element(b, e);
        r = w.add_array(kv.key, b);
        break;
      }
    }
    REQUIRE(r);
  }
  return w;
}

/// A writer holding all of f: metadata and tensors.
inline gguf_writer copy_to_writer(const gguf_file& f) {
  gguf_writer w = copy_metadata(f);
  for (const auto& t : f.tensors()) REQUIRE(w.add_tensor(t.name, t.type, std::span(t.ne.data(), t.n_dims), t.bytes()));
  return w;
}

}  // namespace ruvllm::test

#endif  // RUVLLM_TESTS_MODEL_GGUF_COPY_HPP
