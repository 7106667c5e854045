#include "omni/model/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>

namespace omni::model {
namespace {

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(cpu) % CPU_SETSIZE, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

constexpr int kSpins = 20000;  // ~tens of microseconds before sleeping

}  // namespace

ThreadPool::ThreadPool(int threads, bool pin) {
  for (auto& g : group_work_) g.store(0);
  for (auto& b : group_begin_) b.store(0);
  const int n = std::max(1, threads);
  const int cpus = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  if (pin) pin_to(0);
  for (int i = 1; i < n; ++i) {
    threads_.emplace_back([this, i, pin, cpus] {
      if (pin) pin_to(i % cpus);
      worker_loop(i);
    });
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  job_.fetch_add(1);
  job_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::drain(std::uint32_t job, int worker) {
  for (;;) {
    std::uint64_t w = work_.load(std::memory_order_acquire);
    if (static_cast<std::uint32_t>(w >> 32) != job) return;
    const auto index = static_cast<int>(w & 0xffffffffU);
    if (index >= tasks_.load(std::memory_order_relaxed)) return;
    if (!work_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel)) continue;
    // The job cannot change before this task is counted done.
    invoke_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), index, worker);
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

bool ThreadPool::serves(int worker, int group, int groups) const noexcept {
  const int w = workers();
  if (w >= groups) return worker * groups / w == group;
  return group * w / groups == worker;
}

void ThreadPool::drain_groups(std::uint32_t job, int worker) {
  const int groups = groups_.load(std::memory_order_relaxed);
  for (int g = 0; g < groups; ++g) {
    if (!serves(worker, g, groups)) continue;
    std::atomic<std::uint64_t>& counter = group_work_[g];
    for (;;) {
      std::uint64_t w = counter.load(std::memory_order_acquire);
      if (static_cast<std::uint32_t>(w >> 32) != job) break;
      const int first = group_begin_[g].load(std::memory_order_relaxed);
      const int count = group_begin_[g + 1].load(std::memory_order_relaxed) - first;
      const auto index = static_cast<int>(w & 0xffffffffU);
      if (index >= count) break;
      if (!counter.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel)) continue;
      invoke_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), first + index,
                                              worker);
      remaining_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
}

void ThreadPool::dispatch_groups(std::span<const int> group_begin, Invoke invoke, void* ctx) {
  const int groups = std::min(kMaxGroups, static_cast<int>(group_begin.size()) - 1);
  const std::uint32_t job = job_.load(std::memory_order_relaxed) + 1;
  for (int g = 0; g <= groups; ++g) {
    group_begin_[g].store(group_begin[static_cast<std::size_t>(g)], std::memory_order_relaxed);
  }
  for (int g = 0; g < groups; ++g) {
    group_work_[g].store(static_cast<std::uint64_t>(job) << 32, std::memory_order_relaxed);
  }
  groups_.store(groups, std::memory_order_relaxed);
  invoke_.store(invoke, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  remaining_.store(group_begin_[groups].load(std::memory_order_relaxed), std::memory_order_relaxed);
  tasks_.store(0, std::memory_order_relaxed);
  work_.store(static_cast<std::uint64_t>(job) << 32, std::memory_order_release);
  job_.store(job, std::memory_order_release);
  job_.notify_all();
  drain_groups(job, 0);
  while (remaining_.load(std::memory_order_acquire) != 0) __builtin_ia32_pause();
  groups_.store(0, std::memory_order_relaxed);
}

void ThreadPool::worker_loop(int worker) {
  std::uint32_t seen = 0;
  for (;;) {
    std::uint32_t now = job_.load(std::memory_order_acquire);
    for (int spin = 0; now == seen && spin < kSpins; ++spin) {
      __builtin_ia32_pause();
      now = job_.load(std::memory_order_acquire);
    }
    if (now == seen) {
      job_.wait(seen, std::memory_order_acquire);
      continue;
    }
    seen = now;
    if (stop_.load()) return;
    if (groups_.load(std::memory_order_acquire) > 0) {
      drain_groups(now, worker);
    } else {
      drain(now, worker);
    }
  }
}

void ThreadPool::dispatch(int tasks, Invoke invoke, void* ctx) {
  const std::uint32_t job = job_.load(std::memory_order_relaxed) + 1;
  groups_.store(0, std::memory_order_relaxed);
  tasks_.store(tasks, std::memory_order_relaxed);
  invoke_.store(invoke, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  remaining_.store(tasks, std::memory_order_relaxed);
  work_.store(static_cast<std::uint64_t>(job) << 32, std::memory_order_release);
  job_.store(job, std::memory_order_release);
  job_.notify_all();
  drain(job, 0);
  while (remaining_.load(std::memory_order_acquire) != 0) __builtin_ia32_pause();
}

void ThreadPool::run(int tasks, const std::function<void(int, int)>& fn) {
  parallel_for(tasks, [&fn](int task, int worker) { fn(task, worker); });
}

}  // namespace omni::model
