// A one-line progress bar on stderr, redrawn at most ten times a second.
#pragma once

#include <cstdint>
#include <cstdio>

namespace omni::bench {

class Progress {
 public:
  // total 0: unknown (a trace without --max-requests); the bar then shows counts only.
  Progress(bool enabled, std::uint64_t total, std::FILE* out = stderr)
      : enabled_(enabled), total_(total), out_(out) {}
  void update(double elapsed_s, std::uint64_t ok, std::uint64_t failed, std::uint64_t in_flight);
  // The last state, then a newline.
  void finish(double elapsed_s, std::uint64_t ok, std::uint64_t failed);

 private:
  void draw(double elapsed_s, std::uint64_t ok, std::uint64_t failed, std::uint64_t in_flight);

  bool enabled_;
  std::uint64_t total_;
  std::FILE* out_;
  double last_draw_s_ = -1.0;
};

}  // namespace omni::bench
