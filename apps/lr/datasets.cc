#include "apps/lr/datasets.h"

#include <fmt/format.h>

#include <algorithm>

#include "apps/lr/spam_bag_of_words.h"
#include "framework/data/libsvm.h"

namespace stalelearn::apps::lr {
namespace {

// The LIBSVM shape and the labels (+1 / -1 or 0/1): a binary classifier's
// data set should say how balanced it is.
data::DatasetSummarizer LabelCountingSummarizer(std::string positive_name, std::string negative_name) {
  return [positive_name, negative_name](const std::filesystem::path& file) -> Result<data::DatasetSummary> {
    STALELEARN_ASSIGN_OR_RETURN(data::SparseDataset sparse, data::ReadLibsvm(file));
    const auto positive = std::count_if(sparse.labels.begin(), sparse.labels.end(), [](float y) { return y > 0; });
    data::DatasetSummary summary{.samples = sparse.rows(),
                                 .rows = sparse.rows(),
                                 .columns = sparse.num_columns,
                                 .nonzeros = sparse.nonzeros()};
    summary.note = fmt::format("{} {} (+1), {} {} (-1)", positive, positive_name,
                               sparse.rows() - static_cast<std::size_t>(positive), negative_name);
    return summary;
  };
}

}  // namespace

Status RegisterDatasets(data::DatasetCatalog& catalog) {
  STALELEARN_RETURN_IF_ERROR(catalog.Add({.name = "spam",
                                          .relative_path = "spam/spam.libsvm",
                                          .format = data::DatasetFormat::kLibsvm,
                                          .sample_noun = "mails",
                                          .row_noun = "mails",
                                          .column_noun = "words",
                                          .summarize = LabelCountingSummarizer("spam", "ham"),
                                          .prepare = PrepareSpamBagOfWords}));
  return catalog.Add({.name = "heart_scale",
                      .relative_path = "heart_scale/heart_scale",
                      .format = data::DatasetFormat::kLibsvm,
                      .sample_noun = "samples",
                      .row_noun = "samples",
                      .column_noun = "features"});
}

}  // namespace stalelearn::apps::lr
