#ifndef RUVLLM_TESTS_SUPPORT_JSON_HPP
#define RUVLLM_TESTS_SUPPORT_JSON_HPP

// A small JSON reader for test data (the conformance files' llama.cpp
// outputs). Test-only: recursive descent, throws std::runtime_error on bad
// input (a malformed data file should fail the test loudly), numbers as
// double (exact for every logit and token id the files hold).

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ruvllm::test {

class json {
 public:
  using array = std::vector<json>;
  using object = std::map<std::string, json, std::less<>>;

  json() = default;

  [[nodiscard]] static json parse(std::string_view text) {
    std::size_t i = 0;
    json v = parse_value(text, i);
    skip_space(text, i);
    if (i != text.size()) fail("trailing characters", i);
    return v;
  }
  [[nodiscard]] static json load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return parse(s.str());
  }

  [[nodiscard]] bool is_null() const noexcept { return std::holds_alternative<std::monostate>(v_); }
  [[nodiscard]] double number() const { return get<double>("number"); }
  [[nodiscard]] std::int64_t integer() const { return static_cast<std::int64_t>(number()); }
  [[nodiscard]] bool boolean() const { return get<bool>("boolean"); }
  [[nodiscard]] const std::string& string() const { return get<std::string>("string"); }
  [[nodiscard]] const array& items() const { return *get<std::shared_ptr<array>>("array"); }
  [[nodiscard]] const object& fields() const { return *get<std::shared_ptr<object>>("object"); }
  [[nodiscard]] bool contains(std::string_view key) const { return fields().find(key) != fields().end(); }
  [[nodiscard]] const json& operator[](std::string_view key) const {
    const auto it = fields().find(key);
    if (it == fields().end()) throw std::runtime_error("missing JSON key " + std::string(key));
    return it->second;
  }
  [[nodiscard]] const json& operator[](std::size_t i) const { return items().at(i); }
  [[nodiscard]] std::size_t size() const { return items().size(); }

  // Alternative spellings of the accessors above.
  [[nodiscard]] const json& at(std::string_view key) const { return (*this)[key]; }
  [[nodiscard]] const json& at(std::size_t i) const { return items().at(i); }
  [[nodiscard]] double as_number() const { return number(); }
  [[nodiscard]] std::int64_t as_int() const { return integer(); }
  [[nodiscard]] bool as_bool() const { return boolean(); }
  [[nodiscard]] const std::string& as_string() const { return string(); }
  [[nodiscard]] const array& as_array() const { return items(); }
  [[nodiscard]] const object& as_object() const { return fields(); }
  [[nodiscard]] bool is_number() const noexcept { return std::holds_alternative<double>(v_); }
  [[nodiscard]] bool is_string() const noexcept { return std::holds_alternative<std::string>(v_); }
  [[nodiscard]] bool is_array() const noexcept { return std::holds_alternative<std::shared_ptr<array>>(v_); }
  [[nodiscard]] bool is_object() const noexcept { return std::holds_alternative<std::shared_ptr<object>>(v_); }

 private:
  template <class T>
  const T& get(const char* what) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    throw std::runtime_error(std::string("JSON value is not a ") + what);
  }

  [[noreturn]] static void fail(const char* what, std::size_t at) {
    throw std::runtime_error(std::string("JSON: ") + what + " at offset " + std::to_string(at));
  }
  static void skip_space(std::string_view t, std::size_t& i) {
    while (i < t.size() && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) ++i;
  }
  static void expect(std::string_view t, std::size_t& i, std::string_view word) {
    if (t.substr(i, word.size()) != word) fail("unexpected token", i);
    i += word.size();
  }
  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  static std::uint32_t hex4(std::string_view t, std::size_t& i) {
    if (i + 4 > t.size()) fail("short \\u escape", i);
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = t[i++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<std::uint32_t>(c - 'A' + 10);
      else
        fail("bad hex digit", i - 1);
    }
    return v;
  }
  static std::string parse_string(std::string_view t, std::size_t& i) {
    ++i;  // opening quote
    std::string out;
    while (true) {
      if (i >= t.size()) fail("unterminated string", i);
      const char c = t[i++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= t.size()) fail("unterminated escape", i);
      const char e = t[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4(t, i);
          if (cp >= 0xD800 && cp < 0xDC00 && t.substr(i, 2) == "\\u") {
            i += 2;
            const std::uint32_t low = hex4(t, i);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("bad escape", i - 1);
      }
    }
  }
  static json parse_value(std::string_view t, std::size_t& i) {
    skip_space(t, i);
    if (i >= t.size()) fail("unexpected end", i);
    json v;
    const char c = t[i];
    if (c == '{') {
      auto obj = std::make_shared<object>();
      ++i;
      skip_space(t, i);
      if (i < t.size() && t[i] == '}') {
        ++i;
      } else {
        while (true) {
          skip_space(t, i);
          if (i >= t.size() || t[i] != '"') fail("expected a key", i);
          std::string key = parse_string(t, i);
          skip_space(t, i);
          expect(t, i, ":");
          (*obj)[std::move(key)] = parse_value(t, i);
          skip_space(t, i);
          if (i < t.size() && t[i] == ',') {
            ++i;
            continue;
          }
          expect(t, i, "}");
          break;
        }
      }
      v.v_ = std::move(obj);
    } else if (c == '[') {
      auto arr = std::make_shared<array>();
      ++i;
      skip_space(t, i);
      if (i < t.size() && t[i] == ']') {
        ++i;
      } else {
        while (true) {
          arr->push_back(parse_value(t, i));
          skip_space(t, i);
          if (i < t.size() && t[i] == ',') {
            ++i;
            continue;
          }
          expect(t, i, "]");
          break;
        }
      }
      v.v_ = std::move(arr);
    } else if (c == '"') {
      v.v_ = parse_string(t, i);
    } else if (c == 't') {
      expect(t, i, "true");
      v.v_ = true;
    } else if (c == 'f') {
      expect(t, i, "false");
      v.v_ = false;
    } else if (c == 'n') {
      expect(t, i, "null");
    } else {
      const std::size_t start = i;
      while (i < t.size() &&
             (t[i] == '-' || t[i] == '+' || t[i] == '.' || t[i] == 'e' || t[i] == 'E' || (t[i] >= '0' && t[i] <= '9')))
        ++i;
      if (start == i) fail("unexpected character", i);
      v.v_ = std::stod(std::string(t.substr(start, i - start)));
    }
    return v;
  }

  std::variant<std::monostate, bool, double, std::string, std::shared_ptr<array>, std::shared_ptr<object>> v_;
};

}  // namespace ruvllm::test

#endif  // RUVLLM_TESTS_SUPPORT_JSON_HPP
