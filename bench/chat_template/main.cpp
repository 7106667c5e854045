// omni-chat-template-bench: parses each tokenizer config's chat_template once, then renders one
// chat request with render_chat `iterations` times; prints one JSON object per config:
//   {"<config>": {"parse_us": .., "render_us": .., "renders_per_s": .., "output_bytes": ..}}
//
//   omni-chat-template-bench REQUEST_JSON ITERATIONS CONFIG_JSON...
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "omni/chat/template.hpp"

namespace {

using Clock = std::chrono::steady_clock;

boost::json::object read_json(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return boost::json::parse(ss.str()).as_object();
}

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: omni-chat-template-bench REQUEST_JSON ITERATIONS CONFIG_JSON...\n";
    return 2;
  }
  const auto request = read_json(argv[1]);
  const long iterations = std::strtol(argv[2], nullptr, 10);
  boost::json::object report;
  omni::chat::ChatOptions options;  // add_generation_prompt on, default limits
  for (int i = 3; i < argc; ++i) {
    const auto config = read_json(argv[i]);
    const std::string source(config.at("chat_template").as_string());
    const auto parse_start = Clock::now();
    constexpr int kParses = 200;
    for (int p = 0; p + 1 < kParses; ++p) {
      if (!omni::chat::Template::parse(source).ok()) return 1;
    }
    auto tmpl = omni::chat::Template::parse(source);
    const double parse_us = micros_since(parse_start) / kParses;
    if (!tmpl.ok()) {
      std::cerr << argv[i] << ": " << tmpl.error().to_string() << "\n";
      return 1;
    }
    std::size_t bytes = 0;
    const auto start = Clock::now();
    for (long n = 0; n < iterations; ++n) {
      auto out = omni::chat::render_chat(*tmpl, request, config, options);
      if (!out.ok()) {
        std::cerr << argv[i] << ": " << out.error().to_string() << "\n";
        return 1;
      }
      bytes = out->size();
    }
    const double render_us = micros_since(start) / static_cast<double>(iterations);
    report[argv[i]] = {{"parse_us", parse_us},
                       {"render_us", render_us},
                       {"renders_per_s", 1e6 / render_us},
                       {"output_bytes", bytes}};
  }
  std::cout << boost::json::serialize(report) << "\n";
  return 0;
}
