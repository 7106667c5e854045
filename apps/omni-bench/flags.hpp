// omni-bench's command line: its own flags and `vllm bench serve`'s spellings with vLLM's
// meaning (docs/omni-bench.md, "For vllm bench serve users").
#pragma once

#include <CLI/CLI.hpp>

#include "options.hpp"

namespace omni::bench {

void add_run_flags(CLI::App& app, Flags& flags);

}  // namespace omni::bench
