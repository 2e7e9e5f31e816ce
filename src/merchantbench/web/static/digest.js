// The window digest on Today: every event since the last window (the server's `digest`, from the
// same numbers as the observation and the store status), worst first, each line with its actions.
// Each action is a tool call through the page's `act` (play.js).
"use strict";

const SEVERITY_WORDS = {critical: "Urgent", warning: "Warning", notice: "Notice", good: "Good", info: "Info"};

// A query for products like `title`: the words before "for", "with" or "of", last two of them
// (the product-type words titles share: "Microfiber Storage Box for Students" -> "Storage Box").
function similarQuery(title) {
  const head = String(title).split(/\s+(?:for|with|of|in)\s+/i)[0].split(/\s+/).filter((w) => /[A-Za-z]/.test(w));
  return head.slice(-2).join(" ");
}

function digestLine(line) {
  const li = el("li", {class: `line sev-${line.severity}`, tabindex: "-1", "data-kind": line.kind});
  if (line.product_id) li.dataset.product = line.product_id;
  if (line.detail && line.detail.ship_hours !== undefined) li.dataset.ship = line.detail.ship_hours;
  const head = el("p", {class: "what"});
  head.appendChild(el("span", {class: `badge sev-${line.severity}`}, SEVERITY_WORDS[line.severity] || line.severity));
  const text = line.text.charAt(0).toUpperCase() + line.text.slice(1);
  head.appendChild(el("strong", {}, ` ${text}`));
  if (line.at) head.appendChild(el("span", {class: "when"}, ` · ${dayTime(line.at)}`));
  if (line.amount !== null && line.amount !== undefined) {
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

function lineActions(line) {
  const bar = el("div", {class: "actions"});
  const pid = line.product_id;
  if (line.listed) {
    const price = Math.round(line.cost_now * bulkMarkup() * 100) / 100;
    const delist = el("button", {type: "button", class: "act-delist"}, "Delist");
    delist.addEventListener("click", (ev) => delistOne(pid, ev.detail > 1));
    const reprice = el("button", {type: "button", class: "act-reprice"}, `Reprice to ${rmb(price)}`);
    reprice.title = `${bulkMarkup()} × cost ${rmb(line.cost_now)} (now ${rmb(line.sale_price_now)})`;
    reprice.addEventListener("click", (ev) => repriceOne(pid, price, ev.detail > 1));
    const replace = el("button", {type: "button", class: "act-replace"}, "Replace");
    replace.title = "Delist it and find similar products";
    replace.addEventListener("click", async (ev) => { if (await delistOne(pid, ev.detail > 1)) findSimilar(line.title); });
    bar.append(delist, reprice);
    bar.appendChild(similarButton(line.title));
    bar.appendChild(replace);
  } else {
    bar.appendChild(el("span", {class: "muted"}, "not listed "));
    bar.appendChild(similarButton(line.title));
  }
  return bar;
}

function similarButton(title) {
  const b = el("button", {type: "button", class: "act-similar"}, "Find similar");
  b.title = `Search "${similarQuery(title)}"`;
  b.addEventListener("click", () => findSimilar(title));
  return b;
}

function showDigest(digest, first) {
  const box = $("#digest");
  box.replaceChildren();
  if (!digest) return;
  if (!digest.since) {
    box.appendChild(el("p", {}, first ? "This is your first window: nothing has happened yet. Start by finding products to sell (key 2, or / to search)." : "Nothing to report yet."));
    return;
  }
  const n = digest.lines.length;
  const counts = Object.entries(digest.counts).map(([k, v]) => `${v} ${words(k)}`).join(", ");
  if (!n) { box.appendChild(el("p", {class: "since"}, `Since ${dayTime(digest.since)}: nothing happened (no orders, no supplier events on your listings, no rating or cash moves).`)); return; }
  box.appendChild(el("p", {class: "since"}, `Since ${dayTime(digest.since)}: ${n} event${n === 1 ? "" : "s"}` +
    (digest.fines ? `, fines ${rmb(digest.fines)} RMB` : "") + (counts ? `. Order events: ${counts}.` : ".")));
  const list = el("ol", {class: "digest-lines", "aria-label": "Events since the last window, most urgent first"});
  for (const line of digest.lines) list.appendChild(digestLine(line));
  box.appendChild(list);
}
