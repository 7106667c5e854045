// Command-line flags generated from a Schema (CLI11).
//
// Every settable key gets a flag named after its path ('.' and '_' become '-'):
//   listen.port -> --listen-port     io_threads -> --io-threads     tls.enabled -> --tls-enabled
// whose help is the key's doc line, its constraints and its default; plus --config FILE.
// Lists take comma-separated values (--endpoints a,b, or the flag repeated); a bool flag alone
// means true (--tls-enabled), --no-tls-enabled means false, and --tls-enabled=false works too.
// Lists of sections exist only in YAML.
//
// The convention every Omni binary follows (docs: CONTRIBUTING.md, "Command lines"): --help and
// --version answer on stdout with status 0; a usage error (an unknown flag, with the nearest
// known one as "did you mean --x?", or a bad value) is one message on stderr and status 2.
// Binaries with a CLI::App of their own get the same through parse_or_exit().
//
// Precedence: defaults < the --config file < flags. Flag values go through the same codecs
// and constraints as YAML, so a bad value reads the same from either source:
//   header_timeout: expected a duration with a unit ... got 'abc' (from --header-timeout)
//
// Most binaries want the one call:
//   auto cli = omni::config::parse_command_line(argc, argv, schema, "omni-sim: engine simulator");
//   if (!cli) { std::cerr << cli.error().message << "\n"; return 2; }
//   if (cli->exit_now) return 0;   // --help, --version or --print-config was answered
//   run(cli->config);
// A binary with flags of its own calls add_flags() on its CLI::App, parses, then apply().
#pragma once

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/config/config.hpp"
#include "omni/config/schema.hpp"

namespace omni::config {

namespace detail {
// Registers one value flag (a bool also gets --no-<name>); CLI11's exceptions (e.g. a clashing
// name) come back as errors.
Result<CLI::Option*> add_value_flag(CLI::App& app, const std::string& name, const std::string& help,
                                    const std::string& type_name, bool is_bool, bool is_list);
// A flag that only switches something on (--print-config): no value, no --no- form.
Result<CLI::Option*> add_switch(CLI::App& app, const std::string& name, const std::string& help);
// What the user gave: nothing, the last value, or (lists) every value joined with ','.
std::optional<std::string> flag_text(const CLI::Option& option, bool is_list);
// "doc [constraints] (default: value)"
std::string flag_help(const std::string& doc, const std::string& constraints,
                      const std::string& default_value);
// argv[0]'s file name ("omni-sim"): the name --version and error messages give.
std::string program_name(int argc, const char* const* argv);
// --version, answered with omni::version_line(binary).
Status add_version_flag(CLI::App& app, const std::string& binary);
// The message for `extras`, the arguments no flag took in `args` (argv without argv[0]), after a
// parse: "unknown flag --listen-prot (did you mean --listen-port?)", one line per problem, or
// "unknown subcommand 'encdoe' (did you mean 'encode'?)".
std::string unexpected_arguments(const CLI::App& app, const std::vector<std::string>& args,
                                 const std::vector<std::string>& extras);
// Parses argv. Ok(true): --help or --version was asked for and answered on `out`. Errors are
// kInvalidArgument for the user's mistakes, kInternal for the binary's.
Result<bool> parse_args(CLI::App& app, int argc, const char* const* argv, std::ostream& out);
}  // namespace detail

// For a binary with a CLI::App of its own: adds --version and parses argv. Returns the status
// to exit with when the program should stop: 0 after answering --help or --version on `out`,
// 2 after writing a usage error to `err` as "<binary>: <message>" (with "did you mean" for an
// unknown flag), 1 when the binary itself is at fault (a clashing --version); nullopt when it
// should go on.
//   if (auto status = omni::config::parse_or_exit(app, argc, argv)) return *status;
std::optional<int> parse_or_exit(CLI::App& app, int argc, const char* const* argv,
                                 std::ostream& out = std::cout, std::ostream& err = std::cerr);

// The flags add_flags() registered, bound to one config struct.
template <class T>
class FlagSet {
 public:
  FlagSet(T& cfg, Schema<T> schema) : cfg_(&cfg), schema_(std::move(schema)) {}

  // Call after the app parsed argv: loads --config (if given) over the struct, applies the
  // flags given, validates the result. Every problem is reported at once. On error the
  // struct is partly updated and must not be used.
  Status apply();

 private:
  template <class U>
  friend FlagSet<U> add_flags(CLI::App& app, const Schema<U>& schema, U& cfg);

  struct Bound {
    detail::Leaf<T> leaf;
    CLI::Option* option;
  };
  T* cfg_;
  Schema<T> schema_;
  std::vector<Bound> bound_;
  CLI::Option* config_ = nullptr;
  Status setup_;  // an error from registering the flags, reported by apply()
};

// Registers --config and one flag per settable key on `app`. `cfg` holds the defaults the
// help text shows and receives the result in apply(); it must outlive the FlagSet.
template <class T>
FlagSet<T> add_flags(CLI::App& app, const Schema<T>& schema, T& cfg) {
  FlagSet<T> flags(cfg, schema);
  auto config = detail::add_value_flag(app, "config", "YAML config file; flags override it", "FILE",
                                       false, false);
  if (!config) {
    flags.setup_ = std::move(config).error();
    return flags;
  }
  flags.config_ = *config;
  for (auto& leaf : schema.leaves()) {
    if (!leaf.set) continue;
    std::string help = detail::flag_help(leaf.doc, leaf.constraints, leaf.show(cfg));
    auto option = detail::add_value_flag(app, detail::flag_name(leaf.path), help, leaf.flag_type,
                                         leaf.is_bool, leaf.is_list);
    if (!option) {
      flags.setup_ = std::move(option).error();
      return flags;
    }
    flags.bound_.push_back({std::move(leaf), *option});
  }
  return flags;
}

template <class T>
Status FlagSet<T>::apply() {
  if (!setup_) return setup_;
  std::optional<std::string> file = config_ ? detail::flag_text(*config_, false) : std::nullopt;
  detail::Issues issues(file.value_or(""));
  if (file) {
    auto text = detail::read_text_file(*file);
    if (!text) return std::move(text).error();
    auto node = detail::parse_yaml(*text, *file);
    if (!node) return std::move(node).error();
    schema_.load_into(*node, *cfg_, "", issues);
  }
  for (const auto& bound : bound_) {
    auto text = detail::flag_text(*bound.option, bound.leaf.is_list);
    if (!text) continue;
    Status status = bound.leaf.set(*cfg_, *text);
    if (!status) {
      issues.add(bound.leaf.path, status.error().message,
                 "from --" + detail::flag_name(bound.leaf.path));
    }
  }
  schema_.validate_into(*cfg_, "", issues, /*cross_checks=*/issues.empty());
  return issues.status();
}

template <class T>
struct CommandLine {
  T config;
  // --help, --version or --print-config was answered on `out`: exit with status 0.
  bool exit_now = false;
};

// Parses argv into a validated T: defaults < --config FILE < flags. Also handles --help,
// --version ("<argv[0]'s name> <version> (commit ...)") and --print-config (the effective config
// as YAML). Errors are kInvalidArgument (bad flags or values, every one listed; an unknown flag
// names the nearest known one), kNotFound (no such --config file).
template <class T>
Result<CommandLine<T>> parse_command_line(int argc, const char* const* argv,
                                          const Schema<T>& schema, const std::string& description,
                                          std::ostream& out = std::cout) {
  CommandLine<T> result;
  CLI::App app(description);
  FlagSet<T> flags = add_flags(app, schema, result.config);
  auto print =
      detail::add_switch(app, "print-config", "Print the effective configuration as YAML and exit");
  if (!print) return std::move(print).error();
  if (Status version = detail::add_version_flag(app, detail::program_name(argc, argv)); !version) {
    return std::move(version).error();
  }
  auto helped = detail::parse_args(app, argc, argv, out);
  if (!helped) return std::move(helped).error();
  if (*helped) {
    result.exit_now = true;
    return result;
  }
  Status status = flags.apply();
  if (!status) return std::move(status).error();
  auto print_text = detail::flag_text(**print, false);
  if (print_text && parse_bool(*print_text).value_or(false)) {
    out << dump_yaml(schema, result.config);
    result.exit_now = true;
  }
  return result;
}

}  // namespace omni::config
