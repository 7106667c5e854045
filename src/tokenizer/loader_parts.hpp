// Readers for the pipeline components of tokenizer.json (normalizer, pre-tokenizer, decoder,
// post-processor) and small JSON field helpers.
#pragma once

#include <optional>
#include <string>

#include <boost/json/fwd.hpp>

#include "tokenizer_impl.hpp"

namespace omni::tokenizer {

std::string string_field(const boost::json::object& o, std::string_view key,
                         std::string_view fallback);
bool bool_field(const boost::json::object& o, std::string_view key, bool fallback);
double number(const boost::json::value& v);
std::optional<TokenId> token_id(const boost::json::value& v);

Status read_normalizer(const boost::json::value* v, Tokenizer::Impl& impl);
Status read_pre_tokenizer(const boost::json::value* v, Tokenizer::Impl& impl);
Status read_decoder(const boost::json::value* v, Tokenizer::Impl& impl);
Status read_post_processor(const boost::json::value* v, Tokenizer::Impl& impl);

}  // namespace omni::tokenizer
