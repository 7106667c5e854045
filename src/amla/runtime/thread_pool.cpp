#include "omni/amla/thread_pool.hpp"

#include <chrono>

namespace omni::amla {

ThreadPoolExecutor::ThreadPoolExecutor(int workers) {
  for (int w = 1; w < workers; ++w) {
    threads_.emplace_back([this, w](const std::stop_token& stop) { worker_loop(stop, w); });
  }
}

ThreadPoolExecutor::~ThreadPoolExecutor() {
  for (auto& t : threads_) t.request_stop();
  wake_.notify_all();
  threads_.clear();  // joins
}

void ThreadPoolExecutor::drain(int worker) {
  for (int task = next_.fetch_add(1); task < tasks_; task = next_.fetch_add(1))
    (*job_)(task, worker);
}

void ThreadPoolExecutor::worker_loop(const std::stop_token& stop, int worker) {
  unsigned seen = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    // A timed wait so that a lost wake-up costs at most a tick, never a hang.
    wake_.wait_for(lock, stop, std::chrono::milliseconds(100), [&] { return generation_ != seen; });
    if (stop.stop_requested()) return;
    if (generation_ == seen) continue;
    seen = generation_;
    ++busy_;
    lock.unlock();
    drain(worker);
    lock.lock();
    if (--busy_ == 0) done_.notify_all();
  }
}

void ThreadPoolExecutor::run(int tasks, const std::function<void(int task, int worker)>& fn) {
  if (threads_.empty() || tasks <= 1) {
    for (int t = 0; t < tasks; ++t) fn(t, 0);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    tasks_ = tasks;
    next_.store(0);
    ++generation_;
  }
  wake_.notify_all();
  drain(0);
  std::unique_lock lock(mutex_);
  // Workers that woke for this generation finish their current task; the others find no
  // task left. Wait (in timed steps) until none is inside the job, then retire it.
  while (busy_ != 0 || next_.load() < tasks_) done_.wait_for(lock, std::chrono::milliseconds(100));
  job_ = nullptr;
}

}  // namespace omni::amla
