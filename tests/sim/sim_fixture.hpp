#pragma once
// Helpers for simulation tests. SystemC elaborates one design per process, so each simulation
// runs in a forked child that sends its numbers back through a pipe.
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/hardware.hpp"
#include "models/program.hpp"
#include "sim/run/simulation.hpp"
#include "topologies/topology.hpp"

namespace tpusim::test {

/// Runs `f` (which may call simulate() once) in a child process and returns its numbers.
template <class F>
std::vector<double> in_child(F f) {
  int fd[2];
  if (pipe(fd) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    int code = 0;
    try {
      std::vector<double> v = f();
      std::size_t n = v.size();
      if (write(fd[1], &n, sizeof n) < 0 || write(fd[1], v.data(), n * sizeof(double)) < 0)
        code = 2;
    } catch (const std::exception& e) {
      std::string msg = e.what();
      std::size_t n = static_cast<std::size_t>(-1);
      (void)!write(fd[1], &n, sizeof n);
      std::size_t len = msg.size();
      (void)!write(fd[1], &len, sizeof len);
      (void)!write(fd[1], msg.data(), len);
      code = 1;
    }
    close(fd[1]);
    _exit(code);
  }
  close(fd[1]);
  std::size_t n = 0;
  std::vector<double> v;
  std::string error;
  if (read(fd[0], &n, sizeof n) == sizeof n) {
    if (n == static_cast<std::size_t>(-1)) {
      std::size_t len = 0;
      if (read(fd[0], &len, sizeof len) == sizeof len) {
        error.resize(len);
        std::size_t got = 0;
        while (got < len) {
          ssize_t k = read(fd[0], &error[got], len - got);
          if (k <= 0) break;
          got += static_cast<std::size_t>(k);
        }
      }
    } else {
      v.resize(n);
      std::size_t want = n * sizeof(double), got = 0;
      char* p = reinterpret_cast<char*>(v.data());
      while (got < want) {
        ssize_t k = read(fd[0], p + got, want - got);
        if (k <= 0) break;
        got += static_cast<std::size_t>(k);
      }
    }
  }
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!error.empty()) throw std::runtime_error(error);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("simulation child failed");
  return v;
}

/// A study config from JSON overrides on top of the tpu_v3 preset. The closed forms of the sim
/// tests leave a collective's launch cost out (0 unless an override sets it;
/// test_collective_launch.cpp checks what it adds).
inline Config config_with(const nlohmann::json& overrides) {
  nlohmann::json doc = {{"preset", "tpu_v3"},
                        {"hardware", {{"calibration", {{"collective_launch_ns", 0}}}}}};
  deep_merge(doc, overrides);
  return load_config(doc);
}

/// A matmul op of `shape`, its FLOPs from the shape (no HBM bytes stated).
inline Op matmul_op(const MatmulShape& shape) {
  Op op;
  op.name = "matmul";
  op.kind = "matmul";
  op.compute.matmul = shape;
  op.compute.flops = shape.flops();
  return op;
}

/// A Program of collective ops over one mesh axis "all" (or the given mesh).
inline Op collective_op(CollectiveKind kind, double bytes, std::vector<std::string> axes = {}) {
  Op op;
  op.name = to_string(kind);
  op.kind = op.name;
  op.is_collective = true;
  op.collective.kind = kind;
  op.collective.bytes = bytes;
  op.collective.axes = std::move(axes);
  return op;
}

/// B: link bandwidth (B/s), L: per-hop latency (s), O: collective step overhead (s), C: the
/// packet a message pipelines in over multi-hop routes (bytes), as the config sets them.
struct Params {
  double B, L, O, C;
};
inline Params params_of(const Config& c) {
  return {c.number("hardware.ici.bandwidth_GBps") * 1e9, c.number("hardware.ici.latency_ns") * 1e-9,
          c.number("hardware.calibration.collective_step_overhead_ns") * 1e-9,
          static_cast<double>(c.integer("network.packet_bytes"))};
}

/// A Program of one op over one mesh axis "all" of `cores` cores.
inline Program one_op(int cores, Op op) {
  Program p;
  p.mesh = {{"all", cores}};
  p.ops.push_back(std::move(op));
  return p;
}

/// A per-dimension all-reduce setting on an 8x8 torus of one-core chips at a fidelity level,
/// reductions free: the levels' uncontended agreement case.
inline Config uncontended_8x8(const char* fidelity) {
  return config_with({{"hardware", {{"cores_per_chip", 1}}},
                      {"topology", "8x8"},
                      {"network", {{"fidelity", fidelity}}},
                      {"collectives",
                       {{"algorithm", "per_dimension"},
                        {"reduction_compute", false},
                        {"dma_hbm_traffic", false}}}});
}

/// A line of `chips` one-core chips at a fidelity level with async collectives: a core issues
/// its next collective at once, so every op's singleton groups end at once and an op's end is
/// its one real transfer's end.
inline Config line_cfg(const char* fidelity, int chips) {
  return config_with({{"hardware", {{"cores_per_chip", 1}, {"async_collectives", true}}},
                      {"topology", std::to_string(chips) + ":wrap=0"},
                      {"network", {{"fidelity", fidelity}}}});
}

/// A collective-permute in which chip `from` sends `bytes` to chip `to` (the others are alone).
inline Op send(int from, int to, int chips, double bytes) {
  Op op = collective_op(CollectiveKind::CollectivePermute, bytes);
  op.collective.shift = 1;
  op.collective.replica_groups = {{from, to}};
  for (int c = 0; c < chips; ++c)
    if (c != from && c != to) op.collective.replica_groups.push_back({c});
  return op;
}

/// An all-reduce over model groups of two chips along X on a 4x4 torus with per-dimension rings
/// (`symmetry`: sim.symmetry; a symmetric run's domain is 2 x 1 chips), simulated in a child
/// process; `inspect(report)` returns its numbers (it may walk the elaborated module tree).
template <class F>
std::vector<double> model_pairs_4x4(const char* symmetry, F inspect) {
  const Config cfg = config_with({{"topology", "4x4"},
                                  {"collectives", {{"algorithm", "per_dimension"}}},
                                  {"sim", {{"symmetry", symmetry}}}});
  const int cpc = static_cast<int>(cfg.integer("hardware.cores_per_chip"));
  return in_child([&] {
    Topology topo(topology_from_json(cfg.json()["topology"]));
    Program p;
    p.mesh = {{"data", 8}, {"model", 2 * cpc}};
    p.ops.push_back(collective_op(CollectiveKind::AllReduce, 1 << 20, {"model"}));
    return inspect(simulate(p, topo, HardwareSpec::from_config(cfg), SimOptions::from_config(cfg)));
  });
}

struct Run {
  double step_s = 0;
  double compute_slowdown_s = 0;  ///< of the core that finished last
  std::vector<double> op_end_s;   ///< per op: latest group end
};

/// Simulates `program` on `cfg` in a child process.
inline Run simulate_child(const Program& program, const Config& cfg) {
  auto v = in_child([&] {
    HardwareSpec hw = HardwareSpec::from_config(cfg);
    Topology topo(topology_from_json(cfg.json()["topology"]));
    SimReport r = simulate(program, topo, hw, SimOptions::from_config(cfg));
    std::vector<double> out{r.step_time.seconds(), r.compute_slowdown.seconds()};
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      auto it = r.collectives.find(static_cast<int>(i));
      out.push_back(it == r.collectives.end() ? 0 : it->second.last_end.seconds());
    }
    return out;
  });
  Run run;
  run.step_s = v.at(0);
  run.compute_slowdown_s = v.at(1);
  run.op_end_s.assign(v.begin() + 2, v.end());
  return run;
}

}  // namespace tpusim::test
