#include "apps/cli/rdata/unserialize.h"

#include <fmt/format.h>

#include <bit>
#include <string>
#include <utility>
#include <vector>

#include "apps/cli/rdata/altrep.h"

namespace stalelearn::data::rdata {
namespace {

// Pseudo-types of the serialization stream (R serialize.c).
enum StreamCode : int {
  kRefSxp = 255,
  kNilValueSxp = 254,
  kGlobalEnvSxp = 253,
  kUnboundValueSxp = 252,
  kMissingArgSxp = 251,
  kBaseNamespaceSxp = 250,
  kNamespaceSxp = 249,
  kPackageSxp = 248,
  kPersistSxp = 247,
  kEmptyEnvSxp = 242,
  kBaseEnvSxp = 241,
  kAltrepSxp = 238,
};

constexpr std::uint32_t kHasAttributesBit = 1u << 9;
constexpr std::uint32_t kHasTagBit = 1u << 10;

using MutableObject = std::shared_ptr<RObject>;

// Element `index` of an array of big-endian `width`-byte words.
std::uint64_t BigEndian(std::span<const std::uint8_t> bytes, std::size_t index, std::size_t width) {
  std::uint64_t value = 0;
  for (std::size_t b = 0; b < width; ++b) value = value << 8 | bytes[index * width + b];
  return value;
}

MutableObject Make(SexpType type) {
  auto object = std::make_shared<RObject>();
  object->type = type;
  return object;
}

class XdrUnserializer {
 public:
  XdrUnserializer(std::span<const std::uint8_t> bytes, const UnserializeLimits& limits)
      : bytes_(bytes), limits_(limits) {}

  Result<RObjectPtr> Run() {
    if (bytes_.size() >= 2 && bytes_[0] == 0x1f && bytes_[1] == 0x8b) {
      return DataLoss("R serialization: input is gzip-compressed; decompress it first");
    }
    if (bytes_.size() < 2 || bytes_[0] != 'X' || bytes_[1] != '\n') {
      return DataLoss("R serialization: bad magic (expected \"X\\n\", the XDR format)");
    }
    pos_ = 2;
    STALELEARN_ASSIGN_OR_RETURN(std::int32_t version, Int());
    STALELEARN_RETURN_IF_ERROR(Int().status());  // R version that wrote it
    STALELEARN_RETURN_IF_ERROR(Int().status());  // oldest R version that can read it
    if (version == 3) {
      STALELEARN_ASSIGN_OR_RETURN(std::int32_t encoding_length, Int());
      STALELEARN_RETURN_IF_ERROR(Bytes(encoding_length).status());  // native encoding, unused
    } else if (version != 2) {
      return DataLoss(fmt::format("R serialization: unsupported format version {} (2 and 3 are)", version));
    }
    STALELEARN_ASSIGN_OR_RETURN(RObjectPtr object, Item(0));
    return object;
  }

 private:
  Status Error(std::string_view what) const {
    return DataLoss(fmt::format("R serialization: {} at byte {}", what, pos_));
  }

  Result<std::span<const std::uint8_t>> Bytes(std::int64_t count) {
    if (count < 0 || static_cast<std::uint64_t>(count) > bytes_.size() - pos_) {
      return Error(fmt::format("truncated (need {} bytes, {} left)", count, bytes_.size() - pos_));
    }
    auto out = bytes_.subspan(pos_, static_cast<std::size_t>(count));
    pos_ += static_cast<std::size_t>(count);
    return out;
  }

  Result<std::int32_t> Int() {
    STALELEARN_ASSIGN_OR_RETURN(auto bytes, Bytes(4));
    return static_cast<std::int32_t>(BigEndian(bytes, 0, 4));
  }

  // A vector length: an int, or -1 followed by two ints for long vectors.
  // Rejects lengths whose elements (each at least `min_bytes`) cannot fit.
  Result<std::size_t> Length(std::size_t min_bytes) {
    STALELEARN_ASSIGN_OR_RETURN(std::int32_t length, Int());
    std::uint64_t n = static_cast<std::uint32_t>(length);
    if (length == -1) {
      STALELEARN_ASSIGN_OR_RETURN(std::int32_t upper, Int());
      STALELEARN_ASSIGN_OR_RETURN(std::int32_t lower, Int());
      n = static_cast<std::uint64_t>(static_cast<std::uint32_t>(upper)) << 32 | static_cast<std::uint32_t>(lower);
    } else if (length < 0) {
      return Error(fmt::format("negative length {}", length));
    }
    if (n > (bytes_.size() - pos_) / min_bytes) {
      return Error(fmt::format("length {} exceeds the {} bytes left", n, bytes_.size() - pos_));
    }
    return static_cast<std::size_t>(n);
  }

  Result<RObjectPtr> Item(std::size_t depth) {
    if (depth > limits_.max_depth) return Error(fmt::format("nesting deeper than {}", limits_.max_depth));
    STALELEARN_ASSIGN_OR_RETURN(std::int32_t flags, Int());
    return ItemWithFlags(static_cast<std::uint32_t>(flags), depth);
  }

  Result<std::string> SymbolName(std::size_t depth) {
    STALELEARN_ASSIGN_OR_RETURN(RObjectPtr tag, Item(depth + 1));
    if (tag->type != SexpType::kSymbol) return Error("a tag that is not a symbol");
    return tag->text;
  }

  Result<RObjectPtr> ItemWithFlags(std::uint32_t flags, std::size_t depth);
  Result<RObjectPtr> Reference(std::uint32_t flags);
  Result<RObjectPtr> PairList(std::uint32_t flags, std::size_t depth);
  Result<RObjectPtr> Altrep(std::size_t depth);
  Result<MutableObject> Vector(SexpType type, std::size_t depth);
  Result<std::vector<RTagged>> Attributes(std::size_t depth);

  std::span<const std::uint8_t> bytes_;
  UnserializeLimits limits_;
  std::size_t pos_ = 0;
  std::size_t expanded_elements_ = 0;  // by ALTREP sequences so far, <= limits_.max_expanded_elements
  std::vector<RObjectPtr> references_;  // symbols, environments, ... in order of appearance
};

Result<RObjectPtr> XdrUnserializer::Reference(std::uint32_t flags) {
  std::uint32_t index = flags >> 8;
  if (index == 0) {
    STALELEARN_ASSIGN_OR_RETURN(std::int32_t explicit_index, Int());
    index = static_cast<std::uint32_t>(explicit_index);
  }
  if (index == 0 || index > references_.size()) {
    return Error(fmt::format("reference {} to none of the {} objects seen", index, references_.size()));
  }
  return references_[index - 1];
}

Result<std::vector<RTagged>> XdrUnserializer::Attributes(std::size_t depth) {
  STALELEARN_ASSIGN_OR_RETURN(RObjectPtr list, Item(depth + 1));
  if (list->type == SexpType::kNil) return std::vector<RTagged>{};
  if (list->type != SexpType::kPairList) return Error("attributes that are not a pairlist");
  return list->cells;
}

// Pairlist-like cells. The cdr chain is followed in a loop, not by recursion,
// so long pairlists cannot exhaust the stack. A call (LANGSXP) continues as
// a LISTSXP chain; a tail that is not NULL (a closure's body) is kept as a
// last, untagged cell.
Result<RObjectPtr> XdrUnserializer::PairList(std::uint32_t flags, std::size_t depth) {
  MutableObject list = Make(static_cast<SexpType>(flags & 0xFF));
  while (true) {
    if (flags & kHasAttributesBit) {
      STALELEARN_ASSIGN_OR_RETURN(auto attributes, Attributes(depth));
      if (list->attributes.empty()) list->attributes = std::move(attributes);
    }
    RTagged cell;
    if (flags & kHasTagBit) {
      STALELEARN_ASSIGN_OR_RETURN(cell.tag, SymbolName(depth));
    }
    STALELEARN_ASSIGN_OR_RETURN(cell.value, Item(depth + 1));
    list->cells.push_back(std::move(cell));
    STALELEARN_ASSIGN_OR_RETURN(std::int32_t next, Int());
    flags = static_cast<std::uint32_t>(next);
    const auto next_type = static_cast<SexpType>(flags & 0xFF);
    if (next_type == list->type || next_type == SexpType::kPairList) continue;
    STALELEARN_ASSIGN_OR_RETURN(RObjectPtr tail, ItemWithFlags(flags, depth + 1));
    if (tail->type != SexpType::kNil) list->cells.push_back({"", std::move(tail)});
    return RObjectPtr(list);
  }
}

Result<MutableObject> XdrUnserializer::Vector(SexpType type, std::size_t depth) {
  MutableObject object = Make(type);
  switch (type) {
    case SexpType::kLogical:
    case SexpType::kInteger: {
      STALELEARN_ASSIGN_OR_RETURN(std::size_t n, Length(4));
      STALELEARN_ASSIGN_OR_RETURN(auto bytes, Bytes(static_cast<std::int64_t>(n * 4)));
      object->integers.resize(n);
      for (std::size_t i = 0; i < n; ++i) object->integers[i] = static_cast<std::int32_t>(BigEndian(bytes, i, 4));
      break;
    }
    case SexpType::kReal:
    case SexpType::kComplex: {
      const std::size_t per_element = type == SexpType::kReal ? 1 : 2;
      STALELEARN_ASSIGN_OR_RETURN(std::size_t n, Length(8 * per_element));
      STALELEARN_ASSIGN_OR_RETURN(auto bytes, Bytes(static_cast<std::int64_t>(n * per_element * 8)));
      object->reals.resize(n * per_element);
      for (std::size_t i = 0; i < object->reals.size(); ++i) {
        object->reals[i] = std::bit_cast<double>(BigEndian(bytes, i, 8));
      }
      break;
    }
    case SexpType::kString: {
      STALELEARN_ASSIGN_OR_RETURN(std::size_t n, Length(8));
      object->strings.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        STALELEARN_ASSIGN_OR_RETURN(RObjectPtr element, Item(depth + 1));
        if (element->type == SexpType::kNil) {
          object->strings.emplace_back(std::nullopt);  // NA_STRING
        } else if (element->type == SexpType::kChar) {
          object->strings.emplace_back(element->text);
        } else {
          return Error(fmt::format("a character vector holding a {}", SexpTypeName(element->type)));
        }
      }
      break;
    }
    case SexpType::kList:
    case SexpType::kExpression: {
      STALELEARN_ASSIGN_OR_RETURN(std::size_t n, Length(4));
      object->elements.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        STALELEARN_ASSIGN_OR_RETURN(RObjectPtr element, Item(depth + 1));
        object->elements.push_back(std::move(element));
      }
      break;
    }
    case SexpType::kRaw: {
      STALELEARN_ASSIGN_OR_RETURN(std::size_t n, Length(1));
      STALELEARN_ASSIGN_OR_RETURN(auto bytes, Bytes(static_cast<std::int64_t>(n)));
      object->raw.assign(bytes.begin(), bytes.end());
      break;
    }
    case SexpType::kS4:
      break;  // everything is in the attributes
    default:
      return Error(fmt::format("unsupported R type {} ({})", static_cast<int>(type), SexpTypeName(type)));
  }
  return object;
}

// ALTREP: class info, serialized state, attributes; expanded to a plain vector.
Result<RObjectPtr> XdrUnserializer::Altrep(std::size_t depth) {
  STALELEARN_ASSIGN_OR_RETURN(RObjectPtr info, Item(depth + 1));
  STALELEARN_ASSIGN_OR_RETURN(RObjectPtr state, Item(depth + 1));
  STALELEARN_ASSIGN_OR_RETURN(std::vector<RTagged> attributes, Attributes(depth));
  // The budget is shared by all sequences of the input: a few bytes each, many
  // of them could otherwise expand to any amount of memory together.
  Result<RObjectPtr> expanded =
      ExpandAltrep(*info, *state, std::move(attributes), limits_.max_expanded_elements - expanded_elements_);
  if (!expanded.ok()) {
    return Status(expanded.status().code(), fmt::format("R serialization: {} before byte {}",
                                                        expanded.status().message(), pos_));
  }
  if (info->cells[0].value->text.starts_with("compact_")) {  // wrap_* hold vectors read from the input
    expanded_elements_ += (*expanded)->integers.size() + (*expanded)->reals.size();
  }
  return expanded;
}

Result<RObjectPtr> XdrUnserializer::ItemWithFlags(std::uint32_t flags, std::size_t depth) {
  if (depth > limits_.max_depth) return Error(fmt::format("nesting deeper than {}", limits_.max_depth));
  const int code = static_cast<int>(flags & 0xFF);
  switch (code) {
    case kNilValueSxp: return RObjectPtr(Make(SexpType::kNil));
    case kRefSxp: return Reference(flags);
    case kGlobalEnvSxp:
    case kEmptyEnvSxp:
    case kBaseEnvSxp:
    case kBaseNamespaceSxp: return RObjectPtr(Make(SexpType::kEnvironment));
    case kUnboundValueSxp:
    case kMissingArgSxp: return RObjectPtr(Make(SexpType::kNil));
    case kPersistSxp:
    case kNamespaceSxp:
    case kPackageSxp: {
      // A name vector: a zero int, a length, then CHARSXPs. Stands for an environment.
      STALELEARN_ASSIGN_OR_RETURN(std::int32_t zero, Int());
      if (zero != 0) return Error("a name vector without its leading 0");
      STALELEARN_ASSIGN_OR_RETURN(std::size_t n, Length(8));
      for (std::size_t i = 0; i < n; ++i) STALELEARN_RETURN_IF_ERROR(Item(depth + 1).status());
      references_.push_back(Make(SexpType::kEnvironment));
      return references_.back();
    }
    case kAltrepSxp: return Altrep(depth);
    default: break;
  }
  const auto type = static_cast<SexpType>(code);
  switch (type) {
    case SexpType::kSymbol: {
      STALELEARN_ASSIGN_OR_RETURN(RObjectPtr name, Item(depth + 1));
      if (name->type != SexpType::kChar) return Error("a symbol whose name is not a string");
      MutableObject symbol = Make(SexpType::kSymbol);
      symbol->text = name->text;
      references_.push_back(symbol);
      return RObjectPtr(symbol);
    }
    case SexpType::kEnvironment: {
      MutableObject environment = Make(SexpType::kEnvironment);
      references_.push_back(environment);  // before its contents, which may refer to it
      STALELEARN_RETURN_IF_ERROR(Int().status());  // locked flag
      for (int part = 0; part < 3; ++part) {       // enclosure, frame, hash table
        STALELEARN_RETURN_IF_ERROR(Item(depth + 1).status());
      }
      // Attributes are read and dropped: they may refer back to the environment,
      // and keeping them would make a shared_ptr cycle.
      STALELEARN_RETURN_IF_ERROR(Attributes(depth).status());
      return RObjectPtr(environment);
    }
    case SexpType::kPairList:
    case SexpType::kLanguage:
    case SexpType::kClosure:
    case SexpType::kPromise:
    case SexpType::kDot: return PairList(flags, depth);
    case SexpType::kChar: {
      STALELEARN_ASSIGN_OR_RETURN(std::int32_t length, Int());
      if (length == -1) return RObjectPtr(Make(SexpType::kNil));  // NA_STRING
      STALELEARN_ASSIGN_OR_RETURN(auto bytes, Bytes(length));
      MutableObject chars = Make(SexpType::kChar);
      chars->text.assign(bytes.begin(), bytes.end());
      if (flags & kHasAttributesBit) STALELEARN_RETURN_IF_ERROR(Item(depth + 1).status());  // ignored, as R does
      return RObjectPtr(chars);
    }
    default: break;
  }
  STALELEARN_ASSIGN_OR_RETURN(MutableObject object, Vector(type, depth));
  if (flags & kHasAttributesBit) {
    STALELEARN_ASSIGN_OR_RETURN(object->attributes, Attributes(depth));
  }
  return RObjectPtr(object);
}

}  // namespace

Result<RObjectPtr> Unserialize(std::span<const std::uint8_t> bytes, const UnserializeLimits& limits) {
  return XdrUnserializer(bytes, limits).Run();
}

}  // namespace stalelearn::data::rdata
