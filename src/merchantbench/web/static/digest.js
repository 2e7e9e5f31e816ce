// The window digest on Today: every event since the last window the person saw (the server's
// `digest`, from the same numbers as the observation and the store status; after a fast-forward,
// every event of every window it passed over), worst first. Like events are grouped: a group of
// listings that need the same thing has one batch action (preview, then one key); each line keeps
// the actions that fit its kind. Each action is a tool call through the page's `act` (play.js).
"use strict";

const SEVERITY_WORDS = {critical: "Urgent", warning: "Warning", notice: "Notice", good: "Good", info: "Info"};
// How a group of lines of one kind reads (n: how many).
const KIND_GROUP = {
  supplier_delisted: (n) => `${n} listing${n === 1 ? "" : "s"} lost their supplier (new orders are stockouts)`,
  shipment_delayed: (n) => `${n} listing${n === 1 ? " now ships" : "s now ship"} late`,
  price_changed: (n) => `${n} supplier cost${n === 1 ? "" : "s"} changed`,
  price_restored: (n) => `${n} listing cost${n === 1 ? "" : "s"} back to normal`,
};

// A query for products like `title`: the words before "for", "with" or "of", last two of them
// (the product-type words titles share: "Microfiber Storage Box for Students" -> "Storage Box").
function similarQuery(title) {
  const head = String(title).split(/\s+(?:for|with|of|in)\s+/i)[0].split(/\s+/).filter((w) => /[A-Za-z]/.test(w));
  return head.slice(-2).join(" ");
}

const markupPrice = (cost) => Math.round(cost * bulkMarkup() * 100) / 100;
// A listed line whose ship hours break the late rule (its orders will be fined as late).
const shipsLate = (line) => line.kind === "shipment_delayed" && Number((line.detail || {}).ship_hours) > CONFIG.late_after_hours;
// A cost change where markup × cost is above my price (the cost went up): reprice raises it.
const raises = (line) => line.listed && markupPrice(line.cost_now) > line.sale_price_now + 0.005;

// The batches the digest offers: listings (each once) that need the same action.
function digestGroups(lines) {
  const pick = (test) => {
    const seen = new Set(), out = [];
    for (const line of lines) if (line.listed && test(line) && !seen.has(line.product_id)) { seen.add(line.product_id); out.push(line); }
    return out;
  };
  const gone = pick((l) => l.kind === "supplier_delisted" || (l.kind === "stockout" && l.listed));
  const goneIds = new Set(gone.map((l) => l.product_id));
  const late = pick((l) => shipsLate(l) && !goneIds.has(l.product_id));
  const reprice = pick((l) => (l.kind === "price_changed" || l.kind === "price_restored") && raises(l) && !goneIds.has(l.product_id));
  const groups = [];
  if (gone.length) groups.push({kind: "replace", lines: gone, text: `${gone.length} listing${gone.length === 1 ? "" : "s"} lost their supplier or ran out: replace all with the best similar product`});
  if (late.length) groups.push({kind: "replace-late", lines: late, text: `${late.length} listing${late.length === 1 ? " now ships" : "s now ship"} in more than ${CONFIG.late_after_hours} h (late orders are fined): replace all`});
  if (reprice.length) groups.push({kind: "reprice", lines: reprice, text: `${reprice.length} listing${reprice.length === 1 ? "" : "s"} cost more now: reprice all to ${bulkMarkup()} × cost`});
  return groups;
}

function groupBar(groups) {
  const box = el("div", {class: "groups", role: "group", "aria-label": "Batches: one action for many listings"});
  groups.forEach((g, i) => {
    const row = el("p", {class: "group", "data-group": g.kind});
    row.appendChild(el("strong", {}, `${g.text}. `));
    const b = el("button", {type: "button", class: "group-act primary", "data-group": g.kind, title: i === 0 ? "Preview, then Enter does it (key B)" : "Preview, then Enter does it"}, `Preview (${g.lines.length})`);
    b.addEventListener("click", () => previewGroup(g));
    row.appendChild(b);
    box.appendChild(row);
  });
  return box;
}

function digestLine(line) {
  const li = el("li", {class: `line sev-${line.severity}`, tabindex: "-1", "data-kind": line.kind});
  if (line.product_id) { li.dataset.product = line.product_id; li.dataset.title = line.title; }
  if (line.window !== null && line.window !== undefined) li.dataset.window = line.window;
  if (line.detail && line.detail.ship_hours !== undefined) li.dataset.ship = line.detail.ship_hours;
  const head = el("p", {class: "what"});
  head.appendChild(el("span", {class: `badge sev-${line.severity}`}, SEVERITY_WORDS[line.severity] || line.severity));
  const text = line.text.charAt(0).toUpperCase() + line.text.slice(1);
  head.appendChild(el("strong", {}, ` ${text}`));
  if (line.at) head.appendChild(el("span", {class: "when"}, ` · ${dayTime(line.at)}`));
  if (line.amount !== null && line.amount !== undefined && line.amount !== 0) {
    const amount = line.kind === "rating" ? signed(line.amount, 2) : `${signed(line.amount, 2)} RMB`;
    head.appendChild(el("span", {class: line.amount < 0 ? "amount bad" : "amount"}, ` ${amount}`));
  }
  li.appendChild(head);
  const about = el("p", {class: "about"});
  if (line.order_id) {
    about.appendChild(document.createTextNode("Order "));
    about.appendChild(link(`#${line.order_id}`, () => showDetail("query_order_detail", {order_id: line.order_id}, `Order ${line.order_id}`)));
    about.appendChild(document.createTextNode(" · "));
  }
  if (line.product_id) {
    about.appendChild(link(`${line.title} (${line.product_id})`, () => showDetail("get_product_detail", {product_id: line.product_id}, line.title)));
  }
  const facts = Object.entries(line.detail || {}).filter(([k]) => k !== "cause");
  const fact = ([k, v]) => (k === "ship_hours" ? `ships in ${v} h` : `${words(k)} ${cellText(k, v)}${MONEY_KEYS.has(k) ? " RMB" : ""}`);
  if (facts.length) about.appendChild(el("span", {class: "facts-inline"}, " · " + facts.map(fact).join(", ")));
  if (line.detail && line.detail.cause) about.appendChild(el("span", {class: "cause"}, `Cause: ${line.detail.cause}.`));
  if (about.childNodes.length) li.appendChild(about);
  if (line.product_id) li.appendChild(lineActions(line));
  return li;
}

// The actions that fit the line's kind: a product the supplier delisted or that ships late is
// delisted or replaced (never repriced); a cost change offers a reprice only when it raises my
// price (a cost back to normal never suggests a lower price); order outcomes offer delist and
// find similar.
function lineActions(line) {
  const bar = el("div", {class: "actions"});
  const pid = line.product_id;
  if (!line.listed) {
    bar.appendChild(el("span", {class: "muted"}, "not listed "));
    bar.appendChild(similarButton(line.title));
    return bar;
  }
  const delist = el("button", {type: "button", class: "act-delist"}, "Delist");
  delist.addEventListener("click", (ev) => delistOne(pid, ev.detail > 1));
  bar.appendChild(delist);
  if ((line.kind === "price_changed" || line.kind === "price_restored") && raises(line)) {
    const price = markupPrice(line.cost_now);
    const reprice = el("button", {type: "button", class: "act-reprice"}, `Reprice to ${rmb(price)}`);
    reprice.title = `${bulkMarkup()} × cost ${rmb(line.cost_now)} (now ${rmb(line.sale_price_now)})`;
    reprice.addEventListener("click", (ev) => repriceOne(pid, price, ev.detail > 1, line.cost_now));
    bar.appendChild(reprice);
  } else if (line.kind === "price_changed" || line.kind === "price_restored") {
    bar.appendChild(el("span", {class: "muted"}, ` your price ${rmb(line.sale_price_now)} RMB is at least ${bulkMarkup()} × cost: nothing to raise `));
  }
  bar.appendChild(similarButton(line.title));
  if (["supplier_delisted", "shipment_delayed", "stockout"].includes(line.kind)) {
    const replace = el("button", {type: "button", class: "act-replace"}, "Replace");
    replace.title = "Preview the best similar product, then Enter: delist this one, list that one";
    replace.addEventListener("click", () => previewGroup({kind: "replace", lines: [line], text: "Replace one listing"}));
    bar.appendChild(replace);
  }
  return bar;
}

function similarButton(title) {
  const b = el("button", {type: "button", class: "act-similar"}, "Find similar");
  b.title = `Search "${similarQuery(title)}"`;
  b.addEventListener("click", () => findSimilar(title));
  return b;
}

// One summary line per kind with its count (and fines), then the lines of that kind.
function showDigest(digest, first) {
  const box = $("#digest");
  box.replaceChildren();
  closePreview();
  if (!digest) return;
  if (!digest.since) {
    box.appendChild(el("p", {}, first ? "This is your first window: nothing has happened yet. Start by finding products to sell (key 2, or / to search)." : "Nothing to report yet."));
    return;
  }
  const n = digest.lines.length;
  const span = digest.windows > 1 ? ` (${digest.windows} windows, fast-forwarded)` : "";
  const counts = Object.entries(digest.counts).map(([k, v]) => `${v} ${words(k)}`).join(", ");
  if (!n) { box.appendChild(el("p", {class: "since"}, `Since ${dayTime(digest.since)}${span}: nothing happened (no orders, no supplier events on your listings, no rating or cash moves).`)); return; }
  box.appendChild(el("p", {class: "since"}, `Since ${dayTime(digest.since)}${span}: ${n} event${n === 1 ? "" : "s"}` +
    (digest.fines ? `, fines ${rmb(digest.fines)} RMB` : "") + (counts ? `. Order events: ${counts}.` : ".")));
  const groups = digestGroups(digest.lines);
  if (groups.length) box.appendChild(groupBar(groups));
  const list = el("ol", {class: "digest-lines", "aria-label": "Events since the last window, most urgent first"});
  const kinds = new Map();
  for (const line of digest.lines) kinds.set(line.kind, (kinds.get(line.kind) || 0) + 1);
  let last = null;
  for (const line of digest.lines) {
    if (line.kind !== last && kinds.get(line.kind) > 1) {
      const fines = digest.lines.filter((l) => l.kind === line.kind).reduce((s, l) => s + (l.amount && l.kind !== "rating" && l.kind !== "cash" ? -l.amount : 0), 0);
      const say_ = (KIND_GROUP[line.kind] || ((k) => `${k} × ${words(line.kind)}`))(kinds.get(line.kind));
      list.appendChild(el("li", {class: "kind-head", "data-kind": line.kind}, say_ + (fines > 0 ? ` · fines ${rmb(fines)} RMB` : "")));
    }
    last = line.kind;
    list.appendChild(digestLine(line));
  }
  box.appendChild(list);
}

// --- batches: a preview the person confirms with one key (Enter), or leaves (Esc) ---------------
let preview = null;  // {group, plan, go}: the batch on screen, waiting for Enter

function closePreview() {
  preview = null;
  const box = $("#preview");
  if (box) { box.hidden = true; box.replaceChildren(); }
}

// Replacements: for each listing, the first product of its similar search (the search form's
// filters, its sort) that I do not list, is not in the batch and not already chosen.
async function replacementsFor(lines) {
  const form = document.querySelector('form[data-tool="search_products"]');
  const base = form ? formArgs(form) : {};
  const answers = new Map();
  const taken = new Set([...listed, ...lines.map((l) => l.product_id), ...basket.keys()]);
  const plan = [];
  const best = async (query) => {  // the first product of the search not taken
    if (!answers.has(query)) answers.set(query, await call("search_products", {...base, query, page: 1}, null));
    const r = answers.get(query);
    if (!r || r.ok === false || !r.rows) return null;
    const c = (name) => r.columns.indexOf(name);
    const row = r.rows.find((row) => !taken.has(String(row[c("product_id")])));
    return row ? {product_id: String(row[c("product_id")]), title: row[c("title")], cost: Number(row[c("price")])} : null;
  };
  for (const line of lines) {
    let query = similarQuery(line.title);
    let pick = await best(query);
    const last = query.split(" ").pop();
    if (!pick && last && last !== query) { query = last; pick = await best(query); }  // its last word alone
    if (pick) taken.add(pick.product_id);
    plan.push({line, pick, query});
  }
  return plan;
}

async function previewGroup(group) {
  if (paused || over) return;
  const box = $("#preview");
  closePreview();
  box.hidden = false;
  const table = el("table", {class: "data"});
  const head = el("tr");
  const rows = el("tbody");
  let go;
  if (group.kind === "reprice") {
    for (const h of ["listing", "cost (RMB)", "price now (RMB)", "new price (RMB)"]) head.appendChild(el("th", {scope: "col"}, h));
    const plan = group.lines.map((l) => ({pid: l.product_id, title: l.title, cost: l.cost_now, from: l.sale_price_now, to: markupPrice(l.cost_now)}));
    for (const p of plan) rows.appendChild(previewRow([`${p.title} (${p.pid})`, rmb(p.cost), rmb(p.from), rmb(p.to)]));
    go = () => repriceAll(plan);
  } else {
    say("finding the best similar product for each …");
    const plan = await replacementsFor(group.lines);
    for (const h of ["delist", "list instead", "cost (RMB)", "your price (RMB)"]) head.appendChild(el("th", {scope: "col"}, h));
    for (const p of plan) rows.appendChild(previewRow([`${p.line.title} (${p.line.product_id})`,
      p.pick ? `${p.pick.title} (${p.pick.product_id})` : `nothing found for "${p.query}": delist only`,
      p.pick ? rmb(p.pick.cost) : "—", p.pick ? rmb(markupPrice(p.pick.cost)) : "—"]));
    go = () => replaceAll(plan);
  }
  table.appendChild(el("thead")).appendChild(head);
  table.appendChild(rows);
  box.replaceChildren();
  box.appendChild(el("h3", {id: "preview-title"}, group.text));
  box.appendChild(table);
  const ok = el("button", {type: "button", id: "preview-go", class: "primary"}, "Do it (Enter)");
  const no = el("button", {type: "button", id: "preview-cancel"}, "Cancel (Esc)");
  ok.addEventListener("click", confirmPreview);
  no.addEventListener("click", () => { closePreview(); say("nothing done"); });
  box.append(ok, document.createTextNode(" "), no);
  preview = {group, go};
  showPanel("today", true);
  window.scrollTo(0, 0);  // the preview opens Today's top
  say(`preview: ${group.lines.length} listing${group.lines.length === 1 ? "" : "s"}; Enter does it, Esc leaves it`);
}

function previewRow(cells) {
  const tr = el("tr");
  for (const c of cells) tr.appendChild(el("td", {}, c));
  return tr;
}

async function confirmPreview() {
  if (!preview || paused) return;
  const go = preview.go;
  preview = null;
  $("#preview-go").disabled = true;
  await go();
}

async function repriceAll(plan) {
  const report = [];
  for (const p of plan) {
    const r = await repriceOne(p.pid, p.to, false, p.cost, true);
    report.push(r && r.ok ? 1 : 0);
  }
  closePreview();
  say(`repriced ${report.filter(Boolean).length} of ${plan.length}`);
}

// One delist of every listing of the batch, then one list of the replacements found.
async function replaceAll(plan) {
  const ids = plan.map((p) => p.line.product_id);
  const r = await act(`batch-delist:${ids.join(",")}`, "delist_product", {product_ids: ids}, null, false);
  if (!r || r.ok === false) { say(`delist: ${r ? errorText(r.error) : "not sent"}`); return; }
  const items = plan.filter((p) => p.pick).map((p) => ({product_id: p.pick.product_id, title: p.pick.title, cost: p.pick.cost, price: markupPrice(p.pick.cost)}));
  const done = items.length ? await listItems(items, `batch-list:${ids.join(",")}`, false, $("#basket-report")) : 0;
  closePreview();
  say(`replaced: delisted ${ids.length}, listed ${done} instead`);
}
