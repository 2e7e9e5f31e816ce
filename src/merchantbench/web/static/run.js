// A run's page: charts from its record, and the trace viewer one window at a time: what the
// agent saw, what it called, what came back (from the record's files, via /runs/trace).
"use strict";
const RUN_PATH = document.getElementById("run-script").dataset.path;
const series = pageData("series");
lineChart(document.getElementById("chart-net"), series.window, series.net_assets);
lineChart(document.getElementById("chart-rating"), series.window, series.rating);
lineChart(document.getElementById("chart-orders"), series.window, series.orders, {min: 0});

const pickWindow = document.getElementById("window-pick");
// JSON pretty-printed, but what fits on a line stays on one, and so does a list of plain
// values (a table's columns, one of its rows).
const plain = (v) => v === null || typeof v !== "object";
function oneLine(value) {
  if (plain(value)) return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(oneLine).join(", ")}]`;
  return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${oneLine(v)}`).join(", ")}}`;
}
function pretty(value, indent = "") {
  const flat = oneLine(value);
  if (plain(value) || flat.length + indent.length <= 96) return flat;
  if (Array.isArray(value) && value.every(plain)) return flat;
  const inner = indent + "  ";
  const parts = Array.isArray(value)
    ? value.map((v) => inner + pretty(v, inner))
    : Object.entries(value).map(([k, v]) => `${inner}${JSON.stringify(k)}: ${pretty(v, inner)}`);
  const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  return `${open}\n${parts.join(",\n")}\n${indent}${close}`;
}
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

function windowParts(w, body) {
  const parts = [el("h3", {id: "window-title"}, `Window ${w}: ${body.calls.length} calls`)];
  if (!body.transcript) {
    parts.push(el("p", {class: "note", id: "no-transcript"},
      "This record has no transcript.jsonl (written before transcripts existed, or with --no-transcript): " +
      "the calls are shown, but not the observation or the answers."));
  } else {
    parts.push(el("h4", {}, "What the agent saw as the window opened"));
    parts.push(el("pre", {class: "observation", id: "observation"}, body.observation ?? "(no observation: the run had ended)"));
  }
  parts.push(el("h4", {}, "Calls and answers"));
  const list = el("ol", {class: "calls", id: "calls"});
  for (const call of body.calls) list.appendChild(callItem(call, body.transcript));
  parts.push(list);
  if (body.model_calls.length) parts.push(el("h4", {}, "Model calls"), modelTable(body.model_calls));
  return parts;
}

function callItem(call, transcript) {
  const li = el("li", {class: `call${call.ok ? "" : " error"}${call.forced ? " forced" : ""}`, "data-seq": call.seq});
  const details = el("details");
  const summary = el("summary");
  summary.append(el("span", {class: "seq"}, `#${call.seq}`), ` hour ${call.t} · `, el("strong", {}, call.tool), ` · ${call.origin}`);
  summary.append(" ", el("span", {class: call.ok ? "badge ok" : "badge bad"}, call.ok ? "ok" : `error: ${call.error}`));
  if (call.forced) summary.append(" ", el("span", {class: "badge forced"}, "forced close"));
  details.appendChild(summary);
  details.append(el("h5", {}, "Arguments"), el("pre", {class: "json args"}, pretty(call.args)));
  details.appendChild(el("h5", {}, "Answer"));
  if (call.answered && call.answer !== null) details.appendChild(el("pre", {class: "json answer"}, pretty(call.answer)));
  else if (call.answered) details.appendChild(el("p", {class: "note"}, "A framework tool of the agent's harness: its answer stays in the harness."));
  else details.appendChild(el("p", {class: "note"}, transcript ? "Not in the transcript." : "Not recorded (no transcript)."));
  li.appendChild(details);
  return li;
}

function modelTable(calls) {
  const cols = [["seq", "#"], ["model", "model"], ["input_tokens", "input tokens"], ["cached_tokens", "cached"],
                ["output_tokens", "output tokens"], ["latency_s", "latency (s)"], ["finish_reason", "finish"],
                ["retries", "retries"], ["tool_calls", "tool calls"], ["error", "error"]];
  const table = el("table", {class: "data", id: "model-calls"});
  const head = el("tr");
  for (const [, label] of cols) head.appendChild(el("th", {scope: "col"}, label));
  table.appendChild(el("thead")).appendChild(head);
  const rows = el("tbody");
  for (const call of calls) {
    const tr = el("tr");
    for (const [key] of cols) tr.appendChild(el("td", {"data-key": key}, call[key] ?? "—"));
    rows.appendChild(tr);
  }
  table.appendChild(rows);
  return table;
}

function openAll(open) {
  for (const d of document.querySelectorAll("#calls details")) d.open = open;
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
