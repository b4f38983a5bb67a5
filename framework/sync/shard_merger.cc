#include "framework/sync/shard_merger.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <cassert>
#include <cmath>
#include <cstring>

#include "framework/core/planted_defect.h"
#include "framework/core/sanitizer.h"
#include "framework/core/target_clones.h"

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

// row += scale x delta over `width` floats (delta possibly unaligned); returns
// non-zero if a result is a NaN or infinity. One vectorisable loop: the
// divergence check costs no second pass over the row. Inlined into
// AddRows, whose clones pick the vector width once per batch, not per row.
[[gnu::always_inline]] inline std::uint32_t AddFloatRow(float* __restrict row, const std::byte* __restrict delta,
                                                        std::int32_t width, float scale) {
  constexpr std::uint32_t kExponent = 0x7F800000u;
  std::uint32_t any = 0;
  for (std::int32_t i = 0; i < width; ++i) {
    float d;
    std::memcpy(&d, delta + i * model::kElementBytes, 4);
    const float sum = row[i] + d * scale;  // scale 1: exact, the plain sum
    row[i] = sum;
    std::uint32_t bits;
    std::memcpy(&bits, &sum, 4);
    any |= static_cast<std::uint32_t>((bits & kExponent) == kExponent);
  }
  return any;
}

// row += delta over `width` int32s, wrapping (exact: I4).
[[gnu::always_inline]] inline void AddIntRow(std::int32_t* __restrict row, const std::byte* __restrict delta,
                                             std::int32_t width) {
  for (std::int32_t i = 0; i < width; ++i) {
    std::uint32_t d;
    std::memcpy(&d, delta + i * model::kElementBytes, 4);
    row[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(row[i]) + d);
  }
}

// How many entries ahead the merge prefetches master rows: random rows of a
// shard larger than the caches are misses, and issuing the next ones early
// overlaps them (a row-at-a-time merge runs at memory latency, not bandwidth).
constexpr std::size_t kPrefetchDistance = 16;

void PrefetchForWrite(const std::byte* bytes, std::size_t length) {
  for (std::size_t at = 0; at < length; at += 64) __builtin_prefetch(bytes + at, 1, 3);
}

// Asks for the master row of entry i + kPrefetchDistance, if it is before `end`.
[[gnu::always_inline]] inline void PrefetchAhead(const DecodedEntry* entries, std::size_t i, std::size_t end,
                                                 const ShardMerger::TableView* views) {
  if (i + kPrefetchDistance >= end) return;
  const DecodedEntry& ahead = entries[i + kPrefetchDistance];
  const ShardMerger::TableView& v = views[ahead.table.value];
  PrefetchForWrite(v.base + static_cast<std::size_t>(ahead.local_row) * v.row_bytes, v.row_bytes);
}

// Entries [begin, end) of tables whose policy adds the (scaled) delta, with
// master rows prefetched kPrefetchDistance entries ahead. Returns the first
// entry whose merged float row holds a NaN or infinity, or `end`.
STALELEARN_TARGET_CLONES_AVX2 std::size_t AddRows(const DecodedEntry* entries, std::size_t begin, std::size_t end,
                                                  const ShardMerger::TableView* views) {
  std::size_t bad = end;
  for (std::size_t i = begin; i < end; ++i) {
    PrefetchAhead(entries, i, end, views);
    const DecodedEntry& e = entries[i];
    const ShardMerger::TableView& v = views[e.table.value];
    std::byte* row = v.base + static_cast<std::size_t>(e.local_row) * v.row_bytes;
    if (v.is_float) {
      if (AddFloatRow(reinterpret_cast<float*>(row), e.delta, v.width, v.scale) != 0 && bad == end) bad = i;
    } else {
      AddIntRow(reinterpret_cast<std::int32_t*>(row), e.delta, v.width);
    }
  }
  return bad;
}

// first = min(first, i), by any of the chunks merging in parallel.
void LowerTo(std::atomic<std::size_t>& first, std::size_t i) {
  std::size_t seen = first.load(std::memory_order_relaxed);
  while (i < seen && !first.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
  }
}

metrics::WorkCounters Times(const metrics::WorkCounters& one, std::size_t n) {
  metrics::WorkCounters w;
  w.flops = one.flops * static_cast<double>(n);
  w.bytes = one.bytes * static_cast<double>(n);
  w.random_row_accesses = one.random_row_accesses * static_cast<std::int64_t>(n);
  return w;
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
  for (const model::RowBlock& block : master_) {
    named_.emplace_back((static_cast<std::size_t>(block.rows()) + 63) / 64, 0);
  }
  for (const auto& policy : policies_) {
    apply_work_.push_back(policy->ApplyWork());
    adds_inline_.push_back(policy->adds_delta() ? 1 : 0);
    any_held_ = any_held_ || !policy->adds_delta();
  }
  parallel_ = [this](std::size_t n, const std::function<void(std::size_t, std::size_t)>& body) {
    ForChunks(n, body);
  };
}

std::unique_ptr<ShardMerger> ShardMerger::Fork() const {
  std::vector<std::unique_ptr<MergePolicy>> policies;
  for (const auto& policy : policies_) policies.push_back(policy->Clone());
  auto fork = std::make_unique<ShardMerger>(layout_, shard_, arena_.max_concurrency(), std::move(policies));
  fork->master_ = master_;
  fork->batches_seen_ = batches_seen_;
  fork->in_window_ = in_window_;
  fork->diverged_ = diverged_;
  return fork;
}

std::size_t ShardMerger::policy_state_bytes() const {
  std::size_t bytes = 0;
  for (const auto& policy : policies_) bytes += policy->state_bytes();
  return bytes;
}

void ShardMerger::ForChunks(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body) {
  if (n >= kParallelMergeRows && arena_.max_concurrency() > 1) {
    TbbHappensBefore hb;  // TBB's ordering, told to TSan (framework/core/sanitizer.h)
    hb.BeforeLoop();
    arena_.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 256), [&](const tbb::blocked_range<std::size_t>& r) {
        hb.ChunkBegins();
        body(r.begin(), r.end());
        hb.ChunkEnds();
      });
    });
    hb.AfterLoop();
  } else if (n > 0) {
    body(0, n);
  }
}

Status ShardMerger::CheckDistinctRows(const DecodedBatch& batch) {
  ++batches_seen_;
  const std::vector<DecodedEntry>& entries = batch.entries;
  if (batch.increasing) return Status::Ok();  // rows in increasing order (DecodeBatch): distinct
  // Any other order (a peer may send one): one bit per row.
  // One bit per shard row (a shard of 10^6 rows: 125 KB, cache resident),
  // set for this batch's rows, then cleared again.
  const auto bit = [&](const DecodedEntry& e) -> std::pair<std::uint64_t*, std::uint64_t> {
    const auto row = static_cast<std::size_t>(e.local_row);
    return {&named_[e.table.value][row / 64], std::uint64_t{1} << (row % 64)};
  };
  std::size_t checked = 0;
  for (; checked < entries.size(); ++checked) {
    const auto [word, mask] = bit(entries[checked]);
    if ((*word & mask) != 0) break;
    *word |= mask;
  }
  for (std::size_t i = 0; i < checked; ++i) {
    const auto [word, mask] = bit(entries[i]);
    *word &= ~mask;
  }
  if (checked < entries.size()) {
    const DecodedEntry& e = entries[checked];
    return DataLoss(
        fmt::format("batch names row {} of table '{}' twice", e.row.value, layout_.tables()[e.table.value].name));
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
        LowerTo(first, i);
        return;
      }
    }
  });
  const std::size_t at = first.load();
  return {at, at < entries ? bad(at) : -1};
}

void ShardMerger::FillViews(std::uint32_t stale_epochs_x1024) {
  // Each table's base and shape, looked up once per batch instead of per row.
  // (Refilled per batch, not kept from construction: a restore may replace
  // the master's storage; the vector's capacity is reused.)
  views_.clear();
  for (std::size_t t = 0; t < master_.size(); ++t) {
    model::RowBlock& block = master_[t];
    views_.push_back({block.RowBytes(0), block.row_bytes(), block.width(),
                      block.type() == model::ElementType::kFloat32, adds_inline_[t] != 0,
                      policies_[t]->DeltaScale(stale_epochs_x1024)});
  }
}

Result<metrics::WorkCounters> ShardMerger::WriteRows(const DecodedBatch& batch) {
  const std::vector<DecodedEntry>& entries = batch.entries;
  for (const DecodedEntry& e : entries) {
    if (policies_[e.table.value]->name() != "sum") {
      return InvalidArgument(fmt::format("a batch of row values names table '{}', merged by '{}': values are "
                                         "written only where the merge is sum",
                                         layout_.tables()[e.table.value].name, policies_[e.table.value]->name()));
    }
  }
  std::atomic<std::size_t> first_bad{entries.size()};
  ForChunks(entries.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      PrefetchAhead(entries.data(), i, end, views_.data());
      const DecodedEntry& e = entries[i];
      model::RowBlock& block = master_[e.table.value];
      std::byte* row = block.RowBytes(e.local_row);
      model::CopyRow(row, e.delta, block.row_bytes());
      if (block.type() == model::ElementType::kFloat32 && FirstNonFinite(row, block.width()) >= 0) {
        LowerTo(first_bad, i);
      }
    }
  });
  if (const std::size_t at = first_bad.load(); at < entries.size()) {
    const std::byte* row = master_[entries[at].table.value].RowBytes(entries[at].local_row);
    const int element = FirstNonFinite(row, master_[entries[at].table.value].width());
    return Diverged(batch, at, "written value", element, FloatAt(row, element));
  }
  // Written, not read and written again: the bytes go in once, no element
  // is added (a timing model prices a write, metrics::ToMergeWork).
  metrics::WorkCounters work;
  for (const DecodedEntry& e : entries) work.bytes += static_cast<double>(master_[e.table.value].row_bytes());
  return work;
}

Result<metrics::WorkCounters> ShardMerger::Merge(const DecodedBatch& batch) {
  // A row request names rows and carries no deltas (RingPoller answers it).
  if ((batch.header.flags & kRowRequest) != 0) return InvalidArgument("a row request has no deltas to merge");
  STALELEARN_RETURN_IF_ERROR(CheckDistinctRows(batch));
  if ((batch.header.flags & kRowValues) != 0) {
    FillViews(batch.header.stale_epochs_x1024);  // PrefetchAhead's
    return WriteRows(batch);
  }
  const std::vector<DecodedEntry>& entries = batch.entries;
  // Divergence (a NaN or infinity) stops the run. A policy that holds deltas
  // (average, until the window ends) has its float deltas checked first, and
  // nothing of a bad batch is applied; every merged float row is checked
  // right after it is merged, while it is in cache (sum: inside the add).
  const auto held_delta_bad = [&](std::size_t i) {
    const DecodedEntry& e = entries[i];
    const model::RowBlock& block = master_[e.table.value];
    if (adds_inline_[e.table.value] || block.type() != model::ElementType::kFloat32) return -1;
    return FirstNonFinite(e.delta, block.width());
  };
  if (any_held_) {  // sum-only shards skip this pass: their check is inside the add
    if (const auto [at, element] = FindFirst(entries.size(), held_delta_bad); element >= 0) {
      return Diverged(batch, at, "delta", element, FloatAt(entries[at].delta, element));
    }
  }
  const bool own_window = !in_window_;
  if (own_window) BeginWindow();
  FillViews(batch.header.stale_epochs_x1024);
  const std::vector<TableView>& views = views_;
  std::atomic<std::size_t> first_bad{entries.size()};
  // Planted defect (self-tests only): every 5th batch is merged twice.
  const int times = DefectPlanted(PlantedDefect::kDeltaMergedTwice) && batches_seen_ % 5 == 0 ? 2 : 1;
  for (int time = 0; time < times; ++time) {
    ForChunks(entries.size(), [&](std::size_t begin, std::size_t end) {
      std::size_t bad = end;
      if (!any_held_) {  // every table sums: one cloned loop, the add inlined
        bad = AddRows(entries.data(), begin, end, views.data());
      } else {
        // Tables mix policies: summing tables' rows one at a time.
        for (std::size_t i = begin; i < end; ++i) {
          PrefetchAhead(entries.data(), i, end, views.data());
          const DecodedEntry& e = entries[i];
          const TableView& v = views[e.table.value];
          bool non_finite = false;
          if (v.adds_inline) {
            non_finite = AddRows(entries.data(), i, i + 1, views.data()) != i + 1;
          } else {
            policies_[e.table.value]->Apply(master_[e.table.value], e.local_row, e.delta);
            const std::byte* row = v.base + static_cast<std::size_t>(e.local_row) * v.row_bytes;
            non_finite = v.is_float && FirstNonFinite(row, v.width) >= 0;
          }
          if (non_finite && bad == end) bad = i;
        }
      }
      if (bad < end) LowerTo(first_bad, bad);
    });
  }
  if (const std::size_t at = first_bad.load(); at < entries.size()) {
    const DecodedEntry& e = entries[at];
    const std::byte* row = master_[e.table.value].RowBytes(e.local_row);
    return Diverged(batch, at, "merged value", FirstNonFinite(row, master_[e.table.value].width()),
                    FloatAt(row, FirstNonFinite(row, master_[e.table.value].width())));
  }
  // The work of n rows of a table is n times one row's: count rows per table.
  metrics::WorkCounters work;
  if (apply_work_.size() == 1) {
    work = Times(apply_work_[0], entries.size());
  } else {
    std::vector<std::size_t> rows(apply_work_.size(), 0);
    for (const DecodedEntry& e : entries) ++rows[e.table.value];
    for (std::size_t t = 0; t < rows.size(); ++t) work += Times(apply_work_[t], rows[t]);
  }
  if (own_window) work += EndWindow();
  return work;
}

}  // namespace stalelearn::sync
