"""Keyword search over the catalog, as a wholesale site's search box works (docs/design.md §8,
`search_products`).

A product matches a query when every query word occurs in its title or category name (after the
normalisation of `tokenize`), it is visible in the current `CatalogView`, and it passes every
filter. Matches are ranked by BM25 (the `bm25s` library, Lucene variant) or by another sort key;
ties always go to the lower product index, so a search is a pure function of its inputs.

Requiring every word keeps the non-relevance sorts honest ("storage box" sorted by price lists
storage boxes, not every cheap box) and makes an unknown word yield no match rather than noise.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from merchantbench.catalog import verified
from merchantbench.catalog.market import CatalogView, Market
from merchantbench.catalog.sort_keys import SORT_KEYS, SortKey

# Bump when tokenisation or scoring changes: saved indexes of an older format are rebuilt.
INDEX_FORMAT = 4  # 2: content hashes (catalog.verified); 3: fingerprint of the text bytes;
# 4: the score matrix in files of our own (bm25s is needed to build an index, not to read one)
_META = "search_meta.json"
MATCH_MEMO = 1024  # distinct queries whose matches an index keeps

# Words that carry no product meaning; dropped from titles and queries alike so that
# "box for cats" finds "Cat Litter Box" and "Box with Lid" needs no "with" in the query.
STOPWORDS = frozenset(
    ("a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the",
     "to", "with", "without")
)  # fmt: skip

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")


def singular(word: str) -> str:
    """Fold a plural English word to its singular by suffix rules ("boxes" → "box").

    The rules only need to be consistent between titles and queries, not linguistically perfect.
    """
    if not word.isalpha() or len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@functools.lru_cache(maxsize=1 << 16)
def _run_terms(run: str) -> tuple[str, ...]:
    """Terms of one lowercase run of letters and digits (titles repeat words: memoised)."""
    if _CJK_RUN.fullmatch(run):
        return (run,) if len(run) == 1 else tuple(run[k : k + 2] for k in range(len(run) - 1))
    if run in STOPWORDS or (len(run) == 1 and run.isalpha()):
        return ()
    return (singular(run),)


def tokenize(text: str) -> list[str]:
    """Search terms of a title or query.

    Lowercase; split on anything not a letter or digit; drop stopwords and single letters; fold
    plurals. Runs of Chinese characters (real 1688 titles) become overlapping character bigrams,
    the usual unit of Chinese keyword search.
    """
    return [term for run in _WORD.findall(text.lower()) for term in _run_terms(run)]


@dataclass(frozen=True)
class SearchFilters:
    """Optional constraints; `None` means no constraint. Bounds are inclusive.

    Prices are RMB on the current procurement price; ratings on the 1–5 scale; hours on the
    current ship hours (delays included) and the logistics hours; `category` is a category name.
    """

    # Callers pass these positionally (tools.sourcing, cli.catalog_search): keep the order.
    min_price: float | None = None
    max_price: float | None = None
    min_supplier_rating: float | None = None
    min_product_rating: float | None = None
    max_ship_hours: int | None = None
    max_logistics_hours: int | None = None
    min_stock: int | None = None
    category: str | None = None


@dataclass(frozen=True)
class SearchPage:
    """One page of results: product indices in rank order and their BM25 scores (0 when browsing).

    `total` counts every match; `pages` = ceil(total / page_size), 0 when nothing matched. A page
    past the last is empty.
    """

    products: tuple[int, ...]
    scores: tuple[float, ...]
    total: int
    page: int
    page_size: int
    pages: int


def _fingerprint(market: Market) -> str:
    digest = hashlib.sha256(f"{INDEX_FORMAT}|{market.n_products}|".encode())
    digest.update("\x1f".join(market.categories).encode())
    for column in (market.product_ids, market.titles):
        # As fixed-width text (what the market cache stores): hashing its bytes is ~30× faster
        # than joining a hundred thousand strings.
        text = np.ascontiguousarray(np.asarray(column).astype(str, copy=False))
        digest.update(f"{text.dtype.str}|".encode())
        digest.update(text.tobytes())
    digest.update(np.ascontiguousarray(market.category, dtype=np.int16).tobytes())
    return digest.hexdigest()


_PRICE_BOUND_FEN = 1 << 62  # beyond any price; keeps a filter bound inside int64


def _rmb_to_fen(rmb: float) -> int:
    """A filter bound in fen; an absurd bound (1e306 RMB) clamps instead of overflowing."""
    fen = rmb * 100
    return round(fen) if abs(fen) < _PRICE_BOUND_FEN else _PRICE_BOUND_FEN


@dataclass(frozen=True, eq=False)
class BM25Scores:
    """What a search needs of a BM25 index: the sparse matrix of each term's score in each
    product (CSC: term `j`'s products are `indices[indptr[j]:indptr[j + 1]]`, their scores the
    same slice of `data`) and the vocabulary (term → column)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    vocab: dict[str, int]

    _FILES = ("indptr", "indices", "data")

    def save(self, directory: Path) -> None:
        for name in self._FILES:
            np.save(directory / f"scores.{name}.npy", getattr(self, name))
        (directory / "vocab.json").write_text(json.dumps(self.vocab, ensure_ascii=False))

    @classmethod
    def load(cls, directory: Path) -> BM25Scores:
        arrays = {name: np.load(directory / f"scores.{name}.npy") for name in cls._FILES}
        vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
        return cls(**arrays, vocab=vocab)


def _bm25_scores(corpus: list[list[str]]) -> BM25Scores:
    """Index tokenised documents with `bm25s` (Lucene variant) and keep its score matrix."""
    import bm25s  # imported to build an index only: it pulls in scipy.sparse (~0.2 s)

    bm25 = bm25s.BM25()
    bm25.index(corpus, show_progress=False)
    if bm25.nonoccurrence_array is not None:  # BM25L / BM25+ score absent terms too
        raise ValueError("the search index must use a BM25 variant without absent-term scores")
    matrix = bm25.scores
    dtype = np.dtype(bm25.dtype)
    return BM25Scores(
        indptr=np.asarray(matrix["indptr"]),
        indices=np.asarray(matrix["indices"]),
        data=np.asarray(matrix["data"]).astype(dtype, copy=False),
        vocab={str(term): int(column) for term, column in bm25.vocab_dict.items()},
    )


class SearchIndex:
    """BM25 index over title + category name of every product of one market.

    Build with `SearchIndex.build(market)`; cache beside the market with `save` and `load`.
    """

    def __init__(self, market: Market, scores: BM25Scores) -> None:
        self.market = market
        self._scores = scores
        self._supplier_rating = market.shop_rating[market.supplier]
        self._category_of = {name: k for k, name in enumerate(market.categories)}
        self._score_dtype = scores.data.dtype
        self._posting_memo: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._match_memo: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
        self._term_memo: dict[str, tuple[int, ...]] = {}  # query → term ids, () browse
        self._fixed_memo: dict[
            tuple[tuple[int, ...], _FixedFilters], tuple[np.ndarray, np.ndarray]
        ] = {}
        self._memo_lock = threading.Lock()

    @classmethod
    def build(cls, market: Market) -> SearchIndex:
        """Tokenise every product's title and category name and index them."""
        names = [tokenize(name.replace("_", " ")) for name in market.categories]
        corpus = [
            tokenize(str(title)) + names[cat]
            for title, cat in zip(market.titles, market.category, strict=True)
        ]
        return cls(market, _bm25_scores(corpus))

    def save(self, directory: Path) -> None:
        """Write the index to `directory` (created if missing), tagged with the market's
        fingerprint so that `load` refuses an index of another market."""
        directory.mkdir(parents=True, exist_ok=True)
        self._scores.save(directory)
        meta = {"format": INDEX_FORMAT, "fingerprint": _fingerprint(self.market)}
        (directory / _META).write_text(json.dumps(meta))
        verified.seal(directory)

    @classmethod
    def load(cls, directory: Path, market: Market) -> SearchIndex:
        """Read an index written by `save` for this very market.

        Raises:
            ValueError: the directory holds no index, or an index of another market or format.
        """
        meta_path = directory / _META
        if not meta_path.is_file():
            raise ValueError(f"no search index in {directory}")
        meta = json.loads(meta_path.read_text())
        if meta.get("format") != INDEX_FORMAT or meta.get("fingerprint") != _fingerprint(market):
            raise ValueError(f"search index in {directory} belongs to another market or format")
        verified.check(directory)
        return cls(market, BM25Scores.load(directory))

    @classmethod
    def load_or_build(cls, directory: Path, market: Market) -> SearchIndex:
        """Load the index cached in `directory`, or build it and cache it there.

        The index is written into a temporary sibling and renamed into place, so a concurrent
        reader never sees half an index; if another process publishes first, its (identical)
        index is kept.
        """
        try:
            return cls.load(directory, market)
        except verified.DamagedCache as exc:
            verified.notice(f"search index {exc}")
        except (ValueError, OSError, EOFError, KeyError):
            pass  # none yet, another market's, or one being replaced: build ours
        index = cls.build(market)
        directory.parent.mkdir(parents=True, exist_ok=True)
        temp = Path(tempfile.mkdtemp(prefix=f".tmp-{directory.name}-", dir=directory.parent))
        try:
            index.save(temp)
            if directory.exists():
                if _loads(directory, market):  # another process published first: keep theirs
                    return index
                shutil.rmtree(directory, ignore_errors=True)  # an index of another market
            os.rename(temp, directory)
        except OSError:
            if not (directory / _META).is_file():
                raise
        finally:
            shutil.rmtree(temp, ignore_errors=True)
        return index

    def _postings(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Products containing a term, ascending, and the term's BM25 score in each: a column
        of the sparse score matrix, memoised per term."""
        found = self._posting_memo.get(term_id)
        if found is None:
            matrix = self._scores
            lo, hi = int(matrix.indptr[term_id]), int(matrix.indptr[term_id + 1])
            products = np.asarray(matrix.indices[lo:hi], dtype=np.int64)
            scores = np.asarray(matrix.data[lo:hi]).astype(self._score_dtype, copy=False)
            if len(products) > 1 and not bool(np.all(products[1:] > products[:-1])):
                order = np.argsort(products, kind="stable")
                products, scores = products[order], scores[order]
            occurs = scores > 0  # as the dense scores count an occurrence
            found = self._posting_memo[term_id] = (products[occurs], scores[occurs])
        return found

    def _query_terms(self, query: str) -> list[int] | None:
        """Vocabulary ids of the query's distinct terms, in query order; None when the query
        has no terms (browse), [] when some term occurs nowhere (nothing can match)."""
        key = self._term_key(query)
        return None if key is None else list(key)

    def _term_key(self, query: str) -> tuple[int, ...] | None:
        """`_query_terms` as the (memoised, immutable) tuple that keys the match memos."""
        found = self._term_memo.get(query)
        if found is None:
            terms = list(dict.fromkeys(tokenize(query)))
            vocab = self._scores.vocab
            if not terms:
                found = ()
            elif any(term not in vocab for term in terms):
                found = (-1,)  # some term occurs nowhere
            else:
                found = tuple(vocab[term] for term in terms)
            with self._memo_lock:
                _remember(self._term_memo, query, found, MATCH_MEMO)
        if not found:
            return None
        return () if found == (-1,) else found

    def matches(self, query: str) -> tuple[np.ndarray, np.ndarray] | None:
        """Products containing every query term (ascending) and their BM25 scores, as
        read-only arrays; None when the query has no terms (browse).

        Scores are summed term by term in query order in the index's float dtype, so each
        equals the dense `relevance` score of the product bit for bit. Agents repeat their
        keywords (a rule-based year asks 37 distinct ones 1,854 times), so the answers of
        the last `MATCH_MEMO` distinct term lists are kept.
        """
        key = self._term_key(query)
        return None if key is None else self._matches_of(key)

    def _matches_of(self, key: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        found = self._match_memo.get(key)
        if found is None:
            found = self._intersect(list(key))
            for array in found:
                array.setflags(write=False)
            with self._memo_lock:
                _remember(self._match_memo, key, found, MATCH_MEMO)
        return found

    def _fixed_passing(
        self, key: tuple[int, ...], filters: SearchFilters
    ) -> tuple[np.ndarray, np.ndarray]:
        """The matches of term list `key` that pass the filters on fixed product facts
        (ratings, logistics hours, category), ascending, and their BM25 scores, as read-only
        arrays; memoised with the matches, since agents repeat their filters with their
        keywords."""
        fixed = _fixed_filters(filters)
        memo_key = (key, fixed)
        found = self._fixed_memo.get(memo_key)
        if found is None:
            products, scores = self._matches_of(key)
            kept = np.arange(len(products))
            for values, passes in self._fixed_tests(fixed):
                kept = kept[passes(values[products[kept]])]
            found = (products[kept], scores[kept])
            for array in found:
                array.setflags(write=False)
            with self._memo_lock:
                _remember(self._fixed_memo, memo_key, found, 4 * MATCH_MEMO)
        return found

    def _intersect(self, term_ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        if not term_ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=self._score_dtype)
        postings = [self._postings(term_id) for term_id in term_ids]
        # Intersect from the rarest term: each step looks the survivors up in a sorted column.
        products = min(postings, key=lambda posting: len(posting[0]))[0]
        for column, _ in postings:
            at = np.minimum(np.searchsorted(column, products), max(len(column) - 1, 0))
            products = products[column[at] == products] if len(column) else products[:0]
        scores = np.zeros(len(products), dtype=self._score_dtype)
        for column, term_scores in postings:
            scores += term_scores[np.searchsorted(column, products)]
        return products, scores

    def relevance(self, query: str) -> tuple[np.ndarray, np.ndarray] | None:
        """BM25 scores of all products and the mask of products containing every query term;
        None when the query has no terms (browse)."""
        term_ids = self._query_terms(query)
        if term_ids is None:
            return None
        n = self.market.n_products
        scores = np.zeros(n, dtype=self._score_dtype)
        every = np.ones(n, dtype=bool)
        if not term_ids:
            return scores, ~every
        for term_id in term_ids:
            # Lucene IDF is positive, so a term's score is > 0 exactly where the term occurs.
            products, term_scores = self._postings(term_id)
            here = np.zeros(n, dtype=bool)
            here[products] = True
            every &= here
            scores[products] += term_scores
        return scores, every

    def search(
        self,
        query: str,
        view: CatalogView,
        filters: SearchFilters = SearchFilters(),
        sort: SortKey = "relevance",
        page: int = 1,
        page_size: int = 20,
    ) -> SearchPage:
        """Find visible products matching `query` and `filters`; return one page in `sort` order.

        An empty query (or one made only of stopwords) browses every visible product; its
        `relevance` order is sales_30d, highest first. Sorts: `relevance` (BM25, highest first),
        `price_asc`, `price_desc` (current procurement price), `rating` (historical average
        rating, highest first), `sales_30d` (highest first), `ship_speed` (ship + logistics
        hours, fastest first). Ties go to the lower product index.

        Raises:
            ValueError: unknown sort key or category, page < 1 or page_size < 1.
        """
        if sort not in SORT_KEYS:
            raise ValueError(f"unknown sort {sort!r}; choose from {', '.join(SORT_KEYS)}")
        if page < 1 or page_size < 1:
            raise ValueError(f"page and page_size must be >= 1, got {page} and {page_size}")
        if filters.category is not None and filters.category not in self._category_of:
            known = ", ".join(self.market.categories)
            raise ValueError(f"unknown category {filters.category!r}; choose from {known}")
        key = self._term_key(query)
        if key is None:
            candidates = self._passing(view, filters)
            scores = np.zeros(len(candidates), dtype=self._score_dtype)
            sort = "sales_30d" if sort == "relevance" else sort
        else:
            # Filters read only the matching products' rows: a keyword matches few of them.
            rows, row_scores = self._fixed_passing(key, filters)
            # Few products are left: every test of what the view shows reads all of them.
            shown = view.take("visible", rows)
            for column, compare, bound in _view_tests(filters):
                shown &= compare(view.take(column, rows), bound)
            candidates, scores = rows[shown], row_scores[shown]
        keys = self._sort_keys(sort, candidates, view, scores)
        chosen = _first_k_in_order(keys, page * page_size)[(page - 1) * page_size :]
        total = len(candidates)
        return SearchPage(
            products=tuple(candidates[chosen].tolist()),
            scores=tuple(scores[chosen].astype(np.float64).tolist()),
            total=total,
            page=page,
            page_size=page_size,
            pages=math.ceil(total / page_size),
        )

    def _passing(self, view: CatalogView, filters: SearchFilters) -> np.ndarray:
        """The visible products that pass every filter, ascending; the category is known
        (checked by `search`). Each filter reads only the survivors of the previous ones."""
        kept = np.flatnonzero(view.visible)
        for values, passes in self._fixed_tests(_fixed_filters(filters)):
            kept = kept[passes(values[kept])]
        for column, compare, bound in _view_tests(filters):
            kept = kept[compare(view.take(column, kept), bound)]
        return kept

    def _fixed_tests(self, fixed: _FixedFilters) -> list[tuple[np.ndarray, _Test]]:
        """(per-product values, test) of each filter set on fixed product facts."""
        m = self.market
        min_supplier_rating, min_product_rating, max_logistics_hours, category = fixed
        tests: list[tuple[np.ndarray, _Test]] = []
        if min_supplier_rating is not None:
            shop = np.float32(min_supplier_rating)
            tests.append((self._supplier_rating, lambda v: v >= shop))
        if min_product_rating is not None:
            rating = np.float32(min_product_rating)
            tests.append((m.historical_avg_rating, lambda v: v >= rating))
        if max_logistics_hours is not None:
            logistics = max_logistics_hours
            tests.append((m.logistics_hours, lambda v: v <= logistics))
        if category is not None:
            number = self._category_of[category]
            tests.append((m.category, lambda v: v == number))
        return tests

    def _sort_keys(
        self, sort: str, candidates: np.ndarray, view: CatalogView, scores: np.ndarray
    ) -> np.ndarray:
        """Ascending keys of the candidates for `sort` (descending orders are negated);
        `scores` are the candidates' own BM25 scores."""
        if sort == "relevance":
            return -scores
        if sort == "price_asc":
            return view.take("price_fen", candidates)
        if sort == "price_desc":
            return -view.take("price_fen", candidates)
        if sort == "rating":
            return -self.market.historical_avg_rating[candidates]
        if sort == "sales_30d":
            return -view.take("sales_30d", candidates)
        return view.take("ship_hours", candidates).astype(np.int64) + self.market.logistics_hours[
            candidates
        ].astype(np.int64)


_Test = Callable[[np.ndarray], np.ndarray]
_ViewTest = tuple[str, np.ufunc, int]  # (view column, comparison, bound): passes where true
_SORT_ALL_UP_TO = 512  # candidates a plain stable sort ranks faster than a partition first
# (min_supplier_rating, min_product_rating, max_logistics_hours, category) of a SearchFilters.
_FixedFilters = tuple[float | None, float | None, int | None, str | None]


def _fixed_filters(filters: SearchFilters) -> _FixedFilters:
    f = filters
    return (f.min_supplier_rating, f.min_product_rating, f.max_logistics_hours, f.category)


def _view_tests(filters: SearchFilters) -> list[_ViewTest]:
    """(view column, comparison, bound) of each filter set on what the view shows now;
    bounds are inclusive. Plain tuples, not closures: a search builds them on every call."""
    f = filters
    tests: list[_ViewTest] = []
    if f.min_price is not None:
        tests.append(("price_fen", np.greater_equal, _rmb_to_fen(f.min_price)))
    if f.max_price is not None:
        tests.append(("price_fen", np.less_equal, _rmb_to_fen(f.max_price)))
    if f.max_ship_hours is not None:
        tests.append(("ship_hours", np.less_equal, f.max_ship_hours))
    if f.min_stock is not None:
        tests.append(("stock", np.greater_equal, f.min_stock))
    return tests


def _remember(memo: dict, key: object, value: object, size: int) -> None:
    """Keep `value` under `key`, dropping the oldest entry when `memo` holds `size`."""
    if len(memo) >= size:
        memo.pop(next(iter(memo)))
    memo[key] = value


def _first_k_in_order(keys: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k smallest keys, in key order, ties by position.

    Candidates are ascending product indices, so a stable sort breaks ties by product index.
    When k is small against the candidates, a partition first narrows them to those with key ≤
    the k-th key.
    """
    if len(keys) <= _SORT_ALL_UP_TO:
        return keys.argsort(kind="stable")[:k]  # the stable order, cut: the same positions
    if k < len(keys):
        kth = np.partition(keys, k - 1)[k - 1]
        below = keys < kth
        at = np.flatnonzero(keys == kth)[: k - int(below.sum())]
        keep = np.sort(np.concatenate((np.flatnonzero(below), at)))
        return keep[np.argsort(keys[keep], kind="stable")]
    return np.argsort(keys, kind="stable")


def _loads(directory: Path, market: Market) -> bool:
    """Whether `directory` holds a complete index of this market."""
    try:
        SearchIndex.load(directory, market)
    except (ValueError, OSError):
        return False
    return True
