#pragma once
// The framing of a Chakra `.et` file: protobuf messages, each preceded by its length as a
// base-128 varint. Reading is bounded: the whole file must fit kMaxChakraFileBytes and no
// message may claim more than kMaxChakraMessageBytes or more bytes than the file has left.
#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <string>

namespace tpusim::trace {

/// Appends `message` with its varint length prefix.
void append_delimited(std::string& out, const google::protobuf::MessageLite& message);
/// Appends already serialized message bytes with their varint length prefix.
void append_delimited_bytes(std::string& out, const std::string& bytes);

/// Reads a whole `.et` file; ConfigError if it cannot be read or exceeds kMaxChakraFileBytes.
std::string read_chakra_file(const std::string& path);

/// Walks the messages of one file's bytes.
class DelimitedReader {
 public:
  DelimitedReader(const std::string& bytes, std::string file) : bytes_(bytes), file_(file) {}
  bool at_end() const { return pos_ >= bytes_.size(); }
  /// Parses the next message into `message` (`what` names it in errors: "node", "metadata").
  /// Throws ConfigError naming the file, the message's index and byte offset.
  void next(google::protobuf::MessageLite& message, const char* what);
  std::size_t index() const { return index_; }  ///< messages read so far

 private:
  const std::string& bytes_;
  std::string file_;
  std::size_t pos_ = 0;
  std::size_t index_ = 0;
};

}  // namespace tpusim::trace
