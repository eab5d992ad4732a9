#!/usr/bin/env python3
"""Writes the example TPU profiles in this directory (run once; the outputs are committed).

They follow the structure of the trace viewer JSON that the TensorFlow and JAX profilers write for
TPUs (plugins/profile/<run>/<host>.trace.json.gz): "M" metadata events naming processes
"/device:TPU:N" and threads ("Steps", "XLA Modules", "XLA Ops"), "X" complete events with ts/dur
in microseconds and HLO details in "args" (long_name, bytes_accessed, flops as strings). The ops
are a small hand-made transformer-like step, not a recording of a real run.
"""
import gzip
import json

def meta(pid, name, tid=None, kind="process_name"):
    e = {"ph": "M", "pid": pid, "name": kind, "args": {"name": name}}
    if tid is not None:
        e["tid"] = tid
    return e

# (name, start offset us, duration us, args) of one step on one core.
STEP_OPS = [
    ("fusion.1", 0.0, 120.5, {"long_name": "%fusion.1 = bf16[8,512,1024]{2,1,0:T(8,128)(2,1)} fusion(bf16[8,512,1024]{2,1,0} %param.1, bf16[1024,1024]{1,0} %param.2), kind=kOutput, calls=%fused_computation.1",
                              "bytes_accessed": "18874368", "flops": "8589934592", "hlo_category": "convolution fusion"}),
    ("dot.2", 121.0, 80.25, {"long_name": "%dot.2 = bf16[2048,1024]{1,0} dot(bf16[2048,4096]{1,0} %fusion.1, bf16[4096,1024]{1,0} %param.3), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                             "bytes_accessed": "29360128", "flops": "17179869184", "hlo_category": "convolution"}),
    ("all-reduce.3", 202.0, 45.0, {"long_name": "%all-reduce.3 = f32[1024,256]{1,0} all-reduce(f32[1024,256]{1,0} %fusion.1), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%add.1",
                                   "bytes_accessed": "2097152", "hlo_category": "all-reduce"}),
    ("all-reduce-start.1", 250.0, 2.0, {"long_name": "%all-reduce-start.1 = bf16[2048,1024]{1,0} all-reduce-start(bf16[2048,1024]{1,0} %dot.2), channel_id=2, replica_groups={{0,1,2,3},{4,5,6,7}}, to_apply=%add.2"}),
    ("fusion.5", 253.0, 60.0, {"long_name": "%fusion.5 = f32[2048]{0} fusion(f32[2048,1024]{1,0} %dot.2), kind=kInput, calls=%fused_computation.5",
                               "bytes_accessed": "16384", "flops": "4096"}),
    ("all-reduce-done.1", 313.0, 30.0, {"long_name": "%all-reduce-done.1 = bf16[2048,1024]{1,0} all-reduce-done(bf16[2048,1024]{1,0} %all-reduce-start.1)"}),
    ("reduce-scatter.6", 344.0, 25.0, {"long_name": "%reduce-scatter.6 = bf16[128,1024]{1,0} reduce-scatter(bf16[1024,1024]{1,0} %fusion.5), channel_id=3, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, to_apply=%add.3"}),
    ("fusion.7", 370.0, 15.75, {"long_name": "%fusion.7 = f32[128,1024]{1,0} fusion(bf16[128,1024]{1,0} %reduce-scatter.6, f32[128,1024]{1,0} %param.4), kind=kLoop, calls=%fused_computation.7",
                                "bytes_accessed": "1572864", "flops": "655360"}),
    ("all-gather-start.2", 386.0, 1.5, {"long_name": "%all-gather-start.2 = (bf16[128,1024]{1,0}, bf16[1024,1024]{1,0}) all-gather-start(bf16[128,1024]{1,0} %fusion.7), channel_id=4, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}"}),
    ("copy.8", 388.0, 10.0, {"long_name": "%copy.8 = bf16[1024,1024]{0,1} copy(bf16[1024,1024]{1,0} %param.5)", "bytes_accessed": "4194304"}),
    ("all-gather-done.2", 398.0, 20.0, {"long_name": "%all-gather-done.2 = bf16[1024,1024]{1,0} all-gather-done((bf16[128,1024]{1,0}, bf16[1024,1024]{1,0}) %all-gather-start.2)"}),
    ("collective-permute.9", 420.0, 12.0, {"long_name": "%collective-permute.9 = bf16[8,128]{1,0} collective-permute(bf16[8,128]{1,0} %fusion.7), channel_id=5, source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}"}),
    ("all-to-all.10", 433.0, 8.0, {"bytes": "65536", "shape": "bf16[16,1024]{1,0}"}),
    ("fusion.11", 442.0, 30.0, {"long_name": "%fusion.11 = bf16[8,512,1024]{2,1,0} fusion(bf16[8,512,1024]{2,1,0} %fusion.1), kind=kLoop, calls=%fused_computation.11",
                                "bytes_accessed": "16777216", "flops": "4194304"}),
]

def tpu_v3_8_profile():
    events = [meta(100, "/host:CPU"), meta(100, "python3", tid=1, kind="thread_name"),
              {"ph": "X", "pid": 100, "tid": 1, "ts": 990.0, "dur": 1010.0, "name": "train_step", "args": {}}]
    for core in range(8):
        pid = core + 1
        events += [meta(pid, "/device:TPU:%d" % core),
                   {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}},
                   meta(pid, "Steps", tid=1, kind="thread_name"),
                   meta(pid, "XLA Modules", tid=2, kind="thread_name"),
                   meta(pid, "XLA Ops", tid=3, kind="thread_name")]
        for step in range(2):
            base = 1000.0 + 500.0 * step
            events.append({"ph": "X", "pid": pid, "tid": 1, "ts": base, "dur": 480.0, "name": str(step),
                           "args": {"group_id": str(step), "step_num": str(step)}})
            events.append({"ph": "X", "pid": pid, "tid": 2, "ts": base, "dur": 472.0, "name": "jit_train_step(4321)",
                           "args": {"run_id": str(step)}})
            for name, offset, dur, args in STEP_OPS:
                # The cores differ a little in speed, as real ones do; the importer uses TPU:0's.
                events.append({"ph": "X", "pid": pid, "tid": 3, "ts": base + offset, "dur": dur + 0.25 * core,
                               "name": name, "args": dict(args, program_id="4321", run_id=str(step))})
    return {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": events}

def needs_sizes_profile():
    ops = [("fusion.1", 0.0, 40.0, {"bytes_accessed": "1048576", "flops": "2097152"}),
           ("all-reduce.2", 41.0, 20.0, {"hlo_category": "all-reduce"}),
           ("collective-permute.3", 62.0, 5.0, {}),
           ("fusion.4", 68.0, 12.5, {"bytes_accessed": "4096"})]
    events = []
    for core in range(2):
        pid = 10 + core
        events += [meta(pid, "/device:TPU:%d" % core), meta(pid, "XLA Ops", tid=7, kind="thread_name")]
        for name, ts, dur, args in ops + ([("copy.5", 81.0, 3.0, {})] if core == 1 else []):
            events.append({"ph": "X", "pid": pid, "tid": 7, "ts": 500.0 + ts, "dur": dur, "name": name, "args": args})
    return {"traceEvents": events}

def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")

write("profile_tpu_v3_8.json", tpu_v3_8_profile())
with open("profile_tpu_v3_8.json", "rb") as src, open("profile_tpu_v3_8.json.gz", "wb") as raw:
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as dst:
        dst.write(src.read())
write("profile_needs_sizes.json", needs_sizes_profile())
with open("profile_needs_sizes.sizes.json", "w") as f:
    json.dump({"_comment": "sizes the profile does not record, by op name (bytes, or an object)",
               "all-reduce.2": 1048576,
               "collective-permute.3": {"bytes": 4096, "dtype": "f32", "axes": ["data"], "shift": 1, "wrap": False}},
              f, indent=1)
    f.write("\n")
