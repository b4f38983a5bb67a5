// Shared pieces of the App API tests (app_api_*_test.cc): the consistency
// modes each feature runs in, a config for each, and a thread-safe list of
// problems the test apps' kernels found (a kernel cannot fail a gtest
// assertion from a rank's thread usefully, so it records what it saw and the
// test body asserts on the record).
//
// Thread-safety: ProblemLog is safe from every rank's thread; the rest are
// value types and pure functions.
#pragma once

#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "framework/model/row_block.h"
#include "framework/proto/config.pb.h"

namespace stalelearn::testing {

// One mode under test: `memory` is ignored by ALLREDUCE (every rank computes).
// `timing`: the timing backend over local (virtual-time order, deterministic).
struct ApiModeCase {
  const char* label;
  const char* mode;
  int staleness;
  int compute;
  int memory;
  bool timing = false;
};
inline void PrintTo(const ApiModeCase& c, std::ostream* os) { *os << c.label; }

// Ranks to start for `c`.
int WorldSize(const ApiModeCase& c);

// TestConfig (train_support.h) for `c`, priced on the StaleLearn presets when
// c.timing.
proto::Config ApiConfig(const ApiModeCase& c, int epochs, int samples_per_clock);

// SSP s=1, BSP, ASP, DIRECT, ALLREDUCE (local backend), and SSP s=1 on the
// timing backend over local.
std::vector<ApiModeCase> EveryMode();

// The report's model checksum of `tables` (what report.model_checksum holds).
std::string ChecksumOf(const model::TableSet& tables);

// gtest's name for a parameterised case.
struct ApiModeLabel {
  template <class Info>
  std::string operator()(const Info& info) const {
    return info.param.label;
  }
};

class ProblemLog {
 public:
  void Add(std::string problem);
  std::vector<std::string> problems() const;
  // "" when empty; else the count and the first few, one per line.
  std::string Summary() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> problems_;
  int dropped_ = 0;
};

}  // namespace stalelearn::testing
