// The checkpoint store: a committed checkpoint reads back; a torn, partial or
// corrupt newest checkpoint is detected and the one before it used; the
// writer refuses bad names and a manifest whose files are missing.
#include "framework/runtime/checkpoint_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace stalelearn::runtime {
namespace {

namespace fs = std::filesystem;

std::vector<std::byte> Bytes(std::string_view text) {
  const auto span = std::as_bytes(std::span(text.data(), text.size()));
  return {span.begin(), span.end()};
}

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stalelearn_checkpoint_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A complete checkpoint at `clock` with two ranks' files.
  void Write(std::uint64_t clock) {
    const fs::path at = CheckpointDirFor(dir_, clock);
    proto::CheckpointManifest manifest;
    manifest.set_clock(clock);
    manifest.set_run_name("test");
    for (int rank = 0; rank < 2; ++rank) {
      const std::string name = "rank-" + std::to_string(rank);
      Result<proto::CheckpointFile> entry = WriteCheckpointFile(at, name, Bytes(Contents(clock, rank)));
      ASSERT_TRUE(entry.ok()) << entry.status().ToString();
      *manifest.add_files() = *entry;
    }
    ASSERT_TRUE(CommitCheckpoint(at, manifest).ok());
  }
  static std::string Contents(std::uint64_t clock, int rank) {
    return "state of rank " + std::to_string(rank) + " after clock " + std::to_string(clock);
  }
  std::uint64_t NewestClock() {
    Result<LoadedCheckpoint> cp = FindNewestCheckpoint(dir_);
    EXPECT_TRUE(cp.ok()) << cp.status().ToString();
    return cp.ok() ? cp->manifest.clock() : 0;
  }

  fs::path dir_;
};

TEST_F(CheckpointStoreTest, CommittedCheckpointReadsBack) {
  Write(4);
  Write(8);
  Result<LoadedCheckpoint> cp = FindNewestCheckpoint(dir_);
  ASSERT_TRUE(cp.ok()) << cp.status().ToString();
  EXPECT_EQ(cp->manifest.clock(), 8u);
  EXPECT_EQ(cp->manifest.run_name(), "test");
  EXPECT_TRUE(cp->skipped.empty());
  Result<std::vector<std::byte>> file = cp->ReadFile("rank-1");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(*file, Bytes(Contents(8, 1)));
  EXPECT_EQ(cp->ReadFile("rank-7").status().code(), StatusCode::kNotFound);
  // No temporary file is left behind.
  for (const auto& entry : fs::directory_iterator(cp->path)) EXPECT_FALSE(entry.path().string().ends_with(".tmp"));
}

TEST_F(CheckpointStoreTest, CorruptNewestFallsBackToThePreviousOne) {
  Write(4);
  Write(8);
  const fs::path file = CheckpointDirFor(dir_, 8) / "rank-0";
  std::string contents = Contents(8, 0);
  contents[3] ^= 0x20;  // same size, one byte flipped
  std::ofstream(file, std::ios::binary | std::ios::trunc) << contents;
  Result<LoadedCheckpoint> cp = FindNewestCheckpoint(dir_);
  ASSERT_TRUE(cp.ok()) << cp.status().ToString();
  EXPECT_EQ(cp->manifest.clock(), 4u);
  ASSERT_EQ(cp->skipped.size(), 1u);
  EXPECT_NE(cp->skipped[0].find("clock-000000000008: file rank-0: checksum mismatch"), std::string::npos)
      << cp->skipped[0];
}

TEST_F(CheckpointStoreTest, TornFileFallsBack) {
  Write(4);
  Write(8);
  fs::resize_file(CheckpointDirFor(dir_, 8) / "rank-1", 5);
  EXPECT_EQ(NewestClock(), 4u);
}

TEST_F(CheckpointStoreTest, CheckpointWithoutManifestIsIncomplete) {
  Write(4);
  // A crash after the files but before the manifest.
  ASSERT_TRUE(WriteCheckpointFile(CheckpointDirFor(dir_, 8), "rank-0", Bytes("partial")).ok());
  EXPECT_EQ(NewestClock(), 4u);
}

TEST_F(CheckpointStoreTest, GarbageOrForeignManifestFallsBack) {
  Write(4);
  Write(8);
  Write(12);
  std::ofstream(CheckpointDirFor(dir_, 12) / "MANIFEST", std::ios::binary | std::ios::trunc) << "\xff\xff\xff garbage";
  proto::CheckpointManifest future;
  future.set_format(kCheckpointFormat + 1);
  std::ofstream(CheckpointDirFor(dir_, 8) / "MANIFEST", std::ios::binary | std::ios::trunc)
      << future.SerializeAsString();
  Result<LoadedCheckpoint> cp = FindNewestCheckpoint(dir_);
  ASSERT_TRUE(cp.ok());
  EXPECT_EQ(cp->manifest.clock(), 4u);
  ASSERT_EQ(cp->skipped.size(), 2u);
  EXPECT_NE(cp->skipped[0].find("does not parse"), std::string::npos) << cp->skipped[0];
  EXPECT_NE(cp->skipped[1].find("manifest format 2"), std::string::npos) << cp->skipped[1];
}

TEST_F(CheckpointStoreTest, NoCompleteCheckpointIsNotFoundWithReasons) {
  EXPECT_EQ(FindNewestCheckpoint(dir_).status().code(), StatusCode::kNotFound);
  Write(4);
  fs::remove(CheckpointDirFor(dir_, 4) / "rank-0");
  const Status none = FindNewestCheckpoint(dir_).status();
  EXPECT_EQ(none.code(), StatusCode::kNotFound);
  EXPECT_NE(none.message().find("clock-000000000004"), std::string::npos) << none.message();
}

TEST_F(CheckpointStoreTest, WriterRefusesBadNamesAndMissingFiles) {
  const fs::path at = CheckpointDirFor(dir_, 1);
  for (std::string_view bad : {"", "..", "a/b", "MANIFEST", "x.tmp"}) {
    EXPECT_EQ(WriteCheckpointFile(at, bad, Bytes("x")).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  proto::CheckpointManifest manifest;
  proto::CheckpointFile* missing = manifest.add_files();
  missing->set_name("never-written");
  missing->set_bytes(3);
  EXPECT_EQ(CommitCheckpoint(at, manifest).code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(at / "MANIFEST"));
}

TEST_F(CheckpointStoreTest, PruneKeepsTheNewestComplete) {
  for (std::uint64_t clock : {2, 4, 6, 8}) Write(clock);
  fs::remove(CheckpointDirFor(dir_, 8) / "MANIFEST");  // incomplete: kept, not counted
  ASSERT_TRUE(PruneCheckpoints(dir_, 2).ok());
  EXPECT_TRUE(fs::exists(CheckpointDirFor(dir_, 8)));
  EXPECT_TRUE(fs::exists(CheckpointDirFor(dir_, 6)));
  EXPECT_TRUE(fs::exists(CheckpointDirFor(dir_, 4)));
  EXPECT_FALSE(fs::exists(CheckpointDirFor(dir_, 2)));
  EXPECT_EQ(NewestClock(), 6u);
}

}  // namespace
}  // namespace stalelearn::runtime
