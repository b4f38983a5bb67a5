// A slower preset never gives a shorter time, and more work never costs less:
// every numeric field of every shipped preset is made "worse" in turn
// (latencies and per-item costs doubled, bandwidths, clocks and parallelism
// halved) and each price is compared over a grid of work sizes.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/timing/cost_model.h"
#include "backends/timing/presets.h"
#include "framework/core/error.h"

namespace stalelearn::backends::timing {
namespace {

namespace pb = google::protobuf;

// Fields where a larger value means faster hardware; all others are costs.
const std::set<std::string> kLargerIsFaster = {
    "bandwidth_gb_per_s", "internal_bandwidth_gb_per_s", "host_to_dpu_gb_per_s", "host_bandwidth_gb_per_s",
    "memory_bandwidth_gb_per_s", "peak_gflops", "clock_mhz", "dpus", "vaults", "banks_per_vault", "pim_units",
    "lanes_per_unit", "lane_bytes", "dma_max_bytes", "outstanding_transactions"};

// Calls `visit` with a copy of `preset` in which one Quantity is made worse,
// for every Quantity, and the field's name.
void ForEachSlowerVariant(const pb::Message& preset,
                          const std::function<void(const pb::Message&, const std::string&)>& visit) {
  std::vector<const pb::FieldDescriptor*> path;
  std::function<void(const pb::Message&)> walk = [&](const pb::Message& message) {
    const pb::Reflection& reflection = *message.GetReflection();
    std::vector<const pb::FieldDescriptor*> fields;
    reflection.ListFields(message, &fields);
    for (const pb::FieldDescriptor* field : fields) {
      if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
      path.push_back(field);
      if (field->message_type() == proto::Quantity::descriptor()) {
        std::unique_ptr<pb::Message> slower(preset.New());
        slower->CopyFrom(preset);
        pb::Message* node = slower.get();
        for (const pb::FieldDescriptor* step : path) node = node->GetReflection()->MutableMessage(node, step);
        auto& quantity = static_cast<proto::Quantity&>(*node);
        const bool faster_if_larger = kLargerIsFaster.contains(field->name());
        double v = faster_if_larger ? quantity.value() / 2 : quantity.value() * 2 + 1;
        if (field->options().GetExtension(proto::whole_number)) v = std::max(1.0, std::floor(v));
        quantity.set_value(v);
        visit(*slower, field->name());
      } else {
        walk(reflection.GetMessage(message, field));
      }
      path.pop_back();
    }
  };
  walk(preset);
}

const std::vector<std::uint64_t> kSizes = {0, 1, 7, 64, 1000, 4096, 65'536, 1'000'000, 1ull << 30};

TEST(Monotonicity, SlowerLinkNeverFaster) {
  for (const std::string& name : ListPresets(DefaultPresetDir(), PresetKind::kLink)) {
    const LinkModel base(ValueOrThrow(LoadLinkPreset(DefaultPresetDir(), name)));
    ForEachSlowerVariant(ValueOrThrow(LoadLinkPreset(DefaultPresetDir(), name)),
                         [&](const pb::Message& slower_preset, const std::string& field) {
                           const LinkModel slower(static_cast<const proto::LinkPreset&>(slower_preset));
                           for (std::uint64_t bytes : kSizes) {
                             EXPECT_GE(slower.Transfer(bytes), base.Transfer(bytes)) << name << " " << field;
                             EXPECT_GE(slower.RoundTrip(bytes), base.RoundTrip(bytes)) << name << " " << field;
                           }
                         });
  }
}

TEST(Monotonicity, SlowerMemoryNeverMergesFaster) {
  int variants = 0;
  for (const std::string& name : ListPresets(DefaultPresetDir(), PresetKind::kMemory)) {
    const MemoryModel base(ValueOrThrow(LoadMemoryPreset(DefaultPresetDir(), name)));
    ForEachSlowerVariant(ValueOrThrow(LoadMemoryPreset(DefaultPresetDir(), name)),
                         [&](const pb::Message& slower_preset, const std::string& field) {
                           ++variants;
                           const MemoryModel slower(static_cast<const proto::MemoryPreset&>(slower_preset));
                           EXPECT_GE(slower.AtomicRmw(), base.AtomicRmw()) << name << " " << field;
                           for (std::uint64_t bytes : kSizes) {
                             for (std::uint64_t ops : {bytes / 8, bytes / 4}) {
                               const MergeWork work{.bytes = bytes, .ops = ops};
                               EXPECT_GE(slower.Merge(work), base.Merge(work))
                                   << name << " " << field << " bytes " << bytes << " ops " << ops;
                             }
                           }
                         });
  }
  EXPECT_GE(variants, 20);  // every field of the four memory presets was varied
}

TEST(Monotonicity, SlowerComputeNeverFaster) {
  for (const std::string& name : ListPresets(DefaultPresetDir(), PresetKind::kCompute)) {
    const ComputeModel base(ValueOrThrow(LoadComputePreset(DefaultPresetDir(), name)));
    ForEachSlowerVariant(ValueOrThrow(LoadComputePreset(DefaultPresetDir(), name)),
                         [&](const pb::Message& slower_preset, const std::string& field) {
                           const ComputeModel slower(static_cast<const proto::ComputePreset&>(slower_preset));
                           for (std::uint64_t n : kSizes) {
                             const ComputeWork work{.flops = 2.0 * n, .bytes = 4.0 * n, .random_accesses = n / 10.0};
                             EXPECT_GE(slower.Compute(work), base.Compute(work)) << name << " " << field << " " << n;
                           }
                         });
  }
}

TEST(Monotonicity, MoreWorkNeverCostsLess) {
  for (const std::string& name : ListPresets(DefaultPresetDir(), PresetKind::kMemory)) {
    const MemoryModel memory(ValueOrThrow(LoadMemoryPreset(DefaultPresetDir(), name)));
    for (std::size_t i = 1; i < kSizes.size(); ++i) {
      EXPECT_GE(memory.Merge({kSizes[i], kSizes[i] / 8}), memory.Merge({kSizes[i - 1], kSizes[i - 1] / 8})) << name;
      EXPECT_GE(memory.Merge({kSizes[i - 1], kSizes[i] / 8}), memory.Merge({kSizes[i - 1], kSizes[i - 1] / 8}))
          << name;
    }
  }
  for (const std::string& name : ListPresets(DefaultPresetDir(), PresetKind::kLink)) {
    const LinkModel link(ValueOrThrow(LoadLinkPreset(DefaultPresetDir(), name)));
    for (std::size_t i = 1; i < kSizes.size(); ++i) EXPECT_GT(link.Transfer(kSizes[i]), link.Transfer(kSizes[i - 1]));
  }
}

TEST(Monotonicity, ShippedLinksThatAreDominatedAreNeverFaster) {
  // 100 GbE has more latency and overhead and less bandwidth than InfiniBand HDR.
  const LinkModel hdr(ValueOrThrow(LoadLinkPreset(DefaultPresetDir(), "infiniband-hdr")));
  const LinkModel gbe(ValueOrThrow(LoadLinkPreset(DefaultPresetDir(), "100gbe")));
  for (std::uint64_t bytes : kSizes) EXPECT_GT(gbe.Transfer(bytes), hdr.Transfer(bytes)) << bytes;
}

}  // namespace
}  // namespace stalelearn::backends::timing
