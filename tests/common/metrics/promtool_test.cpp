// Feeds a rich exposition to the real Prometheus parser and linter (`promtool check metrics`).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "omni/metrics/metrics.hpp"

namespace omni::metrics {
namespace {

constexpr const char* kPromtool = "/usr/bin/promtool";

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) result.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

void fill_rich_registry(Registry& registry) {
  const double inf = std::numeric_limits<double>::infinity();
  auto requests =
      registry.counter("omni_test_requests_total",
                       "Requests with \\ backslash and\nnewline in help", {"method", "path"});
  ASSERT_TRUE(requests.ok());
  requests.value()->with({"GET", "/v1/\"quoted\"\nline\\slash"}).value()->inc(3);
  requests.value()->with({"POST", "/v1/chat/completions"}).value()->inc(1e20);
  requests.value()->with({"PUT", "ünïcödé ✓"}).value()->inc(0.125);

  auto temperature = registry.gauge("omni_test_temperature_celsius", "A gauge", {"sensor"});
  ASSERT_TRUE(temperature.ok());
  temperature.value()->with({"nan"}).value()->set(std::numeric_limits<double>::quiet_NaN());
  temperature.value()->with({"plus_inf"}).value()->set(inf);
  temperature.value()->with({"minus_inf"}).value()->set(-inf);
  temperature.value()->with({"tiny"}).value()->set(-1.5e-300);
  ASSERT_TRUE(registry.gauge("omni_test_ready", "Unlabelled gauge").ok());

  auto latency = registry.histogram("omni_test_latency_seconds", "Latency", {"route"},
                                    default_latency_buckets());
  ASSERT_TRUE(latency.ok());
  Histogram* chat = latency.value()->with({"chat"}).value();
  for (double v : {0.0005, 0.001, 0.3, 7.0, 100.0}) chat->observe(v);
  ASSERT_TRUE(latency.value()->with({"empty"}).ok());

  ASSERT_TRUE(registry
                  .counter_callback("omni_test_connections_total", "From a callback", {"state"},
                                    [](Emitter& e) {
                                      e.emit({"accepted"}, 10);
                                      e.emit({"rejected"}, 0);
                                    })
                  .ok());
}

TEST(Promtool, AcceptsOurExposition) {
  ASSERT_EQ(::access(kPromtool, X_OK), 0)
      << kPromtool << " is missing: run scripts/install-deps.sh (Debian package 'prometheus')";

  Registry registry;
  fill_rich_registry(registry);
  const std::string text = registry.expose();

  const auto path = std::filesystem::temp_directory_path() /
                    ("omni_promtool_" + std::to_string(::getpid()) + ".prom");
  {
    std::ofstream file(path, std::ios::binary);
    file << text;
    ASSERT_TRUE(file.good());
  }
  const CommandResult result =
      run_command(std::string(kPromtool) + " check metrics < '" + path.string() + "' 2>&1");
  std::filesystem::remove(path);

  EXPECT_EQ(result.exit_code, 0) << result.output << "\n--- input ---\n" << text;
  EXPECT_EQ(result.output, "") << "--- input ---\n" << text;
}

}  // namespace
}  // namespace omni::metrics
