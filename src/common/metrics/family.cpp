// Families: children keyed by label values, and their samples in the text format.
#include <type_traits>

#include "omni/metrics/metrics.hpp"
#include "text_format.hpp"

namespace omni::metrics {
namespace {

Error wrong_label_count(const FamilyBase& family, std::size_t given) {
  return make_error(ErrorCode::kInvalidArgument, family.name() + ": expected " +
                                                     std::to_string(family.label_names().size()) +
                                                     " label values, got " + std::to_string(given));
}

std::string format_bound(double bound) {
  std::string out;
  text::append_value(out, bound);
  return out;
}

void append_child(std::string& out, const FamilyBase& family, std::span<const std::string> values,
                  const Counter& counter) {
  text::append_sample(out, family.name(), "", family.label_names(), values, counter.value());
}

void append_child(std::string& out, const FamilyBase& family, std::span<const std::string> values,
                  const Gauge& gauge) {
  text::append_sample(out, family.name(), "", family.label_names(), values, gauge.value());
}

void append_child(std::string& out, const FamilyBase& family, std::span<const std::string> values,
                  const Histogram& histogram) {
  const Histogram::Snapshot snap = histogram.snapshot();
  const auto& bounds = histogram.bounds();
  for (std::size_t b = 0; b < snap.cumulative.size(); ++b) {
    out += family.name();
    out += "_bucket";
    const std::string le = b < bounds.size() ? format_bound(bounds[b]) : "+Inf";
    text::append_labels(out, family.label_names(), values, le);
    out += ' ';
    text::append_value(out, snap.cumulative[b]);
    out += '\n';
  }
  text::append_sample(out, family.name(), "_sum", family.label_names(), values, snap.sum);
  out += family.name();
  out += "_count";
  text::append_labels(out, family.label_names(), values);
  out += ' ';
  text::append_value(out, snap.count);
  out += '\n';
}

}  // namespace

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)) {}

template <class Metric>
Family<Metric>::Family(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names, std::vector<double> bounds)
    : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)),
      bounds_(std::make_shared<const std::vector<double>>(std::move(bounds))) {
  // An unlabelled metric exists (at zero) from registration, so it is scraped before use.
  if (this->label_names().empty()) (void)child({});
}

template <class Metric>
Result<Metric*> Family<Metric>::with(std::initializer_list<std::string_view> label_values) {
  if (label_values.size() != label_names().size()) {
    return wrong_label_count(*this, label_values.size());
  }
  return child(std::vector<std::string>(label_values.begin(), label_values.end()));
}

template <class Metric>
Result<Metric*> Family<Metric>::with(std::span<const std::string> label_values) {
  if (label_values.size() != label_names().size()) {
    return wrong_label_count(*this, label_values.size());
  }
  return child(std::vector<std::string>(label_values.begin(), label_values.end()));
}

template <class Metric>
Result<Metric*> Family<Metric>::child(std::vector<std::string> key) {
  std::lock_guard lock(mu_);
  auto it = children_.find(key);
  if (it == children_.end()) {
    std::unique_ptr<Metric> metric;
    if constexpr (std::is_same_v<Metric, Histogram>) {
      metric = std::make_unique<Histogram>(bounds_);
    } else {
      metric = std::make_unique<Metric>();
    }
    it = children_.emplace(std::move(key), std::move(metric)).first;
  }
  return it->second.get();
}

template <class Metric>
void Family<Metric>::append_samples(std::string& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [values, metric] : children_) append_child(out, *this, values, *metric);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

void Emitter::emit(std::initializer_list<std::string_view> label_values, double value) {
  if (label_values.size() != label_count_) {
    ++dropped_;
    return;
  }
  samples_.push_back({std::vector<std::string>(label_values.begin(), label_values.end()), value});
}

void Emitter::emit(std::span<const std::string> label_values, double value) {
  if (label_values.size() != label_count_) {
    ++dropped_;
    return;
  }
  samples_.push_back({std::vector<std::string>(label_values.begin(), label_values.end()), value});
}

}  // namespace omni::metrics
