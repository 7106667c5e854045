// A fixed pool of worker threads, optionally pinned one per CPU, that runs the engine's
// parallel loops and the AMLA decoder's work items (it is an omni::amla::Executor). The calling
// thread works too. Workers spin briefly on the job counter, then sleep on it (atomic wait), so
// a decode step's dozens of small loops do not pay a futex wake each. parallel_for takes any
// callable by reference: no allocation per loop.
//
// Threading: run()/parallel_for() from one thread at a time; they return when every task ran.
#pragma once

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "omni/amla/cpu.hpp"

namespace omni::model {

class ThreadPool final : public omni::amla::Executor {
 public:
  // threads >= 1 (1: everything inline). pin: bind worker i (and the caller) to CPU i.
  explicit ThreadPool(int threads, bool pin = false);
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int workers() const noexcept override { return static_cast<int>(threads_.size()) + 1; }
  void run(int tasks, const std::function<void(int task, int worker)>& fn) override;

  template <class Fn>
  void parallel_for(int tasks, Fn&& fn) {
    if (tasks <= 0) return;
    if (tasks == 1 || threads_.empty()) {
      for (int t = 0; t < tasks; ++t) fn(t, 0);
      return;
    }
    dispatch(
        tasks, [](void* ctx, int task, int worker) { (*static_cast<Fn*>(ctx))(task, worker); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using Invoke = void (*)(void*, int, int);
  void dispatch(int tasks, Invoke invoke, void* ctx);
  void worker_loop(int worker);
  void drain(std::uint32_t job, int worker);

  std::vector<std::thread> threads_;
  // (job << 32) | next task index: a task is claimed by CAS, so a worker that wakes late for a
  // finished job can never claim a task of the next one.
  std::atomic<std::uint64_t> work_{0};
  std::atomic<std::uint32_t> job_{0};  // the latest job id (what sleeping workers wait on)
  std::atomic<int> remaining_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> tasks_{0};
  std::atomic<Invoke> invoke_{nullptr};
  std::atomic<void*> ctx_{nullptr};
};

}  // namespace omni::model
