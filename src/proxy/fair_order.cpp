#include "omni/proxy/fair_order.hpp"

#include <algorithm>
#include <queue>
#include <span>
#include <tuple>

namespace omni::proxy {
namespace {

// Above this many remembered tenants a band forgets those whose tag lies behind its virtual
// time: their next start tag is the virtual time anyway, so nothing is lost.
constexpr std::size_t kPruneAbove = 1024;

// One group of a merge: its items are seq[begin, end), already in their own order.
struct Run {
  std::uint32_t key = 0;
  double weight = 1.0;
  std::size_t begin = 0;
  std::size_t end = 0;
};

}  // namespace

void FairOrder::configure(const TrafficOptions& options) {
  band_order_ = options.order;
  band_weights_.clear();
  for (const BandSpec& band : options.bands) band_weights_.push_back(std::max(band.weight, 1e-9));
}

double FairOrder::start_tag(double virtual_time, const std::unordered_map<std::uint32_t, double>& f,
                            std::uint32_t key) {
  auto it = f.find(key);
  return it == f.end() ? virtual_time : std::max(virtual_time, it->second);
}

namespace {

// SFQ between runs: always the run whose next item has the smallest start tag (ties: the
// run listed first), its finish tag then advancing by the item's cost over the run's weight.
void sfq_merge(std::span<const Run> runs, std::span<const std::size_t> seq,
               std::span<const FairOrder::Entry> entries, double virtual_time,
               const std::unordered_map<std::uint32_t, double>& finish,
               std::vector<std::size_t>& out) {
  if (runs.size() == 1) {
    out.insert(out.end(), seq.begin() + static_cast<std::ptrdiff_t>(runs[0].begin),
               seq.begin() + static_cast<std::ptrdiff_t>(runs[0].end));
    return;
  }
  using Head = std::tuple<double, std::size_t>;  // start tag, run position
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
  std::vector<std::size_t> next(runs.size());
  for (std::size_t r = 0; r < runs.size(); ++r) {
    next[r] = runs[r].begin;
    heads.emplace(FairOrder::start_tag(virtual_time, finish, runs[r].key), r);
  }
  while (!heads.empty()) {
    const auto [start, r] = heads.top();
    heads.pop();
    const std::size_t position = seq[next[r]++];
    out.push_back(position);
    if (next[r] < runs[r].end) heads.emplace(start + entries[position].cost / runs[r].weight, r);
  }
}

}  // namespace

void FairOrder::order(std::vector<Entry>& entries, std::vector<std::size_t>& out) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.band, a.tenant, a.score, a.index) <
           std::tie(b.band, b.tenant, b.score, b.index);
  });
  if (!entries.empty() && bands_.size() <= entries.back().band)
    bands_.resize(entries.back().band + 1u);

  // Each band's tickets, tenants merged by SFQ; positions into `entries`.
  merged_.clear();
  std::vector<Run> runs;
  std::vector<Run> band_runs;
  std::vector<std::size_t> seq(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) seq[i] = i;
  for (std::size_t begin = 0; begin < entries.size();) {
    const std::uint8_t band = entries[begin].band;
    std::size_t end = begin;
    runs.clear();
    while (end < entries.size() && entries[end].band == band) {
      const std::uint32_t tenant = entries[end].tenant;
      Run run{tenant, std::max(entries[end].weight, 1e-9), end, end};
      while (end < entries.size() && entries[end].band == band && entries[end].tenant == tenant) {
        ++end;
      }
      run.end = end;
      runs.push_back(run);
    }
    const std::size_t band_begin = merged_.size();
    sfq_merge(runs, seq, entries, bands_[band].virtual_time, bands_[band].finish, merged_);
    const double weight = band < band_weights_.size() ? band_weights_[band] : 1.0;
    band_runs.push_back({band, weight, band_begin, merged_.size()});
    begin = end;
  }

  out.clear();
  if (band_order_ == BandOrder::kWeighted && band_runs.size() > 1) {
    std::vector<std::size_t> positions;
    sfq_merge(band_runs, merged_, entries, between_bands_.virtual_time, between_bands_.finish,
              positions);
    for (std::size_t position : positions) out.push_back(entries[position].index);
  } else {
    for (std::size_t position : merged_) out.push_back(entries[position].index);
  }
}

void FairOrder::placed(const Entry& entry) {
  if (bands_.size() <= entry.band) bands_.resize(entry.band + 1u);
  auto advance = [&entry](Tags& tags, std::uint32_t key, double weight) {
    const double start = start_tag(tags.virtual_time, tags.finish, key);
    tags.finish[key] = start + entry.cost / std::max(weight, 1e-9);
    tags.virtual_time = std::max(tags.virtual_time, start);
  };
  Tags& band = bands_[entry.band];
  advance(band, entry.tenant, entry.weight);
  prune(band);
  if (band_order_ == BandOrder::kWeighted) {
    advance(between_bands_, entry.band,
            entry.band < band_weights_.size() ? band_weights_[entry.band] : 1.0);
  }
}

void FairOrder::prune(Tags& tags) {
  if (tags.finish.size() <= kPruneAbove) return;
  std::erase_if(tags.finish, [&](const auto& item) { return item.second <= tags.virtual_time; });
}

}  // namespace omni::proxy
