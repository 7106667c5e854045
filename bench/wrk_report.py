"""Reading wrk's text output (with --latency), shared by the benchmark scripts."""
import re

UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def parse(path):
    """Requests/s, mean/p50/p99 latency in ms (p50/p99 need --latency) and non-2xx count."""
    text = open(path).read()
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))}
    m = re.search(r"Latency\s+([\d.]+)(us|ms|s)", text)
    if m:
        result["mean_ms"] = float(m.group(1)) * UNIT_MS[m.group(2)]
    for pct in ("50", "99"):
        m = re.search(r"^\s+%s%%\s+([\d.]+)(us|ms|s)\s*$" % pct, text, re.M)
        if m:
            result[f"p{pct}_ms"] = float(m.group(1)) * UNIT_MS[m.group(2)]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    result["non_2xx"] = int(errors.group(1)) if errors else 0
    return result
