// JSON text pieces written by hand where building a document would cost too much: the JSON
// log format, the access log, benchmark results, generated request bodies.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace omni::json {

// Appends `text` as a JSON string, quotes included. Escapes '"', '\\' and control bytes;
// copies valid UTF-8 unchanged; replaces each invalid byte with \ufffd, so the output is
// always valid JSON.
void append_string(std::string& out, std::string_view text);

// "2024-05-01T12:00:00.123456Z": RFC 3339, UTC, microseconds (rounded down).
void append_timestamp(std::string& out, std::chrono::system_clock::time_point time);

// The byte length of the valid UTF-8 sequence starting at text[pos], or 0 if invalid.
std::size_t utf8_sequence_length(std::string_view text, std::size_t pos) noexcept;

}  // namespace omni::json
