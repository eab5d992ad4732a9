#pragma once
// Text from the user's input, made safe to print in one error line.
#include <string>

namespace tpusim {

/// `text` as one printable line: valid UTF-8 kept, every byte that is not part of a valid UTF-8
/// sequence, and every control character (a newline, an escape sequence), written as \xNN, so
/// that user input echoed in an error can neither garble the terminal nor split the line.
std::string escape_for_line(const std::string& text);

}  // namespace tpusim
