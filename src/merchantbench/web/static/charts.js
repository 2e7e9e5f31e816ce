// Line charts as inline SVG: lineChart(svg, xs, ys). No library, no network.
"use strict";
function lineChart(svg, xs, ys, opts) {
  const w = 320, h = 140, pad = 34;
  const ns = "http://www.w3.org/2000/svg";
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const add = (tag, attrs, text) => {
    const el = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    if (text !== undefined) el.textContent = text;
    svg.appendChild(el);
    return el;
  };
  if (!ys.length) { add("text", {x: pad, y: h / 2, class: "axis"}, "no data yet"); return; }
  let lo = Math.min(...ys), hi = Math.max(...ys);
  if (opts && opts.min !== undefined) lo = Math.min(lo, opts.min);
  if (hi === lo) { hi = lo + 1; if (!opts || opts.min === undefined) lo = lo - 1; }
  const x0 = xs[0], x1 = xs[xs.length - 1] === x0 ? x0 + 1 : xs[xs.length - 1];
  const px = (x) => pad + (x - x0) / (x1 - x0) * (w - pad - 8);
  const py = (y) => h - 18 - (y - lo) / (hi - lo) * (h - 30);
  add("line", {x1: pad, y1: h - 18, x2: w - 8, y2: h - 18, class: "axis-line"});
  add("text", {x: 2, y: py(hi) + 4, class: "axis"}, fmt(hi));
  add("text", {x: 2, y: py(lo) + 4, class: "axis"}, fmt(lo));
  add("text", {x: pad, y: h - 4, class: "axis"}, String(x0));
  add("text", {x: w - 30, y: h - 4, class: "axis"}, String(xs[xs.length - 1]));
  const points = xs.map((x, i) => `${px(x).toFixed(1)},${py(ys[i]).toFixed(1)}`).join(" ");
  add("polyline", {points, class: "series"});
  const last = ys.length - 1;
  add("circle", {cx: px(xs[last]), cy: py(ys[last]), r: 3, class: "dot"});
}
function fmt(v) {
  const a = Math.abs(v);
  if (a >= 10000) return (v / 1000).toFixed(0) + "k";
  if (a >= 100) return v.toFixed(0);
  return v.toFixed(2);
}
