// The trace viewer's rendering of one window, shared by the dashboard (run.js, which fetches a
// window from /runs/trace) and the static site (which loads it from a file beside the page):
// what the agent saw, what the model said (its reasoning, its text), each call it made and
// what came back. windowParts(w, body) takes the JSON of web/windows.py's window_view.
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
