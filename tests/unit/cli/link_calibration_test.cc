// Link calibration (apps/cli/link_calibration.h): a quick calibration of a
// real transport, 2 ranks as threads, gives a preset the timing backend
// accepts, every number MEASURED with its measurement named, and the preset
// survives the trip through its text file.
#include "apps/cli/link_calibration.h"

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "backends/timing/presets.h"

namespace stalelearn::cli {
namespace {

constexpr char kPrefix[] = "link_calibration_test on this host";

LinkCalibrationSpec QuickSpec(std::string name, std::string backend) {
  LinkCalibrationSpec spec;
  spec.preset_name = std::move(name);
  spec.backend = std::move(backend);
  spec.description = "calibrated by link_calibration_test";
  spec.source_prefix = kPrefix;
  spec.quick = true;
  return spec;
}

void ExpectMeasured(const proto::Quantity& q, const char* field) {
  EXPECT_EQ(q.tag(), proto::MEASURED) << field;
  EXPECT_FALSE(q.source().empty()) << field;
  EXPECT_EQ(q.source().rfind(kPrefix, 0), 0u) << field << ": " << q.source();
  EXPECT_NE(q.source().find("stalelearn bench rma"), std::string::npos) << field << ": " << q.source();
  EXPECT_TRUE(std::isfinite(q.value())) << field;
}

// The checks both backends share; `name` is the preset's name.
void ExpectValidCalibratedPreset(const proto::LinkPreset& preset, const std::string& name) {
  EXPECT_EQ(preset.name(), name);
  ExpectMeasured(preset.latency_ns(), "latency_ns");
  ExpectMeasured(preset.bandwidth_gb_per_s(), "bandwidth_gb_per_s");
  ExpectMeasured(preset.per_op_overhead_ns(), "per_op_overhead_ns");
  EXPECT_GT(preset.latency_ns().value(), 0);
  EXPECT_GT(preset.bandwidth_gb_per_s().value(), 0);
  EXPECT_GE(preset.per_op_overhead_ns().value(), 0);

  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(preset, &text));
  proto::LinkPreset parsed;
  const Status status = backends::timing::ParsePreset(text, "x.pbtxt", name, parsed);
  ASSERT_TRUE(status.ok()) << status.ToString() << "\n" << text;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, preset)) << text;
  std::printf("%s", text.c_str());  // the measured values, for the log
}

TEST(LinkCalibration, LocalBackendGivesAValidMeasuredPreset) {
  auto preset = CalibrateLink(QuickSpec("calibrated-local", "local"));
  ASSERT_TRUE(preset.ok()) << preset.status().ToString();
  ExpectValidCalibratedPreset(*preset, "calibrated-local");
}

TEST(LinkCalibration, ABadPresetNameIsOneLineBeforeMeasuring) {
  auto preset = CalibrateLink(QuickSpec("no/slash", "local"));
  ASSERT_FALSE(preset.ok());
  EXPECT_EQ(preset.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(preset.status().message().find("no/slash"), std::string::npos) << preset.status().message();
}

TEST(LinkCalibration, AnUnknownBackendNamesTheLinkAndTheQuantity) {
  auto preset = CalibrateLink(QuickSpec("calibrated-nothing", "no-such-backend"));
  ASSERT_FALSE(preset.ok());
  const std::string message = preset.status().message();
  EXPECT_NE(message.find("link 'calibrated-nothing' (backend no-such-backend)"), std::string::npos) << message;
  EXPECT_NE(message.find("per_op_overhead_ns"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

#ifdef STALELEARN_WITH_UCX
TEST(LinkCalibration, UcxSharedMemory) {
  auto preset = CalibrateLink(QuickSpec("calibrated-ucx-shm", "ucx"));
  ASSERT_TRUE(preset.ok()) << preset.status().ToString();
  ExpectValidCalibratedPreset(*preset, "calibrated-ucx-shm");
}

TEST(LinkCalibration, UcxTcpNamesItsBackendOptionInEverySource) {
  LinkCalibrationSpec spec = QuickSpec("calibrated-ucx-tcp", "ucx");
  spec.backend_options = {{"tls", "tcp"}};
  auto preset = CalibrateLink(spec);
  ASSERT_TRUE(preset.ok()) << preset.status().ToString();
  ExpectValidCalibratedPreset(*preset, "calibrated-ucx-tcp");
  for (const proto::Quantity* q : {&preset->latency_ns(), &preset->bandwidth_gb_per_s(), &preset->per_op_overhead_ns()}) {
    EXPECT_NE(q->source().find("--backend ucx --backend-option tls=tcp"), std::string::npos) << q->source();
  }
}
#endif

}  // namespace
}  // namespace stalelearn::cli
