// GEMV y = W x at LLM layer shapes (4096x4096: attention projections of a
// 7B model; 11008x4096: its FFN), f32/f16/bf16 and GGUF-quantized (q8_0, q4_0,
// q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k) weights, 1 and 2
// threads:
//  * f32 against OpenBLAS cblas_sgemv with the same thread count, measured
//    in the same process on the same data (both should run at memory speed);
//  * every row reports GBps and bw_frac of the weight bytes it streams;
//  * gemm rows: prefill of 128 tokens against cblas_sgemm, in GFLOPs;
//  * gemv_cotenant rows run beside a busy process pinned to the last core and
//    compare 2 threads with 1 thread there (speedup >= 1: no collapse). Those
//    rows time wall clock for both sides, since the co-tenant's theft of CPU
//    time is exactly what they measure;
//  * gemv_plan rows compare the two GEMV plans over 1 GiB of weights (see
//    register_plans); gemv_half_x rows compare f16 activations with f32 ones
//    beside f16 weights there (register_half_activations);
//  * avx_vnni_gemv / avx_vnni_gemm rows compare the AVX2 target's quant
//    kernels with and without AVX-VNNI (see register_avx_vnni);
//  * quantize rows time the Q8_0 quads a Q8_0 / Q4_0 GEMV quantizes its input
//    into, on the calling thread before the rows start, at the input lengths
//    of the benchmarked models (768, 2048, 8192); the baseline is the Q8_0
//    blocks of the same backend packed into quads by the scalar
//    pack_q8_0_quads (how the quads were made before they were made
//    directly).

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <hwy/targets.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ruvllm/ruvllm.hpp"
#include "support/bench.hpp"
#include "support/cotenant.hpp"

namespace {

namespace rb = ruvllm::bench;
using highway = ruvllm::backend::highway;

struct matrix {
  matrix(std::size_t rows, std::size_t cols)
      : rows(rows), cols(cols), w(rb::random_floats(rows * cols, 11)), x(rb::random_floats(cols, 12)) {
    auto y_buffer = ruvllm::aligned_buffer<float>::allocate(rows);
    if (!y_buffer) rb::detail::fail("cannot allocate gemv output");
    y = std::move(*y_buffer);
    auto h = ruvllm::aligned_buffer<ruvllm::f16>::allocate(rows * cols);
    auto b = ruvllm::aligned_buffer<ruvllm::bf16>::allocate(rows * cols);
    if (!h || !b) rb::detail::fail("cannot allocate gemv weights");
    w16 = std::move(*h);
    wbf16 = std::move(*b);
    for (std::size_t i = 0; i < rows * cols; ++i) {
      w16[i] = ruvllm::to_f16(w[i]);
      wbf16[i] = ruvllm::to_bf16(w[i]);
    }
  }
  std::size_t rows, cols;
  ruvllm::aligned_buffer<float> w, x, y;
  ruvllm::aligned_buffer<ruvllm::f16> w16;
  ruvllm::aligned_buffer<ruvllm::bf16> wbf16;
};

// One pool per thread count for the whole process: pools are long-lived in
// an engine, and creating threads is not what these rows measure.
ruvllm::thread_pool& pool(unsigned threads) {
  static ruvllm::thread_pool one(1), two(2);
  return threads == 1 ? one : two;
}

template <class W>
const W* weights(const matrix& m) {
  if constexpr (std::is_same_v<W, float>) return m.w.data();
  if constexpr (std::is_same_v<W, ruvllm::f16>) return m.w16.data();
  if constexpr (std::is_same_v<W, ruvllm::bf16>) return m.wbf16.data();
}

template <class W>
void register_shape(const std::shared_ptr<matrix>& m, std::string_view precision) {
  const std::string shape = rb::shape({m->rows, m->cols});
  const double bytes = static_cast<double>(m->rows * m->cols * sizeof(W));
  for (const unsigned threads : {1u, 2u}) {
    const std::string ours = rb::row_name("kernels", "gemv", precision, shape, threads);
    const auto ours_body = [m, threads] {
      ruvllm::kernels::gemv<highway>(pool(threads), weights<W>(*m), m->cols, m->x.data(), m->y.data(), m->rows,
                                     m->cols);
      benchmark::ClobberMemory();
    };
    if constexpr (std::is_same_v<W, float>) {
      const std::string base = rb::baseline_of(ours);
      const auto blas_body = [m, threads] {
        openblas_set_num_threads(static_cast<int>(threads));
        cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(m->rows), static_cast<int>(m->cols), 1.0f,
                    m->w.data(), static_cast<int>(m->cols), m->x.data(), 1, 0.0f, m->y.data(), 1);
        benchmark::ClobberMemory();
      };
      benchmark::RegisterBenchmark(base.c_str(), [m, base, blas_body, bytes, threads](benchmark::State& state) {
        rb::timed_loop(state, blas_body, threads);
        rb::record_baseline(state, base);
        rb::set_bandwidth_counters(state, bytes, threads);
      });
      benchmark::RegisterBenchmark(ours.c_str(),
                                   [m, base, blas_body, ours_body, bytes, threads](benchmark::State& state) {
                                     rb::timed_loop(state, ours_body, threads);
                                     rb::set_speedup(state, base, blas_body, threads);
                                     rb::set_bandwidth_counters(state, bytes, threads);
                                   });
    } else {
      benchmark::RegisterBenchmark(ours.c_str(), [m, ours_body, bytes, threads](benchmark::State& state) {
        rb::timed_loop(state, ours_body, threads);
        rb::set_bandwidth_counters(state, bytes, threads);
      });
    }
  }
}

void register_cotenant(const std::shared_ptr<matrix>& m) {
  const std::string ours = rb::row_name("kernels", "gemv_cotenant", "f32", rb::shape({m->rows, m->cols}), 2);
  const std::string base = rb::baseline_of(ours);
  const double bytes = static_cast<double>(m->rows * m->cols * sizeof(float));
  const auto body = [m](unsigned threads) {
    return [m, threads] {
      ruvllm::kernels::gemv<highway>(pool(threads), m->w.data(), m->cols, m->x.data(), m->y.data(), m->rows, m->cols);
      benchmark::ClobberMemory();
    };
  };
  // Both sides time wall clock (clock of 2 threads) under the co-tenant.
  benchmark::RegisterBenchmark(base.c_str(), [m, base, body, bytes](benchmark::State& state) {
    const rb::cotenant busy;
    rb::timed_loop(state, body(1), 2);
    rb::record_baseline(state, base);
    rb::set_bandwidth_counters(state, bytes, 1);
  });
  benchmark::RegisterBenchmark(ours.c_str(), [m, base, body, bytes](benchmark::State& state) {
    const rb::cotenant busy;
    rb::timed_loop(state, body(2), 2);
    rb::set_speedup(state, base, body(1), 2);
    rb::set_bandwidth_counters(state, bytes, 2);
    state.counters["worker_chunks"] = benchmark::Counter(static_cast<double>(pool(2).stats().chunks_by_workers));
    state.counters["exclusions"] = benchmark::Counter(static_cast<double>(pool(2).stats().exclusions));
  });
}

// Prefill-shaped GEMM, Y = X Wᵀ for 128 tokens, against cblas_sgemm; the
// counter GFLOPs is 2 * rows * cols * tokens per iteration.
void register_gemm(const std::shared_ptr<matrix>& m, std::size_t tokens) {
  const auto x = std::make_shared<ruvllm::aligned_buffer<float>>(rb::random_floats(tokens * m->cols, 13));
  const auto y = std::make_shared<ruvllm::aligned_buffer<float>>(rb::random_floats(tokens * m->rows, 14));
  const double flops = 2.0 * static_cast<double>(m->rows * m->cols * tokens);
  for (const unsigned threads : {1u, 2u}) {
    const std::string ours = rb::row_name("kernels", "gemm", "f32", rb::shape({m->rows, m->cols, tokens}), threads);
    const std::string base = rb::baseline_of(ours);
    const auto ours_body = [m, x, y, tokens, threads] {
      ruvllm::kernels::gemm<highway>(pool(threads), m->w.data(), m->cols, x->data(), m->cols, y->data(), m->rows,
                                     m->rows, tokens, m->cols);
      benchmark::ClobberMemory();
    };
    const auto blas_body = [m, x, y, tokens, threads] {
      openblas_set_num_threads(static_cast<int>(threads));
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(tokens), static_cast<int>(m->rows),
                  static_cast<int>(m->cols), 1.0f, x->data(), static_cast<int>(m->cols), m->w.data(),
                  static_cast<int>(m->cols), 0.0f, y->data(), static_cast<int>(m->rows));
      benchmark::ClobberMemory();
    };
    benchmark::RegisterBenchmark(base.c_str(), [base, blas_body, flops, threads](benchmark::State& state) {
      const double seconds = rb::timed_loop(state, blas_body, threads);
      rb::record_baseline(state, base);
      state.counters["GFLOPs"] = benchmark::Counter(flops / seconds / 1e9);
    });
    benchmark::RegisterBenchmark(ours.c_str(), [base, blas_body, ours_body, flops, threads](benchmark::State& state) {
      const double seconds = rb::timed_loop(state, ours_body, threads);
      rb::set_speedup(state, base, blas_body, threads);
      state.counters["GFLOPs"] = benchmark::Counter(flops / seconds / 1e9);
    });
  }
}

template <class Precision>
using quantized_weights = std::shared_ptr<const std::vector<typename Precision::block_type>>;

// Quantized GEMV: weights quantized once from the f32 matrix; GBps and
// bw_frac count the weight bytes streamed per call (the quantity decode speed
// is bound by). Returns the weights for the other rows of the same matrix.
template <class Precision, class Quantize>
quantized_weights<Precision> register_quantized(const std::shared_ptr<matrix>& m, Quantize quantize) {
  namespace k = ruvllm::kernels;
  using Block = typename Precision::block_type;
  const std::string_view precision = Precision::name;
  const std::size_t blocks = m->cols / Precision::block_size;
  const auto w = std::make_shared<std::vector<Block>>(m->rows * blocks);
  for (std::size_t r = 0; r < m->rows; ++r) quantize(m->w.data() + r * m->cols, w->data() + r * blocks, m->cols);
  const auto act = std::make_shared<std::vector<k::activation_block_t<Block>>>(k::activation_blocks<Block>(m->cols));
  const double bytes = static_cast<double>(w->size() * sizeof(Block));
  for (const unsigned threads : {1u, 2u}) {
    const std::string ours = rb::row_name("kernels", "gemv", precision, rb::shape({m->rows, m->cols}), threads);
    const auto body = [m, w, act, blocks, threads] {
      k::quantized_gemv<highway>(pool(threads), w->data(), blocks * sizeof(Block), m->x.data(), m->y.data(), m->rows,
                                 m->cols, act->data());
      benchmark::ClobberMemory();
    };
    benchmark::RegisterBenchmark(ours.c_str(), [body, bytes, threads](benchmark::State& state) {
      rb::timed_loop(state, body, threads);
      rb::set_bandwidth_counters(state, bytes, threads);
    });
  }
  return w;
}

// The AVX2 target with and without its AVX-VNNI copy of the quant kernels
// (kernels/avx_vnni.hpp), dispatch forced to AVX2 for these rows, one
// thread: the GEMV over the 4096 x 4096 matrix and the prefill GEMM of 128
// tokens, per format. Each row's baseline is the same call with AVX-VNNI
// off, so `speedup` is what AVX-VNNI gives a machine that runs the AVX2
// target (Intel client cores since Alder Lake); the GEMM rows are bound by
// the integer dots, the GEMV rows partly by memory. Registered only where
// the CPU has AVX-VNNI. w: m's weights, from register_quantized.
template <class Precision>
void register_avx_vnni(const std::shared_ptr<matrix>& m, const quantized_weights<Precision>& w) {
  namespace k = ruvllm::kernels;
  if (!k::cpu_has_avx_vnni() || (hwy::SupportedTargets() & HWY_AVX2) == 0) return;
  using Block = typename Precision::block_type;
  constexpr std::size_t tokens = 128;
  const std::size_t row_bytes = m->cols / Precision::block_size * sizeof(Block);
  const auto x = std::make_shared<ruvllm::aligned_buffer<float>>(rb::random_floats(tokens * m->cols, 17));
  const auto y = std::make_shared<ruvllm::aligned_buffer<float>>(rb::random_floats(tokens * m->rows, 18));
  const auto act =
      std::make_shared<std::vector<k::activation_block_t<Block>>>(tokens * k::activation_blocks<Block>(m->cols));
  for (const bool prefill : {false, true}) {
    const std::string shape = prefill ? rb::shape({m->rows, m->cols, tokens}) : rb::shape({m->rows, m->cols});
    const std::string ours =
        rb::row_name("kernels", prefill ? "avx_vnni_gemm" : "avx_vnni_gemv", Precision::name, shape, 1);
    const std::string base = rb::baseline_of(ours);
    const auto with = [m, w, x, y, act, prefill, row_bytes](bool avx_vnni) {
      return [m, w, x, y, act, prefill, row_bytes, avx_vnni] {
        k::use_avx_vnni(avx_vnni);
        if (prefill)
          k::quantized_gemm<highway>(pool(1), w->data(), row_bytes, x->data(), m->cols, y->data(), m->rows, m->rows,
                                     tokens, m->cols, act->data());
        else
          k::quantized_gemv<highway>(pool(1), w->data(), row_bytes, x->data(), y->data(), m->rows, m->cols,
                                     act->data());
        benchmark::ClobberMemory();
      };
    };
    // Puts AVX2 in charge for one row and Highway's and AVX-VNNI's own choice back after it.
    const auto on_avx2 = [](auto&& measure) {
      hwy::SetSupportedTargetsForTest(HWY_AVX2);
      measure();
      hwy::SetSupportedTargetsForTest(0);
      k::use_avx_vnni(true);
    };
    // GEMV rows: weight bytes streamed; GEMM rows: prefill tokens per second.
    const double bytes = static_cast<double>(w->size() * sizeof(Block));
    const auto counters = [bytes, prefill](benchmark::State& state, double seconds) {
      if (prefill)
        state.counters["tok_s"] = benchmark::Counter(static_cast<double>(tokens) / seconds);
      else
        rb::set_bandwidth_counters(state, bytes, 1);
    };
    benchmark::RegisterBenchmark(base.c_str(), [base, with, on_avx2, counters](benchmark::State& state) {
      double seconds = 0.0;
      on_avx2([&] { seconds = rb::timed_loop(state, with(false), 1); });
      rb::record_baseline(state, base);
      counters(state, seconds);
    });
    benchmark::RegisterBenchmark(ours.c_str(), [base, with, on_avx2, counters](benchmark::State& state) {
      double seconds = 0.0;
      on_avx2([&] {
        seconds = rb::timed_loop(state, with(true), 1);
        rb::set_speedup(state, base, with(false), 1);
      });
      counters(state, seconds);
    });
  }
}

// The gemv plans (kernels/gemv_plan.hpp) over 1 GiB of weights, beyond any
// L3, in decode shapes: rows of 768, 2048 and 8192 f16 columns (a 110M
// model's projections, a 1B model's, and its FFN down projection), 768,
// 2048 and 8192 columns of Q8_0 and Q4_0, and 2048 of Q4_K and Q6_K, cycling through
// matrices of 4096 rows. The baseline of each row is the same work under
// pairs_l1_l2, so `speedup` is rows_l1's gain on this machine (Q8_0, Q4_K
// and Q6_K go one row at a time under both plans: for them it is the effect
// of the L2 stream and of rows_l1's non-temporal L1 stream); the context's
// gemv_plan names the plan this CPU gets by default (support/bench.hpp).
constexpr std::size_t plan_bytes = std::size_t{1} << 30, plan_matrix_rows = 4096;

// The weights of every plan row: one buffer, made on first use (a filtered
// run that skips these rows does not pay for it) and kept until exit. Every
// byte is 0x11, which reads as a finite f16 (about 6e-4), and as Q8_0, Q4_0,
// Q4_K and Q6_K blocks with such scales and small quants. In 2 MiB pages,
// as a model file's mapping (rb::huge_page_bytes).
const std::byte* plan_weights() {
  static const ruvllm::memory::page_memory bytes = [] {
    ruvllm::memory::page_memory m = rb::huge_page_bytes(plan_bytes);
    std::fill_n(m.data(), plan_bytes, std::byte{0x11});
    return m;
  }();
  return bytes.data();
}

template <class Call>
void register_plan_rows(std::string_view precision, std::size_t cols, double bytes, Call call) {
  namespace k = ruvllm::kernels;
  for (const unsigned threads : {1u, 2u}) {
    const std::string ours =
        rb::join_name({"kernels", "gemv_plan", precision, std::to_string(cols), "rows_l1"}, threads);
    const std::string base = rb::baseline_of(ours);
    const auto under = [call, threads](k::gemv_plan plan) {
      return [call, threads, plan] {
        k::use_gemv_plan(plan);
        call(pool(threads));
        benchmark::ClobberMemory();
      };
    };
    const k::gemv_plan before = k::gemv_plan_in_use();
    benchmark::RegisterBenchmark(base.c_str(), [base, under, bytes, threads, before](benchmark::State& state) {
      (void)plan_weights();  // made before the clock starts
      rb::timed_loop(state, under(k::gemv_plan::pairs_l1_l2), threads);
      k::use_gemv_plan(before);
      rb::record_baseline(state, base);
      rb::set_bandwidth_counters(state, bytes, threads);
    });
    benchmark::RegisterBenchmark(ours.c_str(), [base, under, bytes, threads, before](benchmark::State& state) {
      (void)plan_weights();
      rb::timed_loop(state, under(k::gemv_plan::rows_l1), threads);
      rb::set_speedup(state, base, under(k::gemv_plan::pairs_l1_l2), threads);
      k::use_gemv_plan(before);
      rb::set_bandwidth_counters(state, bytes, threads);
    });
  }
}

void register_plans() {
  namespace k = ruvllm::kernels;
  const auto x = std::make_shared<ruvllm::aligned_buffer<float>>(rb::random_floats(8192, 15));
  const auto y = std::make_shared<ruvllm::aligned_buffer<float>>(rb::random_floats(plan_matrix_rows, 16));
  for (const std::size_t cols : {768u, 2048u, 8192u}) {
    const std::size_t matrix_elements = plan_matrix_rows * cols, matrices = plan_bytes / (matrix_elements * 2);
    register_plan_rows("f16", cols, static_cast<double>(matrices * matrix_elements * 2),
                       [x, y, cols, matrix_elements, matrices](ruvllm::thread_pool& p) {
                         const auto* base = reinterpret_cast<const ruvllm::f16*>(plan_weights());
                         for (std::size_t m = 0; m < matrices; ++m)
                           k::gemv<highway>(p, base + m * matrix_elements, cols, x->data(), y->data(), plan_matrix_rows,
                                            cols);
                       });
  }
  const auto quantized = [x, y](auto precision_type, std::size_t cols) {
    using Precision = decltype(precision_type);
    using Block = typename Precision::block_type;
    constexpr std::string_view precision = Precision::name;
    const std::size_t row_bytes = cols / Precision::block_size * sizeof(Block);
    const std::size_t matrices = plan_bytes / (plan_matrix_rows * row_bytes);
    const auto act = std::make_shared<std::vector<k::activation_block_t<Block>>>(k::activation_blocks<Block>(cols));
    register_plan_rows(precision, cols, static_cast<double>(matrices * plan_matrix_rows * row_bytes),
                       [x, y, act, cols, row_bytes, matrices](ruvllm::thread_pool& p) {
                         for (std::size_t m = 0; m < matrices; ++m)
                           k::quantized_gemv<highway>(
                               p, reinterpret_cast<const Block*>(plan_weights() + m * plan_matrix_rows * row_bytes),
                               row_bytes, x->data(), y->data(), plan_matrix_rows, cols, act->data());
                       });
  };
  quantized(ruvllm::precision::q8_0{}, 768);
  quantized(ruvllm::precision::q8_0{}, 2048);
  quantized(ruvllm::precision::q8_0{}, 8192);
  quantized(ruvllm::precision::q4_0{}, 768);
  quantized(ruvllm::precision::q4_0{}, 2048);
  quantized(ruvllm::precision::q4_0{}, 8192);
  quantized(ruvllm::precision::q4_k{}, 2048);
  quantized(ruvllm::precision::q6_k{}, 2048);
}

// F16 weights with f16 activations (as decode passes them: ggml rounds the
// activations of F16 weights to f16) against the same call with those
// activations widened to f32, over the plan rows' 1 GiB of weights at the
// same decode shapes and under the plan this CPU gets. The results are the
// same bits; `speedup` is what holding the activations in f16 gains.
void register_half_activations() {
  namespace k = ruvllm::kernels;
  const auto x = std::make_shared<ruvllm::aligned_buffer<float>>(rb::random_floats(8192, 18));
  const auto x16 = std::make_shared<std::vector<ruvllm::f16>>(8192);
  for (std::size_t i = 0; i < x16->size(); ++i) {
    (*x16)[i] = ruvllm::to_f16((*x)[i]);
    (*x)[i] = ruvllm::to_float((*x16)[i]);
  }
  const auto y = std::make_shared<ruvllm::aligned_buffer<float>>(rb::random_floats(plan_matrix_rows, 19));
  for (const std::size_t cols : {768u, 2048u, 8192u}) {
    const std::size_t matrix_elements = plan_matrix_rows * cols, matrices = plan_bytes / (matrix_elements * 2);
    const double bytes = static_cast<double>(matrices * matrix_elements * 2);
    const auto body = [x, x16, y, cols, matrix_elements, matrices](bool half, unsigned threads) {
      return [x, x16, y, cols, matrix_elements, matrices, half, threads] {
        const auto* base = reinterpret_cast<const ruvllm::f16*>(plan_weights());
        for (std::size_t m = 0; m < matrices; ++m) {
          const ruvllm::f16* w = base + m * matrix_elements;
          if (half)
            k::gemv<highway>(pool(threads), w, cols, x16->data(), y->data(), plan_matrix_rows, cols);
          else
            k::gemv<highway>(pool(threads), w, cols, x->data(), y->data(), plan_matrix_rows, cols);
        }
        benchmark::ClobberMemory();
      };
    };
    for (const unsigned threads : {1u, 2u}) {
      const std::string ours = rb::join_name({"kernels", "gemv_half_x", "f16", std::to_string(cols)}, threads);
      const std::string base = rb::baseline_of(ours);
      const auto widened = body(false, threads), held = body(true, threads);
      benchmark::RegisterBenchmark(base.c_str(), [base, widened, bytes, threads](benchmark::State& state) {
        (void)plan_weights();  // made before the clock starts
        rb::timed_loop(state, widened, threads);
        rb::record_baseline(state, base);
        rb::set_bandwidth_counters(state, bytes, threads);
      });
      benchmark::RegisterBenchmark(ours.c_str(), [base, widened, held, bytes, threads](benchmark::State& state) {
        (void)plan_weights();
        rb::timed_loop(state, held, threads);
        rb::set_speedup(state, base, widened, threads);
        rb::set_bandwidth_counters(state, bytes, threads);
      });
    }
  }
}

void register_quantize_quads() {
  namespace k = ruvllm::kernels;
  for (const std::size_t n : {768u, 2048u, 8192u}) {
    const std::string ours = rb::row_name("kernels", "quantize", "q8_0_quads", std::to_string(n), 1);
    const std::string base = rb::baseline_of(ours);
    const auto x = std::make_shared<ruvllm::aligned_buffer<float>>(rb::random_floats(n, 17));
    const auto quads = std::make_shared<std::vector<k::q8_0_quad>>(k::q8_0_quads(n));
    const auto blocks = std::make_shared<std::vector<ruvllm::block_q8_0>>(n / 32);
    const auto ours_body = [x, quads, n] {
      k::ops<highway>::quantize_q8_0_quads(x->data(), quads->data(), n);
      benchmark::ClobberMemory();
    };
    const auto base_body = [x, quads, blocks, n] {
      k::ops<highway>::quantize_q8_0(x->data(), blocks->data(), n);
      k::scalar::pack_q8_0_quads(blocks->data(), n, quads->data());
      benchmark::ClobberMemory();
    };
    benchmark::RegisterBenchmark(base.c_str(), [base, base_body](benchmark::State& state) {
      rb::timed_loop(state, base_body);
      rb::record_baseline(state, base);
    });
    benchmark::RegisterBenchmark(ours.c_str(), [base, base_body, ours_body](benchmark::State& state) {
      rb::timed_loop(state, ours_body);
      rb::set_speedup(state, base, base_body);
    });
  }
}

[[maybe_unused]] const bool registered = [] {
  const auto square = std::make_shared<matrix>(4096, 4096);
  const auto ffn = std::make_shared<matrix>(11008, 4096);
  for (const auto& m : {square, ffn}) {
    register_shape<float>(m, "f32");
    register_shape<ruvllm::f16>(m, "f16");
    register_shape<ruvllm::bf16>(m, "bf16");
    using hw = ruvllm::kernels::ops<highway>;
    namespace precision = ruvllm::precision;
    const auto q8_0 = register_quantized<precision::q8_0>(m, hw::quantize_q8_0);
    const auto q4_0 = register_quantized<precision::q4_0>(m, hw::quantize_q4_0);
    const auto q4_1 = register_quantized<precision::q4_1>(m, hw::quantize_q4_1);
    const auto q5_0 = register_quantized<precision::q5_0>(m, hw::quantize_q5_0);
    const auto q5_1 = register_quantized<precision::q5_1>(m, hw::quantize_q5_1);
    const auto iq4_nl = register_quantized<precision::iq4_nl>(m, hw::quantize_iq4_nl);
    const auto q2_k = register_quantized<precision::q2_k>(m, hw::quantize_q2_k);
    const auto q3_k = register_quantized<precision::q3_k>(m, hw::quantize_q3_k);
    const auto iq4_xs = register_quantized<precision::iq4_xs>(m, hw::quantize_iq4_xs);
    const auto q4_k = register_quantized<precision::q4_k>(m, hw::quantize_q4_k);
    const auto q5_k = register_quantized<precision::q5_k>(m, hw::quantize_q5_k);
    const auto q6_k = register_quantized<precision::q6_k>(m, hw::quantize_q6_k);
    if (m == square) {
      register_avx_vnni<precision::q8_0>(m, q8_0);
      register_avx_vnni<precision::q4_0>(m, q4_0);
      register_avx_vnni<precision::q4_1>(m, q4_1);
      register_avx_vnni<precision::q5_0>(m, q5_0);
      register_avx_vnni<precision::q5_1>(m, q5_1);
      register_avx_vnni<precision::iq4_nl>(m, iq4_nl);
      register_avx_vnni<precision::q2_k>(m, q2_k);
      register_avx_vnni<precision::q3_k>(m, q3_k);
      register_avx_vnni<precision::iq4_xs>(m, iq4_xs);
      register_avx_vnni<precision::q4_k>(m, q4_k);
      register_avx_vnni<precision::q5_k>(m, q5_k);
      register_avx_vnni<precision::q6_k>(m, q6_k);
    }
  }
  register_cotenant(square);
  register_gemm(square, 128);
  register_plans();
  register_half_activations();
  register_quantize_quads();
  return true;
}();

}  // namespace
