// Fuzzes the memory rank's batch validation (framework/sync/batch_codec.h,
// DecodeBatch) and the merge behind it (shard_merger.h), as RingPoller runs
// them on a slot's bytes from a peer.
//
// Input: one control byte, then the slot's bytes (header + payload). The
// control byte lets the fuzzer get past the checksums, which it could not
// forge: bit 0 re-seals the header (magic and header checksum), bit 1 makes
// payload_bytes and the payload checksum match the bytes, bit 2 expects the
// header's own sequence, bits 3-4 pick the float table's merge policy, bit 5
// the receiving shard.
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "framework/model/hash64.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/merge_policy.h"
#include "framework/sync/row_gather.h"
#include "framework/sync/shard_merger.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace stalelearn;

// A float table and an int table, over two memory ranks, hash-partitioned.
const model::ModelLayout& Layout() {
  static const model::ModelLayout layout(
      {{"w", model::ElementType::kFloat32, 11, 3}, {"n", model::ElementType::kInt32, 5, 2}}, 2,
      model::PartitionScheme::kHash);
  return layout;
}

// One merger per (policy, shard), built once: a merger's arena is costly.
sync::ShardMerger& Merger(int policy, int shard) {
  static std::array<std::unique_ptr<sync::ShardMerger>, 8> mergers;
  std::unique_ptr<sync::ShardMerger>& merger = mergers[policy * 2 + shard];
  if (!merger) {
    static const char* const kNames[] = {"sum", "average", "adagrad", "adam"};
    std::vector<sync::MergePolicySpec> specs(2);
    specs[0].name = kNames[policy];
    Result<std::vector<std::unique_ptr<sync::MergePolicy>>> policies =
        sync::CreateMergePolicies(specs, Layout(), model::MemoryIndex{shard});
    FUZZ_CHECK(policies.ok());
    merger = std::make_unique<sync::ShardMerger>(Layout(), model::MemoryIndex{shard}, 1, std::move(*policies));
  }
  return *merger;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t control = data[0];
  std::vector<std::byte> slot(size - 1);
  if (!slot.empty()) std::memcpy(slot.data(), data + 1, slot.size());
  sync::BatchHeader header;
  if (slot.size() >= sizeof header) {
    std::memcpy(&header, slot.data(), sizeof header);
    if (control & 2) {
      header.payload_bytes = slot.size() - sizeof header;
      header.payload_checksum = model::Hash64(std::span(slot).subspan(sizeof header));
    }
    if (control & 1) header.magic = sync::kBatchMagic;
    std::memcpy(slot.data(), &header, sizeof header);
    if (control & 1) sync::StampVisibleAt(slot, header.visible_at_ps);
  }
  const std::uint64_t expected_sequence = (control & 4) ? header.sequence : 1;
  const int policy = (control >> 3) & 3;
  const int shard = (control >> 5) & 1;

  Result<sync::DecodedBatch> batch = sync::DecodeBatch(slot, expected_sequence, Layout(), model::MemoryIndex{shard});
  if (!batch.ok()) {
    FUZZ_CHECK(batch.status().code() == StatusCode::kDataLoss || batch.status().code() == StatusCode::kOutOfRange);
    return 0;
  }
  FUZZ_CHECK(batch->entries.size() == batch->header.entry_count);
  const bool request = (batch->header.flags & sync::kRowRequest) != 0;
  for (const sync::DecodedEntry& entry : batch->entries) {
    const model::RowPartition& partition = Layout().partition(entry.table);
    FUZZ_CHECK(partition.Owner(entry.row).value == shard);
    FUZZ_CHECK(entry.local_row >= 0 && entry.local_row < partition.ShardRows(model::MemoryIndex{shard}));
    if (request) {
      FUZZ_CHECK(entry.delta == nullptr);  // keys alone
    } else {
      FUZZ_CHECK(entry.delta >= slot.data() && entry.delta < slot.data() + slot.size());
    }
  }
  sync::ShardMerger& merger = Merger(policy, shard);
  if (request) {  // as RingPoller: answered from the master, never merged
    FUZZ_CHECK(merger.Merge(*batch).status().code() == StatusCode::kInvalidArgument);
    std::vector<std::byte> area(sizeof(sync::RowReplyHeader) + sync::RowRequestBytes(*batch, Layout()));
    FUZZ_CHECK(sync::WriteRowReply(*batch, merger.master(), area, 0).ok());
    sync::RowReplyHeader reply;
    std::memcpy(&reply, area.data(), sizeof reply);
    FUZZ_CHECK(reply.sequence == batch->header.sequence && reply.rows == batch->entries.size());
    return 0;
  }
  merger.BeginWindow();
  Result<metrics::WorkCounters> merged = merger.Merge(*batch);
  // A valid batch may still carry a NaN or infinity: the merge refuses it as
  // divergence (kFailedPrecondition, naming table, row and clock). Row values
  // (kRowValues) for a table whose merge is not sum are refused whole
  // (kInvalidArgument).
  const bool values = (batch->header.flags & sync::kRowValues) != 0;
  FUZZ_CHECK(merged.ok() || merged.status().code() == StatusCode::kDataLoss ||
             (values && merged.status().code() == StatusCode::kInvalidArgument) ||
             (merged.status().code() == StatusCode::kFailedPrecondition &&
              merged.status().message().starts_with("diverged")));
  merger.EndWindow();
  return 0;
}
