// A bounded map that forgets the least recently used entries first: the
// memos that outlive a request (the router's routed rings, the ranker's link
// solves) keep what recurs from one request to the next, the running jobs',
// within a stated budget. Each entry has a cost (1 for a count bound, its
// bytes for a size bound); Put evicts from the cold end until the total is
// within the budget. An entry costing more than the whole budget is not kept.
//
// Not thread-safe: its owner holds a lock around it. Values are handed out
// by copy, so a value type that is a shared_ptr stays alive for a reader
// after its entry is evicted.
#ifndef PHASOR_TOPOLOGY_LRU_CACHE_H_
#define PHASOR_TOPOLOGY_LRU_CACHE_H_

#include <cstddef>
#include <list>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace phasor::topology {

template <typename K, typename V>
class LruCache {
 public:
  explicit LruCache(size_t budget) : budget_(budget) {}

  // The value of `key`, now the most recently used; nullopt when absent.
  std::optional<V> Find(const K& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->value;
  }

  // Keeps `value` under `key` (replacing an entry of that key), then evicts
  // the least recently used entries until the costs sum to at most budget.
  void Put(const K& key, V value, size_t cost) {
    Erase(key);
    if (cost > budget_) return;
    order_.push_front(Entry{key, std::move(value), cost});
    index_.emplace(key, order_.begin());
    total_ += cost;
    while (total_ > budget_) {
      const Entry& cold = order_.back();
      total_ -= cold.cost;
      index_.erase(cold.key);
      order_.pop_back();
    }
  }

  void Clear() {
    index_.clear();
    order_.clear();
    total_ = 0;
  }

  size_t size() const { return index_.size(); }
  size_t total_cost() const { return total_; }
  size_t budget() const { return budget_; }

 private:
  struct Entry {
    K key;
    V value;
    size_t cost;
  };

  void Erase(const K& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    total_ -= it->second->cost;
    order_.erase(it->second);
    index_.erase(it);
  }

  size_t budget_;
  size_t total_ = 0;
  std::list<Entry> order_;  // most recently used first
  absl::flat_hash_map<K, typename std::list<Entry>::iterator> index_;
};

}  // namespace phasor::topology

#endif  // PHASOR_TOPOLOGY_LRU_CACHE_H_
