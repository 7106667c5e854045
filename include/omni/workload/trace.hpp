// Trace readers: Mooncake JSON lines and the Azure LLM inference CSV, read lazily.
//
// The line parsers are pure functions over untrusted text (fuzzed in fuzz/trace_parsers);
// the readers pull one line at a time from a stream they own or borrow, so a million-line
// trace costs one line of memory.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/workload/request_spec.hpp"

namespace omni::workload {

// Longest trace line accepted; a longer one is a kTooLarge error, never a huge allocation.
inline constexpr std::size_t kMaxTraceLineBytes = 4 * 1024 * 1024;
// Largest prompt or output length accepted from a trace (both fit comfortably in uint32).
inline constexpr std::uint64_t kMaxTraceTokens = 1u << 30;

// One Mooncake line: {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [..]}.
struct MooncakeRow {
  double timestamp_ms = 0.0;
  std::uint32_t input_length = 0;
  std::uint32_t output_length = 0;
  std::vector<std::uint64_t> hash_ids;
};
Result<MooncakeRow> parse_mooncake_line(std::string_view line);

// One Azure CSV data line: "2023-11-16 18:17:03.9799600,4808,10".
struct AzureRow {
  double timestamp_s = 0.0;  // seconds since 1970-01-01 (the trace's own time zone)
  std::uint32_t context_tokens = 0;
  std::uint32_t generated_tokens = 0;
};
Result<AzureRow> parse_azure_line(std::string_view line);
// "YYYY-MM-DD HH:MM:SS[.fraction]" (a 'T' also separates date and time) to seconds since 1970.
Result<double> parse_azure_timestamp(std::string_view text);

enum class TraceFormat { kMooncake, kAzure };
Result<TraceFormat> parse_trace_format(std::string_view name);  // "mooncake" | "azure"
// The format a trace's first non-blank line shows: a JSON object is Mooncake, the header
// "TIMESTAMP,ContextTokens,GeneratedTokens" (or an Azure data line) is Azure; anything else
// is a kInvalidArgument error saying what the line looks like.
Result<TraceFormat> detect_trace_format(std::string_view first_line);
// detect_trace_format() of a file's first non-blank line (kNotFound when it cannot be read).
Result<TraceFormat> detect_trace_file_format(const std::string& path);
std::string_view trace_format_name(TraceFormat format);

struct TraceOptions {
  // Azure: a shared system prompt of this many tokens begins every prompt (rounded down to
  // whole 512-token blocks, and never longer than the prompt), so the prefix cache sees one
  // common prefix. Ignored for Mooncake, whose ids already say what is shared.
  std::uint32_t system_prompt_tokens = 0;
};

// A Workload over trace lines. Arrivals are made relative to the first line; a line whose
// time is earlier than its predecessor's arrives together with it (replay order is file
// order). Mooncake ids are normalised to ceil(input_length/512): extra ids are dropped and
// missing ones are filled with fresh generated ids (kGeneratedIdBase + n), unique per request.
// Blank lines are skipped; the Azure header line is required.
std::unique_ptr<Workload> make_trace_workload(std::unique_ptr<std::istream> input,
                                              TraceFormat format, TraceOptions options = {});
// Opens `path`; kNotFound / kIo when it cannot be read.
Result<std::unique_ptr<Workload>> open_trace_workload(const std::string& path, TraceFormat format,
                                                      TraceOptions options = {});

}  // namespace omni::workload
