// A run page of the static site: the trace viewer one window at a time (windowPager and the
// drawing: trace_view.js). Each window is a script beside the page (trace/wN.js) that calls
// MB_TRACE_WINDOW(N, view): a script, not a fetch, so the page works from file:// too.
"use strict";
const loaded = new Map();  // window -> its view
const waiting = new Map();  // window -> resolve of its loading promise

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

windowPager(loadWindow, "This window is not in the site.");
