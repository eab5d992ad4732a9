#include "traces/chakra/chakra_stream.hpp"

#include <google/protobuf/stubs/logging.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"
#include "traces/chakra/chakra.hpp"

namespace tpusim::trace {
namespace {
void append_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
}  // namespace

void append_delimited_bytes(std::string& out, const std::string& bytes) {
  append_varint(out, bytes.size());
  out += bytes;
}

void append_delimited(std::string& out, const google::protobuf::MessageLite& message) {
  append_delimited_bytes(out, message.SerializeAsString());
}

std::string read_chakra_file(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw ConfigError(path, "cannot read: " + ec.message());
  if (size > kMaxChakraFileBytes)
    throw ConfigError(path, std::to_string(size) + " bytes is larger than the " +
                                std::to_string(kMaxChakraFileBytes >> 20) +
                                " MiB a .et file may have");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void DelimitedReader::next(google::protobuf::MessageLite& message, const char* what) {
  const std::string where =
      file_ + ": " + what + " " + std::to_string(index_) + " (byte " + std::to_string(pos_) + ")";
  std::uint64_t length = 0;
  int shift = 0;
  for (;;) {
    if (pos_ >= bytes_.size())
      throw ConfigError(where, "the file ends inside a message length; expected a varint");
    if (shift > 63) throw ConfigError(where, "message length varint longer than 10 bytes");
    const auto byte = static_cast<unsigned char>(bytes_[pos_++]);
    length |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    shift += 7;
    if (!(byte & 0x80)) break;
  }
  if (length > kMaxChakraMessageBytes)
    throw ConfigError(where, "a message of " + std::to_string(length) +
                                 " bytes is larger than the " +
                                 std::to_string(kMaxChakraMessageBytes >> 20) + " MiB allowed");
  if (length > bytes_.size() - pos_)
    throw ConfigError(where, "the message claims " + std::to_string(length) + " bytes but only " +
                                 std::to_string(bytes_.size() - pos_) +
                                 " remain (truncated file?)");
  // protobuf would also log a malformed message (e.g. invalid UTF-8 in a string) to stderr; the
  // error below says it once, naming the file and place.
  const google::protobuf::LogSilencer quiet;
  if (!message.ParseFromArray(bytes_.data() + pos_, static_cast<int>(length)))
    throw ConfigError(
        where, std::string("is not a valid Chakra ") + what + " message (malformed protobuf)");
  pos_ += length;
  ++index_;
}

}  // namespace tpusim::trace
