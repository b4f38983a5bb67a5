#include "framework/runtime/checkpoint_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "framework/model/hash64.h"

namespace stalelearn::runtime {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kDirPrefix = "clock-";
constexpr std::string_view kTempSuffix = ".tmp";
constexpr std::string_view kEntrySuffix = ".entry";  // a file's manifest entry, beside it

Status IoError(const fs::path& path, std::string_view what) {
  return Unavailable(fmt::format("{}: cannot {}: {}", path.string(), what, std::strerror(errno)));
}

// A plain name: no directory part, not "." or "..", not the manifest's, no temporary suffix.
bool IsPlainName(std::string_view name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." && name != kManifestName &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos &&
         !name.ends_with(kTempSuffix);
}

Status SyncDirectory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return IoError(dir, "open the directory");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return IoError(dir, "sync the directory");
  return Status::Ok();
}

// Writes to a temporary file of its own ("<path>.<pid>-<thread>.tmp": two
// ranks may commit the same manifest at once), syncs, renames over `path`,
// syncs the directory.
Status WriteDurably(const fs::path& path, std::span<const std::byte> bytes) {
  fs::path temp = path;
  temp += fmt::format(".{}-{}{}", ::getpid(), std::hash<std::thread::id>{}(std::this_thread::get_id()), kTempSuffix);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(temp, "create");
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const Status error = IoError(temp, "write");
      ::close(fd);
      return error;
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const Status error = IoError(temp, "sync");
    ::close(fd);
    return error;
  }
  if (::close(fd) != 0) return IoError(temp, "close");
  if (::rename(temp.c_str(), path.c_str()) != 0) return IoError(path, "rename into place");
  return SyncDirectory(path.parent_path());
}

Result<std::vector<std::byte>> ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Unavailable(fmt::format("{}: read failed", path.string()));
  std::vector<std::byte> bytes(chars.size());
  if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

Status CheckFile(const fs::path& dir, const proto::CheckpointFile& entry, std::vector<std::byte>* contents) {
  STALELEARN_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, ReadBytes(dir / entry.name()));
  if (bytes.size() != entry.bytes()) {
    return DataLoss(fmt::format("file {} has {} bytes, the manifest says {}", entry.name(), bytes.size(),
                                entry.bytes()));
  }
  if (model::Hash64(bytes) != entry.checksum()) {
    return DataLoss(fmt::format("file {}: checksum mismatch", entry.name()));
  }
  if (contents != nullptr) *contents = std::move(bytes);
  return Status::Ok();
}

}  // namespace

fs::path CheckpointDirFor(const fs::path& dir, std::uint64_t clock) {
  return dir / fmt::format("{}{:012}", kDirPrefix, clock);
}

std::vector<std::pair<std::uint64_t, fs::path>> CheckpointDirs(const fs::path& dir) {
  std::vector<std::pair<std::uint64_t, fs::path>> found;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory(ec) || !name.starts_with(kDirPrefix)) continue;
    const std::string digits = name.substr(kDirPrefix.size());
    const bool all_digits = std::ranges::all_of(digits, [](char c) { return c >= '0' && c <= '9'; });
    if (digits.empty() || digits.size() > 19 || !all_digits) continue;
    found.emplace_back(std::stoull(digits), entry.path());
  }
  std::ranges::sort(found, std::greater<>{});
  return found;
}


Result<proto::CheckpointFile> WriteCheckpointFile(const fs::path& checkpoint_dir, std::string_view name,
                                                  std::span<const std::byte> bytes) {
  if (!IsPlainName(name)) return InvalidArgument(fmt::format("checkpoint file name '{}' is not a plain name", name));
  std::error_code ec;
  fs::create_directories(checkpoint_dir, ec);
  if (ec) return Unavailable(fmt::format("{}: cannot create: {}", checkpoint_dir.string(), ec.message()));
  STALELEARN_RETURN_IF_ERROR(WriteDurably(checkpoint_dir / name, bytes));
  proto::CheckpointFile entry;
  entry.set_name(std::string(name));
  entry.set_bytes(bytes.size());
  entry.set_checksum(model::Hash64(bytes));
  return entry;
}

std::string CheckpointEntryName(std::string_view name) { return fmt::format("{}{}", name, kEntrySuffix); }

Status WriteCheckpointEntry(const fs::path& checkpoint_dir, const proto::CheckpointFile& entry) {
  const std::string bytes = entry.SerializeAsString();
  return WriteCheckpointFile(checkpoint_dir, CheckpointEntryName(entry.name()), std::as_bytes(std::span(bytes)))
      .status();
}

Result<std::optional<std::vector<proto::CheckpointFile>>> ReadCheckpointEntries(const fs::path& checkpoint_dir,
                                                                                const std::vector<std::string>& names) {
  std::vector<proto::CheckpointFile> entries;
  for (const std::string& name : names) {
    const fs::path path = checkpoint_dir / CheckpointEntryName(name);
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::optional<std::vector<proto::CheckpointFile>>();  // still to come
    STALELEARN_ASSIGN_OR_RETURN(const std::vector<std::byte> bytes, ReadBytes(path));
    if (!entries.emplace_back().ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return DataLoss(fmt::format("{}: does not parse", path.string()));
    }
  }
  return std::optional(std::move(entries));
}

Status CommitCheckpoint(const fs::path& checkpoint_dir, proto::CheckpointManifest manifest) {
  manifest.set_format(kCheckpointFormat);
  std::set<std::string> names;
  for (const proto::CheckpointFile& entry : manifest.files()) {
    if (!IsPlainName(entry.name()) || !names.insert(entry.name()).second) {
      return InvalidArgument(fmt::format("checkpoint manifest: file name '{}' is not plain or is listed twice",
                                         entry.name()));
    }
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(checkpoint_dir / entry.name(), ec);
    if (ec || size != entry.bytes()) {
      return FailedPrecondition(fmt::format("{}: file {} is missing or not {} bytes; not committing",
                                            checkpoint_dir.string(), entry.name(), entry.bytes()));
    }
  }
  std::string bytes;
  if (!manifest.SerializeToString(&bytes)) return Internal("checkpoint manifest does not serialize");
  return WriteDurably(checkpoint_dir / kManifestName, std::as_bytes(std::span(bytes)));
}

Result<proto::CheckpointManifest> ParseManifest(std::span<const std::byte> bytes) {
  proto::CheckpointManifest manifest;
  if (!manifest.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return DataLoss("manifest does not parse");
  }
  if (manifest.format() != kCheckpointFormat) {
    return DataLoss(fmt::format("manifest format {} (this program reads {})", manifest.format(), kCheckpointFormat));
  }
  std::set<std::string_view> names;
  for (const proto::CheckpointFile& entry : manifest.files()) {
    if (!IsPlainName(entry.name())) return DataLoss(fmt::format("manifest lists a bad file name '{}'", entry.name()));
    if (!names.insert(entry.name()).second) return DataLoss(fmt::format("manifest lists {} twice", entry.name()));
  }
  return manifest;
}

Result<LoadedCheckpoint> VerifyCheckpoint(const fs::path& checkpoint_dir) {
  STALELEARN_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, ReadBytes(checkpoint_dir / kManifestName));
  STALELEARN_ASSIGN_OR_RETURN(proto::CheckpointManifest manifest, ParseManifest(bytes));
  for (const proto::CheckpointFile& entry : manifest.files()) {
    STALELEARN_RETURN_IF_ERROR(CheckFile(checkpoint_dir, entry, nullptr));
  }
  return LoadedCheckpoint{checkpoint_dir, std::move(manifest), {}};
}

Result<std::vector<std::byte>> LoadedCheckpoint::ReadFile(std::string_view name) const {
  for (const proto::CheckpointFile& entry : manifest.files()) {
    if (entry.name() != name) continue;
    std::vector<std::byte> contents;
    Status checked = CheckFile(path, entry, &contents);
    if (!checked.ok()) return checked.WithContext(path.string());
    return contents;
  }
  return NotFound(fmt::format("{}: no file {} in the checkpoint", path.string(), name));
}

Result<LoadedCheckpoint> FindNewestCheckpoint(const fs::path& dir) {
  std::vector<std::string> skipped;
  for (const auto& [clock, path] : CheckpointDirs(dir)) {
    Result<LoadedCheckpoint> checkpoint = VerifyCheckpoint(path);
    if (checkpoint.ok()) {
      checkpoint->skipped = std::move(skipped);
      return checkpoint;
    }
    skipped.push_back(fmt::format("{}: {}", path.filename().string(), checkpoint.status().message()));
  }
  std::string why = "none found";
  if (!skipped.empty()) why = "skipped " + fmt::format("{}", fmt::join(skipped, "; "));
  return NotFound(fmt::format("{}: no complete checkpoint ({})", dir.string(), why));
}

Status PruneCheckpoints(const fs::path& dir, int keep) {
  if (keep < 1) return InvalidArgument(fmt::format("keep must be >= 1, got {}", keep));
  int kept = 0;
  for (const auto& [clock, path] : CheckpointDirs(dir)) {
    if (kept < keep) {
      if (VerifyCheckpoint(path).ok()) ++kept;
      continue;
    }
    // Another rank that committed a checkpoint at the same time may be
    // pruning too: whoever renames the directory out of the way removes it
    // (the name no longer looks like a checkpoint's), the other passes on.
    const fs::path doomed =
        dir / fmt::format(".pruned-{}-{}-{}", path.filename().string(), ::getpid(),
                          std::hash<std::thread::id>{}(std::this_thread::get_id()));
    if (::rename(path.c_str(), doomed.c_str()) != 0) {
      if (errno == ENOENT) continue;
      return Unavailable(fmt::format("{}: cannot remove: {}", path.string(), std::strerror(errno)));
    }
    std::error_code ec;
    fs::remove_all(doomed, ec);
    if (ec) return Unavailable(fmt::format("{}: cannot remove: {}", doomed.string(), ec.message()));
  }
  return Status::Ok();
}

}  // namespace stalelearn::runtime
