#include "process_metrics.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

#include "omni/common/version.hpp"

namespace omni::proxy {
namespace {

// /proc/self/stat's fields after the command name (which may hold spaces and parentheses):
// field 14 utime, 15 stime (clock ticks), 22 starttime (ticks after boot), 23 vsize (bytes),
// 24 rss (pages).
struct ProcStat {
  double cpu_seconds = 0;
  double start_ticks = 0;
  double virtual_bytes = 0;
  double resident_bytes = 0;
};

std::optional<ProcStat> read_proc_stat() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  ProcStat stat;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  // The first field after ')' is field 3 (state).
  for (int index = 3; fields >> field; ++index) {
    switch (index) {
      case 14:
      case 15: stat.cpu_seconds += std::stod(field) / tick; break;
      case 22: stat.start_ticks = std::stod(field); break;
      case 23: stat.virtual_bytes = std::stod(field); break;
      case 24: stat.resident_bytes = std::stod(field) * page; return stat;
      default: break;
    }
  }
  return std::nullopt;
}

// Seconds since the epoch at boot, from /proc/stat's btime.
std::optional<double> boot_time() {
  std::ifstream in("/proc/stat");
  std::string key;
  while (in >> key) {
    if (key == "btime") {
      double value = 0;
      if (in >> value) return value;
      return std::nullopt;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

double open_fds() {
  std::error_code ec;
  double count = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++count;
  }
  return count;
}

}  // namespace

Status export_process_metrics(metrics::Registry& registry) {
  auto build = registry.gauge("omni_proxy_build_info",
                              "The running build: always 1, its identity in the labels.",
                              {"version", "commit", "build_type"});
  if (!build) return std::move(build).error();
  auto info = (*build)->with({version(), git_commit(), build_type()});
  if (!info) return std::move(info).error();
  (*info)->set(1);

  Status s = registry.counter_callback("process_cpu_seconds_total",
                                       "Total user and system CPU time spent in seconds.", {},
                                       [](metrics::Emitter& e) {
                                         if (auto stat = read_proc_stat())
                                           e.emit({}, stat->cpu_seconds);
                                       });
  if (!s) return s;
  s = registry.gauge_callback("process_resident_memory_bytes", "Resident memory size in bytes.", {},
                              [](metrics::Emitter& e) {
                                if (auto stat = read_proc_stat()) e.emit({}, stat->resident_bytes);
                              });
  if (!s) return s;
  s = registry.gauge_callback("process_virtual_memory_bytes", "Virtual memory size in bytes.", {},
                              [](metrics::Emitter& e) {
                                if (auto stat = read_proc_stat()) e.emit({}, stat->virtual_bytes);
                              });
  if (!s) return s;
  s = registry.gauge_callback("process_open_fds", "Number of open file descriptors.", {},
                              [](metrics::Emitter& e) { e.emit({}, open_fds()); });
  if (!s) return s;
  s = registry.gauge_callback(
      "process_max_fds", "Maximum number of open file descriptors.", {},
      [](metrics::Emitter& e) { e.emit({}, static_cast<double>(::sysconf(_SC_OPEN_MAX))); });
  if (!s) return s;
  // Constant for the process's life: computed once.
  std::optional<double> start;
  if (auto stat = read_proc_stat(); stat && boot_time()) {
    start = *boot_time() + stat->start_ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  return registry.gauge_callback("process_start_time_seconds",
                                 "Start time of the process since unix epoch in seconds.", {},
                                 [start](metrics::Emitter& e) {
                                   if (start) e.emit({}, *start);
                                 });
}

}  // namespace omni::proxy
