#include "daemon/solver_pool.h"

#include <utility>

namespace phasor::daemon {

SolverPool::SolverPool(uint32_t threads, std::function<void()> notify, size_t max_queued)
    : notify_(std::move(notify)), max_queued_(max_queued) {
  for (uint32_t i = 0; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

SolverPool::~SolverPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool SolverPool::Submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(job));
    ++pending_;
  }
  cv_.notify_one();
  return true;
}

void SolverPool::TakeDone() {
  std::deque<std::function<void()>> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(done_);
    pending_ -= done.size();
  }
  for (std::function<void()>& complete : done) complete();
}

size_t SolverPool::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

void SolverPool::WorkerLoop() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    std::function<void()> complete = job();
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(complete));
    }
    notify_();
  }
}

}  // namespace phasor::daemon
