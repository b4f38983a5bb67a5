// Checkpoints by clock (training.checkpoint { every_clocks, dir }) and
// resuming from them (training.checkpoint.resume_dir, `train --resume DIR`).
//
// A checkpointed run trains in *segments*: every `every_clocks` protocol
// clocks (a boundary T) the compute ranks finish and release the data plane
// as at the end of a run, so each memory rank has merged every compute rank's
// clocks < T and nothing is in flight; memory ranks write their shard state,
// compute ranks their app local state, then every rank sets the data plane up
// afresh (registration, key exchange, start barrier) and the memory ranks
// publish the state they just wrote (serialised and restored, not kept in
// place). A resumed run starts the same way from the files on disk, so from a
// boundary on the uninterrupted run and a resumed one do the same thing; in
// deterministic emulation (timing backend, ranks as threads) every rank's
// virtual clock is also set to the same point at each segment start (the
// maximum over ranks, plus 1 ps so that every rank yields and the lowest rank
// goes first), and a resumed run ends with the same model checksum.
//
// The manifest of checkpoint T is written by world rank 0 at the start of the
// next segment, after a collective that gathers every rank's file entry
// (checkpoint_store.h: files first, manifest last).
//
//   auto cp = Checkpointer::Make(env, total_clocks);      // every rank
//   for each segment [begin, cp->SegmentEnd(begin)):
//     [set up the data plane] ... cp->StartCollectives(); Barrier; cp->JoinSchedule(first);
//     [train / merge until the segment's end]
//     cp->WriteFile(end, "memory-0.shard", bytes); cp->LeaveScheduleForBoundary();
//
// Thread-safety: one Checkpointer per rank, used by that rank's thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "framework/proto/checkpoint.pb.h"
#include "framework/proto/report.pb.h"
#include "framework/runtime/checkpoint_store.h"
#include "framework/runtime/rank_env.h"

namespace stalelearn::runtime {

// The file names of one rank in a checkpoint.
std::string MemoryShardFileName(model::MemoryIndex m);
std::string ComputeStateFileName(model::ComputeIndex c);

class Checkpointer {
 public:
  // `total_clocks`: protocol clocks of the whole run. When resuming, finds the
  // newest complete checkpoint (passing over damaged ones; world rank 0 prints
  // a one-line notice), checks that it fits this run (clock, ranks) and reads
  // what the previous attempt left about its progress (the `lost` report).
  // kNotFound / kInvalidArgument, one line, if there is nothing to resume from.
  static Result<std::unique_ptr<Checkpointer>> Make(const RankEnv& env, std::int64_t total_clocks);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // True when the run is split into segments (checkpoints or a resume).
  bool segmented() const { return every_ > 0 || resumed_.has_value(); }
  // True when training.checkpoint.dir is set: a stopped run writes its
  // checkpoint there (also without every_clocks).
  bool writes_checkpoints() const { return !dir_.empty(); }
  // training.checkpoint.dir ("" when none).
  const std::filesystem::path& dir() const { return dir_; }
  // Where checkpoint `clock` goes.
  std::filesystem::path CheckpointPath(std::int64_t clock) const;
  // The first protocol clock this run trains: 0, or the checkpoint's clock.
  std::int64_t first_clock() const { return first_clock_; }
  // The end of the segment that starts at `begin`: the next boundary, or the
  // run's total.
  std::int64_t SegmentEnd(std::int64_t begin) const;
  bool IsBoundary(std::int64_t clock) const;

  // The checkpoint this run resumes from, if any.
  const LoadedCheckpoint* resumed() const { return resumed_ ? &*resumed_ : nullptr; }
  Result<std::vector<std::byte>> ReadResumedFile(const std::string& name) const;
  // What the earlier attempt lost (set only when resuming after one).
  const std::optional<proto::Lost>& lost() const { return lost_; }

  // Writes this rank's file of checkpoint `clock` (crash-safely); its entry
  // goes into the manifest at the next StartCollectives or CommitPending.
  Status WriteFile(std::int64_t clock, const std::string& name, std::span<const std::byte> bytes);
  // A compute rank's file: the app's local state and the samples it trained
  // so far (all attempts).
  Status WriteComputeState(std::int64_t clock, model::ComputeIndex me, const LocalState* state,
                           std::int64_t samples);
  // Collective: gathers every rank's pending entry and world rank 0 writes
  // the manifest (the checkpoint is complete once it returns). `key` names
  // the exchange; a rank with nothing pending is an error on rank 0.
  Status CommitPending(const std::string& key);

  // Collective, at every segment start before the start barrier: commits the
  // pending checkpoint (gathers every rank's entry; world rank 0 writes the
  // manifest and prunes old checkpoints), and agrees on the virtual time the
  // segment starts at (the rank's time service: RankTime::LatestOverRanks).
  Status StartCollectives();
  // After the start barrier: joins the virtual-time schedule (the first
  // segment) or rejoins it (later ones) and moves the clock to the agreed time.
  Status JoinSchedule(bool first);
  // At a boundary, before the next segment's collectives.
  Status LeaveScheduleForBoundary();

  // Compute ranks, after each clock: records how far this rank got (a small
  // file in the checkpoint directory, read by a later resume to say what was
  // lost). Best effort: an I/O error only disables it.
  void NoteProgress(std::int64_t clocks_done, std::int64_t samples_done);
  // debug.kill_rank / kill_at_clock: SIGKILL this process when `clock` has
  // reached the planted one on the planted rank (fault-injection tests). A
  // resumed run (the restarted attempt) never kills itself.
  void MaybeKill(std::int64_t clock) const;

 private:
  Checkpointer(const RankEnv& env, std::int64_t total_clocks);
  Status LoadResume();
  void ReadLostProgress();

  const RankEnv& env_;
  std::int64_t total_clocks_;
  std::int64_t every_ = 0;
  std::filesystem::path dir_;  // where checkpoints are written
  std::optional<LoadedCheckpoint> resumed_;
  std::int64_t first_clock_ = 0;
  std::optional<proto::Lost> lost_;
  std::optional<proto::CheckpointFile> pending_;  // written, not yet in a manifest
  std::int64_t pending_clock_ = 0;
  std::int64_t segments_started_ = 0;
  std::optional<transport::VirtualTime> aligned_;  // agreed virtual start of the segment
  int progress_fd_ = -1;
  bool progress_failed_ = false;
};

}  // namespace stalelearn::runtime
