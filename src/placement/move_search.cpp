#include "move_search.hpp"

#include <algorithm>
#include <numeric>

namespace omni::placement::detail {

namespace {
// Relative margin below which a change does not count as an improvement (float noise).
constexpr double kMargin = 1e-9;
}  // namespace

void MoveSearch::index_copies(const LayerState& s) {
  const std::size_t slots = s.devices() * s.slots_per_device();
  copy_offsets_.assign(s.experts() + 1, 0);
  for (std::size_t i = 0; i < slots; ++i) ++copy_offsets_[static_cast<std::size_t>(s.at(i)) + 1];
  for (std::size_t e = 0; e < s.experts(); ++e) copy_offsets_[e + 1] += copy_offsets_[e];
  copy_slots_.resize(slots);
  touched_.assign(copy_offsets_.begin(), copy_offsets_.end() - 1);  // reused as fill cursors
  for (std::size_t i = 0; i < slots; ++i) {
    copy_slots_[touched_[static_cast<std::size_t>(s.at(i))]++] = static_cast<std::uint32_t>(i);
  }
  touched_.clear();
}

void MoveSearch::add_delta(std::size_t device, double delta) {
  if (stamp_[device] != epoch_) {
    stamp_[device] = epoch_;
    delta_[device] = 0.0;
    touched_.push_back(device);
  }
  delta_[device] += delta;
}

// The layer's max device load once the deltas of this epoch are applied.
double MoveSearch::max_after(const LayerState& s) {
  double result = 0.0;
  for (std::size_t d : touched_) result = std::max(result, s.load(d) + delta_[d]);
  for (std::size_t d : by_load_) {
    if (stamp_[d] != epoch_) {
      result = std::max(result, s.load(d));
      break;
    }
  }
  return result;
}

void MoveSearch::scan_swaps(const LayerState& s, std::size_t top) {
  const double top_load = s.load(top);
  for_each_load_lowering_swap(
      s, top, [&](std::size_t a, std::size_t b, std::size_t dev, double delta) {
        // Cheap bound first: the pair alone must beat the best so far.
        if (std::max(top_load - delta, s.load(dev) + delta) >= best_.new_max) return;
        ++epoch_;
        touched_.clear();
        add_delta(top, -delta);
        add_delta(dev, delta);
        const double after = max_after(s);
        if (after < best_.new_max - kMargin * top_load) {
          best_ = MoveCandidate{MoveKind::kSwap, a, b, 0, after};
          found_ = true;
        }
      });
}

// Overwrite `slot` (expert y, >= 2 copies) with a new copy of z.
void MoveSearch::scan_replace(const LayerState& s, std::size_t slot, ExpertId z) {
  const ExpertId y = s.at(slot);
  const std::size_t target = slot / s.slots_per_device();
  if (y == z || s.copies(y) < 2 || s.holds(target, z)) return;
  if (!s.node_aligned(s.copies(z) + 1) || !s.node_aligned(s.copies(y) - 1)) return;
  if (!s.fits_node(target, z, s.copies(z) + 1) || !s.fits_after_removal(target, y)) return;
  const auto zi = static_cast<std::size_t>(z);
  const auto yi = static_cast<std::size_t>(y);
  const double wz_old = s.per_copy(z);
  const double wz_new =
      wz_old * static_cast<double>(s.copies(z)) / static_cast<double>(s.copies(z) + 1);
  const double wy_old = s.per_copy(y);
  const double wy_new =
      wy_old * static_cast<double>(s.copies(y)) / static_cast<double>(s.copies(y) - 1);
  ++epoch_;
  touched_.clear();
  const std::size_t per = s.slots_per_device();
  for (std::uint32_t k = copy_offsets_[zi]; k < copy_offsets_[zi + 1]; ++k) {
    add_delta(copy_slots_[k] / per, wz_new - wz_old);
  }
  for (std::uint32_t k = copy_offsets_[yi]; k < copy_offsets_[yi + 1]; ++k) {
    if (copy_slots_[k] != slot) add_delta(copy_slots_[k] / per, wy_new - wy_old);
  }
  add_delta(target, wz_new - wy_old);
  const double after = max_after(s);
  const double top_load = s.load(by_load_.front());
  // A replace moves one weight, a swap two: on a tie in max load, prefer the replace.
  if (after < best_.new_max - kMargin * top_load ||
      (found_ && best_.kind == MoveKind::kSwap && after <= best_.new_max)) {
    best_ = MoveCandidate{MoveKind::kReplace, slot, 0, z, after};
    found_ = true;
  }
}

bool MoveSearch::best_move(const LayerState& s, MoveCandidate& out) {
  const std::size_t devices = s.devices();
  const std::size_t per = s.slots_per_device();
  by_load_.resize(devices);
  std::iota(by_load_.begin(), by_load_.end(), std::size_t{0});
  std::sort(by_load_.begin(), by_load_.end(), [&](std::size_t a, std::size_t b) {
    return s.load(a) != s.load(b) ? s.load(a) > s.load(b) : a < b;
  });
  delta_.resize(devices);
  stamp_.resize(devices, 0);
  index_copies(s);
  const std::size_t top = by_load_.front();
  found_ = false;
  best_ = MoveCandidate{};
  best_.new_max = s.load(top);
  scan_swaps(s, top);
  // Relieve the top device by spreading one of its experts onto a slot elsewhere...
  for (std::size_t i = 0; i < per; ++i) {
    const ExpertId z = s.at(top * per + i);
    for (std::size_t slot = 0; slot < devices * per; ++slot) {
      if (slot / per != top) scan_replace(s, slot, z);
    }
  }
  // ...or by giving up one of its own redundant copies for a copy of another expert.
  for (std::size_t i = 0; i < per; ++i) {
    for (std::size_t e = 0; e < s.experts(); ++e) {
      scan_replace(s, top * per + i, static_cast<ExpertId>(e));
    }
  }
  if (found_) out = best_;
  return found_;
}

}  // namespace omni::placement::detail
