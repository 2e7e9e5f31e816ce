// How the playground writes the tools' answers for a person: money as RMB with two decimals,
// times as "Day N, HH:00", percentages, codes as words, tables as tables. The raw answer stays one
// click away (see rawBlock). Pure functions of the value: no tool knowledge beyond column names.
"use strict";

const MONEY_KEYS = new Set(["price", "sale_price", "procurement_price", "previous_price", "unit_margin",
  "cost", "fine", "fines", "amount", "gmv", "gross_margin", "balance", "deposit", "in_transit",
  "receivable", "net_assets", "net_assets_change", "max_sale_price", "final_net_assets", "net_profit",
  "fines_collected", "min_price", "max_price"]);
const PCT_KEYS = /(_pct|_rate)$/;  // already percent (…_pct) or a share 0–1 (…_rate)
const TIME_KEYS = new Set(["at", "placed_at", "since", "listed_at", "last_order", "from", "to", "closed_at"]);
const CODE_KEYS = new Set(["status", "event", "anomaly", "stock", "alerts", "store", "category", "stage", "mode"]);

const rmb = (v) => Number(v).toLocaleString("en-US", {minimumFractionDigits: 2, maximumFractionDigits: 2});
const rmbText = (v) => `${rmb(v)} RMB`;
const signed = (v, digits) => (v > 0 ? "+" : v < 0 ? "−" : "") + Math.abs(v).toLocaleString("en-US", {minimumFractionDigits: digits, maximumFractionDigits: digits});
// "Day 3 12:00" (the tools' form) -> "Day 3, 12:00"
const dayTime = (text) => String(text).replace(/^Day (\d+) (\d\d:\d\d)$/, "Day $1, $2");
const words = (code) => String(code).replaceAll("_", " ");

// One value of key `key`, as text.
function cellText(key, value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (Array.isArray(value)) return value.length ? value.map((v) => cellText(key, v)).join(", ") : "none";
  if (typeof value === "number") {
    if (MONEY_KEYS.has(key)) return rmb(value);
    if (key.endsWith("_pct")) return `${value.toLocaleString("en-US", {maximumFractionDigits: 1})} %`;
    if (key.endsWith("_rate") || key === "net_profit_margin" || key === "swr") return `${(value * 100).toLocaleString("en-US", {maximumFractionDigits: 1})} %`;
    if (key.includes("rating")) return value.toFixed(2);
    return value.toLocaleString("en-US", {maximumFractionDigits: 3});
  }
  if (TIME_KEYS.has(key)) return dayTime(value);
  if (CODE_KEYS.has(key)) return words(value);
  return String(value);
}

// Column names whose words alone would mislead (the tools' descriptions say what they are).
const HEAD_WORDS = {return_buyer_rate_pct: "repeat buyers (% of the supplier's buyers who order again)"};
const headText = (key) => HEAD_WORDS[key] || words(key) + (MONEY_KEYS.has(key) ? " (RMB)" : "");

// The raw answer, one click away.
function rawBlock(value) {
  const d = el("details", {class: "raw"});
  d.appendChild(el("summary", {}, "Raw answer (JSON)"));
  const pre = d.appendChild(el("pre", {class: "json"}));
  d.addEventListener("toggle", () => { if (d.open && !pre.textContent) pre.textContent = JSON.stringify(value, null, 1); });
  return d;
}

// A list of objects with the same keys (the daily report's categories, keywords) as a table.
function objectsTable(items, caption) {
  const keys = [...new Set(items.flatMap((o) => Object.keys(o)))];
  return plainTable(keys, items.map((o) => keys.map((k) => o[k])), caption);
}

function plainTable(columns, rows, caption) {
  const t = el("table", {class: "data"});
  if (caption) t.appendChild(el("caption", {}, caption));
  const tr = el("tr");
  for (const c of columns) tr.appendChild(el("th", {scope: "col"}, headText(c)));
  t.appendChild(el("thead")).appendChild(tr);
  const body = el("tbody");
  for (const row of rows) {
    const r = el("tr");
    row.forEach((cell, i) => r.appendChild(el("td", {class: typeof cell === "number" ? "num" : ""}, cellText(columns[i], cell))));
    body.appendChild(r);
  }
  t.appendChild(body);
  return t;
}

// A scalar-valued object as a two-column table of facts.
function factsTable(pairs) {
  const t = el("table", {class: "facts"});
  const body = el("tbody");
  for (const [k, v] of pairs) {
    const r = el("tr");
    r.appendChild(el("th", {scope: "row"}, headText(k)));
    r.appendChild(el("td", {}, cellText(k, v)));
    body.appendChild(r);
  }
  t.appendChild(body);
  return t;
}

const isTable = (v) => v && typeof v === "object" && Array.isArray(v.columns) && Array.isArray(v.rows);
const isScalar = (v) => v === null || ["string", "number", "boolean"].includes(typeof v) || (Array.isArray(v) && v.every((x) => typeof x !== "object" || x === null));

// The rules (the brief) as sections: an upper-case line starts one, "- " lines are its items.
function rulesSections(text) {
  const wrap = el("div", {class: "rules"});
  let list = null;
  for (const line of String(text).split("\n")) {
    if (!line.trim()) { list = null; continue; }
    if (/^[A-Z][A-Z ,&-]+$/.test(line.trim())) {
      wrap.appendChild(el("h4", {}, line.trim().charAt(0) + line.trim().slice(1).toLowerCase()));
      list = null;
    } else if (line.startsWith("- ")) {
      if (!list) list = wrap.appendChild(el("ul"));
      list.appendChild(el("li", {}, line.slice(2)));
    } else {
      wrap.appendChild(el("p", {}, line));
      list = null;
    }
  }
  return wrap;
}
