// A market's page: each merchant's series drawn in one chart per quantity (its colour as in
// the table), and, while the market runs, its progress polled and the page reloaded when it
// ends.
"use strict";
const MARKET = document.getElementById("market-script").dataset;
const bySeller = pageData("series");

function multiLineChart(svg, key, opts) {
  const w = 460, h = 180, pad = 40;
  const ns = "http://www.w3.org/2000/svg";
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.replaceChildren();
  const add = (tag, attrs, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    svg.appendChild(node);
    return node;
  };
  const lines = Object.values(bySeller).map((s) => ({xs: s.window, ys: s[key]}));
  const xs = lines.flatMap((l) => l.xs), ys = lines.flatMap((l) => l.ys);
  if (!ys.length) { add("text", {x: pad, y: h / 2, class: "axis"}, "no data yet"); return; }
  let lo = Math.min(...ys), hi = Math.max(...ys);
  if (opts && opts.min !== undefined) lo = Math.min(lo, opts.min);
  if (hi === lo) { hi = lo + 1; if (!opts || opts.min === undefined) lo = lo - 1; }
  const x0 = Math.min(...xs), x1 = Math.max(...xs) === x0 ? x0 + 1 : Math.max(...xs);
  const px = (x) => pad + (x - x0) / (x1 - x0) * (w - pad - 8);
  const py = (y) => h - 18 - (y - lo) / (hi - lo) * (h - 30);
  add("line", {x1: pad, y1: h - 18, x2: w - 8, y2: h - 18, class: "axis-line"});
  add("text", {x: 2, y: py(hi) + 4, class: "axis"}, fmt(hi));
  add("text", {x: 2, y: py(lo) + 4, class: "axis"}, fmt(lo));
  add("text", {x: pad, y: h - 4, class: "axis"}, String(x0));
  add("text", {x: w - 30, y: h - 4, class: "axis"}, String(x1));
  lines.forEach((line, i) => {
    if (!line.ys.length) return;
    const points = line.xs.map((x, j) => `${px(x).toFixed(1)},${py(line.ys[j]).toFixed(1)}`).join(" ");
    add("polyline", {points, class: `mseries m${i % 8}`});
  });
}

multiLineChart(document.getElementById("chart-net"), "net_assets");
multiLineChart(document.getElementById("chart-rating"), "rating");
multiLineChart(document.getElementById("chart-orders"), "orders", {min: 0});

async function poll() {
  const resp = await fetch(`/markets/progress?path=${encodeURIComponent(MARKET.path)}`);
  if (!resp.ok) return;
  const market = await resp.json();
  document.querySelector("[data-progress]").textContent =
    `${market.windows_done} / ${market.windows_total}`;
  document.querySelector("[data-status]").textContent = market.status;
  if (market.status === "running") setTimeout(poll, 3000);
  else location.reload();  // finished: the shares and contested products are ready
}
if (MARKET.status === "running") setTimeout(poll, 3000);
