// The op profile as one self-contained HTML page: the profile's JSON inline and a script that
// draws from it, as SVG, the step's breakdown and the roofline of every compute op against the
// chip's roofs, and fills the layer and op tables (sortable by any column). Nothing is fetched.
#include <string>

#include "tools/report/op_profile.hpp"

namespace tpusim::cli {
namespace {

const char* const kHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tpusim op profile</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: right; }
th { cursor: pointer; background: #f3f3f3; position: sticky; top: 0; }
td.name, th.name { text-align: left; }
.note { color: #555; font-size: 0.9em; max-width: 60em; }
svg text { font-family: sans-serif; font-size: 11px; }
</style></head>
<body>
<h1 id="title">tpusim op profile</h1>
<p class="note" id="summary"></p>
<h2>The step, by what bounds it</h2>
<div id="step"></div>
<h2>Roofline: every compute op against the chip's roofs (per core)</h2>
<div id="roofline"></div>
<p class="note" id="roofline-note"></p>
<h2>Layers</h2>
<table id="layers"></table>
<h2>Ops (program order; click a column to sort)</h2>
<table id="ops"></table>
<script id="profile-data" type="application/json">)HTML";

const char* const kScript = R"HTML(</script>
<script>
"use strict";
const P = JSON.parse(document.getElementById("profile-data").textContent);
const SVG = "http://www.w3.org/2000/svg";
const COLORS = {MXU: "#1f77b4", vector: "#2ca02c", HBM: "#d62728", overhead: "#9467bd",
  "other compute": "#8c564b", slowdown: "#e377c2", waiting: "#7f7f7f", ICI: "#ff7f0e",
  idle: "#bcbd22"};
function el(tag, attrs, parent, text) {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function fmt(v, digits) {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(2);
  return v.toFixed(digits === undefined ? (a >= 100 ? 1 : a >= 1 ? 3 : 4) : digits);
}
function bytes(b) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; ++i; }
  return (i ? b.toFixed(2) : b.toFixed(0)) + " " + u[i];
}

function drawStep() {
  const s = P.step, W = 900, H = 70, total = s.step_time_ms;
  const svg = el("svg", {width: W, height: H + 20 * s.parts.length, id: "step-chart"},
                 document.getElementById("step"));
  let x = 0, row = 0;
  for (const p of s.parts) {
    if (!(p.time_ms > 0)) continue;
    const w = total > 0 ? W * p.time_ms / total : 0;
    const r = el("rect", {x: x, y: 10, width: Math.max(w, 0.5), height: 30,
                          fill: COLORS[p.part] || "#999", class: "step-part",
                          "data-part": p.part, "data-ms": p.time_ms}, svg);
    el("title", {}, r, p.part + ": " + fmt(p.time_ms) + " ms");
    x += w;
    const y = H + 20 * row++;
    el("rect", {x: 0, y: y - 10, width: 12, height: 12, fill: COLORS[p.part] || "#999"}, svg);
    el("text", {x: 18, y: y}, svg, fmt(p.time_ms) + " ms (" +
       (100 * p.time_ms / total).toFixed(1) + " %)  " + p.part + ": " + p.what);
  }
  svg.setAttribute("height", H + 20 * row);
}

function drawRoofline() {
  const R = P.roofs, W = 900, H = 520, L = 70, B = 50, T = 20, Rm = 170;
  const pts = P.ops.filter(o => o.type === "compute" && o.flops > 0 && o.hbm_bytes > 0);
  let xmin = R.ridge_flop_per_byte, xmax = R.ridge_flop_per_byte;
  let ymax = R.mxu_tflop_per_s, ymin = R.mxu_tflop_per_s;
  for (const o of pts) {
    xmin = Math.min(xmin, o.flop_per_byte); xmax = Math.max(xmax, o.flop_per_byte);
    ymin = Math.min(ymin, o.tflop_per_s);
  }
  ymin = Math.min(ymin, R.vector_tflop_per_s, R.hbm_GBps * 1e-3 * xmin);
  const lx0 = Math.floor(Math.log10(xmin)), lx1 = Math.ceil(Math.log10(xmax * 4));
  const ly0 = Math.floor(Math.log10(ymin)), ly1 = Math.ceil(Math.log10(ymax * 1.5));
  const X = v => L + (W - L - Rm) * (Math.log10(v) - lx0) / (lx1 - lx0);
  const Y = v => T + (H - T - B) * (ly1 - Math.log10(v)) / (ly1 - ly0);
  const svg = el("svg", {width: W, height: H, id: "roofline-chart"},
                 document.getElementById("roofline"));
  el("rect", {x: L, y: T, width: W - L - Rm, height: H - T - B, fill: "none", stroke: "#444"}, svg);
  for (let e = lx0; e <= lx1; ++e) {
    el("line", {x1: X(10 ** e), x2: X(10 ** e), y1: T, y2: H - B, stroke: "#eee"}, svg);
    el("text", {x: X(10 ** e), y: H - B + 16, "text-anchor": "middle"}, svg, "1e" + e);
  }
  for (let e = ly0; e <= ly1; ++e) {
    el("line", {x1: L, x2: W - Rm, y1: Y(10 ** e), y2: Y(10 ** e), stroke: "#eee"}, svg);
    el("text", {x: L - 6, y: Y(10 ** e) + 4, "text-anchor": "end"}, svg, "1e" + e);
  }
  el("text", {x: (L + W - Rm) / 2, y: H - 10, "text-anchor": "middle"}, svg,
     "operational intensity (FLOP per HBM byte)");
  el("text", {x: 16, y: (T + H - B) / 2, "text-anchor": "middle",
              transform: "rotate(-90 16 " + (T + H - B) / 2 + ")"}, svg,
     "achieved TFLOP/s per core");
  const xs = [10 ** lx0, 10 ** lx1];
  const roof = (bw, peak, cls, dash, label) => {
    const ridge = peak / (bw * 1e-3);
    const x0 = Math.max(xs[0], 10 ** ly0 / (bw * 1e-3));
    const d = "M" + X(x0) + "," + Y(bw * 1e-3 * x0) + " L" + X(Math.min(ridge, xs[1])) + "," +
              Y(Math.min(peak, bw * 1e-3 * xs[1])) + (ridge < xs[1] ? " L" + X(xs[1]) + "," + Y(peak) : "");
    el("path", {d: d, fill: "none", stroke: "#000", "stroke-width": 1.5,
                "stroke-dasharray": dash, class: "roof " + cls}, svg);
    el("text", {x: W - Rm + 4, y: Y(peak) + 4}, svg, label);
  };
  roof(R.hbm_GBps, R.mxu_tflop_per_s, "roof-peak", "", "MXU peak " + fmt(R.mxu_tflop_per_s) + " TFLOP/s");
  roof(R.hbm_achievable_GBps, R.mxu_tflop_per_s * R.mxu_efficiency, "roof-achievable", "5,4",
       "achievable " + fmt(R.mxu_tflop_per_s * R.mxu_efficiency));
  el("path", {d: "M" + X(xs[0]) + "," + Y(R.vector_tflop_per_s) + " L" + X(xs[1]) + "," +
              Y(R.vector_tflop_per_s), stroke: "#2ca02c", "stroke-dasharray": "2,3",
              class: "roof roof-vector"}, svg);
  el("text", {x: W - Rm + 4, y: Y(R.vector_tflop_per_s) + 4}, svg,
     "vector " + fmt(R.vector_tflop_per_s) + " TFLOP/s");
  el("text", {x: X(xs[0]) + 4, y: Y(R.hbm_GBps * 1e-3 * xs[0]) - 8}, svg,
     "HBM " + fmt(R.hbm_GBps, 0) + " GB/s");
  const g = el("g", {id: "roofline-points"}, svg);
  for (const o of pts) {
    const c = el("circle", {cx: X(o.flop_per_byte), cy: Y(o.tflop_per_s), r: 3.5,
                            fill: COLORS[o.bound] || "#999", "fill-opacity": 0.7,
                            class: "roofline-point", "data-op": o.index}, g);
    el("title", {}, c, o.name + " (" + o.kind + "): " + fmt(o.tflop_per_s) + " TFLOP/s, " +
       fmt(o.flop_per_byte) + " FLOP/B, " + fmt(o.time_ms) + " ms, " + o.bound + "-bound");
  }
  let ly = T + 80;
  for (const b of ["MXU", "vector", "HBM", "overhead", "waiting"]) {
    el("circle", {cx: W - Rm + 10, cy: ly, r: 4, fill: COLORS[b]}, svg);
    el("text", {x: W - Rm + 20, y: ly + 4}, svg, b + "-bound");
    ly += 18;
  }
  const off = P.ops.filter(o => o.type === "compute").length - pts.length;
  document.getElementById("roofline-note").textContent = pts.length + " compute ops plotted; " +
    off + " without FLOPs or HBM bytes are not (no intensity); collectives are in the op table. " +
    "Roofs: the MXUs' peak and HBM's peak bandwidth (solid), the calibrated achievable fractions " +
    "(dashed), the vector unit at one FLOP per element op (dotted). Ridge point " +
    fmt(R.ridge_flop_per_byte) + " FLOP/B.";
}

function table(id, rows, cols) {
  const t = document.getElementById(id);
  let key = null, dir = 1;
  function render() {
    t.textContent = "";
    const tr = t.insertRow();
    for (const c of cols) {
      const th = document.createElement("th");
      th.textContent = c[0];
      if (c[3]) th.className = "name";
      th.onclick = () => { dir = key === c ? -dir : (c[3] ? 1 : -1); key = c; sort(); render(); };
      tr.appendChild(th);
    }
    for (const r of rows) {
      const row = t.insertRow();
      row.className = id === "ops" ? "op-row" : "layer-row";
      for (const c of cols) {
        const td = row.insertCell();
        td.textContent = c[2](r);
        if (c[3]) td.className = "name";
      }
    }
  }
  function sort() {
    rows.sort((a, b) => { const x = key[1](a), y = key[1](b); return x < y ? -dir : x > y ? dir : 0; });
  }
  render();
}

function drawTables() {
  const num = (name, get, digits) => [name, get, r => fmt(get(r), digits)];
  table("layers", P.layers.slice(), [
    ["layer", r => r.layer, r => r.layer, true], num("ops", r => r.ops, 0),
    num("time ms", r => r.time_ms), num("compute ms", r => r.compute_ms),
    num("collectives ms", r => r.collective_ms), num("GFLOP", r => r.flops * 1e-9),
    ["HBM", r => r.hbm_bytes, r => bytes(r.hbm_bytes)], num("TFLOP/s", r => r.tflop_per_s),
    num("GB/s", r => r.hbm_GBps), ["bound", r => r.bound, r => r.bound, true]]);
  table("ops", P.ops.slice(), [
    num("#", r => r.index, 0), ["op", r => r.name, r => r.name, true],
    ["kind", r => r.kind, r => r.kind, true], ["layer", r => r.layer, r => r.layer, true],
    num("time ms", r => r.time_ms), num("GFLOP", r => r.flops * 1e-9),
    ["bytes", r => r.type === "compute" ? r.hbm_bytes : r.bytes,
     r => bytes(r.type === "compute" ? r.hbm_bytes : r.bytes)],
    num("TFLOP/s", r => r.type === "compute" ? r.tflop_per_s : 0),
    num("GB/s", r => r.type === "compute" ? r.hbm_GBps : r.GBps),
    ["bound", r => r.bound, r => r.bound, true]]);
}

document.getElementById("title").textContent = "tpusim op profile: " + P.model + " on " +
  P.chips + " chips (" + P.hardware + "), " + P.layout;
document.getElementById("summary").textContent = "Step " + fmt(P.step.step_time_ms) +
  " ms on the core that finished last; " + P.ops.length + " ops per core; MXU utilisation " +
  (100 * P.step.mxu_utilization).toFixed(1) + " %; study " + P.study + "; " + P.simulation +
  ". Times are per core per step; a collective's is its longest group's time in flight.";
drawStep();
drawRoofline();
drawTables();
document.body.setAttribute("data-rendered", "yes");
</script>
</body></html>
)HTML";

}  // namespace

std::string op_profile_html(const nlohmann::json& profile) {
  // The JSON inside a <script> element: "</" could close it, so it is written "<\/" (the same
  // string to JSON.parse).
  const std::string data = profile.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    safe += data[i];
    if (data[i] == '<' && i + 1 < data.size() && data[i + 1] == '/') safe += '\\';
  }
  return std::string(kHead) + safe + kScript;
}

}  // namespace tpusim::cli
