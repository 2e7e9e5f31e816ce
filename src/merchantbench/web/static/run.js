// A run's page: charts from its record, and the trace viewer one window at a time: what the
// agent saw, what the model said, what it called, what came back (from the record's files, via
// /runs/trace; drawn by trace_view.js).
"use strict";
const RUN_PATH = document.getElementById("run-script").dataset.path;
const series = pageData("series");
lineChart(document.getElementById("chart-net"), series.window, series.net_assets);
lineChart(document.getElementById("chart-rating"), series.window, series.rating);
lineChart(document.getElementById("chart-orders"), series.window, series.orders, {min: 0});

const pickWindow = document.getElementById("window-pick");
const lastWindow = () => Math.max(1, Number(pickWindow.max) || 1);
const clampWindow = (w) => Math.min(lastWindow(), Math.max(1, Math.round(Number(w)) || 1));
let shown = 0;  // the window on screen (1-based), 0 before the first

async function showWindow(w) {
  w = clampWindow(w);
  pickWindow.value = w;
  const resp = await fetch(`/runs/trace?path=${encodeURIComponent(RUN_PATH)}&window=${w - 1}`);
  const box = document.getElementById("trace");
  if (!resp.ok) {
    box.replaceChildren(el("p", {class: "note"}, "This window could not be read from the record."));
    return;
  }
  const body = await resp.json();
  if (body.windows > 0 && body.windows !== lastWindow()) {
    pickWindow.max = body.windows;  // a running run's record grows
    document.getElementById("window-count").textContent = `of ${body.windows}`;
  }
  shown = w;
  history.replaceState(null, "", `#window=${w}`);
  box.replaceChildren(...windowParts(w, body));
  document.getElementById("window-prev").disabled = w <= 1;
  document.getElementById("window-next").disabled = w >= lastWindow();
  const errors = body.calls.filter((c) => !c.ok).length;
  document.getElementById("window-status").textContent =
    `Window ${w} of ${lastWindow()}: ${body.calls.length} calls, ${errors} errors`;
}

function onKey(ev) {
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === "ArrowLeft" && shown > 1) { ev.preventDefault(); showWindow(shown - 1); }
  else if (ev.key === "ArrowRight" && shown < lastWindow()) { ev.preventDefault(); showWindow(shown + 1); }
}

pickWindow.addEventListener("change", () => showWindow(pickWindow.value));
pickWindow.addEventListener("keydown", (ev) => { if (ev.key === "Enter") showWindow(pickWindow.value); });
document.getElementById("window-go").addEventListener("click", () => showWindow(pickWindow.value));
document.getElementById("window-prev").addEventListener("click", () => showWindow(shown - 1));
document.getElementById("window-next").addEventListener("click", () => showWindow(shown + 1));
document.getElementById("calls-open").addEventListener("click", () => openAll(true));
document.getElementById("calls-close").addEventListener("click", () => openAll(false));
document.addEventListener("keydown", onKey);
showWindow((location.hash.match(/^#window=(\d+)$/) || [])[1] || 1);
