#include "sim/core/tensor_core.hpp"

#include <algorithm>

#include "sim/core/sc_delay.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/kernel/failure.hpp"
#include "sim/kernel/timeline.hpp"

namespace tpusim {

void ExecutionContext::index_dependencies() {
  const auto& ops = program->ops;
  dep_end.assign(ops.size(), 0);
  collective_dep_begin.assign(ops.size() + 1, 0);
  collective_deps.clear();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    collective_dep_begin[i] = static_cast<int>(collective_deps.size());
    for (int d : ops[i].deps) {
      dep_end[i] = std::max(dep_end[i], d + 1);
      if (ops[d].is_collective) collective_deps.push_back(d);
    }
  }
  collective_dep_begin[ops.size()] = static_cast<int>(collective_deps.size());
}

TensorCore::TensorCore(sc_core::sc_module_name name, int id, const ExecutionContext& ctx,
                       bool traced, double compute_scale)
    : sc_core::sc_module(name),
      StatGroup("core"),
      id_(id),
      ctx_(ctx),
      traced_(traced),
      compute_scale_(compute_scale),
      resources_(*ctx.hardware, CoreParts{ctx.async_collectives, ctx.memory, ctx.cmem, ctx.vmem,
                                          ctx.direct_access}),
      // Named: an unnamed event made while elaborating gets a generated unique name, which
      // costs SystemC about as much again as making it.
      wake_("wake") {
  SC_METHOD(guarded_step);
  sensitive << wake_;
  register_stats();
}

void TensorCore::register_stats() {
  add_stat("finish_ns", "ns", "when the core finished the step (the step time on the last core)",
           [this] { return finish_time_.ns(); });
  add_stat("compute_ns", "ns", "time computing (the report's compute on the last core)",
           [this] { return busy_.ns(); });
  add_stat("communication_ns", "ns", "time with at least one collective in flight",
           [this] { return comm_.ns(); });
  add_stat("exposed_communication_ns", "ns", "time waiting on collectives and not computing",
           [this] { return exposed_.ns(); });
  add_stat("compute_slowdown_ns", "ns", "time compute runs took beyond their uncontended time",
           [this] { return slowdown_.ns(); });
  add_stat("activations", "activations", "activations of the core's SC_METHOD",
           [this] { return static_cast<double>(activations_); });
  add_stat("mxu.busy_ns", "ns",
           "busy time of the core's MXUs (every grant, compute and collectives)",
           [this] { return resources_.mxu.busy().ns(); });
  add_stat("vpu.busy_ns", "ns", "busy time of the core's vector unit (compute and reductions)",
           [this] { return resources_.vpu.busy().ns(); });
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

void TensorCore::blocked_at(int op_index, Duration now) {
  if (blocked_op_ == op_index) return;
  blocked_op_ = op_index;
  blocked_since_ = now;
}

void TensorCore::starts(int op_index, Duration now) {
  if (blocked_op_ != op_index) return;
  blocked_op_ = -1;
  if (static_cast<std::size_t>(op_index) < ctx_.op_waited.size())
    ctx_.op_waited[op_index] = std::max(ctx_.op_waited[op_index], now - blocked_since_);
}

bool TensorCore::in_flight(int op_index) const {
  return std::find(outstanding_.begin(), outstanding_.end(), op_index) != outstanding_.end();
}

Duration TensorCore::op_duration(int op_index) const {
  const Duration t = ctx_.op_time[op_index];
  return compute_scale_ == 1.0 ? t : t * compute_scale_;
}

bool TensorCore::ready(int op_index) const {
  // Ops before pc_ are issued and, between runs, every compute op among them is done; only a
  // collective may still be in flight.
  if (ctx_.dep_end[op_index] > pc_) return false;
  if (!outstanding_.empty())
    for (int k = ctx_.collective_dep_begin[op_index]; k < ctx_.collective_dep_begin[op_index + 1];
         ++k)
      if (in_flight(ctx_.collective_deps[k])) return false;
  const int batch = infeed_batch(op_index);
  return batch < 0 || ctx_.infeed->available(id_, batch, sim_now());
}

bool TensorCore::waits_on_collectives_only(int op_index) const {
  // Called where ready() failed: every op before pc_ is issued and its compute done, so what
  // holds an op whose inputs all lie before pc_ and that takes no infeed batch is a collective.
  return ctx_.dep_end[op_index] <= pc_ && infeed_batch(op_index) < 0;
}

void TensorCore::issue_deferred(Duration now) {
  for (std::size_t k = 0; k < deferred_.size();) {
    const int op = deferred_[k];
    bool inputs = true;
    for (int d : ctx_.program->ops[op].deps)
      if (ctx_.program->ops[d].is_collective && in_flight(d)) inputs = false;
    if (!inputs) {
      ++k;
      continue;
    }
    deferred_.erase(deferred_.begin() + static_cast<std::ptrdiff_t>(k));
    const auto i = std::find(outstanding_.begin(), outstanding_.end(), op) - outstanding_.begin();
    issued_at_[static_cast<std::size_t>(i)] = now;
    ctx_.engine->arrive(op, id_);  // groups start from the event queue, not inside arrive
  }
}

void TensorCore::guarded_step() {
  guarded([this] { step(); });
}

void TensorCore::step() {
  ++activations_;
  const Duration now = sim_now();
  if (!deferred_.empty()) issue_deferred(now);
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
    if (!ctx_.async_collectives && !outstanding_.empty()) return blocked_at(pc_, now);
    if (!ready(pc_)) {
      if (!op.is_collective || !ctx_.async_collectives || !waits_on_collectives_only(pc_))
        return blocked_at(pc_, now);  // a collective or an infeed batch we need will wake us
      starts(pc_, now);
      account(now);  // pass it: it starts when the collectives it needs are done
      outstanding_.push_back(pc_);
      issued_at_.push_back(now);
      deferred_.push_back(pc_++);
      continue;
    }
    starts(pc_, now);
    if (op.is_collective) {
      account(now);
      outstanding_.push_back(pc_);
      issued_at_.push_back(now);
      ctx_.engine->arrive(pc_++, id_);
      continue;
    }
    account(now);
    const Duration end = run(now);
    running_ = true;
    run_end_ = end;
    // Synchronise with the kernel: the run's local time is over at `end`.
    wake_.notify(to_sc(end - now));
    quantum_.reset();
    return;
  }
  if (outstanding_.empty() && !finished_) {
    account(now);
    finished_ = true;
    finish_time_ = now;
  }
}

Duration TensorCore::run(Duration now) {
  // A run: this op and every following compute op whose inputs are ready (earlier ops of the
  // run count as ready: they run first), granted their resources in order, settled in one wait.
  const auto& ops = ctx_.program->ops;
  const int n = static_cast<int>(ops.size());
  const int first = pc_;
  quantum_.reset();
  Duration end = now, natural;
  run_ends_.clear();
  const bool exclusive = resources_.exclusive_from(now);
  OpDemand counted;  // an exclusive run's MXU and vector-unit demands, counted once
  OpDemand scaled;   // the op's demand on a slow core
  const Duration overhead = ctx_.hardware->op_overhead;
  const bool has_cmem = resources_.cmem() != nullptr;
  // An infeed op begins a run, so that its batch is asked for at the time the core gets there.
  while (pc_ < n && !ops[pc_].is_collective && (pc_ == first || infeed_batch(pc_) < 0) &&
         ready(pc_)) {
    if (infeed_batch(pc_) >= 0) ctx_.infeed->dequeue(id_, infeed_batch(pc_), now);
    const Duration t = op_duration(pc_);
    const OpDemand& d0 = ctx_.op_demand[pc_];
    if (compute_scale_ != 1.0) scaled = d0 * compute_scale_;
    const OpDemand& d = compute_scale_ == 1.0 ? d0 : scaled;
    const Duration start = end;  // the op starts at the run's local time so far
    const Op& op = ops[pc_];
    access_.bytes_read = op.compute.bytes_read;
    access_.bytes_written = op.compute.bytes_written;
    access_.op = pc_;
    // What the HBM access reads lands in the vector memory; what it writes leaves from there.
    vmem_access_.bytes_read = op.compute.bytes_written;
    vmem_access_.bytes_written = op.compute.bytes_read;
    vmem_access_.op = pc_;
    vmem_access_.uncontended = exclusive;
    // The bytes the compiler placed in CMEM (Op::cmem_bytes) are one access of the core's CMEM.
    // The compiler keeps them as one figure, not read and written apart: the access carries
    // them as bytes_read.
    const bool cmem = has_cmem && op.cmem_bytes > 0;
    if (cmem) {
      cmem_access_.bytes_read = op.cmem_bytes;
      cmem_access_.op = pc_;
      cmem_access_.uncontended = exclusive;
    }
    if (exclusive) {
      end = start + t;
      counted += d0;
      if (d.hbm > Duration{}) {
        // Nothing else asks for the memory: the built-in port answers start + work + latency,
        // which the op's time holds; a model that takes longer holds the op until its data is
        // through.
        access_.work = d.hbm;
        access_.latency = d.hbm_latency;
        access_.uncontended = true;
        const Duration h = resources_.dma.access(start, access_);
        // Then into (out of) the vector memory: the built-in answers `h`; a model that takes
        // time holds the op.
        const Duration v = resources_.dma.access_vmem(h, vmem_access_);
        if (h > start + d.hbm + d.hbm_latency || v > h) end = max(end, v + overhead);
      }
      if (cmem) {  // the built-in CMEM answers `start`: a model that takes time holds the op
        const Duration c = resources_.dma.access_cmem(start, cmem_access_);
        if (c > start) end = max(end, c + overhead);
      }
    } else {
      end = resources_.compute(start, d, t, access_, vmem_access_, cmem ? &cmem_access_ : nullptr);
    }
    natural += t;
    if (traced_) run_ends_.push_back(end);
    ++pc_;
  }
  if (exclusive) resources_.count(compute_scale_ == 1.0 ? counted : counted * compute_scale_);
  quantum_.set(sc_delay(end - now));  // the run's local time, ahead of the kernel
  slowdown_ += end - now - natural;
  if (traced_) trace_run(now, first);
  return end;
}

void TensorCore::collective_done(int op_index) {
  const Duration now = sim_now();
  account(now);
  auto it = std::find(outstanding_.begin(), outstanding_.end(), op_index);
  if (it == outstanding_.end()) return;
  const auto i = it - outstanding_.begin();
  if (traced_ && ctx_.timeline) {
    const Op& op = ctx_.program->ops[op_index];
    ctx_.timeline->span(id_, op_index, op.name,
                        std::string("collective:") + to_string(op.collective.kind), issued_at_[i],
                        now);
  }
  outstanding_.erase(it);
  issued_at_.erase(issued_at_.begin() + i);
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void TensorCore::trace_run(Duration start, int from) const {
  if (!ctx_.timeline) return;
  Duration t = start;
  for (std::size_t k = 0; k < run_ends_.size(); ++k) {
    const Op& op = ctx_.program->ops[from + static_cast<int>(k)];
    ctx_.timeline->span(id_, from + static_cast<int>(k), op.name, op.kind, t, run_ends_[k]);
    t = run_ends_[k];
  }
}

}  // namespace tpusim
