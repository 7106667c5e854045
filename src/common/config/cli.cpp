// CLI11 at the boundary (include/omni/config/cli.hpp): CLI11 reports problems by throwing;
// every exception is caught here and becomes an error value.
#include "omni/config/cli.hpp"

#include <exception>
#include <string>

namespace omni::config::detail {

Result<CLI::Option*> add_value_flag(CLI::App& app, const std::string& name, const std::string& help,
                                    const std::string& type_name, bool is_bool, bool is_list) {
  try {
    CLI::Option* option = is_bool ? app.add_flag("--" + name) : app.add_option("--" + name);
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
  } catch (const CLI::ParseError& e) {
    return make_error(ErrorCode::kInvalidArgument, e.what());
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInternal, std::string("command line: ") + e.what());
  }
}

}  // namespace omni::config::detail
