#include "apps/lda/datasets.h"

#include <fmt/format.h>

#include "apps/lda/corpus.h"

namespace stalelearn::apps::lda {
namespace {

// documents x words, nonzeros = distinct (document, word) pairs; samples = tokens.
Result<data::DatasetSummary> SummarizeTokenCorpus(const std::filesystem::path& file) {
  STALELEARN_ASSIGN_OR_RETURN(TokenCorpus corpus, ReadTokenCorpus(file));
  data::DatasetSummary summary;
  summary.samples = corpus.tokens();
  summary.rows = corpus.documents.size();
  summary.columns = corpus.vocabulary.size();
  summary.nonzeros = corpus.distinct_pairs();
  return summary;
}

data::DatasetEntry TokenCorpusEntry(std::string name, data::DatasetPreparer prepare) {
  data::DatasetEntry entry;
  entry.relative_path = fmt::format("{0}/{0}.docs", name);
  entry.name = std::move(name);
  entry.sample_noun = "tokens";
  entry.row_noun = "documents";
  entry.column_noun = "words";
  entry.summarize = SummarizeTokenCorpus;
  entry.prepare = std::move(prepare);
  return entry;
}

}  // namespace

Status RegisterDatasets(data::DatasetCatalog& catalog) {
  STALELEARN_RETURN_IF_ERROR(catalog.Add(TokenCorpusEntry("brown", PrepareBrown)));
  return catalog.Add(TokenCorpusEntry("sotu", PrepareSotu));
}

}  // namespace stalelearn::apps::lda
