// Checkpoints by clock (training.checkpoint { every_clocks, dir }) and
// resuming from them (training.checkpoint.resume_dir, `train --resume DIR`).
//
// Checkpoint B (every every_clocks protocol clocks) is a consistent cut taken
// while training goes on: each memory rank's shard with exactly every
// compute rank's clocks < B merged (checkpoint_cut.h: a fork of the shard
// follows the merges until the slowest rank's clock B - 1 is in), and each
// compute rank's local state after its clock B - 1 (checkpointing_mode.h).
// Nothing waits and nothing drains, so a run with checkpoints trains exactly
// as one without (deterministic emulation: the same model bits and simulated
// time). Each rank writes its file when its part is ready, then a small
// "<file>.entry" (the file's manifest entry); the rank whose entry completes
// the set writes the manifest and prunes old checkpoints (two ranks that
// finish together both write the same manifest).
//
// A resumed run starts every rank at the checkpoint's clock from those files:
// the memory ranks publish the cut's shard, and every compute rank's replica
// starts from it, fresh. Where the uninterrupted run's replicas were fresh at
// the cut as well (BSP), the resumed run ends with its model bits in
// deterministic emulation (float sums: with one compute rank, so that the
// order of a clock's merges cannot differ); under a staleness bound a resume
// reads fresher values than the uninterrupted run did at that clock and ends
// near it, not on it. Deterministic emulation also sets every rank's virtual
// clock to the same point at a resumed run's start (the maximum over ranks,
// plus 1 ps, so that every rank yields and the lowest rank goes first).
//
// A stop (stop_agreement.h) ends the run before one agreed clock C with a
// checkpoint of C written at the end, after everything < C is merged, and
// committed by world rank 0 after a collective that gathers every rank's
// file entry (checkpoint_store.h: files first, manifest last). At a
// checkpoint clock the cut every rank already wrote is that checkpoint.
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
#include "framework/runtime/checkpoint_cut.h"
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

  // True when the run takes checkpoints (every_clocks) or resumes.
  bool checkpointed() const { return every_ > 0 || resumed_.has_value(); }
  // True when training.checkpoint.dir is set: a stopped run writes its
  // checkpoint there (also without every_clocks).
  bool writes_checkpoints() const { return !dir_.empty(); }
  // training.checkpoint.dir ("" when none).
  const std::filesystem::path& dir() const { return dir_; }
  // Where checkpoint `clock` goes.
  std::filesystem::path CheckpointPath(std::int64_t clock) const;
  // The first protocol clock this run trains: 0, or the checkpoint's clock.
  std::int64_t first_clock() const { return first_clock_; }
  // The clocks this run takes checkpoints at (every_clocks; none if 0).
  CheckpointClocks clocks() const { return {every_, first_clock_, total_clocks_}; }
  bool IsCheckpointClock(std::int64_t clock) const { return writes_checkpoints() && clocks().Includes(clock); }

  // The checkpoint this run resumes from, if any.
  const LoadedCheckpoint* resumed() const { return resumed_ ? &*resumed_ : nullptr; }
  Result<std::vector<std::byte>> ReadResumedFile(const std::string& name) const;
  // What the earlier attempt lost (set only when resuming after one).
  const std::optional<proto::Lost>& lost() const { return lost_; }

  // Writes this rank's file of checkpoint `clock` (crash-safely). `cut`: a
  // checkpoint clock's part (then its entry beside it, and the manifest if
  // it completes the set); else the stop's, whose entry goes into the
  // manifest at CommitPending.
  Status WriteFile(std::int64_t clock, const std::string& name, std::span<const std::byte> bytes, bool cut);
  // A compute rank's file: the app's local state and the samples it trained
  // so far (all attempts).
  Status WriteComputeState(std::int64_t clock, model::ComputeIndex me, const LocalState* state,
                           std::int64_t samples, bool cut);
  // Collective: gathers every rank's pending entry and world rank 0 writes
  // the manifest (the checkpoint is complete once it returns). `key` names
  // the exchange; a rank with nothing pending is an error on rank 0.
  Status CommitPending(const std::string& key);

  // Collective, before a resumed run's start barrier: agrees on the virtual
  // time the run starts at (the rank's time service:
  // RankTime::LatestOverRanks). A run that does not resume skips it, so its
  // schedule is that of a run without checkpoints.
  Status AlignResumedStart();
  // After the start barrier: joins the virtual-time schedule and moves the
  // clock to the agreed time, if any.
  Status JoinSchedule();

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
  // Removes this rank's entries of checkpoints after the first clock, left
  // by an earlier attempt (before the start barrier: no rank has written a
  // part of this attempt yet, so none can complete a set with a stale one).
  void RemoveStaleEntries() const;
  // This rank's file name in every checkpoint; the one of world rank `rank`.
  std::string FileNameOf(transport::Rank rank) const;
  // Writes checkpoint `clock`'s manifest if every rank's entry is there.
  Status CommitIfComplete(std::int64_t clock);
  // Writes checkpoint `clock`'s manifest listing `files` (in world-rank
  // order), then prunes old checkpoints.
  Status Commit(std::int64_t clock, std::vector<proto::CheckpointFile> files);

  const RankEnv& env_;
  std::int64_t total_clocks_;
  std::int64_t every_ = 0;
  std::filesystem::path dir_;  // where checkpoints are written
  std::optional<LoadedCheckpoint> resumed_;
  std::int64_t first_clock_ = 0;
  std::optional<proto::Lost> lost_;
  std::optional<proto::CheckpointFile> pending_;  // written, not yet in a manifest
  std::int64_t pending_clock_ = 0;
  std::optional<transport::VirtualTime> aligned_;  // agreed virtual start of a resumed run
  int progress_fd_ = -1;
  bool progress_failed_ = false;
};

}  // namespace stalelearn::runtime
