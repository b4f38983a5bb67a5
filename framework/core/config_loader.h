// Loads a run's Config: protobuf text format, then `--set field.path=value`
// overrides in order, then defaults for zero fields and validation. The result
// is resolved once and passed down as the typed proto (framework/README.md, convention 10).
//
// Every error is one line naming the file (and line:column) or the field, and
// the reason; its code is kInvalidArgument (exit code 2 at the CLI).
// Thread-safety: stateless functions; safe from any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "framework/core/status.h"
#include "framework/proto/config.pb.h"

namespace stalelearn::config {

// Parses `text` (named `source_name` in errors) as a Config in text format.
Result<proto::Config> ParseConfigText(std::string_view text, std::string_view source_name);

// Applies one "a.b.c=value" assignment. Scalars, enums (by name), bools
// (true/false/1/0) and map<string,string> entries (backend.options.key=v) are
// supported; setting a message field itself is an error.
Status ApplyOverride(proto::Config& config, std::string_view assignment);

// Fills defaults for zero-valued fields and checks ranges; names the field.
Status ResolveDefaults(proto::Config& config);
Status Validate(const proto::Config& config);

// Reads `path`, applies `overrides` in order, resolves and validates.
Result<proto::Config> LoadConfig(const std::string& path, std::span<const std::string> overrides);

// Name of a consistency mode as the report prints it ("SSP", ...).
std::string ModeName(proto::ConsistencyMode mode);

}  // namespace stalelearn::config
