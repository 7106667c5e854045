// The process's own series, under the names every Prometheus client library uses
// (process_cpu_seconds_total, process_resident_memory_bytes, ...), and the build's identity as
// omni_proxy_build_info{version,commit,build_type} 1 — so that dashboards and alerts written
// for any exporter work, and a fleet's versions show in one query during an upgrade.
#pragma once

#include "omni/common/result.hpp"
#include "omni/metrics/metrics.hpp"

namespace omni::proxy {

// Read from /proc/self at every scrape (Linux); a value that cannot be read is left out.
Status export_process_metrics(metrics::Registry& registry);

}  // namespace omni::proxy
