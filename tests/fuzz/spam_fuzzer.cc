// Fuzzes the SpamAssassin converter (apps/lr/spam_bag_of_words.h): mails
// (the input split at form feeds, labelled spam and ham in turn) go through
// body extraction, tokenization and the bag of words, whose LIBSVM text must
// parse back with the LIBSVM reader to the same rows and nonzeros.
#include <algorithm>
#include <vector>

#include "apps/lr/spam_bag_of_words.h"
#include "framework/data/libsvm.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

bool IsToken(std::string_view token) {
  if (token.size() < 2 || token[0] < 'a' || token[0] > 'z') return false;
  return std::all_of(token.begin(), token.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '\''; });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stalelearn;
  std::vector<apps::lr::LabelledMail> mails;
  std::string_view rest = fuzz::AsText(data, size);
  while (!rest.empty() && mails.size() < 64) {
    const auto [mail, after] = fuzz::SplitAt(rest, "\f");
    const std::string_view body = apps::lr::MailBody(mail);
    FUZZ_CHECK(body.empty() || (body.data() >= mail.data() && body.data() + body.size() <= mail.data() + mail.size()));
    std::vector<std::string> tokens = apps::lr::DistinctTokens(body);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      FUZZ_CHECK(IsToken(tokens[i]));
      FUZZ_CHECK(i == 0 || tokens[i - 1] < tokens[i]);
    }
    mails.push_back({mails.size() % 2 == 0 ? +1 : -1, std::move(tokens)});
    rest = after;
  }
  const apps::lr::BagOfWords bag = apps::lr::BuildBagOfWords(mails, size % 2 == 0 ? 2 : 1);
  FUZZ_CHECK(bag.rows.size() == mails.size() && bag.labels.size() == mails.size());
  Result<data::SparseDataset> reparsed = data::ParseLibsvm(apps::lr::FormatLibsvm(bag), "bag of words");
  FUZZ_CHECK(reparsed.ok());
  FUZZ_CHECK(reparsed->rows() == bag.rows.size());
  FUZZ_CHECK(reparsed->nonzeros() == bag.nonzeros());
  FUZZ_CHECK(reparsed->num_columns <= bag.vocabulary.size());
  const std::string vocabulary = apps::lr::FormatVocabulary(bag);
  FUZZ_CHECK(static_cast<std::size_t>(std::count(vocabulary.begin(), vocabulary.end(), '\n')) ==
             bag.vocabulary.size());
  return 0;
}
