// WordTopicSets (apps/lda/word_topic_sets.h): a word's set is built from its
// row at the word's first look in a clock and then follows the kernel's
// count changes exactly (a count reaching 0 leaves, reaching 1 joins, a stale
// negative count rising to 0 stays out); a new clock forgets the rows.
#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <vector>

#include "apps/lda/word_topic_sets.h"

namespace stalelearn::apps::lda {
namespace {

std::vector<int> Members(TopicSet set) {
  std::vector<int> topics;
  for (std::size_t b = 0; b < set.size(); ++b) {
    for (std::uint64_t bits = set[b]; bits != 0; bits &= bits - 1) {
      topics.push_back(static_cast<int>(64 * b) + std::countr_zero(bits));
    }
  }
  return topics;
}

std::vector<int> Positive(const std::vector<std::int32_t>& row) {
  std::vector<int> topics;
  for (std::size_t k = 0; k < row.size(); ++k) {
    if (row[k] > 0) topics.push_back(static_cast<int>(k));
  }
  return topics;
}

TEST(WordTopicSets, FollowRandomCountChangesExactlyAcrossBitsetWords) {
  constexpr int kTopics = 70;  // two 64-bit words
  WordTopicSets sets(/*words=*/3, kTopics);
  std::vector<std::int32_t> row(kTopics);
  std::mt19937 random(5);
  for (auto& n : row) n = static_cast<std::int32_t>(random() % 4) - 1;  // -1..2: stale negatives too
  sets.NextClock();
  EXPECT_EQ(sets.Row(1), nullptr);
  EXPECT_EQ(sets.Fill(1, row), row.data());
  EXPECT_EQ(sets.Row(1), row.data());
  EXPECT_EQ(Members(sets.Topics(1)), Positive(row));
  for (int step = 0; step < 5000; ++step) {
    const auto k = static_cast<std::int32_t>(random() % kTopics);
    if (random() % 2 == 0) {
      sets.Decremented(1, k, --row[static_cast<std::size_t>(k)]);
    } else {
      sets.Incremented(1, k, ++row[static_cast<std::size_t>(k)]);
    }
    ASSERT_EQ(Members(sets.Topics(1)), Positive(row)) << "step " << step;
  }
  EXPECT_TRUE(Members(sets.Topics(0)).empty());
  sets.NextClock();
  EXPECT_EQ(sets.Row(1), nullptr) << "a new clock must fetch the row again";
}

}  // namespace
}  // namespace stalelearn::apps::lda
