// omni-engine-bench: simulates `instances` engine instances serving `requests` requests from one
// event loop on one core, in virtual time, the way omni-cluster drives them. Each instance gets
// its own Poisson arrival stream; prompts and output lengths are drawn from a seeded generator.
//
//   omni-engine-bench [--instances N] [--requests R] [--rate REQ_PER_S_PER_INSTANCE]
//                     [--mtp DRAFTS] [--no-fast-path] [--seed S]
//
// Prints one JSON object: wall seconds, simulated requests and steps per wall second, virtual
// time, and a checksum of every request's finish time and output length (equal with and
// without the fast path).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "omni/common/random.hpp"
#include "omni/engine/engine.hpp"

namespace {

using omni::engine::Engine;

struct Options {
  std::uint32_t instances = 1000;
  std::uint64_t requests = 1'000'000;
  double rate = 8.0;  // requests per second per instance
  std::uint32_t mtp = 0;
  bool fast_path = true;
  std::uint64_t seed = 1;
};

struct Instance {
  explicit Instance(Engine engine, std::uint64_t seed) : e(std::move(engine)), rng(seed) {}
  Engine e;
  omni::SeededRandom rng;
  double next_arrival = 0;
  std::uint64_t arrivals_left = 0;
  double busy_until = 0;
  bool busy = false;
  bool plan_pending = false;
  omni::engine::StepPlan plan;
};

struct Totals {
  std::uint64_t finished = 0, steps = 0, stable_steps = 0, output_tokens = 0;
  double checksum = 0, virtual_end = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string("0"); };
    if (a == "--instances")
      o.instances = static_cast<std::uint32_t>(std::stoul(next()));
    else if (a == "--requests")
      o.requests = std::stoull(next());
    else if (a == "--rate")
      o.rate = std::stod(next());
    else if (a == "--mtp")
      o.mtp = static_cast<std::uint32_t>(std::stoul(next()));
    else if (a == "--no-fast-path")
      o.fast_path = false;
    else if (a == "--seed")
      o.seed = std::stoull(next());
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

omni::engine::CostModel cost_model(std::uint32_t mtp) {
  auto model = omni::engine::builtin_model_profile("deepseek-v3");
  auto hw = omni::engine::builtin_hardware_profile("h200");
  if (!model || !hw) std::abort();
  return omni::engine::CostModel(model.value(), hw.value(), {1, 8, true}, {mtp, 0.85});
}

void add_arrival(Instance& in, omni::engine::SeqId id, double rate) {
  omni::engine::SeqSpec s;
  s.id = id;
  s.prompt_tokens = static_cast<std::uint32_t>(in.rng.uniform_int(128, 2048));
  s.max_output_tokens = static_cast<std::uint32_t>(in.rng.uniform_int(16, 512));
  const std::uint64_t base = in.rng.next_u64();
  for (std::uint32_t b = 0; b < s.prompt_tokens / 16; ++b) s.block_hashes.push_back(base + b);
  if (!in.e.add(std::move(s))) std::abort();
  --in.arrivals_left;
  in.next_arrival += in.rng.exponential(rate);
}

void record(const omni::engine::StepOutputs& out, double t, Totals& totals) {
  for (const auto& o : out.outputs) {
    totals.output_tokens += o.new_tokens;
    if (o.finish == omni::engine::FinishReason::kNone) continue;
    ++totals.finished;
    totals.checksum += t * 1e-3 + o.total_output_tokens;
  }
}

// Advances instance `in` to time `t`; returns the time of its next event (or infinity).
double process(Instance& in, double t, const Options& opt, std::uint64_t& next_id, Totals& totals) {
  if (in.busy && t >= in.busy_until) {
    if (in.plan_pending) record(in.e.complete(in.plan), t, totals);
    in.busy = in.plan_pending = false;
  }
  while (in.arrivals_left > 0 && in.next_arrival <= t) add_arrival(in, next_id++, opt.rate);
  if (!in.busy && in.e.has_work()) {
    const double horizon = in.arrivals_left > 0 ? in.next_arrival - t : 1e300;
    const Engine::Stable run =
        opt.fast_path ? in.e.stable_decode_run(1u << 20, horizon) : Engine::Stable{};
    if (run.steps > 0) {
      in.busy_until = t + run.seconds;
      record(in.e.advance_stable(run.steps), in.busy_until, totals);
      totals.steps += run.steps;
      totals.stable_steps += run.steps;
    } else {
      in.plan = in.e.schedule();
      in.busy_until = t + in.e.step_seconds(in.plan);
      in.plan_pending = true;
      ++totals.steps;
    }
    in.busy = true;
  }
  totals.virtual_end = std::max(totals.virtual_end, t);
  const double arrival = in.arrivals_left > 0 ? in.next_arrival : 1e300;
  return in.busy ? std::min(in.busy_until, arrival) : arrival;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  omni::engine::EngineConfig config;
  config.max_num_seqs = 256;
  config.max_num_batched_tokens = 8192;
  std::vector<Instance> instances;
  instances.reserve(opt.instances);
  omni::SeededRandom seeds(opt.seed);
  for (std::uint32_t i = 0; i < opt.instances; ++i) {
    instances.emplace_back(Engine(config, cost_model(opt.mtp), seeds.next_u64()), seeds.next_u64());
    Instance& in = instances.back();
    in.arrivals_left = opt.requests / opt.instances + (i < opt.requests % opt.instances ? 1 : 0);
    in.next_arrival = in.rng.exponential(opt.rate);
  }
  // Events ordered by (time, instance): a total order, so runs are reproducible.
  using Event = std::pair<double, std::uint32_t>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  for (std::uint32_t i = 0; i < opt.instances; ++i) events.emplace(instances[i].next_arrival, i);
  Totals totals;
  std::uint64_t next_id = 1;
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  while (!events.empty()) {
    const auto [t, i] = events.top();
    events.pop();
    const double next = process(instances[i], t, opt, next_id, totals);
    if (next < 1e299) events.emplace(next, i);
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // CPU time of this process: the shared machine's other load does not count against it.
  const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  std::printf(
      "{\"instances\": %u, \"requests\": %llu, \"fast_path\": %s, \"mtp\": %u, "
      "\"wall_s\": %.3f, \"cpu_s\": %.3f, \"requests_per_cpu_s\": %.0f, \"steps\": %llu, "
      "\"stable_steps\": %llu, \"steps_per_cpu_s\": %.0f, \"virtual_s\": %.3f, \"finished\": %llu, "
      "\"output_tokens\": %llu, \"checksum\": %.6f}\n",
      opt.instances, static_cast<unsigned long long>(opt.requests),
      opt.fast_path ? "true" : "false", opt.mtp, wall, cpu,
      static_cast<double>(totals.finished) / cpu, static_cast<unsigned long long>(totals.steps),
      static_cast<unsigned long long>(totals.stable_steps), static_cast<double>(totals.steps) / cpu,
      totals.virtual_end, static_cast<unsigned long long>(totals.finished),
      static_cast<unsigned long long>(totals.output_tokens), totals.checksum);
  return totals.finished == opt.requests ? 0 : 1;
}
