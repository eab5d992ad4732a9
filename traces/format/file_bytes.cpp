#include "traces/format/file_bytes.hpp"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/limits.hpp"
#include "core/output_file.hpp"
#include "core/units.hpp"

namespace tpusim::trace {

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(const std::string& bytes, const std::string& name) {
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip header and trailer (zlib manual, inflateInit2).
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
    throw std::runtime_error("zlib: inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  for (;;) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    const std::size_t produced = sizeof buf - zs.avail_out;
    if (out.size() + produced > kMaxTraceFileBytes) {
      inflateEnd(&zs);
      throw ConfigError(
          name,
          "decompresses to more than " + format_bytes(kMaxTraceFileBytes) + ", " +
              past_limit(static_cast<double>(kMaxTraceFileBytes), "bytes", "kMaxTraceFileBytes"));
    }
    // Grown by doubling, but never past the limit: a string's own doubling would reserve up to
    // twice kMaxTraceFileBytes just before the limit is reached.
    if (out.size() + produced > out.capacity())
      out.reserve(
          std::min(std::max(2 * out.capacity(), out.size() + produced), kMaxTraceFileBytes));
    out.append(buf, produced);
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      if (inflateReset(&zs) != Z_OK) break;  // another gzip member follows
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;  // input ended inside a member
    break;
  }
  const std::string msg = zs.msg ? zs.msg : "";
  inflateEnd(&zs);
  if (rc == Z_STREAM_END) return out;
  if (rc == Z_BUF_ERROR || rc == Z_OK)
    throw ConfigError(name, "truncated gzip data (the compressed stream ends early)");
  throw ConfigError(name, "corrupt gzip data" + (msg.empty() ? "" : " (" + msg + ")"));
}

std::string gzip(const std::string& bytes) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: deflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = deflate(&zs, Z_FINISH);
    out.append(buf, sizeof buf - zs.avail_out);
  } while (rc == Z_OK);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib: deflate failed");
  return out;
}

std::string read_file_maybe_gzip(const std::string& path) {
  std::string bytes = read_file_bounded(path, kMaxTraceFileBytes, "kMaxTraceFileBytes");
  return is_gzip(bytes) ? gunzip(bytes, path) : bytes;
}

void write_file_maybe_gzip(const std::string& path, const std::string& bytes) {
  const bool gz = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  write_output_file(path, gz ? gzip(bytes) : bytes);
}

nlohmann::json parse_json_text(const std::string& text, const std::string& name) {
  return tpusim::parse_json_text(text, name, kMaxJsonDepth);
}

}  // namespace tpusim::trace
