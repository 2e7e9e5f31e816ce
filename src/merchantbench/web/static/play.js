// The playground page: every action is one tool call through the run's agent surface. What the
// page knows of the server's business (which tools change the store, which one ends the window,
// the basket's first price, the clock's wording) comes from the server: the page's config and
// each state answer.
"use strict";
const CONFIG = pageData("play-config");
const BASE = `/play/${encodeURIComponent(CONFIG.token)}`;
const WRITE_TOOLS = new Set(CONFIG.write_tools);
const basket = new Map();  // product_id -> {title, cost, price}
let busy = false;
let shownWindow = CONFIG.window;  // the window on screen (0-based, as the server counts)

const money = (v) => Number(v).toLocaleString("en-US", {minimumFractionDigits: 2, maximumFractionDigits: 2});
const newKey = () => `web-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;

function say(text) { $("#status").textContent = text; }

// --- actions -----------------------------------------------------------------------------------
// One user action: a tool call with its arguments, made in the window on screen, with one
// idempotency key when the tool changes the store. Each control (a form, the basket, a reprice
// cell, the notes, End window) keeps its last action: sending the same action again (Enter twice,
// a retry after a lost answer, the second click of a double click) sends the same key, so the
// server acts once; any change of tool, arguments or window makes a new action with a new key.
const lastActions = new Map();  // control -> its last action

function actionFor(control, tool, args, again) {
  const last = lastActions.get(control);
  const same = JSON.stringify([tool, args || {}, shownWindow]);
  if (last && (again || last.same === same)) return last;
  const action = {tool, args: args || {}, window: shownWindow, same, key: WRITE_TOOLS.has(tool) ? newKey() : null};
  lastActions.set(control, action);
  return action;
}

// A read from a link or a pager: no key, nothing to repeat.
const call = (tool, args, panel) => send({tool, args: args || {}, window: shownWindow, key: null}, panel);
// A control's action; `again`: the event repeats the control's last gesture (a double click's
// second click), whatever the screen shows since.
const act = (control, tool, args, panel, again) => send(actionFor(control, tool, args, again), panel);

async function send(action, panel) {
  if (busy) return null;
  busy = true;
  document.body.classList.add("busy");
  const tool = action.tool;
  try {
    const headers = {"Content-Type": "application/json", "X-Window": String(action.window)};
    if (action.key) headers["Idempotency-Key"] = action.key;
    const url = `${BASE}/call/${encodeURIComponent(tool)}`;
    const resp = await fetch(url, {method: "POST", headers, body: JSON.stringify(action.args)});
    const body = await resp.json();
    if (!resp.ok) { say(body.error || `the server answered ${resp.status}`); return null; }
    showState(body.state);
    const result = body.result;
    if (panel) render(result, $(`#results-${panel}`), tool);
    if (result.ok === false) say(`${tool.replaceAll("_", " ")}: ${result.error.message || result.error.code}`);
    else say(`${tool.replaceAll("_", " ")}: done`);
    return result;
  } catch (err) {
    say(`could not reach the server (${err}); your store is saved, try again`);
    return null;
  } finally {
    busy = false;
    document.body.classList.remove("busy");
  }
}

// --- results ---------------------------------------------------------------------------------
function render(result, box, tool) {
  box.replaceChildren();
  const head = el("h3", {}, tool.replaceAll("_", " "));
  box.appendChild(head);
  const pages = pager(result, tool, box.id.replace("results-", ""));
  if (pages) box.appendChild(pages);
  box.appendChild(renderValue(result, box.id === "results-listings"));
}

// A paged answer (search, listings, orders, ...): page P of N, previous and next. They re-send
// the tool's form with its page field moved, so every other filter stays as it was typed.
function pager(result, tool, panel) {
  const form = document.querySelector(`form[data-tool="${tool}"]`);
  const field = form && form.querySelector('input[name="page"]');
  if (!field || !result || typeof result.page !== "number" || typeof result.pages !== "number") return null;
  const last = Math.max(result.pages, 1);
  const nav = el("nav", {class: "pages", "aria-label": `${tool.replaceAll("_", " ")} pages`});
  const go = (page) => { field.value = page; act(`form:${tool}`, tool, formArgs(form), panel, false); };
  const prev = el("button", {type: "button", class: "page-prev", title: "Previous page ([)"}, "← Previous page");
  const next = el("button", {type: "button", class: "page-next", title: "Next page (])"}, "Next page →");
  prev.disabled = result.page <= 1;
  next.disabled = result.page >= last;
  prev.addEventListener("click", () => go(result.page - 1));
  next.addEventListener("click", () => go(result.page + 1));
  const total = typeof result.total === "number" ? ` (${result.total} results)` : "";
  nav.append(prev, el("span", {class: "page-of"}, `Page ${result.page} of ${last}${total}`), next);
  return nav;
}

function turnPage(which) {
  const panel = document.querySelector('[role="tabpanel"]:not([hidden])');
  const button = panel && panel.querySelector(`.pages .page-${which}`);
  if (button && !button.disabled) button.click();
}

function renderValue(value, mine) {
  if (value && typeof value === "object" && Array.isArray(value.columns) && Array.isArray(value.rows)) {
    const wrap = el("div");
    for (const [k, v] of Object.entries(value)) {
      if (k === "columns" || k === "rows" || k === "ok") continue;
      wrap.appendChild(renderValue({[k]: v}, mine));
    }
    wrap.appendChild(table(value.columns, value.rows, mine));
    return wrap;
  }
  if (Array.isArray(value)) {
    const list = el("ul");
    for (const item of value) { const li = el("li"); li.appendChild(renderValue(item, mine)); list.appendChild(li); }
    return list;
  }
  if (value && typeof value === "object") {
    const dl = el("dl", {class: "kv"});
    for (const [k, v] of Object.entries(value)) {
      if (k === "ok") continue;
      dl.appendChild(el("dt", {}, k.replaceAll("_", " ")));
      const dd = el("dd");
      dd.appendChild(renderValue(v, mine));
      dl.appendChild(dd);
    }
    return dl;
  }
  return el("span", {}, value === null ? "—" : value);
}

// `mine`: a table of my listings (tick to delist, reprice); else product rows can go to the basket.
function table(columns, rows, mine) {
  const t = el("table", {class: "data"});
  const tr = el("tr");
  const productCol = columns.indexOf("product_id");
  const listed = Boolean(mine) && columns.includes("sale_price");
  if (productCol >= 0) tr.appendChild(el("th", {scope: "col"}, listed ? "tick" : "list?"));
  for (const c of columns) tr.appendChild(el("th", {scope: "col"}, c.replaceAll("_", " ")));
  if (productCol >= 0 && listed) tr.appendChild(el("th", {scope: "col"}, "reprice"));
  t.appendChild(el("thead")).appendChild(tr);
  const body = el("tbody");
  for (const row of rows) body.appendChild(tableRow(columns, row, productCol, listed));
  t.appendChild(body);
  return t;
}

function tableRow(columns, row, productCol, listed) {
  const tr = el("tr");
  const pid = productCol >= 0 ? String(row[productCol]) : null;
  if (pid !== null) {
    const box = el("input", {type: "checkbox", "aria-label": `${listed ? "tick listing" : "add to the list basket"} ${pid}`, "data-product": pid});
    const td = el("td");
    td.appendChild(box);
    tr.appendChild(td);
    if (listed) box.classList.add("delist-pick");
    else {
      box.checked = basket.has(pid);
      box.addEventListener("change", () => pick(box.checked, pid, columns, row));
    }
  }
  row.forEach((cell, i) => {
    const td = el("td");
    const col = columns[i];
    if (col === "product_id") td.appendChild(link(cell, () => call("get_product_detail", {product_id: String(cell)}, "find")));
    else if (col === "supplier_id") td.appendChild(link(cell, () => call("get_supplier_profile", {supplier_id: String(cell)}, "find")));
    else if (col === "order_id") td.appendChild(link(cell, () => call("query_order_detail", {order_id: Number(cell)}, "orders")));
    else td.textContent = cell === null ? "—" : String(cell);
    tr.appendChild(td);
  });
  if (pid !== null && listed) tr.appendChild(repriceCell(pid, row[columns.indexOf("sale_price")]));
  return tr;
}

function link(text, onClick) {
  const b = el("button", {type: "button", class: "link"}, text);
  b.addEventListener("click", onClick);
  return b;
}

function repriceCell(pid, price) {
  const td = el("td");
  const input = el("input", {type: "number", step: "0.01", min: "0.01", value: price, "aria-label": `new price for ${pid}`, class: "reprice"});
  const go = el("button", {type: "button"}, "Set");
  go.addEventListener("click", async (ev) => {
    const args = {product_id: pid, sale_price: Number(input.value)};
    const r = await act(`reprice:${pid}`, "adjust_price", args, "listings", ev.detail > 1);
    if (r && r.ok) refreshListings();
  });
  td.append(input, go);
  return td;
}

// --- the basket: several products listed at once ----------------------------------------------
function pick(on, pid, columns, row) {
  const cost = Number(row[columns.indexOf("price")]);
  const title = row[columns.indexOf("title")];
  if (on) basket.set(pid, {title, cost, price: Math.round(cost * CONFIG.default_price_multiple * 100) / 100});
  else basket.delete(pid);
  drawBasket();
}

function drawBasket() {
  const rows = $("#basket-rows");
  rows.replaceChildren();
  for (const [pid, item] of basket) {
    const tr = el("tr");
    tr.appendChild(el("td", {}, `${item.title || ""} (${pid})`));
    tr.appendChild(el("td", {}, money(item.cost)));
    const td = el("td");
    const input = el("input", {type: "number", step: "0.01", min: "0.01", value: item.price.toFixed(2), "aria-label": `sale price for ${pid}`, "data-basket": pid});
    input.addEventListener("input", () => { item.price = Number(input.value); });
    td.appendChild(input);
    tr.appendChild(td);
    const rm = el("td");
    rm.appendChild(link("remove", () => { basket.delete(pid); drawBasket(); }));
    tr.appendChild(rm);
    rows.appendChild(tr);
  }
  $("#basket-count").textContent = basket.size;
}

async function listBasket(ev) {
  if (!basket.size) { say("tick products in a search result first"); return; }
  const items = [...basket].map(([pid, item]) => ({product_id: pid, sale_price: Number(item.price.toFixed(2))}));
  const r = await act("basket", "list_product", {items}, "find", ev.detail > 1);
  if (r && r.ok) { basket.clear(); drawBasket(); }
}

async function delistTicked(ev) {
  const ids = [...document.querySelectorAll("#panel-listings .delist-pick:checked")].map((b) => b.dataset.product);
  if (!ids.length) { say("tick listings in the table first"); return; }
  const r = await act("delist", "delist_product", {product_ids: [...new Set(ids)]}, "listings", ev.detail > 1);
  if (r && r.ok) refreshListings();
}

function refreshListings() {
  const form = document.querySelector('form[data-tool="query_my_listings"]');
  if (form) call("query_my_listings", formArgs(form), "listings");
}

// --- forms -------------------------------------------------------------------------------------
function formArgs(form) {
  const args = {};
  for (const input of form.querySelectorAll("input, select")) {
    const raw = input.value.trim();
    if (raw === "") continue;
    const kind = input.dataset.kind;
    args[input.name] = kind === "integer" ? parseInt(raw, 10) : kind === "number" ? Number(raw) : raw;
  }
  return args;
}

function wireForms() {
  for (const form of document.querySelectorAll("form.tool")) {
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const panel = form.closest("section").id.replace("panel-", "");
      act(`form:${form.dataset.tool}`, form.dataset.tool, formArgs(form), panel, false);
    });
  }
}

// --- state: clock, what changed, charts --------------------------------------------------------
function showState(state) {
  shownWindow = state.store.window;
  $("#clock").textContent = state.clock.text;
  const hist = state.history;
  if (state.net_assets !== null) $("#net-assets").textContent = money(state.net_assets);
  $("#observation").textContent = state.observation;
  $("#paused").hidden = !state.paused || state.over;
  $("#finished").hidden = !state.over;
  if (state.over && state.final) {
    const dl = $("#final");
    dl.replaceChildren();
    for (const [k, v] of Object.entries(state.final)) { dl.appendChild(el("dt", {}, k.replaceAll("_", " "))); dl.appendChild(el("dd", {}, v)); }
  }
  showChanges(hist);
  const xs = hist.map((p) => p.window + 1);
  lineChart($("#chart-net"), xs, hist.map((p) => p.net_assets));
  lineChart($("#chart-rating"), xs, hist.map((p) => p.rating));
  lineChart($("#chart-orders"), xs, hist.map((p) => p.orders), {min: 0});
}

function showChanges(hist) {
  const box = $("#changes");
  box.replaceChildren();
  if (hist.length < 2) { box.appendChild(el("p", {}, "This is your first window: start by finding products to sell.")); return; }
  const now = hist[hist.length - 1], before = hist[hist.length - 2];
  const delta = (v, digits) => (v >= 0 ? "+" : "−") + Math.abs(v).toFixed(digits);
  const items = [
    ["new orders", now.orders - before.orders],
    ["net assets", `${money(now.net_assets)} RMB (${delta(now.net_assets - before.net_assets, 2)})`],
    ["rating", `${now.rating.toFixed(2)} (${delta(now.rating - before.rating, 2)})`],
    ["orders so far", now.orders],
  ];
  const dl = el("dl", {class: "kv changes-list"});
  for (const [k, v] of items) { dl.appendChild(el("dt", {}, k)); dl.appendChild(el("dd", {}, v)); }
  box.appendChild(dl);
}

async function refresh() {
  const resp = await fetch(`${BASE}/state`);
  if (resp.ok) showState(await resp.json());
}

// --- tabs, keys, tour --------------------------------------------------------------------------
function showPanel(key) {
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    const on = tab.dataset.panel === key;
    tab.setAttribute("aria-selected", on ? "true" : "false");
    document.getElementById(`panel-${tab.dataset.panel}`).hidden = !on;
  }
  if (key === "notes") notesShown();
}

function openHelp(show) {
  $("#help").hidden = !show;
  if (show) $("#help-close").focus();
  else localStorage.setItem("merchantbench-tour-seen", "1");
}

async function endWindow(again) {
  const r = await act("end", CONFIG.window_closer, {}, null, again);
  if (r && r.ok !== false) { showPanel("today"); say("a new window is open: see what changed"); }
}

function onKey(ev) {
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (ev.key === "Escape") { openHelp(false); return; }
  if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  if (/^[1-9]$/.test(ev.key) && tabs[Number(ev.key) - 1]) { showPanel(tabs[Number(ev.key) - 1].dataset.panel); return; }
  if (ev.key === "/") { ev.preventDefault(); showPanel("find"); document.getElementById("f-search_products-query").focus(); }
  else if ((ev.key === "e" || ev.key === "E") && !ev.repeat) endWindow(false);
  else if (ev.key === "p" || ev.key === "P") pause();
  else if (ev.key === "?") openHelp(true);
  else if (ev.key === "[") turnPage("prev");
  else if (ev.key === "]") turnPage("next");
}

async function pause() {
  const resp = await fetch(`${BASE}/pause`, {method: "POST"});
  if (resp.ok) { showState(await resp.json()); say("paused and saved: come back any time with this link"); }
}

async function resume() {
  const resp = await fetch(`${BASE}/resume`, {method: "POST"});
  if (resp.ok) { showState(await resp.json()); showPanel("today"); say("welcome back: your store waited for you"); }
}

let notesWindow = null;  // the window whose notes were last loaded
function notesShown() {
  if (notesWindow !== shownWindow) { notesWindow = shownWindow; loadNotes(); }
}

async function loadNotes() {
  const r = await call("read_memory_doc", {}, null);
  if (r && r.ok) $("#notes-text").value = r.content || "";
}

function wire() {
  wireForms();
  for (const tab of document.querySelectorAll('[role="tab"]')) tab.addEventListener("click", () => showPanel(tab.dataset.panel));
  $("#end-window").addEventListener("click", (ev) => endWindow(ev.detail > 1));
  $("#pause").addEventListener("click", pause);
  $("#resume").addEventListener("click", resume);
  $("#help-open").addEventListener("click", () => openHelp(true));
  $("#help-close").addEventListener("click", () => openHelp(false));
  $("#list-basket").addEventListener("click", listBasket);
  $("#delist").addEventListener("click", delistTicked);
  $("#notes-save").addEventListener("click", (ev) => {
    act("notes", "write_memory_doc", {content: $("#notes-text").value, mode: "replace"}, null, ev.detail > 1);
  });
  $("#notes-load").addEventListener("click", loadNotes);
  document.addEventListener("keydown", onKey);
  if (!localStorage.getItem("merchantbench-tour-seen")) openHelp(true);
  refresh();
}
wire();
