#include "decoder.hpp"

#include "byte_level.hpp"
#include "utf8.hpp"

namespace omni::tokenizer {
namespace {

class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) bytes += byte_level_token_bytes(t);
    tokens.assign(1, utf8::to_valid_lossy(bytes));
  }
  bool is_byte_level() const override { return true; }
};

// "<0x41>" -> 0x41.
bool parse_byte_token(const std::string& t, unsigned char& byte) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return false;
  unsigned value = 0;
  for (std::size_t i = 3; i < 5; ++i) {
    const char c = t[i];
    value <<= 4;
    if (c >= '0' && c <= '9')
      value |= static_cast<unsigned>(c - '0');
    else if (c >= 'A' && c <= 'F')
      value |= static_cast<unsigned>(c - 'A' + 10);
    else
      return false;
  }
  byte = static_cast<unsigned char>(value);
  return true;
}

class ByteFallbackDecoder final : public Decoder {
 public:
  // A run of byte tokens becomes its UTF-8 text, or one U+FFFD per byte when it is not valid.
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string run;
    std::size_t run_tokens = 0;
    const auto flush = [&] {
      if (run_tokens == 0) return;
      if (utf8::is_valid(run)) {
        out.push_back(run);
      } else {
        for (std::size_t i = 0; i < run_tokens; ++i) out.emplace_back(utf8::kReplacement);
      }
      run.clear();
      run_tokens = 0;
    };
    for (auto& t : tokens) {
      unsigned char b = 0;
      if (parse_byte_token(t, b)) {
        run.push_back(static_cast<char>(b));
        ++run_tokens;
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::string pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (pattern_.empty()) return;
    for (auto& t : tokens) {
      std::string out;
      std::size_t from = 0;
      for (std::size_t at = t.find(pattern_); at != std::string::npos;
           at = t.find(pattern_, from)) {
        out.append(t, from, at - from);
        out += content_;
        from = at + pattern_.size();
      }
      out.append(t, from);
      t = std::move(out);
    }
  }

 private:
  std::string pattern_;
  std::string content_;
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, std::size_t start, std::size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (content_.empty()) return;
    for (auto& t : tokens) {
      std::size_t begin = 0;
      for (std::size_t i = 0; i < start_ && t.compare(begin, content_.size(), content_) == 0; ++i)
        begin += content_.size();
      std::size_t end = t.size();
      for (std::size_t i = 0; i < stop_ && end >= begin + content_.size() &&
                              t.compare(end - content_.size(), content_.size(), content_) == 0;
           ++i) {
        end -= content_.size();
      }
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  std::size_t start_;
  std::size_t stop_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    ReplaceDecoder(replacement_, " ").decode_chain(tokens);
    if (strip_first_ && !tokens.empty() && !tokens.front().empty() && tokens.front()[0] == ' ')
      tokens.front().erase(0, 1);
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts)
      : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }
  bool is_byte_level() const override { return parts_.size() == 1 && parts_[0]->is_byte_level(); }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::string byte_level_token_bytes(const std::string& token) {
  auto bytes = byte_level::to_bytes(token);
  return bytes ? std::move(*bytes) : token;
}

std::unique_ptr<Decoder> make_byte_level_decoder() { return std::make_unique<ByteLevelDecoder>(); }
std::unique_ptr<Decoder> make_byte_fallback_decoder() {
  return std::make_unique<ByteFallbackDecoder>();
}
std::unique_ptr<Decoder> make_fuse_decoder() { return std::make_unique<FuseDecoder>(); }
std::unique_ptr<Decoder> make_replace_decoder(std::string pattern, std::string content) {
  return std::make_unique<ReplaceDecoder>(std::move(pattern), std::move(content));
}
std::unique_ptr<Decoder> make_strip_decoder(std::string content, std::size_t start,
                                            std::size_t stop) {
  return std::make_unique<StripDecoder>(std::move(content), start, stop);
}
std::unique_ptr<Decoder> make_metaspace_decoder(std::string replacement, bool strip_first_space) {
  return std::make_unique<MetaspaceDecoder>(std::move(replacement), strip_first_space);
}
std::unique_ptr<Decoder> make_sequence_decoder(std::vector<std::unique_ptr<Decoder>> parts) {
  return std::make_unique<SequenceDecoder>(std::move(parts));
}

}  // namespace omni::tokenizer
