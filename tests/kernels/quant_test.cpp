// The quant family: GGUF block quantizers, dequantizers, quantized dot
// products and f16/bf16 row conversions, on every backend and on every
// compiled Highway target this CPU supports.
//
// Expectations come from three independent places: blocks worked out by hand
// from ggml's documented rules, ggml's dequantization formulas written out
// again here (own unpacking of the bit layouts), and exact integer dot
// products computed in int64 from those unpacked quants. The scalar reference
// is then the yardstick for every SIMD path: quantized bytes and dequantized
// floats must be identical, dots equal up to float summation order (and
// exactly equal where every partial sum is an integer float represents).

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "ruvllm/kernels/ops.hpp"
#include "support/gemv_plans.hpp"
#include "support/per_target.hpp"
#include "support/rng.hpp"

namespace quant_test {

namespace {

using ruvllm::bf16;
using ruvllm::block_iq4_nl;
using ruvllm::block_iq4_xs;
using ruvllm::block_q2_k;
using ruvllm::block_q3_k;
using ruvllm::block_q4_0;
using ruvllm::block_q4_1;
using ruvllm::block_q4_k;
using ruvllm::block_q5_0;
using ruvllm::block_q5_1;
using ruvllm::block_q5_k;
using ruvllm::block_q6_k;
using ruvllm::block_q8_0;
using ruvllm::block_q8_k;
using ruvllm::f16;
using ruvllm::qk_k;
using ruvllm::backend::highway;
using ruvllm::backend::scalar;
using xsimd_backend = ruvllm::backend::xsimd;  // a using-declaration would clash with ::xsimd
template <class B>
using ops = ruvllm::kernels::ops<B>;

constexpr std::size_t block_counts[] = {1, 2, 7, 130};
constexpr double eps = std::numeric_limits<float>::epsilon();

// ------------------------------------------------------------------ storage

/// count value-initialized T placed `offset` bytes past a 64-byte boundary,
/// so kernels cannot rely on vector alignment.
template <class T>
class placed {
 public:
  explicit placed(std::size_t count, std::size_t offset = alignof(T)) : count_(count), bytes_(count * sizeof(T) + 128) {
    const auto base = reinterpret_cast<std::uintptr_t>(bytes_.data());
    data_ = reinterpret_cast<T*>(bytes_.data() + (64 - base % 64) % 64 + offset);
    for (std::size_t i = 0; i < count; ++i) new (data_ + i) T{};
  }
  placed(const placed&) = delete;
  placed& operator=(const placed&) = delete;
  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  std::size_t count_;
  std::vector<unsigned char> bytes_;
  T* data_;
};

/// Index of the first differing byte of two arrays, or -1.
template <class T>
long first_difference(const T* a, const T* b, std::size_t count) {
  const auto* pa = reinterpret_cast<const unsigned char*>(a);
  const auto* pb = reinterpret_cast<const unsigned char*>(b);
  for (std::size_t i = 0; i < count * sizeof(T); ++i) {
    if (pa[i] != pb[i]) return static_cast<long>(i);
  }
  return -1;
}

std::uint16_t bits(f16 h) { return h.bits; }
f16 half(float x) { return ruvllm::to_f16(x); }
float value(f16 h) { return ruvllm::to_float(h); }

/// Gaussian weights with a few outliers, as real weight rows have.
std::vector<float> weights_like(ruvllm::test::rng& gen, std::size_t n, float sigma = 1.0f) {
  std::vector<float> v(n);
  for (auto& x : v) x = gen.chance(0.01) ? gen.normal(0.0f, 8.0f * sigma) : gen.normal(0.0f, sigma);
  return v;
}

// ------------------------------------------- ggml's formulas, written again

/// Q4_K's twelve scale bytes as a bit layout: bytes 0-3 hold the 6-bit scales
/// of sub-blocks 0-3 (low bits) and the top two bits of scales 4-7; bytes 4-7
/// likewise for the mins; bytes 8-11 the low nibbles of scale (low) and min
/// (high) of sub-blocks 4-7.
void unpack_q4_k_scales(const std::uint8_t* s, int* sc, int* mn) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] % 64;
    mn[j] = s[4 + j] % 64;
    sc[4 + j] = (s[8 + j] % 16) + 16 * (s[j] / 64);
    mn[4 + j] = (s[8 + j] / 16) + 16 * (s[4 + j] / 64);
  }
}

/// Q4_K quants in element order: 64-element groups, low nibbles then high.
void unpack_q4_k_quants(const block_q4_k& b, int* q) {
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      q[64 * g + l] = b.qs[32 * g + l] % 16;
      q[64 * g + 32 + l] = b.qs[32 * g + l] / 16;
    }
  }
}

/// Q5_0 / Q5_1 quants (0..31) in element order, as ggml's dequantizers build
/// them from the little-endian qh word: xh_0 = ((qh >> j) << 4) & 0x10 for
/// element j, xh_1 = (qh >> (j + 12)) & 0x10 for element j + 16.
template <class Block>
void unpack_five_bit_quants(const Block& b, int* q) {
  std::uint32_t qh;
  std::memcpy(&qh, b.qh, sizeof qh);
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int>((b.qs[j] & 0x0Fu) | (((qh >> j) << 4) & 0x10u));
    q[j + 16] = static_cast<int>((b.qs[j] >> 4) | ((qh >> (j + 12)) & 0x10u));
  }
}
/// Q5_0 quants minus 16.
void unpack_q5_0_quants(const block_q5_0& b, int* q) {
  unpack_five_bit_quants(b, q);
  for (int j = 0; j < 32; ++j) q[j] -= 16;
}

/// Q5_K quants in element order: Q4_K's nibbles plus 16 where ggml's
/// dequantizer tests qh[l] against u1 = 1 << 2g (low nibbles of group g) and
/// u2 = 2 << 2g (high nibbles).
void unpack_q5_k_quants(const block_q5_k& b, int* q) {
  for (int g = 0; g < 4; ++g) {
    const int u1 = 1 << (2 * g), u2 = 2 << (2 * g);
    for (int l = 0; l < 32; ++l) {
      q[64 * g + l] = b.qs[32 * g + l] % 16 + ((b.qh[l] & u1) != 0 ? 16 : 0);
      q[64 * g + 32 + l] = b.qs[32 * g + l] / 16 + ((b.qh[l] & u2) != 0 ? 16 : 0);
    }
  }
}

/// Q6_K quants minus 32 in element order, the way ggml's loop walks ql/qh.
void unpack_q6_k_quants(const block_q6_k& b, int* q) {
  const std::uint8_t* ql = b.ql;
  const std::uint8_t* qh = b.qh;
  for (int n = 0; n < 256; n += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      q[n + l] = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      q[n + l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      q[n + l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      q[n + l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
    }
  }
}

/// ggml's kvalues_iq4nl, written out again.
constexpr int iq4_nl_table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/// IQ4_NL values in element order, as ggml's dequantizer walks qs: low
/// nibbles for elements 0-15, high for 16-31.
void unpack_iq4_nl_values(const block_iq4_nl& b, int* v) {
  for (int j = 0; j < 16; ++j) {
    v[j] = iq4_nl_table[b.qs[j] % 16];
    v[j + 16] = iq4_nl_table[b.qs[j] / 16];
  }
}

/// Q2_K / Q3_K low quants (0..3) in element order, the way ggml's loop walks
/// qs: per 128-element half, the same 32 bytes shifted by 0, 2, 4 and 6.
void unpack_two_bit_quants(const std::uint8_t* qs, int* q) {
  for (int n = 0; n < 256; n += 128, qs += 32) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int l = 0; l < 32; ++l) q[n + 16 * shift + l] = (qs[l] >> shift) & 3;
    }
  }
}

/// Q3_K quants minus 4: the low bits, less 4 where ggml's moving mask m (one
/// bit further per 32 elements) finds the hmask bit clear.
void unpack_q3_k_quants(const block_q3_k& b, int* q) {
  unpack_two_bit_quants(b.qs, q);
  int m = 1;
  for (int chunk = 0; chunk < 8; ++chunk, m <<= 1) {
    for (int l = 0; l < 32; ++l) q[32 * chunk + l] -= (b.hmask[l] & m) != 0 ? 0 : 4;
  }
}

/// Q3_K's sixteen scales minus 32, unpacked as ggml does: the 12 bytes as
/// three little-endian words, rebuilt into four with kmask1 = 0x03030303
/// and kmask2 = 0x0f0f0f0f.
void unpack_q3_k_scales(const std::uint8_t* s, int* sc) {
  std::uint32_t aux[4] = {};
  std::memcpy(aux, s, 12);
  const std::uint32_t k1 = 0x03030303u, k2 = 0x0f0f0f0fu, tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & k2) | (((tmp >> 4) & k1) << 4);
  aux[3] = ((aux[1] >> 4) & k2) | (((tmp >> 6) & k1) << 4);
  aux[0] = (aux[0] & k2) | (((tmp >> 0) & k1) << 4);
  aux[1] = (aux[1] & k2) | (((tmp >> 2) & k1) << 4);
  for (int j = 0; j < 16; ++j) sc[j] = static_cast<int>((aux[j / 4] >> (8 * (j % 4))) & 0xFFu) - 32;
}

/// IQ4_XS's table values and scales minus 32, unpacked as ggml's AVX2 dot
/// walks them: sub-blocks in pairs, scales_h consumed four bits a pair.
void unpack_iq4_xs(const block_iq4_xs& b, int* v, int* sc) {
  unsigned h = b.scales_h;
  for (int ib = 0; ib < 8; ib += 2, h >>= 4) {
    const unsigned sl = b.scales_l[ib / 2];
    sc[ib] = static_cast<int>((sl & 0xFu) | ((h << 4) & 0x30u)) - 32;
    sc[ib + 1] = static_cast<int>((sl >> 4) | ((h << 2) & 0x30u)) - 32;
  }
  for (int ib = 0; ib < 8; ++ib) {
    for (int j = 0; j < 16; ++j) {
      v[32 * ib + j] = iq4_nl_table[b.qs[16 * ib + j] % 16];
      v[32 * ib + 16 + j] = iq4_nl_table[b.qs[16 * ib + j] / 16];
    }
  }
}

std::vector<float> ggml_dequantize(const block_q8_0* x, std::size_t nb) {
  std::vector<float> y;
  for (std::size_t b = 0; b < nb; ++b) {
    for (int j = 0; j < 32; ++j) y.push_back(static_cast<float>(x[b].qs[j]) * value(x[b].d));
  }
  return y;
}
std::vector<float> ggml_dequantize(const block_q5_0* x, std::size_t nb) {
  std::vector<float> y;
  for (std::size_t b = 0; b < nb; ++b) {
    int q[32];
    unpack_q5_0_quants(x[b], q);
    for (int j = 0; j < 32; ++j) y.push_back(static_cast<float>(q[j]) * value(x[b].d));
  }
  return y;
}
/// Q4_1 quants (0..15) in element order.
void unpack_q4_1_quants(const block_q4_1& b, int* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = b.qs[j] % 16;
    q[j + 16] = b.qs[j] / 16;
  }
}
void unpack_quants(const block_q4_1& b, int* q) { unpack_q4_1_quants(b, q); }
void unpack_quants(const block_q5_1& b, int* q) { unpack_five_bit_quants(b, q); }

/// Q4_1 and Q5_1: q * d + m.
template <class Block>
std::vector<float> min_dequantize(const Block* x, std::size_t nb) {
  std::vector<float> y;
  for (std::size_t b = 0; b < nb; ++b) {
    int q[32];
    unpack_quants(x[b], q);
    for (int j = 0; j < 32; ++j) y.push_back(static_cast<float>(q[j]) * value(x[b].d) + value(x[b].m));
  }
  return y;
}
std::vector<float> ggml_dequantize(const block_q4_1* x, std::size_t nb) { return min_dequantize(x, nb); }
std::vector<float> ggml_dequantize(const block_q5_1* x, std::size_t nb) { return min_dequantize(x, nb); }
std::vector<float> ggml_dequantize(const block_q4_0* x, std::size_t nb) {
  std::vector<float> y(32 * nb);
  for (std::size_t b = 0; b < nb; ++b) {
    for (int j = 0; j < 16; ++j) {
      y[32 * b + j] = static_cast<float>((x[b].qs[j] & 0x0F) - 8) * value(x[b].d);
      y[32 * b + j + 16] = static_cast<float>((x[b].qs[j] >> 4) - 8) * value(x[b].d);
    }
  }
  return y;
}
/// Q4_K and Q5_K: d1 * q - m1 per 32-element sub-block.
template <class Block>
std::vector<float> scale_min_dequantize(const Block* x, std::size_t nb) {
  std::vector<float> y;
  for (std::size_t b = 0; b < nb; ++b) {
    int sc[8], mn[8], q[256];
    unpack_q4_k_scales(x[b].scales, sc, mn);
    if constexpr (std::is_same_v<Block, block_q5_k>) {
      unpack_q5_k_quants(x[b], q);
    } else {
      unpack_q4_k_quants(x[b], q);
    }
    for (int e = 0; e < 256; ++e) {
      const float d1 = value(x[b].d) * static_cast<float>(sc[e / 32]);
      const float m1 = value(x[b].dmin) * static_cast<float>(mn[e / 32]);
      y.push_back(d1 * static_cast<float>(q[e]) - m1);
    }
  }
  return y;
}
std::vector<float> ggml_dequantize(const block_q4_k* x, std::size_t nb) { return scale_min_dequantize(x, nb); }
std::vector<float> ggml_dequantize(const block_q5_k* x, std::size_t nb) { return scale_min_dequantize(x, nb); }
std::vector<float> ggml_dequantize(const block_q6_k* x, std::size_t nb) {
  std::vector<float> y;
  for (std::size_t b = 0; b < nb; ++b) {
    int q[256];
    unpack_q6_k_quants(x[b], q);
    for (int e = 0; e < 256; ++e) {
      y.push_back(value(x[b].d) * static_cast<float>(x[b].scales[e / 16]) * static_cast<float>(q[e]));
    }
  }
  return y;
}
std::vector<float> ggml_dequantize(const block_iq4_nl* x, std::size_t nb) {
  std::vector<float> y;
  for (std::size_t b = 0; b < nb; ++b) {
    int v[32];
    unpack_iq4_nl_values(x[b], v);
    for (int j = 0; j < 32; ++j) y.push_back(value(x[b].d) * static_cast<float>(v[j]));
  }
  return y;
}
/// Q2_K: (d * sc) * q - (dmin * m) per 16-element sub-block.
std::vector<float> ggml_dequantize(const block_q2_k* x, std::size_t nb) {
  std::vector<float> y;
  for (std::size_t b = 0; b < nb; ++b) {
    int q[256];
    unpack_two_bit_quants(x[b].qs, q);
    for (int e = 0; e < 256; ++e) {
      const int packed = x[b].scales[e / 16];
      const float dl = value(x[b].d) * static_cast<float>(packed % 16);
      const float ml = value(x[b].dmin) * static_cast<float>(packed / 16);
      y.push_back(dl * static_cast<float>(q[e]) - ml);
    }
  }
  return y;
}
/// Q3_K: (d * sc) * (q - 4) per 16-element sub-block.
std::vector<float> ggml_dequantize(const block_q3_k* x, std::size_t nb) {
  std::vector<float> y;
  for (std::size_t b = 0; b < nb; ++b) {
    int q[256], sc[16];
    unpack_q3_k_quants(x[b], q);
    unpack_q3_k_scales(x[b].scales, sc);
    for (int e = 0; e < 256; ++e)
      y.push_back(value(x[b].d) * static_cast<float>(sc[e / 16]) * static_cast<float>(q[e]));
  }
  return y;
}
/// IQ4_XS: (d * (ls - 32)) * value per 32-element sub-block.
std::vector<float> ggml_dequantize(const block_iq4_xs* x, std::size_t nb) {
  std::vector<float> y;
  for (std::size_t b = 0; b < nb; ++b) {
    int v[256], sc[8];
    unpack_iq4_xs(x[b], v, sc);
    for (int e = 0; e < 256; ++e)
      y.push_back(value(x[b].d) * static_cast<float>(sc[e / 32]) * static_cast<float>(v[e]));
  }
  return y;
}
std::vector<float> ggml_dequantize(const block_q8_k* x, std::size_t nb) {
  std::vector<float> y;
  for (std::size_t b = 0; b < nb; ++b) {
    for (int j = 0; j < 256; ++j) y.push_back(x[b].d * static_cast<float>(x[b].qs[j]));
  }
  return y;
}

// ----------------------------------------- exact dots and their magnitudes

/// The exact value a quantized dot approximates, and the magnitude its
/// rounding error scales with (sum of |terms| the kernel adds in float).
struct exact_dot {
  long double value = 0;
  long double magnitude = 0;
};

exact_dot exact(const block_q8_0* w, const block_q8_0* a, std::size_t nb) {
  exact_dot r;
  for (std::size_t b = 0; b < nb; ++b) {
    long long s = 0, m = 0;
    for (int j = 0; j < 32; ++j) {
      s += w[b].qs[j] * a[b].qs[j];
      m += std::abs(w[b].qs[j] * a[b].qs[j]);
    }
    const long double scale = static_cast<long double>(value(w[b].d)) * value(a[b].d);
    r.value += scale * s;
    r.magnitude += std::fabs(scale) * m;
  }
  return r;
}
exact_dot exact(const block_q4_0* w, const block_q8_0* a, std::size_t nb) {
  exact_dot r;
  for (std::size_t b = 0; b < nb; ++b) {
    long long s = 0, m = 0;
    for (int j = 0; j < 16; ++j) {
      const int lo = (w[b].qs[j] & 0x0F) - 8, hi = (w[b].qs[j] >> 4) - 8;
      s += lo * a[b].qs[j] + hi * a[b].qs[j + 16];
      m += std::abs(lo * a[b].qs[j]) + std::abs(hi * a[b].qs[j + 16]);
    }
    const long double scale = static_cast<long double>(value(w[b].d)) * value(a[b].d);
    r.value += scale * s;
    r.magnitude += std::fabs(scale) * m;
  }
  return r;
}
exact_dot exact(const block_q5_0* w, const block_q8_0* a, std::size_t nb) {
  exact_dot r;
  for (std::size_t b = 0; b < nb; ++b) {
    int q[32];
    unpack_q5_0_quants(w[b], q);
    long long s = 0, m = 0;
    for (int j = 0; j < 32; ++j) {
      s += q[j] * a[b].qs[j];
      m += std::abs(q[j] * a[b].qs[j]);
    }
    const long double scale = static_cast<long double>(value(w[b].d)) * value(a[b].d);
    r.value += scale * s;
    r.magnitude += std::fabs(scale) * m;
  }
  return r;
}
template <class Block>
exact_dot min_exact(const Block* w, const block_q8_0* a, std::size_t nb) {
  exact_dot r;
  for (std::size_t b = 0; b < nb; ++b) {
    int q[32];
    unpack_quants(w[b], q);
    long long s = 0, m = 0, sum_a = 0, m_a = 0;
    for (int j = 0; j < 32; ++j) {
      s += q[j] * a[b].qs[j];
      m += std::abs(q[j] * a[b].qs[j]);
      sum_a += a[b].qs[j];
      m_a += std::abs(a[b].qs[j]);
    }
    const long double scale = static_cast<long double>(value(w[b].d)) * value(a[b].d);
    const long double min_scale = static_cast<long double>(value(w[b].m)) * value(a[b].d);
    r.value += scale * s + min_scale * sum_a;
    r.magnitude += std::fabs(scale) * m + std::fabs(min_scale) * m_a;
  }
  return r;
}
exact_dot exact(const block_q4_1* w, const block_q8_0* a, std::size_t nb) { return min_exact(w, a, nb); }
exact_dot exact(const block_q5_1* w, const block_q8_0* a, std::size_t nb) { return min_exact(w, a, nb); }
template <class Block>
exact_dot scale_min_exact(const Block* w, const block_q8_k* a, std::size_t nb) {
  exact_dot r;
  for (std::size_t b = 0; b < nb; ++b) {
    int sc[8], mn[8], q[256];
    unpack_q4_k_scales(w[b].scales, sc, mn);
    if constexpr (std::is_same_v<Block, block_q5_k>) {
      unpack_q5_k_quants(w[b], q);
    } else {
      unpack_q4_k_quants(w[b], q);
    }
    long long scaled = 0, mins = 0, m_scaled = 0, m_mins = 0;
    for (int e = 0; e < 256; ++e) {
      scaled += static_cast<long long>(sc[e / 32]) * q[e] * a[b].qs[e];
      mins += static_cast<long long>(mn[e / 32]) * a[b].qs[e];
      m_scaled += std::llabs(static_cast<long long>(sc[e / 32]) * q[e] * a[b].qs[e]);
      m_mins += std::llabs(static_cast<long long>(mn[e / 32]) * a[b].qs[e]);
    }
    const long double d = static_cast<long double>(value(w[b].d)) * a[b].d;
    const long double dmin = static_cast<long double>(value(w[b].dmin)) * a[b].d;
    r.value += d * scaled - dmin * mins;
    r.magnitude += std::fabs(d) * m_scaled + std::fabs(dmin) * m_mins;
  }
  return r;
}
exact_dot exact(const block_q4_k* w, const block_q8_k* a, std::size_t nb) { return scale_min_exact(w, a, nb); }
exact_dot exact(const block_q5_k* w, const block_q8_k* a, std::size_t nb) { return scale_min_exact(w, a, nb); }
exact_dot exact(const block_q6_k* w, const block_q8_k* a, std::size_t nb) {
  exact_dot r;
  for (std::size_t b = 0; b < nb; ++b) {
    int q[256];
    unpack_q6_k_quants(w[b], q);
    long long s = 0, m = 0;
    for (int e = 0; e < 256; ++e) {
      s += static_cast<long long>(w[b].scales[e / 16]) * q[e] * a[b].qs[e];
      m += std::llabs(static_cast<long long>(w[b].scales[e / 16]) * q[e] * a[b].qs[e]);
    }
    const long double d = static_cast<long double>(value(w[b].d)) * a[b].d;
    r.value += d * s;
    r.magnitude += std::fabs(d) * m;
  }
  return r;
}

exact_dot exact(const block_iq4_nl* w, const block_q8_0* a, std::size_t nb) {
  exact_dot r;
  for (std::size_t b = 0; b < nb; ++b) {
    int v[32];
    unpack_iq4_nl_values(w[b], v);
    long long s = 0, m = 0;
    for (int j = 0; j < 32; ++j) {
      s += v[j] * a[b].qs[j];
      m += std::abs(v[j] * a[b].qs[j]);
    }
    const long double scale = static_cast<long double>(value(w[b].d)) * value(a[b].d);
    r.value += scale * s;
    r.magnitude += std::fabs(scale) * m;
  }
  return r;
}
exact_dot exact(const block_q2_k* w, const block_q8_k* a, std::size_t nb) {
  exact_dot r;
  for (std::size_t b = 0; b < nb; ++b) {
    int q[256];
    unpack_two_bit_quants(w[b].qs, q);
    long long scaled = 0, mins = 0, m_scaled = 0, m_mins = 0;
    for (int e = 0; e < 256; ++e) {
      const long long sc = w[b].scales[e / 16] % 16, mn = w[b].scales[e / 16] / 16;
      scaled += sc * q[e] * a[b].qs[e];
      mins += mn * a[b].qs[e];
      m_scaled += std::llabs(sc * q[e] * a[b].qs[e]);
      m_mins += std::llabs(mn * a[b].qs[e]);
    }
    const long double d = static_cast<long double>(value(w[b].d)) * a[b].d;
    const long double dmin = static_cast<long double>(value(w[b].dmin)) * a[b].d;
    r.value += d * scaled - dmin * mins;
    r.magnitude += std::fabs(d) * m_scaled + std::fabs(dmin) * m_mins;
  }
  return r;
}
/// The exact dot of super-blocks with one f16 scale d over signed weights
/// and signed sub-block scales: unpack(block, q, sc) gives each element's
/// weight q[e] and sub-block scale sc[e] (Q3_K, IQ4_XS).
template <class Block, class Unpack>
exact_dot exact_signed_scales(const Block* w, const block_q8_k* a, std::size_t nb, Unpack unpack) {
  exact_dot r;
  for (std::size_t b = 0; b < nb; ++b) {
    int q[256], sc[256];
    unpack(w[b], q, sc);
    long long s = 0, m = 0;
    for (int e = 0; e < 256; ++e) {
      s += static_cast<long long>(sc[e]) * q[e] * a[b].qs[e];
      m += std::llabs(static_cast<long long>(sc[e]) * q[e] * a[b].qs[e]);
    }
    const long double d = static_cast<long double>(value(w[b].d)) * a[b].d;
    r.value += d * s;
    r.magnitude += std::fabs(d) * m;
  }
  return r;
}
exact_dot exact(const block_q3_k* w, const block_q8_k* a, std::size_t nb) {
  return exact_signed_scales(w, a, nb, [](const block_q3_k& b, int* q, int* sc) {
    int scales[16];
    unpack_q3_k_quants(b, q);
    unpack_q3_k_scales(b.scales, scales);
    for (int e = 0; e < 256; ++e) sc[e] = scales[e / 16];
  });
}
exact_dot exact(const block_iq4_xs* w, const block_q8_k* a, std::size_t nb) {
  return exact_signed_scales(w, a, nb, [](const block_iq4_xs& b, int* v, int* sc) {
    int scales[8];
    unpack_iq4_xs(b, v, scales);
    for (int e = 0; e < 256; ++e) sc[e] = scales[e / 32];
  });
}

/// A float dot of nb blocks is within (nb + 8) eps * magnitude of the exact
/// value (one rounding per block product and per accumulation, plus the
/// scale products and the final lane reduction).
void check_close_to_exact(float got, const exact_dot& e, std::size_t nb) {
  const long double bound = static_cast<long double>(nb + 8) * eps * e.magnitude;
  INFO("got " << got << ", exact " << static_cast<double>(e.value) << ", bound " << static_cast<double>(bound));
  CHECK(std::fabs(static_cast<long double>(got) - e.value) <= bound);
}

// ------------------------------------------------------ random block data

/// Random activation quants in [-limit, limit] with d and consistent bsums.
void random_q8_0(ruvllm::test::rng& gen, block_q8_0* a, std::size_t nb, int limit, float d) {
  for (std::size_t b = 0; b < nb; ++b) {
    a[b].d = half(d);
    for (auto& q : a[b].qs) q = static_cast<std::int8_t>(static_cast<int>(gen.uniform_index(0, 2 * limit)) - limit);
  }
}
void random_q8_k(ruvllm::test::rng& gen, block_q8_k* a, std::size_t nb, int limit, float d) {
  for (std::size_t b = 0; b < nb; ++b) {
    a[b].d = d;
    for (auto& q : a[b].qs) q = static_cast<std::int8_t>(static_cast<int>(gen.uniform_index(0, 2 * limit)) - limit);
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int j = 0; j < 16; ++j) s += a[b].qs[16 * g + j];
      a[b].bsums[g] = static_cast<std::int16_t>(s);
    }
  }
}
/// Random bytes for every quant/scale field of weight blocks, with the given
/// f16 super-block scales (Q6_K scales limited to [-scale_limit, scale_limit]).
template <class Block>
void random_bytes(ruvllm::test::rng& gen, Block* w, std::size_t nb) {
  for (std::size_t b = 0; b < nb; ++b) {
    auto* p = reinterpret_cast<unsigned char*>(&w[b]);
    for (std::size_t i = 0; i < sizeof(Block); ++i) p[i] = static_cast<unsigned char>(gen.next_u32());
  }
}
void set_scales(block_q8_0* w, std::size_t nb, float d) {
  for (std::size_t b = 0; b < nb; ++b) w[b].d = half(d);
}
void set_scales(block_q4_0* w, std::size_t nb, float d) {
  for (std::size_t b = 0; b < nb; ++b) w[b].d = half(d);
}
void set_scales(block_q5_0* w, std::size_t nb, float d) {
  for (std::size_t b = 0; b < nb; ++b) w[b].d = half(d);
}
void set_scales(block_q4_1* w, std::size_t nb, float d) {
  for (std::size_t b = 0; b < nb; ++b) w[b].d = w[b].m = half(d);
}
void set_scales(block_q5_1* w, std::size_t nb, float d) {
  for (std::size_t b = 0; b < nb; ++b) w[b].d = w[b].m = half(d);
}
void set_scales(block_iq4_nl* w, std::size_t nb, float d) {
  for (std::size_t b = 0; b < nb; ++b) w[b].d = half(d);
}
void set_scales(block_q2_k* w, std::size_t nb, float d) {
  for (std::size_t b = 0; b < nb; ++b) w[b].d = w[b].dmin = half(d);
}
void set_scales(block_q3_k* w, std::size_t nb, float d) {
  for (std::size_t b = 0; b < nb; ++b) w[b].d = half(d);
}
/// IQ4_XS: d, and every sub-block scale clamped to [-scale_limit, scale_limit).
void set_scales(block_iq4_xs* w, std::size_t nb, float d, int scale_limit = 32) {
  for (std::size_t b = 0; b < nb; ++b) {
    w[b].d = half(d);
    int v[256], sc[8];
    unpack_iq4_xs(w[b], v, sc);
    w[b].scales_h = 0;
    for (int j = 0; j < 8; ++j) {
      const auto s = static_cast<unsigned>(std::clamp(sc[j], -scale_limit, scale_limit - 1) + 32);
      auto& low = w[b].scales_l[j / 2];
      low = static_cast<std::uint8_t>(j % 2 == 0 ? (low & 0xF0u) | (s & 0x0Fu) : (low & 0x0Fu) | ((s & 0x0Fu) << 4));
      w[b].scales_h = static_cast<std::uint16_t>(w[b].scales_h | ((s >> 4) << (2 * j)));
    }
  }
}
void set_scales(block_q4_k* w, std::size_t nb, float d) {
  for (std::size_t b = 0; b < nb; ++b) w[b].d = w[b].dmin = half(d);
}
void set_scales(block_q5_k* w, std::size_t nb, float d) {
  for (std::size_t b = 0; b < nb; ++b) w[b].d = w[b].dmin = half(d);
}
void set_scales(block_q6_k* w, std::size_t nb, float d, int scale_limit = 127) {
  for (std::size_t b = 0; b < nb; ++b) {
    w[b].d = half(d);
    for (auto& s : w[b].scales) s = static_cast<std::int8_t>(std::clamp<int>(s, -scale_limit, scale_limit));
  }
}
/// Random finite f16 scales in [0.25, 4) * 2^-8 of either sign.
float random_scale(ruvllm::test::rng& gen) {
  const float s = std::ldexp(gen.uniform(1.0f, 16.0f), -10);
  return gen.chance(0.5) ? -s : s;
}

// -------------------------------------------------- per-format dispatching

struct q8_0_pair {
  using weight = block_q8_0;
  using act = block_q8_0;
  static constexpr std::size_t block = 32;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_q8_0_q8_0(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_q8_0_q8_0_rows(w, stride, rows, a, n, out);
  }
};
struct q4_0_pair {
  using weight = block_q4_0;
  using act = block_q8_0;
  static constexpr std::size_t block = 32;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_q4_0_q8_0(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_q4_0_q8_0_rows(w, stride, rows, a, n, out);
  }
};
struct iq4_nl_pair {
  using weight = block_iq4_nl;
  using act = block_q8_0;
  static constexpr std::size_t block = 32;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_iq4_nl_q8_0(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_iq4_nl_q8_0_rows(w, stride, rows, a, n, out);
  }
};
struct q5_0_pair {
  using weight = block_q5_0;
  using act = block_q8_0;
  static constexpr std::size_t block = 32;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_q5_0_q8_0(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_q5_0_q8_0_rows(w, stride, rows, a, n, out);
  }
};
struct q4_1_pair {
  using weight = block_q4_1;
  using act = block_q8_0;
  static constexpr std::size_t block = 32;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_q4_1_q8_0(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_q4_1_q8_0_rows(w, stride, rows, a, n, out);
  }
};
struct q5_1_pair {
  using weight = block_q5_1;
  using act = block_q8_0;
  static constexpr std::size_t block = 32;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_q5_1_q8_0(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_q5_1_q8_0_rows(w, stride, rows, a, n, out);
  }
};
struct q2_k_pair {
  using weight = block_q2_k;
  using act = block_q8_k;
  static constexpr std::size_t block = 256;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_q2_k_q8_k(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_q2_k_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <class B>
  static void gemm(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t tokens,
                   std::size_t n, float* y, std::size_t y_stride) {
    ops<B>::gemm_q2_k_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};
struct q3_k_pair {
  using weight = block_q3_k;
  using act = block_q8_k;
  static constexpr std::size_t block = 256;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_q3_k_q8_k(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_q3_k_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <class B>
  static void gemm(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t tokens,
                   std::size_t n, float* y, std::size_t y_stride) {
    ops<B>::gemm_q3_k_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};
struct iq4_xs_pair {
  using weight = block_iq4_xs;
  using act = block_q8_k;
  static constexpr std::size_t block = 256;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_iq4_xs_q8_k(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_iq4_xs_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <class B>
  static void gemm(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t tokens,
                   std::size_t n, float* y, std::size_t y_stride) {
    ops<B>::gemm_iq4_xs_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};
struct q4_k_pair {
  using weight = block_q4_k;
  using act = block_q8_k;
  static constexpr std::size_t block = 256;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_q4_k_q8_k(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_q4_k_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <class B>
  static void gemm(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t tokens,
                   std::size_t n, float* y, std::size_t y_stride) {
    ops<B>::gemm_q4_k_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};
struct q5_k_pair {
  using weight = block_q5_k;
  using act = block_q8_k;
  static constexpr std::size_t block = 256;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_q5_k_q8_k(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_q5_k_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <class B>
  static void gemm(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t tokens,
                   std::size_t n, float* y, std::size_t y_stride) {
    ops<B>::gemm_q5_k_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};
struct q6_k_pair {
  using weight = block_q6_k;
  using act = block_q8_k;
  static constexpr std::size_t block = 256;
  template <class B>
  static float dot(const weight* w, const act* a, std::size_t n) {
    return ops<B>::dot_q6_k_q8_k(w, a, n);
  }
  template <class B>
  static void rows(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t n, float* out) {
    ops<B>::dot_q6_k_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <class B>
  static void gemm(const weight* w, std::size_t stride, std::size_t rows, const act* a, std::size_t tokens,
                   std::size_t n, float* y, std::size_t y_stride) {
    ops<B>::gemm_q6_k_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

void random_activations(ruvllm::test::rng& gen, block_q8_0* a, std::size_t nb, int limit, float d) {
  random_q8_0(gen, a, nb, limit, d);
}
void random_activations(ruvllm::test::rng& gen, block_q8_k* a, std::size_t nb, int limit, float d) {
  random_q8_k(gen, a, nb, limit, d);
}

template <class B, class Block>
void quantize(const float* x, Block* y, std::size_t n) {
  if constexpr (std::is_same_v<Block, block_q8_0>) ops<B>::quantize_q8_0(x, y, n);
  if constexpr (std::is_same_v<Block, block_q4_0>) ops<B>::quantize_q4_0(x, y, n);
  if constexpr (std::is_same_v<Block, block_q5_0>) ops<B>::quantize_q5_0(x, y, n);
  if constexpr (std::is_same_v<Block, block_q4_1>) ops<B>::quantize_q4_1(x, y, n);
  if constexpr (std::is_same_v<Block, block_q5_1>) ops<B>::quantize_q5_1(x, y, n);
  if constexpr (std::is_same_v<Block, block_iq4_nl>) ops<B>::quantize_iq4_nl(x, y, n);
  if constexpr (std::is_same_v<Block, block_q2_k>) ops<B>::quantize_q2_k(x, y, n);
  if constexpr (std::is_same_v<Block, block_q3_k>) ops<B>::quantize_q3_k(x, y, n);
  if constexpr (std::is_same_v<Block, block_iq4_xs>) ops<B>::quantize_iq4_xs(x, y, n);
  if constexpr (std::is_same_v<Block, block_q4_k>) ops<B>::quantize_q4_k(x, y, n);
  if constexpr (std::is_same_v<Block, block_q5_k>) ops<B>::quantize_q5_k(x, y, n);
  if constexpr (std::is_same_v<Block, block_q6_k>) ops<B>::quantize_q6_k(x, y, n);
  if constexpr (std::is_same_v<Block, block_q8_k>) ops<B>::quantize_q8_k(x, y, n);
}
template <class B, class Block>
void dequantize(const Block* x, float* y, std::size_t n) {
  if constexpr (std::is_same_v<Block, block_q8_0>) ops<B>::dequantize_q8_0(x, y, n);
  if constexpr (std::is_same_v<Block, block_q4_0>) ops<B>::dequantize_q4_0(x, y, n);
  if constexpr (std::is_same_v<Block, block_q5_0>) ops<B>::dequantize_q5_0(x, y, n);
  if constexpr (std::is_same_v<Block, block_q4_1>) ops<B>::dequantize_q4_1(x, y, n);
  if constexpr (std::is_same_v<Block, block_q5_1>) ops<B>::dequantize_q5_1(x, y, n);
  if constexpr (std::is_same_v<Block, block_iq4_nl>) ops<B>::dequantize_iq4_nl(x, y, n);
  if constexpr (std::is_same_v<Block, block_q2_k>) ops<B>::dequantize_q2_k(x, y, n);
  if constexpr (std::is_same_v<Block, block_q3_k>) ops<B>::dequantize_q3_k(x, y, n);
  if constexpr (std::is_same_v<Block, block_iq4_xs>) ops<B>::dequantize_iq4_xs(x, y, n);
  if constexpr (std::is_same_v<Block, block_q4_k>) ops<B>::dequantize_q4_k(x, y, n);
  if constexpr (std::is_same_v<Block, block_q5_k>) ops<B>::dequantize_q5_k(x, y, n);
  if constexpr (std::is_same_v<Block, block_q6_k>) ops<B>::dequantize_q6_k(x, y, n);
  if constexpr (std::is_same_v<Block, block_q8_k>) ops<B>::dequantize_q8_k(x, y, n);
}
template <class Block>
constexpr std::size_t block_elems = std::is_same_v<Block, block_q8_0> || std::is_same_v<Block, block_q4_0> ||
                                            std::is_same_v<Block, block_q5_0> || std::is_same_v<Block, block_q5_1> ||
                                            std::is_same_v<Block, block_q4_1> || std::is_same_v<Block, block_iq4_nl>
                                        ? 32
                                        : 256;

/// Runs body(backend_name, tag) for xsimd and every Highway target.
template <class Body>
void for_each_simd_backend(Body&& body) {
  {
    INFO("xsimd " << xsimd_backend::target_name());
    body(xsimd_backend{});
  }
  ruvllm::test::for_each_highway_target([&](const std::string&) { body(highway{}); });
}

}  // namespace

// ==================================================== hand-computed blocks

TEST_CASE("Q8_0 quantizes known blocks to ggml's exact bytes", "[kernels][quant]") {
  // amax 127 gives d = 1 exactly, so q = roundf(x): halves go away from zero.
  float x[64] = {127.0f, -127.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 0.49f, -0.49f, 100.7f, -100.5f, 3.0f, 0.0f, -0.0f};
  // Second block: amax 254 -> d = 2, id = 0.5: x = 5 -> 2.5 -> 3, x = -3 -> -1.5 -> -2, 1 -> 0.5 -> 1.
  x[32] = 254.0f;
  x[33] = 5.0f;
  x[34] = -3.0f;
  x[35] = 1.0f;
  x[36] = 0.9f;
  const std::int8_t want0[14] = {127, -127, 1, -1, 2, 3, -3, 0, 0, 101, -101, 3, 0, 0};
  const std::int8_t want1[5] = {127, 3, -2, 1, 0};
  const auto check = [&](const block_q8_0* y) {
    CHECK(bits(y[0].d) == 0x3C00);  // f16 1.0
    for (int j = 0; j < 14; ++j) CHECK(y[0].qs[j] == want0[j]);
    for (int j = 14; j < 32; ++j) CHECK(y[0].qs[j] == 0);
    CHECK(bits(y[1].d) == 0x4000);  // f16 2.0
    for (int j = 0; j < 5; ++j) CHECK(y[1].qs[j] == want1[j]);
  };
  placed<block_q8_0> y(2);
  ops<scalar>::quantize_q8_0(x, y.data(), 64);
  check(y.data());
  for_each_simd_backend([&](auto b) {
    placed<block_q8_0> z(2);
    quantize<decltype(b)>(x, z.data(), 64);
    check(z.data());
  });
}

TEST_CASE("Q8_0 of an all-zero block is all zero bytes", "[kernels][quant]") {
  const float x[32] = {};
  placed<block_q8_0> y(1);
  std::memset(y.data(), 0xAB, sizeof(block_q8_0));
  ops<scalar>::quantize_q8_0(x, y.data(), 32);
  const block_q8_0 zero{};
  CHECK(first_difference(y.data(), &zero, 1) == -1);
}

TEST_CASE("Q4_0 quantizes known blocks to ggml's exact bytes", "[kernels][quant]") {
  // Block 0: the first element of largest magnitude is -8, so d = -8 / -8 = 1
  // and q = min(15, trunc(x + 8.5)).
  float x[96] = {-8.0f, 7.0f, 7.4f, 7.6f, 0.5f, -0.5f, 0.49f, -3.2f, 8.0f, -7.99f};
  // element 16 + j goes to the high nibble of byte j
  x[16] = 1.0f;
  x[17] = -1.0f;
  // Block 1: +8 comes first, so d = -1 and q = min(15, trunc(8.5 - x)); the
  // later -8 maps to 16.5 -> 15, the clipped end.
  x[32] = 8.0f;
  x[33] = -8.0f;
  x[34] = 2.0f;
  // Block 2 is all zero: d = 0 / -8 = -0, every nibble 8.
  placed<block_q4_0> y(3);
  const auto check = [&](const block_q4_0* q) {
    CHECK(bits(q[0].d) == 0x3C00);
    const int lo[10] = {0, 15, 15, 15, 9, 8, 8, 5, 15, 0};
    CHECK((q[0].qs[0] & 0xF) == lo[0]);
    CHECK((q[0].qs[0] >> 4) == 9);  // x[16] = 1 -> 9.5 -> 9
    CHECK((q[0].qs[1] >> 4) == 7);  // x[17] = -1 -> 7.5 -> 7
    for (int j = 1; j < 10; ++j) CHECK((q[0].qs[j] & 0xF) == lo[j]);
    for (int j = 10; j < 16; ++j) CHECK((q[0].qs[j] & 0xF) == 8);
    for (int j = 2; j < 16; ++j) CHECK((q[0].qs[j] >> 4) == 8);
    CHECK(bits(q[1].d) == 0xBC00);  // f16 -1.0
    CHECK((q[1].qs[0] & 0xF) == 0);
    CHECK((q[1].qs[1] & 0xF) == 15);
    CHECK((q[1].qs[2] & 0xF) == 6);
    CHECK(bits(q[2].d) == 0x8000);  // -0, exactly as ggml stores it
    for (int j = 0; j < 16; ++j) CHECK(q[2].qs[j] == 0x88);
  };
  ops<scalar>::quantize_q4_0(x, y.data(), 96);
  check(y.data());
  for_each_simd_backend([&](auto b) {
    placed<block_q4_0> z(3);
    quantize<decltype(b)>(x, z.data(), 96);
    check(z.data());
  });
}

TEST_CASE("Q5_0 quantizes known blocks to ggml's exact bytes", "[kernels][quant]") {
  // Block 0: x_j = j - 16, whose first element of largest magnitude is -16:
  // d = 1 and q_j = min(31, trunc(x_j + 16.5)) = j, so the low nibbles of
  // byte j are j and j + 16's (both j % 16) and the fifth bit is set for
  // j >= 16 alone. Block 1: x_j = 16 - j, +16 first: d = -1, the same quants.
  // Block 2: all zero, d = -0 and every quant 16 (nibble 0, fifth bit set).
  float x[96] = {};
  for (int j = 0; j < 32; ++j) {
    x[j] = static_cast<float>(j - 16);
    x[32 + j] = static_cast<float>(16 - j);
  }
  const auto check = [&](const block_q5_0* q) {
    CHECK(bits(q[0].d) == 0x3C00);
    CHECK(bits(q[1].d) == 0xBC00);
    CHECK(bits(q[2].d) == 0x8000);
    for (int b = 0; b < 2; ++b) {
      for (int j = 0; j < 16; ++j) CHECK(q[b].qs[j] == static_cast<std::uint8_t>(j | (j << 4)));
      CHECK((q[b].qh[0] == 0x00 && q[b].qh[1] == 0x00 && q[b].qh[2] == 0xFF && q[b].qh[3] == 0xFF));
    }
    for (int j = 0; j < 16; ++j) CHECK(q[2].qs[j] == 0x00);
    for (int k = 0; k < 4; ++k) CHECK(q[2].qh[k] == 0xFF);
  };
  placed<block_q5_0> y(3);
  ops<scalar>::quantize_q5_0(x, y.data(), 96);
  check(y.data());
  // The values come back exactly.
  const auto back = ggml_dequantize(y.data(), 3);
  for (int i = 0; i < 96; ++i) CHECK(back[static_cast<std::size_t>(i)] == x[i]);
  for_each_simd_backend([&](auto b) {
    placed<block_q5_0> z(3);
    quantize<decltype(b)>(x, z.data(), 96);
    check(z.data());
  });
}

TEST_CASE("Q4_1 quantizes known blocks to ggml's exact bytes", "[kernels][quant]") {
  // Block 0: x_j = 0.25 (j % 16) + 1 runs from min 1 to max 4.75: d = 3.75 /
  // 15 = 0.25 and q_j = j % 16, so byte j holds j | j << 4. Block 1: all
  // -0.5: d = 0, every quant 0, m = -0.5.
  float x[64] = {};
  for (int j = 0; j < 32; ++j) {
    x[j] = 0.25f * static_cast<float>(j % 16) + 1.0f;
    x[32 + j] = -0.5f;
  }
  const auto check = [&](const block_q4_1* q) {
    CHECK(bits(q[0].d) == 0x3400);  // f16 0.25
    CHECK(bits(q[0].m) == 0x3C00);  // f16 1.0
    for (int j = 0; j < 16; ++j) CHECK(q[0].qs[j] == static_cast<std::uint8_t>(j | (j << 4)));
    CHECK(bits(q[1].d) == 0x0000);
    CHECK(bits(q[1].m) == 0xB800);  // f16 -0.5
    for (int j = 0; j < 16; ++j) CHECK(q[1].qs[j] == 0x00);
  };
  placed<block_q4_1> y(2);
  ops<scalar>::quantize_q4_1(x, y.data(), 64);
  check(y.data());
  const auto back = ggml_dequantize(y.data(), 2);
  for (int i = 0; i < 64; ++i) CHECK(back[static_cast<std::size_t>(i)] == x[i]);
  for_each_simd_backend([&](auto b) {
    placed<block_q4_1> z(2);
    quantize<decltype(b)>(x, z.data(), 64);
    check(z.data());
  });
}

TEST_CASE("Q5_1 quantizes known blocks to ggml's exact bytes", "[kernels][quant]") {
  // Block 0: x_j = 0.5 j - 3 runs from min -3 to max 12.5: d = 15.5 / 31 =
  // 0.5 and q_j = trunc((x_j + 3) / 0.5 + 0.5) = j. Block 1: constant 2.25:
  // d = 0, every quant 0, m = 2.25.
  float x[64] = {};
  for (int j = 0; j < 32; ++j) {
    x[j] = 0.5f * static_cast<float>(j) - 3.0f;
    x[32 + j] = 2.25f;
  }
  const auto check = [&](const block_q5_1* q) {
    CHECK(bits(q[0].d) == 0x3800);  // f16 0.5
    CHECK(bits(q[0].m) == 0xC200);  // f16 -3.0
    for (int j = 0; j < 16; ++j) CHECK(q[0].qs[j] == static_cast<std::uint8_t>(j | (j << 4)));
    CHECK((q[0].qh[0] == 0x00 && q[0].qh[1] == 0x00 && q[0].qh[2] == 0xFF && q[0].qh[3] == 0xFF));
    CHECK(bits(q[1].d) == 0x0000);
    CHECK(bits(q[1].m) == 0x4080);  // f16 2.25
    for (int j = 0; j < 16; ++j) CHECK(q[1].qs[j] == 0x00);
    for (int k = 0; k < 4; ++k) CHECK(q[1].qh[k] == 0x00);
  };
  placed<block_q5_1> y(2);
  ops<scalar>::quantize_q5_1(x, y.data(), 64);
  check(y.data());
  const auto back = ggml_dequantize(y.data(), 2);
  for (int i = 0; i < 64; ++i) CHECK(back[static_cast<std::size_t>(i)] == x[i]);
  for_each_simd_backend([&](auto b) {
    placed<block_q5_1> z(2);
    quantize<decltype(b)>(x, z.data(), 64);
    check(z.data());
  });
}

TEST_CASE("Q8_K quantizes a known block to ggml's exact bytes and bsums", "[kernels][quant]") {
  // max = -127 comes first: iscale = 1, q = nearest_int(x) with ties to even.
  std::vector<float> x(256, 0.0f);
  x[0] = -127.0f;
  x[1] = 2.5f;
  x[2] = 3.5f;
  x[3] = -2.5f;
  x[4] = 127.0f;
  x[16] = 10.4f;
  x[255] = -0.5f;
  const auto check = [&](const block_q8_k& q) {
    CHECK(q.d == 1.0f);
    CHECK(q.qs[0] == -127);
    CHECK(q.qs[1] == 2);
    CHECK(q.qs[2] == 4);
    CHECK(q.qs[3] == -2);
    CHECK(q.qs[4] == 127);
    CHECK(q.qs[16] == 10);
    CHECK(q.qs[255] == 0);
    CHECK(q.bsums[0] == -127 + 2 + 4 - 2 + 127);
    CHECK(q.bsums[1] == 10);
    for (int g = 2; g < 16; ++g) CHECK(q.bsums[g] == 0);
  };
  placed<block_q8_k> y(1);
  ops<scalar>::quantize_q8_k(x.data(), y.data(), 256);
  check(y[0]);
  for_each_simd_backend([&](auto b) {
    placed<block_q8_k> z(1);
    quantize<decltype(b)>(x.data(), z.data(), 256);
    check(z[0]);
  });
}

TEST_CASE("Q4_K and Q6_K quantize a hand-made block whose values the format holds", "[kernels][quant]") {
  // Every sub-block of 32 is 0, 1, ..., 15 (twice): a scale of 1 and min 0
  // represent it exactly, so the search must find zero error.
  std::vector<float> x(256);
  for (std::size_t i = 0; i < 256; ++i) x[i] = static_cast<float>(i % 16);
  placed<block_q4_k> y(1);
  ops<scalar>::quantize_q4_k(x.data(), y.data(), 256);
  // Only the f16 rounding of d = 1/63 (relative 2^-11) separates the result
  // from x: every quant is x itself and the min is 0.
  CHECK(value(y[0].dmin) == 0.0f);
  const auto back = ggml_dequantize(y.data(), 1);
  for (std::size_t i = 0; i < 256; ++i) {
    CHECK(std::fabs(back[i] - x[i]) <= 15.0f / 2048.0f);
    CHECK(std::round(back[i]) == x[i]);
  }
  // Q6_K: integers in [-32, 31] with the extreme -32 in every 16-group.
  for (std::size_t i = 0; i < 256; ++i)
    x[i] = (i % 16 == 0) ? -32.0f : static_cast<float>(static_cast<int>(i % 61) - 30);
  placed<block_q6_k> z(1);
  ops<scalar>::quantize_q6_k(x.data(), z.data(), 256);
  const auto back6 = ggml_dequantize(z.data(), 1);
  double worst = 0;
  for (std::size_t i = 0; i < 256; ++i) worst = std::max(worst, std::fabs(static_cast<double>(back6[i]) - x[i]));
  // Scale 1 per group, int8 scale -128 and d = -1/128: all exact.
  CHECK(worst == 0.0);
}

TEST_CASE("Q5_K quantizes a hand-made block whose values the format holds", "[kernels][quant]") {
  // Every sub-block of 32 is 0, 1, ..., 31, in an order that puts the fifth
  // bit of each group's low and high halves at different elements: scale 1,
  // min 0 hold it exactly, so every quant is x itself up to the f16 rounding
  // of d = 1/63.
  std::vector<float> x(256);
  for (std::size_t i = 0; i < 256; ++i) x[i] = static_cast<float>((i * 7 + i / 32) % 32);
  placed<block_q5_k> y(1);
  ops<scalar>::quantize_q5_k(x.data(), y.data(), 256);
  CHECK(value(y[0].dmin) == 0.0f);
  const auto back = ggml_dequantize(y.data(), 1);
  for (std::size_t i = 0; i < 256; ++i) {
    CHECK(std::fabs(back[i] - x[i]) <= 31.0f / 2048.0f);
    CHECK(std::round(back[i]) == x[i]);
  }
  // Shifted by -20 the min takes the offset (min 20 of a 6-bit code).
  for (float& v : x) v -= 20.0f;
  ops<scalar>::quantize_q5_k(x.data(), y.data(), 256);
  const auto shifted = ggml_dequantize(y.data(), 1);
  double worst = 0;
  for (std::size_t i = 0; i < 256; ++i) worst = std::max(worst, std::fabs(static_cast<double>(shifted[i]) - x[i]));
  CHECK(worst <= 0.06);
}

TEST_CASE("IQ4_NL quantizes hand-made blocks whose values the format holds", "[kernels][quant]") {
  // Half of table values, each block led by -127 / 2 (its first largest
  // magnitude): the scale 1/2 found by the search holds every value
  // exactly, and an all-zero block stores d = 0 with index 8 (value 1).
  std::vector<float> x(96);
  for (std::size_t i = 0; i < 64; ++i)
    x[i] = i % 32 == 0 ? -63.5f : 0.5f * static_cast<float>(iq4_nl_table[(i * 7 + i / 32) % 16]);
  placed<block_iq4_nl> y(3);
  ops<scalar>::quantize_iq4_nl(x.data(), y.data(), 96);
  CHECK(value(y[0].d) == 0.5f);
  const auto back = ggml_dequantize(y.data(), 3);
  for (std::size_t i = 0; i < 64; ++i) CHECK(back[i] == x[i]);
  CHECK(bits(y[2].d) == 0);
  for (const std::uint8_t q : y[2].qs) CHECK(q == 0x88);
  // Moved off the table, every element takes the table value nearest x / d,
  // up to the f16 rounding of the stored d (|x / d| <= 127 moves by at most
  // 127 * 2^-11 < 0.07).
  for (std::size_t i = 0; i < 64; ++i) x[i] *= 1.0f + (i % 3 == 0 ? 0.013f : -0.011f);
  ops<scalar>::quantize_iq4_nl(x.data(), y.data(), 96);
  for (std::size_t b = 0; b < 2; ++b) {
    const float d = value(y[b].d);
    int v[32];
    unpack_iq4_nl_values(y[b], v);
    for (std::size_t i = 0; i < 32; ++i) {
      const float t = x[32 * b + i] / d;
      float nearest = std::numeric_limits<float>::infinity();
      for (const int k : iq4_nl_table) nearest = std::min(nearest, std::fabs(t - static_cast<float>(k)));
      CHECK(std::fabs(t - static_cast<float>(v[i])) <= nearest + 0.14f);
    }
  }
}

TEST_CASE("Q2_K and Q3_K quantize hand-made blocks whose values the formats hold", "[kernels][quant]") {
  // Q2_K: every sub-block of 16 takes 0..3 with both ends present: scale 1
  // and min 0 hold it, so every quant is x itself up to the f16 rounding of
  // d = 1/15.
  std::vector<float> x(256);
  for (std::size_t i = 0; i < 256; ++i) x[i] = static_cast<float>((i * 5 + i / 16) % 4);
  placed<block_q2_k> y(1);
  ops<scalar>::quantize_q2_k(x.data(), y.data(), 256);
  CHECK(value(y[0].dmin) == 0.0f);
  const auto back = ggml_dequantize(y.data(), 1);
  for (std::size_t i = 0; i < 256; ++i) {
    CHECK(std::fabs(back[i] - x[i]) <= 3.0f / 2048.0f);
    CHECK(std::round(back[i]) == x[i]);
  }
  // Shifted by -1.5 the min takes the offset (level 15 of dmin = 0.1).
  for (float& v : x) v -= 1.5f;
  ops<scalar>::quantize_q2_k(x.data(), y.data(), 256);
  const auto shifted = ggml_dequantize(y.data(), 1);
  double worst = 0;
  for (std::size_t i = 0; i < 256; ++i) worst = std::max(worst, std::fabs(static_cast<double>(shifted[i]) - x[i]));
  CHECK(worst <= 0.005);
  // Q3_K: integers in [-4, 3] with -4 the first extreme of every group of
  // 16: scale 1 per group, 6-bit scale -32 and d = -1/32, all exact.
  for (std::size_t i = 0; i < 256; ++i)
    x[i] = (i % 16 == 0) ? -4.0f : static_cast<float>(static_cast<int>((i * 3 + i / 16) % 8) - 4);
  placed<block_q3_k> z(1);
  ops<scalar>::quantize_q3_k(x.data(), z.data(), 256);
  const auto back3 = ggml_dequantize(z.data(), 1);
  worst = 0;
  for (std::size_t i = 0; i < 256; ++i) worst = std::max(worst, std::fabs(static_cast<double>(back3[i]) - x[i]));
  CHECK(worst == 0.0);
  CHECK(value(z[0].d) == -1.0f / 32.0f);
}

TEST_CASE("IQ4_XS quantizes a hand-made super-block whose values the format holds", "[kernels][quant]") {
  // Sub-block j holds c_j times table values, the first of them -127 (index
  // 0, the largest magnitude), c_j a power of two times 1/2 of either sign:
  // each fit finds c_j exactly, the super-block scale is -1/64 (= -max /
  // 32), the 6-bit multiples l_j = -64 c_j are exact, and so is the round
  // trip.
  const float c[8] = {0.5f, 0.25f, -0.25f, 0.125f, -0.0625f, 0.5f, 0.03125f, -0.015625f};
  const int l[8] = {-32, -16, 16, -8, 4, -32, -2, 1};
  std::vector<float> x(256);
  for (std::size_t i = 0; i < 256; ++i) {
    const std::size_t index = i % 32 == 0 ? 0 : (i * 7 + i / 32) % 16;
    x[i] = c[i / 32] * static_cast<float>(iq4_nl_table[index]);
  }
  placed<block_iq4_xs> y(1);
  ops<scalar>::quantize_iq4_xs(x.data(), y.data(), 256);
  CHECK(value(y[0].d) == -1.0f / 64.0f);
  int v[256], sc[8];
  unpack_iq4_xs(y[0], v, sc);
  for (int j = 0; j < 8; ++j) CHECK(sc[j] == l[j]);
  const auto back = ggml_dequantize(y.data(), 1);
  for (std::size_t i = 0; i < 256; ++i) CHECK(back[i] == x[i]);
  // An all-zero super-block: d = -0, every scale 0 (stored 32) and every
  // index 8 (the value nearest 0), as ggml writes it.
  std::fill(x.begin(), x.end(), 0.0f);
  ops<scalar>::quantize_iq4_xs(x.data(), y.data(), 256);
  CHECK(bits(y[0].d) == 0x8000);
  CHECK(y[0].scales_h == 0xAAAA);
  for (const std::uint8_t s : y[0].scales_l) CHECK(s == 0);
  for (const std::uint8_t q : y[0].qs) CHECK(q == 0x88);
}

// ================================================ dequantization formulas

TEMPLATE_TEST_CASE("dequantization equals ggml's formulas bit for bit on random blocks", "[kernels][quant]", block_q8_0,
                   block_q4_0, block_q4_1, block_q5_0, block_q5_1, block_iq4_nl, block_q2_k, block_q3_k, block_q4_k,
                   block_q5_k, block_q6_k, block_q8_k, block_iq4_xs) {
  using Block = TestType;
  ruvllm::test::rng gen(11);
  for (const std::size_t nb : block_counts) {
    placed<Block> x(nb);
    random_bytes(gen, x.data(), nb);
    // Keep the scales finite (random bytes could be inf/NaN f16 patterns).
    if constexpr (std::is_same_v<Block, block_q8_k>) {
      for (std::size_t b = 0; b < nb; ++b) x[b].d = random_scale(gen);
    } else {
      for (std::size_t b = 0; b < nb; ++b) {
        x[b].d = half(random_scale(gen) * 64.0f);
        if constexpr (std::is_same_v<Block, block_q4_k> || std::is_same_v<Block, block_q5_k> ||
                      std::is_same_v<Block, block_q2_k>)
          x[b].dmin = half(random_scale(gen));
        if constexpr (std::is_same_v<Block, block_q5_1> || std::is_same_v<Block, block_q4_1>)
          x[b].m = half(random_scale(gen));
      }
    }
    const std::size_t n = nb * block_elems<Block>;
    const auto want = ggml_dequantize(x.data(), nb);
    INFO("blocks " << nb);
    placed<float> y(n, 4);
    dequantize<scalar>(x.data(), y.data(), n);
    CHECK(first_difference(y.data(), want.data(), n) == -1);
    for_each_simd_backend([&](auto b) {
      placed<float> z(n, 4);
      dequantize<decltype(b)>(x.data(), z.data(), n);
      CHECK(first_difference(z.data(), want.data(), n) == -1);
    });
  }
}

// ======================================================= round-trip error

TEST_CASE("Q8_0 round trip: |x - x'| <= amax/254 + amax/2048 per element", "[kernels][quant]") {
  // Rounding to the nearest multiple of d = amax/127 costs d/2; storing d as
  // f16 (relative error <= 2^-11) moves a value with |q| <= 127 by at most
  // 127 d 2^-11 = amax/2048.
  ruvllm::test::rng gen(12);
  for (const std::size_t nb : block_counts) {
    const auto x = weights_like(gen, 32 * nb, gen.uniform(0.01f, 100.0f));
    placed<block_q8_0> q(nb);
    ops<scalar>::quantize_q8_0(x.data(), q.data(), x.size());
    const auto back = ggml_dequantize(q.data(), nb);
    for (std::size_t b = 0; b < nb; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
      for (int j = 0; j < 32; ++j) {
        const double err = std::fabs(static_cast<double>(x[32 * b + j]) - back[32 * b + j]);
        CHECK(err <= amax * (1.0 / 254 + 1.0 / 2048) * (1 + 1e-6));
        CHECK(q[b].qs[j] >= -127);  // the activation precondition of every dot
      }
    }
  }
}

TEST_CASE("Q4_0 round trip: |x - x'| <= amax/16 + amax/2048, amax/8 at the clipped end", "[kernels][quant]") {
  // d = m / -8 with |d| = amax/8; quants span [-8, 7] d, so values rounding
  // into the missing +8 d slot (x/d > 7.5, only of the sign opposite to m) are
  // clipped and may be off by a full |d|; everything else by |d|/2. The f16
  // scale adds at most 8 |d| 2^-11 = amax/2048.
  ruvllm::test::rng gen(13);
  for (const std::size_t nb : block_counts) {
    const auto x = weights_like(gen, 32 * nb);
    placed<block_q4_0> q(nb);
    ops<scalar>::quantize_q4_0(x.data(), q.data(), x.size());
    const auto back = ggml_dequantize(q.data(), nb);
    std::size_t clipped = 0;
    for (std::size_t b = 0; b < nb; ++b) {
      float amax = 0, m = 0;
      for (int j = 0; j < 32; ++j) {
        if (std::fabs(x[32 * b + j]) > amax) {
          amax = std::fabs(x[32 * b + j]);
          m = x[32 * b + j];
        }
      }
      for (int j = 0; j < 32; ++j) {
        const double err = std::fabs(static_cast<double>(x[32 * b + j]) - back[32 * b + j]);
        const bool clip = x[32 * b + j] * (-8.0 / m) > 7.5;
        clipped += clip;
        CHECK(err <= amax * ((clip ? 1.0 / 8 : 1.0 / 16) + 1.0 / 2048) * (1 + 1e-6));
      }
    }
    INFO("clipped elements " << clipped);
  }
}

TEST_CASE("Q8_K round trip: |x - x'| <= amax/254 per element", "[kernels][quant]") {
  ruvllm::test::rng gen(14);
  for (const std::size_t nb : block_counts) {
    const auto x = weights_like(gen, 256 * nb, 3.0f);
    placed<block_q8_k> q(nb);
    ops<scalar>::quantize_q8_k(x.data(), q.data(), x.size());
    const auto back = ggml_dequantize(q.data(), nb);
    for (std::size_t b = 0; b < nb; ++b) {
      float amax = 0;
      for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[256 * b + j]));
      int bsum_errors = 0;
      for (int j = 0; j < 256; ++j) {
        CHECK(std::fabs(static_cast<double>(x[256 * b + j]) - back[256 * b + j]) <= amax / 254.0 * (1 + 1e-5));
        CHECK(q[b].qs[j] >= -127);
      }
      for (int g = 0; g < 16; ++g) {
        int s = 0;
        for (int j = 0; j < 16; ++j) s += q[b].qs[16 * g + j];
        bsum_errors += s != q[b].bsums[g];
      }
      CHECK(bsum_errors == 0);
    }
  }
}

namespace {

double rms(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
  return std::sqrt(s / static_cast<double>(a.size()));
}

/// The simple independent 4-bit reference: per 32 elements, min/max affine
/// quantization with the step and the offset stored as f16 (Q4_1-like).
std::vector<float> minmax_4bit_round_trip(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (std::size_t b = 0; b < x.size(); b += 32) {
    const float lo = *std::min_element(x.begin() + b, x.begin() + b + 32);
    const float hi = *std::max_element(x.begin() + b, x.begin() + b + 32);
    const float d = value(half((hi - lo) / 15.0f)), m = value(half(lo));
    for (std::size_t j = b; j < b + 32; ++j) {
      const float q = d > 0 ? std::clamp(std::round((x[j] - m) / d), 0.0f, 15.0f) : 0.0f;
      y[j] = m + d * q;
    }
  }
  return y;
}

/// The same plain min/max rule stored in Q4_K's own format: per 32 elements
/// step (max - min')/15 and offset -min' with min' = min(min, 0) (Q4_K cannot
/// add an offset), both as 6-bit multiples of f16 super-block scales.
std::vector<float> minmax_q4_k_format_round_trip(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (std::size_t b = 0; b < x.size(); b += 256) {
    float step[8], off[8], max_step = 0, max_off = 0;
    for (std::size_t j = 0; j < 8; ++j) {
      const auto first = x.begin() + static_cast<long>(b + 32 * j);
      const float lo = std::min(0.0f, *std::min_element(first, first + 32));
      step[j] = (*std::max_element(first, first + 32) - lo) / 15.0f;
      off[j] = -lo;
      max_step = std::max(max_step, step[j]);
      max_off = std::max(max_off, off[j]);
    }
    const float d = value(half(max_step / 63.0f)), dmin = value(half(max_off / 63.0f));
    for (std::size_t j = 0; j < 8; ++j) {
      const float sc = d > 0 ? std::clamp(std::round(step[j] / d), 0.0f, 63.0f) : 0.0f;
      const float m = dmin > 0 ? std::clamp(std::round(off[j] / dmin), 0.0f, 63.0f) : 0.0f;
      for (std::size_t i = b + 32 * j; i < b + 32 * j + 32; ++i) {
        const float q = d * sc > 0 ? std::clamp(std::round((x[i] + dmin * m) / (d * sc)), 0.0f, 15.0f) : 0.0f;
        y[i] = d * sc * q - dmin * m;
      }
    }
  }
  return y;
}

/// The simple independent 6-bit reference: per 16 elements, symmetric absmax
/// quantization to [-31, 31] with an f16 step.
std::vector<float> absmax_6bit_round_trip(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (std::size_t b = 0; b < x.size(); b += 16) {
    float amax = 0;
    for (std::size_t j = b; j < b + 16; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = value(half(amax / 31.0f));
    for (std::size_t j = b; j < b + 16; ++j) y[j] = d > 0 ? d * std::clamp(std::round(x[j] / d), -31.0f, 31.0f) : 0.0f;
  }
  return y;
}

}  // namespace

TEST_CASE("Q4_K's search beats a plain min/max 4-bit quantizer", "[kernels][quant]") {
  // Against min/max in Q4_K's own format the search must win on any data.
  // Against min/max with f16 step and offset per 32 elements (twice Q4_K's
  // metadata bits, and free to add offsets) it must still win on Gaussian
  // weights; on one-sided data that format's positive offsets are worth more
  // than the search, so only the same-format comparison applies there.
  ruvllm::test::rng gen(15);
  for (const std::size_t nb : block_counts) {
    for (const bool one_sided : {false, true}) {
      auto x = weights_like(gen, 256 * nb, 0.02f);
      if (one_sided) {
        for (auto& v : x) v = std::fabs(v) + 0.005f;
      }
      placed<block_q4_k> q(nb);
      ops<scalar>::quantize_q4_k(x.data(), q.data(), x.size());
      const double ours = rms(x, ggml_dequantize(q.data(), nb));
      const double same_format = rms(x, minmax_q4_k_format_round_trip(x));
      const double f16_per_32 = rms(x, minmax_4bit_round_trip(x));
      INFO("blocks " << nb << (one_sided ? " one-sided" : " gaussian") << ": Q4_K rms " << ours
                     << ", min/max in Q4_K format " << same_format << ", min/max f16 per 32 " << f16_per_32);
      CHECK(ours < same_format);
      if (!one_sided) CHECK(ours < f16_per_32);
    }
  }
}

TEST_CASE("Q3_K's search beats a plain absmax 3-bit quantizer", "[kernels][quant]") {
  // The plain rule: per 16 elements d = amax / 4 in f16, q = round(x / d)
  // clamped to [-4, 3] (Q3_K's levels, with f16 rather than 6-bit scales).
  ruvllm::test::rng gen(56);
  for (const std::size_t nb : block_counts) {
    const auto x = weights_like(gen, 256 * nb, 0.02f);
    std::vector<float> simple(x.size());
    for (std::size_t b = 0; b < x.size(); b += 16) {
      float amax = 0;
      for (std::size_t j = b; j < b + 16; ++j) amax = std::max(amax, std::fabs(x[j]));
      const float d = value(half(amax / 4.0f));
      for (std::size_t j = b; j < b + 16; ++j)
        simple[j] = d > 0 ? d * std::clamp(std::round(x[j] / d), -4.0f, 3.0f) : 0.0f;
    }
    placed<block_q3_k> q(nb);
    ops<scalar>::quantize_q3_k(x.data(), q.data(), x.size());
    const double ours = rms(x, ggml_dequantize(q.data(), nb));
    INFO("blocks " << nb << ": Q3_K rms " << ours << ", absmax rms " << rms(x, simple));
    CHECK(ours < rms(x, simple));
  }
}

TEST_CASE("Q2_K's search beats a plain min/max 2-bit quantizer in mean absolute error", "[kernels][quant]") {
  // ggml's Q2_K search minimizes absolute residuals. The plain rule: per 16
  // elements step (max - min') / 3 and offset -min' with min' = min(min, 0)
  // in f16, q = round((x - min') / step) in [0, 3].
  ruvllm::test::rng gen(57);
  const auto mean_abs = [](const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += std::fabs(static_cast<double>(a[i]) - b[i]);
    return s / static_cast<double>(a.size());
  };
  for (const std::size_t nb : block_counts) {
    const auto x = weights_like(gen, 256 * nb, 0.02f);
    std::vector<float> simple(x.size());
    for (std::size_t b = 0; b < x.size(); b += 16) {
      const auto first = x.begin() + static_cast<long>(b);
      const float lo = std::min(0.0f, *std::min_element(first, first + 16));
      const float step = value(half((*std::max_element(first, first + 16) - lo) / 3.0f)), off = value(half(-lo));
      for (std::size_t j = b; j < b + 16; ++j)
        simple[j] = step > 0 ? step * std::clamp(std::round((x[j] + off) / step), 0.0f, 3.0f) - off : 0.0f;
    }
    placed<block_q2_k> q(nb);
    ops<scalar>::quantize_q2_k(x.data(), q.data(), x.size());
    const double ours = mean_abs(x, ggml_dequantize(q.data(), nb));
    INFO("blocks " << nb << ": Q2_K mean |err| " << ours << ", min/max " << mean_abs(x, simple));
    CHECK(ours < mean_abs(x, simple));
  }
}

TEST_CASE("IQ4_NL's non-linear levels beat Q4_0's linear ones on Gaussian weights", "[kernels][quant]") {
  ruvllm::test::rng gen(64);
  for (const std::size_t nb : block_counts) {
    const auto x = weights_like(gen, 32 * nb, 0.02f);
    placed<block_iq4_nl> q(nb);
    placed<block_q4_0> q4(nb);
    ops<scalar>::quantize_iq4_nl(x.data(), q.data(), x.size());
    ops<scalar>::quantize_q4_0(x.data(), q4.data(), x.size());
    const double ours = rms(x, ggml_dequantize(q.data(), nb)), linear = rms(x, ggml_dequantize(q4.data(), nb));
    INFO("blocks " << nb << ": IQ4_NL rms " << ours << ", Q4_0 rms " << linear);
    CHECK(ours < linear);
  }
}

TEST_CASE("IQ4_XS (4.25 bits) stays close to IQ4_NL (4.5) and beats Q4_0 (4.5) on Gaussian weights",
          "[kernels][quant]") {
  ruvllm::test::rng gen(65);
  for (const std::size_t nb : {1, 3, 8}) {
    const auto x = weights_like(gen, 256 * nb, 0.02f);
    placed<block_iq4_xs> q(nb);
    placed<block_iq4_nl> qn(8 * nb);
    placed<block_q4_0> q4(8 * nb);
    ops<scalar>::quantize_iq4_xs(x.data(), q.data(), x.size());
    ops<scalar>::quantize_iq4_nl(x.data(), qn.data(), x.size());
    ops<scalar>::quantize_q4_0(x.data(), q4.data(), x.size());
    const double ours = rms(x, ggml_dequantize(q.data(), nb)), nl = rms(x, ggml_dequantize(qn.data(), 8 * nb));
    const double linear = rms(x, ggml_dequantize(q4.data(), 8 * nb));
    INFO("super-blocks " << nb << ": IQ4_XS rms " << ours << ", IQ4_NL " << nl << ", Q4_0 " << linear);
    CHECK(ours < linear);
    CHECK(ours < 1.05 * nl);
  }
}

TEST_CASE("Q6_K's search beats a plain absmax 6-bit quantizer", "[kernels][quant]") {
  ruvllm::test::rng gen(16);
  for (const std::size_t nb : block_counts) {
    const auto x = weights_like(gen, 256 * nb, 0.02f);
    placed<block_q6_k> q(nb);
    ops<scalar>::quantize_q6_k(x.data(), q.data(), x.size());
    const double ours = rms(x, ggml_dequantize(q.data(), nb));
    const double simple = rms(x, absmax_6bit_round_trip(x));
    INFO("blocks " << nb << ": Q6_K rms " << ours << ", absmax rms " << simple);
    CHECK(ours < simple);
  }
}

// ============================================================ dot products

namespace {

/// Quantizes random weights and activations and checks each backend's dot
/// against the exact value of the quantized data, and the highway/xsimd dots
/// against the scalar one; also the rows form against the single-row dots,
/// with padded rows starting at unaligned addresses.
template <class Pair>
void check_quantized_dots(std::uint64_t seed) {
  using W = typename Pair::weight;
  using A = typename Pair::act;
  ruvllm::test::rng gen(seed);
  for (const std::size_t nb : block_counts) {
    const std::size_t n = nb * Pair::block;
    const std::size_t rows = 5;
    // Rows padded by one block plus 2 bytes so that each starts unaligned.
    const std::size_t stride = (nb + 1) * sizeof(W) + 2;
    std::vector<unsigned char> storage(rows * stride + 64);
    const auto base = reinterpret_cast<std::uintptr_t>(storage.data());
    unsigned char* first = storage.data() + (64 - base % 64) % 64 + 2;
    const auto row = [&](std::size_t r) { return reinterpret_cast<W*>(first + r * stride); };
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t b = 0; b < nb; ++b) new (row(r) + b) W{};
      quantize<scalar>(weights_like(gen, n, 0.05f).data(), row(r), n);
    }
    placed<A> act(nb);
    quantize<scalar>(weights_like(gen, n, 2.0f).data(), act.data(), n);
    INFO("blocks " << nb);
    float want[rows];
    for (std::size_t r = 0; r < rows; ++r) {
      want[r] = Pair::template dot<scalar>(row(r), act.data(), n);
      check_close_to_exact(want[r], exact(row(r), act.data(), nb), nb);
    }
    float got[rows];
    Pair::template rows<scalar>(row(0), stride, rows, act.data(), n, got);
    for (std::size_t r = 0; r < rows; ++r) CHECK(got[r] == want[r]);
    for_each_simd_backend([&](auto b) {
      using B = decltype(b);
      float many[rows];
      Pair::template rows<B>(row(0), stride, rows, act.data(), n, many);
      for (std::size_t r = 0; r < rows; ++r) {
        const float one = Pair::template dot<B>(row(r), act.data(), n);
        CHECK(one == many[r]);  // the batch form is the single-row dot, row by row
        const exact_dot e = exact(row(r), act.data(), nb);
        check_close_to_exact(one, e, nb);
        // Against the scalar result: both within the bound of the exact value.
        CHECK(std::fabs(static_cast<long double>(one) - want[r]) <= 2.0L * (nb + 8) * eps * e.magnitude);
      }
    });
  }
}

/// Weight blocks with random quant bytes and unit (or power-of-two) scales,
/// activations with unit scale: every partial sum any backend forms is an
/// integer below 2^24, so every backend must return the exact int64 sum.
template <class Pair>
void check_exact_integer_dots(std::uint64_t seed) {
  using W = typename Pair::weight;
  using A = typename Pair::act;
  ruvllm::test::rng gen(seed);
  for (const std::size_t nb : block_counts) {
    const std::size_t n = nb * Pair::block;
    placed<W> w(nb);
    placed<A> a(nb);
    random_bytes(gen, w.data(), nb);
    if constexpr (std::is_same_v<W, block_q6_k>) {
      set_scales(w.data(), nb, 1.0f, 31);
    } else if constexpr (std::is_same_v<W, block_iq4_xs>) {
      set_scales(w.data(), nb, 1.0f, 2);  // |ls - 32| <= 2 keeps 130 super-blocks below 2^24
    } else {
      set_scales(w.data(), nb, 1.0f);
    }
    // Shrink the activation range until the sum of |terms| fits in 24 bits.
    int limit = 127;
    exact_dot e;
    for (;; limit /= 2) {
      random_activations(gen, a.data(), nb, limit, 1.0f);
      e = exact(w.data(), a.data(), nb);
      if (e.magnitude < 16777216.0L || limit == 1) break;
    }
    INFO("blocks " << nb << ", activations in [-" << limit << ", " << limit << "]");
    REQUIRE(e.magnitude < 16777216.0L);
    const auto want = static_cast<float>(e.value);
    REQUIRE(static_cast<long double>(want) == e.value);
    CHECK(Pair::template dot<scalar>(w.data(), a.data(), n) == want);
    for_each_simd_backend([&](auto b) { CHECK(Pair::template dot<decltype(b)>(w.data(), a.data(), n) == want); });
  }
}

}  // namespace

TEST_CASE("q8_0 . q8_0 dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<q8_0_pair>(21);
  check_exact_integer_dots<q8_0_pair>(22);
}
TEST_CASE("q4_0 . q8_0 dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<q4_0_pair>(23);
  check_exact_integer_dots<q4_0_pair>(24);
}

namespace {

/// The K-quant GEMM tile (the prefill form) against the rows form token by
/// token, bit for bit, on every backend: token counts around the tile's
/// groups of four, an odd row count, rows misaligned by their stride, and
/// the output's padding untouched.
template <class Pair>
void check_k_quant_gemm(std::uint64_t seed) {
  using W = typename Pair::weight;
  using A = typename Pair::act;
  ruvllm::test::rng gen(seed);
  for (const std::size_t nb : std::vector<std::size_t>{1, 2, 3, 9}) {
    const std::size_t n = 256 * nb, rows = 7, tokens = 9, y_stride = rows + 3;
    const std::size_t stride = (nb + 1) * sizeof(W) + 2;
    std::vector<unsigned char> storage(rows * stride + 64);
    unsigned char* first = storage.data() + (64 - reinterpret_cast<std::uintptr_t>(storage.data()) % 64) % 64 + 2;
    const auto row = [&](std::size_t r) { return reinterpret_cast<W*>(first + r * stride); };
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t b = 0; b < nb; ++b) new (row(r) + b) W{};
      quantize<scalar>(weights_like(gen, n, 0.05f).data(), row(r), n);
    }
    std::vector<A> act(tokens * nb);
    for (std::size_t t = 0; t < tokens; ++t)
      quantize<scalar>(weights_like(gen, n, 2.0f).data(), act.data() + t * nb, n);
    const auto check = [&](auto b) {
      using B = decltype(b);
      for (const std::size_t used : {std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{5}, tokens}) {
        INFO("blocks " << nb << ", tokens " << used);
        std::vector<float> y(used * y_stride, -1.0f);
        Pair::template gemm<B>(row(0), stride, rows, act.data(), used, n, y.data(), y_stride);
        for (std::size_t t = 0; t < used; ++t) {
          float per_token[rows];
          Pair::template rows<B>(row(0), stride, rows, act.data() + t * nb, n, per_token);
          for (std::size_t r = 0; r < rows; ++r) CHECK(y[t * y_stride + r] == per_token[r]);
          for (std::size_t r = rows; r < y_stride; ++r) CHECK(y[t * y_stride + r] == -1.0f);
        }
      }
    };
    check(scalar{});
    for_each_simd_backend(check);
  }
}

}  // namespace

TEST_CASE("q5_0 . q8_0 dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<q5_0_pair>(38);
  check_exact_integer_dots<q5_0_pair>(39);
}
TEST_CASE("q4_1 . q8_0 dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<q4_1_pair>(46);
  check_exact_integer_dots<q4_1_pair>(47);
}
TEST_CASE("iq4_nl . q8_0 dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<iq4_nl_pair>(62);
  check_exact_integer_dots<iq4_nl_pair>(63);
}
TEST_CASE("q5_1 . q8_0 dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<q5_1_pair>(42);
  check_exact_integer_dots<q5_1_pair>(43);
}

TEST_CASE("q2_k, q3_k, iq4_xs, q4_k, q5_k and q6_k gemm tiles equal their rows token by token",
          "[kernels][quant][gemm]") {
  check_k_quant_gemm<q2_k_pair>(50);
  check_k_quant_gemm<q3_k_pair>(51);
  check_k_quant_gemm<iq4_xs_pair>(66);
  check_k_quant_gemm<q4_k_pair>(33);
  check_k_quant_gemm<q5_k_pair>(35);
  check_k_quant_gemm<q6_k_pair>(34);
}

TEST_CASE("q2_k . q8_k dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<q2_k_pair>(52);
  check_exact_integer_dots<q2_k_pair>(53);
}
TEST_CASE("q3_k . q8_k dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<q3_k_pair>(54);
  check_exact_integer_dots<q3_k_pair>(55);
}
TEST_CASE("iq4_xs . q8_k dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<iq4_xs_pair>(67);
  check_exact_integer_dots<iq4_xs_pair>(68);
}
TEST_CASE("q4_k . q8_k dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<q4_k_pair>(25);
  check_exact_integer_dots<q4_k_pair>(26);
}
TEST_CASE("q5_k . q8_k dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<q5_k_pair>(36);
  check_exact_integer_dots<q5_k_pair>(37);
}
TEST_CASE("q6_k . q8_k dots: exact, against the scalar reference, batch form", "[kernels][quant][dot]") {
  check_quantized_dots<q6_k_pair>(27);
  check_exact_integer_dots<q6_k_pair>(28);
}

namespace {

using ruvllm::kernels::q8_0_quad;
using ruvllm::kernels::q8_0_quads;

template <class B, class W>
void quad_rows(const W* w, std::size_t stride, std::size_t rows, const q8_0_quad* a, std::size_t n, float* out) {
  if constexpr (std::is_same_v<W, block_q8_0>) {
    ops<B>::dot_q8_0_quad_rows(w, stride, rows, a, n, out);
  } else if constexpr (std::is_same_v<W, block_q5_0>) {
    ops<B>::dot_q5_0_quad_rows(w, stride, rows, a, n, out);
  } else if constexpr (std::is_same_v<W, block_q5_1>) {
    ops<B>::dot_q5_1_quad_rows(w, stride, rows, a, n, out);
  } else if constexpr (std::is_same_v<W, block_q4_1>) {
    ops<B>::dot_q4_1_quad_rows(w, stride, rows, a, n, out);
  } else if constexpr (std::is_same_v<W, block_iq4_nl>) {
    ops<B>::dot_iq4_nl_quad_rows(w, stride, rows, a, n, out);
  } else {
    ops<B>::dot_q4_0_quad_rows(w, stride, rows, a, n, out);
  }
}
template <class B, class W>
void quad_gemm(const W* w, std::size_t stride, std::size_t rows, const q8_0_quad* a, std::size_t tokens, std::size_t n,
               float* y, std::size_t y_stride) {
  if constexpr (std::is_same_v<W, block_q8_0>) {
    ops<B>::gemm_q8_0_quads(w, stride, rows, a, tokens, n, y, y_stride);
  } else if constexpr (std::is_same_v<W, block_q5_0>) {
    ops<B>::gemm_q5_0_quads(w, stride, rows, a, tokens, n, y, y_stride);
  } else if constexpr (std::is_same_v<W, block_q5_1>) {
    ops<B>::gemm_q5_1_quads(w, stride, rows, a, tokens, n, y, y_stride);
  } else if constexpr (std::is_same_v<W, block_q4_1>) {
    ops<B>::gemm_q4_1_quads(w, stride, rows, a, tokens, n, y, y_stride);
  } else if constexpr (std::is_same_v<W, block_iq4_nl>) {
    ops<B>::gemm_iq4_nl_quads(w, stride, rows, a, tokens, n, y, y_stride);
  } else {
    ops<B>::gemm_q4_0_quads(w, stride, rows, a, tokens, n, y, y_stride);
  }
}

/// The quad layout written out again from its definition: chunk j of quad q
/// is block 4q + j.
void check_quad_layout(const block_q8_0* blocks, std::size_t nb, const q8_0_quad* quads) {
  for (std::size_t q = 0; q < q8_0_quads(32 * nb); ++q) {
    for (std::size_t j = 0; j < 4; ++j) {
      const std::size_t b = 4 * q + j;
      int sum = 0;
      for (std::size_t i = 0; i < 16; ++i) {
        const int lo = b < nb ? blocks[b].qs[i] : 0, hi = b < nb ? blocks[b].qs[16 + i] : 0;
        REQUIRE(quads[q].lo[16 * j + i] == lo);
        REQUIRE(quads[q].hi[16 * j + i] == hi);
        sum += lo + hi;
      }
      for (std::size_t i = 0; i < 4; ++i) {
        REQUIRE(quads[q].neg8_sum[4 * j + i] == (i == 0 ? -8 * sum : 0));
        REQUIRE(quads[q].neg128_sum[4 * j + i] == (i == 0 ? -128 * sum : 0));
        REQUIRE(quads[q].d[4 * j + i] == (b < nb ? value(blocks[b].d) : 0.0f));
      }
    }
  }
}

/// Rows over quad activations (the form the GEMV and GEMM use for Q8_0 and
/// Q4_0 weights), every block count modulo 4 so partial last quads are
/// covered, rows unaligned: quantize_q8_0_quads gives the quad layout of
/// quantize_q8_0's blocks on every backend; the scalar quad rows equal the
/// scalar block rows exactly; every backend's quad rows are within the bound
/// of the exact dot, the same for one row as in a batch of 19, and its GEMM
/// tile equals its rows row by row and token by token, bit for bit, under
/// every gemv plan (each has row loops of its own). Row
/// lengths run from a partial quad to 256 blocks (8 KiB of Q8_0, past the
/// kernels' L1 prefetch distance), with a stride that misaligns the rows;
/// they include rows of 1 to 9 whole quads, odd and even counts, with and
/// without a partial quad after them (a 110M model's 768 columns are six).
template <class Pair>
void check_quad_dots(std::uint64_t seed) {
  using W = typename Pair::weight;
  ruvllm::test::rng gen(seed);
  for (const std::size_t nb :
       std::vector<std::size_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 24, 29, 32, 33, 35, 36, 61, 130, 229, 256}) {
    const std::size_t n = 32 * nb, rows = 19, tokens = 5, nq = q8_0_quads(n);
    const std::size_t stride = (nb + 1) * sizeof(W) + 2;
    std::vector<unsigned char> storage(rows * stride + 64);
    const auto base = reinterpret_cast<std::uintptr_t>(storage.data());
    unsigned char* first = storage.data() + (64 - base % 64) % 64 + 2;
    const auto row = [&](std::size_t r) { return reinterpret_cast<W*>(first + r * stride); };
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t b = 0; b < nb; ++b) new (row(r) + b) W{};
      quantize<scalar>(weights_like(gen, n, 0.05f).data(), row(r), n);
    }
    std::vector<float> x(tokens * n);
    for (std::size_t t = 0; t < tokens; ++t) {
      const auto v = weights_like(gen, n, 2.0f);
      std::copy(v.begin(), v.end(), x.begin() + static_cast<long>(t * n));
    }
    std::vector<block_q8_0> blocks(tokens * nb);
    std::vector<q8_0_quad> quads(tokens * nq);
    for (std::size_t t = 0; t < tokens; ++t) {
      ops<scalar>::quantize_q8_0(x.data() + t * n, blocks.data() + t * nb, n);
      ops<scalar>::pack_q8_0_quads(blocks.data() + t * nb, n, quads.data() + t * nq);
      check_quad_layout(blocks.data() + t * nb, nb, quads.data() + t * nq);
    }
    INFO("blocks " << nb);
    float want[rows];
    Pair::template rows<scalar>(row(0), stride, rows, blocks.data(), n, want);
    float got[rows];
    quad_rows<scalar>(row(0), stride, rows, quads.data(), n, got);
    for (std::size_t r = 0; r < rows; ++r) CHECK(got[r] == want[r]);
    ruvllm::test::for_each_gemv_plan([&](ruvllm::kernels::gemv_plan) {
      for_each_simd_backend([&](auto b) {
        using B = decltype(b);
        std::vector<q8_0_quad> mine(nq);
        ops<B>::quantize_q8_0_quads(x.data(), mine.data(), n);
        CHECK(first_difference(mine.data(), quads.data(), nq) == -1);
        float many[rows];
        quad_rows<B>(row(0), stride, rows, quads.data(), n, many);
        for (std::size_t r = 0; r < rows; ++r) {
          float one;
          quad_rows<B>(row(r), stride, 1, quads.data(), n, &one);
          CHECK(one == many[r]);
          const exact_dot e = exact(row(r), blocks.data(), nb);
          check_close_to_exact(one, e, nb);
        }
        std::vector<float> y(tokens * (rows + 3), -1.0f);
        quad_gemm<B>(row(0), stride, rows, quads.data(), tokens, n, y.data(), rows + 3);
        for (std::size_t t = 0; t < tokens; ++t) {
          float per_token[rows];
          quad_rows<B>(row(0), stride, rows, quads.data() + t * nq, n, per_token);
          for (std::size_t r = 0; r < rows; ++r) CHECK(y[t * (rows + 3) + r] == per_token[r]);
          for (std::size_t r = rows; r < rows + 3; ++r) CHECK(y[t * (rows + 3) + r] == -1.0f);  // untouched
        }
      });
    });
  }
}

/// Unit scales and small activations: every partial sum is an integer below
/// 2^24, so quad rows must return the exact int64 sum on every backend
/// (extreme quants included: nibbles 0 and 15, weights -128 and 127).
template <class Pair>
void check_exact_quad_dots(std::uint64_t seed) {
  using W = typename Pair::weight;
  ruvllm::test::rng gen(seed);
  for (const std::size_t nb : std::vector<std::size_t>{1, 3, 4, 6, 24, 31, 130}) {
    const std::size_t n = 32 * nb;
    std::vector<W> w(nb);
    std::vector<block_q8_0> a(nb);
    random_bytes(gen, w.data(), nb);
    set_scales(w.data(), nb, 1.0f);
    if (nb == 4) {  // the extremes
      for (std::size_t b = 0; b < nb; ++b) {
        auto* q = reinterpret_cast<unsigned char*>(w[b].qs);
        for (std::size_t i = 0; i < sizeof(w[b].qs); ++i) q[i] = (b + i) % 2 == 0 ? 0x00 : 0xFF;
      }
    }
    int limit = 127;
    exact_dot e;
    for (;; limit /= 2) {
      random_activations(gen, a.data(), nb, limit, 1.0f);
      e = exact(w.data(), a.data(), nb);
      if (e.magnitude < 16777216.0L || limit == 1) break;
    }
    REQUIRE(e.magnitude < 16777216.0L);
    std::vector<q8_0_quad> quads(q8_0_quads(n));
    ops<scalar>::pack_q8_0_quads(a.data(), n, quads.data());
    const auto want = static_cast<float>(e.value);
    INFO("blocks " << nb << ", activations in [-" << limit << ", " << limit << "]");
    float got;
    quad_rows<scalar>(w.data(), sizeof(W) * nb, 1, quads.data(), n, &got);
    CHECK(got == want);
    ruvllm::test::for_each_gemv_plan([&](ruvllm::kernels::gemv_plan) {
      for_each_simd_backend([&](auto b) {
        quad_rows<decltype(b)>(w.data(), sizeof(W) * nb, 1, quads.data(), n, &got);
        CHECK(got == want);
      });
    });
  }
}

}  // namespace

TEST_CASE("q8_0, q4_0, q4_1, q5_0, q5_1 and iq4_nl rows over quad activations: layout, exact, rows = gemm",
          "[kernels][quant][dot]") {
  check_quad_dots<iq4_nl_pair>(60);
  check_exact_quad_dots<iq4_nl_pair>(61);
  check_quad_dots<q8_0_pair>(29);
  check_quad_dots<q4_0_pair>(30);
  check_quad_dots<q4_1_pair>(48);
  check_exact_quad_dots<q4_1_pair>(49);
  check_quad_dots<q5_0_pair>(40);
  check_quad_dots<q5_1_pair>(44);
  check_exact_quad_dots<q8_0_pair>(31);
  check_exact_quad_dots<q4_0_pair>(32);
  check_exact_quad_dots<q5_0_pair>(41);
  check_exact_quad_dots<q5_1_pair>(45);
}

TEST_CASE("AVX-VNNI: detection follows the CPU's flags and use_avx_vnni only enables it where present",
          "[kernels][quant][dot]") {
  namespace k = ruvllm::kernels;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__linux__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream flags(line);
    const bool listed = std::find(std::istream_iterator<std::string>(flags), std::istream_iterator<std::string>(),
                                  "avx_vnni") != std::istream_iterator<std::string>();
    CHECK(k::cpu_has_avx_vnni() == listed);
    break;
  }
#else
  CHECK_FALSE(k::cpu_has_avx_vnni());
#endif
  // Every per-target loop restores the detected state.
  CHECK(k::avx_vnni_in_use() == k::cpu_has_avx_vnni());
  CHECK_FALSE(k::use_avx_vnni(false));
  CHECK_FALSE(k::avx_vnni_in_use());
  CHECK(k::use_avx_vnni(true) == k::cpu_has_avx_vnni());
  CHECK(k::avx_vnni_in_use() == k::cpu_has_avx_vnni());
}

namespace {
/// IQ4_XS at the limits of its paths: values -127 and 113 (biased 1 and
/// 241) under scales -32 and 31, against activations of 127 and of -128
/// (which no Q8_K quantizer writes, but the sign step must keep exact).
/// Every partial sum is a multiple of a power of two that keeps it exact in
/// float, so the dots must equal the exact value.
template <class B>
void check_iq4_xs_extremes(B) {
  placed<block_iq4_xs> low(1), high(1);
  placed<block_q8_k> plus(1), minus(1);
  for (block_iq4_xs* w : {low.data(), high.data()}) {
    w->d = half(1.0f);
    for (int j = 0; j < 128; ++j) w->qs[j] = static_cast<std::uint8_t>(j % 3 ? 0x00 : 0xF0);
  }
  low[0].scales_h = 0;  // every scale -32
  std::memset(low[0].scales_l, 0x00, sizeof low[0].scales_l);
  high[0].scales_h = 0xFFFF;  // every scale 31
  std::memset(high[0].scales_l, 0xFF, sizeof high[0].scales_l);
  plus[0].d = minus[0].d = 1.0f;
  for (auto& q : plus[0].qs) q = 127;
  for (auto& q : minus[0].qs) q = -128;
  for (auto& s : plus[0].bsums) s = 16 * 127;
  for (auto& s : minus[0].bsums) s = 16 * -128;
  const auto check = [](const block_iq4_xs* w, const block_q8_k* a) {
    const exact_dot e = exact(w, a, 1);
    REQUIRE(static_cast<long double>(static_cast<float>(e.value)) == e.value);
    CHECK(ops<B>::dot_iq4_xs_q8_k(w, a, 256) == static_cast<float>(e.value));
  };
  check(low.data(), plus.data());
  check(low.data(), minus.data());
  check(high.data(), minus.data());
}
}  // namespace

TEST_CASE("dots of extreme quants: -8/+7 nibbles, +-127 and 63-valued scales", "[kernels][quant][dot]") {
  // Saturated inputs reach the int16/int32 limits of the widening paths.
  placed<block_q8_0> w8(7), a8(7);
  placed<block_q4_0> w4(7);
  placed<block_iq4_nl> wn(7);
  for (std::size_t b = 0; b < 7; ++b) {
    w8[b].d = w4[b].d = a8[b].d = wn[b].d = half(1.0f);
    for (int j = 0; j < 16; ++j) wn[b].qs[j] = static_cast<std::uint8_t>(j % 3 ? 0x00 : 0xF0);  // -127 and 113
    for (int j = 0; j < 32; ++j) {
      w8[b].qs[j] = static_cast<std::int8_t>(j % 2 ? 127 : -127);
      a8[b].qs[j] = static_cast<std::int8_t>(j % 3 ? 127 : -127);
    }
    for (int j = 0; j < 16; ++j) w4[b].qs[j] = static_cast<std::uint8_t>(j % 2 ? 0x0F : 0xF0);
  }
  placed<block_q4_k> wk(2);
  placed<block_q5_k> w5(2);
  placed<block_q6_k> w6(2);
  placed<block_q2_k> w2(2);
  placed<block_q3_k> w3(2);
  placed<block_q8_k> ak(2);
  for (std::size_t b = 0; b < 2; ++b) {
    wk[b].d = wk[b].dmin = w5[b].d = w5[b].dmin = w6[b].d = half(1.0f);
    w2[b].d = w2[b].dmin = w3[b].d = half(1.0f);
    std::memset(w2[b].scales, 0xFF, sizeof w2[b].scales);  // every scale and min 15
    std::memset(w2[b].qs, 0xFF, sizeof w2[b].qs);          // every quant 3
    std::memset(w3[b].hmask, 0x00, sizeof w3[b].hmask);    // every quant 0 -> -4
    std::memset(w3[b].qs, 0x00, sizeof w3[b].qs);
    std::memset(w3[b].scales, 0x00, sizeof w3[b].scales);  // every scale -32
    std::memset(wk[b].scales, 0xFF, sizeof wk[b].scales);  // every scale and min 63
    std::memset(wk[b].qs, 0xFF, sizeof wk[b].qs);          // every quant 15
    std::memset(w5[b].scales, 0xFF, sizeof w5[b].scales);
    std::memset(w5[b].qs, 0xFF, sizeof w5[b].qs);  // with every fifth bit: every quant 31
    std::memset(w5[b].qh, 0xFF, sizeof w5[b].qh);
    std::memset(w6[b].ql, 0x00, sizeof w6[b].ql);  // every quant 0 -> -32
    std::memset(w6[b].qh, 0x00, sizeof w6[b].qh);
    for (auto& s : w6[b].scales) s = -128;
    ak[b].d = 1.0f;
    for (auto& q : ak[b].qs) q = 127;
    for (auto& s : ak[b].bsums) s = 16 * 127;
  }
  const auto e8 = exact(w8.data(), a8.data(), 7), e4 = exact(w4.data(), a8.data(), 7);
  const auto en = exact(wn.data(), a8.data(), 7);
  const auto ek = exact(wk.data(), ak.data(), 2), e6 = exact(w6.data(), ak.data(), 2);
  const auto e5 = exact(w5.data(), ak.data(), 2);
  const auto e2 = exact(w2.data(), ak.data(), 2), e3 = exact(w3.data(), ak.data(), 2);
  // Q3_K: 2 * 256 * (-32) * (-4) * 127 = 127 * 2^16.
  CHECK(static_cast<double>(e3.value) == 8323072.0);
  // Q6_K: 2 * 256 * (-128) * (-32) * 127 = 127 * 2^21, exact in float.
  const auto expect = [](const exact_dot& e) { return static_cast<float>(e.value); };
  CHECK(ops<scalar>::dot_q8_0_q8_0(w8.data(), a8.data(), 224) == expect(e8));
  CHECK(ops<scalar>::dot_q4_0_q8_0(w4.data(), a8.data(), 224) == expect(e4));
  CHECK(ops<scalar>::dot_iq4_nl_q8_0(wn.data(), a8.data(), 224) == expect(en));
  CHECK(ops<scalar>::dot_q4_k_q8_k(wk.data(), ak.data(), 512) == expect(ek));
  CHECK(ops<scalar>::dot_q5_k_q8_k(w5.data(), ak.data(), 512) == expect(e5));
  CHECK(ops<scalar>::dot_q6_k_q8_k(w6.data(), ak.data(), 512) == expect(e6));
  CHECK(ops<scalar>::dot_q2_k_q8_k(w2.data(), ak.data(), 512) == expect(e2));
  CHECK(ops<scalar>::dot_q3_k_q8_k(w3.data(), ak.data(), 512) == expect(e3));
  CHECK(static_cast<double>(e6.value) == 266338304.0);
  check_iq4_xs_extremes(scalar{});
  for_each_simd_backend([&](auto b) {
    using B = decltype(b);
    check_iq4_xs_extremes(b);
    CHECK(ops<B>::dot_q8_0_q8_0(w8.data(), a8.data(), 224) == expect(e8));
    CHECK(ops<B>::dot_q4_0_q8_0(w4.data(), a8.data(), 224) == expect(e4));
    CHECK(ops<B>::dot_iq4_nl_q8_0(wn.data(), a8.data(), 224) == expect(en));
    CHECK(ops<B>::dot_q4_k_q8_k(wk.data(), ak.data(), 512) == expect(ek));
    CHECK(ops<B>::dot_q5_k_q8_k(w5.data(), ak.data(), 512) == expect(e5));
    CHECK(ops<B>::dot_q6_k_q8_k(w6.data(), ak.data(), 512) == expect(e6));
    CHECK(ops<B>::dot_q2_k_q8_k(w2.data(), ak.data(), 512) == expect(e2));
    CHECK(ops<B>::dot_q3_k_q8_k(w3.data(), ak.data(), 512) == expect(e3));
  });
}

TEST_CASE("a quantized dot approximates the float dot of the original rows", "[kernels][quant][dot]") {
  // End to end: weights and activations quantized, dotted, compared with the
  // float dot of the unquantized data. Loose by nature (quantization noise),
  // but it fails on any layout or sign mix-up.
  ruvllm::test::rng gen(29);
  const std::size_t n = 4096;
  const auto w = weights_like(gen, n, 0.05f);
  const auto x = weights_like(gen, n, 1.0f);
  double ref = 0, mag = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ref += static_cast<double>(w[i]) * x[i];
    mag += std::fabs(static_cast<double>(w[i]) * x[i]);
  }
  placed<block_q8_0> w8(n / 32), x8(n / 32);
  placed<block_q4_0> w4(n / 32);
  placed<block_iq4_nl> wn(n / 32);
  placed<block_q4_k> wk(n / 256);
  placed<block_q5_k> w5(n / 256);
  placed<block_q6_k> w6(n / 256);
  placed<block_q2_k> w2(n / 256);
  placed<block_q3_k> w3(n / 256);
  placed<block_iq4_xs> wx(n / 256);
  placed<block_q8_k> xk(n / 256);
  ops<highway>::quantize_q2_k(w.data(), w2.data(), n);
  ops<highway>::quantize_q3_k(w.data(), w3.data(), n);
  ops<highway>::quantize_iq4_xs(w.data(), wx.data(), n);
  ops<highway>::quantize_q5_k(w.data(), w5.data(), n);
  ops<highway>::quantize_q8_0(w.data(), w8.data(), n);
  ops<highway>::quantize_q4_0(w.data(), w4.data(), n);
  ops<highway>::quantize_iq4_nl(w.data(), wn.data(), n);
  ops<highway>::quantize_q4_k(w.data(), wk.data(), n);
  ops<highway>::quantize_q6_k(w.data(), w6.data(), n);
  ops<highway>::quantize_q8_0(x.data(), x8.data(), n);
  ops<highway>::quantize_q8_k(x.data(), xk.data(), n);
  const double r8 = ops<highway>::dot_q8_0_q8_0(w8.data(), x8.data(), n);
  const double r4 = ops<highway>::dot_q4_0_q8_0(w4.data(), x8.data(), n);
  const double rk = ops<highway>::dot_q4_k_q8_k(wk.data(), xk.data(), n);
  const double r6 = ops<highway>::dot_q6_k_q8_k(w6.data(), xk.data(), n);
  const double r5 = ops<highway>::dot_q5_k_q8_k(w5.data(), xk.data(), n);
  const double r2 = ops<highway>::dot_q2_k_q8_k(w2.data(), xk.data(), n);
  const double rn = ops<highway>::dot_iq4_nl_q8_0(wn.data(), x8.data(), n);
  const double r3 = ops<highway>::dot_q3_k_q8_k(w3.data(), xk.data(), n);
  const double rx = ops<highway>::dot_iq4_xs_q8_k(wx.data(), xk.data(), n);
  INFO("float " << ref << " (sum|wx| " << mag << "), q8_0 " << r8 << ", q4_0 " << r4 << ", q4_k " << rk << ", q5_k "
                << r5 << ", q6_k " << r6 << ", q3_k " << r3 << ", q2_k " << r2 << ", iq4_nl " << rn << ", iq4_xs "
                << rx);
  CHECK(std::fabs(rx - ref) <= 0.08 * mag);
  CHECK(std::fabs(rn - ref) <= 0.08 * mag);
  CHECK(std::fabs(r3 - ref) <= 0.08 * mag);
  CHECK(std::fabs(r2 - ref) <= 0.15 * mag);
  CHECK(std::fabs(r8 - ref) <= 0.01 * mag);
  CHECK(std::fabs(r6 - ref) <= 0.01 * mag);
  CHECK(std::fabs(rk - ref) <= 0.05 * mag);
  CHECK(std::fabs(r5 - ref) <= 0.025 * mag);
  CHECK(std::fabs(r4 - ref) <= 0.08 * mag);
}

// ====================================================== backends vs scalar

TEMPLATE_TEST_CASE("quantizers give the scalar reference's bytes on every backend", "[kernels][quant]", block_q8_0,
                   block_q4_0, block_q4_1, block_q5_0, block_q5_1, block_iq4_nl, block_q2_k, block_q3_k, block_q4_k,
                   block_q5_k, block_q6_k, block_q8_k, block_iq4_xs) {
  using Block = TestType;
  ruvllm::test::rng gen(31);
  for (const std::size_t nb : block_counts) {
    const std::size_t n = nb * block_elems<Block>;
    std::vector<float> values = weights_like(gen, n, gen.uniform(0.001f, 10.0f));
    // Ties and repeated extremes exercise the rounding and first-max rules.
    for (std::size_t i = 0; i < n; i += 7) values[i] = std::round(values[i] * 4.0f) / 4.0f;
    if (n > 40) values[40] = -values[3];
    placed<float> x(n, 4);
    std::copy(values.begin(), values.end(), x.data());
    placed<Block> want(nb);
    quantize<scalar>(x.data(), want.data(), n);
    INFO("blocks " << nb);
    for_each_simd_backend([&](auto b) {
      placed<Block> got(nb);
      quantize<decltype(b)>(x.data(), got.data(), n);
      CHECK(first_difference(got.data(), want.data(), nb) == -1);
    });
  }
}

TEST_CASE("zero, huge and denormal blocks: same bytes everywhere, finite round trips", "[kernels][quant]") {
  // Blocks of: zeros; values up to 4e5 (inside every format's f16 scale
  // range); float denormals (their scales underflow to 0); and tiny normals.
  ruvllm::test::rng gen(32);
  const std::size_t n = 4 * 256;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t kind = (i / 256) % 4;
    const float u = gen.uniform(-1.0f, 1.0f);
    x[i] = kind == 0   ? 0.0f
           : kind == 1 ? u * 4e5f
           : kind == 2 ? u * std::numeric_limits<float>::denorm_min() * 1e5f
                       : u * 1e-30f;
  }
  const auto run = [&](auto tag) {
    using B = decltype(tag);
    placed<block_q8_0> q8(n / 32);
    placed<block_q4_0> q4(n / 32);
    placed<block_q4_k> qk(n / 256);
    placed<block_q6_k> q6(n / 256);
    placed<block_q8_k> q8k(n / 256);
    quantize<B>(x.data(), q8.data(), n);
    quantize<B>(x.data(), q4.data(), n);
    quantize<B>(x.data(), qk.data(), n);
    quantize<B>(x.data(), q6.data(), n);
    quantize<B>(x.data(), q8k.data(), n);
    std::vector<std::vector<float>> backs;
    for (const auto& back :
         {ggml_dequantize(q8.data(), n / 32), ggml_dequantize(q4.data(), n / 32), ggml_dequantize(qk.data(), n / 256),
          ggml_dequantize(q6.data(), n / 256), ggml_dequantize(q8k.data(), n / 256)}) {
      std::size_t bad = 0;
      for (const float v : back) bad += !std::isfinite(v);
      CHECK(bad == 0);
      backs.push_back(back);
    }
    // Zero blocks come back as zeros; huge blocks within the format's error.
    for (const auto& back : backs) {
      for (std::size_t i = 0; i < 256; ++i) CHECK(back[i] == 0.0f);
      double worst = 0;
      for (std::size_t i = 256; i < 512; ++i) worst = std::max(worst, std::fabs(static_cast<double>(back[i]) - x[i]));
      CHECK(worst <= 4e5 / 7.0);  // Q4_0's clipped worst case is amax/8
      for (std::size_t i = 512; i < 1024; ++i) CHECK(std::fabs(back[i]) <= 1e-29f);
    }
    const std::vector<float> dots = {
        ops<B>::dot_q8_0_q8_0(q8.data(), q8.data(), n), ops<B>::dot_q4_0_q8_0(q4.data(), q8.data(), n),
        ops<B>::dot_q4_k_q8_k(qk.data(), q8k.data(), n), ops<B>::dot_q6_k_q8_k(q6.data(), q8k.data(), n)};
    for (const float d : dots) CHECK(std::isfinite(d));
    return std::vector<std::vector<unsigned char>>{
        {reinterpret_cast<unsigned char*>(q8.data()), reinterpret_cast<unsigned char*>(q8.data() + n / 32)},
        {reinterpret_cast<unsigned char*>(q4.data()), reinterpret_cast<unsigned char*>(q4.data() + n / 32)},
        {reinterpret_cast<unsigned char*>(qk.data()), reinterpret_cast<unsigned char*>(qk.data() + n / 256)},
        {reinterpret_cast<unsigned char*>(q6.data()), reinterpret_cast<unsigned char*>(q6.data() + n / 256)},
        {reinterpret_cast<unsigned char*>(q8k.data()), reinterpret_cast<unsigned char*>(q8k.data() + n / 256)}};
  };
  const auto want = run(scalar{});
  for_each_simd_backend([&](auto b) { CHECK(run(b) == want); });
}

TEMPLATE_TEST_CASE(
    "IQ4_NL, IQ4_XS, Q2_K and Q3_K on zero, huge and denormal blocks: same bytes everywhere, finite "
    "round trips",
    "[kernels][quant]", iq4_nl_pair, iq4_xs_pair, q2_k_pair, q3_k_pair) {
  using Pair = TestType;
  using Block = typename Pair::weight;
  ruvllm::test::rng gen(58);
  const std::size_t n = 4 * 256, nb = n / Pair::block;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t kind = i / 256;
    const float u = gen.uniform(-1.0f, 1.0f);
    x[i] = kind == 0   ? 0.0f
           : kind == 1 ? u * 4e5f
           : kind == 2 ? u * std::numeric_limits<float>::denorm_min() * 1e5f
                       : u * 1e-30f;
  }
  placed<typename Pair::act> act(nb * Pair::block / block_elems<typename Pair::act>);
  quantize<scalar>(x.data(), act.data(), n);
  const auto run = [&](auto tag) {
    using B = decltype(tag);
    placed<Block> q(nb);
    quantize<B>(x.data(), q.data(), n);
    const auto back = ggml_dequantize(q.data(), nb);
    std::size_t bad = 0;
    for (const float v : back) bad += !std::isfinite(v);
    CHECK(bad == 0);
    for (std::size_t i = 0; i < 256; ++i) CHECK(back[i] == 0.0f);
    // Over [-4e5, 4e5]: IQ4_NL's and IQ4_XS's least-squares scales may clip the largest
    // values, as Q4_0's does (at most amax / 8); four (Q2_K) or eight (Q3_K)
    // levels per sub-block; plus the scales' rounding.
    const double bound = std::is_same_v<Block, block_iq4_nl> || std::is_same_v<Block, block_iq4_xs> ? 4e5 / 8.0
                         : std::is_same_v<Block, block_q2_k>                                        ? 8e5 / 3.0
                                                                                                    : 4e5 / 4.0;
    double worst = 0;
    for (std::size_t i = 256; i < 512; ++i) worst = std::max(worst, std::fabs(static_cast<double>(back[i]) - x[i]));
    CHECK(worst <= bound * 1.1);
    for (std::size_t i = 512; i < 1024; ++i) CHECK(std::fabs(back[i]) <= 1e-29f);
    CHECK(std::isfinite(Pair::template dot<B>(q.data(), act.data(), n)));
    return std::vector<unsigned char>(reinterpret_cast<unsigned char*>(q.data()),
                                      reinterpret_cast<unsigned char*>(q.data() + nb));
  };
  const auto want = run(scalar{});
  for_each_simd_backend([&](auto b) { CHECK(run(b) == want); });
}

/// Q8_0 quads straight from floats (the GEMV's and GEMM's activation form):
/// every backend gives the bytes of the scalar quantize_q8_0 followed by
/// pack_q8_0_quads, over block counts at every position in a quad and past a
/// pass of eight quads, from unaligned floats, with each block drawn from its
/// own kind: scales far apart (a lane mix-up shows), ties, zeros, huge values,
/// float denormals (the scale's inverse overflows: zero quants), tiny normals
/// (an f16 scale of 0 over nonzero quants), and NaN or infinite values (their
/// quants 0, on the block path too).
TEST_CASE("Q8_0 quads from floats equal quantize_q8_0 then pack_q8_0_quads on every backend", "[kernels][quant]") {
  ruvllm::test::rng gen(33);
  constexpr float inf = std::numeric_limits<float>::infinity();
  for (const std::size_t nb : {1, 2, 3, 4, 5, 6, 7, 8, 31, 32, 33, 35, 64, 67, 256}) {
    const std::size_t n = 32 * nb;
    placed<float> x(n, 4);
    for (std::size_t b = 0; b < nb; ++b) {
      const std::size_t kind = gen.uniform_index(0, 7);
      const float scale = std::ldexp(1.0f, static_cast<int>(gen.uniform_index(0, 40)) - 20);
      for (std::size_t i = 0; i < 32; ++i) {
        const float u = gen.uniform(-1.0f, 1.0f);
        float& v = x[32 * b + i];
        v = kind == 0   ? u * scale
            : kind == 1 ? std::round(u * 254.0f) / 2.0f  // amax 127 when a lane hits it: halves are ties
            : kind == 2 ? 0.0f
            : kind == 3 ? u * 4e5f
            : kind == 4 ? u * std::numeric_limits<float>::denorm_min() * 1e5f
            : kind == 5 ? u * 1e-30f
            : kind == 6 ? (i % 5 == 0 ? std::numeric_limits<float>::quiet_NaN() : u * scale)
                        : (i % 7 == 0 ? (u < 0 ? -inf : inf) : u * scale);
      }
      if (kind == 1) x[32 * b] = 127.0f;
    }
    placed<block_q8_0> blocks(nb);
    ops<scalar>::quantize_q8_0(x.data(), blocks.data(), n);
    std::vector<q8_0_quad> want(q8_0_quads(n));
    ops<scalar>::pack_q8_0_quads(blocks.data(), n, want.data());
    INFO("blocks " << nb);
    std::vector<q8_0_quad> got(want.size());
    ops<scalar>::quantize_q8_0_quads(x.data(), got.data(), n);
    CHECK(first_difference(got.data(), want.data(), want.size()) == -1);
    for_each_simd_backend([&](auto b) {
      using B = decltype(b);
      std::vector<q8_0_quad> mine(want.size());
      ops<B>::quantize_q8_0_quads(x.data(), mine.data(), n);
      CHECK(first_difference(mine.data(), want.data(), want.size()) == -1);
      placed<block_q8_0> mine_blocks(nb);
      ops<B>::quantize_q8_0(x.data(), mine_blocks.data(), n);
      CHECK(first_difference(mine_blocks.data(), blocks.data(), nb) == -1);
    });
  }
}

// ================================================== f16 / bf16 row conversion

namespace {

/// Floats that stress every conversion rule: signed zeros, float denormals,
/// the f16 subnormal range and its rounding midpoints, the f16 overflow
/// threshold, infinities, NaNs with payloads, and random values.
std::vector<float> conversion_inputs(ruvllm::test::rng& gen, std::size_t n) {
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::denorm_min(),
                            -1e-40f,
                            std::numeric_limits<float>::min(),
                            5.9604645e-08f,  // 2^-24, the smallest f16 subnormal
                            2.9802322e-08f,  // its half: ties to 0
                            8.940697e-08f,   // 1.5 * 2^-24: ties to even (2^-23)
                            6.1035156e-05f,  // 2^-14, the smallest f16 normal
                            65504.0f,
                            65519.99f,
                            65520.0f,
                            -65536.0f,
                            1.0009766f,  // 1 + 2^-10
                            1.0004883f,  // 1 + 2^-11: a tie
                            3.3895314e38f,
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::bit_cast<float>(0x7FC0'0000u),
                            std::bit_cast<float>(0xFF80'0001u),  // sNaN, payload only in the low bits
                            std::bit_cast<float>(0x7FA1'2345u)};
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = gen.chance(0.3) ? specials[gen.uniform_index(0, std::size(specials) - 1)]
                           : std::ldexp(gen.uniform(-1.0f, 1.0f), static_cast<int>(gen.uniform_index(0, 60)) - 30);
  }
  return v;
}

}  // namespace

TEST_CASE("f16 and bf16 row conversions equal the scalar conversions bit for bit", "[kernels][quant][convert]") {
  ruvllm::test::rng gen(41);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{33}, std::size_t{4099}}) {
    const auto values = conversion_inputs(gen, n);
    placed<float> x(n, 4);
    std::copy(values.begin(), values.end(), x.data());
    std::vector<f16> want_h(n);
    std::vector<bf16> want_b(n);
    for (std::size_t i = 0; i < n; ++i) {
      want_h[i] = ruvllm::to_f16(x[i]);
      want_b[i] = ruvllm::to_bf16(x[i]);
    }
    std::vector<float> want_hf(n), want_bf(n);
    for (std::size_t i = 0; i < n; ++i) {
      want_hf[i] = ruvllm::to_float(want_h[i]);
      want_bf[i] = ruvllm::to_float(want_b[i]);
    }
    INFO("n = " << n);
    const auto check = [&](auto tag) {
      using B = decltype(tag);
      placed<f16> h(n, 2);
      placed<bf16> bh(n, 2);
      placed<float> back(n, 4);
      ops<B>::convert_f32_to_f16(x.data(), h.data(), n);
      CHECK(first_difference(h.data(), want_h.data(), n) == -1);
      ops<B>::convert_f16_to_f32(h.data(), back.data(), n);
      CHECK(first_difference(back.data(), want_hf.data(), n) == -1);
      ops<B>::convert_f32_to_bf16(x.data(), bh.data(), n);
      CHECK(first_difference(bh.data(), want_b.data(), n) == -1);
      ops<B>::convert_bf16_to_f32(bh.data(), back.data(), n);
      CHECK(first_difference(back.data(), want_bf.data(), n) == -1);
    };
    check(scalar{});
    for_each_simd_backend(check);
  }
}

TEST_CASE("f16 -> f32 conversion of all 65536 halves equals the scalar one", "[kernels][quant][convert]") {
  std::vector<f16> all(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) all[i] = f16{static_cast<std::uint16_t>(i)};
  std::vector<float> want(65536);
  ops<scalar>::convert_f16_to_f32(all.data(), want.data(), all.size());
  std::size_t mismatches = 0;
  for (std::uint32_t i = 0; i < 65536; ++i) {
    mismatches += std::bit_cast<std::uint32_t>(want[i]) != std::bit_cast<std::uint32_t>(ruvllm::to_float(all[i]));
  }
  REQUIRE(mismatches == 0);
  ruvllm::test::for_each_highway_target([&](const std::string&) {
    std::vector<float> got(65536);
    ops<highway>::convert_f16_to_f32(all.data(), got.data(), all.size());
    CHECK(first_difference(got.data(), want.data(), got.size()) == -1);
    std::vector<bf16> b(65536);
    std::vector<float> gb(65536), wb(65536);
    std::memcpy(b.data(), all.data(), sizeof(f16) * all.size());
    ops<highway>::convert_bf16_to_f32(b.data(), gb.data(), b.size());
    ops<scalar>::convert_bf16_to_f32(b.data(), wb.data(), b.size());
    CHECK(first_difference(gb.data(), wb.data(), gb.size()) == -1);
  });
}

// ========================================================= checked wrappers

TEST_CASE("checked wrappers name n and the block size, and pass good input through", "[kernels][quant][checked]") {
  using q = ruvllm::kernels::quant_ops<scalar>;
  std::vector<float> x(512, 0.5f);
  placed<block_q8_0> y8(16);
  placed<block_q4_k> yk(2);
  placed<block_q8_k> ak(2);

  const auto bad = q::quantize_q8_0_checked(x.data(), y8.data(), 33);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().code() == ruvllm::errc::invalid_argument);
  CHECK(bad.error().message() == "quantize_q8_0: n = 33 is not a multiple of the q8_0 block size 32");

  const auto bad_k = ops<highway>::dot_q4_k_q8_k_checked(yk.data(), ak.data(), 300);
  REQUIRE_FALSE(bad_k.has_value());
  CHECK(bad_k.error().message() == "dot_q4_k_q8_k: n = 300 is not a multiple of the q4_k block size 256");

  const auto bad_deq = ops<xsimd_backend>::dequantize_q6_k_checked(nullptr, nullptr, 100);
  REQUIRE_FALSE(bad_deq.has_value());
  CHECK(bad_deq.error().message().find("n = 100") != std::string::npos);

  x[7] = std::numeric_limits<float>::quiet_NaN();
  placed<block_q4_0> y4(1);
  const auto nan = ops<highway>::quantize_q4_0_checked(x.data(), y4.data(), 32);
  REQUIRE_FALSE(nan.has_value());
  CHECK(nan.error().message().find("element 7") != std::string::npos);
  x[7] = 0.5f;

  // An f16 scale overflowing in block 1: out_of_range, naming the block.
  const auto overflows_in_block_1 = [](const auto& result) {
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == ruvllm::errc::out_of_range);
    CHECK(result.error().message().find("block 1") != std::string::npos);
  };
  x[40] = 1e7f;  // needs d = 1e7 / 127 > 65504: the f16 scale overflows
  overflows_in_block_1(ops<highway>::quantize_q8_0_checked(x.data(), y8.data(), 64));
  x[40] = 0.5f;

  REQUIRE(ops<highway>::quantize_q8_0_checked(x.data(), y8.data(), 512).has_value());
  placed<block_q8_0> plain(16);
  ops<scalar>::quantize_q8_0(x.data(), plain.data(), 512);
  CHECK(first_difference(plain.data(), y8.data(), 16) == -1);
  const auto dot = ops<highway>::dot_q8_0_q8_0_checked(y8.data(), plain.data(), 512);
  REQUIRE(dot.has_value());
  CHECK(*dot == ops<scalar>::dot_q8_0_q8_0(y8.data(), plain.data(), 512));

  float out[2];
  const auto short_stride = ops<scalar>::dot_q8_0_q8_0_rows_checked(y8.data(), 8 * 34 - 2, 2, plain.data(), 256, out);
  REQUIRE_FALSE(short_stride.has_value());
  CHECK(short_stride.error().message().find("row_stride = 270") != std::string::npos);
  const auto odd_stride = ops<scalar>::dot_q8_0_q8_0_rows_checked(y8.data(), 8 * 34 + 1, 2, plain.data(), 256, out);
  REQUIRE_FALSE(odd_stride.has_value());
  REQUIRE(ops<scalar>::dot_q8_0_q8_0_rows_checked(y8.data(), 8 * 34, 2, plain.data(), 256, out).has_value());
  CHECK(out[0] == ops<scalar>::dot_q8_0_q8_0(y8.data(), plain.data(), 256));
  CHECK(out[1] == ops<scalar>::dot_q8_0_q8_0(y8.data() + 8, plain.data(), 256));

  // IQ4_XS: the length, an f16 super-block scale overflowing (sub-block
  // scales ~ 3e8 / 127, d = that / 32 > 65504) in block 1, the row stride,
  // and good input through the checked forms equal to the plain ones.
  placed<block_iq4_xs> yx(2);
  const auto bad_x = ops<highway>::quantize_iq4_xs_checked(x.data(), yx.data(), 300);
  REQUIRE_FALSE(bad_x.has_value());
  CHECK(bad_x.error().message() == "quantize_iq4_xs: n = 300 is not a multiple of the iq4_xs block size 256");
  x[300] = 3e8f;
  overflows_in_block_1(ops<xsimd_backend>::quantize_iq4_xs_checked(x.data(), yx.data(), 512));
  x[300] = 0.5f;
  REQUIRE(ops<highway>::quantize_iq4_xs_checked(x.data(), yx.data(), 512).has_value());
  REQUIRE(ops<scalar>::quantize_q8_k_checked(x.data(), ak.data(), 512).has_value());
  const auto dot_x = ops<highway>::dot_iq4_xs_q8_k_checked(yx.data(), ak.data(), 512);
  REQUIRE(dot_x.has_value());
  CHECK(*dot_x == ops<highway>::dot_iq4_xs_q8_k(yx.data(), ak.data(), 512));
  const auto short_x = ops<scalar>::dot_iq4_xs_q8_k_rows_checked(yx.data(), 135, 2, ak.data(), 256, out);
  REQUIRE_FALSE(short_x.has_value());
  CHECK(short_x.error().message().find("row_stride = 135") != std::string::npos);
  REQUIRE(ops<scalar>::dot_iq4_xs_q8_k_rows_checked(yx.data(), 136, 2, ak.data(), 256, out).has_value());
  CHECK(out[1] == ops<scalar>::dot_iq4_xs_q8_k(yx.data() + 1, ak.data(), 256));
}

}  // namespace quant_test
