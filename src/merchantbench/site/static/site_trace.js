// A run page of the static site: the trace viewer one window at a time (drawn by
// trace_view.js). Each window is a script beside the page (trace/wN.js) that calls
// MB_TRACE_WINDOW(N, view): a script, not a fetch, so the page works from file:// too.
"use strict";
const pickWindow = document.getElementById("window-pick");
const lastWindow = () => Math.max(1, Number(pickWindow.max) || 1);
const clampWindow = (w) => Math.min(lastWindow(), Math.max(1, Math.round(Number(w)) || 1));
const loaded = new Map();  // window -> its view
const waiting = new Map();  // window -> resolve of its loading promise
let shown = 0;  // the window on screen (1-based), 0 before the first

window.MB_TRACE_WINDOW = (w, view) => {
  loaded.set(w, view);
  const done = waiting.get(w);
  if (done) { waiting.delete(w); done(view); }
};

function loadWindow(w) {
  if (loaded.has(w)) return Promise.resolve(loaded.get(w));
  return new Promise((resolve, reject) => {
    waiting.set(w, resolve);
    const script = el("script", {src: `trace/w${w}.js`, charset: "utf-8"});
    script.onerror = () => { waiting.delete(w); reject(new Error(`window ${w} is missing`)); };
    script.onload = () => script.remove();
    document.head.appendChild(script);
  });
}

async function showWindow(w) {
  w = clampWindow(w);
  pickWindow.value = w;
  const box = document.getElementById("trace");
  let body;
  try {
    body = await loadWindow(w);
  } catch (err) {
    box.replaceChildren(el("p", {class: "note"}, "This window is not in the site."));
    return;
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
