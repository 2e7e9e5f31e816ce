// A run's page: charts from its record, and the trace viewer one window at a time, each window
// fetched from /runs/trace (windowPager and the drawing: trace_view.js).
"use strict";
const RUN_PATH = document.getElementById("run-script").dataset.path;
const series = pageData("series");
lineChart(document.getElementById("chart-net"), series.window, series.net_assets);
lineChart(document.getElementById("chart-rating"), series.window, series.rating);
lineChart(document.getElementById("chart-orders"), series.window, series.orders, {min: 0});

async function fetchWindow(w) {
  const resp = await fetch(`/runs/trace?path=${encodeURIComponent(RUN_PATH)}&window=${w - 1}`);
  if (!resp.ok) throw new Error(`window ${w}: HTTP ${resp.status}`);
  return resp.json();
}

function recordGrew(body) {
  const pick = document.getElementById("window-pick");
  if (body.windows > 0 && body.windows !== Number(pick.max)) {
    pick.max = body.windows;  // a running run's record grows
    document.getElementById("window-count").textContent = `of ${body.windows}`;
  }
}

windowPager(fetchWindow, "This window could not be read from the record.", recordGrew);
