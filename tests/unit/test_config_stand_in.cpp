// check_config: the problems of a study, as load_config throws them, and a stand-in in which the
// declared defaults replace every value with a problem.
#include <catch2/catch.hpp>
#include <limits>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/params.hpp"

using namespace tpusim;
using nlohmann::json;

namespace {

// Only in this test binary: a parameter without a default, which applies only when
// stand_in_test.kind is "needs" (so no other study here is missing it).
// clang-format off
const ParamRegistrar kTestParams{{
    {"stand_in_test.kind", ParamType::String, "", "none", "test only: whether stand_in_test.needed applies", -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(), {"none", "needs"}},
    {"stand_in_test.needed", ParamType::Integer, "", json(), "test only: required when stand_in_test.kind is needs", 0, 10, {}, "stand_in_test.kind", "needs"},
}};
// clang-format on

// The declared default of `path` for BERT (some parameters are declared once per model).
json default_of(const std::string& path) {
  for (const auto* s : ParamRegistry::instance().find(path))
    if (s->when_path.empty() || s->when_value == "bert_large") return s->default_value;
  return nullptr;
}

json study() {
  return {{"preset", "tpu_v3"},
          {"topology", "4x4"},
          {"workload", {{"model", "bert_large"}, {"global_batch", 48}, {"heads", 8}}},
          {"parallelism", {{"model", 2}}}};
}

// What load_config throws for `doc`, as lines.
std::string load_config_error(const json& doc, const std::vector<std::string>& sets = {}) {
  try {
    load_config(doc, sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("check_config of a valid study is load_config's study, with no stand-in") {
  const ConfigCheck c = check_config(study(), {"hardware.clock_MHz=700"});
  CHECK(c.problems.empty());
  CHECK(!c.stand_in);
  CHECK(c.config.json() == load_config(study(), {"hardware.clock_MHz=700"}).json());
}

TEST_CASE("check_config lists load_config's problems, in its order and words") {
  const std::vector<std::vector<std::string>> cases = {
      {"hardware.clock_MHz=-5"},
      {"hardware.clock_MHz=-5", "workload.colour=3", "network.fidelity=flow_x"},
      {"hardware=1"},
      {"workload.model=gpt9", "workload.global_batch=x"},
  };
  for (const auto& sets : cases) {
    INFO(sets.front());
    const ConfigCheck c = check_config(study(), sets);
    REQUIRE(!c.problems.empty());
    CHECK(ConfigError(c.problems).what() == load_config_error(study(), sets));
  }
}

TEST_CASE("the stand-in has the default in place of a wrong value and keeps every other value") {
  const ConfigCheck c =
      check_config(study(), {"hardware.clock_MHz=-5", "workload.global_batch=\"many\""});
  REQUIRE(c.problems.size() == 2);
  REQUIRE(c.stand_in);
  const Config& s = *c.stand_in;
  CHECK(s.json()["hardware"]["clock_MHz"] == default_of("hardware.clock_MHz"));
  CHECK(s.json()["workload"]["global_batch"] == default_of("workload.global_batch"));
  CHECK(s.integer("workload.heads") == 8);
  CHECK(s.integer("parallelism.model") == 2);
  CHECK(s.json()["topology"] == load_config(study()).json()["topology"]);
}

TEST_CASE("the stand-in leaves out unknown keys, also keys with a dot in their name") {
  json doc = study();
  doc["workload"]["global.batch"] = 64;
  doc["hardware"] = {{"clock_MHz", 700}, {"colour", "red"}};
  const ConfigCheck c = check_config(doc);
  REQUIRE(c.problems.size() == 2);
  REQUIRE(c.stand_in);
  CHECK(!c.stand_in->json()["workload"].contains("global.batch"));
  CHECK(!c.stand_in->json()["hardware"].contains("colour"));
  CHECK(c.stand_in->number("hardware.clock_MHz") == 700);
  CHECK(c.stand_in->integer("workload.global_batch") == 48);
}

TEST_CASE("a section given as a value is all defaults in the stand-in") {
  const ConfigCheck c = check_config(study(), {"parallelism=5"});
  REQUIRE(c.problems.size() == 1);
  CHECK(c.problems[0].where == "parallelism");
  REQUIRE(c.stand_in);
  json without = study();
  without.erase("parallelism");
  CHECK(c.stand_in->json()["parallelism"] == load_config(without).json()["parallelism"]);
}

TEST_CASE("no stand-in when the model, which decides the other parameters, has a problem") {
  for (const std::string set : {"workload.model=gpt9", "workload.model=3", "workload=3"}) {
    INFO(set);
    const ConfigCheck c = check_config(study(), {set});
    CHECK(!c.problems.empty());
    CHECK(!c.stand_in);
  }
}

TEST_CASE("no stand-in when a required value is missing") {
  json doc = study();
  doc["stand_in_test"] = {{"kind", "needs"}};
  const ConfigCheck missing = check_config(doc, {"hardware.clock_MHz=-5"});
  REQUIRE(missing.problems.size() == 2);
  CHECK(missing.problems[1].where == "stand_in_test.needed");
  CHECK(!missing.stand_in);
  // Given, but wrong: its path is left out, and the stand-in misses it all the same.
  doc["stand_in_test"]["needed"] = 11;
  const ConfigCheck wrong = check_config(doc);
  REQUIRE(wrong.problems.size() == 1);
  CHECK(!wrong.stand_in);
  doc["stand_in_test"]["needed"] = 3;
  CHECK(check_config(doc, {"hardware.clock_MHz=-5"}).stand_in);
}

TEST_CASE("problems before validation still throw from check_config") {
  CHECK_THROWS_AS(check_config(study(), {"preset=no_such_preset"}), ConfigError);
  CHECK_THROWS_AS(check_config(study(), {"no_equals_sign"}), ConfigError);
}
