// Fuzzes the config loader (framework/core/config_loader.h) with the built-in
// apps' sections registered (config_schema.h), as `stalelearn train` loads a
// config: parse the text, apply `--set` overrides, convert, resolve defaults,
// validate. Lines of the input that start with "#set " (comments to the text
// format) are the overrides, in order.
//
// Properties: every failure is kInvalidArgument and one line; a resolved config resolves again to
// itself (defaults are a fixed point) and passes Validate.
#include <google/protobuf/util/message_differencer.h>

#include <string>
#include <vector>

#include "apps/lr/register.h"
#include "apps/mf/register.h"
#include "backends/builtin.h"
#include "framework/core/config_loader.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace stalelearn;

const config::ConfigReader& Reader() {
  static const std::unique_ptr<config::ConfigReader> reader = [] {
    static runtime::Registries registries;
    FUZZ_CHECK(apps::mf::RegisterApp(registries).ok());
    FUZZ_CHECK(apps::lr::RegisterApp(registries).ok());
    FUZZ_CHECK(backends::RegisterBuiltinBackends(registries.backends).ok());
    Result<config::ConfigSchema> schema = registries.Schema();
    FUZZ_CHECK(schema.ok());
    Result<std::unique_ptr<config::ConfigReader>> made = config::ConfigReader::Make(*schema);
    FUZZ_CHECK(made.ok());
    return std::move(made).value();
  }();
  return *reader;
}

std::vector<std::string> Overrides(std::string_view text) {
  std::vector<std::string> overrides;
  while (!text.empty()) {
    auto [line, rest] = fuzz::SplitAt(text, "\n");
    if (line.starts_with("#set ")) overrides.emplace_back(line.substr(5));
    text = rest;
  }
  return overrides;
}

// A rejection: kInvalidArgument (exit code 2 at the CLI), one line with a
// reason. Returns libFuzzer's "input done" (0).
int Rejected(const Status& status) {
  if (status.code() != StatusCode::kInvalidArgument) std::fprintf(stderr, "%s\n", status.ToString().c_str());
  FUZZ_CHECK(status.code() == StatusCode::kInvalidArgument);
  FUZZ_CHECK(!status.message().empty());
  FUZZ_CHECK(status.ToString().find('\n') == std::string::npos);
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::AsText(data, size);
  Result<std::unique_ptr<google::protobuf::Message>> full = Reader().Parse(text, "fuzz.pbtxt");
  if (!full.ok()) return Rejected(full.status());
  for (const std::string& assignment : Overrides(text)) {
    if (Status applied = config::ApplyOverride(**full, assignment); !applied.ok()) return Rejected(applied);
  }
  Result<proto::Config> config = Reader().ToConfig(**full);
  if (!config.ok()) return Rejected(config.status());
  if (Status resolved = config::ResolveDefaults(*config); !resolved.ok()) return Rejected(resolved);
  FUZZ_CHECK(config::Validate(*config).ok());
  proto::Config again = *config;
  FUZZ_CHECK(config::ResolveDefaults(again).ok());
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(again, *config));
  return 0;
}
