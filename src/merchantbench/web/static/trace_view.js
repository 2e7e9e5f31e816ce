// The trace viewer, shared by the dashboard (run.js, which fetches a window from /runs/trace)
// and the static site (site_trace.js, which loads it from a file beside the page): the
// rendering of one window (what the agent saw, what the model said, each call it made and what
// came back; windowParts(w, body) takes the JSON of web/windows.py's window_view), and the
// navigation between windows (windowPager, on the pager of web/templates/_trace_pager.html).
"use strict";
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
  const words = body.model_words || [];
  parts.push(el("h4", {}, words.length ? "What the model said, its calls and their answers" : "Calls and answers"));
  const list = el("ol", {class: "calls", id: "calls"});
  for (const item of interleave(words, body.calls)) {
    list.appendChild(item.words ? wordsItem(item.words) : callItem(item.call, body.transcript));
  }
  parts.push(list);
  if (body.model_calls.length) parts.push(el("h4", {}, "Model calls"), modelTable(body.model_calls));
  return parts;
}

// The model's words in order, each followed by the trace entries of the tool calls it made
// (matched by tool name in order; a call the harness refused has no entry), then any entry no
// words claimed (a forced close, a call made without a model).
function interleave(words, calls) {
  const items = [];
  let next = 0;
  const bare = (name) => String(name ?? "").split("__").pop();
  for (const said of words) {
    items.push({words: said});
    for (const tc of said.tool_calls || []) {
      const at = calls.findIndex((c, i) => i >= next && bare(c.tool) === bare(tc.name));
      if (at < 0) continue;
      for (; next < at; next++) items.push({call: calls[next]});
      items.push({call: calls[next++]});
    }
  }
  for (; next < calls.length; next++) items.push({call: calls[next]});
  return items;
}

function wordsItem(said) {
  const li = el("li", {class: "words", "data-model-seq": said.seq});
  const head = el("p", {class: "who"});
  head.append(el("span", {class: "seq"}, `model call ${said.seq}`));
  if (said.error) head.append(" ", el("span", {class: "badge bad"}, `failed: ${said.error}`));
  li.appendChild(head);
  if (said.reasoning) li.append(el("h5", {}, "Reasoning"), el("p", {class: "reasoning"}, said.reasoning));
  if (said.content) li.append(el("h5", {}, "Said"), el("p", {class: "said"}, said.content));
  if (!said.reasoning && !said.content && !said.error) li.appendChild(el("p", {class: "note"}, "No words: only tool calls."));
  const names = (said.tool_calls || []).map((c) => c.name).filter(Boolean);
  if (names.length) li.appendChild(el("p", {class: "called"}, `Calls: ${names.join(", ")}`));
  return li;
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

// The pager: previous/next, the window field (Enter or Go), the arrow keys, the window in the
// address (#window=N). `load(w)` resolves to window w's view (it may reject); `onLoaded(view)`
// runs before the window is drawn. One navigation draws its window once (the field's change
// and its Enter, or Go, ask for the same window), and the newest navigation wins over one
// still loading.
function windowPager(load, failNote, onLoaded = () => {}) {
  const pick = document.getElementById("window-pick");
  const last = () => Math.max(1, Number(pick.max) || 1);
  const clamp = (w) => Math.min(last(), Math.max(1, Math.round(Number(w)) || 1));
  let shown = 0;  // the window on screen (1-based), 0 before the first
  let wanted = 0;  // the window last asked for: on screen, or on its way

  async function show(w) {
    w = clamp(w);
    pick.value = w;
    if (w === wanted) return;
    wanted = w;
    let body = null;
    try { body = await load(w); } catch (err) { body = null; }
    if (w !== wanted) return;  // a later navigation took over
    const box = document.getElementById("trace");
    if (body === null) {
      wanted = 0;  // asking again tries again
      box.replaceChildren(el("p", {class: "note"}, failNote));
      return;
    }
    onLoaded(body);
    shown = w;
    history.replaceState(null, "", `#window=${w}`);
    box.replaceChildren(...windowParts(w, body));
    document.getElementById("window-prev").disabled = w <= 1;
    document.getElementById("window-next").disabled = w >= last();
    const errors = body.calls.filter((c) => !c.ok).length;
    document.getElementById("window-status").textContent =
      `Window ${w} of ${last()}: ${body.calls.length} calls, ${errors} errors`;
  }

  function onKey(ev) {
    const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "ArrowLeft" && shown > 1) { ev.preventDefault(); show(shown - 1); }
    else if (ev.key === "ArrowRight" && shown < last()) { ev.preventDefault(); show(shown + 1); }
  }

  pick.addEventListener("change", () => show(pick.value));
  pick.addEventListener("keydown", (ev) => { if (ev.key === "Enter") show(pick.value); });
  document.getElementById("window-go").addEventListener("click", () => show(pick.value));
  document.getElementById("window-prev").addEventListener("click", () => show(shown - 1));
  document.getElementById("window-next").addEventListener("click", () => show(shown + 1));
  document.getElementById("calls-open").addEventListener("click", () => openAll(true));
  document.getElementById("calls-close").addEventListener("click", () => openAll(false));
  document.addEventListener("keydown", onKey);
  show((location.hash.match(/^#window=(\d+)$/) || [])[1] || 1);
}
