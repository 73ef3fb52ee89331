#pragma once
// Byte-level tokens for text: each byte of a document is its own token
// (0..255), and token 256 opens every document, as llm.c's GPT-2 shards open
// each document with the end-of-text token. The vocabulary is 257, so any
// text, in any encoding, has tokens without a tokenizer file (GPT-2's BPE
// files are not available offline).
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tr::data {

inline constexpr int kByteVocab = 257;
inline constexpr uint16_t kDocumentToken = 256;

// Appends the document token, then one token per byte of `text`.
void append_document_tokens(std::string_view text, std::vector<uint16_t>& out);

// The documents of a token stream, split at each document token: the inverse
// of append_document_tokens over a whole stream. Tokens before the first
// document token (a stream cut mid-document) form the first item. Throws
// UserError for a token outside the vocabulary.
std::vector<std::string> documents_of(std::span<const uint16_t> tokens);

// A loss in nats per token as bits per byte of text, given the text's tokens
// per byte (a split's tokens over its bytes: each document adds one token), so
// losses compare across tokenizers: ln 2 nats make a bit.
inline double bits_per_byte(double nats_per_token, double tokens_per_byte) {
  return nats_per_token / std::log(2.0) * tokens_per_byte;
}

}  // namespace tr::data
