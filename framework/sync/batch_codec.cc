#include "framework/sync/batch_codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "framework/core/error.h"
#include "framework/core/planted_defect.h"
#include "framework/model/hash64.h"

namespace stalelearn::sync {
namespace {

constexpr std::size_t kChecksummedHeaderBytes = offsetof(BatchHeader, header_checksum);

std::uint64_t HeaderChecksum(const BatchHeader& h) {
  return model::Hash64(std::span(reinterpret_cast<const std::byte*>(&h), kChecksummedHeaderBytes), 0x5EED);
}

// Sets `h`'s payload size and both checksums from `batch` (header space,
// then the payload) and writes it at its front.
void WriteHeader(BatchHeader h, std::span<std::byte> batch) {
  h.payload_bytes = batch.size() - sizeof h;
  h.payload_checksum = model::Hash64(batch.subspan(sizeof h));
  h.header_checksum = HeaderChecksum(h);
  std::memcpy(batch.data(), &h, sizeof h);
}


// The bitmap form's payload bytes for `keys` (one table, increasing), or 0
// where they name more than one table.
std::size_t BitmapPayloadBytes(std::span<const std::uint64_t> keys) {
  if (keys.empty() || EntryTable(keys.front()).value != EntryTable(keys.back()).value) return 0;
  const auto rows = static_cast<std::uint64_t>(EntryRow(keys.back()).value - EntryRow(keys.front()).value + 1);
  return sizeof(RowBitmap) + (rows + 63) / 64 * 8;
}

// Whether EncodeRowRequest writes `keys` as a bitmap: where they do not fit
// `slot_bytes` and the bitmap is smaller.
bool AsBitmap(std::span<const std::uint64_t> keys, std::size_t slot_bytes) {
  const std::size_t bitmap = BitmapPayloadBytes(keys);
  return sizeof(BatchHeader) + keys.size_bytes() > slot_bytes && bitmap > 0 && bitmap < keys.size_bytes();
}

Status NotThisShard(const model::ModelLayout& layout, model::TableId table, model::RowId row,
                    model::MemoryIndex shard) {
  return OutOfRange(fmt::format("batch row {} of table '{}' belongs to memory rank {}, not {}", row.value,
                                layout.tables()[table.value].name, layout.partition(table).Owner(row).value,
                                shard.value));
}

// A kRowBitmap request's entries (batch_codec.h), validated as keys are.
Result<DecodedBatch> DecodeRowBitmap(const BatchHeader& h, std::span<const std::byte> payload,
                                     const model::ModelLayout& layout, model::MemoryIndex shard) {
  RowBitmap range;
  if (payload.size() < sizeof range) return DataLoss("row bitmap shorter than its range");
  std::memcpy(&range, payload.data(), sizeof range);
  const auto& tables = layout.tables();
  if (range.table >= tables.size()) {
    return DataLoss(fmt::format("row bitmap names table {} of {}", range.table, tables.size()));
  }
  if (range.reserved != 0) return DataLoss("row bitmap's reserved word is not zero");
  const model::TableSpec& spec = tables[range.table];
  if (range.first < 0 || range.rows > static_cast<std::uint64_t>(spec.rows) ||
      range.first > spec.rows - static_cast<std::int64_t>(range.rows)) {
    return OutOfRange(fmt::format("row bitmap of rows [{}, +{}) outside table '{}' ({} rows)", range.first,
                                  range.rows, spec.name, spec.rows));
  }
  const std::size_t words = (range.rows + 63) / 64;
  if (payload.size() - sizeof range != words * 8) {
    return DataLoss(fmt::format("row bitmap of {} bytes for {} rows", payload.size() - sizeof range, range.rows));
  }
  const model::TableId table{range.table};
  const model::RowPartition& partition = layout.partition(table);
  DecodedBatch out{h, {}};
  out.entries.reserve(std::min<std::size_t>(h.entry_count, range.rows));
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t word;
    std::memcpy(&word, payload.data() + sizeof range + w * 8, 8);
    if (w + 1 == words && range.rows % 64 != 0 && (word >> (range.rows % 64)) != 0) {
      return DataLoss("row bitmap names rows past its range");
    }
    for (; word != 0; word &= word - 1) {
      const model::RowId row{range.first + static_cast<std::int64_t>(w * 64) + std::countr_zero(word)};
      if (partition.Owner(row) != shard) return NotThisShard(layout, table, row, shard);
      out.entries.push_back({table, row, partition.LocalIndex(row), nullptr});
    }
  }
  if (out.entries.size() != h.entry_count) {
    return DataLoss(fmt::format("batch holds {} entries, header says {}", out.entries.size(), h.entry_count));
  }
  out.increasing = true;
  return out;
}

}  // namespace

BatchEncoder::BatchEncoder(const std::vector<model::TableSpec>& tables) {
  // Entry keys hold the table in 16 bits and the row in 48 (batch_codec.h).
  if (tables.size() > kMaxBatchTables) {
    throw Error(InvalidArgument(fmt::format("{} tables: a batch entry names at most {}", tables.size(), kMaxBatchTables)));
  }
  for (const model::TableSpec& t : tables) {
    if (static_cast<std::uint64_t>(t.rows) > kEntryRowMask + 1) {  // rows 0 .. 2^48 - 1
      throw Error(InvalidArgument(fmt::format("table {} has {} rows: a batch entry names at most 2^48", t.name, t.rows)));
    }
    entry_bytes_.push_back(kEntryPrefixBytes + t.row_bytes());
  }
  used_ = sizeof(BatchHeader);
}

void BatchEncoder::Reserve(std::size_t bytes) {
  if (bytes <= buffer_.size()) return;
  // resize() zero-fills what it adds: grow geometrically so that a batch
  // pays it a few times at most, and a recycled buffer not at all.
  buffer_.resize(std::max({bytes, 2 * buffer_.size(), std::size_t{4096}}));
}

void BatchEncoder::Recycle(std::vector<std::byte> buffer) {
  if (Wants(buffer.capacity())) {
    buffer_ = std::move(buffer);
    buffer_.resize(buffer_.capacity());  // within capacity: no allocation; bytes past the old size zeroed once
    used_ = sizeof(BatchHeader);
  }
}

void BatchEncoder::Add(model::TableId table, model::RowId row, std::span<const std::byte> delta) {
  std::memcpy(BeginEntry(table, row), delta.data(), delta.size());
  EndEntry(true);
}

std::vector<std::byte> BatchEncoder::Seal(std::uint64_t sequence, std::uint64_t clock, std::uint32_t flags,
                                          std::uint32_t stale_epochs_x1024) {
  Reserve(used_);  // an empty batch still has its header
  BatchHeader h;
  h.flags = flags;
  h.sequence = sequence;
  h.clock = clock;
  h.stale_epochs_x1024 = stale_epochs_x1024;
  h.entry_count = static_cast<std::uint32_t>(entries_);
  WriteHeader(h, std::span(buffer_).first(used_));  // the payload is already in place: no copy
  buffer_.resize(used_);  // shrinking keeps the capacity for Recycle
  std::vector<std::byte> out = std::move(buffer_);
  buffer_ = {};  // no memory until the next entry or Recycle
  used_ = sizeof h;
  entries_ = 0;
  dropped_ = false;
  return out;
}

std::size_t EncodedRowRequestBytes(std::span<const std::uint64_t> keys, std::size_t slot_bytes) {
  return sizeof(BatchHeader) + (AsBitmap(keys, slot_bytes) ? BitmapPayloadBytes(keys) : keys.size_bytes());
}

std::vector<std::byte> EncodeRowRequest(std::span<const std::uint64_t> keys, std::uint64_t sequence,
                                        std::optional<AwaitedClocks> awaits, std::size_t slot_bytes) {
  const bool as_bitmap = AsBitmap(keys, slot_bytes);
  std::vector<std::byte> out(EncodedRowRequestBytes(keys, slot_bytes));
  std::byte* payload = out.data() + sizeof(BatchHeader);
  if (as_bitmap) {
    RowBitmap range;
    range.table = EntryTable(keys.front()).value;
    range.first = EntryRow(keys.front()).value;
    range.rows = static_cast<std::uint64_t>(EntryRow(keys.back()).value - range.first + 1);
    std::memcpy(payload, &range, sizeof range);
    std::byte* words = payload + sizeof range;  // zeroed by the vector
    for (const std::uint64_t key : keys) {
      const auto bit = static_cast<std::uint64_t>(EntryRow(key).value - range.first);
      std::uint64_t word;
      std::memcpy(&word, words + bit / 64 * 8, 8);
      word |= std::uint64_t{1} << (bit % 64);
      std::memcpy(words + bit / 64 * 8, &word, 8);
    }
  } else if (!keys.empty()) {
    std::memcpy(payload, keys.data(), keys.size_bytes());
  }
  BatchHeader h;
  h.flags = kRowRequest | (as_bitmap ? kRowBitmap : 0);
  h.sequence = sequence;
  if (awaits.has_value()) {  // it ends no clock: `clock` names the awaited ones
    h.flags |= kAwaitsClocks;
    h.clock = awaits->before;
    h.stale_epochs_x1024 = static_cast<std::uint32_t>(awaits->rank + 1);
  }
  h.entry_count = static_cast<std::uint32_t>(keys.size());
  WriteHeader(h, out);
  return out;
}

void StampVisibleAt(std::span<std::byte> batch, std::int64_t visible_at_ps) {
  BatchHeader h;
  std::memcpy(&h, batch.data(), sizeof h);
  h.visible_at_ps = visible_at_ps;
  h.header_checksum = HeaderChecksum(h);
  std::memcpy(batch.data(), &h, sizeof h);
}

Result<BatchHeader> DecodeHeader(std::span<const std::byte> bytes) {
  if (bytes.size() < sizeof(BatchHeader)) return DataLoss("batch shorter than its header");
  BatchHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.magic != kBatchMagic) return DataLoss(fmt::format("bad batch magic {:#x}", h.magic));
  if (h.header_checksum != HeaderChecksum(h)) return DataLoss("batch header checksum mismatch");
  return h;
}

Result<DecodedBatch> DecodeBatch(std::span<const std::byte> bytes, std::uint64_t expected_sequence,
                                 const model::ModelLayout& layout, model::MemoryIndex shard) {
  STALELEARN_ASSIGN_OR_RETURN(BatchHeader h, DecodeHeader(bytes));
  return DecodeBatch(h, bytes, expected_sequence, layout, shard);
}

Result<DecodedBatch> DecodeBatch(const BatchHeader& h, std::span<const std::byte> bytes,
                                 std::uint64_t expected_sequence, const model::ModelLayout& layout,
                                 model::MemoryIndex shard) {
  if (bytes.size() < sizeof h) return DataLoss("batch shorter than its header");
  if (h.sequence != expected_sequence) {
    return DataLoss(fmt::format("batch sequence {} where {} was expected", h.sequence, expected_sequence));
  }
  if (h.payload_bytes > bytes.size() - sizeof h) {
    return DataLoss(fmt::format("batch payload of {} bytes exceeds its slot ({} bytes)", h.payload_bytes,
                                bytes.size() - sizeof h));
  }
  const std::span<const std::byte> payload = bytes.subspan(sizeof h, h.payload_bytes);
  if (model::Hash64(payload) != h.payload_checksum) return DataLoss("batch payload checksum mismatch");
  if ((h.flags & kAwaitsClocks) != 0 && (h.flags & kRowRequest) == 0) {
    return DataLoss("a batch that awaits clocks but is no row request");
  }
  if ((h.flags & kRowBitmap) != 0) {
    if ((h.flags & kRowRequest) == 0) return DataLoss("a row bitmap in a batch that is no row request");
    return DecodeRowBitmap(h, payload, layout, shard);
  }

  DecodedBatch out{h, {}};
  // entry_count comes from a peer: bound the reservation by what the payload can hold.
  out.entries.reserve(std::min<std::size_t>(h.entry_count, payload.size() / kEntryPrefixBytes));
  const auto& tables = layout.tables();
  std::size_t at = 0;
  bool increasing = true;
  while (at < payload.size()) {
    if (payload.size() - at < kEntryPrefixBytes) return DataLoss("batch entry truncated");
    std::uint64_t key;
    std::memcpy(&key, payload.data() + at, 8);
    const std::uint32_t table = EntryTable(key).value;
    const std::int64_t row = EntryRow(key).value;
    if (table >= tables.size()) return DataLoss(fmt::format("batch names table {} of {}", table, tables.size()));
    const model::TableSpec& spec = tables[table];
    if (row >= spec.rows) {
      return OutOfRange(fmt::format("batch row {} outside table '{}' ({} rows)", row, spec.name, spec.rows));
    }
    const model::TableId tid{table};
    const model::RowId rid{row};
    if (layout.partition(tid).Owner(rid) != shard) return NotThisShard(layout, tid, rid, shard);
    at += kEntryPrefixBytes;
    const std::size_t entry_bytes = (h.flags & kRowRequest) != 0 ? 0 : spec.row_bytes();  // a request: keys alone
    if (payload.size() - at < entry_bytes) return DataLoss("batch entry delta truncated");
    const std::int64_t local = layout.partition(tid).LocalIndex(rid);
    if (!out.entries.empty()) {
      const DecodedEntry& last = out.entries.back();
      increasing = increasing && (last.table.value < table || (last.table.value == table && last.local_row < local));
    }
    out.entries.push_back({tid, rid, local, entry_bytes > 0 ? payload.data() + at : nullptr});
    at += entry_bytes;
  }
  if (out.entries.size() != h.entry_count) {
    return DataLoss(fmt::format("batch holds {} entries, header says {}", out.entries.size(), h.entry_count));
  }
  out.increasing = increasing;
  return out;
}

}  // namespace stalelearn::sync
