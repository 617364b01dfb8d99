#include "placer/scratch.h"

#include <utility>

namespace phasor::placer {
namespace {

// At most this many idle buffers are kept per thread.
constexpr size_t kMaxPooled = 64;

std::vector<std::vector<double>>& Pool() {
  thread_local std::vector<std::vector<double>> pool;
  return pool;
}

}  // namespace

// A pooled buffer for `size` doubles: one already holding at least `size`
// elements (no growth to fill), the smallest such; else one whose capacity
// suffices, the fullest (the least to fill); else the largest.
static std::vector<double> TakeFromPool(size_t size) {
  auto& pool = Pool();
  auto rank = [size](const std::vector<double>& v) {
    // (class, tie-break): lower is better.
    if (v.size() >= size) return std::pair<int, size_t>{0, v.capacity()};
    if (v.capacity() >= size) return std::pair<int, size_t>{1, size - v.size()};
    return std::pair<int, size_t>{2, ~v.capacity()};
  };
  size_t pick = pool.size();
  for (size_t i = 0; i < pool.size(); ++i) {
    if (pick == pool.size() || rank(pool[i]) < rank(pool[pick])) pick = i;
  }
  std::vector<double> out;
  if (pick < pool.size()) {
    out = std::move(pool[pick]);
    pool[pick] = std::move(pool.back());
    pool.pop_back();
  }
  return out;
}

ScratchBuffer::ScratchBuffer(size_t size, double fill) : data_(TakeFromPool(size)) {
  data_.assign(size, fill);
}

ScratchBuffer::ScratchBuffer(size_t size, Uninitialized) : data_(TakeFromPool(size)) {
  data_.resize(size);
}

ScratchBuffer::~ScratchBuffer() {
  if (!owned_) return;
  auto& pool = Pool();
  if (pool.size() < kMaxPooled) pool.push_back(std::move(data_));
}

ScratchBuffer::ScratchBuffer(ScratchBuffer&& other) noexcept
    : data_(std::move(other.data_)), owned_(other.owned_) {
  other.owned_ = false;
}

ScratchBuffer& ScratchBuffer::operator=(ScratchBuffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(owned_, other.owned_);
  return *this;
}

}  // namespace phasor::placer
