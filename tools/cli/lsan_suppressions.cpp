// Leaks that LeakSanitizer should not report in tpusim's sanitizer build (TPUSIM_SANITIZE):
// fontconfig, which cairo uses for chart text, keeps a few hundred bytes of its configuration
// until exit even after cairo_debug_reset_static_data(). Not tpusim's memory, and not growing.
// The LSan runtime calls this hook if it exists; other builds never call it.
extern "C" const char* __lsan_default_suppressions() { return "leak:libfontconfig.so\n"; }
