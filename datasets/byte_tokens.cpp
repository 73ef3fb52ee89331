#include "datasets/byte_tokens.h"

#include "framework/core/error.h"

namespace tr::data {

void append_document_tokens(std::string_view text, std::vector<uint16_t>& out) {
  // No reserve of exactly what this document adds: across a corpus that
  // would reallocate once per document (quadratic); push_back grows geometrically.
  out.push_back(kDocumentToken);
  for (const char c : text) out.push_back(uint16_t(uint8_t(c)));
}

std::vector<std::string> documents_of(std::span<const uint16_t> tokens) {
  std::vector<std::string> docs;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const uint16_t t = tokens[i];
    TR_USER_CHECK(t < kByteVocab, "token ", t, " at position ", i, " is outside the byte vocabulary of ", kByteVocab);
    if (t == kDocumentToken || docs.empty()) docs.emplace_back();
    if (t != kDocumentToken) docs.back().push_back(char(t));
  }
  return docs;
}

}  // namespace tr::data
