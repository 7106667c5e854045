// TextCodec over the real tokenizer library (omni_tokenizer: Hugging Face tokenizer.json), used
// when omni-sim gets --tokenizer. Built only when omni_tokenizer exists.
#pragma once

#include <memory>
#include <string>

#include "omni/common/result.hpp"
#include "sim/text_codec.hpp"

namespace omni::sim {

// Loads tokenizer.json (and tokenizer_config.json next to it: chat requests then render with
// its chat_template, see chat_codec.hpp). Generated text is drawn from the tokens of a list of
// common words, so it decodes to readable text with any vocabulary.
Result<std::unique_ptr<TextCodec>> load_tokenizer_codec(const std::string& path);

}  // namespace omni::sim
