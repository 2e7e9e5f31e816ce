// The playground page: every action is one tool call through the run's agent surface. What the
// page knows of the server's business (which tools change the store, which one ends the window,
// the basket's first price, the clock's wording, the digest) comes from the server: the page's
// config and each state answer. format.js writes values; digest.js draws the digest.
"use strict";
const CONFIG = pageData("play-config");
const BASE = `/play/${encodeURIComponent(CONFIG.token)}`;
const WRITE_TOOLS = new Set(CONFIG.write_tools);
const basket = new Map();  // product_id -> {title, cost, price}
let busy = 0;  // calls under way or waiting their turn (the page shows `body.busy` meanwhile)
let queue = Promise.resolve();  // the page's calls go to the server one at a time, in order
let shownWindow = CONFIG.window;  // the window on screen (0-based, as the server counts)
let listed = new Set();  // product ids of my listings (state.listed)
let paused = false, over = false;
let store = {active_listings: 0, listing_cap: 0};  // the last store status
let finesPerOrder = 0;  // fines charged so far per order (the state's `fines_per_order`)
const loadedIn = new Map();  // section -> the window its data was last loaded in

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

async function post(path, headers, body) {
  const resp = await fetch(`${BASE}${path}`, {method: "POST", headers: {"Content-Type": "application/json", ...headers}, body: JSON.stringify(body)});
  const answer = await resp.json();
  if (!resp.ok) throw new Error(answer.error || `the server answered ${resp.status}`);
  return answer;
}

// Calls go one at a time (each answer's state is drawn before the next call goes out). A call
// that comes while another is under way waits its turn: a click on an order while a table is
// still loading, or E pressed while Today's report loads, is never lost. A call that changes
// the store while another change is under way is dropped instead: it is the second click of a
// double click (the first one acts).
let writing = 0;  // changes under way or waiting their turn
function send(action, panel) {
  const read = !WRITE_TOOLS.has(action.tool) && action.tool !== CONFIG.window_closer;
  if (paused) { say("the store is paused: press Continue first (nothing was done)"); return Promise.resolve(null); }
  if (read) return inTurn(() => sendNow(action, panel));
  if (writing) return Promise.resolve(null);
  writing += 1;
  return inTurn(() => sendNow(action, panel)).finally(() => { writing -= 1; });
}

// Run `job` (a request and the drawing of its answer) after every request before it.
function inTurn(job) {
  working(1);
  const turn = queue.then(job);
  queue = turn.catch(() => null);
  return turn.finally(() => working(-1));
}

function working(step) {
  busy += step;
  document.body.classList.toggle("busy", busy > 0);
}

async function sendNow(action, panel) {
  const tool = action.tool;
  try {
    const headers = {"X-Window": String(action.window)};
    if (action.key) headers["Idempotency-Key"] = action.key;
    const body = await post(`/call/${encodeURIComponent(tool)}`, headers, action.args);
    showState(body.state);
    const result = body.result;
    if (panel) { render(result, $(`#results-${panel}`), tool); remember(panel, tool, action.args, result); }
    if (result.ok === false && STALE_CODES.has(result.error.code) && tool !== CONFIG.window_closer) say(`this tab was behind: the store is at window ${shownWindow + 1} now, nothing was done; look again and redo it`);
    else if (result.ok === false) say(`${words(tool)}: ${errorText(result.error)}`);
    else say(`${words(tool)}: done`);
    return result;
  } catch (err) {
    say(`could not reach the server (${err.message || err}); your store is saved, try again`);
    return null;
  }
}

// Refusals of a write made for a window that is no longer open (another tab moved on).
const STALE_CODES = new Set(["window_ended", "window_closed"]);
const errorText = (error) => `${words(error.code)}: ${error.message || ""}${error.path ? ` (${error.path})` : ""}`;

// --- results ---------------------------------------------------------------------------------
function render(result, box, tool) {
  box.replaceChildren();
  const day = tool === "get_daily_report" && typeof result.day === "number" ? ` of Day ${result.day}` : "";
  box.appendChild(el("h3", {}, words(tool) + day));
  if (result.ok === false) {
    box.appendChild(el("p", {class: "error"}, errorText(result.error)));
  } else {
    const pages = pager(result, tool, box.id.replace("results-", ""));
    if (pages) box.appendChild(pages);
    box.appendChild(renderAnswer(result, tool));
  }
  box.appendChild(rawBlock(result));
}

// A paged answer (search, listings, orders, ...): page P of N, previous and next. They re-send
// the tool's form with its page field moved, so every other filter stays as it was typed.
function pager(result, tool, panel) {
  const form = document.querySelector(`form[data-tool="${tool}"]`);
  const field = form && form.querySelector('input[name="page"]');
  if (!field || !result || typeof result.page !== "number" || typeof result.pages !== "number") return null;
  const last = Math.max(result.pages, 1);
  const nav = el("nav", {class: "pages", "aria-label": `${words(tool)} pages`});
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

const MY_LISTING_TOOLS = new Set(["review_my_listings", "query_my_listings"]);
const SEARCH_TOOLS = new Set(["search_products", "list_supplier_products"]);

const PAGER_KEYS = new Set(["page", "pages", "total", "page_size", "query"]);
function renderAnswer(result, tool) {
  if (tool === "query_platform_rules" && typeof result.rules === "string") return rulesSections(result.rules);
  if (tool === "get_daily_report") keywordChips(result);
  const wrap = el("div", {class: "answer"});
  // A paged table's page, size and total are in its pager; its query is in the form above.
  const paged = isTable(result) && typeof result.page === "number";
  const shown = (k) => !(paged && PAGER_KEYS.has(k));
  const scalars = Object.entries(result).filter(([k, v]) => k !== "ok" && k !== "columns" && k !== "rows" && isScalar(v) && shown(k));
  if (scalars.length) wrap.appendChild(factsTable(scalars));
  if (isTable(result)) {
    if (SEARCH_TOOLS.has(tool) && !result.rows.length) wrap.appendChild(emptySearch(result));
    else wrap.appendChild(dataTable(result.columns, result.rows, MY_LISTING_TOOLS.has(tool)));
    if (tool === "review_my_listings") tickByAlert(result);
  }
  for (const [k, v] of Object.entries(result)) {
    if (k === "columns" || k === "rows" || isScalar(v)) continue;
    wrap.appendChild(el("h4", {}, words(k)));
    if (isTable(v)) wrap.appendChild(dataTable(v.columns, v.rows, false));
    else if (Array.isArray(v)) wrap.appendChild(k.endsWith("keywords") ? keywordTable(v) : objectsTable(v));
    else if (v && typeof v === "object") wrap.appendChild(factsTable(Object.entries(v).map(([a, b]) => [a, isScalar(b) ? b : JSON.stringify(b)])));
  }
  return wrap;
}

// Hot and rising keywords, each one click from its search.
function keywordTable(items) {
  const t = objectsTable(items);
  const col = [...t.querySelectorAll("thead th")].findIndex((th) => th.textContent === "keyword");
  if (col < 0) return t;
  for (const tr of t.querySelectorAll("tbody tr")) {
    const td = tr.children[col];
    const word = td.textContent;
    td.replaceChildren(link(word, () => searchFor(word)));
  }
  return t;
}

// The daily report's keywords, also above the search (each one click from its results).
function keywordChips(report) {
  const box = $("#find-keywords");
  box.replaceChildren();
  const hot = (report.hot_keywords || []).map((k) => k.keyword);
  const rising = (report.rising_keywords || []).map((k) => k.keyword).filter((k) => !hot.includes(k));
  if (!hot.length && !rising.length) return;
  box.appendChild(el("span", {class: "muted"}, `Day ${report.day} keywords: `));
  for (const word of [...hot, ...rising]) box.appendChild(link(word, () => searchFor(word)));
}

function emptySearch(result) {
  const box = el("div", {class: "empty"});
  const query = String(result.query || "").trim();
  box.appendChild(el("p", {}, query
    ? `No product matches every word of "${query}" with these filters.`
    : "No product matches these filters."));
  const tries = el("p", {}, "Try: ");
  const words_ = query.split(/\s+/).filter(Boolean);
  if (words_.length > 1) for (const w of words_) { tries.appendChild(link(w, () => searchFor(w))); tries.appendChild(document.createTextNode(" · ")); }
  tries.appendChild(link("browse everything (empty query)", () => searchFor("")));
  const report = local.results.today;  // today's keywords, when the report of today is known
  const hot = report && report.day === store.day ? (report.result.hot_keywords || []).map((k) => k.keyword).slice(0, 6) : [];
  if (hot.length) {
    tries.appendChild(document.createTextNode(" · today's hot keywords: "));
    hot.forEach((w, i) => { if (i) tries.appendChild(document.createTextNode(", ")); tries.appendChild(link(w, () => searchFor(w))); });
  } else tries.appendChild(document.createTextNode(" · or the daily report's hot keywords (Today, Daily report)."));
  box.appendChild(tries);
  return box;
}

// `mine`: a table of my listings (tick to delist or reprice); else product rows can go to the basket.
function dataTable(columns, rows, mine) {
  const t = el("table", {class: "data"});
  const tr = el("tr");
  const productCol = columns.indexOf("product_id");
  const listedTable = Boolean(mine) && columns.includes("sale_price");
  if (productCol >= 0) tr.appendChild(el("th", {scope: "col"}, listedTable ? "tick" : "list?"));
  for (const c of columns) tr.appendChild(el("th", {scope: "col"}, headText(c)));
  if (productCol >= 0 && listedTable) tr.appendChild(el("th", {scope: "col"}, "reprice"));
  t.appendChild(el("thead")).appendChild(tr);
  const body = el("tbody");
  for (const row of rows) body.appendChild(tableRow(columns, row, productCol, listedTable));
  t.appendChild(body);
  return t;
}

function tableRow(columns, row, productCol, listedTable) {
  const tr = el("tr");
  const value = (name) => row[columns.indexOf(name)];
  const pid = productCol >= 0 ? String(row[productCol]) : null;
  if (pid !== null) {
    tr.dataset.product = pid;
    tr.tabIndex = -1;
    if (columns.includes("title")) tr.dataset.title = value("title");
    const cost = columns.includes("procurement_price") ? value("procurement_price") : value("price");
    if (typeof cost === "number") tr.dataset.cost = cost;
    if (listedTable) tr.dataset.price = value("sale_price");
    const box = el("input", {type: "checkbox", "aria-label": `${listedTable ? "tick listing" : "add to the list basket"} ${pid}`, "data-product": pid});
    const td = el("td");
    td.appendChild(box);
    tr.appendChild(td);
    if (listedTable) box.classList.add("delist-pick");
    else {
      box.classList.add("basket-pick");
      box.checked = basket.has(pid);
      box.addEventListener("change", () => pick(box.checked, pid, tr));
    }
  }
  row.forEach((cell, i) => {
    const td = el("td", {class: typeof cell === "number" ? "num" : ""});
    const col = columns[i];
    if (col === "product_id") td.appendChild(link(cell, () => showDetail("get_product_detail", {product_id: String(cell)}, value("title") || cell)));
    else if (col === "supplier_id") td.appendChild(link(cell, () => showDetail("get_supplier_profile", {supplier_id: String(cell)}, `Supplier ${cell}`)));
    else if (col === "order_id" && cell !== null) td.appendChild(link(cell, () => showDetail("query_order_detail", {order_id: Number(cell)}, `Order ${cell}`)));
    else td.textContent = cellText(col, cell);
    tr.appendChild(td);
  });
  if (pid !== null && listedTable) tr.appendChild(repriceCell(pid, value("sale_price")));
  markRow(tr, listedTable);
  return tr;
}

// A search row of a product I list already: marked, and not offered to the basket.
function markRow(tr, listedTable) {
  if (listedTable || !tr.dataset.product) return;
  const mine = listed.has(tr.dataset.product);
  tr.classList.toggle("listed", mine);
  const box = tr.querySelector("input.basket-pick");
  if (box) { box.disabled = mine; if (mine) box.checked = false; }
  const cell = tr.children[1];
  let badge = cell && cell.querySelector(".badge.listed");
  if (mine && cell && !badge) { badge = el("span", {class: "badge listed"}, "listed"); cell.appendChild(badge); }
  if (!mine && badge) badge.remove();
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
    const cost = Number(input.closest("tr").dataset.cost);
    if (!pricesOk([{product_id: pid, cost, price: args.sale_price}])) { say("nothing done"); return; }
    const r = await act(`reprice:${pid}`, "adjust_price", args, "listings", ev.detail > 1);
    if (r && r.ok) refreshListings();
  });
  td.append(input, go);
  return td;
}

// --- the side panel: a product, supplier or order, keeping the results --------------------------
async function showDetail(tool, args, title) {
  const r = await call(tool, args, null);
  if (!r) return;
  $("#detail-title").textContent = title;
  const body = $("#detail-body");
  body.replaceChildren();
  if (r.ok === false) body.appendChild(el("p", {class: "error"}, errorText(r.error)));
  else body.appendChild(renderAnswer(r, tool));
  if (tool === "get_product_detail" && r.ok !== false) body.prepend(productActions(r));
  body.appendChild(rawBlock(r));
  $("#detail").hidden = false;
  $("#detail-close").focus();
}

function productActions(product) {
  const bar = el("div", {class: "actions"});
  const pid = product.product_id;
  if (listed.has(pid)) {
    const d = el("button", {type: "button"}, "Delist");
    d.addEventListener("click", (ev) => delistOne(pid, ev.detail > 1));
    bar.appendChild(d);
  } else if (product.status === "available") {
    const add = el("button", {type: "button"}, basket.has(pid) ? "In the basket" : "Add to the basket");
    add.addEventListener("click", () => { basketAdd(pid, product.title, product.price); add.textContent = "In the basket"; });
    bar.appendChild(add);
  }
  bar.appendChild(similarButton(product.title));
  return bar;
}

function closeDetail() { $("#detail").hidden = true; }

// --- finding --------------------------------------------------------------------------------------
function searchFor(query) {
  const form = document.querySelector('form[data-tool="search_products"]');
  if (!form) return null;
  form.querySelector('input[name="query"]').value = query;
  const page = form.querySelector('input[name="page"]');
  if (page) page.value = 1;
  showPanel("find", true);
  closeDetail();
  return act("form:search_products", "search_products", formArgs(form), "find", false);
}

async function findSimilar(title) {
  const r = await searchFor(similarQuery(title));
  const last = String(title).split(/\s+(?:for|with|of|in)\s+/i)[0].split(/\s+/).pop();
  if (r && r.ok && !r.rows.length && last && last !== similarQuery(title)) await searchFor(last);
}

// --- the basket: several products listed at once ----------------------------------------------
function pick(on, pid, tr) {
  if (on) basketAdd(pid, tr.dataset.title, Number(tr.dataset.cost));
  else { basket.delete(pid); drawBasket(); }
}

function basketAdd(pid, title, cost) {
  if (listed.has(pid) || basket.has(pid)) return;
  basket.set(pid, {title, cost, price: Math.round(cost * CONFIG.default_price_multiple * 100) / 100});
  drawBasket();
}

function drawBasket() {
  const rows = $("#basket-rows");
  rows.replaceChildren();
  for (const [pid, item] of basket) {
    const tr = el("tr");
    tr.appendChild(el("td", {}, `${item.title || ""} (${pid})`));
    tr.appendChild(el("td", {class: "num"}, rmb(item.cost)));
    const td = el("td");
    const input = el("input", {type: "number", step: "0.01", min: "0.01", value: item.price.toFixed(2), "aria-label": `sale price for ${pid}`, "data-basket": pid});
    input.addEventListener("input", () => { item.price = Number(input.value); });
    td.appendChild(input);
    tr.appendChild(td);
    const rm = el("td");
    rm.appendChild(link("remove", () => { basket.delete(pid); drawBasket(); syncTicks(); }));
    tr.appendChild(rm);
    rows.appendChild(tr);
  }
  $("#basket-count").textContent = basket.size;
  saveLocal();
}

function syncTicks() {
  for (const box of document.querySelectorAll("input.basket-pick")) box.checked = basket.has(box.dataset.product);
}

// List the basket: products already listed are skipped; a refused item (its `path` names it) is
// taken out and reported, and the rest is sent again, so every listable product gets listed.
// list_product itself stays all-or-nothing (its answers are part of the record).
async function listBasket(ev) {
  if (!basket.size) { say("tick products in a search result first"); return; }
  const items = [...basket].map(([pid, item]) => ({product_id: pid, ...item}));
  const done = await listItems(items, "basket", ev.detail > 1, $("#basket-report"));
  drawBasket();
  if (done !== null) say(`list: ${done} listed, ${items.length - done} not`);
}

// Below cost, or below cost plus the fines an order costs so far (fines per order): ask first.
function pricesOk(items) {
  const low = items.filter((it) => it.cost !== undefined && it.price < it.cost + finesPerOrder);
  if (!low.length) return true;
  const lines = low.map((it) => `${it.title || it.product_id}: ${rmb(it.price)} RMB, cost ${rmb(it.cost)}` +
    (it.price < it.cost ? " (below cost: every sale loses money)" : ` (below cost + ${rmb(finesPerOrder)} RMB of fines per order so far)`));
  return window.confirm(`Sell below cost${finesPerOrder ? " plus expected fines" : ""}?\n${lines.join("\n")}\nOK lists anyway, Cancel changes nothing.`);
}

// List `items` ({product_id, title, cost, price}); removes each listed or refused one from the
// basket; the report names each. Returns how many were listed (null: nothing was sent).
async function listItems(all, control, again, report) {
  report.replaceChildren();
  const note = (it, text, ok) => report.appendChild(el("li", {class: ok ? "ok" : "bad"}, `${it.title || it.product_id} (${it.product_id}): ${text}`));
  let items = [];
  for (const it of all) if (listed.has(it.product_id)) { note(it, "already listed, skipped", false); basket.delete(it.product_id); } else items.push(it);
  const free = Math.max(0, store.listing_cap - store.active_listings);
  for (const it of items.slice(free)) note(it, `no free slot (${store.active_listings} of ${store.listing_cap} used): kept in the basket`, false);
  items = items.slice(0, free);
  if (!items.length || !pricesOk(items)) return items.length ? null : 0;
  let done = 0;
  while (items.length) {
    const args = {items: items.map((it) => ({product_id: it.product_id, sale_price: Number(Number(it.price).toFixed(2))}))};
    const r = await act(control, "list_product", args, null, again);
    again = false;
    if (!r) return done || null;  // not reached: the basket stays for a retry
    if (r.ok) {
      const c = (name) => r.listed.columns.indexOf(name);
      for (const row of r.listed.rows) note({product_id: String(row[c("product_id")]), title: basket.get(String(row[c("product_id")]))?.title || items.find((it) => it.product_id === String(row[c("product_id")]))?.title}, `listed at ${rmb(row[c("sale_price")])} RMB (margin ${rmb(row[c("unit_margin")])})`, true);
      for (const it of items) basket.delete(it.product_id);
      done += items.length;
      break;
    }
    const at = /^\$\.items\[(\d+)\]/.exec(r.error.path || "");
    if (!at) { for (const it of items) note(it, errorText(r.error), false); break; }
    const bad = items[Number(at[1])];
    note(bad, errorText(r.error), false);
    basket.delete(bad.product_id);
    items = items.filter((_, i) => i !== Number(at[1]));
  }
  saveLocal();
  for (const tr of document.querySelectorAll("tr[data-product]")) markRow(tr, tr.querySelector(".delist-pick") !== null);
  return done;
}

// --- my listings: delist, reprice, one or ticked ---------------------------------------------------
const ticked = () => [...document.querySelectorAll("#panel-listings .delist-pick:checked")].map((b) => b.closest("tr"));
const bulkMarkup = () => ($("#bulk-mode").value === "markup" ? Number($("#bulk-value").value) || CONFIG.default_price_multiple : CONFIG.default_price_multiple);

async function delistOne(pid, again) {
  const r = await act(`delist:${pid}`, "delist_product", {product_ids: [pid]}, null, again);
  if (r && r.ok) { say(`delisted ${pid}`); closeDetail(); return true; }
  return false;
}

async function repriceOne(pid, price, again, cost, checked) {
  if (!checked && cost !== undefined && !pricesOk([{product_id: pid, cost, price}])) { say("nothing done"); return null; }
  const r = await act(`reprice:${pid}`, "adjust_price", {product_id: pid, sale_price: price}, null, again);
  if (r && r.ok) say(`${pid}: price ${rmb(r.previous_price)} → ${rmb(r.sale_price)} RMB`);
  return r;
}

async function delistTicked(ev) {
  const ids = [...new Set(ticked().map((tr) => tr.dataset.product))];
  if (!ids.length) { say("tick listings in the table first"); return; }
  const r = await act("delist", "delist_product", {product_ids: ids}, null, ev.detail > 1);
  if (r && r.ok) { say(`delisted ${ids.length}`); refreshListings(); }
}

// Reprice every ticked row: at × cost (its procurement price) or by ± % of its price; one
// adjust_price each, each reported.
async function repriceTicked() {
  const rows = ticked();
  if (!rows.length) { say("tick listings in the table first"); return; }
  const mode = $("#bulk-mode").value, value = Number($("#bulk-value").value);
  const report = $("#bulk-report");
  report.replaceChildren();
  const plan = rows.map((tr) => {
    const base = mode === "markup" ? Number(tr.dataset.cost) * value : Number(tr.dataset.price) * (1 + value / 100);
    return {tr, product_id: tr.dataset.product, title: tr.dataset.title, cost: Number(tr.dataset.cost), price: Math.round(base * 100) / 100};
  });
  if (!pricesOk(plan)) { say("nothing done"); return; }
  for (const {tr, price} of plan) {
    const r = await repriceOne(tr.dataset.product, price, false, undefined, true);
    const text = r && r.ok ? `${rmb(r.previous_price)} → ${rmb(r.sale_price)} RMB` : r ? errorText(r.error) : "not sent";
    report.appendChild(el("li", {class: r && r.ok ? "ok" : "bad"}, `${tr.dataset.product}: ${text}`));
  }
  refreshListings();
}

// Buttons that tick the listings carrying an alert (review_my_listings' alerts column).
function tickByAlert(result) {
  const box = $("#tick-alerts");
  if (!box) return;
  box.replaceChildren();
  const col = result.columns.indexOf("alerts");
  if (col < 0) return;
  const counts = new Map();
  for (const row of result.rows) for (const a of row[col] || []) counts.set(a, (counts.get(a) || 0) + 1);
  for (const [alert, n] of counts) {
    const b = el("button", {type: "button", class: "tick-alert", "data-alert": alert}, `Tick: ${words(alert)} (${n})`);
    b.addEventListener("click", () => {
      for (const tr of document.querySelectorAll("#results-listings tr[data-product]")) {
        const i = result.rows.findIndex((row) => String(row[result.columns.indexOf("product_id")]) === tr.dataset.product);
        if (i >= 0 && (result.rows[i][col] || []).includes(alert)) tr.querySelector(".delist-pick").checked = true;
      }
    });
    box.appendChild(b);
  }
}

function refreshListings() {
  const panel = $("#panel-listings");
  const form = panel.querySelector(`form[data-tool="${panel.dataset.first}"]`);
  if (form) call(form.dataset.tool, formArgs(form), "listings");
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

// --- state: header, digest, charts ---------------------------------------------------------------
let shownDigest = null;  // the digest on screen (as JSON)
// Text that did not change is left alone (no new text node, nothing to lay out again).
function setText(selector, text) {
  const node = $(selector);
  if (node.textContent !== text) node.textContent = text;
}

function showState(state) {
  const newWindow = state.store.window !== shownWindow;
  shownWindow = state.store.window;
  listed = new Set(state.listed);
  paused = state.paused && !state.over;
  over = state.over;
  const s = state.store;
  if (s.day !== store.day && store.day !== undefined) {  // a new day: yesterday's report is gone
    reportDay = null;
    $("#results-today").replaceChildren();
    $("#find-keywords").replaceChildren();
  }
  store = s;
  finesPerOrder = state.fines_per_order || 0;
  setText("#clock", state.clock.text);
  if (state.net_assets !== null) setText("#net-assets", rmb(state.net_assets));
  setText("#figures", over ? "" : `Balance ${rmb(s.balance)} · rating ${s.rating.toFixed(2)} (${s.stars}★, orders ×${s.rating_multiplier.toFixed(2)}) · listings ${s.active_listings}/${s.listing_cap} · calls left ${s.calls_left_in_window}`);
  setText("#observation", state.observation);
  $("#paused").hidden = !paused;
  $("#finished").hidden = !state.over;
  for (const id of ["#end-window", "#forward", "#forward-go"]) $(id).disabled = over;
  if (state.over && state.final) showFinal(state);
  // Most calls leave the digest as it was: it is drawn again only when it changed.
  const digestNow = JSON.stringify([state.digest, state.store.window === 0, bulkMarkup()]);
  if (digestNow !== shownDigest) { shownDigest = digestNow; showDigest(state.digest, state.store.window === 0); }
  if (newWindow) { closeDetail(); $("#basket-report").replaceChildren(); }
  if (!state.history) return;  // unchanged: the window did not move
  const hist = state.history;
  const xs = hist.map((p) => p.window + 1);
  lineChart($("#chart-net"), xs, hist.map((p) => p.net_assets));
  lineChart($("#chart-rating"), xs, hist.map((p) => p.rating));
  lineChart($("#chart-orders"), xs, hist.map((p) => p.orders), {min: 0});
}

// The end screen: the run's Table-1 headline, written as the header writes it (the header's net
// assets are the same final_net_assets once the run is over).
function showFinal(state) {
  $("#final-when").textContent = state.clock.text;
  const body = $("#final");
  body.replaceChildren();
  for (const [k, v] of Object.entries(state.final)) {
    const tr = el("tr");
    tr.appendChild(el("th", {scope: "row"}, headText(k)));
    tr.appendChild(el("td", {class: "num", "data-metric": k}, cellText(k, v)));
    body.appendChild(tr);
  }
}

async function refresh() {
  const resp = await fetch(`${BASE}/state`);
  if (resp.ok) showState(await resp.json());
}

// --- sections: each opens with its data -----------------------------------------------------------
// Showing a section loads its first form's answer once per window (Today's digest comes with the
// state; Notes loads the pad; a section whose first form needs an input waits for it).
function showPanel(key, noLoad) {
  if (paused) return;
  const was = visiblePanel();
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    const on = tab.dataset.panel === key;
    tab.setAttribute("aria-selected", on ? "true" : "false");
    document.getElementById(`panel-${tab.dataset.panel}`).hidden = !on;
  }
  if (!was || was.id !== `panel-${key}`) window.scrollTo(0, 0);  // a section opens at its top
  local.section = key;
  saveLocal();
  if (key === "notes") { notesShown(); return; }
  if (key === "find") keywordsForToday();
  if (noLoad || key === "today" || loadedIn.get(key) === shownWindow) return;
  const panel = $(`#panel-${key}`);
  const form = panel.querySelector(`form[data-tool="${panel.dataset.first}"]`);
  if (!form || [...form.querySelectorAll("[required]")].some((f) => !f.value.trim())) return;
  if (key === "rules" && loadedIn.has(key)) return;  // the rules never change
  loadedIn.set(key, shownWindow);
  const args = formArgs(form);
  if (fromCache(key, form.dataset.tool)) return;  // this window's answer, kept across a reload
  act(`form:${form.dataset.tool}`, form.dataset.tool, args, key, false);
}

// The daily report of today, fetched once per day when Find opens (its keywords above the search)
// or when the report's button is pressed; a new day clears the old one.
let reportDay = null;
function keywordsForToday() {
  if (reportDay === store.day || over || paused) return;
  const cached = local.results.today;
  if (cached && cached.tool === "get_daily_report" && cached.day === store.day) { reportDay = store.day; keywordChips(cached.result); render(cached.result, $("#results-today"), cached.tool); return; }
  reportDay = store.day;
  call("get_daily_report", {}, "today");
}

// --- what the page keeps across a reload (this browser, this store) -------------------------------
// The basket, the forms' fields, an unsaved note, the section, and each section's last answer
// with the window it was made in: reopening a section in the same window shows it again without
// a tool call. Nothing of it goes to the server; a new window makes the answers stale.
const LOCAL_KEY = `merchantbench-page-${CONFIG.token}`;
let local = {basket: [], forms: {}, notes: null, section: "today", results: {}};
function loadLocal() {
  try { local = {...local, ...JSON.parse(localStorage.getItem(LOCAL_KEY) || "{}")}; } catch (err) { /* damaged: start afresh */ }
  for (const [pid, item] of local.basket || []) if (item && typeof item.cost === "number") basket.set(pid, {title: item.title, cost: item.cost, price: Number(item.price) || item.cost});
  for (const [tool, values] of Object.entries(local.forms || {})) {
    const form = document.querySelector(`form[data-tool="${tool}"]`);
    if (!form) continue;
    for (const [name, value] of Object.entries(values)) { const input = form.querySelector(`[name="${name}"]`); if (input) input.value = value; }
  }
}
function saveLocal() {
  local.basket = [...basket];
  local.forms = {};
  for (const form of document.querySelectorAll("form.tool")) {
    local.forms[form.dataset.tool] = Object.fromEntries([...form.querySelectorAll("input, select")].map((i) => [i.name, i.value]));
  }
  try { localStorage.setItem(LOCAL_KEY, JSON.stringify(local)); } catch (err) { /* full: keep going */ }
}
function remember(panel, tool, args, result) {
  if (result.ok === false) return;
  local.results[panel] = {tool, args: JSON.stringify(args), window: shownWindow, day: store.day, result};
  if (tool === "get_daily_report") reportDay = store.day;
  saveLocal();
}
function fromCache(panel, tool) {
  const c = local.results[panel];
  if (!c || c.tool !== tool || c.window !== shownWindow) return false;  // the answer on screen before
  render(c.result, $(`#results-${panel}`), tool);
  return true;
}

function openHelp(show) {
  $("#help").hidden = !show;
  if (show) $("#help-close").focus();
  else localStorage.setItem("merchantbench-tour-seen", "1");
}

async function endWindow(again) {
  if (paused) return;
  const r = await act("end", CONFIG.window_closer, {}, null, again);
  if (r && r.ok !== false) { loadedIn.clear(); showPanel("today"); say("a new window is open: see what changed"); }
}

// --- fast-forward: end windows until something needs me -----------------------------------------
function triggers() {
  const supplier = [...document.querySelectorAll(".ff-supplier:checked")].map((b) => b.value);
  const t = {adverse: $("#ff-adverse").checked, supplier, day: $("#ff-day").checked};
  if ($("#ff-cash-on").checked) t.cash_below = Number($("#ff-cash").value);
  if ($("#ff-rating-on").checked) t.rating = Number($("#ff-rating").value);
  return t;
}

function fastForward() {
  if (busy || over || paused) return null;
  return inTurn(forwardNow);
}

async function forwardNow() {
  try {
    const most = Math.max(1, Math.min(Number($("#ff-most").value) || 1, CONFIG.forward_max));
    const body = await post("/forward", {"X-Window": String(shownWindow)}, {triggers: triggers(), most});
    showState(body.state);
    const r = body.result;
    loadedIn.clear();
    showPanel("today");
    if (r.ok === false) say(`fast-forward: ${errorText(r.error)}`);
    else say(`fast-forward: ended ${r.ended} window${r.ended === 1 ? "" : "s"}; ` + (r.stopped_by.length ? `stopped: ${r.stopped_by.join("; ")}` : r.over ? "the run is over" : `no trigger within ${most}`));
  } catch (err) {
    say(`could not reach the server (${err.message || err}); your store is saved, try again`);
  }
}

// --- keys ------------------------------------------------------------------------------------------
const visiblePanel = () => document.querySelector('[role="tabpanel"]:not([hidden])');
// The rows J and K move through: the digest's lines on Today, else the visible result rows.
function navRows() {
  const panel = visiblePanel();
  if (!panel) return [];
  if (panel.id === "panel-today") return [...panel.querySelectorAll("#digest li.line")];
  return [...panel.querySelectorAll(".results tr[data-product]")];
}
const currentRow = () => { const rows = navRows(); return rows.find((r) => r.classList.contains("current")) || null; };

function moveRow(step) {
  const rows = navRows();
  if (!rows.length) return;
  const at = rows.findIndex((r) => r.classList.contains("current"));
  const next = rows[Math.max(0, Math.min(rows.length - 1, at < 0 ? 0 : at + step))];
  for (const r of rows) r.classList.remove("current");
  next.classList.add("current");
  next.focus();
}

function tickAll() {
  const panel = visiblePanel();
  for (const box of panel.querySelectorAll(".results input.basket-pick:not(:disabled):not(:checked), .results input.delist-pick:not(:checked)")) {
    box.checked = true;
    box.dispatchEvent(new Event("change"));
  }
}

function keyOnRow(key) {
  const row = currentRow();
  const pid = row && row.dataset.product;
  const line = row && row.matches("li.line");
  if (key === "x" && row && !line) { const box = row.querySelector("input[type=checkbox]:not(:disabled)"); if (box) box.click(); return; }
  if (key === "enter" && pid) { showDetail("get_product_detail", {product_id: pid}, row.dataset.title || pid); return; }
  if (key === "s" && row) { const b = row.querySelector(".act-similar"); if (b) b.click(); else if (row.dataset.title) findSimilar(row.dataset.title); return; }
  if (key === "d") { if (line) { const b = row.querySelector(".act-delist"); if (b) b.click(); } else if (visiblePanel().id === "panel-listings") $("#delist").click(); return; }
  if (key === "r") { if (line) { const b = row.querySelector(".act-reprice"); if (b) b.click(); } else if (visiblePanel().id === "panel-listings") repriceTicked(); }
}

// A control that takes typed text (keys go to it): text and number fields, text areas, selects.
// A checkbox, a radio or a button never swallows the page's keys.
const NOT_TYPED = new Set(["checkbox", "radio", "button", "submit", "reset", "range", "color", "file"]);
function takesText(node) {
  if (!node) return false;
  if (node.tagName === "TEXTAREA" || node.tagName === "SELECT") return true;
  return node.tagName === "INPUT" && !NOT_TYPED.has((node.type || "text").toLowerCase());
}

function onKey(ev) {
  const typing = takesText(document.activeElement);
  if (ev.key === "Escape") {  // closes the help, else a preview, else the detail, else leaves a field
    if (!$("#help").hidden) openHelp(false);
    else if (preview) { closePreview(); say("nothing done"); }
    else if (typing) document.activeElement.blur();
    else closeDetail();
    return;
  }
  if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (paused) { if (ev.key === "?") openHelp(true); return; }  // the pause screen: no action keys
  if (!$("#help").hidden) return;
  const key = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key.toLowerCase();
  if (preview && key === "enter" && !ev.repeat) { ev.preventDefault(); confirmPreview(); return; }
  if (key === "b" && !ev.repeat) { const g = document.querySelector("#digest .group-act"); if (g) { showPanel("today", true); g.click(); } return; }
  const onButton = ["BUTTON", "A", "SUMMARY"].includes(document.activeElement.tagName);
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  if (/^[1-9]$/.test(key) && tabs[Number(key) - 1]) { showPanel(tabs[Number(key) - 1].dataset.panel); return; }
  if (key === "/") { ev.preventDefault(); showPanel("find", true); document.getElementById("f-search_products-query").focus(); return; }
  if (key === "?") { openHelp(true); return; }
  if (key === "p") { pause(); return; }
  if (over) return;
  if (key === "e" && !ev.repeat) endWindow(false);
  else if (key === "f" && !ev.repeat) fastForward();
  else if (key === "[") turnPage("prev");
  else if (key === "]") turnPage("next");
  else if (key === "j" || key === "arrowdown") { ev.preventDefault(); moveRow(1); }
  else if (key === "k" || key === "arrowup") { ev.preventDefault(); moveRow(-1); }
  else if (key === "a") tickAll();
  else if (key === "l") $("#list-basket").click();
  else if (key === "=") { const price = $("#basket-rows input"); if (price) { ev.preventDefault(); showPanel("find", true); price.focus(); price.select(); } }
  else if ((key === "enter" || key === " ") && (onButton || document.activeElement.type === "checkbox")) return;  // the focused control's own key
  else if (["x", " ", "enter", "s", "d", "r"].includes(key) && !ev.repeat) { ev.preventDefault(); keyOnRow(key === " " ? "x" : key); }
}

async function pause() {
  const resp = await fetch(`${BASE}/pause`, {method: "POST"});
  if (resp.ok) { showState(await resp.json()); say("paused and saved: come back any time with this link"); $("#resume").focus(); }
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
  if (!r || !r.ok) return;
  savedNotes = r.content || "";
  if (local.notes !== null && local.notes !== savedNotes) { $("#notes-text").value = local.notes; say("your unsaved notes are back: Save notes keeps them"); }
  else $("#notes-text").value = savedNotes;
}
let savedNotes = null;  // the pad as the store has it

// --- active time (the operator's study view) ------------------------------------------------------
// A second counts when the page is visible and the person pressed a key, clicked or scrolled in
// the last IDLE_CAP seconds; the page reports its seconds every 15 s and when it is hidden.
const IDLE_CAP = 120;
let lastInput = Date.now(), pendingSeconds = 0;
function trackActivity() {
  for (const ev of ["keydown", "pointerdown", "wheel", "scroll"]) document.addEventListener(ev, () => { lastInput = Date.now(); }, {passive: true, capture: true});
  setInterval(() => {
    if (document.visibilityState === "visible" && Date.now() - lastInput < IDLE_CAP * 1000) pendingSeconds += 1;
  }, 1000);
  const report = (beacon) => {
    if (pendingSeconds < 1) return;
    const body = JSON.stringify({seconds: pendingSeconds});
    pendingSeconds = 0;
    if (beacon && navigator.sendBeacon) navigator.sendBeacon(`${BASE}/activity`, new Blob([body], {type: "application/json"}));
    else fetch(`${BASE}/activity`, {method: "POST", headers: {"Content-Type": "application/json"}, body}).catch(() => {});
  };
  setInterval(() => report(false), 15000);
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") report(true); });
}

// On the pause screen a click acts only on Continue, the help and its close button: every other
// click (the header's End window and Fast-forward, a tab, a digest button) is stopped before it
// reaches its control. The server refuses a paused store's calls as well (code `paused`).
function blockWhilePaused(ev) {
  if (!paused || !ev.isTrusted) return;
  if (ev.target.closest && ev.target.closest("#paused, #help, #help-open")) return;
  ev.preventDefault();
  ev.stopPropagation();
  say("the store is paused: press Continue first (nothing was done)");
}

function wire() {
  document.addEventListener("click", blockWhilePaused, true);
  document.addEventListener("pointerdown", blockWhilePaused, true);
  loadLocal();
  drawBasket();
  wireForms();
  for (const form of document.querySelectorAll("form.tool")) form.addEventListener("change", saveLocal);
  for (const tab of document.querySelectorAll('[role="tab"]')) tab.addEventListener("click", () => showPanel(tab.dataset.panel));
  $("#end-window").addEventListener("click", (ev) => endWindow(ev.detail > 1));
  $("#forward").addEventListener("click", fastForward);
  $("#forward-go").addEventListener("click", fastForward);
  $("#pause").addEventListener("click", pause);
  $("#resume").addEventListener("click", resume);
  $("#help-open").addEventListener("click", () => openHelp(true));
  $("#help-close").addEventListener("click", () => openHelp(false));
  $("#detail-close").addEventListener("click", closeDetail);
  $("#list-basket").addEventListener("click", listBasket);
  $("#delist").addEventListener("click", delistTicked);
  $("#reprice-ticked").addEventListener("click", repriceTicked);
  $("#notes-save").addEventListener("click", async (ev) => {
    const content = $("#notes-text").value;
    const r = await act("notes", "write_memory_doc", {content, mode: "replace"}, null, ev.detail > 1);
    if (r && r.ok) { savedNotes = content; local.notes = null; saveLocal(); }
  });
  $("#notes-text").addEventListener("input", () => { local.notes = $("#notes-text").value; saveLocal(); });
  window.addEventListener("beforeunload", saveLocal);
  $("#notes-load").addEventListener("click", loadNotes);
  document.addEventListener("keydown", onKey);
  trackActivity();
  if (!localStorage.getItem("merchantbench-tour-seen")) openHelp(true);
  refresh().then(() => { if (local.section && local.section !== "today" && $(`#panel-${local.section}`)) showPanel(local.section); });
}
wire();
