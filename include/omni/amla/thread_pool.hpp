// A small fixed pool of threads that runs the decoder's work items (the kernels own no
// threads). The calling thread works too: workers() = threads started + 1.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "omni/amla/cpu.hpp"

namespace omni::amla {

// Threading: run() from one thread at a time; it returns when every task has run.
class ThreadPoolExecutor final : public Executor {
 public:
  explicit ThreadPoolExecutor(int workers);  // workers >= 1 (1: everything inline)
  ~ThreadPoolExecutor() override;
  ThreadPoolExecutor(const ThreadPoolExecutor&) = delete;
  ThreadPoolExecutor& operator=(const ThreadPoolExecutor&) = delete;

  int workers() const noexcept override { return static_cast<int>(threads_.size()) + 1; }
  void run(int tasks, const std::function<void(int task, int worker)>& fn) override;

 private:
  void worker_loop(const std::stop_token& stop, int worker);
  void drain(int worker);

  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::condition_variable done_;
  const std::function<void(int, int)>* job_ = nullptr;
  int tasks_ = 0;
  std::atomic<int> next_{0};
  int busy_ = 0;             // workers still inside the current job
  unsigned generation_ = 0;  // bumped per run(), so a worker joins each job once
  std::vector<std::jthread> threads_;
};

}  // namespace omni::amla
