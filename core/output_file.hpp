#pragma once
// Output files of every command. A new path or a regular file is replaced atomically (a temporary
// file beside it, fsync, rename), so readers never see half a file; anything else the path names
// (a symlink, a device such as /dev/null or /dev/full, a FIFO) is written in place through the
// path, never replaced. Failures are ConfigError naming the path and the system's reason, and no
// temporary file is left behind.
#include <string>
#include <utility>
#include <vector>

namespace tpusim {

/// Throws ConfigError("OPTION PATH", ...) unless `path` can be written: an existing file, device
/// or FIFO must be writable and not a folder; a new path needs a writable existing folder. Meant
/// to run before the work that produces the output, so a bad path costs nothing. Nothing is
/// created or opened (a FIFO without a reader would block).
void check_output_path(const std::string& path, const std::string& option = "");

/// Throws ConfigError naming both options if two of the (option, path) outputs given (non-empty
/// paths) are the same file: the later would silently overwrite the earlier.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

/// Writes `bytes` to `path` as the header says. Throws ConfigError(path, "cannot write: REASON")
/// on any failure (ENOSPC, EACCES, a missing folder, ...).
void write_output_file(const std::string& path, const std::string& bytes);

/// Gives std::cout a buffer of its own that writes to file descriptor 1 and keeps the reason of
/// the first write that fails (a full disk, a closed pipe), for check_stdout. The command line
/// calls it once, first.
void use_checked_stdout();

/// In a child forked to run a command with another stdout (tools/launch/fork_server.hpp): a new
/// checked buffer, whose terminal test and kept error are this process's own. The parent's
/// buffer was flushed before the fork; it is left as it is.
void renew_checked_stdout();

/// Flushes stdout (C and C++ streams) and throws ConfigError("stdout", ...) if any write to it
/// failed, e.g. `> /dev/full`, with the reason when use_checked_stdout kept it.
void check_stdout();

}  // namespace tpusim
