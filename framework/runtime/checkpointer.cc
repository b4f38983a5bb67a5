#include "framework/runtime/checkpointer.h"
#include "framework/runtime/app_facets.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <limits>
#include <set>

namespace stalelearn::runtime {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kLostRanksFile = "LOST_RANKS";  // appended by deploy/run.sh --restart

std::string ProgressFileName(model::ComputeIndex c) { return fmt::format("progress-compute-{}", c.value); }

// "clocks samples" as the previous attempt left it; nullopt if unreadable.
std::optional<std::pair<std::int64_t, std::int64_t>> ReadProgress(const fs::path& path) {
  std::ifstream in(path);
  std::int64_t clocks = 0;
  std::int64_t samples = 0;
  if (!(in >> clocks >> samples)) return std::nullopt;
  return std::make_pair(clocks, samples);
}

}  // namespace

std::string MemoryShardFileName(model::MemoryIndex m) { return fmt::format("memory-{}.shard", m.value); }
std::string ComputeStateFileName(model::ComputeIndex c) { return fmt::format("compute-{}.state", c.value); }

Checkpointer::Checkpointer(const RankEnv& env, std::int64_t total_clocks)
    : env_(env), total_clocks_(total_clocks) {
  const proto::CheckpointConfig& config = env.config.training().checkpoint();
  every_ = config.every_clocks();
  dir_ = config.dir();
}

Checkpointer::~Checkpointer() {
  if (progress_fd_ >= 0) ::close(progress_fd_);
}

Result<std::unique_ptr<Checkpointer>> Checkpointer::Make(const RankEnv& env, std::int64_t total_clocks) {
  std::unique_ptr<Checkpointer> checkpointer(new Checkpointer(env, total_clocks));
  if (!env.config.training().checkpoint().resume_dir().empty()) {
    STALELEARN_RETURN_IF_ERROR(checkpointer->LoadResume());
  }
  if (checkpointer->every_ > 0 && checkpointer->writes_checkpoints()) checkpointer->RemoveStaleEntries();
  return checkpointer;
}

Status Checkpointer::LoadResume() {
  const fs::path dir = env_.config.training().checkpoint().resume_dir();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return InvalidArgument(fmt::format("resume: {}: no such checkpoint directory", dir.string()));
  }
  STALELEARN_ASSIGN_OR_RETURN(LoadedCheckpoint found, FindNewestCheckpoint(dir));
  const auto clock = static_cast<std::int64_t>(found.manifest.clock());
  if (clock <= 0 || clock >= total_clocks_) {
    return InvalidArgument(fmt::format("resume: {} holds clock {}, outside this run's clocks 1..{}",
                                       found.path.string(), clock, total_clocks_ - 1));
  }
  std::set<std::string> names;
  for (const proto::CheckpointFile& f : found.manifest.files()) names.insert(f.name());
  const std::size_t expected =
      static_cast<std::size_t>(env_.roles.compute_ranks() + env_.roles.memory_ranks());
  bool fits = names.size() == expected;
  for (int m = 0; m < env_.roles.memory_ranks(); ++m) fits &= names.contains(MemoryShardFileName({m}));
  for (int c = 0; c < env_.roles.compute_ranks(); ++c) fits &= names.contains(ComputeStateFileName({c}));
  if (!fits) {
    return InvalidArgument(fmt::format("resume: {} was written by a run with other ranks ({} files; this run has {} "
                                       "compute and {} memory ranks)",
                                       found.path.string(), names.size(), env_.roles.compute_ranks(),
                                       env_.roles.memory_ranks()));
  }
  if (env_.bootstrap.rank().value == 0) {
    std::string passed;
    if (!found.skipped.empty()) passed = fmt::format(" (passed over {})", fmt::join(found.skipped, "; "));
    std::fprintf(stderr, "[stalelearn] resume: from %s, clock %lld%s\n", found.path.string().c_str(),
                 static_cast<long long>(clock), passed.c_str());
  }
  first_clock_ = clock;
  resumed_ = std::move(found);
  if (env_.bootstrap.rank().value == 0) ReadLostProgress();
  return Status::Ok();
}

void Checkpointer::ReadLostProgress() {
  const fs::path dir = env_.config.training().checkpoint().resume_dir();
  proto::Lost lost;
  if (std::ifstream in(dir / kLostRanksFile); in) {
    std::set<int> ranks;
    for (int r; in >> r;) ranks.insert(r);
    for (int r : ranks) lost.add_ranks(r);
  }
  for (int c = 0; c < env_.roles.compute_ranks(); ++c) {
    const auto progress = ReadProgress(dir / ProgressFileName({c}));
    if (!progress || progress->first <= first_clock_) continue;
    lost.set_clocks(std::max(lost.clocks(), progress->first - first_clock_));
    std::int64_t samples_at_checkpoint = 0;
    if (Result<std::vector<std::byte>> bytes = resumed_->ReadFile(ComputeStateFileName({c})); bytes.ok()) {
      proto::ComputeRankState state;
      if (state.ParseFromArray(bytes->data(), static_cast<int>(bytes->size()))) samples_at_checkpoint = state.samples();
    }
    lost.set_samples(lost.samples() + std::max<std::int64_t>(0, progress->second - samples_at_checkpoint));
  }
  if (lost.ranks_size() > 0 || lost.clocks() > 0) lost_ = std::move(lost);
}

Result<std::vector<std::byte>> Checkpointer::ReadResumedFile(const std::string& name) const {
  if (!resumed_) return FailedPrecondition("no checkpoint to read: not resuming");
  return resumed_->ReadFile(name);
}

Status Checkpointer::WriteFile(std::int64_t clock, const std::string& name, std::span<const std::byte> bytes,
                               bool cut) {
  const fs::path where = CheckpointPath(clock);
  Result<proto::CheckpointFile> entry = WriteCheckpointFile(where, name, bytes);
  if (!entry.ok()) return entry.status().WithContext(fmt::format("checkpoint clock {}", clock));
  if (!cut) {
    pending_ = std::move(*entry);
    pending_clock_ = clock;
    return Status::Ok();
  }
  if (Status written = WriteCheckpointEntry(where, *entry); !written.ok()) {
    return written.WithContext(fmt::format("checkpoint clock {}", clock));
  }
  return CommitIfComplete(clock);
}

std::string Checkpointer::FileNameOf(transport::Rank rank) const {
  if (env_.roles.role(rank) == Role::kMemory) return MemoryShardFileName(env_.roles.memory_index(rank));
  return ComputeStateFileName(env_.roles.compute_index(rank));
}

Status Checkpointer::CommitIfComplete(std::int64_t clock) {
  // In world-rank order, as CommitPending gathers them.
  std::vector<std::string> names;
  for (int r = 0; r < env_.roles.world_size(); ++r) names.push_back(FileNameOf(transport::Rank{r}));
  STALELEARN_ASSIGN_OR_RETURN(std::optional<std::vector<proto::CheckpointFile>> files,
                              ReadCheckpointEntries(CheckpointPath(clock), names));
  if (!files) return Status::Ok();  // some rank's part is still to come
  return Commit(clock, std::move(*files));
}

Status Checkpointer::Commit(std::int64_t clock, std::vector<proto::CheckpointFile> files) {
  proto::CheckpointManifest manifest;
  manifest.set_clock(static_cast<std::uint64_t>(clock));
  manifest.set_run_name(env_.config.name());
  for (proto::CheckpointFile& file : files) *manifest.add_files() = std::move(file);
  STALELEARN_RETURN_IF_ERROR(CommitCheckpoint(CheckpointPath(clock), std::move(manifest)));
  return PruneCheckpoints(dir_, env_.config.training().checkpoint().keep());
}

void Checkpointer::RemoveStaleEntries() const {
  const std::string mine = CheckpointEntryName(FileNameOf(env_.transport.rank()));
  for (const auto& [clock, path] : CheckpointDirs(dir_)) {
    std::error_code ec;
    if (static_cast<std::int64_t>(clock) > first_clock_) fs::remove(path / mine, ec);
  }
}

std::filesystem::path Checkpointer::CheckpointPath(std::int64_t clock) const {
  return CheckpointDirFor(dir_, static_cast<std::uint64_t>(clock));
}

Status Checkpointer::WriteComputeState(std::int64_t clock, model::ComputeIndex me, const LocalState* state,
                                       std::int64_t samples, bool cut) {
  STALELEARN_ASSIGN_OR_RETURN(std::vector<std::byte> app_bytes, env_.facets.SaveLocalState(env_.app, state));
  proto::ComputeRankState saved;
  saved.set_clock(static_cast<std::uint64_t>(clock));
  saved.set_app_state(reinterpret_cast<const char*>(app_bytes.data()), app_bytes.size());
  saved.set_samples(samples);
  const std::string bytes = saved.SerializeAsString();
  return WriteFile(clock, ComputeStateFileName(me), std::as_bytes(std::span(bytes.data(), bytes.size())), cut);
}

Status Checkpointer::CommitPending(const std::string& key) {
  // Every rank takes part.
  std::string mine;
  if (pending_) pending_->SerializeToString(&mine);
  STALELEARN_ASSIGN_OR_RETURN(std::vector<transport::Bytes> entries,
                              env_.bootstrap.AllGather(key, std::as_bytes(std::span(mine))));
  if (pending_ && env_.bootstrap.rank().value == 0) {
    std::vector<proto::CheckpointFile> files;
    for (const transport::Bytes& bytes : entries) {
      if (bytes.empty() || !files.emplace_back().ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return Internal(fmt::format("checkpoint clock {}: a rank sent no file entry", pending_clock_));
      }
    }
    STALELEARN_RETURN_IF_ERROR(Commit(pending_clock_, std::move(files)));
  }
  pending_.reset();
  return Status::Ok();
}

Status Checkpointer::AlignResumedStart() {
  STALELEARN_ASSIGN_OR_RETURN(const transport::VirtualTime latest,
                              env_.wait.time->LatestOverRanks("stalelearn/resume-time"));
  aligned_ = latest + transport::VirtualDuration(1);
  return Status::Ok();
}

Status Checkpointer::JoinSchedule() {
  transport::RankTime& time = *env_.wait.time;
  STALELEARN_RETURN_IF_ERROR(time.StartSchedule());
  if (!aligned_) return Status::Ok();
  return time.AdvanceTo(*aligned_);
}

void Checkpointer::NoteProgress(std::int64_t clocks_done, std::int64_t samples_done) {
  if (dir_.empty() || progress_failed_) return;
  if (progress_fd_ < 0) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    const fs::path path = dir_ / ProgressFileName(env_.roles.compute_index(env_.transport.rank()));
    progress_fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (progress_fd_ < 0) {
      progress_failed_ = true;
      return;
    }
  }
  // Fixed width, rewritten in place: a reader sees one whole record or the
  // previous one (the page cache survives the process's death).
  const std::string record = fmt::format("{:20} {:20}\n", clocks_done, samples_done);
  if (::pwrite(progress_fd_, record.data(), record.size(), 0) != static_cast<ssize_t>(record.size())) {
    progress_failed_ = true;
  }
}

void Checkpointer::MaybeKill(std::int64_t clock) const {
  const proto::DebugConfig& debug = env_.config.debug();
  if (debug.kill_at_clock() == 0 || clock < debug.kill_at_clock() || resumed_) return;
  if (debug.kill_rank() != env_.bootstrap.rank().value) return;
  std::fprintf(stderr, "[stalelearn] debug: rank %d kills itself at clock %lld\n", env_.bootstrap.rank().value,
               static_cast<long long>(clock));
  std::fflush(stderr);
  std::raise(SIGKILL);
}

}  // namespace stalelearn::runtime
