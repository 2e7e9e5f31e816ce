// The dashboard's list of markets: the progress of each running market, polled until it ends.
"use strict";
(() => {
  async function poll(row) {
    const path = row.dataset.market;
    const resp = await fetch(`/markets/progress?path=${encodeURIComponent(path)}`);
    if (!resp.ok) return;
    const market = await resp.json();
    const status = row.querySelector("[data-status]");
    status.textContent = market.status;
    status.classList.toggle("running", market.status === "running");
    row.querySelector("[data-progress]").textContent =
      `${market.windows_done} / ${market.windows_total}`;
    if (market.status === "running") setTimeout(() => poll(row), 3000);
  }
  for (const row of document.querySelectorAll("tr[data-market]")) {
    if (row.querySelector("[data-status].running")) setTimeout(() => poll(row), 3000);
  }
})();
