// The DOM helpers every page shares (loaded before the page's own script).
"use strict";
// The first element matching a CSS selector.
const $ = (sel) => document.querySelector(sel);
// A new element with attributes and, unless null or undefined, text.
const el = (tag, attrs, text) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
};
// The JSON a page's template put in <script type="application/json" id="...">.
const pageData = (id) => JSON.parse(document.getElementById(id).textContent);
