// Helpers for the logging tests: split captured output into lines, parse one as a JSON object.
#pragma once

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace omni::log::testing {

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The line as a JSON object; a parse failure is a test failure (and an empty object).
inline boost::json::object parse_object(const std::string& line) {
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(line, ec);
  EXPECT_FALSE(ec) << ec.message() << " in: " << line;
  if (ec || !value.is_object()) return {};
  return value.as_object();
}

}  // namespace omni::log::testing
