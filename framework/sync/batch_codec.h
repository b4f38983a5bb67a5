// The wire format of a batch of row deltas (one ring slot), its encoder and
// its validating decoder.
//
//   BatchHeader (64 bytes, little-endian host layout)
//   payload: entry_count entries of {u64 key = table << 48 | global row,
//            row_bytes of delta in the table's element type}
//   (8 bytes of key per row of, say, 84 bytes: the key was 16 bytes, a table word
//   and a row word, and every stage a row passes through paid for it)
//
// Entries may come in any order, but a row at most once. Our encoders write
// tables in increasing order and each table's rows increasing
// (Replica::DrainDeltasInto); DecodeBatch marks such a batch, whose rows are
// then distinct without a further check.
//
// The header has its own checksum, so a memory rank can trust a header whose
// payload is corrupt (and still count the batch as rejected).
//
//   BatchEncoder enc(layout.tables());
//   enc.Add(table, row, delta_bytes);               // copies the delta, or
//   std::byte* d = enc.BeginEntry(table, row);      // lets the caller write it
//   enc.EndEntry(/*keep=*/WriteDelta(d));           // in place (no copy)
//   std::vector<std::byte> batch = enc.Seal(sequence, clock, kEndOfClock);
//
//   STALELEARN_ASSIGN_OR_RETURN(DecodedBatch b,
//       DecodeBatch(slot_bytes, expected_sequence, layout, my_shard));
//
// Encoder: not thread-safe. DecodeBatch: stateless, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "framework/core/planted_defect.h"
#include "framework/core/status.h"
#include "framework/model/shard_layout.h"

namespace stalelearn::sync {

inline constexpr std::uint32_t kBatchMagic = 0x32424C53;  // "SLB2" (16-byte entry keys were "SLB1")
inline constexpr std::uint32_t kEndOfClock = 1u << 0;      // last batch of its clock
// Every entry holds the row's value, not a delta: the memory rank writes it
// over the master row instead of merging (ShardMerger::Merge). Only a sender
// that is the row's one writer may send it (its replica then holds master
// plus its own deltas: ssp_mode.cc), and only under the `sum` policy.
inline constexpr std::uint32_t kRowValues = 1u << 1;
// A request, not a change: every entry is a key alone (no row bytes), a row
// whose value the sender asks for; the memory rank writes those rows into
// the sender's reply area of its published region (sync/row_gather.h) and
// merges nothing. Entries name distinct rows in increasing order.
inline constexpr std::uint32_t kRowRequest = 1u << 2;
// A kRowRequest the memory rank answers only once it has merged one compute
// rank's clocks before the header's `clock` (AwaitedClocks): a stripe's
// next reader asks as soon as it knows the stripe, and the answer comes
// when the stripe's last writer is done with it, with no polls between.
inline constexpr std::uint32_t kAwaitsClocks = 1u << 3;
// A kRowRequest whose payload is a bitmap, not keys: a RowBitmap (rows
// [first, first + rows) of one table), then ceil(rows / 64) words, bit i of
// word i / 64 naming row first + i (bits past `rows` zero). Its size follows
// the range, not the rows named: a stripe's held rows at 16 compute ranks
// took more than a ring slot as keys. EncodeRowRequest writes keys where
// they fit a slot; the entries decode the same.
inline constexpr std::uint32_t kRowBitmap = 1u << 4;
struct RowBitmap {
  std::uint32_t table = 0;
  std::uint32_t reserved = 0;  // zero
  std::int64_t first = 0;
  std::uint64_t rows = 0;
};
static_assert(sizeof(RowBitmap) == 24);

struct BatchHeader {
  std::uint32_t magic = kBatchMagic;
  std::uint32_t flags = 0;
  std::uint64_t sequence = 0;       // 1, 2, ... per (compute rank, memory rank)
  std::uint64_t clock = 0;          // the sender's clock that produced it
  std::uint64_t payload_bytes = 0;
  std::uint32_t entry_count = 0;
  // How stale the model the deltas were computed on was, in epochs x 1024
  // (saturated): the trace's observed_staleness (clocks of the slowest other
  // compute rank missing from it) over the sender's clocks per epoch.
  // Staleness-aware merge policies scale the deltas by it (merge_policy.h).
  // A kAwaitsClocks request: the awaited compute rank + 1 (0: every compute
  // rank but the sender) instead (AwaitedBy).
  std::uint32_t stale_epochs_x1024 = 0;
  std::uint64_t payload_checksum = 0;
  // Timing backend: the virtual time (picoseconds) at which the batch is
  // visible at the memory rank, which merges it no earlier; 0 otherwise.
  std::int64_t visible_at_ps = 0;
  std::uint64_t header_checksum = 0;  // of the bytes above
};
static_assert(sizeof(BatchHeader) == 64);

inline constexpr std::size_t kEntryPrefixBytes = 8;
// An entry's key: the table in the top 16 bits, the global row below.
inline constexpr int kEntryTableShift = 48;
inline constexpr std::uint64_t kEntryRowMask = (std::uint64_t{1} << kEntryTableShift) - 1;
inline constexpr std::size_t kMaxBatchTables = std::size_t{1} << (64 - kEntryTableShift);
inline std::uint64_t EntryKey(model::TableId table, model::RowId row) {
  return (std::uint64_t{table.value} << kEntryTableShift) | static_cast<std::uint64_t>(row.value);
}
inline model::TableId EntryTable(std::uint64_t key) {
  return model::TableId{static_cast<std::uint32_t>(key >> kEntryTableShift)};
}
inline model::RowId EntryRow(std::uint64_t key) { return model::RowId{static_cast<std::int64_t>(key & kEntryRowMask)}; }

class BatchEncoder {
 public:
  explicit BatchEncoder(const std::vector<model::TableSpec>& tables);

  // Appends one row's delta (row_bytes of the table).
  void Add(model::TableId table, model::RowId row, std::span<const std::byte> delta);
  // Reserves an entry and returns where its row_bytes of delta go; EndEntry
  // keeps it (keep = true) or takes it back. One entry open at a time.
  // Inline: called once per changed row of a clock.
  std::byte* BeginEntry(model::TableId table, model::RowId row) {
    const std::size_t at = used_;
    const std::size_t entry = entry_bytes_[table.value];
    if (at + entry > buffer_.size()) [[unlikely]] Reserve(at + entry);
    std::byte* out = buffer_.data() + at;
    const std::uint64_t key = EntryKey(table, row);
    std::memcpy(out, &key, 8);
    open_at_ = at;
    used_ = at + entry;
    return out + kEntryPrefixBytes;
  }
  void EndEntry(bool keep) {
    if (keep && entries_ == 1 && DefectPlanted(PlantedDefect::kDeltaDropped) && !dropped_) {
      dropped_ = true;  // planted defect (self-tests only): the batch's second row is lost
      keep = false;
    }
    if (keep) {
      ++entries_;
    } else {
      used_ = open_at_;
    }
  }
  std::size_t entry_count() const { return entries_; }
  // Header + payload size if sealed now.
  std::size_t encoded_bytes() const { return used_; }
  // Size an entry of `table` adds.
  std::size_t EntryBytes(model::TableId table) const { return entry_bytes_[table.value]; }

  // Returns header + payload (encoded in place: no copy) and starts an empty
  // batch, with no memory until an entry or Recycle gives it some.
  std::vector<std::byte> Seal(std::uint64_t sequence, std::uint64_t clock, std::uint32_t flags,
                              std::uint32_t stale_epochs_x1024 = 0);
  // Hands back a sealed batch once sent: the next batch reuses its memory
  // (no allocation, no fresh pages per batch). Ignored mid-batch.
  void Recycle(std::vector<std::byte> buffer);
  // Whether Recycle would keep a buffer of `capacity` bytes (the caller
  // then hands it over; otherwise it keeps it for another encoder or clock).
  bool Wants(std::size_t capacity) const { return entries_ == 0 && capacity > buffer_.size(); }

 private:
  // Grows without zero-filling: bytes [0, used_) are the header space and the
  // payload; the rest is capacity kept across batches.
  void Reserve(std::size_t bytes);

  std::vector<std::size_t> entry_bytes_;  // [table]: prefix + row bytes
  std::vector<std::byte> buffer_;  // header space, then the payload
  std::size_t used_ = 0;
  std::size_t open_at_ = 0;  // start of the entry BeginEntry opened
  std::size_t entries_ = 0;
  bool dropped_ = false;  // planted defect kDeltaDropped fired in this batch
};

struct DecodedEntry {
  model::TableId table;
  model::RowId row;          // global row
  std::int64_t local_row;    // inside the receiving shard
  const std::byte* delta;    // points into the decoded bytes
};

struct DecodedBatch {
  BatchHeader header;
  std::vector<DecodedEntry> entries;
  // Set by DecodeBatch when tables come in increasing order and each table's
  // rows strictly increase (as our encoders send them): the rows are then
  // distinct without a further check (ShardMerger).
  bool increasing = false;
};

// What a kAwaitsClocks request's answer waits for: compute rank `rank`'s
// clocks before `before` merged (`rank` -1: those of every compute rank but
// the sender).
struct AwaitedClocks {
  int rank = -1;
  std::uint64_t before = 0;
  friend bool operator==(const AwaitedClocks&, const AwaitedClocks&) = default;
};

// A kRowRequest batch naming `keys` (EntryKey; distinct, increasing),
// answered at once or, with `awaits`, once they hold (kAwaitsClocks): as
// keys where they fit `slot_bytes` (a ring slot), else as a bitmap
// (kRowBitmap) where that is smaller. Keys where they fit: on the timing
// backend bitmaps for the 64:8 synthetic run's small requests made its
// hand-overs and final read wait longer (3% of its time).
std::vector<std::byte> EncodeRowRequest(std::span<const std::uint64_t> keys, std::uint64_t sequence,
                                        std::optional<AwaitedClocks> awaits = std::nullopt,
                                        std::size_t slot_bytes = SIZE_MAX);
// The bytes EncodeRowRequest writes for `keys` and `slot_bytes`, header included.
std::size_t EncodedRowRequestBytes(std::span<const std::uint64_t> keys, std::size_t slot_bytes = SIZE_MAX);
// What a request's answer waits for; nullopt: nothing (answered at once).
inline std::optional<AwaitedClocks> AwaitedBy(const BatchHeader& header) {
  if ((header.flags & kAwaitsClocks) == 0) return std::nullopt;
  return AwaitedClocks{static_cast<int>(header.stale_epochs_x1024) - 1, header.clock};
}

// Sets the header's visible_at_ps of an encoded batch and re-seals the header
// checksum (the writer stamps a batch right before putting it).
void StampVisibleAt(std::span<std::byte> batch, std::int64_t visible_at_ps);

// Reads the header only and checks magic and header checksum (kDataLoss).
Result<BatchHeader> DecodeHeader(std::span<const std::byte> bytes);

// Full validation (I3, I7): header, expected sequence, payload size within
// `bytes`, payload checksum, every entry's table and row inside `shard`
// (the merger rejects a row named twice). kDataLoss for corruption,
// kOutOfRange for foreign rows. Entries point
// into `bytes`, which must outlive the result.
Result<DecodedBatch> DecodeBatch(std::span<const std::byte> bytes, std::uint64_t expected_sequence,
                                 const model::ModelLayout& layout, model::MemoryIndex shard);
// The same with the header already decoded by DecodeHeader from `bytes`: one
// header decode per batch for a caller that needs the header first.
Result<DecodedBatch> DecodeBatch(const BatchHeader& header, std::span<const std::byte> bytes,
                                 std::uint64_t expected_sequence, const model::ModelLayout& layout,
                                 model::MemoryIndex shard);

// Decodes a batch this rank encoded itself (trusted: replays own deltas for
// read-your-writes). Calls fn(table, row, delta) per entry; under kRowValues
// (BatchFlags) the bytes are the row's value.
template <class Fn>
void ForEachOwnEntry(std::span<const std::byte> bytes, const std::vector<model::TableSpec>& tables, Fn&& fn);
// The flags of a batch this rank encoded itself (trusted, as above).
inline std::uint32_t OwnBatchFlags(std::span<const std::byte> bytes) {
  BatchHeader header;
  std::memcpy(&header, bytes.data(), sizeof header);
  return header.flags;
}

// ---- implementation ----
template <class Fn>
void ForEachOwnEntry(std::span<const std::byte> bytes, const std::vector<model::TableSpec>& tables, Fn&& fn) {
  std::size_t at = sizeof(BatchHeader);
  while (at + kEntryPrefixBytes <= bytes.size()) {
    std::uint64_t key;
    std::memcpy(&key, bytes.data() + at, 8);
    at += kEntryPrefixBytes;
    const model::TableId table = EntryTable(key);
    fn(table, EntryRow(key), bytes.data() + at);
    at += tables[table.value].row_bytes();
  }
}

}  // namespace stalelearn::sync
