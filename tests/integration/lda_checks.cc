#include "tests/integration/lda_checks.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string_view>
#include <vector>

#include "tests/integration/app_api_support.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

double Metric(const proto::CurvePoint& point, const std::string& name) {
  const auto it = point.metrics().find(name);
  return it == point.metrics().end() ? -1 : it->second;
}

}  // namespace

std::unique_ptr<apps::lda::LdaApp> SyntheticLda(int topics, double alpha, double beta, apps::lda::SamplerKind sampler) {
  constexpr int kPlanted = 4, kTopicWords = 30, kShared = 20, kDocuments = 120, kLength = 60;
  apps::lda::TokenCorpus corpus;
  for (int w = 0; w < kPlanted * kTopicWords + kShared; ++w) corpus.vocabulary.push_back("w" + std::to_string(w));
  std::mt19937_64 random(11);
  for (int d = 0; d < kDocuments; ++d) {
    const int main_topic = d % kPlanted, other = (d / kPlanted) % kPlanted;
    std::vector<std::uint32_t> words;
    for (int t = 0; t < kLength; ++t) {
      const int topic = random() % 10 < 8 ? main_topic : other;
      const bool shared = random() % 10 == 0;
      words.push_back(static_cast<std::uint32_t>(shared ? kPlanted * kTopicWords + random() % kShared
                                                        : topic * kTopicWords + random() % kTopicWords));
    }
    corpus.document_names.push_back("d" + std::to_string(d));
    corpus.documents.push_back(std::move(words));
  }
  std::vector<std::int64_t> train, test;
  for (int d = 0; d < kDocuments; ++d) (d % 10 == 3 ? test : train).push_back(d);
  apps::lda::LdaParams params;
  params.priors = {alpha, beta, static_cast<int>(corpus.vocabulary.size()), topics};
  params.seed = 7;
  params.sampler = sampler;
  return std::make_unique<apps::lda::LdaApp>("synthetic", std::move(corpus), std::move(train), std::move(test),
                                             params);
}

std::string LdaCountProblems(const proto::Report& report) {
  std::string problems;
  for (const proto::CurvePoint& point : report.curve()) {
    if (Metric(point, "count_errors") != 0) {
      problems += fmt::format("{}: epoch {}: {} rows; ", kLdaRowSumMessage, point.epoch(),
                              Metric(point, "count_errors"));
    }
    if (Metric(point, "negative_counts") != 0) {
      problems += fmt::format("{}: epoch {}: {} counts; ", kLdaNegativeCountMessage, point.epoch(),
                              Metric(point, "negative_counts"));
    }
  }
  if (report.final().metrics().at("assignment_mismatch") != 0) problems += fmt::format("{}; ", kLdaAssignmentMessage);
  return problems;
}

void CheckLdaCountsExact(const LdaModeCase& c, apps::lda::SamplerKind sampler) {
  const std::unique_ptr<apps::lda::LdaApp> app = SyntheticLda(4, 0.1, 0.1, sampler);
  const proto::Config config = ApiConfig(c, /*epochs=*/4, /*samples_per_clock=*/256);
  const proto::Report report = RunLocal(config, *app, WorldSize(c)).report();
  ASSERT_EQ(report.curve_size(), 4);
  const std::string problems = LdaCountProblems(report);
  if (!problems.empty()) ADD_FAILURE() << problems;
  std::int64_t samples = 0;
  for (const proto::RankReport& r : report.ranks()) samples += r.samples();
  EXPECT_EQ(samples, 4 * app->TrainingSamples());
}

}  // namespace stalelearn::testing
