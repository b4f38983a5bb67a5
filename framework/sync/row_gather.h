// Rows gathered on the memory side: a compute rank asks a memory rank for
// the rows of a range it holds (its partial replica's, a fraction of the
// range) and gets them packed, instead of reading the whole range. The
// memory rank is a PIM node: it reads the rows where they live and writes
// them next to each other; the compute rank's link then carries only them.
//
// The request is a kRowRequest batch in the compute rank's ring (batch_codec.h),
// so it comes after the rank's own earlier batches and is validated as they
// are (I3, I7). The memory rank answers in the rank's reply area of its
// published region (ring_layout.h): the rows, from its master (every batch
// it merged so far), then the header with the request's sequence last
// (release). A reader gets header and rows and takes them only when the
// sequence is its request's and the rows' checksum holds: a reply read while
// being written is read again (nothing torn, I3). A rank has one request in
// flight per memory rank, so the memory rank rewrites an area only after its
// reader is done with the last reply.
//
// WriteRowReply: the memory rank's poll thread. RowGatherClient: not
// thread-safe (the compute rank's trainer thread); the transport, regions and
// ring writers must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "framework/core/status.h"
#include "framework/model/rank_index.h"
#include "framework/model/row_block.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/ring_layout.h"
#include "framework/sync/ring_writer.h"
#include "framework/sync/wait_options.h"
#include "framework/transport/transport.h"
#include "framework/transport/virtual_time.h"

namespace stalelearn::sync {

// A reply area's header; the rows follow it.
struct RowReplyHeader {
  std::uint64_t sequence = 0;        // of the request answered (written last)
  std::uint64_t rows = 0;
  std::int64_t published_at_ps = 0;  // timing backend: when the rows were written; 0 otherwise
  std::uint64_t checksum = 0;        // of the rows' bytes
};
static_assert(sizeof(RowReplyHeader) == 32);

// The bytes of the rows `request` (a decoded kRowRequest batch) names.
std::size_t RowRequestBytes(const DecodedBatch& request, const model::ModelLayout& layout);

// Writes the rows `request` names, from `master` (this memory rank's
// shard), into `area` (the requester's reply area): rows, then header,
// sequence last. kOutOfRange (nothing written) if they do not fit.
Status WriteRowReply(const DecodedBatch& request, const model::TableSet& master, std::span<std::byte> area,
                     std::int64_t published_at_ps);

// A rank asks for a range's rows only where it holds at most one in this
// many of them (runtime/replica_refresher_focus.cc BeginGather: a reply's
// rows cost what a range read of them costs, plus the request and the
// gather); reply areas are sized for it (runtime/data_plane.h).
inline constexpr std::size_t kGatherAtMostOneIn = 2;

class RowGatherClient {
 public:
  // Per memory rank m: its published region, geometry and this rank's ring writer to it.
  RowGatherClient(transport::Transport& transport, model::ComputeIndex me,
                  std::vector<const transport::RemoteRegion*> published, std::vector<PublishedGeometry> geometry,
                  std::vector<RingWriter*> writers, WaitOptions wait);

  // Whether memory rank m can answer a request for the rows `keys` names,
  // `bytes` in all: the reply fits its area and the request a ring slot.
  bool Fits(model::MemoryIndex m, std::span<const std::uint64_t> keys, std::size_t bytes) const;
  // Asks memory rank m for the rows `keys` names (EntryKey; increasing),
  // `bytes` in all, answered at once or, with `awaits`, once m has merged
  // those clocks (kAwaitsClocks). Its last reply, or request, is dropped.
  // Needs Fits.
  Status Request(model::MemoryIndex m, std::span<const std::uint64_t> keys, std::size_t bytes,
                 std::optional<AwaitedClocks> awaits = std::nullopt);
  // Starts the get of memory rank m's reply to the last Request, without
  // waiting, once as much (virtual) time has passed since the request as
  // the last answer took: Await then finds its rows in, read while the
  // kernel ran. Where time is not simulated, never (Await reads).
  Status ReadAhead(model::MemoryIndex m);
  // Waits for memory rank m's reply to the last Request and returns the
  // rows' bytes in request order, valid until the next Request to m.
  // Blocking (a timeout's error names the memory rank).
  Result<std::span<const std::byte>> Await(model::MemoryIndex m);

 private:
  struct Asked {
    std::uint64_t sequence = 0;  // 0: nothing asked
    std::uint64_t rows = 0;
    std::size_t bytes = 0;
    std::vector<std::byte> request;  // the put reads it until the writer completes
    std::vector<std::byte> reply;    // header + rows
    transport::VirtualTime asked_at{};  // when the request went out
    transport::RequestPtr ahead;        // ReadAhead's get of the reply, if begun
  };
  // Whether `reply` holds the answer to the request, whole (sequence,
  // count and checksum); then waits until it can have arrived.
  Result<bool> TakeReply(Asked& asked, std::size_t m, std::size_t bytes_read);
  // One read of m's reply area: true when it holds the reply asked for.
  Result<bool> ReadReply(std::size_t m, bool header_only);

  transport::Transport& transport_;
  model::ComputeIndex me_;
  std::vector<const transport::RemoteRegion*> published_;
  std::vector<PublishedGeometry> geometry_;
  std::vector<RingWriter*> writers_;
  WaitOptions wait_;
  std::vector<Asked> asked_;  // [m]
  transport::VirtualDuration answer_took_{0};  // the last reply's published-at minus its request's asked-at
};

}  // namespace stalelearn::sync
