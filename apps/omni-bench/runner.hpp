// The load loop: one I/O thread, one coroutine per request, many concurrent streams.
//
//   dispatcher ── workload.next() ── pacer.send_at() ── wait ── concurrency slot ── spawn
//        │                                                                            │
//        └── after the last request (or --duration, or SIGINT): wait for in-flight ◄──┘
//
// Every wait is bounded: the pacer's times are finite, a slot frees when a request ends, and a
// request ends at the latest after --timeout (silence on the socket, or its whole length).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "omni/benchstat/record.hpp"
#include "omni/common/result.hpp"
#include "omni/workload/request_spec.hpp"
#include "options.hpp"
#include "progress.hpp"

namespace omni::bench {

struct RunResult {
  std::vector<benchstat::RequestRecord> records;  // in completion order
  double duration_s = 0.0;                        // first send to last completion
  std::uint64_t issued = 0;
  std::optional<Error> workload_error;  // a malformed trace line ends the run early
  bool interrupted = false;             // SIGINT/SIGTERM stopped the dispatch
  std::optional<double> header_speed;   // X-Omni-Sim-Speed of the first response carrying it
};

// Runs the whole benchmark on the calling thread.
RunResult run_benchmark(const Options& options, workload::Workload& workload, Progress& progress);

}  // namespace omni::bench
