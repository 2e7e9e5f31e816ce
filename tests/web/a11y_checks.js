// Focused accessibility checks run in the page (WCAG 2.1 AA: names, labels, contrast).
// Returns a list of problems, empty when the page passes.
() => {
  const problems = [];
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    const s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== "hidden" && s.display !== "none";
  };
  const name = (el) => (el.getAttribute("aria-label") || "").trim()
    || (el.id && document.querySelector(`label[for="${CSS.escape(el.id)}"]`)?.textContent.trim())
    || (el.closest("label")?.textContent.trim()) || (el.getAttribute("title") || "").trim();
  if (!document.documentElement.lang) problems.push("html has no lang");
  if (!document.title.trim()) problems.push("page has no title");
  if (!document.querySelector("h1")) problems.push("page has no h1");
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (!name(el)) problems.push(`unlabelled ${el.tagName.toLowerCase()} ${el.outerHTML.slice(0, 80)}`);
  }
  for (const el of document.querySelectorAll("button, a[href]")) {
    if (!(el.textContent.trim() || el.getAttribute("aria-label"))) problems.push(`nameless ${el.outerHTML.slice(0, 80)}`);
  }
  for (const el of document.querySelectorAll("svg")) {
    if (el.getAttribute("role") !== "img" || !el.getAttribute("aria-label")) problems.push("svg chart without role=img and a label");
  }
  const ids = new Set();
  for (const el of document.querySelectorAll("[id]")) {
    if (ids.has(el.id)) problems.push(`duplicate id ${el.id}`);
    ids.add(el.id);
  }
  // Contrast of every visible text against its effective background.
  const rgba = (c) => { const m = c.match(/[\d.]+/g).map(Number); return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; };
  const lum = ({r, g, b}) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (let n = el; n; n = n.parentElement) {
      const c = rgba(getComputedStyle(n).backgroundColor);
      if (c.a > 0.5) return c;
    }
    return {r: 255, g: 255, b: 255, a: 1};
  };
  for (const el of document.querySelectorAll("body *")) {
    const text = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!text || !visible(el) || el.closest("svg")) continue;
    const s = getComputedStyle(el);
    const fg = lum(rgba(s.color)), bg = lum(background(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    const large = parseFloat(s.fontSize) >= 24 || (parseFloat(s.fontSize) >= 18.66 && Number(s.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) problems.push(`contrast ${ratio.toFixed(2)} for "${el.textContent.trim().slice(0, 40)}"`);
  }
  return problems;
}
