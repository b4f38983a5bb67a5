#include "apps/lr/datasets.h"

#include <fmt/format.h>

#include <algorithm>

#include "apps/lr/spam_bag_of_words.h"
#include "framework/data/libsvm.h"

namespace stalelearn::apps::lr {
namespace {

// The LIBSVM shape and how many rows are positive (label > 0) or not: a binary
// classifier's data set should say how balanced it is.
data::DatasetSummarizer LabelCountingSummarizer(std::string positive_name, std::string negative_name) {
  return [positive_name, negative_name](const std::filesystem::path& file) -> Result<data::DatasetSummary> {
    STALELEARN_ASSIGN_OR_RETURN(data::SparseDataset sparse, data::ReadLibsvm(file));
    const auto positive = std::count_if(sparse.labels.begin(), sparse.labels.end(), [](float y) { return y > 0; });
    data::DatasetSummary summary;
    summary.samples = sparse.rows();
    summary.rows = sparse.rows();
    summary.columns = sparse.num_columns;
    summary.nonzeros = sparse.nonzeros();
    summary.note = fmt::format("{} {} (+1), {} {} (-1)", positive, positive_name,
                               sparse.rows() - static_cast<std::size_t>(positive), negative_name);
    return summary;
  };
}

}  // namespace

Status RegisterDatasets(data::DatasetCatalog& catalog) {
  data::DatasetEntry spam;
  spam.name = "spam";
  spam.relative_path = "spam/spam.libsvm";
  spam.format = data::DatasetFormat::kLibsvm;
  spam.sample_noun = "mails";
  spam.row_noun = "mails";
  spam.column_noun = "words";
  spam.summarize = LabelCountingSummarizer("spam", "ham");
  spam.prepare = PrepareSpamBagOfWords;
  STALELEARN_RETURN_IF_ERROR(catalog.Add(std::move(spam)));

  data::DatasetEntry heart_scale;
  heart_scale.name = "heart_scale";
  heart_scale.relative_path = "heart_scale/heart_scale";
  heart_scale.format = data::DatasetFormat::kLibsvm;
  return catalog.Add(std::move(heart_scale));
}

}  // namespace stalelearn::apps::lr
