#ifndef RUVLLM_CORE_EVICTION_HPP
#define RUVLLM_CORE_EVICTION_HPP

// The EvictionPolicy family: behaviour, not just a tag. A policy P provides
//   P::hook                 a base class that evictable objects derive from
//                           (the bookkeeping lives inside the object, so
//                           tracking it never allocates);
//   P::queue<T>             for T derived from P::hook: insert, touch, erase,
//                           pick_victim (the next object to evict, not
//                           removed), size, empty.
// The memory pool, the radix prefix cache and the session index share these.
//
// Concurrency: a queue is not synchronized; its owner serializes access.
// Lifetime: hooks are Boost.Intrusive safe-mode hooks, so destroying an object
// that is still queued trips an assertion in debug builds.

#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ruvllm/core/error.hpp"

namespace ruvllm {

namespace eviction {

namespace detail {
namespace bi = boost::intrusive;
struct lru_tag {};
struct lfu_tag {};
// Tagged so an object can also sit in other intrusive containers; safe-link
// so destroying a queued object is caught in debug builds.
using lru_hook_base = bi::list_base_hook<bi::tag<lru_tag>, bi::link_mode<bi::safe_link>>;
using lfu_hook_base = bi::set_base_hook<bi::tag<lfu_tag>, bi::link_mode<bi::safe_link>>;
}  // namespace detail

/// Least recently used: a doubly linked list in use order; O(1) everything.
struct lru {
  class hook : public detail::lru_hook_base {};

  template <class T>
  class queue {
    static_assert(std::is_base_of_v<hook, T>, "lru::queue<T>: T must derive from ruvllm::eviction::lru::hook");
    using list_type =
        detail::bi::list<hook, detail::bi::base_hook<detail::lru_hook_base>, detail::bi::constant_time_size<true>>;

   public:
    queue() = default;
    queue(const queue&) = delete;
    queue& operator=(const queue&) = delete;
    ~queue() { list_.clear(); }

    void insert(T& item) noexcept {
      RUVLLM_ASSERT(!contains(item));
      list_.push_back(item);
    }
    void touch(T& item) noexcept {
      RUVLLM_ASSERT(contains(item));
      list_.splice(list_.end(), list_, list_.iterator_to(item));
    }
    void erase(T& item) noexcept {
      RUVLLM_ASSERT(contains(item));
      list_.erase(list_.iterator_to(item));
    }
    [[nodiscard]] T* pick_victim() noexcept { return list_.empty() ? nullptr : static_cast<T*>(&list_.front()); }
    [[nodiscard]] bool contains(const T& item) const noexcept { return static_cast<const hook&>(item).is_linked(); }
    [[nodiscard]] std::size_t size() const noexcept { return list_.size(); }
    [[nodiscard]] bool empty() const noexcept { return list_.empty(); }

   private:
    list_type list_;  // front = least recently used
  };
};

/// Least frequently used, ties broken by least recent use: a balanced tree
/// keyed by (use count, last use); O(log n) per operation, no allocation.
/// Counts never decay, so a long-lived hot object outlives a burst of new
/// ones: pair with hysteresis or prefer lru when the working set shifts.
struct lfu {
  template <class T>
  class queue;

  class hook : public detail::lfu_hook_base {
   public:
    [[nodiscard]] std::uint64_t use_count() const noexcept { return uses_; }

    /// Orders hooks coldest first: fewer uses, then older last use.
    struct colder {
      bool operator()(const hook& a, const hook& b) const noexcept {
        return a.uses_ != b.uses_ ? a.uses_ < b.uses_ : a.last_use_ < b.last_use_;
      }
    };

   private:
    template <class>
    friend class lfu::queue;
    std::uint64_t uses_ = 0;
    std::uint64_t last_use_ = 0;
  };

  template <class T>
  class queue {
    static_assert(std::is_base_of_v<hook, T>, "lfu::queue<T>: T must derive from ruvllm::eviction::lfu::hook");
    using set_type =
        detail::bi::set<hook, detail::bi::compare<hook::colder>, detail::bi::base_hook<detail::lfu_hook_base>,
                        detail::bi::constant_time_size<true>>;

   public:
    queue() = default;
    queue(const queue&) = delete;
    queue& operator=(const queue&) = delete;
    ~queue() { set_.clear(); }

    void insert(T& item) noexcept {
      RUVLLM_ASSERT(!contains(item));
      hook& h = item;
      h.uses_ = 1;
      h.last_use_ = ++clock_;
      set_.insert(h);
    }
    void touch(T& item) noexcept {
      RUVLLM_ASSERT(contains(item));
      hook& h = item;
      set_.erase(set_.iterator_to(h));
      ++h.uses_;
      h.last_use_ = ++clock_;
      set_.insert(h);
    }
    void erase(T& item) noexcept {
      RUVLLM_ASSERT(contains(item));
      set_.erase(set_.iterator_to(static_cast<hook&>(item)));
    }
    [[nodiscard]] T* pick_victim() noexcept { return set_.empty() ? nullptr : static_cast<T*>(&*set_.begin()); }
    [[nodiscard]] bool contains(const T& item) const noexcept { return static_cast<const hook&>(item).is_linked(); }
    [[nodiscard]] std::size_t size() const noexcept { return set_.size(); }
    [[nodiscard]] bool empty() const noexcept { return set_.empty(); }

   private:
    set_type set_;  // begin() = coldest
    std::uint64_t clock_ = 0;
  };
};

/// Watermarks of hysteresis eviction, in integer percent of the budget
/// (integers because clang 14 rejects floating-point template parameters,
/// and because they are set at run time).
struct watermarks {
  unsigned start_percent = 85;  // begin evicting when usage reaches this
  unsigned stop_percent = 70;   // keep evicting until usage falls to this
};

/// Adds watermarks to an inner policy: eviction starts when usage reaches
/// start_percent of the budget and continues until it falls to stop_percent,
/// so the owner evicts in batches instead of one object per allocation.
template <class Inner>
struct hysteresis {
  using hook = typename Inner::hook;
  using inner_policy = Inner;

  template <class T>
  class queue : public Inner::template queue<T> {
   public:
    queue() = default;

    /// Validates and sets the watermarks: 0 < stop < start <= 100.
    [[nodiscard]] result<void> set_watermarks(watermarks w) {
      if (w.start_percent > 100 || w.start_percent == 0)
        return make_error(errc::invalid_argument, "hysteresis start_percent ", w.start_percent, " must be in 1..100");
      if (w.stop_percent >= w.start_percent)
        return make_error(errc::invalid_argument, "hysteresis stop_percent ", w.stop_percent,
                          " must be below start_percent ", w.start_percent);
      marks_ = w;
      return {};
    }
    [[nodiscard]] watermarks current_watermarks() const noexcept { return marks_; }

    /// Whether the owner should evict now, given usage and budget in bytes.
    /// Stateful: true from the start watermark until usage reaches the stop one.
    [[nodiscard]] bool should_evict(std::size_t used, std::size_t budget) noexcept {
      // 128-bit products: used * 100 must not wrap for any byte count.
      __extension__ using u128 = unsigned __int128;
      const u128 used_scaled = static_cast<u128>(used) * 100u;
      if (evicting_) {
        evicting_ = used_scaled > static_cast<u128>(budget) * marks_.stop_percent;
      } else {
        evicting_ = used_scaled >= static_cast<u128>(budget) * marks_.start_percent;
      }
      return evicting_;
    }
    [[nodiscard]] bool evicting() const noexcept { return evicting_; }

   private:
    watermarks marks_{};
    bool evicting_ = false;
  };
};

}  // namespace eviction

namespace detail {
template <class P>
struct eviction_probe : P::hook {};

template <class P>
concept has_eviction_hook = requires {
  typename P::hook;
}
&&std::is_class_v<typename P::hook>;

template <class P>
concept has_eviction_queue = requires(typename P::template queue<eviction_probe<P>>& q, eviction_probe<P>& item) {
  q.insert(item);
  q.touch(item);
  q.erase(item);
  { q.pick_victim() } -> std::same_as<eviction_probe<P>*>;
  { q.size() } -> std::convertible_to<std::size_t>;
  { q.empty() } -> std::convertible_to<bool>;
};
}  // namespace detail

/// An eviction strategy: an empty tag with an intrusive hook and a queue
/// template offering insert, touch, erase and pick_victim.
template <class P>
concept EvictionPolicy = std::is_empty_v<P> && detail::has_eviction_hook<P> && detail::has_eviction_queue<P>;

}  // namespace ruvllm

#endif  // RUVLLM_CORE_EVICTION_HPP
