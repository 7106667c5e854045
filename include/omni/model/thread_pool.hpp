// A fixed pool of worker threads, optionally pinned one per CPU, that runs the engine's
// parallel loops and the AMLA decoder's work items (it is an omni::amla::Executor). The calling
// thread works too. Workers spin briefly on the job counter, then sleep on it (atomic wait), so
// a decode step's dozens of small loops do not pay a futex wake each. parallel_for takes any
// callable by reference: no allocation per loop.
//
// parallel_for_groups runs tasks that belong to groups (expert-parallel ranks) on their group's
// workers only: worker w of W serves group w * G / W when W >= G, else the groups g with
// g * W / G == w, so a rank's data is only ever touched by its own threads.
//
// Threading: run()/parallel_for() from one thread at a time; they return when every task ran.
#pragma once

#include <atomic>
#include <functional>
#include <span>
#include <thread>
#include <type_traits>
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

  static constexpr int kMaxGroups = 64;
  // Whether worker `worker` serves group `group` of `groups`.
  bool serves(int worker, int group, int groups) const noexcept;

  // Tasks [group_begin[g], group_begin[g + 1]) belong to group g (groups <= kMaxGroups).
  template <class Fn>
  void parallel_for_groups(std::span<const int> group_begin, Fn&& fn) {
    const int groups = static_cast<int>(group_begin.size()) - 1;
    if (groups <= 0 || group_begin.back() <= 0) return;
    if (threads_.empty()) {
      for (int t = 0; t < group_begin.back(); ++t) fn(t, 0);
      return;
    }
    dispatch_groups(
        group_begin,
        [](void* ctx, int task, int worker) {
          (*static_cast<std::remove_reference_t<Fn>*>(ctx))(task, worker);
        },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

  template <class Fn>
  void parallel_for(int tasks, Fn&& fn) {
    if (tasks <= 0) return;
    if (tasks == 1 || threads_.empty()) {
      for (int t = 0; t < tasks; ++t) fn(t, 0);
      return;
    }
    dispatch(
        tasks,
        [](void* ctx, int task, int worker) {
          (*static_cast<std::remove_reference_t<Fn>*>(ctx))(task, worker);
        },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using Invoke = void (*)(void*, int, int);
  void dispatch(int tasks, Invoke invoke, void* ctx);
  void dispatch_groups(std::span<const int> group_begin, Invoke invoke, void* ctx);
  void worker_loop(int worker);
  void drain(std::uint32_t job, int worker);
  void drain_groups(std::uint32_t job, int worker);

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
  // Grouped jobs: per group (job << 32) | next task, and the groups' task ranges.
  std::atomic<int> groups_{0};  // 0: an ordinary job
  std::atomic<std::uint64_t> group_work_[kMaxGroups];
  std::atomic<int> group_begin_[kMaxGroups + 1];
};

}  // namespace omni::model
