#include "apps/lda/corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "framework/data/text_lines.h"

namespace stalelearn::apps::lda {
namespace {

char LowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool IsLetter(char c) { return c >= 'a' && c <= 'z'; }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

Result<std::vector<std::string>> ReadStopwords(const std::filesystem::path& file) {
  STALELEARN_ASSIGN_OR_RETURN(std::string text, data::ReadWholeFile(file));
  std::vector<std::string> words;
  data::LineCursor cursor(text);
  std::string_view line;
  while (cursor.Next(line)) {
    std::string word;
    for (char c : line) {
      if (!IsSpace(c)) word.push_back(LowerAscii(c));
    }
    if (!word.empty()) words.push_back(std::move(word));
  }
  if (words.empty()) return InvalidArgument(fmt::format("{}: holds no stopwords", file.string()));
  std::sort(words.begin(), words.end());
  return words;
}

// Files of `folder` whose names `keep` accepts, sorted by name.
template <class Keep>
Result<std::vector<std::filesystem::path>> ListFiles(const std::filesystem::path& folder, Keep keep,
                                                     std::string_view what) {
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) {
    return NotFound(fmt::format("{}: no such folder (is --source the unpacked npm package's parent?)",
                                folder.string()));
  }
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file() && keep(it->path().filename().string())) files.push_back(it->path());
  }
  if (ec) return Unavailable(fmt::format("{}: cannot list: {}", folder.string(), ec.message()));
  if (files.empty()) return NotFound(fmt::format("{}: holds no {}", folder.string(), what));
  std::sort(files.begin(), files.end());
  return files;
}

bool IsBrownText(const std::string& name) {
  return name.size() == 4 && name[0] == 'c' && name[1] >= 'a' && name[1] <= 'r' && name[2] >= '0' &&
         name[2] <= '9' && name[3] >= '0' && name[3] <= '9';
}

template <class Transform>
Status Prepare(const std::filesystem::path& source, const std::filesystem::path& out,
               const std::vector<std::filesystem::path>& files, Transform transform) {
  STALELEARN_ASSIGN_OR_RETURN(std::vector<std::string> stopwords, ReadStopwords(source / "stopwords.txt"));
  std::vector<RawDocument> documents;
  documents.reserve(files.size());
  for (const std::filesystem::path& file : files) {
    STALELEARN_ASSIGN_OR_RETURN(std::string text, data::ReadWholeFile(file));
    documents.push_back({file.stem().string(), KeptTokens(transform(text), stopwords)});
  }
  const TokenCorpus corpus = BuildTokenCorpus(documents, /*min_document_frequency=*/5);
  std::string vocabulary;
  for (const std::string& word : corpus.vocabulary) vocabulary += word + '\n';
  STALELEARN_RETURN_IF_ERROR(data::WriteFileAtomically(VocabularyPathFor(out), vocabulary));
  return data::WriteFileAtomically(out, FormatTokenCorpus(corpus));
}

}  // namespace

std::uint64_t TokenCorpus::tokens() const {
  std::uint64_t total = 0;
  for (const auto& document : documents) total += document.size();
  return total;
}

std::uint64_t TokenCorpus::distinct_pairs() const {
  std::uint64_t total = 0;
  std::vector<std::uint32_t> ids;
  for (const auto& document : documents) {
    ids.assign(document.begin(), document.end());
    std::sort(ids.begin(), ids.end());
    total += static_cast<std::uint64_t>(std::unique(ids.begin(), ids.end()) - ids.begin());
  }
  return total;
}

std::vector<std::string> KeptTokens(std::string_view text, const std::vector<std::string>& sorted_stopwords) {
  std::vector<std::string> tokens;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!IsLetter(LowerAscii(text[i]))) {
      ++i;
      continue;
    }
    std::string token;
    for (; i < text.size(); ++i) {
      const char c = LowerAscii(text[i]);
      if (!IsLetter(c) && c != '\'') break;
      token.push_back(c);
    }
    if (token.size() >= 3 && !std::binary_search(sorted_stopwords.begin(), sorted_stopwords.end(), token)) {
      tokens.push_back(std::move(token));
    }
  }
  return tokens;
}

std::string StripBrownTags(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (IsSpace(text[i])) {
      out.push_back(' ');
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && !IsSpace(text[end])) ++end;
    const std::string_view item = text.substr(i, end - i);
    const std::size_t slash = item.rfind('/');
    out.append(slash == std::string_view::npos ? item : item.substr(0, slash));
    i = end;
  }
  return out;
}

TokenCorpus BuildTokenCorpus(std::span<const RawDocument> documents, std::uint32_t min_document_frequency) {
  std::unordered_map<std::string_view, std::uint32_t> document_frequency;
  for (const RawDocument& document : documents) {
    std::vector<std::string_view> distinct(document.tokens.begin(), document.tokens.end());
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (std::string_view token : distinct) ++document_frequency[token];
  }
  TokenCorpus corpus;
  for (const auto& [token, frequency] : document_frequency) {
    if (frequency >= min_document_frequency) corpus.vocabulary.emplace_back(token);
  }
  std::sort(corpus.vocabulary.begin(), corpus.vocabulary.end());
  std::unordered_map<std::string_view, std::uint32_t> id_of;
  for (std::uint32_t id = 0; id < corpus.vocabulary.size(); ++id) id_of.emplace(corpus.vocabulary[id], id);
  for (const RawDocument& document : documents) {
    std::vector<std::uint32_t> ids;
    for (const std::string& token : document.tokens) {
      if (auto it = id_of.find(token); it != id_of.end()) ids.push_back(it->second);
    }
    corpus.document_names.push_back(document.name);
    corpus.documents.push_back(std::move(ids));
  }
  return corpus;
}

std::string FormatTokenCorpus(const TokenCorpus& corpus) {
  std::string out = fmt::format("# stalelearn token corpus: {} documents, {} words, {} tokens\n",
                                corpus.documents.size(), corpus.vocabulary.size(), corpus.tokens());
  out += "# one document per line: name, then 0-based vocabulary ids in text order\n";
  char digits[16];
  for (std::size_t d = 0; d < corpus.documents.size(); ++d) {
    out += corpus.document_names[d];
    for (std::uint32_t id : corpus.documents[d]) {
      out += ' ';
      out.append(digits, std::to_chars(digits, digits + sizeof digits, id).ptr);
    }
    out += '\n';
  }
  return out;
}

std::filesystem::path VocabularyPathFor(const std::filesystem::path& corpus_file) {
  return std::filesystem::path(corpus_file).replace_extension(".vocab");
}

Result<TokenCorpus> ReadTokenCorpus(const std::filesystem::path& file) {
  STALELEARN_ASSIGN_OR_RETURN(std::string text, data::ReadWholeFile(file));
  TokenCorpus corpus;
  data::LineCursor cursor(text);
  std::string_view line;
  std::uint32_t largest = 0;
  bool any = false;
  while (cursor.Next(line)) {
    if (line.empty() || line.front() == '#') continue;
    std::string_view rest = line;
    const std::string_view name = data::NextWhitespaceToken(rest);
    std::vector<std::uint32_t> ids;
    for (std::string_view token = data::NextWhitespaceToken(rest); !token.empty();
         token = data::NextWhitespaceToken(rest)) {
      const std::optional<std::int64_t> id = data::ParseInt64(token);
      if (!id || *id < 0 || *id > 0x7FFFFFFF) {
        return data::LineError(file.string(), cursor.line_number(),
                               fmt::format("'{}' is not a word id (an integer >= 0)", data::Quotable(token)));
      }
      ids.push_back(static_cast<std::uint32_t>(*id));
      largest = std::max(largest, ids.back());
      any = true;
    }
    corpus.document_names.emplace_back(name);
    corpus.documents.push_back(std::move(ids));
  }
  if (corpus.documents.empty()) return InvalidArgument(fmt::format("{}: holds no documents", file.string()));
  const std::filesystem::path vocabulary_file = VocabularyPathFor(file);
  std::error_code ec;
  if (std::filesystem::exists(vocabulary_file, ec)) {
    STALELEARN_ASSIGN_OR_RETURN(std::string words, data::ReadWholeFile(vocabulary_file));
    data::LineCursor word_cursor(words);
    while (word_cursor.Next(line)) corpus.vocabulary.emplace_back(line);
    // The model needs at least one word row (found by the corpus fuzzer).
    if (corpus.vocabulary.empty()) return InvalidArgument(fmt::format("{}: holds no words", vocabulary_file.string()));
    if (any && largest >= corpus.vocabulary.size()) {
      return InvalidArgument(fmt::format("{}: word id {} but {} has only {} words", file.string(), largest,
                                         vocabulary_file.string(), corpus.vocabulary.size()));
    }
  } else {
    // The vocabulary is sized by the largest id: a stray huge id would
    // allocate gigabytes here (and a count table as large later); found by
    // the corpus fuzzer. Real vocabularies have far fewer words than 4 per token.
    const std::uint64_t bound = 4 * corpus.tokens() + 65536;
    if (any && largest >= bound) {
      return InvalidArgument(fmt::format("{}: word id {} without a vocabulary file ({} missing) is implausible for {} "
                                         "tokens (at most {})",
                                         file.string(), largest, vocabulary_file.string(), corpus.tokens(), bound - 1));
    }
    corpus.vocabulary.resize(any ? largest + 1 : 1);
  }
  return corpus;
}

Status PrepareBrown(const std::filesystem::path& source, const std::filesystem::path& out) {
  STALELEARN_ASSIGN_OR_RETURN(std::vector<std::filesystem::path> files,
                              ListFiles(source / "package", IsBrownText, "Brown texts c[a-r]NN"));
  return Prepare(source, out, files, [](std::string_view text) { return StripBrownTags(text); });
}

Status PrepareSotu(const std::filesystem::path& source, const std::filesystem::path& out) {
  STALELEARN_ASSIGN_OR_RETURN(
      std::vector<std::filesystem::path> files,
      ListFiles(source / "package" / "data",
                [](const std::string& name) { return name.size() > 4 && name.ends_with(".txt"); }, "*.txt speeches"));
  return Prepare(source, out, files, [](std::string_view text) { return std::string(text); });
}

}  // namespace stalelearn::apps::lda
