#include "sim/tensor_core.hpp"

#include <algorithm>

#include "sim/collective_engine.hpp"
#include "sim/event_queue.hpp"
#include "sim/failure.hpp"
#include "sim/timeline.hpp"

namespace tpusim {

TensorCore::TensorCore(sc_core::sc_module_name name, int id, const ExecutionContext& ctx,
                       bool traced, double compute_scale)
    : sc_core::sc_module(name), id_(id), ctx_(ctx), traced_(traced), compute_scale_(compute_scale) {
  SC_METHOD(guarded_step);
  sensitive << wake_;
}

void TensorCore::account(Duration now) {
  const Duration dt = now - last_account_;
  if (running_) busy_ += dt;
  if (!outstanding_.empty()) {
    comm_ += dt;
    if (!running_) exposed_ += dt;
  }
  last_account_ = now;
}

bool TensorCore::ready(const Op& op) const {
  for (int d : op.deps) {
    if (d >= pc_) return false;
    if (ctx_.program->ops[d].is_collective) {
      if (std::find(outstanding_.begin(), outstanding_.end(), d) != outstanding_.end())
        return false;
    } else if (running_ && d >= run_start_pc_) {
      return false;
    }
  }
  return true;
}

void TensorCore::guarded_step() {
  guarded([this] { step(); });
}

void TensorCore::step() {
  ++activations_;
  const Duration now = sim_now();
  if (running_) {
    if (now < run_end_) {  // woken early by a collective: keep waiting for the run's end
      wake_.notify(to_sc(run_end_ - now));
      return;
    }
    account(now);
    running_ = false;
  }
  const auto& ops = ctx_.program->ops;
  const int n = static_cast<int>(ops.size());
  while (pc_ < n) {
    const Op& op = ops[pc_];
    if (!ready(op)) return;  // a collective we need will wake us
    if (!ctx_.async_collectives && !outstanding_.empty()) return;
    if (op.is_collective) {
      account(now);
      outstanding_.push_back(pc_);
      issued_at_.push_back(now);
      ctx_.engine->arrive(pc_++, id_);
      if (!ctx_.async_collectives && !outstanding_.empty()) return;  // collective_done wakes us
      continue;
    }
    // A run: every following compute op whose inputs are ready, settled in one wait.
    account(now);
    run_start_pc_ = pc_;
    Duration total;
    while (pc_ < n && !ops[pc_].is_collective) {
      running_ = true;  // so ready() treats ops of this run as pending for collectives only
      bool ok = true;
      for (int d : ops[pc_].deps)
        if (ops[d].is_collective &&
            std::find(outstanding_.begin(), outstanding_.end(), d) != outstanding_.end())
          ok = false;
      if (!ok) break;
      total += compute_scale_ == 1.0 ? ctx_.op_time[pc_] : ctx_.op_time[pc_] * compute_scale_;
      ++pc_;
    }
    if (pc_ == run_start_pc_) {
      running_ = false;
      return;
    }
    if (traced_) trace_run(now, run_start_pc_, pc_);
    run_end_ = now + total;
    wake_.notify(to_sc(total));
    return;
  }
  if (outstanding_.empty() && !finished_) {
    account(now);
    finished_ = true;
    finish_time_ = now;
  }
}

void TensorCore::collective_done(int op_index) {
  const Duration now = sim_now();
  account(now);
  auto it = std::find(outstanding_.begin(), outstanding_.end(), op_index);
  if (it == outstanding_.end()) return;
  const auto i = it - outstanding_.begin();
  if (traced_ && ctx_.timeline) {
    const Op& op = ctx_.program->ops[op_index];
    ctx_.timeline->span(id_, op.name, std::string("collective:") + to_string(op.collective.kind),
                        issued_at_[i], now);
  }
  outstanding_.erase(it);
  issued_at_.erase(issued_at_.begin() + i);
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void TensorCore::trace_run(Duration start, int from, int to) const {
  if (!ctx_.timeline) return;
  Duration t = start;
  for (int i = from; i < to; ++i) {
    const Op& op = ctx_.program->ops[i];
    const Duration d = compute_scale_ == 1.0 ? ctx_.op_time[i] : ctx_.op_time[i] * compute_scale_;
    ctx_.timeline->span(id_, op.name, op.kind, t, t + d);
    t += d;
  }
}

}  // namespace tpusim
