// The threads that solve RankRequests, so that the socket thread never waits
// on the placer. Work goes in with Submit (any function), comes back as
// results through TakeDone on the submitting thread, which a notifier
// (called from a worker after each result) tells to look.
//
// Thread safety: Submit and TakeDone may be called from any thread; the
// notifier runs on worker threads. The destructor waits for the running jobs.
//
// Bounded: at most `max_queued` jobs wait for a worker (jobs running are not
// counted); Submit refuses one more, so a burst costs its sender an answer
// at once instead of a queue that grows without end.
#ifndef PHASOR_DAEMON_SOLVER_POOL_H_
#define PHASOR_DAEMON_SOLVER_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace phasor::daemon {

class SolverPool {
 public:
  // A unit of work; it returns the function to run when its result is taken
  // (on the taking thread).
  using Job = std::function<std::function<void()>()>;

  // `threads` >= 1 workers; `notify` is called after every finished job;
  // `max_queued` >= 1 jobs may wait at once.
  SolverPool(uint32_t threads, std::function<void()> notify, size_t max_queued = 64);
  ~SolverPool();
  SolverPool(const SolverPool&) = delete;
  SolverPool& operator=(const SolverPool&) = delete;

  // False (and the job dropped) when max_queued jobs already wait.
  [[nodiscard]] bool Submit(Job job);
  // Runs the completions of every finished job, in finishing order.
  void TakeDone();
  // Jobs submitted and not yet taken.
  size_t pending() const;

 private:
  void WorkerLoop();

  std::function<void()> notify_;
  size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::deque<std::function<void()>> done_;
  size_t pending_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace phasor::daemon

#endif  // PHASOR_DAEMON_SOLVER_POOL_H_
