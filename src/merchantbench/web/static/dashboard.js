// Live progress of running runs: poll the progress list and update their rows.
"use strict";
async function poll() {
  const resp = await fetch("/runs/progress");
  if (!resp.ok) return;
  let running = false;
  for (const run of await resp.json()) {
    const row = document.querySelector(`tr[data-path="${CSS.escape(run.path)}"]`);
    if (!row) continue;
    row.querySelector("[data-status]").textContent = run.status;
    row.querySelector("[data-progress]").textContent = `${run.windows_done} / ${run.windows_total}`;
    if (run.status === "running") running = true;
  }
  if (running) setTimeout(poll, 3000);
}
if (document.querySelector(".running")) setTimeout(poll, 3000);
