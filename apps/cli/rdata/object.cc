#include "apps/cli/rdata/object.h"

#include <cstring>

namespace stalelearn::data::rdata {

std::string_view SexpTypeName(SexpType type) {
  switch (type) {
    case SexpType::kNil: return "NULL";
    case SexpType::kSymbol: return "symbol";
    case SexpType::kPairList: return "pairlist";
    case SexpType::kClosure: return "closure";
    case SexpType::kEnvironment: return "environment";
    case SexpType::kPromise: return "promise";
    case SexpType::kLanguage: return "language";
    case SexpType::kSpecial: return "special";
    case SexpType::kBuiltin: return "builtin";
    case SexpType::kChar: return "char";
    case SexpType::kLogical: return "logical";
    case SexpType::kInteger: return "integer";
    case SexpType::kReal: return "double";
    case SexpType::kComplex: return "complex";
    case SexpType::kString: return "character";
    case SexpType::kDot: return "...";
    case SexpType::kList: return "list";
    case SexpType::kExpression: return "expression";
    case SexpType::kBytecode: return "bytecode";
    case SexpType::kExternalPointer: return "externalptr";
    case SexpType::kWeakReference: return "weakref";
    case SexpType::kRaw: return "raw";
    case SexpType::kS4: return "S4";
  }
  return "unknown";
}

bool IsNaReal(double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return value != value && (bits & 0xFFFFFFFFu) == 1954;
}

std::size_t RObject::length() const {
  switch (type) {
    case SexpType::kInteger:
    case SexpType::kLogical: return integers.size();
    case SexpType::kReal: return reals.size();
    case SexpType::kComplex: return reals.size() / 2;
    case SexpType::kString: return strings.size();
    case SexpType::kList:
    case SexpType::kExpression: return elements.size();
    case SexpType::kRaw: return raw.size();
    case SexpType::kPairList:
    case SexpType::kLanguage: return cells.size();
    default: return 0;
  }
}

const RObject* RObject::Attribute(std::string_view name) const {
  for (const RTagged& attribute : attributes) {
    if (attribute.tag == name) return attribute.value.get();
  }
  return nullptr;
}

bool RObject::Inherits(std::string_view class_name) const {
  const RObject* classes = Attribute("class");
  if (classes == nullptr || classes->type != SexpType::kString) return false;
  for (const auto& name : classes->strings) {
    if (name && *name == class_name) return true;
  }
  return false;
}

}  // namespace stalelearn::data::rdata
