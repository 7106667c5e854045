// omni-tokenize: the tokenizer and chat templates from the command line (docs/tokenizer.md).
//
//   omni-tokenize encode --tokenizer PATH [--add-special-tokens] [--input FILE]   -> [ids...]
//   omni-tokenize decode --tokenizer PATH [--skip-special-tokens] [--input FILE]  -> text
//   omni-tokenize chat   --tokenizer PATH [--no-generation-prompt] [--input FILE] -> prompt text
//   omni-tokenize count  --tokenizer PATH [--add-special-tokens] [--input FILE]   -> N
//
// PATH is a tokenizer.json, a tokenizer_config.json or a model directory. Input is stdin unless
// --input is given. Exit status: 0 success, 1 the tokenizer or template cannot be used, 2 bad
// flags or input (the message names the problem).
#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "omni/config/cli.hpp"
#include "omni/tokenizer/tokenizer.hpp"
#if OMNI_TOKENIZE_HAS_CHAT
#include "omni/chat/template.hpp"
#endif

namespace omni::tokenize_cli {
namespace {

constexpr std::size_t kMaxInputBytes = 256u << 20;

struct Flags {
  std::string tokenizer;
  std::string input;
  bool add_special_tokens = false;
  bool skip_special_tokens = false;
  bool no_generation_prompt = false;
};

struct Failure {
  int status;
  std::string message;
};

Result<std::string> read_input(const std::string& path) {
  std::string data;
  if (path.empty() || path == "-") {
    data.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(ErrorCode::kNotFound, path + ": cannot open");
    data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (data.size() > kMaxInputBytes)
    return make_error(ErrorCode::kTooLarge, "input larger than 256 MiB");
  return data;
}

Result<std::vector<tokenizer::TokenId>> parse_ids(std::string_view text, std::size_t vocab_size) {
  boost::json::error_code ec;
  const auto value = boost::json::parse(text, ec);
  if (ec || !value.is_array())
    return make_error(ErrorCode::kInvalidArgument, "decode expects a JSON array of token ids");
  std::vector<tokenizer::TokenId> ids;
  for (const auto& v : value.get_array()) {
    const bool integer = (v.is_int64() && v.get_int64() >= 0) || v.is_uint64();
    const auto id = v.is_int64()    ? static_cast<std::uint64_t>(v.get_int64())
                    : v.is_uint64() ? v.get_uint64()
                                    : 0;
    if (!integer || id >= vocab_size) {
      return make_error(ErrorCode::kInvalidArgument, "token id " + boost::json::serialize(v) +
                                                         " is not in the vocabulary (size " +
                                                         std::to_string(vocab_size) + ")");
    }
    ids.push_back(static_cast<tokenizer::TokenId>(id));
  }
  return ids;
}

std::string ids_json(const std::vector<tokenizer::TokenId>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ids[i]);
  }
  return out + "]\n";
}

Result<std::string> render_chat(const tokenizer::Tokenizer& tok, const std::string& request_text,
                                bool generation_prompt) {
#if OMNI_TOKENIZE_HAS_CHAT
  boost::json::error_code ec;
  const auto request = boost::json::parse(request_text, ec);
  if (ec || !request.is_object())
    return make_error(ErrorCode::kInvalidArgument, "chat expects a JSON object with 'messages'");
  const auto config = boost::json::parse(tok.config_json(), ec);
  if (ec || !config.is_object())
    return make_error(ErrorCode::kInvalidArgument, "tokenizer_config.json is not a JSON object");
  chat::ChatOptions options;
  options.add_generation_prompt = generation_prompt;
  return chat::render_chat(request.get_object(), config.get_object(), options);
#else
  (void)tok;
  (void)request_text;
  (void)generation_prompt;
  return make_error(ErrorCode::kUnsupported, "omni-tokenize was built without omni_chat");
#endif
}

// Runs one subcommand; on failure returns the exit status and message.
std::optional<Failure> run(const std::string& command, const Flags& flags) {
  auto loaded = tokenizer::Tokenizer::load(flags.tokenizer);
  if (!loaded.ok()) return Failure{1, loaded.error().to_string()};
  const auto& tok = **loaded;
  auto input = read_input(flags.input);
  if (!input.ok()) return Failure{2, input.error().to_string()};
  tokenizer::EncodeOptions encode_options;
  encode_options.add_special_tokens = flags.add_special_tokens;
  if (command == "encode" || command == "count") {
    tokenizer::Encoder encoder(*loaded);
    auto ids = encoder.encode(*input, encode_options);
    if (!ids.ok()) return Failure{1, ids.error().to_string()};
    std::cout << (command == "encode" ? ids_json(*ids) : std::to_string(ids->size()) + "\n");
    return std::nullopt;
  }
  if (command == "decode") {
    auto ids = parse_ids(*input, tok.vocab_size());
    if (!ids.ok()) return Failure{2, ids.error().to_string()};
    tokenizer::DecodeOptions options;
    options.skip_special_tokens = flags.skip_special_tokens;
    std::cout << tok.decode(*ids, options);
    return std::nullopt;
  }
  auto prompt = render_chat(tok, *input, !flags.no_generation_prompt);
  if (!prompt.ok()) {
    const bool bad_input = prompt.error().code == ErrorCode::kInvalidArgument;
    return Failure{bad_input ? 2 : 1, prompt.error().to_string()};
  }
  std::cout << *prompt;
  return std::nullopt;
}

}  // namespace
}  // namespace omni::tokenize_cli

int main(int argc, char** argv) {
  using omni::tokenize_cli::Flags;
  CLI::App app{"omni-tokenize: Hugging Face tokenizers and chat templates, natively"};
  app.require_subcommand(1);
  Flags flags;
  const auto common = [&](CLI::App* cmd) {
    cmd->add_option("--tokenizer", flags.tokenizer,
                    "tokenizer.json, tokenizer_config.json or a model directory")
        ->required();
    cmd->add_option("--input", flags.input, "Read this file instead of stdin");
  };
  auto* encode =
      app.add_subcommand("encode", "Print the token ids of the input text as a JSON array");
  auto* decode = app.add_subcommand("decode", "Print the text of a JSON array of token ids");
  auto* chat = app.add_subcommand(
      "chat", "Render an OpenAI chat request (messages, tools) with the chat template");
  auto* count = app.add_subcommand("count", "Print the number of tokens of the input text");
  for (auto* cmd : {encode, decode, chat, count}) common(cmd);
  for (auto* cmd : {encode, count}) {
    cmd->add_flag("--add-special-tokens", flags.add_special_tokens,
                  "Add BOS/EOS as the post-processor and config say");
  }
  decode->add_flag("--skip-special-tokens", flags.skip_special_tokens,
                   "Leave special tokens out of the text");
  chat->add_flag("--no-generation-prompt", flags.no_generation_prompt,
                 "Render without add_generation_prompt");
  if (auto status = omni::config::parse_or_exit(app, argc, argv)) return *status;
  const std::string command = app.get_subcommands().front()->get_name();
  if (auto failure = omni::tokenize_cli::run(command, flags)) {
    std::cout.flush();
    std::cerr << "omni-tokenize " << command << ": " << failure->message << "\n";
    return failure->status;
  }
  return 0;
}
