// In-memory form of an R object read from R's serialization format (see
// rdata_unserialize.h). Only what data sets use is kept: vectors, lists,
// pairlists, symbols, attributes; environments are opaque placeholders.
//
// Thread-safety: immutable once built; share freely across threads.
// Lifetimes: objects are held by shared_ptr because R's format shares them
// (REFSXP back-references), so one object can sit in several places.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stalelearn::data::rdata {

// R's SEXPTYPE codes (R Internals, "Serialization formats").
enum class SexpType : std::uint8_t {
  kNil = 0,
  kSymbol = 1,
  kPairList = 2,
  kClosure = 3,
  kEnvironment = 4,
  kPromise = 5,
  kLanguage = 6,
  kSpecial = 7,
  kBuiltin = 8,
  kChar = 9,
  kLogical = 10,
  kInteger = 13,
  kReal = 14,
  kComplex = 15,
  kString = 16,
  kDot = 17,
  kList = 19,  // VECSXP: generic vector
  kExpression = 20,
  kBytecode = 21,
  kExternalPointer = 22,
  kWeakReference = 23,
  kRaw = 24,
  kS4 = 25,
};

std::string_view SexpTypeName(SexpType type);

inline constexpr std::int32_t kNaInteger = INT32_MIN;  // also NA for logicals
bool IsNaReal(double value);                           // R's NA_real_ (NaN payload 1954)

struct RObject;
using RObjectPtr = std::shared_ptr<const RObject>;

// A pairlist cell or an attribute: an optional tag (symbol name) and a value.
struct RTagged {
  std::string tag;
  RObjectPtr value;
};

struct RObject {
  SexpType type = SexpType::kNil;
  // The payload in use depends on `type`:
  std::string text;                                 // kSymbol name, kChar bytes
  std::vector<std::int32_t> integers;               // kInteger, kLogical
  std::vector<double> reals;                        // kReal; kComplex as re, im pairs
  std::vector<std::optional<std::string>> strings;  // kString; nullopt is NA
  std::vector<RObjectPtr> elements;                 // kList, kExpression
  std::vector<RTagged> cells;                       // kPairList, kLanguage, kClosure, ...
  std::vector<std::uint8_t> raw;                    // kRaw
  std::vector<RTagged> attributes;

  // Number of elements of a vector type, of cells for pairlists, else 0.
  std::size_t length() const;
  // The attribute called `name`, or nullptr.
  const RObject* Attribute(std::string_view name) const;
  // True if the "class" attribute contains `class_name`.
  bool Inherits(std::string_view class_name) const;
};

}  // namespace stalelearn::data::rdata
