#include "serve/ep.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "omni/log/log.hpp"
#include "omni/placement/balanced.hpp"
#include "omni/placement/io.hpp"
#include "omni/placement/routing.hpp"

namespace omni::serve {
namespace {

std::size_t uz(int v) { return static_cast<std::size_t>(v); }

// A matrix's rows (and FP8 block scales) copied into `bytes` / `scales`; the view points there.
model::Matrix copy_matrix(const model::Matrix& m, std::vector<std::byte>& bytes,
                          std::vector<float>& scales) {
  model::Matrix out = m;
  bytes.resize(uz(m.rows) * m.row_stride);
  std::memcpy(bytes.data(), m.data, bytes.size());
  out.data = bytes.data();
  if (m.dtype == model::DType::kF8E4M3 && m.scale_inv != nullptr) {
    const int first = m.row_offset / model::kFp8Block;
    const int last = (m.row_offset + m.rows - 1) / model::kFp8Block;
    const std::size_t n = uz(last - first + 1) * uz(m.scale_cols);
    scales.assign(m.scale_inv + uz(first) * uz(m.scale_cols),
                  m.scale_inv + uz(first) * uz(m.scale_cols) + n);
    out.scale_inv = scales.data();
    out.row_offset = m.row_offset - first * model::kFp8Block;
  }
  return out;
}

std::size_t weight_bytes(const SlotWeights& w) {
  return w.gate.size() + w.up.size() + w.down.size() +
         (w.gate_scale.size() + w.up_scale.size() + w.down_scale.size()) * sizeof(float);
}

}  // namespace

ExpertParallel::ExpertParallel(model::Engine& engine, const model::LoadedModel& model, int ranks,
                               bool live, EplbConfig config)
    : engine_(engine),
      model_(model),
      ranks_(ranks),
      live_(live),
      config_(config),
      smoother_(config.smoothing) {}

Result<std::unique_ptr<ExpertParallel>> ExpertParallel::create(
    model::Engine& engine, const model::LoadedModel& model, int ranks, bool live,
    const EplbConfig& config, const std::optional<std::string>& plan_file) {
  std::unique_ptr<ExpertParallel> ep(new ExpertParallel(engine, model, ranks, live, config));
  const model::ModelConfig& c = model.config;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    if (model.weights.layers[uz(l)].is_moe) ep->moe_layers_.push_back(l);
  }
  ep->experts_ = c.n_routed_experts;
  if (ep->moe_layers_.empty() || ep->experts_ < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--enable-expert-parallel: the model has no MoE layers");
  }
  if (ranks < 1 || ranks > model::ThreadPool::kMaxGroups) {
    return make_error(ErrorCode::kInvalidArgument, "--data-parallel-size: 1..64 expert ranks");
  }
  const std::size_t layers = ep->moe_layers_.size();
  const auto E = static_cast<std::size_t>(ep->experts_);
  ep->topology_.nodes = 1;
  ep->topology_.devices = static_cast<std::size_t>(ranks);
  ep->topology_.slots_per_device =
      (E + config.num_redundant_experts + static_cast<std::size_t>(ranks) - 1) /
      static_cast<std::size_t>(ranks);
  placement::Placement plan;
  if (plan_file) {
    auto text = placement::read_file(*plan_file);
    if (!text) return std::move(text).error();
    auto parsed = placement::placement_from_json(*text);
    if (!parsed) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--expert-placement " + *plan_file + ": " + parsed.error().message);
    }
    if (parsed->devices != static_cast<std::size_t>(ranks) || parsed->experts != E ||
        parsed->layers.size() != layers) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--expert-placement " + *plan_file + ": a plan for " +
                            std::to_string(parsed->layers.size()) + " layers of " +
                            std::to_string(parsed->experts) + " experts on " +
                            std::to_string(parsed->devices) + " devices; the model has " +
                            std::to_string(layers) + " MoE layers of " + std::to_string(E) +
                            " experts and --data-parallel-size is " + std::to_string(ranks));
    }
    plan = std::move(*parsed);
  } else {
    auto loads = placement::LoadMatrix::make(layers, E, std::vector<double>(layers * E, 1.0));
    if (!loads) return std::move(loads).error();
    auto uniform = placement::plan_uniform(*loads, ep->topology_);
    if (!uniform) return std::move(uniform).error();
    plan = std::move(*uniform);
  }
  ep->slots_.resize(layers);
  ep->window_expert_.assign(layers * E, 0.0);
  if (auto st = ep->install(std::move(plan)); !st) return std::move(st).error();
  return ep;
}

std::shared_ptr<SlotWeights> ExpertParallel::copy_of(int moe_layer, int expert, int /*rank*/) {
  const model::MlpWeights& src =
      model_.weights.layers[uz(moe_layers_[uz(moe_layer)])].moe.experts[uz(expert)];
  auto w = std::make_shared<SlotWeights>();
  w->view.gate = copy_matrix(src.gate, w->gate, w->gate_scale);
  w->view.up = copy_matrix(src.up, w->up, w->up_scale);
  w->view.down = copy_matrix(src.down, w->down, w->down_scale);
  return w;
}

// Builds the slots' weights (reusing the copies of slots that did not change, the new ones
// written by their rank's own workers) and switches the engine to the new map.
Status ExpertParallel::install(placement::Placement plan) {
  const std::size_t layers = moe_layers_.size();
  std::vector<std::vector<std::shared_ptr<SlotWeights>>> next(layers);
  struct Fill {
    int layer, slot, expert, rank;
  };
  std::vector<std::vector<Fill>> by_rank(uz(ranks_));
  for (std::size_t l = 0; l < layers; ++l) {
    const placement::LayerPlacement& lp = plan.layers[l];
    next[l].resize(lp.phy2log.size());
    for (std::size_t s = 0; s < lp.phy2log.size(); ++s) {
      const int expert = lp.phy2log[s];
      const int rank = static_cast<int>(lp.device_of_slot(s));
      const bool same = l < snap_.placement.layers.size() &&
                        s < snap_.placement.layers[l].phy2log.size() &&
                        snap_.placement.layers[l].slots_per_device == lp.slots_per_device &&
                        snap_.placement.layers[l].phy2log[s] == expert && s < slots_[l].size();
      if (same) {
        next[l][s] = slots_[l][s];
      } else {
        by_rank[uz(rank)].push_back({static_cast<int>(l), static_cast<int>(s), expert, rank});
      }
    }
  }
  // The copies, on each rank's own workers (first touch puts the pages near them).
  std::vector<int> begin(uz(ranks_) + 1, 0);
  std::vector<Fill> fills;
  for (int r = 0; r < ranks_; ++r) {
    fills.insert(fills.end(), by_rank[uz(r)].begin(), by_rank[uz(r)].end());
    begin[uz(r) + 1] = static_cast<int>(fills.size());
  }
  std::size_t bytes = 0;
  std::vector<std::shared_ptr<SlotWeights>> made(fills.size());
  engine_.pool().parallel_for_groups(std::span<const int>(begin), [&](int t, int) {
    const Fill& f = fills[uz(t)];
    made[uz(t)] = copy_of(f.layer, f.expert, f.rank);
  });
  for (std::size_t i = 0; i < fills.size(); ++i) {
    next[uz(fills[i].layer)][uz(fills[i].slot)] = made[i];
    bytes += weight_bytes(*made[i]);
  }
  auto map = std::make_shared<model::ExpertMap>();
  map->ranks = ranks_;
  map->experts = experts_;
  for (std::size_t l = 0; l < layers; ++l) {
    const placement::LayerPlacement& lp = plan.layers[l];
    model::LayerExpertMap lm;
    for (std::size_t s = 0; s < lp.phy2log.size(); ++s) {
      lm.slots.push_back({static_cast<int>(lp.device_of_slot(s)), lp.phy2log[s], next[l][s]->view});
    }
    const placement::LayerRouting routing = placement::LayerRouting::build(
        lp, topology_, uz(experts_), placement::RoutingPolicy::kLocalityFirst);
    lm.offsets.push_back(0);
    for (int src = 0; src < ranks_; ++src) {
      for (int e = 0; e < experts_; ++e) {
        for (const std::uint32_t t : routing.targets(uz(src), uz(e))) lm.targets.push_back(t);
        lm.offsets.push_back(static_cast<std::uint32_t>(lm.targets.size()));
      }
    }
    map->layers.push_back(std::move(lm));
  }
  if (auto st = engine_.set_expert_map(map); !st) return st;
  map_ = std::move(map);
  slots_ = std::move(next);  // the old copies are freed here (the engine no longer uses them)
  std::lock_guard lock(mu_);
  snap_.ranks = ranks_;
  snap_.experts = experts_;
  snap_.placement = std::move(plan);
  snap_.bytes_moved += bytes;
  return ok_status();
}

void ExpertParallel::request_rebalance() {
  std::lock_guard lock(mu_);
  rebalance_requested_ = true;
}

void ExpertParallel::between_steps() {
  const model::ExpertCounters& c = engine_.expert_counters();
  const std::size_t layers = moe_layers_.size();
  const auto E = uz(experts_);
  std::vector<std::vector<double>> rank_loads(layers, std::vector<double>(uz(ranks_), 0.0));
  {
    std::lock_guard lock(mu_);
    if (snap_.total_expert_tokens.empty()) {
      snap_.total_expert_tokens.assign(layers, std::vector<std::uint64_t>(E, 0));
      snap_.total_rank_tokens.assign(layers, std::vector<std::uint64_t>(uz(ranks_), 0));
    }
    for (std::size_t l = 0; l < layers && l * E < c.expert_tokens.size(); ++l) {
      for (std::size_t e = 0; e < E; ++e) {
        const std::uint64_t v = c.expert_tokens[l * E + e];
        window_expert_[l * E + e] += static_cast<double>(v);
        snap_.total_expert_tokens[l][e] += v;
      }
    }
    if (c.slots > 0) {
      window_slot_.resize(layers * uz(c.slots), 0.0);
      for (std::size_t l = 0; l < layers; ++l) {
        const placement::LayerPlacement& lp = snap_.placement.layers[l];
        for (std::size_t s = 0; s < lp.phy2log.size() && s < uz(c.slots); ++s) {
          const std::uint64_t v = c.slot_tokens[l * uz(c.slots) + s];
          window_slot_[l * uz(c.slots) + s] += static_cast<double>(v);
          snap_.total_rank_tokens[l][lp.device_of_slot(s)] += v;
        }
      }
    }
    snap_.moe_seconds += c.moe_seconds;
  }
  const std::uint64_t steps = c.steps;
  engine_.reset_expert_counters();
  if (steps == 0) return;
  ++window_steps_;
  ++since_rebalance_;
  bool requested = false;
  {
    std::lock_guard lock(mu_);
    requested = rebalance_requested_;
  }
  if (window_steps_ < config_.window_size && !requested) return;
  // The window is full: rank loads and imbalance per layer, the smoothed expert loads.
  double worst = 1.0;
  std::vector<double> imbalance(layers, 1.0);
  const std::size_t slots = window_slot_.size() / std::max<std::size_t>(layers, 1);
  for (std::size_t l = 0; l < layers; ++l) {
    const placement::LayerPlacement& lp = snap_.placement.layers[l];
    for (std::size_t s = 0; s < lp.phy2log.size() && s < slots; ++s) {
      rank_loads[l][lp.device_of_slot(s)] += window_slot_[l * slots + s];
    }
    double sum = 0.0, top = 0.0;
    for (const double v : rank_loads[l]) {
      sum += v;
      top = std::max(top, v);
    }
    if (sum > 0) imbalance[l] = top / (sum / static_cast<double>(ranks_));
    worst = std::max(worst, imbalance[l]);
  }
  auto loads = placement::LoadMatrix::make(layers, E, window_expert_);
  if (loads) (void)smoother_.update(*loads);
  {
    std::lock_guard lock(mu_);
    snap_.window_expert_loads.assign(layers, std::vector<double>(E, 0.0));
    for (std::size_t l = 0; l < layers; ++l) {
      for (std::size_t e = 0; e < E; ++e)
        snap_.window_expert_loads[l][e] = window_expert_[l * E + e];
    }
    snap_.window_rank_loads = rank_loads;
    snap_.imbalance = imbalance;
  }
  if (config_.log_balancedness) {
    log::get("serve")->info("expert parallelism: max/mean rank load {:.3f} over the last {} steps",
                            worst, window_steps_);
  }
  std::fill(window_expert_.begin(), window_expert_.end(), 0.0);
  std::fill(window_slot_.begin(), window_slot_.end(), 0.0);
  window_steps_ = 0;
  const bool due = config_.step_interval > 0 && since_rebalance_ >= config_.step_interval;
  if (requested || (live_ && (due || worst > config_.imbalance_threshold))) {
    {
      std::lock_guard lock(mu_);
      rebalance_requested_ = false;
    }
    rebalance();
  }
}

void ExpertParallel::rebalance() {
  since_rebalance_ = 0;
  if (!smoother_.has_value()) return;
  const auto t0 = std::chrono::steady_clock::now();
  placement::RebalanceOptions options;
  options.max_moves = config_.max_moves;
  options.target_ratio = 1.05;
  placement::Placement current;
  {
    std::lock_guard lock(mu_);
    current = snap_.placement;
  }
  auto plan = placement::rebalance(current, smoother_.smoothed(), topology_, options);
  if (!plan || plan->moves.empty()) return;
  placement::Placement next = current;
  placement::apply_moves(next, plan->moves);
  if (Status st = install(std::move(next)); !st) {
    log::get("serve")->warn("expert rebalance not applied: {}", st.error().message);
    return;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard lock(mu_);
  ++snap_.rebalances;
  snap_.moves += plan->moves.size();
  snap_.weights_moved += plan->weights_moved;
  snap_.last_move_seconds = seconds;
  log::get("serve")->info("expert rebalance: {} moves ({} weight copies) in {:.2f} ms",
                          plan->moves.size(), plan->weights_moved, seconds * 1e3);
}

EpSnapshot ExpertParallel::snapshot() const {
  std::lock_guard lock(mu_);
  return snap_;
}

}  // namespace omni::serve
