// Preset files: the shipped ones load, and every kind of bad value is an
// error naming the file and the field.
#include "backends/timing/presets.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace stalelearn::backends::timing {
namespace {

namespace fs = std::filesystem;

constexpr char kGoodLink[] = R"pb(
  name: "test-link"
  latency_ns { value: 1000 tag: ESTIMATE source: "test" }
  bandwidth_gb_per_s { value: 1 tag: STATED source: "test" }
  per_op_overhead_ns { value: 0 tag: ESTIMATE source: "test" }
)pb";

// `text` with its first `from` replaced by `to`.
std::string Replaced(std::string text, std::string_view from, std::string_view to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// A fresh preset directory per test, removed afterwards.
class PresetDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stalelearn-presets-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "link");
    fs::create_directories(dir_ / "memory");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& relative, const std::string& text) { std::ofstream(dir_ / relative) << text; }
  // The error of loading link preset `name` after writing `text` to it.
  std::string LinkError(const std::string& text) {
    Write("link/bad.pbtxt", Replaced(text, "name: \"test-link\"", "name: \"bad\""));
    auto loaded = LoadLinkPreset(dir_, "bad");
    EXPECT_FALSE(loaded.ok());
    return loaded.ok() ? "" : loaded.status().message();
  }
  fs::path dir_;
};

TEST(ShippedPresets, EveryRequiredPresetLoads) {
  for (const char* name : {"hmc2", "upmem", "hbm-pim", "host-dram"}) {
    auto p = LoadMemoryPreset(DefaultPresetDir(), name);
    EXPECT_TRUE(p.ok()) << name << ": " << p.status().ToString();
  }
  for (const char* name : {"pcie4-x16", "infiniband-hdr", "100gbe", "cxl2"}) {
    auto p = LoadLinkPreset(DefaultPresetDir(), name);
    EXPECT_TRUE(p.ok()) << name << ": " << p.status().ToString();
  }
  for (const char* name : {"gpu-gtx580", "gpu-a100", "cpu-core"}) {
    auto p = LoadComputePreset(DefaultPresetDir(), name);
    EXPECT_TRUE(p.ok()) << name << ": " << p.status().ToString();
  }
}

TEST(ShippedPresets, EveryFileInTheTreeIsValid) {
  int files = 0;
  for (PresetKind kind : {PresetKind::kMemory, PresetKind::kLink, PresetKind::kCompute}) {
    for (const std::string& name : ListPresets(DefaultPresetDir(), kind)) {
      ++files;
      Status status = kind == PresetKind::kMemory ? LoadMemoryPreset(DefaultPresetDir(), name).status()
                      : kind == PresetKind::kLink ? LoadLinkPreset(DefaultPresetDir(), name).status()
                                                  : LoadComputePreset(DefaultPresetDir(), name).status();
      EXPECT_TRUE(status.ok()) << status.ToString();
    }
  }
  EXPECT_GE(files, 9);
}

TEST(ShippedPresets, Gtx580IsStaleLearnsGpu) {
  auto gpu = LoadComputePreset(DefaultPresetDir(), "gpu-gtx580");
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  EXPECT_DOUBLE_EQ(gpu->peak_gflops().value(), 16 * 32 * 2 * 1.6);
  EXPECT_EQ(gpu->peak_gflops().tag(), proto::DERIVED);
  EXPECT_EQ(gpu->transaction_bytes().value(), 128);
}

TEST(ShippedPresets, UnknownNameListsTheKnownOnes) {
  auto p = LoadMemoryPreset(DefaultPresetDir(), "hmc3");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_NE(p.status().message().find("hmc2"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("upmem"), std::string::npos) << p.status().message();
}

TEST(ShippedPresets, PathLikeNamesAreRejected) {
  auto p = LoadLinkPreset(DefaultPresetDir(), "../memory/hmc2");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(PresetDirTest, AUserAddsAPresetByWritingAFile) {
  Write("link/test-link.pbtxt", kGoodLink);
  auto p = LoadLinkPreset(dir_, "test-link");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->bandwidth_gb_per_s().value(), 1);
}

TEST_F(PresetDirTest, ZeroBandwidthNamesFileAndField) {
  const std::string error = LinkError(Replaced(kGoodLink, "value: 1 ", "value: 0 "));
  EXPECT_NE(error.find("bad.pbtxt"), std::string::npos) << error;
  EXPECT_NE(error.find("bandwidth_gb_per_s"), std::string::npos) << error;
  EXPECT_NE(error.find("> 0"), std::string::npos) << error;
}

TEST_F(PresetDirTest, NegativeAndNanAreRejected) {
  EXPECT_NE(LinkError(Replaced(kGoodLink, "value: 1000", "value: -5")).find("latency_ns"), std::string::npos);
  const std::string error = LinkError(Replaced(kGoodLink, "value: 1000", "value: nan"));
  EXPECT_NE(error.find("latency_ns"), std::string::npos) << error;
  EXPECT_NE(error.find("finite"), std::string::npos) << error;
}

TEST_F(PresetDirTest, ZeroIsAllowedOnlyWhereMarked) {
  // per_op_overhead_ns is zero in kGoodLink and allowed; latency is not.
  EXPECT_NE(LinkError(Replaced(kGoodLink, "value: 1000", "value: 0")).find("latency_ns"), std::string::npos);
}

TEST_F(PresetDirTest, MissingFieldIsNamed) {
  const std::string error =
      LinkError(Replaced(kGoodLink, R"(latency_ns { value: 1000 tag: ESTIMATE source: "test" })", ""));
  EXPECT_NE(error.find("latency_ns: missing"), std::string::npos) << error;
}

TEST_F(PresetDirTest, UnknownFieldGivesFileLineAndName) {
  const std::string error = LinkError(std::string(kGoodLink) + "\nlatency_us { value: 1 }\n");
  EXPECT_NE(error.find("bad.pbtxt:"), std::string::npos) << error;
  EXPECT_NE(error.find("latency_us"), std::string::npos) << error;
}

TEST_F(PresetDirTest, UntaggedOrUnsourcedNumbersAreRejected) {
  EXPECT_NE(LinkError(Replaced(kGoodLink, "tag: STATED ", "")).find("tag missing"), std::string::npos);
  EXPECT_NE(LinkError(Replaced(kGoodLink, R"(tag: STATED source: "test")", "tag: STATED")).find("source missing"),
            std::string::npos);
}

TEST_F(PresetDirTest, NameMustMatchFile) {
  Write("link/other.pbtxt", kGoodLink);
  auto p = LoadLinkPreset(dir_, "other");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("field name"), std::string::npos) << p.status().message();
}

TEST_F(PresetDirTest, MemoryPresetNeedsADeviceModel) {
  Write("memory/nodevice.pbtxt", R"pb(
    name: "nodevice"
    atomic_rmw_ns { value: 50 tag: ESTIMATE source: "test" }
  )pb");
  auto p = LoadMemoryPreset(dir_, "nodevice");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("device"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("upmem"), std::string::npos) << p.status().message();
}

TEST_F(PresetDirTest, CountsMustBeWholeAndNestedFieldsAreNamed) {
  Write("memory/halfvault.pbtxt", R"pb(
    name: "halfvault"
    atomic_rmw_ns { value: 50 tag: ESTIMATE source: "test" }
    hmc {
      vaults { value: 31.5 tag: STATED source: "test" }
      banks_per_vault { value: 16 tag: STATED source: "test" }
      atomic_request_bytes { value: 16 tag: STATED source: "test" }
      internal_bandwidth_gb_per_s { value: 320 tag: DERIVED source: "test" }
    }
  )pb");
  auto p = LoadMemoryPreset(dir_, "halfvault");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("hmc.vaults"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("whole"), std::string::npos) << p.status().message();
}

}  // namespace
}  // namespace stalelearn::backends::timing
