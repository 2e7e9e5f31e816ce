"""Keyword search: matching, BM25 ranking, filters, sorts, paging, visibility, determinism."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from handmade_market import ITEMS, SUPPLIERS, Events, Item, handmade_market
from typer.testing import CliRunner

from merchantbench.catalog.cache import get_market
from merchantbench.catalog.search import (
    SORT_KEYS,
    SearchFilters,
    SearchIndex,
    singular,
    tokenize,
)
from merchantbench.catalog.view import catalog_view_at
from merchantbench.cli import app
from merchantbench.scenario import load_scenario

DELISTED = 1  # "Plastic Storage Box Stackable Transparent", delisted hours 0–100
LATE_LAUNCH = next(i for i, item in enumerate(ITEMS) if item.launch_day == 5)


@pytest.fixture(scope="module")
def market():
    return handmade_market(events=Events(delisting=[(DELISTED, 0, 100, 0.0)]))


@pytest.fixture(scope="module")
def index(market):
    return SearchIndex.build(market)


@pytest.fixture(scope="module")
def view(market):
    return catalog_view_at(market, 0)


def titles(market, page) -> list[str]:
    return [str(market.titles[i]) for i in page.products]


def everything(index, view, query="", filters=SearchFilters(), sort="relevance"):
    return index.search(query, view, filters, sort, page=1, page_size=1000)


def test_tokenize_lowercases_splits_drops_stopwords_and_folds_plurals():
    assert tokenize("Foldable Oxford-Cloth Storage BOXES with Lid!") == [
        "foldable", "oxford", "cloth", "storage", "box", "lid",
    ]  # fmt: skip
    assert tokenize("Women's Dresses, 2 pcs") == ["women", "dress", "2", "pcs"]
    assert [singular(w) for w in ("accessories", "brushes", "glass", "bus", "pots")] == [
        "accessory", "brush", "glass", "bus", "pot",
    ]  # fmt: skip
    assert tokenize("收纳盒 大号") == ["收纳", "纳盒", "大号"]


def test_every_query_word_must_match(market, index, view):
    found = titles(market, everything(index, view, "storage box"))
    assert set(found) == {
        "Foldable Oxford Cloth Storage Box with Lid",
        "Large Fabric Storage Boxes for Clothes",
        "Bamboo Storage Box Desk Organizer",
        "Storage Box Drawer Type Plastic",
    }
    assert "Under Bed Storage Bag Zipper" in titles(market, everything(index, view, "storage"))


def test_bm25_ranks_shorter_and_rarer_matches_first(market, index, view):
    page = everything(index, view, "storage box")
    assert list(page.scores) == sorted(page.scores, reverse=True)
    # The longest title (7 words) ranks last among titles holding each word once.
    assert titles(market, page)[-1] == "Foldable Oxford Cloth Storage Box with Lid"
    # "ballpoint" is rarer than "pen", so it weighs more in the sum.
    pens = everything(index, view, "ballpoint pen")
    holder = everything(index, view, "pen holder")
    assert max(pens.scores) > max(everything(index, view, "pen").scores)
    assert titles(market, holder) == ["Desk Organizer Mesh Pen Holder"]


def test_query_normalisation_and_unknown_words(market, index, view):
    base = everything(index, view, "storage box")
    for query in ("STORAGE-BOXES!", "box for storage", "the storage boxes"):
        assert everything(index, view, query).products == base.products
    for query in ("hoverboard", "storage hoverboard"):
        page = everything(index, view, query)
        assert page.total == 0 and page.pages == 0 and page.products == ()


def test_category_name_is_searchable(market, index, view):
    office = {i for i, item in enumerate(ITEMS) if item.category == "office"}
    assert set(everything(index, view, "office").products) == office
    garden = everything(index, view, "garden")
    assert {ITEMS[i].category for i in garden.products} == {"pet_garden"}


def test_unlaunched_and_delisted_products_are_invisible(market, index):
    early, later = catalog_view_at(market, 0), catalog_view_at(market, 5 * 24)
    early_found = everything(index, early, "storage box").products
    later_found = everything(index, later, "storage box").products
    assert DELISTED not in early_found and LATE_LAUNCH not in early_found
    assert DELISTED in later_found and LATE_LAUNCH in later_found
    assert everything(index, early).total == len(ITEMS) - 2


def _expected(market, view, keep, key) -> list[int]:
    chosen = [i for i in range(market.n_products) if view.visible[i] and keep(i)]
    return sorted(chosen, key=lambda i: (key(i), i))


FILTER_CASES = {
    "min_price": (SearchFilters(min_price=12.5), lambda m, v, i: v.price_fen[i] >= 1250),
    "max_price": (SearchFilters(max_price=9.9), lambda m, v, i: v.price_fen[i] <= 990),
    "min_supplier_rating": (
        SearchFilters(min_supplier_rating=4.8),
        lambda m, v, i: SUPPLIERS[ITEMS[i].supplier].shop_rating >= 4.8,
    ),
    "min_product_rating": (
        SearchFilters(min_product_rating=4.6),
        lambda m, v, i: ITEMS[i].rating >= 4.6 - 1e-6,
    ),
    "max_ship_hours": (SearchFilters(max_ship_hours=12), lambda m, v, i: ITEMS[i].ship <= 12),
    "max_logistics_hours": (
        SearchFilters(max_logistics_hours=24),
        lambda m, v, i: ITEMS[i].logistics <= 24,
    ),
    "min_stock": (SearchFilters(min_stock=150), lambda m, v, i: v.stock[i] >= 150),
    "category": (SearchFilters(category="bags"), lambda m, v, i: ITEMS[i].category == "bags"),
}


@pytest.mark.parametrize("name", FILTER_CASES)
def test_each_filter_keeps_exactly_the_products_it_should(market, index, name):
    filters, keep = FILTER_CASES[name]
    view = catalog_view_at(market, 0, stock={i: 100 for i in range(0, market.n_products, 3)})
    page = everything(index, view, "", filters, sort="price_asc")
    expected = _expected(market, view, lambda i: keep(market, view, i), lambda i: view.price_fen[i])
    assert 0 < page.total < view.visible.sum()
    assert list(page.products) == expected


def test_filters_combine_with_a_query(market, index, view):
    page = everything(index, view, "storage", SearchFilters(max_price=13, min_supplier_rating=4.5))
    assert titles(market, page) == ["Foldable Oxford Cloth Storage Box with Lid"]


SORT_REFERENCE = {
    "price_asc": lambda m, v, i: v.price_fen[i],
    "price_desc": lambda m, v, i: -v.price_fen[i],
    "rating": lambda m, v, i: -ITEMS[i].rating,
    "sales_30d": lambda m, v, i: -v.sales_30d[i],
    "ship_speed": lambda m, v, i: ITEMS[i].ship + ITEMS[i].logistics,
    "relevance": lambda m, v, i: -v.sales_30d[i],  # browsing: relevance means best sellers
}


@pytest.mark.parametrize("sort", SORT_KEYS)
def test_each_sort_orders_with_ties_by_product_index(market, index, view, sort):
    page = everything(index, view, "", sort=sort)
    key = SORT_REFERENCE[sort]
    assert list(page.products) == _expected(
        market, view, lambda i: True, lambda i: key(market, view, i)
    )


def test_sorting_a_query_keeps_its_matches(market, index, view):
    by_relevance = everything(index, view, "storage box")
    by_price = everything(index, view, "storage box", sort="price_asc")
    assert set(by_price.products) == set(by_relevance.products)
    assert [market.base_price_fen[i] for i in by_price.products] == sorted(
        market.base_price_fen[i] for i in by_price.products
    )
    # Scores follow their products whatever the order.
    score_of = dict(zip(by_relevance.products, by_relevance.scores, strict=True))
    assert all(score_of[i] == s for i, s in zip(by_price.products, by_price.scores, strict=True))


@pytest.mark.parametrize("sort", SORT_KEYS)
@pytest.mark.parametrize("page_size", [1, 3, 7, 34])
def test_pages_partition_the_full_ranking(market, index, view, sort, page_size):
    full = everything(index, view, "", sort=sort).products
    pages = [index.search("", view, sort=sort, page=p, page_size=page_size) for p in range(1, 40)]
    assert all(p.total == len(full) for p in pages)
    assert pages[0].pages == -(-len(full) // page_size)
    assert tuple(i for p in pages for i in p.products) == full
    assert pages[pages[0].pages].products == ()


def test_bad_arguments_raise(index, view):
    with pytest.raises(ValueError, match="sort"):
        index.search("box", view, sort="cheapest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="page"):
        index.search("box", view, page=0)
    with pytest.raises(ValueError, match="category"):
        index.search("box", view, SearchFilters(category="shoes"))


def test_search_is_deterministic_and_survives_save_and_load(market, index, view, tmp_path):
    rebuilt = SearchIndex.build(market)
    index.save(tmp_path / "idx")
    loaded = SearchIndex.load(tmp_path / "idx", market)
    for query in ("storage box", "pen", "", "women", "flower pot"):
        for sort in SORT_KEYS:
            expected = index.search(query, view, sort=sort)
            assert rebuilt.search(query, view, sort=sort) == expected
            assert loaded.search(query, view, sort=sort) == expected


def test_an_index_is_refused_for_another_market(market, index, tmp_path):
    index.save(tmp_path / "idx")
    renamed = dataclasses.replace(market, titles=market.titles[::-1].copy())
    with pytest.raises(ValueError, match="another market"):
        SearchIndex.load(tmp_path / "idx", renamed)
    with pytest.raises(ValueError, match="no search index"):
        SearchIndex.load(tmp_path / "empty", market)
    rebuilt = SearchIndex.load_or_build(tmp_path / "idx", renamed)
    assert SearchIndex.load(tmp_path / "idx", renamed).search("box", catalog_view_at(renamed, 0))
    assert rebuilt.market is renamed


def test_chinese_titles_are_searchable():
    items = (
        Item("折叠收纳盒 带盖 牛津布", "home_goods", "收纳盒", 12.5),
        Item("塑料收纳箱 大号", "home_goods", "收纳箱", 9.0),
        Item("中性笔 黑色 0.5mm", "office", "中性笔", 1.2),
    )
    market = handmade_market(items=items)
    page = everything(SearchIndex.build(market), catalog_view_at(market, 0), "收纳盒")
    assert page.products == (0,)


def test_ties_at_a_page_boundary_are_broken_by_index():
    # Twenty identical products: every sort key ties, so pages must follow product index.
    items = tuple(Item("Yoga Mat Non Slip", "sports", "yoga mat", 20.0) for _ in range(20))
    market = handmade_market(items=items)
    index, view = SearchIndex.build(market), catalog_view_at(market, 0)
    for sort in SORT_KEYS:
        pages = [index.search("yoga mat", view, sort=sort, page=p, page_size=6) for p in (1, 2, 4)]
        assert [p.products for p in pages] == [tuple(range(6)), tuple(range(6, 12)), (18, 19)]
    assert np.unique(everything(index, view, "mat").scores).size == 1


def test_load_or_build_publishes_a_whole_index(market, tmp_path):
    directory = tmp_path / "cache" / "search"
    built = SearchIndex.load_or_build(directory, market)
    assert (directory / "search_meta.json").is_file()
    assert [p.name for p in directory.parent.iterdir()] == ["search"]  # no temporary left
    loaded = SearchIndex.load_or_build(directory, market)
    view = catalog_view_at(market, 0)
    assert loaded.search("storage", view) == built.search("storage", view)


def test_cli_search_prints_the_index_results(tmp_path, monkeypatch):
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(tmp_path))
    scenario = load_scenario("smoke")
    market = get_market(scenario, 2)
    word = str(market.type_names[market.type_id[0]]).split()[-1]
    args = ["catalog", "search", word, "-s", "smoke", "--seed", "2", "--day", "3"]
    args += ["--sort", "price_asc", "--max-price", "60", "--page-size", "5", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    view = catalog_view_at(market, 2 * 24)
    expected = SearchIndex.build(market).search(
        word, view, SearchFilters(max_price=60), "price_asc", 1, 5
    )
    assert [row[0] for row in printed["rows"]] == [market.product_ids[i] for i in expected.products]
    assert printed["total"] == expected.total > 0
    table = CliRunner().invoke(app, args[:-1])
    assert table.exit_code == 0 and str(market.product_ids[expected.products[0]]) in table.output
    bad = CliRunner().invoke(app, ["catalog", "search", "x", "-s", "smoke", "--sort", "cheap"])
    assert bad.exit_code == 2 and "unknown sort" in bad.output
