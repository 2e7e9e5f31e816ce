"""A person at the playground doing, each window, what the rule-based agent does
(agents/baselines/rule_based.py), with keyboard and clicks only, counted and timed.

Every window: deal with the new supply-chain events on my listings (delist a product its supplier
delisted or that now ships in more than 48 h, reprice to 2 × cost after a cost change). The first
window of each day as well: delist listings with no sale in 7 days and fill free slots from the
daily report's hot keywords (cost ≤ 20 RMB, ratings ≥ 4.5, ship ≤ 48 h, in stock, by 30-day
sales, at 2 × cost, never a product delisted before). Then end the window.

Two drivers of that workload: `ConsoleDriver` for the console (this branch's page), and
`FormsDriver` for the forms page it replaced (main before issue 22), which the benchmark runs
against that version of the package. Both read the screen (the DOM) to decide, as a person reads
it; only clicks, key presses and typed characters count as actions. An action's time runs from
the gesture until the page is idle again (no request in flight).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

MARKUP = 2.0
MAX_SHIP = 48
KEYWORDS_PER_DAY = 6
FILTERS = {  # the rule-based agent's search (set once, in the first window)
    "max_price": "20",
    "min_supplier_rating": "4.5",
    "min_product_rating": "4.5",
    "max_ship_hours": "48",
    "page_size": "20",
}
SELECTS = {"min_stock": "in_stock", "sort": "sales_30d"}
IDLE = "() => !document.body.classList.contains('busy')"
# Whether a click's target lies outside the viewport (the person scrolls to it first).
OFF_SCREEN = """(n) => { const r = n.getBoundingClientRect();
  return r.bottom > innerHeight || r.top < 0; }"""
# Added to the page before its own scripts (`page.add_init_script`): each key press or click
# starts a clock that stops at the first frame after the page is idle again (no request in
# flight, as both pages mark with `body.busy`). The browser's own time per gesture, without the
# test harness's; read with `Ui.browser_times`. A click the page's script makes (a key that
# presses a button) is part of the key's gesture, not one of its own. Each gesture is also kept
# in `mbGestures` with what it was and the requests it made (their time on the wire, and the
# server's own time from the answer's `Server-Timing: app;dur=MS` where the server sends one),
# for `Ui.gestures`.
INSTRUMENT = """
window.mbTimes = [];
window.mbGestures = [];
performance.setResourceTimingBufferSize(1000000);
const mbWhat = (ev) => {
  if (ev.type === 'keydown') return `key ${ev.key}`;
  const t = ev.target.closest('button, input, select, a, summary') || ev.target;
  const cls = typeof t.className === 'string' && t.className ? '.' + t.className.split(' ')[0] : '';
  return `click ${t.id ? '#' + t.id : t.tagName.toLowerCase() + cls}`;
};
const mbStart = (ev) => {
  if (!ev.isTrusted) return;  // a key's own click on a button (L, D) is the same gesture
  const t0 = performance.now();
  const what = mbWhat(ev);
  const idle = () => !(document.body && document.body.classList.contains('busy'));
  const done = () => {
    const t1 = performance.now();
    window.mbTimes.push(t1 - t0);
    const fetches = performance.getEntriesByType('resource')
      .filter((e) => e.startTime >= t0 && e.startTime <= t1 && !e.name.endsWith('/activity'))
      .map((e) => {
        const app = (e.serverTiming || []).find((s) => s.name === 'app');
        return {path: new URL(e.name).pathname.split('/').slice(3).join('/'),
                ms: e.responseEnd - e.startTime, server: app ? app.duration : null};
      });
    window.mbGestures.push({what, ms: t1 - t0, fetches});
  };
  const tick = () => requestAnimationFrame(idle() ? done : tick);
  setTimeout(tick, 0);
};
document.addEventListener('keydown', mbStart, true);
document.addEventListener('click', mbStart, true);
"""


@dataclass
class Ui:
    """The page, with every gesture counted and timed."""

    page: Any
    actions: int = 0
    times: list[float] = field(default_factory=list)  # seconds per gesture, until idle
    labels: list[str] = field(default_factory=list)  # what each gesture was (and "scroll")
    read_words: int = 0  # words the person read so far (`words`)
    words_by: dict[str, int] = field(default_factory=dict)  # ... by what was read

    def _timed(self, gesture: Any, count: int = 1, label: str = "") -> None:
        start = time.perf_counter()
        gesture()
        self.page.wait_for_function(IDLE)
        self.actions += count
        self.times.extend([(time.perf_counter() - start) / count] * count)
        self.labels.extend([label] * count)

    def click(self, selector: str) -> None:
        if self.page.locator(selector).first.evaluate(OFF_SCREEN):
            self.labels.append("scroll")  # the person scrolls to it first (not an action)
        self._timed(lambda: self.page.click(selector), label=f"click {selector}")

    def words(self, script: str, what: str = "other") -> int:
        """Read what `script` returns (text or a list of texts): its words are counted in
        `read_words` and `words_by` under `what` (for the reading operator); nothing is done."""
        found = self.page.evaluate(script)
        texts = found if isinstance(found, list) else [found or ""]
        n = sum(len(str(t).split()) for t in texts)
        self.read_words += n
        self.words_by[what] = self.words_by.get(what, 0) + n
        return n

    def press(self, key: str) -> None:
        self._timed(lambda: self.page.keyboard.press(key), label=f"key {key}")

    def type_into(self, selector: str, text: str) -> None:
        """Click a field, select what is there (one key), type `text` (a key per character)."""
        self.click(selector)
        self.press("Control+a")
        self._timed(lambda: self.page.keyboard.type(text), max(len(text), 1), "typed")

    def choose(self, selector: str, value: str) -> None:
        """Pick an option of a select: a click to open it, a click on the option."""
        self._timed(lambda: self.page.select_option(selector, value), 2, "choose")

    def browser_times(self) -> list[float]:
        """Seconds per gesture as the browser measured them (see INSTRUMENT), so far."""
        return [t / 1000 for t in self.page.evaluate("() => window.mbTimes || []")]

    def gestures(self) -> list[dict[str, Any]]:
        """Every gesture the browser timed so far: `what`, `ms`, `fetches` (see INSTRUMENT)."""
        return list(self.page.evaluate("() => window.mbGestures || []"))

    def read(self, script: str, arg: Any = None) -> Any:
        """What the screen shows (not an action, and not counted as reading: see `words`)."""
        return self.page.evaluate(script, arg)


@dataclass
class Person:
    """What the person remembers across windows (the rule-based agent's `dropped`)."""

    dropped: set[str] = field(default_factory=set)
    filters_set: bool = False


def window_index(ui: Ui) -> int:
    """The open window (0-based) as the header's clock says it; the run's windows once over."""
    text = ui.read("() => document.querySelector('#clock').textContent")
    if "run over" in text:
        return int(ui.read("() => store.window"))
    return int(text.split("window ")[1].split(" ")[0]) - 1


def end_window(ui: Ui, key: str = "e") -> None:
    before = window_index(ui)
    ui.press(key)
    ui.page.wait_for_function(
        "(w) => !document.querySelector('#clock').textContent.includes(`window ${w + 1} of`)",
        arg=before,
    )


# --- the console (this branch) --------------------------------------------------------------------
DIGEST = """() => [...document.querySelectorAll('#digest li.line')].map(li => ({
  kind: li.dataset.kind, product: li.dataset.product || null, ship: Number(li.dataset.ship || 0),
  listed: li.querySelector('.act-delist') !== null}))"""


class ConsoleDriver:
    """The workload on the console: digest buttons, tick-by-alert, keyword links, A and L."""

    def __init__(self, ui: Ui) -> None:
        self.ui = ui
        self.person = Person()

    def play_window(self) -> None:
        ui = self.ui
        window = window_index(ui)
        self.supply_events()
        if window % 2 == 0:
            self.daily()
        end_window(ui)

    def supply_events(self) -> None:
        ui = self.ui
        handled: set[tuple[str, str]] = set()
        while True:
            todo = None
            for line in ui.read(DIGEST):
                key = (line["kind"], line["product"])
                if not line["listed"] or key in handled:
                    continue
                doomed = line["kind"] == "supplier_delisted" or (
                    line["kind"] == "shipment_delayed" and line["ship"] > MAX_SHIP
                )
                if doomed:
                    todo = (key, "delist")
                elif line["kind"] in ("price_changed", "price_restored"):
                    todo = (key, "reprice")
                if todo:
                    break
            if todo is None:
                return
            (kind, pid), what = todo
            handled.add((kind, pid))
            button = f"#digest li[data-kind='{kind}'][data-product='{pid}'] .act-{what}"
            if what == "reprice" and not ui.read(f"() => !!document.querySelector({button!r})"):
                self.reprice_in_listings(pid)  # the digest offers no lower price: My listings
                continue
            ui.click(button)
            if what == "delist":
                self.person.dropped.add(pid)

    def reprice_in_listings(self, pid: str) -> None:
        """Reprice one listing to 2 × cost from My listings: tick its row, R."""
        ui = self.ui
        ui.press("3")
        ui.page.locator("#results-listings h3:text('review my listings')").wait_for()
        ui.click(f"#results-listings input.delist-pick[data-product='{pid}']")
        ui.press("r")
        ui.press("1")

    def daily(self) -> None:
        ui = self.ui
        ui.press("3")  # My listings: the review opens with the section
        ui.page.locator("#results-listings h3:text('review my listings')").wait_for()
        if ui.read("() => !!document.querySelector(\".tick-alert[data-alert='no_sales_7d']\")"):
            stale = ui.read(
                "() => [...document.querySelectorAll('#results-listings tr[data-product]')]"
                ".filter(tr => tr.textContent.includes('no sales 7d'))"
                ".map(tr => tr.dataset.product)"
            )
            ui.click(".tick-alert[data-alert='no_sales_7d']")
            ui.press("d")
            self.person.dropped.update(stale)
        free = ui.read("() => store.listing_cap - store.active_listings")
        if free <= 0:
            return
        if not self.person.filters_set:
            ui.press("/")
            for name, value in FILTERS.items():
                ui.type_into(f"#f-search_products-{name}", value)
            for name, value in SELECTS.items():
                ui.choose(f"#f-search_products-{name}", value)
            self.person.filters_set = True
            ui.press("Escape")  # out of the field: keys act again
        ui.press("1")
        ui.click("form[data-tool=get_daily_report] button[type=submit]")
        ui.page.locator("#results-today h3:text('get daily report')").wait_for()
        keywords = ui.read(
            "() => { const h = [...document.querySelectorAll('#results-today h4')]"
            ".find(h => h.textContent === 'hot keywords'); return h ? [...h.nextElementSibling"
            ".querySelectorAll('button.link')].map(b => b.textContent) : []; }"
        )[:KEYWORDS_PER_DAY]
        for n, word in enumerate(keywords):
            room = free - ui.read("() => basket.size")
            if room <= 0:
                break
            where = "#results-today" if n == 0 else "#find-keywords"  # then the chips on Find
            ui.click(f"{where} button.link:text-is('{word}')")
            ui.page.locator("#results-find h3:text('search products')").wait_for()
            rows = ui.read(
                "() => [...document.querySelectorAll('#results-find tr[data-product]')]"
                ".filter(tr => !tr.classList.contains('listed'))"
                ".filter(tr => !tr.querySelector('input:checked'))"
                ".map(tr => tr.dataset.product)"
            )
            wanted = [pid for pid in rows if pid not in self.person.dropped][:room]
            unwanted = [pid for pid in rows if pid not in wanted]
            if not wanted:
                pass
            elif len(unwanted) < len(wanted):  # A ticks every row; untick the rest
                ui.press("a")
                for pid in unwanted:
                    ui.click(f"#results-find input[data-product='{pid}']")
            else:
                for pid in wanted:
                    ui.click(f"#results-find input[data-product='{pid}']")
        if ui.read("() => basket.size"):
            ui.press("l")


# --- a competent participant on the console (issue 33) -------------------------------------------
# What the person reads, as texts: the digest's summary, its batches and kind headings, the
# headline of each line not under a heading (a heading stands for its lines); a preview whole;
# the status line after an action.
DIGEST_READ = """() => {
  const d = document.querySelector('#digest');
  const headed = new Set([...d.querySelectorAll('.kind-head')].map(h => h.dataset.kind));
  return [...d.querySelectorAll('.since, .group strong, .kind-head')].map(n => n.textContent)
    .concat([...d.querySelectorAll('li.line')].filter(li => !headed.has(li.dataset.kind))
      .map(li => li.querySelector('.what').textContent)); }"""
LINES_READ = "() => [...document.querySelectorAll('#digest .since, #digest li.line .what')]\
.map(n => n.textContent)"
# The next line to act on, line by line: [kind, product, delist|reprice] or null.
LINE_TODO = """(done) => { for (const li of document.querySelectorAll('#digest li.line')) {
  const pid = li.dataset.product;
  if (!pid || done.includes(pid) || !li.querySelector('.act-delist')) continue;
  const k = li.dataset.kind;
  if (k === 'supplier_delisted' || k === 'stockout' || (k === 'shipment_delayed'
      && Number(li.dataset.ship) > 48)) return [k, pid, 'delist'];
  if (li.querySelector('.act-reprice')) return [k, pid, 'reprice']; } return null; }"""
FREE_ROWS = """() => [...document.querySelectorAll('#results-find tr[data-product]')]
  .map((tr, i) => tr.classList.contains('listed') || tr.querySelector('input:disabled') ? -1 : i)
  .filter(i => i >= 0)"""
DIGEST_ALL = "() => document.querySelector('#digest').innerText"
PREVIEW = "() => document.querySelector('#preview').innerText"
STATUS = "() => document.querySelector('#status').textContent"
# The result columns a person reads to choose a product (per row).
ROW_READ = """(n) => [...document.querySelectorAll('#results-find tr[data-product]')].slice(0, n)
  .map(tr => [...tr.children].slice(2, 6).map(td => td.textContent).join(' '))"""
TARGET = 20  # listings kept
COMPETENT_FILTERS = {"max_price": "20", "min_product_rating": "4.5", "max_ship_hours": "48"}
PRUNE_EVERY = 14  # windows (a week) between prunings of listings without a sale in 7 days


@dataclass
class CompetentDriver:
    """A competent participant (issue 33): sets the search once and lists ~20 products; then
    fast-forwards until a supplier event on a listing, the balance under 500 RMB or a star
    change, reads the digest (every window it passed over), acts on each batch (preview, read
    it, Enter), refills to 20 listings from the search, prunes listings without a sale in 7
    days once a week, and fast-forwards again. `skipped[w]`: windows the fast-forward ended
    (passed over) at stop `w`."""

    ui: Ui
    batches: bool = True  # False: line by line, as the console before issue 33 offered
    pruned_at: int = 0
    digest_words_all: int = 0  # every word the digest showed at each stop (an upper bound)

    def setup(self) -> None:
        ui = self.ui
        ui.press("/")
        for name, value in COMPETENT_FILTERS.items():
            ui.type_into(f"#f-search_products-{name}", value)
        ui.choose("#f-search_products-sort", "sales_30d")
        ui.click("form[data-tool=search_products] button[type=submit]")
        ui.page.locator("#results-find tr[data-product]").first.wait_for()
        self.refill()
        ui.press("1")
        # Stop for what needs me (a lost supplier, late shipping: fines), not for each fine or
        # cost change (the next stop's digest has them all: one batch reprice then). Line by
        # line (the console before): one box stood for every supplier event.
        boxes = ("#ff-adverse", "#ff-supplier-cost", "#ff-rating-on")
        for box in boxes if self.batches else ("#ff-adverse", "#ff-rating-on"):
            ui.click(box)
        ui.click("#ff-rating-on")  # ... but a star change does: ticked again, rating 0.3
        ui.type_into("#ff-rating", "0.3")
        ui.press("Escape")

    def refill(self) -> None:
        """Tick the first rows not listed (J to move, X to tick) up to TARGET listings, read
        them, list them (L)."""
        ui = self.ui
        want = TARGET - int(ui.read("() => store.active_listings"))
        if want <= 0:
            return
        if not ui.read("() => !document.querySelector('#panel-find').hidden"):
            ui.press("2")
        ui.page.wait_for_function(IDLE)
        rows = ui.read(
            "() => [...document.querySelectorAll('#results-find tr[data-product]')]"
            ".map(tr => !tr.classList.contains('listed') && !tr.querySelector('input:checked'))"
        )
        picks = [i for i, free in enumerate(rows) if free][:want]
        ui.words(f"() => ({ROW_READ})({picks[-1] + 1 if picks else len(rows)})", "results")
        if not picks:
            return
        position = -1
        for i in picks:
            for _ in range(i - position):
                ui.press("j")
            position = i
            ui.press("x")
        ui.press("l")
        ui.page.wait_for_function(IDLE)
        ui.words(STATUS, "status")

    def prune(self) -> None:
        ui = self.ui
        ui.press("3")
        ui.page.locator("#results-listings h3:text('review my listings')").wait_for()
        alert = ".tick-alert[data-alert='no_sales_7d']"
        ui.words("() => document.querySelector('#tick-alerts').innerText", "listings")
        if ui.read(f'() => !!document.querySelector("{alert}")'):
            ui.click(alert)
            ui.press("d")
            ui.words(STATUS, "status")

    def stop(self, window: int) -> None:
        """Everything the person does at a window the fast-forward stopped at."""
        ui = self.ui
        self.digest_words_all += len(str(ui.read(DIGEST_ALL)).split())
        if not self.batches:
            self.line_by_line()
        else:
            self.batch()
        if window - self.pruned_at >= PRUNE_EVERY:
            self.pruned_at = window
            self.prune()
        self.refill()
        ui.press("1")

    def line_by_line(self) -> None:
        """The console before issue 33: every line read; each listing that lost its supplier
        or ships late: Delist, Find similar, tick the first product not listed, L; each cost
        rise: its Reprice button."""
        ui = self.ui
        ui.words(LINES_READ, "digest")
        done: set[str] = set()
        while True:
            todo = ui.read(LINE_TODO, sorted(done))
            if not todo:
                return
            kind, pid, what = todo
            done.add(pid)
            line = f"#digest li[data-kind='{kind}'][data-product='{pid}']"
            if what == "reprice":
                ui.click(f"{line} .act-reprice")
                ui.words(STATUS, "status")
                continue
            # The console before issue 33: Replace was one click, delist then find similar
            # (here: Delist, and the same search sent by the driver as part of that click).
            title = ui.read(f'() => document.querySelector("{line}").dataset.title')
            ui.click(f"{line} .act-delist")
            ui.read("(t) => findSimilar(t)", title)
            ui.page.wait_for_function(IDLE)
            rows = ui.read(FREE_ROWS)
            ui.words(f"() => ({ROW_READ})({rows[0] + 1 if rows else 20})", "results")
            if rows:
                ui.click(f"#results-find tr[data-product]:nth-child({rows[0] + 1}) input")
                ui.press("l")
                ui.words(STATUS, "status")
            ui.press("1")

    def batch(self) -> None:
        ui = self.ui
        ui.words(DIGEST_READ, "digest")
        for _ in range(6):  # each batch: B previews it, Enter does it
            if not ui.read("() => !!document.querySelector('#digest .group-act')"):
                break
            ui.press("b")
            ui.page.locator("#preview-go").wait_for()
            ui.words(PREVIEW, "preview")
            ui.press("Enter")
            ui.page.wait_for_function(IDLE)
            ui.words(STATUS, "status")

    def forward(self) -> int:
        """F; returns how many windows it ended."""
        ui = self.ui
        before = window_index(ui)
        ui.press("f")  # waits until the page is idle: the fast-forward's answer is drawn
        ui.words(STATUS, "status")
        return window_index(ui) - before


# --- the forms page (main before issue 22) -----------------------------------------------------
ROWS = """(sel) => [...document.querySelectorAll(sel + ' table.data tbody tr')].map(tr =>
  [...tr.querySelectorAll('td')].map(td => td.textContent))"""
HEADS = """(sel) => [...document.querySelectorAll(sel + ' table.data thead th')]
  .map(th => th.textContent)"""


class FormsDriver:
    """The same workload on the forms page: a form and a button per tool, ticks, typed prices."""

    def __init__(self, ui: Ui) -> None:
        self.ui = ui
        self.person = Person()

    def table(self, panel: str) -> list[dict[str, str]]:
        heads = self.ui.read(HEADS, f"#results-{panel}")
        return [
            dict(zip(heads, row, strict=False)) for row in self.ui.read(ROWS, f"#results-{panel}")
        ]

    def play_window(self) -> None:
        ui = self.ui
        window = window_index(ui)
        ui.press("5")
        ui.click("form[data-tool=query_supply_chain_anomalies] button[type=submit]")
        ui.page.locator("#results-supply h3").wait_for()
        doomed, reprice = [], {}
        for row in self.table("supply"):
            anomaly, pid = row.get("anomaly"), row.get("product id")
            if anomaly == "supplier_delisted" or (
                anomaly == "shipment_delayed" and int(row.get("ship hours", "0")) > MAX_SHIP
            ):
                doomed.append(pid)
            elif anomaly in ("price_changed", "price_restored"):
                reprice[pid] = round(float(row["procurement price"]) * MARKUP, 2)
        if doomed or reprice:
            ui.press("3")
            ui.click("form[data-tool=query_my_listings] button[type=submit]")
            ui.page.locator("#results-listings table.data").wait_for()
            for pid in doomed:
                ui.click(f"#results-listings input[data-product='{pid}']")
            if doomed:
                ui.click("#delist")
                self.person.dropped.update(doomed)
            for pid, price in reprice.items():
                if pid in doomed:
                    continue
                ui.type_into(
                    f"#results-listings input[aria-label='new price for {pid}']", f"{price:.2f}"
                )
                ui.click(f"#results-listings input[aria-label='new price for {pid}'] + button")
        if window % 2 == 0:
            self.daily()
        end_window(ui)

    def daily(self) -> None:
        ui = self.ui
        ui.press("3")
        ui.click("form[data-tool=review_my_listings] button[type=submit]")
        ui.page.locator("#results-listings h3:text('review my listings')").wait_for()
        rows = self.table("listings")
        stale = [r["product id"] for r in rows if "no_sales_7d" in r.get("alerts", "")]
        listed = {r["product id"] for r in rows} - set(stale)
        for pid in stale:
            ui.click(f"#results-listings input[data-product='{pid}']")
        if stale:
            ui.click("#delist")
            self.person.dropped.update(stale)
        facts = ui.read(
            "() => [...document.querySelectorAll('#results-listings dl.kv > dt')]"
            ".map(dt => [dt.textContent, dt.nextElementSibling.textContent])"
        )
        values = dict(facts)
        free = int(values.get("listing cap", "0")) - int(values.get("active listings", "0"))
        free += len(stale)
        if free <= 0:
            return
        ui.press("1")
        ui.click("form[data-tool=get_daily_report] button[type=submit]")
        ui.page.locator("#results-today h3").wait_for()
        keywords = ui.read(
            "() => { const dt = [...document.querySelectorAll('#results-today dt')]"
            ".find(d => d.textContent === 'hot keywords'); if (!dt) return [];"
            " return [...dt.nextElementSibling.querySelectorAll('dl.kv')].map(dl => {"
            " const i = [...dl.children].findIndex(c => c.textContent === 'keyword');"
            " return dl.children[i + 1].textContent; }); }"
        )[:KEYWORDS_PER_DAY]
        ui.press("2")
        if not self.person.filters_set:
            for name, value in FILTERS.items():
                ui.type_into(f"#f-search_products-{name}", value)
            for name, value in SELECTS.items():
                ui.choose(f"#f-search_products-{name}", value)
            self.person.filters_set = True
        chosen = 0
        for word in keywords:
            if chosen >= free:
                break
            ui.type_into("#f-search_products-query", word)
            ui.click("form[data-tool=search_products] button[type=submit]")
            ui.page.locator("#results-find h3").wait_for()
            for row in self.table("find"):
                pid = row.get("product id")
                if chosen >= free or pid in self.person.dropped or pid in listed:
                    continue
                if ui.read(
                    f"() => document.querySelector(\"input[data-product='{pid}']\").checked"
                ):
                    continue
                ui.click(f"#results-find input[data-product='{pid}']")
                chosen += 1
        if chosen:
            ui.click("#list-basket")
