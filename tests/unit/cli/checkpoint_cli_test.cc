// Checkpoints and `train --resume` as a user runs them (issues 13 and 29), in
// deterministic emulation (timing backend, ranks as threads): taking
// checkpoints does not change training (the run with them ends with the
// model bits and simulated time of the run without); a resume from any
// checkpoint is deterministic and trains on to the uninterrupted run's
// quality, and with BSP (replicas fresh at the cut) to its very model (LDA,
// whose compute ranks keep local state, on a small token corpus); a damaged
// newest checkpoint (a corrupted file, a missing manifest) makes the resume
// use the one before it and say so in one line; a bad --resume is one line
// and exit 2; a stop's checkpoint is the cut a checkpointed run takes at the
// same clock, file for file.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <sstream>
#include <string>

#include "stalelearn_command.h"

namespace stalelearn::cli {
namespace {

namespace fs = std::filesystem;

using testing::CommandRun;
using testing::ReadAll;
using testing::ScratchDir;

CommandRun Stalelearn(const std::string& arguments) { return testing::RunStalelearn(arguments, "stalelearn_checkpoint_cli_test"); }

std::string JsonField(const fs::path& report, const std::string& field) {
  std::smatch match;
  const std::string json = ReadAll(report);
  return std::regex_search(json, match, std::regex("\"" + field + "\": \"?([0-9a-f.]+)\"?")) ? match[1].str() : "";
}

std::string ClockDirName(int clock) {
  std::string digits = std::to_string(clock);
  return "clock-" + std::string(12 - digits.size(), '0') + digits;
}

// A directory holding only checkpoint `clock` of `from` (as if the run had
// died after writing it).
fs::path CopyCheckpoint(const fs::path& from, int clock, const fs::path& to) {
  fs::create_directories(to);
  fs::copy(from / ClockDirName(clock), to / ClockDirName(clock), fs::copy_options::recursive);
  return to;
}

// One app's uninterrupted checkpointed run, shared by the cases below.
class CheckpointedRun {
 public:
  CheckpointedRun(fs::path dir, std::string train_arguments) : dir_(std::move(dir)), args_(std::move(train_arguments)) {}
  CommandRun Train(const std::string& extra, const fs::path& report) const {
    return Stalelearn("train " + args_ + " --quiet --report '" + report.string() + "' " + extra);
  }
  CommandRun Uninterrupted() const {
    return Train("--set training.checkpoint.dir='" + (dir_ / "all").string() + "' --set training.checkpoint.keep=100",
                 dir_ / "uninterrupted.json");
  }
  CommandRun Resume(const fs::path& from, const fs::path& report) const {
    return Train("--resume '" + from.string() + "'", report);
  }
  const fs::path& dir() const { return dir_; }
  fs::path all() const { return dir_ / "all"; }

 private:
  fs::path dir_;
  std::string args_;
};

class MfCheckpoints : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const fs::path dir = ScratchDir("stalelearn_checkpoint_mf");
    fs::remove_all(dir);
    fs::create_directories(dir);
    synth_ = new CommandRun(Stalelearn("data synth ratings --users 150 --items 300 --ratings 6000 --rank 4 --seed 3 "
                                       "--out '" + (dir / "data").string() + "'"));
    // 5400 training ratings over 3 compute ranks, 64 per clock: 29 clocks an
    // epoch, 116 in all; a checkpoint every 20 clocks.
    run_ = new CheckpointedRun(dir, "--config '" STALELEARN_SOURCE_DIR "/apps/mf/movielens.pbtxt' --ranks 3:1 "
                                    "--set backend.name=timing --set data.path='" +
                                        (dir / "data" / "ratings.tsv").string() +
                                        "' --set training.epochs=4 --set training.samples_per_clock=64 "
                                        "--set training.checkpoint.every_clocks=20");
    uninterrupted_ = new CommandRun(run_->Uninterrupted());
    plain_ = new CommandRun(run_->Train("--set training.checkpoint.every_clocks=0", dir / "plain.json"));
  }
  static void TearDownTestSuite() {
    delete uninterrupted_;
    delete plain_;
    delete run_;
    delete synth_;
    std::error_code ec;
    fs::remove_all(ScratchDir("stalelearn_checkpoint_mf"), ec);  // nothing left in the temporary directory
  }
  static CommandRun* synth_;
  static CheckpointedRun* run_;
  static CommandRun* uninterrupted_;
  static CommandRun* plain_;  // the same run without checkpoints
};
CommandRun* MfCheckpoints::synth_ = nullptr;
CheckpointedRun* MfCheckpoints::run_ = nullptr;
CommandRun* MfCheckpoints::uninterrupted_ = nullptr;
CommandRun* MfCheckpoints::plain_ = nullptr;

// The first "value" of the report: the final metric.
double FinalMetric(const fs::path& report) { return std::stod(JsonField(report, "value")); }

// A checkpoint is cut while training goes on (checkpoint_cut.h): the run
// with a checkpoint every 20 clocks is the run without, to the bit and to
// the simulated picosecond.
TEST_F(MfCheckpoints, CheckpointDoesNotChangeTheModel) {
  ASSERT_EQ(uninterrupted_->exit_code, 0) << uninterrupted_->err;
  ASSERT_EQ(plain_->exit_code, 0) << plain_->err;
  const fs::path plain = run_->dir() / "plain.json";
  const fs::path checkpointed = run_->dir() / "uninterrupted.json";
  ASSERT_FALSE(JsonField(plain, "model_checksum").empty());
  EXPECT_EQ(JsonField(checkpointed, "model_checksum"), JsonField(plain, "model_checksum"));
  EXPECT_EQ(JsonField(checkpointed, "total_seconds"), JsonField(plain, "total_seconds"));
  for (int clock : {20, 40, 60, 80, 100}) EXPECT_TRUE(fs::exists(run_->all() / ClockDirName(clock) / "MANIFEST")) << clock;
}

// A resume starts every replica fresh from the cut, where the uninterrupted
// run's were up to s clocks stale: it ends near that run's model (test RMSE
// within 0.01), and a resume from the same checkpoint always ends the same.
TEST_F(MfCheckpoints, ResumedFromAnyCheckpointEndsDeterministicallyNearTheUninterruptedModel) {
  ASSERT_EQ(synth_->exit_code, 0) << synth_->err;
  ASSERT_EQ(uninterrupted_->exit_code, 0) << uninterrupted_->err;
  const double uninterrupted = FinalMetric(run_->dir() / "uninterrupted.json");
  for (int clock : {20, 60, 100}) {
    SCOPED_TRACE(clock);
    ASSERT_TRUE(fs::exists(run_->all() / ClockDirName(clock) / "MANIFEST"));
    const fs::path from = CopyCheckpoint(run_->all(), clock, run_->dir() / ("from" + std::to_string(clock)));
    const fs::path report = run_->dir() / ("resumed" + std::to_string(clock) + ".json");
    const CommandRun resumed = run_->Resume(from, report);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_EQ(JsonField(report, "resumed_from_clock"), std::to_string(clock));
    EXPECT_NEAR(FinalMetric(report), uninterrupted, 0.01);
    EXPECT_NE(resumed.err.find("[stalelearn] resume: from "), std::string::npos) << resumed.err;
  }
  const fs::path again = run_->dir() / "resumed60-again.json";
  ASSERT_EQ(run_->Resume(CopyCheckpoint(run_->all(), 60, run_->dir() / "from60-again"), again).exit_code, 0);
  EXPECT_EQ(JsonField(again, "model_checksum"), JsonField(run_->dir() / "resumed60.json", "model_checksum"));
  EXPECT_FALSE(JsonField(again, "model_checksum").empty());
}

TEST_F(MfCheckpoints, DamagedNewestCheckpointIsPassedOverWithANotice) {
  ASSERT_EQ(uninterrupted_->exit_code, 0) << uninterrupted_->err;
  // What a resume from the intact checkpoint 80 ends with.
  const fs::path intact = run_->dir() / "intact80.json";
  ASSERT_EQ(run_->Resume(CopyCheckpoint(run_->all(), 80, run_->dir() / "intact80"), intact).exit_code, 0);
  const std::string expected = JsonField(intact, "model_checksum");
  ASSERT_FALSE(expected.empty());
  // Corrupt: one byte of the newest shard flipped.
  const fs::path corrupt = run_->dir() / "corrupt";
  CopyCheckpoint(run_->all(), 80, corrupt);
  CopyCheckpoint(run_->all(), 100, corrupt);
  const fs::path shard = corrupt / ClockDirName(100) / "memory-0.shard";
  std::string bytes = ReadAll(shard);
  ASSERT_GT(bytes.size(), 100u);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
  std::ofstream(shard, std::ios::binary | std::ios::trunc) << bytes;
  // Partial: the newest one's manifest never written (a crash while writing it).
  const fs::path partial = run_->dir() / "partial";
  CopyCheckpoint(run_->all(), 80, partial);
  CopyCheckpoint(run_->all(), 100, partial);
  fs::remove(partial / ClockDirName(100) / "MANIFEST");
  for (const auto& [from, why] : {std::pair{corrupt, std::string("memory-0.shard: checksum mismatch")},
                                  std::pair{partial, std::string("MANIFEST")}}) {
    SCOPED_TRACE(from.string());
    const fs::path report = from / "report.json";
    const CommandRun resumed = run_->Resume(from, report);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_EQ(JsonField(report, "resumed_from_clock"), "80");
    EXPECT_EQ(JsonField(report, "model_checksum"), expected);
    const std::regex notice("\\[stalelearn\\] resume: from [^\\n]*" + ClockDirName(80) + ", clock 80 \\(passed over " +
                            ClockDirName(100) + ": [^\\n]*\\)\\n");
    EXPECT_TRUE(std::regex_search(resumed.err, notice)) << resumed.err;
    EXPECT_NE(resumed.err.find(why), std::string::npos) << resumed.err;
  }
}

TEST_F(MfCheckpoints, BadResumeDirectoryIsOneLineAndExitTwo) {
  const fs::path missing = run_->dir() / "no-such-dir";
  const CommandRun no_dir = run_->Resume(missing, run_->dir() / "x.json");
  EXPECT_EQ(no_dir.exit_code, 2);
  EXPECT_EQ(no_dir.err, "stalelearn: error: --resume " + missing.string() + ": no such directory\n");
  const fs::path empty = run_->dir() / "empty";
  fs::create_directories(empty);
  const CommandRun nothing = run_->Resume(empty, run_->dir() / "y.json");
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_EQ(nothing.err, "stalelearn: error: --resume: " + empty.string() + ": no complete checkpoint (none found)\n");
  // Only damaged checkpoints: nothing to resume from either, the reason named.
  const fs::path damaged = run_->dir() / "damaged";
  CopyCheckpoint(run_->all(), 40, damaged);
  fs::remove(damaged / ClockDirName(40) / "compute-1.state");
  const CommandRun none_complete = run_->Resume(damaged, run_->dir() / "z.json");
  EXPECT_EQ(none_complete.exit_code, 2);
  EXPECT_TRUE(std::regex_match(none_complete.err,
                               std::regex("stalelearn: error: --resume: [^\\n]*: no complete checkpoint \\(skipped " +
                                          ClockDirName(40) + ": [^\\n]*compute-1.state[^\\n]*\\)\\n")))
      << none_complete.err;
}

// Ranks as threads on the local backend (not deterministic): the run
// checkpoints, resumes from the newest checkpoint and finishes.
TEST_F(MfCheckpoints, LocalBackendCheckpointsAndResumes) {
  ASSERT_EQ(synth_->exit_code, 0) << synth_->err;
  const fs::path dir = run_->dir() / "local";
  const std::string local = "--set backend.name=local --set training.checkpoint.dir='" + dir.string() + "' ";
  const CommandRun first = run_->Train(local, run_->dir() / "local1.json");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(fs::exists(dir / ClockDirName(100) / "MANIFEST"));
  EXPECT_FALSE(fs::exists(dir / ClockDirName(60)));  // keep 2 (the default): older ones pruned
  const CommandRun resumed = run_->Train(local + "--resume '" + dir.string() + "'", run_->dir() / "local2.json");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(JsonField(run_->dir() / "local2.json", "resumed_from_clock"), "100");
  EXPECT_NE(JsonField(run_->dir() / "local2.json", "model_checksum"), "");
}

// Every file of checkpoint `clock` in `a` is byte for byte the one in `b`,
// and neither has a file the other lacks (a cut's ".entry" files aside: a
// stop's checkpoint has none).
void ExpectSameCheckpoint(const fs::path& a, const fs::path& b, int clock) {
  SCOPED_TRACE(ClockDirName(clock));
  ASSERT_TRUE(fs::exists(a / ClockDirName(clock) / "MANIFEST"));
  ASSERT_TRUE(fs::exists(b / ClockDirName(clock) / "MANIFEST"));
  int files = 0;
  for (const fs::directory_entry& file : fs::directory_iterator(a / ClockDirName(clock))) {
    if (file.path().extension() == ".entry") continue;
    ++files;
    const fs::path other = b / ClockDirName(clock) / file.path().filename();
    EXPECT_TRUE(fs::exists(other)) << other;
    EXPECT_TRUE(ReadAll(file.path()) == ReadAll(other)) << file.path() << " differs from " << other;
  }
  int other_files = 0;
  for (const fs::directory_entry& file : fs::directory_iterator(b / ClockDirName(clock))) {
    other_files += file.path().extension() == ".entry" ? 0 : 1;
  }
  EXPECT_EQ(files, other_files);
}

// A stop (SIGTERM, planted here at a clock by debug.stop_at_clock) ends the
// run before one clock C agreed by every rank, with a checkpoint of C: file
// for file the cut that a run taking a checkpoint at C, never stopped, takes
// while it trains on; so a resume from either ends with the same model. A
// checkpoint that missed a merge, or ranks that stopped at different clocks,
// would differ.
TEST_F(MfCheckpoints, AStoppedRunResumesToTheModelOfARunCheckpointedAtItsStopClock) {
  ASSERT_EQ(synth_->exit_code, 0) << synth_->err;
  const fs::path dir = run_->dir() / "stopped";
  const CommandRun stopped = run_->Train("--set training.checkpoint.every_clocks=0 --set debug.stop_at_clock=50 "
                                         "--set training.checkpoint.dir='" + dir.string() + "'",
                                         run_->dir() / "stopped.json");
  ASSERT_EQ(stopped.exit_code, 75) << stopped.err;  // kStoppedExitCode
  const std::string json = ReadAll(run_->dir() / "stopped.json");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(json, match, std::regex("\"stopped\": \\{[^}]*\"clock\": \"?([0-9]+)"))) << json;
  const int clock = std::stoi(match[1].str());
  EXPECT_GE(clock, 50);
  EXPECT_LE(clock, 53);  // 3 compute ranks under staleness 2: none is further ahead
  EXPECT_NE(json.find("\"signal\": \"SIGTERM\""), std::string::npos) << json;
  EXPECT_NE(JsonField(run_->dir() / "stopped.json", "value"), "");  // the final evaluation happened
  ASSERT_TRUE(fs::exists(dir / ClockDirName(clock) / "MANIFEST"));
  EXPECT_NE(stopped.err.find("--resume " + dir.string()), std::string::npos) << stopped.err;

  const std::string at_clock = "--set training.checkpoint.every_clocks=" + std::to_string(clock) + " ";
  const CommandRun reference = run_->Train(at_clock + "--set training.checkpoint.dir='" +
                                               (run_->dir() / "at-stop-clock").string() + "'",
                                           run_->dir() / "at-stop-clock.json");
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  ExpectSameCheckpoint(dir, run_->dir() / "at-stop-clock", clock);
  const CommandRun resumed = run_->Train(at_clock + "--set training.checkpoint.dir='" + dir.string() +
                                             "' --resume '" + dir.string() + "'",
                                         run_->dir() / "stopped-resumed.json");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(JsonField(run_->dir() / "stopped-resumed.json", "resumed_from_clock"), std::to_string(clock));
  // Resumed from its checkpoint at the stop's clock (it also wrote later ones).
  const fs::path reference_only = CopyCheckpoint(run_->dir() / "at-stop-clock", clock, run_->dir() / "at-stop-clock-only");
  const CommandRun reference_resumed = run_->Train(at_clock + "--set training.checkpoint.dir='" +
                                                       reference_only.string() + "' --resume '" +
                                                       reference_only.string() + "'",
                                                   run_->dir() / "at-stop-clock-resumed.json");
  ASSERT_EQ(reference_resumed.exit_code, 0) << reference_resumed.err;
  const std::string expected = JsonField(run_->dir() / "at-stop-clock-resumed.json", "model_checksum");
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(JsonField(run_->dir() / "stopped-resumed.json", "model_checksum"), expected);
}

// A stop that lands on a checkpoint clock ends the run there: that
// checkpoint is the stop's, file for file the uninterrupted run's cut at
// that clock, and no later one is written.
TEST_F(MfCheckpoints, AStopAtACheckpointBoundaryEndsTheRunThere) {
  ASSERT_EQ(synth_->exit_code, 0) << synth_->err;
  ASSERT_EQ(uninterrupted_->exit_code, 0) << uninterrupted_->err;
  const fs::path dir = run_->dir() / "stopped-at-40";
  const CommandRun stopped = run_->Train("--set debug.stop_at_clock=40 --set training.checkpoint.dir='" +
                                             dir.string() + "'",
                                         run_->dir() / "stopped-at-40.json");
  ASSERT_EQ(stopped.exit_code, 75) << stopped.err;
  ASSERT_TRUE(fs::exists(dir / ClockDirName(40) / "MANIFEST")) << stopped.err;
  EXPECT_FALSE(fs::exists(dir / ClockDirName(60)));
  ExpectSameCheckpoint(dir, run_->all(), 40);
}

// The interleaving a signal can cause with ranks as threads: the stop is
// asked for after the other compute ranks have passed a checkpoint clock B
// (they passed StopsBefore(B) and train on, up to s clocks ahead) but before
// the last got there. Forced here: compute rank 2 alone asks, on reaching
// B = 40 (debug.stop_rank), and is slowed down ten times (the timing
// backend's virtual-time order makes it arrive last). The agreement
// (stop_agreement.h) never picks a clock below one a rank is already
// committed to: the stop lands past B, at the furthest clock any rank is
// committed to (<= B + s). Every rank writes its part of checkpoint 40 (the
// cut) and stops before C; the run up to the stop is the run without it, so
// both checkpoints are byte for byte those of a run whose ranks all asked at
// C (a stop at a clock's top, no checkpoint clock involved), and a resume
// ends with that run's resumed model. A decision at 40 would leave ranks
// that had already pushed clocks >= 40 inside the stop's checkpoint of 40.
TEST_F(MfCheckpoints, AStopAskedAfterOtherRanksPassedACheckpointClockLandsPastIt) {
  ASSERT_EQ(synth_->exit_code, 0) << synth_->err;
  // wait.timeout_seconds: a rank left waiting fails the run well within the test's deadline.
  const std::string straggler = "--set training.straggler.rank=2 --set training.straggler.slowdown=10 "
                                "--set wait.timeout_seconds=20 ";
  const fs::path dir = run_->dir() / "crossed";
  const CommandRun stopped = run_->Train(straggler + "--set debug.stop_at_clock=40 --set debug.stop_rank=2 "
                                                     "--set training.checkpoint.dir='" + dir.string() + "'",
                                         run_->dir() / "crossed.json");
  ASSERT_EQ(stopped.exit_code, 75) << stopped.err;  // kStoppedExitCode
  const std::string json = ReadAll(run_->dir() / "crossed.json");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(json, match, std::regex("\"stopped\": \\{[^}]*\"clock\": \"?([0-9]+)"))) << json;
  const int clock = std::stoi(match[1].str());
  // 40 would mean no rank had passed it when rank 2 asked: the interleaving was not forced.
  ASSERT_GT(clock, 40) << json;
  ASSERT_LE(clock, 42) << json;  // staleness 2
  EXPECT_NE(json.find("\"signal\": \"SIGTERM\""), std::string::npos) << json;
  EXPECT_NE(json.find(ClockDirName(clock)), std::string::npos) << json;  // the report names the stop's checkpoint
  EXPECT_FALSE(fs::exists(dir / ClockDirName(60)));

  const fs::path reference_dir = run_->dir() / "asked-at-stop";
  const CommandRun reference = run_->Train(straggler + "--set debug.stop_at_clock=" + std::to_string(clock) +
                                               " --set training.checkpoint.dir='" + reference_dir.string() + "'",
                                           run_->dir() / "asked-at-stop.json");
  ASSERT_EQ(reference.exit_code, 75) << reference.err;
  ExpectSameCheckpoint(dir, reference_dir, 40);     // the cut: as without a stop
  ExpectSameCheckpoint(dir, reference_dir, clock);  // the stop: every clock < C of every rank, no more

  const CommandRun resumed = run_->Train(straggler + "--set training.checkpoint.dir='" + dir.string() +
                                             "' --resume '" + dir.string() + "'",
                                         run_->dir() / "crossed-resumed.json");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(JsonField(run_->dir() / "crossed-resumed.json", "resumed_from_clock"), std::to_string(clock));
  const CommandRun reference_resumed = run_->Train(straggler + "--set training.checkpoint.dir='" +
                                                       reference_dir.string() + "' --resume '" +
                                                       reference_dir.string() + "'",
                                                   run_->dir() / "asked-at-stop-resumed.json");
  ASSERT_EQ(reference_resumed.exit_code, 0) << reference_resumed.err;
  const std::string expected = JsonField(run_->dir() / "asked-at-stop-resumed.json", "model_checksum");
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(JsonField(run_->dir() / "crossed-resumed.json", "model_checksum"), expected);
}

TEST_F(MfCheckpoints, ModeWithoutMemoryRanksRefusesCheckpoints) {
  const CommandRun allreduce = run_->Train("--set consistency.mode=ALLREDUCE --set training.checkpoint.dir='" +
                                               (run_->dir() / "ar").string() + "'",
                                           run_->dir() / "ar.json");
  EXPECT_NE(allreduce.exit_code, 0);
  EXPECT_NE(allreduce.err.find("training.checkpoint needs a consistency mode with memory ranks"), std::string::npos)
      << allreduce.err;
}

// LDA keeps every token's topic on its compute rank (HasLocalState::SaveLocalState):
// without it a resumed run could not continue the same chain. Its count
// tables sum exactly in any order, so under BSP (replicas fresh at the cut)
// a resume with two compute ranks ends with the very model of the run that
// took no checkpoint; under SSP taking checkpoints changes nothing.
TEST(LdaCheckpoints, ResumedRunKeepsTheTopicAssignmentsAndEndsWithTheSameChecksum) {
  const fs::path dir = ScratchDir("stalelearn_checkpoint_lda");
  fs::remove_all(dir);
  fs::create_directories(dir);
  // 60 documents of 40 tokens over 50 words, drawn from 3 planted topics.
  std::mt19937 random(7);
  std::ofstream corpus(dir / "tiny.docs");
  for (int d = 0; d < 60; ++d) {
    corpus << "d" << d;
    for (int t = 0; t < 40; ++t) corpus << ' ' << (d % 3) * 15 + static_cast<int>(random() % 20);
    corpus << '\n';
  }
  corpus.close();
  std::ofstream vocabulary(dir / "tiny.vocab");
  for (int w = 0; w < 50; ++w) vocabulary << "w" << w << '\n';
  vocabulary.close();
  const std::string lda = "--config '" STALELEARN_SOURCE_DIR "/apps/lda/brown.pbtxt' --ranks 2:1 "
                          "--set backend.name=timing --set data.path='" + (dir / "tiny.docs").string() +
                          "' --set app.lda.topics=3 --set training.epochs=6 --set training.eval_every_epochs=2 "
                          "--set training.samples_per_clock=100 --set training.checkpoint.every_clocks=10 ";
  // Under SSP: the same model bits and simulated time with and without checkpoints.
  const CheckpointedRun ssp(dir / "ssp", lda);
  fs::create_directories(ssp.dir());
  ASSERT_EQ(ssp.Uninterrupted().exit_code, 0);
  const CommandRun ssp_plain = ssp.Train("--set training.checkpoint.every_clocks=0", ssp.dir() / "plain.json");
  ASSERT_EQ(ssp_plain.exit_code, 0) << ssp_plain.err;
  EXPECT_EQ(JsonField(ssp.dir() / "uninterrupted.json", "model_checksum"), JsonField(ssp.dir() / "plain.json", "model_checksum"));
  EXPECT_EQ(JsonField(ssp.dir() / "uninterrupted.json", "total_seconds"), JsonField(ssp.dir() / "plain.json", "total_seconds"));

  const CheckpointedRun run(dir, lda + "--set consistency.mode=BSP");
  const CommandRun uninterrupted = run.Uninterrupted();
  ASSERT_EQ(uninterrupted.exit_code, 0) << uninterrupted.err;
  const CommandRun plain = run.Train("--set training.checkpoint.every_clocks=0", dir / "plain.json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const std::string expected = JsonField(dir / "plain.json", "model_checksum");
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(JsonField(dir / "uninterrupted.json", "model_checksum"), expected);
  for (int clock : {10, 30}) {
    SCOPED_TRACE(clock);
    const fs::path from = CopyCheckpoint(run.all(), clock, dir / ("from" + std::to_string(clock)));
    // The compute ranks' files hold the assignments: far more than an empty state.
    EXPECT_GT(fs::file_size(from / ClockDirName(clock) / "compute-0.state"), 1000u);
    const fs::path report = dir / ("resumed" + std::to_string(clock) + ".json");
    const CommandRun resumed = run.Resume(from, report);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_EQ(JsonField(report, "model_checksum"), expected);
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);  // kept when something failed, to look at
}

}  // namespace
}  // namespace stalelearn::cli
