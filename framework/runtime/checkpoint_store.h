// Checkpoints on disk (training.checkpoint): one directory per clock,
//
//   DIR/clock-000000000012/   the files every rank wrote for clock 12
//                              (e.g. "memory-0.shard", "compute-2.state")
//   DIR/clock-000000000012/MANIFEST   proto::CheckpointManifest, written last
//
// Crash safety: a file is written to "<name>.tmp", fsync'ed, renamed and the
// directory fsync'ed; the manifest the same way, after every file of the
// checkpoint is in place. A crash therefore leaves either no manifest (the
// checkpoint is incomplete) or one whose files all exist. Torn or corrupted
// files are caught by the manifest's sizes and checksums.
//
// Reading: the newest checkpoint whose manifest parses and whose every file
// has the listed size and checksum; older or damaged ones are skipped, each
// with the reason.
//
//   // every rank, for the same clock:
//   STALELEARN_ASSIGN_OR_RETURN(auto entry, WriteCheckpointFile(CheckpointDirFor(dir, 12), "memory-0.shard", bytes));
//   // one rank, once it has every rank's entry (gathered, or read from the
//   // ".entry" files beside the parts: checkpointer.h):
//   STALELEARN_RETURN_IF_ERROR(CommitCheckpoint(CheckpointDirFor(dir, 12), manifest));
//   // on resume:
//   STALELEARN_ASSIGN_OR_RETURN(LoadedCheckpoint cp, FindNewestCheckpoint(dir));
//   STALELEARN_ASSIGN_OR_RETURN(std::vector<std::byte> shard, cp.ReadFile("memory-0.shard"));
//
// Thread-safety: free functions, reentrant; distinct ranks write distinct
// file names, and two ranks may commit the same manifest or prune at once
// (each writes through a temporary name of its own; a directory being pruned
// is renamed away first). LoadedCheckpoint is a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "framework/core/status.h"
#include "framework/proto/checkpoint.pb.h"

namespace stalelearn::runtime {

inline constexpr std::uint32_t kCheckpointFormat = 1;
inline constexpr std::string_view kManifestName = "MANIFEST";

// DIR/clock-<clock, 12 digits>.
std::filesystem::path CheckpointDirFor(const std::filesystem::path& dir, std::uint64_t clock);
// The checkpoint directories under `dir` (complete or not), newest first.
std::vector<std::pair<std::uint64_t, std::filesystem::path>> CheckpointDirs(const std::filesystem::path& dir);

// Writes `bytes` as `name` (a plain file name) inside `checkpoint_dir`
// (created if missing), crash-safely; returns its manifest entry.
// kInvalidArgument for a bad name, kUnavailable for an I/O error.
Result<proto::CheckpointFile> WriteCheckpointFile(const std::filesystem::path& checkpoint_dir, std::string_view name,
                                                  std::span<const std::byte> bytes);

// A file's manifest entry as "<name>.entry" beside it (crash-safely), for a
// checkpoint whose ranks commit without a collective (checkpointer.h).
Status WriteCheckpointEntry(const std::filesystem::path& checkpoint_dir, const proto::CheckpointFile& entry);
// The entries of `names`, in their order, once every one is there; nullopt
// while one is missing. kDataLoss if one does not parse.
Result<std::optional<std::vector<proto::CheckpointFile>>> ReadCheckpointEntries(
    const std::filesystem::path& checkpoint_dir, const std::vector<std::string>& names);
// The entry file of `name`, e.g. to remove a stale one.
std::string CheckpointEntryName(std::string_view name);

// Writes the manifest (its format set to kCheckpointFormat) after checking
// that every listed file is present with its size: the checkpoint is complete
// when this returns OK.
Status CommitCheckpoint(const std::filesystem::path& checkpoint_dir, proto::CheckpointManifest manifest);

// Parses a manifest's bytes and checks them: the format, plain and distinct
// file names. kDataLoss naming the problem.
Result<proto::CheckpointManifest> ParseManifest(std::span<const std::byte> bytes);

struct LoadedCheckpoint {
  std::filesystem::path path;           // the checkpoint's directory
  proto::CheckpointManifest manifest;   // verified: every file matched
  std::vector<std::string> skipped;     // newer checkpoints passed over, "clock-...: reason"

  // A listed file's contents, checked against the manifest again (kDataLoss
  // if it changed since, kNotFound if it is not listed).
  Result<std::vector<std::byte>> ReadFile(std::string_view name) const;
};

// Checks one checkpoint directory: its manifest and every file it lists.
Result<LoadedCheckpoint> VerifyCheckpoint(const std::filesystem::path& checkpoint_dir);

// The newest complete checkpoint under `dir`; kNotFound (listing what was
// skipped and why) if there is none.
Result<LoadedCheckpoint> FindNewestCheckpoint(const std::filesystem::path& dir);

// Removes every checkpoint directory older than the newest `keep` (>= 1)
// that verify; newer ones that do not verify (still being written) stay.
Status PruneCheckpoints(const std::filesystem::path& dir, int keep);

}  // namespace stalelearn::runtime
