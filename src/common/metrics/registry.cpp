// Registration rules and the exposition of a whole registry.
#include <algorithm>
#include <cmath>

#include "omni/metrics/metrics.hpp"
#include "text_format.hpp"

namespace omni::metrics {
namespace {

constexpr std::string_view kHistogramSuffixes[] = {"_bucket", "_sum", "_count"};

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

Status check_label_names(std::string_view name, MetricType type,
                         const std::vector<std::string>& label_names) {
  for (std::size_t i = 0; i < label_names.size(); ++i) {
    const std::string& label = label_names[i];
    if (!text::is_valid_label_name(label)) {
      return invalid(std::string(name) + ": invalid label name '" + label + "'");
    }
    if (type == MetricType::kHistogram && label == "le") {
      return invalid(std::string(name) + ": label 'le' is reserved for histogram buckets");
    }
    if (std::find(label_names.begin(), label_names.begin() + static_cast<std::ptrdiff_t>(i),
                  label) != label_names.begin() + static_cast<std::ptrdiff_t>(i)) {
      return invalid(std::string(name) + ": label '" + label + "' repeated");
    }
  }
  return ok_status();
}

Status check_definition(std::string_view name, MetricType type,
                        const std::vector<std::string>& label_names) {
  if (!text::is_valid_metric_name(name)) {
    return invalid("invalid metric name '" + std::string(name) + "'");
  }
  return check_label_names(name, type, label_names);
}

// Strictly increasing finite bounds; a trailing +Inf is implied anyway, so it is dropped.
Status normalise_bounds(std::string_view name, std::vector<double>& bounds) {
  if (!bounds.empty() && bounds.back() == HUGE_VAL) bounds.pop_back();
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      return invalid(std::string(name) + ": bucket bounds must be finite");
    }
    if (i > 0 && !(bounds[i] > bounds[i - 1])) {
      return invalid(std::string(name) + ": bucket bounds must be strictly increasing");
    }
  }
  return ok_status();
}

// Samples come from a function at scrape time; sorted so the output is deterministic.
class CallbackFamily final : public FamilyBase {
 public:
  CallbackFamily(std::string name, std::string help, MetricType type,
                 std::vector<std::string> label_names, CollectFn collect)
      : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)),
        collect_(std::move(collect)) {}

  void append_samples(std::string& out) const override {
    Emitter emitter(label_names().size());
    collect_(emitter);
    auto& samples = emitter.samples();
    std::stable_sort(samples.begin(), samples.end(),
                     [](const auto& a, const auto& b) { return a.label_values < b.label_values; });
    for (const auto& sample : samples) {
      text::append_sample(out, name(), "", label_names(), sample.label_values, sample.value);
    }
  }

 private:
  CollectFn collect_;
};

}  // namespace

Registry::~Registry() = default;

Status Registry::check_name_free(std::string_view name, MetricType type) const {
  for (std::string_view suffix : kHistogramSuffixes) {
    if (name.ends_with(suffix)) {
      auto base = families_.find(name.substr(0, name.size() - suffix.size()));
      if (base != families_.end() && base->second->type() == MetricType::kHistogram) {
        return invalid(std::string(name) + ": clashes with histogram '" + base->first + "'");
      }
    }
    if (type == MetricType::kHistogram) {
      std::string series = std::string(name) + std::string(suffix);
      if (families_.count(series) != 0) {
        return invalid(std::string(name) + ": histogram series clashes with '" + series + "'");
      }
    }
  }
  return ok_status();
}

template <class Metric>
Result<Family<Metric>*> Registry::add_family(std::string_view name, std::string_view help,
                                             MetricType type, std::vector<std::string> label_names,
                                             std::vector<double> bounds) {
  if (Status s = check_definition(name, type, label_names); !s) return std::move(s).error();
  std::lock_guard lock(mu_);
  if (auto it = families_.find(name); it != families_.end()) {
    auto* existing = dynamic_cast<Family<Metric>*>(it->second.get());
    if (existing == nullptr || existing->type() != type || existing->help() != help ||
        existing->label_names() != label_names || existing->bounds() != bounds) {
      return invalid(std::string(name) + ": already registered with a different definition");
    }
    return existing;
  }
  if (Status s = check_name_free(name, type); !s) return std::move(s).error();
  auto* family = new Family<Metric>(std::string(name), std::string(help), type,
                                    std::move(label_names), std::move(bounds));
  families_.emplace(std::string(name), std::unique_ptr<FamilyBase>(family));
  return family;
}

Result<CounterFamily*> Registry::counter(std::string_view name, std::string_view help,
                                         std::vector<std::string> label_names) {
  return add_family<Counter>(name, help, MetricType::kCounter, std::move(label_names), {});
}

Result<GaugeFamily*> Registry::gauge(std::string_view name, std::string_view help,
                                     std::vector<std::string> label_names) {
  return add_family<Gauge>(name, help, MetricType::kGauge, std::move(label_names), {});
}

Result<HistogramFamily*> Registry::histogram(std::string_view name, std::string_view help,
                                             std::vector<std::string> label_names,
                                             std::vector<double> bounds) {
  if (Status s = normalise_bounds(name, bounds); !s) return std::move(s).error();
  return add_family<Histogram>(name, help, MetricType::kHistogram, std::move(label_names),
                               std::move(bounds));
}

Status Registry::add_callback(std::string_view name, std::string_view help, MetricType type,
                              std::vector<std::string> label_names, CollectFn collect) {
  if (Status s = check_definition(name, type, label_names); !s) return s;
  if (!collect) return invalid(std::string(name) + ": empty collect function");
  std::lock_guard lock(mu_);
  if (families_.count(name) != 0) {
    return invalid(std::string(name) + ": already registered");
  }
  if (Status s = check_name_free(name, type); !s) return s;
  families_.emplace(std::string(name),
                    std::make_unique<CallbackFamily>(std::string(name), std::string(help), type,
                                                     std::move(label_names), std::move(collect)));
  return ok_status();
}

Status Registry::counter_callback(std::string_view name, std::string_view help,
                                  std::vector<std::string> label_names, CollectFn collect) {
  return add_callback(name, help, MetricType::kCounter, std::move(label_names), std::move(collect));
}

Status Registry::gauge_callback(std::string_view name, std::string_view help,
                                std::vector<std::string> label_names, CollectFn collect) {
  return add_callback(name, help, MetricType::kGauge, std::move(label_names), std::move(collect));
}

std::string Registry::expose() const {
  std::string out;
  expose_to(out);
  return out;
}

void Registry::expose_to(std::string& out) const {
  std::vector<const FamilyBase*> families;
  {
    // Families are never removed, so the pointers outlive the lock; callbacks then run
    // unlocked and may touch the registry themselves.
    std::lock_guard lock(mu_);
    families.reserve(families_.size());
    for (const auto& entry : families_) families.push_back(entry.second.get());
  }
  std::string samples;
  for (const FamilyBase* family : families) {
    samples.clear();
    family->append_samples(samples);
    if (samples.empty()) continue;  // nothing to say yet: no HELP/TYPE either
    out += "# HELP ";
    out += family->name();
    out += ' ';
    text::append_help(out, family->help());
    out += "\n# TYPE ";
    out += family->name();
    out += ' ';
    out += metric_type_name(family->type());
    out += '\n';
    out += samples;
  }
}

}  // namespace omni::metrics
