#include "tests/integration/app_api_support.h"

#include <fmt/format.h>

#include <string_view>

#include "backends/builtin.h"
#include "framework/model/hash64.h"
#include "framework/model/model_checksum.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {

int WorldSize(const ApiModeCase& c) {
  return std::string_view(c.mode) == "ALLREDUCE" ? c.compute : c.compute + c.memory;
}

proto::Config ApiConfig(const ApiModeCase& c, int epochs, int samples_per_clock) {
  proto::Config config = TestConfig(c.mode, c.staleness, c.memory, epochs, samples_per_clock);
  if (c.timing) {
    UseStaleLearnTiming(config);
  }
  return config;
}

std::vector<ApiModeCase> EveryMode() {
  return {{"ssp1_2x1", "SSP", 1, 2, 1},
          {"bsp_2x2", "BSP", 0, 2, 2},
          {"asp_3x1", "ASP", 0, 3, 1},
          {"direct_2x1", "DIRECT", 0, 2, 1},
          {"allreduce_3", "ALLREDUCE", 0, 3, 0},
          {"timing_ssp1_2x1", "SSP", 1, 2, 1, /*timing=*/true}};
}

std::string ChecksumOf(const model::TableSet& tables) { return model::HexDigest(model::ModelChecksum(tables)); }

void ProblemLog::Add(std::string problem) {
  std::lock_guard lock(mutex_);
  if (problems_.size() < 50) {
    problems_.push_back(std::move(problem));
  } else {
    ++dropped_;
  }
}

std::vector<std::string> ProblemLog::problems() const {
  std::lock_guard lock(mutex_);
  return problems_;
}

std::string ProblemLog::Summary() const {
  std::lock_guard lock(mutex_);
  if (problems_.empty()) return "";
  std::string out = fmt::format("{} problem(s):", problems_.size() + static_cast<std::size_t>(dropped_));
  for (std::size_t i = 0; i < problems_.size() && i < 8; ++i) out += "\n  " + problems_[i];
  return out;
}

}  // namespace stalelearn::testing
