// The one resolver of declared field rules (framework/proto/options.proto):
// a config field's default and range are written once as a field option,
//
//   int32 steps = 3 [(stalelearn.rules) = {default: "16" range: "[1, 10000]"}];
//
// and ResolveFieldRules fills every zero field that declares a default, then
// checks every declared range and one_of, naming the field by its path:
//
//   app.x.steps must be in [1, 10000], got 0
//   app.x.readout must be "membrane" or "spike_count", got "y"
//
// It walks singular sub-messages (creating one only when a default inside it
// applies), and checks the elements of repeated messages; google.protobuf.Any
// and map values are left to their owners (ConfigReader resolves each
// section with its own path).
//
// Thread-safety: stateless functions; a message may not be modified
// concurrently. A rule that does not parse (a typo in a .proto) is reported
// as kInternal naming the field.
#pragma once

#include <google/protobuf/message.h>

#include <string_view>

#include "framework/core/status.h"

namespace stalelearn::config {

// Sets every zero (empty) field that declares a default to it.
Status FillDeclaredDefaults(google::protobuf::Message& message);

// kInvalidArgument, one line "PATH.field must be RULE, got VALUE", for the
// first field outside its declared range or one_of. `path` prefixes the
// field names ("" for none).
Status CheckDeclaredRules(const google::protobuf::Message& message, std::string_view path);

// FillDeclaredDefaults, then CheckDeclaredRules.
Status ResolveFieldRules(google::protobuf::Message& message, std::string_view path);

}  // namespace stalelearn::config
