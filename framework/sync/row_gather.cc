#include "framework/sync/row_gather.h"

#include <fmt/format.h>

#include <cstring>

#include "framework/model/hash64.h"
#include "framework/sync/wait_until.h"

namespace stalelearn::sync {
namespace {

constexpr std::size_t kHeaderBytes = sizeof(RowReplyHeader);

}  // namespace

std::size_t RowRequestBytes(const DecodedBatch& request, const model::ModelLayout& layout) {
  std::size_t bytes = 0;
  for (const DecodedEntry& e : request.entries) bytes += layout.tables()[e.table.value].row_bytes();
  return bytes;
}

Status WriteRowReply(const DecodedBatch& request, const model::TableSet& master, std::span<std::byte> area,
                     std::int64_t published_at_ps) {
  std::size_t bytes = 0;
  for (const DecodedEntry& e : request.entries) bytes += master[e.table.value].row_bytes();
  if (kHeaderBytes + bytes > area.size()) {
    return OutOfRange(fmt::format("a request for {} rows ({} bytes) exceeds the reply area ({} bytes)",
                                  request.entries.size(), bytes, area.size() - std::min(area.size(), kHeaderBytes)));
  }
  std::byte* out = area.data() + kHeaderBytes;
  for (const DecodedEntry& e : request.entries) {
    const model::RowBlock& block = master[e.table.value];
    model::CopyRow(out, block.RowBytes(e.local_row), block.row_bytes());
    out += block.row_bytes();
  }
  RowReplyHeader h;
  h.rows = request.entries.size();
  h.published_at_ps = published_at_ps;
  h.checksum = model::Hash64(std::span<const std::byte>(area.data() + kHeaderBytes, bytes));
  // Everything but the sequence, then the sequence (release): a reader that
  // sees it sees the rest (and checks the rows' checksum in any case).
  std::memcpy(area.data() + sizeof h.sequence, reinterpret_cast<const std::byte*>(&h) + sizeof h.sequence,
              kHeaderBytes - sizeof h.sequence);
  transport::StoreRelease64(area.data(), request.header.sequence);
  return Status::Ok();
}

RowGatherClient::RowGatherClient(transport::Transport& transport, model::ComputeIndex me,
                                 std::vector<const transport::RemoteRegion*> published,
                                 std::vector<PublishedGeometry> geometry, std::vector<RingWriter*> writers,
                                 WaitOptions wait)
    : transport_(transport),
      me_(me),
      published_(std::move(published)),
      geometry_(std::move(geometry)),
      writers_(std::move(writers)),
      wait_(wait),
      asked_(published_.size()) {}

bool RowGatherClient::Fits(model::MemoryIndex m, std::span<const std::uint64_t> keys, std::size_t bytes) const {
  const PublishedGeometry& g = geometry_[m.value];
  const std::size_t slot = writers_[m.value]->slot_capacity();
  return g.reply_bytes >= kHeaderBytes + bytes && EncodedRowRequestBytes(keys, slot) <= slot;
}

Status RowGatherClient::Request(model::MemoryIndex m, std::span<const std::uint64_t> keys, std::size_t bytes,
                                std::optional<AwaitedClocks> awaits) {
  Asked& asked = asked_[m.value];
  RingWriter& writer = *writers_[m.value];
  // The last request's put read its bytes, and a read ahead its reply
  // buffer: done before they are replaced.
  if (!asked.request.empty()) STALELEARN_RETURN_IF_ERROR(writer.Complete());
  if (asked.ahead != nullptr) STALELEARN_RETURN_IF_ERROR(asked.ahead->Wait(wait_.timeout));
  asked.ahead.reset();
  asked.asked_at = wait_.time->Now();
  asked.sequence = writer.next_sequence();
  asked.rows = keys.size();
  asked.bytes = bytes;
  asked.request = EncodeRowRequest(keys, asked.sequence, awaits, writer.slot_capacity());
  return writer.Push(asked.request).status();
}

Result<bool> RowGatherClient::ReadReply(std::size_t m, bool header_only) {
  Asked& asked = asked_[m];
  const std::size_t bytes = header_only ? kHeaderBytes : kHeaderBytes + asked.bytes;
  asked.reply.resize(kHeaderBytes + asked.bytes);
  const std::size_t offset = geometry_[m].reply_offset(me_);
  STALELEARN_RETURN_IF_ERROR(
      transport::GetBlocking(transport_, asked.reply.data(), bytes, *published_[m], offset, wait_.timeout));
  std::uint64_t sequence;
  std::memcpy(&sequence, asked.reply.data(), sizeof sequence);
  if (sequence != asked.sequence) {
    // Only the memory rank's answer ends this wait (a virtual clock sleeps until then).
    wait_.time->WaitOnlyFor(*published_[m], offset, asked.reply.data(), sizeof sequence);
    return false;
  }
  if (header_only) return false;  // answered: now the rows
  return TakeReply(asked, m, bytes);
}

Result<bool> RowGatherClient::TakeReply(Asked& asked, std::size_t m, std::size_t bytes_read) {
  RowReplyHeader h;
  std::memcpy(&h, asked.reply.data(), kHeaderBytes);
  if (h.sequence != asked.sequence) return false;
  const std::span<const std::byte> rows(asked.reply.data() + kHeaderBytes, asked.bytes);
  if (h.rows != asked.rows) {
    return DataLoss(fmt::format("memory rank {} answered a request for {} rows with {}", m, asked.rows, h.rows));
  }
  if (model::Hash64(rows) != h.checksum) return false;  // read while being written: again
  // What was read is known no earlier than it can have arrived (virtual time).
  const transport::VirtualTime published = transport::VirtualTimeFromPs(h.published_at_ps);
  answer_took_ = published - asked.asked_at;
  writers_[m]->NoteHead(asked.sequence);  // answered: the request and every batch before it consumed
  STALELEARN_RETURN_IF_ERROR(wait_.time->AdvanceTo(wait_.time->GetVisibleAt(published, bytes_read)));
  return true;
}

Status RowGatherClient::ReadAhead(model::MemoryIndex m) {
  Asked& asked = asked_[m.value];
  if (asked.sequence == 0 || asked.ahead != nullptr || answer_took_ <= transport::VirtualDuration(0)) {
    return Status::Ok();
  }
  if (wait_.time->Now() < asked.asked_at + answer_took_) return Status::Ok();
  asked.reply.resize(kHeaderBytes + asked.bytes);
  STALELEARN_ASSIGN_OR_RETURN(asked.ahead, transport_.Get(asked.reply.data(), asked.reply.size(), *published_[m.value],
                                                           geometry_[m.value].reply_offset(me_)));
  return Status::Ok();
}

Result<std::span<const std::byte>> RowGatherClient::Await(model::MemoryIndex m) {
  const auto i = static_cast<std::size_t>(m.value);
  Asked& asked = asked_[i];
  if (asked.sequence == 0) return FailedPrecondition("RowGatherClient::Await without a request");
  if (asked.ahead != nullptr) {  // read ahead: taken if it holds the answer
    STALELEARN_RETURN_IF_ERROR(asked.ahead->Wait(wait_.timeout));
    asked.ahead.reset();
    STALELEARN_ASSIGN_OR_RETURN(const bool taken, TakeReply(asked, i, asked.reply.size()));
    if (taken) return std::span<const std::byte>(asked.reply.data() + kHeaderBytes, asked.bytes);
  }
  // The first read takes all (asked ahead, the reply is usually there);
  // while it is not, reads take the header alone, then all once answered.
  bool whole = true;
  STALELEARN_RETURN_IF_ERROR(WaitUntil(
                                 wait_, transport_,
                                 [&]() -> Result<bool> {
                                   STALELEARN_ASSIGN_OR_RETURN(const bool done, ReadReply(i, !whole));
                                   if (done) return true;
                                   std::uint64_t sequence;
                                   std::memcpy(&sequence, asked.reply.data(), sizeof sequence);
                                   const bool answered = sequence == asked.sequence;
                                   // Answered: the rows at once (a false here would idle until
                                   // some later write, which nothing is owed any more).
                                   if (answered && !whole) {
                                     whole = true;
                                     return ReadReply(i, false);
                                   }
                                   whole = answered;
                                   return false;
                                 },
                                 [&] {
                                   return fmt::format("memory rank {}'s rows for request {} ({} rows)", m.value,
                                                      asked.sequence, asked.rows);
                                 })
                                 .status());
  return std::span<const std::byte>(asked.reply.data() + kHeaderBytes, asked.bytes);
}

}  // namespace stalelearn::sync
