#include "framework/sync/shard_merger.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <cassert>
#include <cmath>
#include <cstring>

#include "framework/core/planted_defect.h"

namespace stalelearn::sync {
namespace {
// Below this many rows a parallel merge costs more than it saves.
constexpr std::size_t kParallelMergeRows = 2048;

// Index of the first NaN or infinity among `width` floats at `bytes`
// (possibly unaligned), or -1. The common all-finite case is one
// vectorisable OR over the exponent bits.
int FirstNonFinite(const std::byte* bytes, std::int32_t width) {
  constexpr std::uint32_t kExponent = 0x7F800000u;
  std::uint32_t any = 0;
  for (std::int32_t i = 0; i < width; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, bytes + i * model::kElementBytes, 4);
    any |= static_cast<std::uint32_t>((bits & kExponent) == kExponent);
  }
  if (any == 0) return -1;
  for (std::int32_t i = 0; i < width; ++i) {
    float value;
    std::memcpy(&value, bytes + i * model::kElementBytes, 4);
    if (!std::isfinite(value)) return i;
  }
  return -1;
}

float FloatAt(const std::byte* bytes, int index) {
  float value;
  std::memcpy(&value, bytes + index * model::kElementBytes, 4);
  return value;
}

}  // namespace

ShardMerger::ShardMerger(const model::ModelLayout& layout, model::MemoryIndex shard, int threads,
                         std::vector<std::unique_ptr<MergePolicy>> policies)
    : layout_(layout),
      shard_(shard),
      master_(layout.MakeShard(shard)),
      policies_(std::move(policies)),
      arena_(threads) {
  if (policies_.empty()) {
    // The default: sum everywhere, which merges every element type.
    policies_ = std::move(CreateMergePolicies({}, layout, shard)).value();
  }
  assert(policies_.size() == master_.size() && "one merge policy per table");
  for (const model::RowBlock& block : master_) stamp_.emplace_back(static_cast<std::size_t>(block.rows()), 0);
  for (const auto& policy : policies_) apply_work_.push_back(policy->ApplyWork());
  parallel_ = [this](std::size_t n, const std::function<void(std::size_t, std::size_t)>& body) {
    ForChunks(n, body);
  };
}

std::size_t ShardMerger::policy_state_bytes() const {
  std::size_t bytes = 0;
  for (const auto& policy : policies_) bytes += policy->state_bytes();
  return bytes;
}

void ShardMerger::ForChunks(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body) {
  if (n >= kParallelMergeRows && arena_.max_concurrency() > 1) {
    arena_.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 256),
                        [&](const tbb::blocked_range<std::size_t>& r) { body(r.begin(), r.end()); });
    });
  } else if (n > 0) {
    body(0, n);
  }
}

Status ShardMerger::CheckDistinctRows(const DecodedBatch& batch) {
  const std::uint64_t stamp = ++batches_seen_;
  for (const DecodedEntry& e : batch.entries) {
    std::uint64_t& s = stamp_[e.table.value][static_cast<std::size_t>(e.local_row)];
    if (s == stamp) {
      return DataLoss(fmt::format("batch names row {} of table '{}' twice", e.row.value,
                                  layout_.tables()[e.table.value].name));
    }
    s = stamp;
  }
  return Status::Ok();
}

void ShardMerger::BeginWindow() {
  assert(!in_window_ && "merge windows do not nest");
  in_window_ = true;
}

metrics::WorkCounters ShardMerger::EndWindow() {
  assert(in_window_ && "EndWindow without BeginWindow");
  in_window_ = false;
  metrics::WorkCounters work;
  for (std::size_t t = 0; t < policies_.size(); ++t) work += policies_[t]->EndWindow(master_[t], parallel_);
  return work;
}

Status ShardMerger::Diverged(const DecodedBatch& batch, std::size_t entry, const char* what, int element,
                             float value) {
  const DecodedEntry& e = batch.entries[entry];
  diverged_ = true;
  return FailedPrecondition(fmt::format("diverged: table '{}' row {} element {}: {} {} in the batch of clock {} "
                                        "(memory rank {})",
                                        layout_.tables()[e.table.value].name, e.row.value, element, what, value,
                                        batch.header.clock, shard_.value));
}

// The first entry (lowest index) for which `bad(entry)` gives an element >= 0,
// scanned in parallel; {entries, -1} if none.
template <class Bad>
std::pair<std::size_t, int> ShardMerger::FindFirst(std::size_t entries, const Bad& bad) {
  std::atomic<std::size_t> first{entries};
  ForChunks(entries, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end && i < first.load(std::memory_order_relaxed); ++i) {
      if (bad(i) >= 0) {
        std::size_t seen = first.load(std::memory_order_relaxed);
        while (i < seen && !first.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
        }
        return;
      }
    }
  });
  const std::size_t at = first.load();
  return {at, at < entries ? bad(at) : -1};
}

Result<metrics::WorkCounters> ShardMerger::Merge(const DecodedBatch& batch) {
  STALELEARN_RETURN_IF_ERROR(CheckDistinctRows(batch));
  // Divergence (a NaN or infinity) stops the run: a non-finite delta is
  // refused before anything is applied, and a row the merge made non-finite
  // (overflow) is reported after it. Integer tables cannot diverge.
  const auto delta_bad = [&](std::size_t i) {
    const DecodedEntry& e = batch.entries[i];
    const model::RowBlock& block = master_[e.table.value];
    return block.type() == model::ElementType::kFloat32 ? FirstNonFinite(e.delta, block.width()) : -1;
  };
  if (const auto [at, element] = FindFirst(batch.entries.size(), delta_bad); element >= 0) {
    return Diverged(batch, at, "delta", element, FloatAt(batch.entries[at].delta, element));
  }
  const bool own_window = !in_window_;
  if (own_window) BeginWindow();
  // Planted defect (self-tests only): every 5th batch is merged twice.
  const int times = DefectPlanted(PlantedDefect::kDeltaMergedTwice) && batches_seen_ % 5 == 0 ? 2 : 1;
  for (int time = 0; time < times; ++time) {
    ForChunks(batch.entries.size(), [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const DecodedEntry& e = batch.entries[i];
        policies_[e.table.value]->Apply(master_[e.table.value], e.local_row, e.delta);
      }
    });
  }
  const auto row_bad = [&](std::size_t i) {
    const DecodedEntry& e = batch.entries[i];
    const model::RowBlock& block = master_[e.table.value];
    return block.type() == model::ElementType::kFloat32 ? FirstNonFinite(block.RowBytes(e.local_row), block.width())
                                                         : -1;
  };
  if (const auto [at, element] = FindFirst(batch.entries.size(), row_bad); element >= 0) {
    const DecodedEntry& e = batch.entries[at];
    return Diverged(batch, at, "merged value", element, FloatAt(master_[e.table.value].RowBytes(e.local_row), element));
  }
  metrics::WorkCounters work;
  for (const DecodedEntry& e : batch.entries) work += apply_work_[e.table.value];
  if (own_window) work += EndWindow();
  return work;
}

}  // namespace stalelearn::sync
