#ifndef RUVLLM_SONA_REASONING_BANK_HPP
#define RUVLLM_SONA_REASONING_BANK_HPP

// The reasoning bank: what SONA learned, compressed into patterns. The deep
// loop clusters recent trajectory embeddings with k-means++ (Arthur &
// Vassilvitskii's D^2 seeding, greedy form, then Lloyd iterations, best of a few seeded
// restarts); each cluster becomes a pattern with its centroid, how many
// trajectories it summarizes, their mean quality, the per-model mean quality
// and the best model among them, and the mean of their parameters (e.g. the
// temperature and top-p that served them). Requests look patterns up by
// cosine similarity; near-duplicate patterns are merged (pruned).
//
// Layout: samples in one flat float array [sample][dim] (a bounded buffer
// that overwrites the oldest), pattern centroids mirrored into one flat array
// [pattern][dim] so a small bank's search is one cosine_many dispatch over
// all patterns. A bank of index_min_patterns or more also keeps an HNSW index
// (store::hnsw_index, cosine, f32) of the centroids keyed by position,
// rebuilt after every change of the pattern set (changes happen only in the
// deep loop, searches on every request): an exact scan of 100k x 128
// centroids reads 51 MB per query, the index a few hundred of them.
// Allocation: create() sizes the sample buffer; record() never allocates;
// consolidate(), prune(), restore() allocate; search() allocates only when
// its result vector or scratch grows.
// Thread-safety: none; the deep loop owns the bank (search from serving
// threads needs the engine to publish a snapshot).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "ruvllm/sona/router.hpp"
#include "ruvllm/store/hnsw_index.hpp"
#include "ruvllm/store/records.hpp"

namespace ruvllm::sona {

/// k-means settings.
struct kmeans_options {
  std::size_t k = 8;
  std::size_t max_iterations = 50;
  std::size_t restarts = 3;  ///< seeded k-means++ runs; the lowest inertia wins
  std::uint64_t seed = 0x6b6d;
};

/// A clustering: k centroids [k][dim], each point's cluster, and the sum of
/// squared distances to the assigned centroids.
struct kmeans_result {
  std::vector<float> centroids;
  std::vector<std::uint32_t> assignment;
  double inertia = 0.0;
  std::size_t iterations = 0;
};

namespace detail {
inline double uniform01(std::uint64_t& s) noexcept { return 0.5 * (uniform_pm1(s) + 1.0); }
}  // namespace detail

/// k-means++ over `data` (n points of `dim` floats, row-major). Errors: dim 0,
/// data not a multiple of dim, k 0 or larger than n. Allocates.
template <Backend B = backend::highway>
[[nodiscard]] result<kmeans_result> kmeans_pp(std::span<const float> data, std::size_t dim, const kmeans_options& o) {
  if (dim == 0 || data.size() % dim != 0)
    return make_error(errc::invalid_argument, "kmeans data of ", data.size(), " floats is not a multiple of dim ", dim);
  const std::size_t n = data.size() / dim;
  if (o.k == 0 || o.k > n) return make_error(errc::invalid_argument, "kmeans k ", o.k, " is outside [1, ", n, "]");
  using ops = kernels::ops<B>;
  std::uint64_t s = o.seed;
  kmeans_result best;
  best.inertia = std::numeric_limits<double>::infinity();
  std::vector<float> cent(o.k * dim), dist(n), cand_dist(n), row(o.k);
  std::vector<std::uint32_t> assign(n);
  std::vector<double> sums(o.k * dim);
  std::vector<std::size_t> counts(o.k);
  for (std::size_t run = 0; run < std::max<std::size_t>(1, o.restarts); ++run) {
    // D^2 seeding: each next center is drawn with probability proportional to
    // the squared distance to the nearest center chosen so far.
    const std::size_t first = std::min(n - 1, static_cast<std::size_t>(detail::uniform01(s) * static_cast<double>(n)));
    std::copy_n(data.data() + first * dim, dim, cent.data());
    ops::l2sq_many(cent.data(), data.data(), dim, n, dim, dist.data());
    // Greedy D^2 seeding (as in scikit-learn): draw 2 + ln k candidates per
    // step and keep the one that lowers the potential most. Plain D^2 draws
    // fail too often in high dimension, where the many points of covered
    // clusters carry as much total D^2 as one uncovered cluster.
    const std::size_t tries = 2 + static_cast<std::size_t>(std::log(static_cast<double>(o.k)));
    for (std::size_t c = 1; c < o.k; ++c) {
      double total = 0.0;
      for (float d : dist) total += d;
      double best_pot = std::numeric_limits<double>::infinity();
      std::size_t pick = 0;
      for (std::size_t t = 0; t < tries; ++t) {
        std::size_t cand = std::min(n - 1, static_cast<std::size_t>(detail::uniform01(s) * static_cast<double>(n)));
        if (total > 0.0) {
          const double u = detail::uniform01(s) * total;
          double acc = 0.0;
          cand = n - 1;
          for (std::size_t i = 0; i < n; ++i) {
            acc += dist[i];
            if (u < acc) {
              cand = i;
              break;
            }
          }
        }
        ops::l2sq_many(data.data() + cand * dim, data.data(), dim, n, dim, cand_dist.data());
        double pot = 0.0;
        for (std::size_t i = 0; i < n; ++i) pot += std::min(dist[i], cand_dist[i]);
        if (pot < best_pot) {
          best_pot = pot;
          pick = cand;
        }
      }
      std::copy_n(data.data() + pick * dim, dim, cent.data() + c * dim);
      ops::l2sq_many(cent.data() + c * dim, data.data(), dim, n, dim, cand_dist.data());
      for (std::size_t i = 0; i < n; ++i) dist[i] = std::min(dist[i], cand_dist[i]);
    }
    // Lloyd iterations until no point changes cluster.
    std::size_t it = 0;
    double inertia = 0.0;
    std::fill(assign.begin(), assign.end(), std::numeric_limits<std::uint32_t>::max());
    for (; it < o.max_iterations; ++it) {
      bool changed = false;
      inertia = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        ops::l2sq_many(data.data() + i * dim, cent.data(), dim, o.k, dim, row.data());
        const auto c = static_cast<std::uint32_t>(std::min_element(row.begin(), row.end()) - row.begin());
        inertia += row[c];
        dist[i] = row[c];
        if (assign[i] != c) {
          assign[i] = c;
          changed = true;
        }
      }
      if (!changed) break;
      std::fill(sums.begin(), sums.end(), 0.0);
      std::fill(counts.begin(), counts.end(), 0);
      for (std::size_t i = 0; i < n; ++i) {
        ++counts[assign[i]];
        for (std::size_t d = 0; d < dim; ++d) sums[assign[i] * dim + d] += data[i * dim + d];
      }
      for (std::size_t c = 0; c < o.k; ++c) {
        if (counts[c] == 0) {
          // An empty cluster takes the point farthest from its centroid.
          const std::size_t far = static_cast<std::size_t>(std::max_element(dist.begin(), dist.end()) - dist.begin());
          std::copy_n(data.data() + far * dim, dim, cent.data() + c * dim);
          dist[far] = 0.0f;
          continue;
        }
        for (std::size_t d = 0; d < dim; ++d)
          cent[c * dim + d] = static_cast<float>(sums[c * dim + d] / static_cast<double>(counts[c]));
      }
    }
    if (inertia < best.inertia) {
      best.inertia = inertia;
      best.centroids = cent;
      best.assignment = assign;
      best.iterations = it;
    }
  }
  return best;
}

/// A learned pattern.
struct pattern {
  /// Stable identity: assigned when the pattern is created, kept when other
  /// patterns merge into it, and the id of its record in the store (graph
  /// edges from sessions and witness entries point at it).
  store::uuid id{};
  std::vector<float> centroid;
  std::uint64_t count = 0;  ///< trajectories summarized
  float mean_quality = 0.0f;
  std::uint32_t best_model = 0;            ///< highest mean quality among models seen
  std::vector<float> model_quality;        ///< per-model mean quality (0 where unseen)
  std::vector<std::uint64_t> model_count;  ///< per-model trajectories
  std::vector<float> params;               ///< mean parameters of its trajectories
};

/// Reasoning bank settings.
struct reasoning_bank_options {
  std::size_t dim = 128;
  std::size_t models = 4;
  std::size_t params_dim = 0;        ///< parameters recorded per trajectory
  std::size_t max_samples = 4096;    ///< sample buffer (oldest overwritten)
  std::size_t max_patterns = 10000;  ///< least-used patterns dropped beyond this
  double merge_similarity = 0.98;    ///< cosine at or above which patterns merge
  kmeans_options kmeans{};
  std::size_t index_min_patterns = 4096;  ///< from this many patterns on, search through an HNSW index (0: never)
  std::uint32_t index_ef = 64;            ///< the index's search breadth (raised to top_k)
};

/// The pattern bank; see the file comment.
template <Backend B = backend::highway>
class reasoning_bank {
 public:
  reasoning_bank() = default;

  /// Errors: zero dim, models or max_samples.
  [[nodiscard]] static result<reasoning_bank> create(const reasoning_bank_options& o) {
    if (o.dim == 0 || o.models == 0 || o.max_samples == 0 || o.max_patterns == 0)
      return make_error(errc::invalid_argument, "reasoning bank dim ", o.dim, ", models ", o.models, ", max_samples ",
                        o.max_samples, ", max_patterns ", o.max_patterns, " must be positive");
    if (!(o.merge_similarity >= -1.0 && o.merge_similarity <= 1.0) || o.kmeans.k == 0)
      return make_error(errc::invalid_argument, "reasoning bank merge_similarity ", o.merge_similarity,
                        " must be in [-1, 1] and kmeans k ", o.kmeans.k, " positive");
    reasoning_bank b;
    b.o_ = o;
    b.samples_.assign(o.max_samples * o.dim, 0.0f);
    b.sample_params_.assign(o.max_samples * o.params_dim, 0.0f);
    b.sample_model_.assign(o.max_samples, 0);
    b.sample_quality_.assign(o.max_samples, 0.0f);
    return b;
  }

  [[nodiscard]] const reasoning_bank_options& options() const noexcept { return o_; }
  [[nodiscard]] std::size_t pending_samples() const noexcept { return std::min(recorded_, o_.max_samples); }
  [[nodiscard]] const std::vector<pattern>& patterns() const noexcept { return patterns_; }
  /// Deep-loop consolidations so far (each seeds its k-means differently).
  [[nodiscard]] std::uint64_t consolidations() const noexcept { return consolidations_; }

  /// Checks one pattern against this bank's shape: centroid of dim floats,
  /// per-model arrays of `models`, params of params_dim, finite values,
  /// qualities in [0, 1], a best model below `models`, a nonzero count.
  [[nodiscard]] result<void> check_pattern(const pattern& p) const {
    if (p.centroid.size() != o_.dim || p.model_quality.size() != o_.models || p.model_count.size() != o_.models ||
        p.params.size() != o_.params_dim)
      return make_error(errc::invalid_argument, "pattern shape ", p.centroid.size(), "/", p.model_quality.size(), "/",
                        p.model_count.size(), "/", p.params.size(), " differs from the bank's dim ", o_.dim,
                        ", models ", o_.models, ", params ", o_.params_dim);
    if (p.id.is_nil()) return make_error(errc::invalid_argument, "pattern id is nil");
    if (p.count == 0 || p.best_model >= o_.models)
      return make_error(errc::invalid_argument, "pattern count ", p.count, " or best model ", p.best_model,
                        " is invalid (models ", o_.models, ")");
    const auto finite = [](const std::vector<float>& v) {
      return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
    };
    if (!finite(p.centroid) || !finite(p.params))
      return make_error(errc::invalid_argument, "pattern centroid or parameters are not finite");
    const auto in01 = [](float q) { return q >= 0.0f && q <= 1.0f; };
    if (!in01(p.mean_quality) || !std::all_of(p.model_quality.begin(), p.model_quality.end(), in01))
      return make_error(errc::invalid_argument, "pattern quality ", p.mean_quality,
                        " (or a per-model one) is outside [0, 1]");
    return {};
  }

  /// Replaces every pattern (a checkpoint or an import): all are checked
  /// first, so an error leaves the bank unchanged. Pending samples stay.
  /// Errors: a malformed pattern (check_pattern), more than max_patterns.
  [[nodiscard]] result<void> restore(std::vector<pattern> patterns, std::uint64_t consolidations) {
    if (patterns.size() > o_.max_patterns)
      return make_error(errc::invalid_argument, patterns.size(), " patterns exceed the bank's max_patterns ",
                        o_.max_patterns);
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      auto ok = check_pattern(patterns[i]);
      if (!ok) return make_error(errc::invalid_argument, "pattern ", i, ": ", ok.error().message());
    }
    {
      std::vector<store::uuid> ids;
      ids.reserve(patterns.size());
      for (const auto& p : patterns) ids.push_back(p.id);
      std::sort(ids.begin(), ids.end());
      if (std::adjacent_find(ids.begin(), ids.end()) != ids.end())
        return make_error(errc::invalid_argument, "pattern id ",
                          store::to_string(*std::adjacent_find(ids.begin(), ids.end())), " appears twice");
    }
    patterns_ = std::move(patterns);
    consolidations_ = consolidations;
    rebuild_flat();
    refresh_index();
    return {};
  }

  /// Buffers one trajectory (embedding of dim floats, params of params_dim).
  /// Allocation-free.
  void record(std::span<const float> embedding, std::uint32_t model, float quality,
              std::span<const float> params = {}) noexcept {
    RUVLLM_ASSERT(embedding.size() == o_.dim && params.size() == o_.params_dim && model < o_.models);
    const std::size_t at = recorded_ % o_.max_samples;
    std::copy(embedding.begin(), embedding.end(), samples_.begin() + static_cast<std::ptrdiff_t>(at * o_.dim));
    std::copy(params.begin(), params.end(), sample_params_.begin() + static_cast<std::ptrdiff_t>(at * o_.params_dim));
    sample_model_[at] = model;
    sample_quality_[at] = quality;
    ++recorded_;
  }

  /// Clusters the buffered samples into min(k, samples) patterns, merges them
  /// into the bank (a new pattern within merge_similarity of an existing one
  /// is folded into it), and empties the buffer. Returns the pattern count.
  [[nodiscard]] result<std::size_t> consolidate() {
    const std::size_t n = pending_samples();
    if (n == 0) return patterns_.size();
    kmeans_options ko = o_.kmeans;
    ko.k = std::min(ko.k, n);
    ko.seed += consolidations_;
    RUVLLM_TRY_ASSIGN(auto km, kmeans_pp<B>(std::span<const float>(samples_.data(), n * o_.dim), o_.dim, ko));
    std::vector<pattern> fresh(ko.k);
    for (std::size_t c = 0; c < ko.k; ++c) {
      auto& p = fresh[c];
      p.centroid.assign(km.centroids.begin() + static_cast<std::ptrdiff_t>(c * o_.dim),
                        km.centroids.begin() + static_cast<std::ptrdiff_t>((c + 1) * o_.dim));
      p.model_quality.assign(o_.models, 0.0f);
      p.model_count.assign(o_.models, 0);
      p.params.assign(o_.params_dim, 0.0f);
    }
    std::vector<double> q_sum(ko.k, 0.0), mq_sum(ko.k * o_.models, 0.0), par_sum(ko.k * o_.params_dim, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t c = km.assignment[i];
      auto& p = fresh[c];
      ++p.count;
      q_sum[c] += sample_quality_[i];
      mq_sum[c * o_.models + sample_model_[i]] += sample_quality_[i];
      ++p.model_count[sample_model_[i]];
      for (std::size_t d = 0; d < o_.params_dim; ++d)
        par_sum[c * o_.params_dim + d] += sample_params_[i * o_.params_dim + d];
    }
    for (std::size_t c = 0; c < ko.k; ++c) {
      auto& p = fresh[c];
      if (p.count == 0) continue;
      p.mean_quality = static_cast<float>(q_sum[c] / static_cast<double>(p.count));
      for (std::size_t m = 0; m < o_.models; ++m)
        if (p.model_count[m] > 0)
          p.model_quality[m] = static_cast<float>(mq_sum[c * o_.models + m] / static_cast<double>(p.model_count[m]));
      for (std::size_t d = 0; d < o_.params_dim; ++d)
        p.params[d] = static_cast<float>(par_sum[c * o_.params_dim + d] / static_cast<double>(p.count));
      refresh_best(p);
    }
    for (auto& p : fresh) {
      if (p.count == 0) continue;
      const auto hit = nearest(p.centroid);
      if (hit.first < patterns_.size() && hit.second >= static_cast<float>(o_.merge_similarity)) {
        merge_into(patterns_[hit.first], p);
      } else {
        p.id = new_id(p);
        patterns_.push_back(std::move(p));
      }
      rebuild_flat();
    }
    enforce_capacity();
    refresh_index();
    recorded_ = 0;
    ++consolidations_;
    return patterns_.size();
  }

  /// The top_k patterns most similar (cosine) to query, best first, as
  /// (index, similarity) into out (cleared first). Exact below
  /// index_min_patterns, approximate (HNSW) from there on.
  void search(std::span<const float> query, std::size_t top_k, std::vector<std::pair<std::size_t, float>>& out) const {
    RUVLLM_ASSERT(query.size() == o_.dim);
    out.clear();
    const std::size_t p = patterns_.size();
    if (p == 0 || top_k == 0) return;
    if (index_ != nullptr) {
      hits_.resize(std::min(top_k, p));
      store::search_params sp;
      sp.ef = std::max<std::uint32_t>(o_.index_ef, static_cast<std::uint32_t>(hits_.size()));
      auto n = index_->search(query, std::span<store::search_hit>(hits_), index_ctx_, sp);
      if (n) {
        for (std::size_t i = 0; i < *n; ++i)
          out.emplace_back(static_cast<std::size_t>(hits_[i].key), 1.0f - hits_[i].distance);
        return;
      }
      // A query the index refuses (a zero vector) falls through to the exact scan.
    }
    sims_.resize(p);
    kernels::ops<B>::cosine_many(query.data(), flat_.data(), o_.dim, p, o_.dim, sims_.data());
    for (std::size_t i = 0; i < p; ++i) out.emplace_back(i, sims_[i]);
    const std::size_t k = std::min(top_k, p);
    std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k), out.end(),
                      [](const auto& a, const auto& b) {
                        return a.second > b.second || (a.second == b.second && a.first < b.first);
                      });
    out.resize(k);
  }

  /// Merges every pair of patterns whose centroids have cosine >= similarity
  /// (count-weighted); returns how many patterns were removed.
  std::size_t prune(double similarity) {
    std::size_t removed = 0;
    for (std::size_t i = 0; i < patterns_.size(); ++i) {
      for (std::size_t j = i + 1; j < patterns_.size();) {
        const float cs = kernels::ops<B>::cosine(patterns_[i].centroid.data(), patterns_[j].centroid.data(), o_.dim);
        if (cs >= static_cast<float>(similarity)) {
          merge_into(patterns_[i], patterns_[j]);
          patterns_.erase(patterns_.begin() + static_cast<std::ptrdiff_t>(j));
          ++removed;
        } else {
          ++j;
        }
      }
    }
    rebuild_flat();
    refresh_index();
    return removed;
  }

  /// The position of the pattern with this id, or npos (a linear scan:
  /// lookups by id belong to the deep loop and persistence, not to serving).
  [[nodiscard]] std::size_t find(const store::uuid& id) const noexcept {
    for (std::size_t i = 0; i < patterns_.size(); ++i)
      if (patterns_[i].id == id) return i;
    return npos;
  }
  static constexpr std::size_t npos = ~std::size_t{0};

 private:
  // A fresh pattern's id: a version-4 UUID from a splitmix stream over the
  // bank's seed, its consolidation count and how many ids it has made, so the
  // same history gives the same ids and independent banks practically never
  // collide.
  store::uuid new_id(const pattern&) noexcept {
    std::uint64_t s = o_.kmeans.seed ^ (consolidations_ << 32) ^ (ids_made_++ * 0x9E3779B97F4A7C15ull);
    const std::uint64_t hi = detail::splitmix64(s), lo = detail::splitmix64(s);
    return store::make_uuid_v4(hi, lo);
  }

  static void refresh_best(pattern& p) noexcept {
    float best = -1.0f;
    for (std::size_t m = 0; m < p.model_quality.size(); ++m)
      if (p.model_count[m] > 0 && p.model_quality[m] > best) {
        best = p.model_quality[m];
        p.best_model = static_cast<std::uint32_t>(m);
      }
  }

  // Count-weighted merge of `from` into `to`.
  static void merge_into(pattern& to, const pattern& from) {
    const double wt = static_cast<double>(to.count), wf = static_cast<double>(from.count), w = wt + wf;
    if (w == 0.0) return;
    for (std::size_t d = 0; d < to.centroid.size(); ++d)
      to.centroid[d] = static_cast<float>((wt * to.centroid[d] + wf * from.centroid[d]) / w);
    for (std::size_t d = 0; d < to.params.size(); ++d)
      to.params[d] = static_cast<float>((wt * to.params[d] + wf * from.params[d]) / w);
    to.mean_quality = static_cast<float>((wt * to.mean_quality + wf * from.mean_quality) / w);
    for (std::size_t m = 0; m < to.model_quality.size(); ++m) {
      const double a = static_cast<double>(to.model_count[m]), b = static_cast<double>(from.model_count[m]);
      if (a + b > 0)
        to.model_quality[m] = static_cast<float>((a * to.model_quality[m] + b * from.model_quality[m]) / (a + b));
      to.model_count[m] += from.model_count[m];
    }
    to.count += from.count;
    refresh_best(to);
  }

  std::pair<std::size_t, float> nearest(const std::vector<float>& v) const {
    std::pair<std::size_t, float> best{patterns_.size(), -2.0f};
    for (std::size_t i = 0; i < patterns_.size(); ++i) {
      const float cs = kernels::ops<B>::cosine(v.data(), flat_.data() + i * o_.dim, o_.dim);
      if (cs > best.second) best = {i, cs};
    }
    return best;
  }

  void enforce_capacity() {
    if (patterns_.size() <= o_.max_patterns) return;
    std::stable_sort(patterns_.begin(), patterns_.end(),
                     [](const pattern& a, const pattern& b) { return a.count > b.count; });
    patterns_.resize(o_.max_patterns);
    rebuild_flat();
  }

  void rebuild_flat() {
    flat_.resize(patterns_.size() * o_.dim);
    for (std::size_t i = 0; i < patterns_.size(); ++i)
      std::copy(patterns_[i].centroid.begin(), patterns_[i].centroid.end(),
                flat_.begin() + static_cast<std::ptrdiff_t>(i * o_.dim));
    index_stale_ = true;
  }

  // Rebuilds the HNSW index once per change of the pattern set (called at
  // the end of each mutating call, not per pattern). A centroid the index
  // refuses (a zero vector has no direction) leaves the exact scan in charge.
  void refresh_index() {
    if (!index_stale_) return;
    index_stale_ = false;
    index_.reset();
    if (o_.index_min_patterns == 0 || patterns_.size() < o_.index_min_patterns) return;
    store::hnsw_options ho;
    ho.dimension = static_cast<std::uint32_t>(o_.dim);
    ho.ef_construction = 100;
    ho.ef_search = o_.index_ef;
    auto index = index_type::create(ho);
    if (!index) return;
    std::vector<std::uint64_t> keys(patterns_.size());
    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = i;
    if (!index->insert_batch(keys, flat_)) return;
    index_ = std::make_unique<index_type>(std::move(index).value());
  }

  reasoning_bank_options o_{};
  std::vector<float> samples_, sample_params_, sample_quality_;
  std::vector<std::uint32_t> sample_model_;
  std::size_t recorded_ = 0;
  std::uint64_t consolidations_ = 0;
  std::uint64_t ids_made_ = 0;
  std::vector<pattern> patterns_;
  std::vector<float> flat_;
  mutable std::vector<float> sims_;
  using index_type = store::hnsw_index<store::metric::cosine, precision::f32, B>;
  std::unique_ptr<index_type> index_;  // null below index_min_patterns
  bool index_stale_ = false;
  mutable store::hnsw_search_context index_ctx_;
  mutable std::vector<store::search_hit> hits_;
};

/// Floats of routing features routing_features() writes for a bank of
/// these options: per-model success rates, pattern parameters, similarity.
[[nodiscard]] constexpr std::size_t routing_feature_dim(const reasoning_bank_options& o) noexcept {
  return o.models + o.params_dim + 1;
}

/// The router's extra inputs from a retrieved pattern (the reference design's
/// "retrieved policy parameters and historical success rates"): the
/// pattern's per-model mean quality, its mean parameters, and how similar it
/// is to the query; zeros when nothing was retrieved (p == nullptr). out
/// holds routing_feature_dim() floats (asserted in debug builds).
inline void routing_features(const pattern* p, float similarity, std::span<float> out) noexcept {
  std::fill(out.begin(), out.end(), 0.0f);
  if (p == nullptr) return;
  RUVLLM_ASSERT(out.size() == p->model_quality.size() + p->params.size() + 1);
  std::copy(p->model_quality.begin(), p->model_quality.end(), out.begin());
  std::copy(p->params.begin(), p->params.end(), out.begin() + static_cast<std::ptrdiff_t>(p->model_quality.size()));
  out.back() = similarity;
}

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_REASONING_BANK_HPP
