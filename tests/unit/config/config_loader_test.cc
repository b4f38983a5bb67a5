// Config parsing, overrides, defaults and each kind of config error.
#include "framework/core/config_loader.h"

#include <gtest/gtest.h>

#include "apps/mf/register.h"
#include "backends/builtin.h"
#include "backends/timing/timing_options.pb.h"
#ifdef STALELEARN_WITH_UCX
#include "backends/ucx/ucx_options.pb.h"
#endif
#include "framework/sync/merge_policy_adagrad.pb.h"
#include "framework/sync/merge_policy_adam.pb.h"
#include "framework/core/error.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace stalelearn::config {
namespace {

constexpr const char* kGood = R"pb(
  name: "unit"
  app { name: "mf" mf { rank: 8 learning_rate: 0.02 } }
  data { name: "movielens" test_fraction: 0.2 }
  training { epochs: 3 samples_per_clock: 256 }
  consistency { mode: "SSP" staleness: 2 }
  cluster { memory_ranks: 2 }
  backend { name: "local" }
  seed: 42
)pb";

class ConfigFile {
 public:
  explicit ConfigFile(const std::string& text) {
    static int counter = 0;  // tests of one binary run sequentially
    path_ = std::filesystem::temp_directory_path() /
            ("stalelearn_config_test_" + std::to_string(::getpid()) + "_" + std::to_string(++counter) + ".pbtxt");
    std::ofstream(path_) << text;
  }
  ~ConfigFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// The schema of a program with the mf app and the built-in backends
// registered (their sections, defaults and validation live in apps/mf and
// backends/timing) and the built-in merge policies.
const ConfigSchema& Schema() {
  static const ConfigSchema* schema = [] {
    runtime::Registries r;
    ThrowIfError(apps::mf::RegisterApp(r));
    ThrowIfError(backends::RegisterBuiltinBackends(r.backends));
    return new ConfigSchema(ValueOrThrow(r.Schema()));
  }();
  return *schema;
}

Result<proto::Config> LoadConfig(const std::string& path, std::vector<std::string> overrides) {
  return config::LoadConfig(path, overrides, Schema());
}

Result<proto::Config> Load(const std::string& text, std::vector<std::string> overrides = {}) {
  ConfigFile file(text);
  return LoadConfig(file.path(), overrides);
}

apps::mf::MfConfig Mf(const proto::Config& c) { return ValueOrThrow(UnpackAppParams<apps::mf::MfConfig>(c)); }

TEST(ConfigLoaderTest, ParsesEveryGroup) {
  auto c = Load(kGood);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name(), "unit");
  EXPECT_EQ(Mf(*c).rank(), 8);
  EXPECT_FLOAT_EQ(Mf(*c).learning_rate(), 0.02f);
  EXPECT_DOUBLE_EQ(c->data().test_fraction(), 0.2);
  EXPECT_EQ(c->training().epochs(), 3);
  EXPECT_EQ(c->consistency().mode(), "SSP");
  EXPECT_EQ(c->consistency().staleness(), 2);
  EXPECT_EQ(c->cluster().memory_ranks(), 2);
  EXPECT_EQ(c->backend().name(), "local");
  EXPECT_EQ(c->seed(), 42u);
}

TEST(ConfigLoaderTest, FillsDefaultsForZeroFields) {
  auto c = Load("seed: 7");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->app().name(), "mf") << "the only registered app is the default";
  EXPECT_EQ(Mf(*c).rank(), 20) << "the app's defaults come from the app";
  EXPECT_EQ(c->data().name(), "movielens") << "the app defaults data.name";
  EXPECT_EQ(c->training().epochs(), 20);
  EXPECT_EQ(c->consistency().mode(), "SSP");
  EXPECT_EQ(c->cluster().memory_ranks(), 1);
  EXPECT_EQ(c->cluster().partitioning(), proto::RANGE);
  EXPECT_EQ(c->data().split_seed(), 7u) << "split seed defaults to the run seed";
}

TEST(ConfigLoaderTest, ModeNamesAreCaseInsensitive) {
  auto c = Load(kGood, {"consistency.mode=bsp"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->consistency().mode(), "BSP");
}

TEST(ConfigLoaderTest, MergePoliciesPerTableFromTextAndOverrides) {
  auto c = Load(std::string(kGood) + R"pb(merge { key: "user" value { policy: "adagrad" } })pb",
                {"merge.user.adagrad.learning_rate=0.5", "merge.*.policy=average"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->merge().at("user").policy(), "adagrad");
  sync::AdagradOptions adagrad;
  ASSERT_TRUE(c->merge().at("user").params().UnpackTo(&adagrad));
  EXPECT_FLOAT_EQ(adagrad.learning_rate(), 0.5f);
  EXPECT_FLOAT_EQ(adagrad.epsilon(), 1e-3f) << "the declared default";
  EXPECT_EQ(c->merge().at("*").policy(), "average");
  EXPECT_FALSE(c->merge().at("*").has_params()) << "average has no options";
}

TEST(ConfigLoaderTest, AMergePolicysSectionNamesItsPolicyAndIsResolved) {
  auto c = Load(std::string(kGood) + R"pb(merge { key: "user" value { adam { beta1: 0.8 } } })pb",
                {"merge.item.policy=adam", "merge.item.adam.beta2=0.999"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->merge().at("user").policy(), "adam") << "the section names the policy";
  sync::AdamOptions user, item;
  ASSERT_TRUE(c->merge().at("user").params().UnpackTo(&user));
  ASSERT_TRUE(c->merge().at("item").params().UnpackTo(&item));
  EXPECT_FLOAT_EQ(user.beta1(), 0.8f);
  EXPECT_FLOAT_EQ(user.beta2(), 0.99f);
  EXPECT_FLOAT_EQ(item.beta2(), 0.999f);
  EXPECT_FLOAT_EQ(item.learning_rate(), 0.01f);
}

TEST(ConfigLoaderTest, MergePolicyOptionsAreCheckedAndNamed) {
  const struct {
    std::vector<std::string> overrides;
    std::string expected;
  } cases[] = {
      {{"merge.user.adam.beta1=1"}, "merge.user.adam.beta1 must be in [0, 1), got 1"},
      {{"merge.user.adagrad.epsilon=-1"}, "merge.user.adagrad.epsilon must be > 0, got -1"},
      {{"merge.user.policy=sum", "merge.user.adam.beta1=0.5"}, "merge.user.adam is set but merge.user.policy is 'sum'"},
      {{"merge.user.adam.bogus=1"}, "unknown field 'bogus'"},
      {{"merge.user.policy=adamw"}, "merge.user: unknown merge policy 'adamw' (known: adagrad, adam, average, "},
      {{"backend.name=tcp"}, "backend.name: unknown backend 'tcp' (backends: local, timing"},
  };
  for (const auto& bad : cases) {
    auto c = Load(kGood, bad.overrides);
    ASSERT_FALSE(c.ok()) << bad.expected;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(bad.expected), std::string::npos) << c.status().message();
    EXPECT_EQ(c.status().message().find('\n'), std::string::npos) << c.status().message();
  }
}

#ifdef STALELEARN_WITH_UCX
// The ucx backend's section, alone or beside timing's when timing wraps ucx
// (config.backend.wrapped).
TEST(ConfigLoaderTest, TheUcxSectionIsResolvedAloneOrWrappedByTiming) {
  auto alone = Load(kGood, {"backend.name=ucx", "backend.ucx.tls=tcp"});
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  ucx::UcxBackendOptions ucx;
  ASSERT_TRUE(alone->backend().params().UnpackTo(&ucx));
  EXPECT_EQ(ucx.tls(), "tcp");
  EXPECT_EQ(ucx.progress_thread(), "off") << "the declared default";
  EXPECT_TRUE(alone->backend().wrapped().empty());

  auto wrapped = Load(kGood, {"backend.name=timing", "backend.timing.inner=ucx", "backend.ucx.net_devices=lo"});
  ASSERT_TRUE(wrapped.ok()) << wrapped.status().ToString();
  ASSERT_EQ(wrapped->backend().wrapped().count("ucx"), 1u);
  ASSERT_TRUE(wrapped->backend().wrapped().at("ucx").UnpackTo(&ucx));
  EXPECT_EQ(ucx.net_devices(), "lo");
  timing::TimingBackendOptions timing;
  ASSERT_TRUE(wrapped->backend().params().UnpackTo(&timing));
  EXPECT_EQ(timing.inner(), "ucx");
}
#endif

TEST(ConfigLoaderTest, TheTimingBackendsSectionIsResolvedIntoParams) {
  auto c = Load(R"pb(backend { name: "timing" timing { memory: "upmem" } })pb",
                {"backend.timing.link=cxl2", "backend.timing.inner=ucx"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->backend().name(), "timing");
  timing::TimingBackendOptions options;
  ASSERT_TRUE(c->backend().params().UnpackTo(&options));
  EXPECT_EQ(options.memory(), "upmem");
  EXPECT_EQ(options.link(), "cxl2");
  EXPECT_EQ(options.compute(), "gpu-gtx580") << "the declared default";
  EXPECT_EQ(options.inner(), "ucx");
  EXPECT_EQ(options.schedule(), "auto");

  auto named = Load(kGood, {"backend.name=timing"});
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  ASSERT_TRUE(named->backend().params().UnpackTo(&options)) << "defaults without a section";
  EXPECT_EQ(options.memory(), "hmc2");

  for (const auto& [overrides, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"backend.timing.schedule=sometimes", "backend.name=timing"}, "backend.timing.schedule must be \"auto\", \"virtual-time\" or \"none\", got \"sometimes\""},
           {{"backend.timing.inner=timing", "backend.name=timing"}, "backend.timing.inner: 'timing' cannot wrap itself"},
           {{"backend.timing.cores=-1", "backend.name=timing"}, "backend.timing.cores must be in [0, 1000000], got -1"},
           {{"backend.timing.memory=hmc2"}, "backend.timing is set but backend.name is 'local'"},
#ifdef STALELEARN_WITH_UCX
           {{"backend.ucx.tls=tcp", "backend.name=timing"}, "backend.ucx is set but backend.timing.inner is 'local'"},
           {{"backend.ucx.progress_thread=maybe", "backend.name=ucx"},
            "backend.ucx.progress_thread must be \"on\" or \"off\", got \"maybe\""},
           {{"backend.ucx.tls=tcp", "backend.name=local"}, "backend.ucx is set but backend.name is 'local'"},
#endif
       }) {
    auto bad = Load(kGood, overrides);
    ASSERT_FALSE(bad.ok()) << expected;
    EXPECT_NE(bad.status().message().find(expected), std::string::npos) << bad.status().message();
  }
}

TEST(ConfigLoaderTest, AnotherAppsSectionIsAnError) {
  auto c = Load(R"pb(app { name: "lr" mf { rank: 3 } })pb");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("app.name: unknown app 'lr' (apps: mf)"), std::string::npos)
      << c.status().message();
}

TEST(ConfigLoaderTest, UnknownAppSectionNamesTheApps) {
  auto c = Load(R"pb(app { name: "mf" lda { topics: 3 } })pb");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("apps: mf"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("lda"), std::string::npos) << c.status().message();
}

TEST(ConfigLoaderTest, WithoutAppsAnAppNameIsRejected) {
  ConfigFile file(kGood);
  auto c = config::LoadConfig(file.path(), {}, ConfigSchema{});
  ASSERT_FALSE(c.ok()) << "an mf section parsed without the mf app registered";
}

TEST(ConfigLoaderTest, OverridesScalarsEnumsBoolsAndMaps) {
  auto c = Load(kGood, {"consistency.staleness=4", "consistency.mode=ALLREDUCE", "training.epochs=5",
                        "app.mf.learning_rate=0.5", "output.quiet=true", "merge.user.policy=adam", "seed=9",
                        "data.name=heart_scale"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->consistency().staleness(), 4);
  EXPECT_EQ(c->consistency().mode(), "ALLREDUCE");
  EXPECT_EQ(c->training().epochs(), 5);
  EXPECT_FLOAT_EQ(Mf(*c).learning_rate(), 0.5f);
  EXPECT_TRUE(c->output().quiet());
  EXPECT_EQ(c->merge().at("user").policy(), "adam");
  EXPECT_EQ(c->seed(), 9u);
  EXPECT_EQ(c->data().name(), "heart_scale");
}

TEST(ConfigLoaderTest, LaterOverrideWins) {
  auto c = Load(kGood, {"training.epochs=5", "training.epochs=6"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->training().epochs(), 6);
}

struct BadOverride {
  const char* assignment;
  const char* expected_fragment;
};

// gtest would print the raw pointer bytes.
void PrintTo(const BadOverride& b, std::ostream* os) { *os << b.assignment; }

class ConfigOverrideErrorTest : public ::testing::TestWithParam<BadOverride> {};

TEST_P(ConfigOverrideErrorTest, NamesTheFieldAndReason) {
  auto c = Load(kGood, {GetParam().assignment});
  ASSERT_FALSE(c.ok()) << GetParam().assignment << " was accepted";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(GetParam().expected_fragment), std::string::npos) << c.status().message();
  EXPECT_EQ(c.status().message().find('\n'), std::string::npos) << "one line";
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, ConfigOverrideErrorTest,
    ::testing::Values(BadOverride{"training.epoch=3", "unknown field 'epoch'"},
                      BadOverride{"nosuch.field=1", "unknown field 'nosuch'"},
                      BadOverride{"training.epochs=three", "'three' is not a valid number"},
                      BadOverride{"training.epochs=3.5", "not a valid number"},
                      BadOverride{"training.epochs=99999999999", "not a valid number"},
                      BadOverride{"output.quiet=maybe", "not a bool"},
                      BadOverride{"training=1", "is a message"},
                      BadOverride{"seed.x=1", "'seed' is not a message"},
                      BadOverride{"training.epochs", "expected field.path=value"},
                      BadOverride{"=3", "expected field.path=value"},
                      BadOverride{"backend.options.tls=tcp", "unknown field 'options'"},
                      BadOverride{"merge.user=x", "a map of messages"},
                      BadOverride{"merge.user.bogus=1", "unknown field 'bogus'"},
                      BadOverride{"app.mf.regularization=-1", "app.mf.regularization must be >= 0"},
                      BadOverride{"app.mf.learning_rate=nan", "not finite"},
                      BadOverride{"consistency.staleness=-1", "consistency.staleness must be >= 0"},
                      BadOverride{"debug.stop_at_clock=-3", "debug.stop_at_clock must be >= 0"},
                      BadOverride{"debug.stop_rank=-1", "debug.stop_rank must be >= 0"},
                      BadOverride{"training.epochs=-2", "training.epochs must be > 0"},
                      BadOverride{"data.test_fraction=1.5", "data.test_fraction must be in (0, 1)"},
                      BadOverride{"training.straggler.slowdown=0.5", "slowdown must be >= 1"},
                      BadOverride{"app.mf.rank=-3", "app.mf.rank must be in [1, 65536], got -3"},
                      BadOverride{"app.mf.rank=2000000000", "app.mf.rank must be in [1, 65536]"},
                      BadOverride{"app.mf.deal=users", "app.mf.deal must be \"rating\" or \"user\", got \"users\""},
                      BadOverride{"cluster.ring_slots=1", "cluster.ring_slots must be in [2, 4096], got 1"},
                      BadOverride{"cluster.ring_slots=100000", "cluster.ring_slots must be in [2, 4096]"},
                      BadOverride{"cluster.slot_bytes=99999999999999", "cluster.slot_bytes must be in [4096, "}));

TEST(ConfigLoaderTest, TextFormatErrorNamesFileLineAndColumn) {
  ConfigFile file("seed: 1\ntraining {\n  epochs: \"many\"\n}\n");
  auto c = LoadConfig(file.path(), {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(file.path() + ":3:"), std::string::npos) << c.status().message();
}

TEST(ConfigLoaderTest, UnknownFieldInFileIsNamed) {
  ConfigFile file("seed: 1\ntraining { epochz: 3 }\n");
  auto c = LoadConfig(file.path(), {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(":2:"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("epochz"), std::string::npos) << c.status().message();
}

TEST(ConfigLoaderTest, UnterminatedMessageIsAnError) {
  auto c = Load("training { epochs: 3\n");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

TEST(ConfigLoaderTest, InvalidValueInFileNamesFileAndField) {
  ConfigFile file("training { epochs: -1 }\n");
  auto c = LoadConfig(file.path(), {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(file.path()), std::string::npos);
  EXPECT_NE(c.status().message().find("training.epochs"), std::string::npos);
}

// Found by fuzzing (tests/fuzz): a string that is not UTF-8 was an internal
// error ("config does not convert") instead of a config error naming the field.
TEST(ConfigLoaderTest, InvalidUtf8StringNamesTheField) {
  ConfigFile file("name: \"ok\"\nmerge { key: \"\\377\" value { policy: \"sum\" } }\n");
  auto c = LoadConfig(file.path(), {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("merge.key: not valid UTF-8"), std::string::npos)
      << c.status().message();
  ConfigFile good("name: \"caf\303\251\"\n");
  auto overridden = LoadConfig(good.path(), {"name=\xC3\x28"});
  ASSERT_FALSE(overridden.ok());
  EXPECT_EQ(overridden.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(overridden.status().message().find("name: not valid UTF-8"), std::string::npos)
      << overridden.status().message();
  EXPECT_TRUE(LoadConfig(good.path(), {}).ok());  // two-byte UTF-8 is fine
}

TEST(ConfigLoaderTest, MissingFileIsAnError) {
  auto c = LoadConfig("/nonexistent/stalelearn.pbtxt", {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("/nonexistent/stalelearn.pbtxt"), std::string::npos);
}

TEST(ConfigLoaderTest, ADirectoryIsNotAnEmptyConfig) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto c = LoadConfig(dir, {});
  ASSERT_FALSE(c.ok()) << "a directory was accepted as a config";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(dir + ": cannot open config: is a directory"), std::string::npos)
      << c.status().message();
}


}  // namespace
}  // namespace stalelearn::config
