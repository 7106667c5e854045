// Trace readers: one line in memory at a time, arrivals relative to the first line.
#include <algorithm>
#include <fstream>
#include <string>

#include "omni/workload/trace.hpp"

namespace omni::workload {
namespace {

// Reads lines of at most kMaxTraceLineBytes, counting them for error messages.
class LineReader {
 public:
  explicit LineReader(std::unique_ptr<std::istream> input) : input_(std::move(input)) {}

  // The next non-blank line; std::nullopt at the end of the stream.
  Result<std::optional<std::string>> next() {
    std::string line;
    while (true) {
      line.clear();
      if (!read_line(line)) {
        if (too_long_) return make_error(ErrorCode::kTooLarge, at() + "line longer than 4 MiB");
        return std::optional<std::string>{};
      }
      ++line_number_;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") != std::string::npos) return std::optional{std::move(line)};
    }
  }
  std::string at() const { return "line " + std::to_string(line_number_) + ": "; }

 private:
  bool read_line(std::string& line) {
    std::streambuf* buf = input_->rdbuf();
    bool any = false;
    for (int c = buf->sbumpc(); c != std::char_traits<char>::eof(); c = buf->sbumpc()) {
      any = true;
      if (c == '\n') return true;
      if (line.size() >= kMaxTraceLineBytes) {
        too_long_ = true;
        return false;
      }
      line.push_back(static_cast<char>(c));
    }
    return any;
  }

  std::unique_ptr<std::istream> input_;
  std::uint64_t line_number_ = 0;
  bool too_long_ = false;
};

Error at_line(const LineReader& reader, Error error) {
  error.message = reader.at() + error.message;
  return error;
}

// Shared by both formats: arrival ordering, indices and generated ids.
class TraceWorkload final : public Workload {
 public:
  TraceWorkload(std::unique_ptr<std::istream> input, TraceFormat format, TraceOptions options)
      : reader_(std::move(input)), format_(format), options_(options) {}

  Result<std::optional<RequestSpec>> next() override {
    if (failed_) return make_error(ErrorCode::kInvalidArgument, "the trace already failed");
    auto spec = format_ == TraceFormat::kMooncake ? next_mooncake() : next_azure();
    if (!spec) failed_ = true;
    return spec;
  }

 private:
  Result<std::optional<RequestSpec>> next_mooncake() {
    auto line = reader_.next();
    if (!line) return line.error();
    if (!line->has_value()) return std::optional<RequestSpec>{};
    auto row = parse_mooncake_line(**line);
    if (!row) return at_line(reader_, row.error());
    RequestSpec spec =
        start_spec(row->timestamp_ms / 1000.0, row->input_length, row->output_length);
    spec.hash_ids = std::move(row->hash_ids);
    const std::size_t blocks = blocks_for(spec.input_tokens);
    if (spec.hash_ids.size() > blocks) spec.hash_ids.resize(blocks);
    while (spec.hash_ids.size() < blocks) spec.hash_ids.push_back(next_generated_id_++);
    return std::optional{std::move(spec)};
  }

  Result<std::optional<RequestSpec>> next_azure() {
    if (!header_seen_) {
      auto header = reader_.next();
      if (!header) return header.error();
      if (!header->has_value()) return std::optional<RequestSpec>{};
      if ((*header)->rfind("TIMESTAMP,", 0) != 0) {
        return make_error(
            ErrorCode::kInvalidArgument,
            reader_.at() + "expected the header TIMESTAMP,ContextTokens,GeneratedTokens");
      }
      header_seen_ = true;
      system_ids_.resize(options_.system_prompt_tokens / kBlockTokens);
      for (auto& id : system_ids_) id = next_generated_id_++;
    }
    auto line = reader_.next();
    if (!line) return line.error();
    if (!line->has_value()) return std::optional<RequestSpec>{};
    auto row = parse_azure_line(**line);
    if (!row) return at_line(reader_, row.error());
    RequestSpec spec = start_spec(row->timestamp_s, row->context_tokens, row->generated_tokens);
    const std::size_t blocks = blocks_for(spec.input_tokens);
    const std::size_t shared = std::min(blocks, system_ids_.size());
    spec.hash_ids.assign(system_ids_.begin(),
                         system_ids_.begin() + static_cast<std::ptrdiff_t>(shared));
    while (spec.hash_ids.size() < blocks) spec.hash_ids.push_back(next_generated_id_++);
    return std::optional{std::move(spec)};
  }

  RequestSpec start_spec(double time_s, std::uint32_t input, std::uint32_t output) {
    if (!first_time_) first_time_ = time_s;
    const double arrival = std::max(time_s - *first_time_, last_arrival_);
    last_arrival_ = arrival;
    RequestSpec spec;
    spec.index = next_index_++;
    spec.arrival_s = arrival;
    spec.input_tokens = input;
    spec.max_output_tokens = output;
    return spec;
  }

  LineReader reader_;
  TraceFormat format_;
  TraceOptions options_;
  bool failed_ = false;
  bool header_seen_ = false;
  std::optional<double> first_time_;
  double last_arrival_ = 0.0;
  std::uint64_t next_index_ = 0;
  std::uint64_t next_generated_id_ = kGeneratedIdBase;
  std::vector<std::uint64_t> system_ids_;
};

}  // namespace

std::unique_ptr<Workload> make_trace_workload(std::unique_ptr<std::istream> input,
                                              TraceFormat format, TraceOptions options) {
  return std::make_unique<TraceWorkload>(std::move(input), format, options);
}

Result<std::unique_ptr<Workload>> open_trace_workload(const std::string& path, TraceFormat format,
                                                      TraceOptions options) {
  auto file = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!file->is_open()) return make_error(ErrorCode::kNotFound, "cannot open trace " + path);
  return make_trace_workload(std::move(file), format, options);
}

}  // namespace omni::workload

namespace omni::workload {

Result<TraceFormat> detect_trace_file_format(const std::string& path) {
  auto input = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*input) return make_error(ErrorCode::kNotFound, "cannot open trace " + path);
  LineReader reader(std::move(input));
  auto line = reader.next();
  if (!line) return std::move(line).error();
  if (!*line) return make_error(ErrorCode::kInvalidArgument, "trace " + path + " is empty");
  auto format = detect_trace_format(**line);
  if (!format) return make_error(ErrorCode::kInvalidArgument, path + ": " + format.error().message);
  return format;
}

}  // namespace omni::workload
