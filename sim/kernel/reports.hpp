#pragma once
// SystemC's own messages (warnings such as W545, errors) are displayed on stderr, where tpusim's
// logs go, never on stdout, which holds reports (a `--json` report must stay one JSON object).

namespace tpusim {
/// Installs the handler; idempotent. simulate() calls it before the kernel runs.
void systemc_reports_to_stderr();
}  // namespace tpusim
