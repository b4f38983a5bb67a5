// Reads of several memory ranks' snapshots at once, for a compute rank
// whose readers share one transport (SnapshotReader::ReadNewerMetas,
// ReadRowsOfEach): each step's gets go out to every reader before any is
// waited for, so M memory ranks take about the round trips of one, not M
// times as many. The steps and their checks are those of the single-reader
// reads (snapshot_reader.cc); a reader whose check fails (a meta slot caught
// being rewritten, records overwritten meanwhile) finishes alone, by the
// single-reader read.
#include <atomic>

#include "framework/sync/snapshot_reader.h"

namespace stalelearn::sync {

Status SnapshotReader::IssueWord(std::uint64_t* into, std::size_t offset, std::vector<transport::RequestPtr>& requests) {
  STALELEARN_ASSIGN_OR_RETURN(transport::RequestPtr request, transport_.Get(into, sizeof *into, published_, offset));
  requests.push_back(std::move(request));
  return Status::Ok();
}

Status SnapshotReader::IssueMetaSlot(std::uint64_t g, std::vector<transport::RequestPtr>& requests) {
  STALELEARN_ASSIGN_OR_RETURN(transport::RequestPtr request,
                              transport_.Get(meta_bytes_.data(), meta_bytes_.size(), published_,
                                             geometry_.meta_offset(geometry_.MetaSlotOf(g))));
  requests.push_back(std::move(request));
  return Status::Ok();
}

Status SnapshotReader::ReadMetasTogether(std::span<SnapshotReader* const> readers,
                                         std::span<const std::uint64_t> since, bool second) {
  // Every reader's gets wait in the first reader's requests (WaitForGets).
  SnapshotReader& front = *readers.front();
  std::vector<transport::RequestPtr>& requests = front.requests_;
  requests.clear();
  // 1. Every latest-generation word; 2. the meta slot of each newer
  // generation, then 3. its version again (the seqlock's re-check: ReadMeta).
  for (SnapshotReader* r : readers) {
    if (r->together_) STALELEARN_RETURN_IF_ERROR(r->IssueWord(&r->words_[0], r->geometry_.latest_generation_offset(), requests));
  }
  STALELEARN_RETURN_IF_ERROR(front.WaitForGets());
  for (std::size_t i = 0; i < readers.size(); ++i) {
    SnapshotReader& r = *readers[i];
    r.together_ = r.together_ && r.words_[0] > (since.empty() ? 0 : since[i]);
    if (r.together_) STALELEARN_RETURN_IF_ERROR(r.IssueMetaSlot(r.words_[0], requests));
  }
  STALELEARN_RETURN_IF_ERROR(front.WaitForGets());
  std::atomic_thread_fence(std::memory_order_acquire);  // the slots before the re-checks
  // Before a read of live rows (not `second`), with the re-checks: the
  // live-generation word (TakeLiveGeneration).
  for (SnapshotReader* r : readers) {
    if (!r->together_) continue;
    STALELEARN_RETURN_IF_ERROR(
        r->IssueWord(&r->words_[1], r->geometry_.version_offset(r->geometry_.MetaSlotOf(r->words_[0])), requests));
    if (!second) STALELEARN_RETURN_IF_ERROR(r->IssueWord(&r->words_[2], r->geometry_.live_generation_offset(), requests));
  }
  STALELEARN_RETURN_IF_ERROR(front.WaitForGets());
  std::atomic_thread_fence(std::memory_order_acquire);  // the live words before the rows
  for (SnapshotReader* r : readers) {
    if (!r->together_) continue;
    std::uint64_t begin = 0;
    r->together_ = r->TakeMeta(r->words_[0], r->words_[1], second ? r->meta_ : r->first_meta_, &begin);
    if (!second && r->together_) {
      r->TakeLiveGeneration(r->words_[2], &begin);
      r->begin0_ = begin;
    }
  }
  return Status::Ok();
}

Status SnapshotReader::ReadNewerMetas(std::span<SnapshotReader* const> readers, std::span<const std::uint64_t> since,
                                      std::span<const SnapshotMeta*> metas) {
  if (readers.empty()) return Status::Ok();
  for (SnapshotReader* r : readers) r->together_ = true;
  STALELEARN_RETURN_IF_ERROR(ReadMetasTogether(readers, since, /*second=*/true));
  for (std::size_t i = 0; i < readers.size(); ++i) {
    SnapshotReader& r = *readers[i];
    metas[i] = nullptr;
    if (r.together_) {
      STALELEARN_RETURN_IF_ERROR(r.AdvanceSimulatedTime(0));  // as ReadNewerMeta
      metas[i] = &r.meta_;
    } else if (r.words_[0] > since[i]) {  // its slot was being rewritten: read the newest again, alone
      STALELEARN_ASSIGN_OR_RETURN(metas[i], r.ReadNewerMeta(since[i]));
    }
  }
  return Status::Ok();
}

Status SnapshotReader::ReadRowsOfEach(std::span<SnapshotReader* const> readers,
                                      std::span<const std::span<const RowRead>> rows) {
  STALELEARN_RETURN_IF_ERROR(BeginRowsOfEach(readers, rows));
  return FinishRowsOfEach(readers, rows);
}

Status SnapshotReader::BeginRowsOfEach(std::span<SnapshotReader* const> readers,
                                       std::span<const std::span<const RowRead>> rows) {
  if (readers.empty()) return Status::Ok();
  SnapshotReader& front = *readers.front();
  std::vector<transport::RequestPtr>& requests = front.requests_;  // as in ReadMetasTogether
  requests.clear();
  // ReadWhole's steps: g0 and its meta, the live rows, g1 and its meta.
  for (SnapshotReader* r : readers) r->together_ = true;
  STALELEARN_RETURN_IF_ERROR(ReadMetasTogether(readers, {}, /*second=*/false));
  for (std::size_t i = 0; i < readers.size(); ++i) {
    if (readers[i]->together_) STALELEARN_RETURN_IF_ERROR(readers[i]->IssueRowGets(rows[i], requests));
  }
  return Status::Ok();
}

Status SnapshotReader::FinishRowsOfEach(std::span<SnapshotReader* const> readers,
                                        std::span<const std::span<const RowRead>> rows,
                                        const UnchangedAfter& unchanged_after) {
  if (readers.empty()) return Status::Ok();
  SnapshotReader& front = *readers.front();
  STALELEARN_RETURN_IF_ERROR(front.WaitForGets());  // the live rows Begin issued
  std::atomic_thread_fence(std::memory_order_acquire);  // live rows before the second metas
  STALELEARN_RETURN_IF_ERROR(ReadMetasTogether(readers, {}, /*second=*/true));
  // The patches, reader after reader (a few round trips each).
  for (std::size_t i = 0; i < readers.size(); ++i) {
    SnapshotReader& r = *readers[i];
    if (r.together_) {
      std::uint64_t patched = 0;
      r.patch_first_only_ = unchanged_after && unchanged_after(r.first_meta_);
      Result<bool> together = r.PatchRows(rows[i], r.begin0_, &patched);
      r.patch_first_only_ = false;
      STALELEARN_ASSIGN_OR_RETURN(r.together_, std::move(together));
      if (r.together_) STALELEARN_RETURN_IF_ERROR(r.AdvanceAfterRead(BytesOf(rows[i]), patched));
    }
    if (!r.together_) STALELEARN_RETURN_IF_ERROR(r.ReadRows(rows[i]).status());  // alone, from the start
  }
  return Status::Ok();
}

}  // namespace stalelearn::sync
