// Chat templates for omni-sim's chat route: a TextCodec decorator that renders chat requests
// with the model's own chat template (tokenizer_config.json's `chat_template`, as vLLM does),
// or with a template the request carries, and leaves tokenization to the codec it wraps.
// Without any template it falls back to the wrapped codec's built-in role template.
#pragma once

#include <memory>
#include <string_view>

#include "sim/text_codec.hpp"

namespace omni::sim {

// `tokenizer_config_json` is tokenizer_config.json's text ("{}" or empty when there is none).
// Its chat_template may be a string or a list of {name, template} ("tool_use" is picked when
// the request has tools, else "default"). A template that does not parse is reported on every
// chat request (a 400), as vLLM reports a broken template when it renders, not at start.
std::unique_ptr<TextCodec> with_chat_templates(std::unique_ptr<TextCodec> inner,
                                               std::string_view tokenizer_config_json);

// Whether `codec` renders with the model's chat template (for the start-up log line).
bool has_model_chat_template(const TextCodec& codec);

}  // namespace omni::sim
