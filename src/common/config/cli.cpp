// CLI11 at the boundary (include/omni/config/cli.hpp): CLI11 reports problems by throwing;
// every exception is caught here and becomes an error value.
#include "omni/config/cli.hpp"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/version.hpp"

namespace omni::config::detail {
namespace {

// Every long flag the user could have meant, without its dashes: the app's and those of the
// subcommands given on the command line.
void long_flags(const CLI::App& app, std::vector<std::string>& out) {
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) out.push_back(name);
  }
  for (const CLI::App* sub : app.get_subcommands()) long_flags(*sub, out);
}

// The subcommands of the deepest one given (or of the app), for a mistyped subcommand.
std::vector<std::string> subcommand_names(const CLI::App& app) {
  const CLI::App* current = &app;
  while (!current->get_subcommands().empty()) current = current->get_subcommands().front();
  std::vector<std::string> names;
  for (const CLI::App* sub : current->get_subcommands([](const CLI::App*) { return true; })) {
    if (!sub->get_name().empty()) names.push_back(sub->get_name());
  }
  return names;
}

std::string unknown_flag(std::string_view arg, const std::vector<std::string>& flags) {
  const std::string_view flag = arg.substr(0, arg.find('='));
  std::string message = "unknown flag " + std::string(flag);
  std::string_view name = flag;
  while (name.starts_with('-')) name.remove_prefix(1);
  if (const std::string* best = nearest_name(name, flags)) {
    return message + " (did you mean --" + *best + "?)";
  }
  return message + " (see --help)";
}

}  // namespace

Result<CLI::Option*> add_value_flag(CLI::App& app, const std::string& name, const std::string& help,
                                    const std::string& type_name, bool is_bool, bool is_list) {
  try {
    // A bool reads --x, --x=false or --no-x (vLLM's and argparse's spelling of false).
    CLI::Option* option =
        is_bool ? app.add_flag("--" + name + ",!--no-" + name) : app.add_option("--" + name);
    option->description(help);
    if (!is_bool) {
      option->type_name(type_name);
      option->multi_option_policy(is_list ? CLI::MultiOptionPolicy::TakeAll
                                          : CLI::MultiOptionPolicy::TakeLast);
    }
    return option;
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal,
                      "cannot register flag --" + name + ": " + std::string(e.what()));
  }
}

Result<CLI::Option*> add_switch(CLI::App& app, const std::string& name, const std::string& help) {
  try {
    return app.add_flag("--" + name, help);
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal,
                      "cannot register flag --" + name + ": " + std::string(e.what()));
  }
}

std::optional<std::string> flag_text(const CLI::Option& option, bool is_list) {
  if (option.count() == 0 || option.results().empty()) return std::nullopt;
  if (!is_list) return option.results().back();
  std::string joined;
  for (const auto& value : option.results()) {
    if (!joined.empty() && !value.empty()) joined += ',';
    joined += value;
  }
  return joined;
}

std::string flag_help(const std::string& doc, const std::string& constraints,
                      const std::string& default_value) {
  std::string help = doc;
  if (!constraints.empty()) help += " [" + constraints + "]";
  return help + " (default: " + default_value + ")";
}

std::string program_name(int argc, const char* const* argv) {
  if (argc < 1 || argv[0] == nullptr || argv[0][0] == '\0') return "omni";
  return std::filesystem::path(argv[0]).filename().string();
}

Status add_version_flag(CLI::App& app, const std::string& binary) {
  try {
    app.set_version_flag("--version", omni::version_line(binary),
                         "Print the version and the commit it was built from, and exit");
    return ok_status();
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal, "cannot register --version: " + std::string(e.what()));
  }
}

std::string unexpected_arguments(const CLI::App& app, const std::vector<std::string>& args,
                                 const std::vector<std::string>& extras) {
  // A mistyped subcommand explains everything after it: say only that.
  const std::vector<std::string> subcommands = subcommand_names(app);
  for (const auto& arg : extras) {
    if (arg.starts_with('-')) continue;
    if (const std::string* best = nearest_name(arg, subcommands)) {
      return "unknown subcommand '" + arg + "' (did you mean '" + *best + "'?)";
    }
  }
  std::vector<std::string> flags;
  long_flags(app, flags);
  std::vector<std::string> problems;
  // Walks argv to tell an unknown flag's value ("--listen-prot 80") from a stray argument;
  // CLI11 leaves the extras in argv's order.
  std::size_t next = 0;
  bool after_unknown_flag = false;
  for (const auto& arg : args) {
    const bool extra = next < extras.size() && arg == extras[next];
    if (extra) ++next;
    const bool is_flag = arg.size() > 1 && arg.front() == '-';
    if (extra && is_flag) {
      problems.push_back(unknown_flag(arg, flags));
    } else if (extra && !after_unknown_flag) {
      problems.push_back("unexpected argument '" + arg + "'");
    }
    after_unknown_flag = extra && is_flag && arg.find('=') == std::string::npos;
  }
  if (problems.empty()) return "unexpected arguments";  // not reached: every extra is in argv
  if (problems.size() == 1) return problems.front();
  std::string message = std::to_string(problems.size()) + " command-line errors:";
  for (const auto& problem : problems) message += "\n  " + problem;
  return message;
}

Result<bool> parse_args(CLI::App& app, int argc, const char* const* argv, std::ostream& out) {
  try {
    app.parse(argc, argv);
    return false;
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return true;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return true;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return true;
  } catch (const CLI::ParseError& e) {
    // Arguments no flag took explain most other errors too ("--tokenzer x" leaves --tokenizer
    // missing), so they are reported first.
    const std::vector<std::string> extras = app.remaining(true);
    if (extras.empty()) return make_error(ErrorCode::kInvalidArgument, e.what());
    const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
    return make_error(ErrorCode::kInvalidArgument, unexpected_arguments(app, args, extras));
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal, std::string("command line: ") + e.what());
  }
}

}  // namespace omni::config::detail

namespace omni::config {

std::optional<int> parse_or_exit(CLI::App& app, int argc, const char* const* argv,
                                 std::ostream& out, std::ostream& err) {
  const std::string binary = detail::program_name(argc, argv);
  if (Status version = detail::add_version_flag(app, binary); !version) {
    err << binary << ": " << version.error().message << "\n";
    return 1;  // a bug in the binary, not in its command line
  }
  Result<bool> answered = detail::parse_args(app, argc, argv, out);
  if (!answered) {
    err << binary << ": " << answered.error().message << "\n";
    return answered.error().code == ErrorCode::kInvalidArgument ? 2 : 1;
  }
  if (*answered) return 0;
  return std::nullopt;
}

}  // namespace omni::config
