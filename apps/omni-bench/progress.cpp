#include "progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace omni::bench {

void Progress::update(double elapsed_s, std::uint64_t ok, std::uint64_t failed,
                      std::uint64_t in_flight) {
  if (!enabled_ || (last_draw_s_ >= 0 && elapsed_s - last_draw_s_ < 0.1)) return;
  last_draw_s_ = elapsed_s;
  draw(elapsed_s, ok, failed, in_flight);
}

void Progress::finish(double elapsed_s, std::uint64_t ok, std::uint64_t failed) {
  if (!enabled_) return;
  draw(elapsed_s, ok, failed, 0);
  std::fputc('\n', out_);
  std::fflush(out_);
}

void Progress::draw(double elapsed_s, std::uint64_t ok, std::uint64_t failed,
                    std::uint64_t in_flight) {
  constexpr std::size_t kWidth = 30;
  const std::uint64_t done = ok + failed;
  std::string bar;
  if (total_ > 0) {
    const auto filled = static_cast<std::size_t>(kWidth * std::min(done, total_) / total_);
    bar = fmt::format("[{}{}] {}/{} ", std::string(filled, '#'), std::string(kWidth - filled, '.'),
                      done, total_);
  } else {
    bar = fmt::format("{} done ", done);
  }
  const double rate = elapsed_s > 0 ? static_cast<double>(ok) / elapsed_s : 0.0;
  const std::string line =
      fmt::format("\r{}ok {} failed {} in flight {} | {:.1f} req/s | {:.1f}s\x1b[K", bar, ok,
                  failed, in_flight, rate, elapsed_s);
  std::fputs(line.c_str(), out_);
  std::fflush(out_);
}

}  // namespace omni::bench
