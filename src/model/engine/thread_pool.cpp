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
    drain(now, worker);
  }
}

void ThreadPool::dispatch(int tasks, Invoke invoke, void* ctx) {
  const std::uint32_t job = job_.load(std::memory_order_relaxed) + 1;
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
