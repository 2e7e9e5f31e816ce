// A run's page: charts from its record, and its trace one window at a time.
"use strict";
const RUN_PATH = document.getElementById("run-script").dataset.path;
const series = JSON.parse(document.getElementById("series").textContent);
lineChart(document.getElementById("chart-net"), series.window, series.net_assets);
lineChart(document.getElementById("chart-rating"), series.window, series.rating);
lineChart(document.getElementById("chart-orders"), series.window, series.orders, {min: 0});

const pickWindow = document.getElementById("window-pick");
const cell = (tag, text) => { const n = document.createElement(tag); n.textContent = text; return n; };

async function showWindow() {
  const w = Math.max(1, parseInt(pickWindow.value, 10) || 1);
  const resp = await fetch(`/runs/trace?path=${encodeURIComponent(RUN_PATH)}&window=${w - 1}`);
  const box = document.getElementById("trace");
  box.replaceChildren();
  if (!resp.ok) { box.appendChild(cell("p", "no trace for that window")); return; }
  const body = await resp.json();
  box.appendChild(cell("h3", `Window ${w}: ${body.trace.length} calls`));
  const table = document.createElement("table");
  table.className = "data";
  const head = document.createElement("tr");
  for (const c of ["#", "hour", "tool", "arguments", "result", "origin"]) { const th = cell("th", c); th.scope = "col"; head.appendChild(th); }
  table.appendChild(document.createElement("thead")).appendChild(head);
  const rows = document.createElement("tbody");
  for (const e of body.trace) {
    const tr = document.createElement("tr");
    tr.append(cell("td", e.seq), cell("td", e.t), cell("td", e.tool), cell("td", JSON.stringify(e.args)),
              cell("td", e.ok ? "ok" : `error: ${e.error}`), cell("td", e.origin + (e.forced ? " (forced)" : "")));
    rows.appendChild(tr);
  }
  table.appendChild(rows);
  box.appendChild(table);
  for (const call of body.model_calls) {
    const d = document.createElement("details");
    d.appendChild(cell("summary", `model call ${call.seq ?? ""}`));
    d.appendChild(cell("pre", JSON.stringify(call, null, 1)));
    box.appendChild(d);
  }
}
pickWindow.addEventListener("change", showWindow);
document.getElementById("window-prev").addEventListener("click", () => { pickWindow.value = Math.max(1, Number(pickWindow.value) - 1); showWindow(); });
document.getElementById("window-next").addEventListener("click", () => { pickWindow.value = Math.min(Number(pickWindow.max), Number(pickWindow.value) + 1); showWindow(); });
showWindow();
