#include "framework/data/text_lines.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>

#include <unistd.h>

namespace stalelearn::data {

Result<std::string> ReadWholeFile(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return NotFound(fmt::format("{}: no such file", file.string()));
  // A directory opens like a file but its first read throws from inside the
  // stream buffer (libstdc++), so tell it apart before reading.
  if (std::filesystem::is_directory(file, ec)) {
    return InvalidArgument(fmt::format("{}: is a directory, not a file", file.string()));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return Unavailable(fmt::format("{}: cannot open: {}", file.string(), std::strerror(errno)));
  std::string bytes;
  try {
    // A regular file is read in one call into a string of its size (a
    // character-at-a-time read grew the string ~30 times and ran at a tenth
    // of the disk's speed on a 367 MB ratings file). Anything else, or a
    // file that grew meanwhile, is read to its end as a stream.
    const std::uintmax_t size = std::filesystem::is_regular_file(file, ec) ? std::filesystem::file_size(file, ec) : 0;
    if (!ec && size > 0) {
      bytes.resize(static_cast<std::size_t>(size));
      in.read(bytes.data(), static_cast<std::streamsize>(size));
      bytes.resize(static_cast<std::size_t>(in.gcount()));
      if (in.bad()) return Unavailable(fmt::format("{}: read failed", file.string()));
      if (static_cast<std::uintmax_t>(in.gcount()) < size) return bytes;  // shrank meanwhile: what was there
      in.clear();
    }
    bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure&) {  // a read error (EIO, ...) throws the same way
    return Unavailable(fmt::format("{}: read failed: {}", file.string(), std::strerror(errno)));
  }
  if (in.bad()) return Unavailable(fmt::format("{}: read failed", file.string()));
  return bytes;
}

Status WriteFileAtomically(const std::filesystem::path& file, std::string_view bytes) {
  std::filesystem::path temp = file;
  temp += fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      return Unavailable(fmt::format("{}: cannot write: {}", temp.string(), std::strerror(errno)));
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, file, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    return Unavailable(fmt::format("{}: cannot rename into place: {}", file.string(), ec.message()));
  }
  return Status::Ok();
}

bool LineCursor::Next(std::string_view& line) {
  if (rest_.empty()) return false;
  std::size_t end = rest_.find('\n');
  if (end == std::string_view::npos) {
    line = rest_;
    rest_ = {};
  } else {
    line = rest_.substr(0, end);
    rest_.remove_prefix(end + 1);
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ++line_number_;
  return true;
}

Status LineError(std::string_view source, std::size_t line, std::string_view reason) {
  return InvalidArgument(fmt::format("{}:{}: {}", source, line, reason));
}

std::string Quotable(std::string_view text, std::size_t max_bytes) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out.push_back(static_cast<char>(byte));
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

namespace {

// std::from_chars rejects a leading '+', which LIBSVM labels use ("+1").
std::string_view DropPlus(std::string_view token) {
  if (token.size() > 1 && token.front() == '+' && token[1] != '-' && token[1] != '+') token.remove_prefix(1);
  return token;
}

}  // namespace

std::optional<std::int64_t> ParseInt64(std::string_view token) {
  token = DropPlus(token);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (token.empty() || ec != std::errc() || end != token.data() + token.size()) return std::nullopt;
  return value;
}

std::optional<double> ParseFiniteDouble(std::string_view token) {
  token = DropPlus(token);
  double value = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (token.empty() || ec != std::errc() || end != token.data() + token.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::string_view NextWhitespaceToken(std::string_view& rest) {
  std::size_t begin = rest.find_first_not_of(" \t");
  if (begin == std::string_view::npos) {
    rest = {};
    return {};
  }
  std::size_t end = rest.find_first_of(" \t", begin);
  if (end == std::string_view::npos) end = rest.size();
  std::string_view token = rest.substr(begin, end - begin);
  rest.remove_prefix(end);
  return token;
}

}  // namespace stalelearn::data
