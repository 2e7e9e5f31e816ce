"""Who sells what (docs/design.md §3), the first stage of the synthetic generator: suppliers with
heavy-tailed numbers of products, a main category, a main product type and a hidden quality;
products that inherit most of their supplier's quality; the product types of each category; and
the traps, chosen mostly among low-quality products."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from merchantbench.catalog import vocab
from merchantbench.catalog.parts import per_category
from merchantbench.scenario import MarketConfig

# Share of products per category (a general wholesale site: household goods and clothing lead).
CATEGORY_SHARES: dict[str, float] = {
    "office": 0.08, "womenswear": 0.14, "pet_garden": 0.08, "appliances": 0.09,
    "home_decor": 0.10, "home_goods": 0.15, "cleaning": 0.08, "toys": 0.10, "bags": 0.09,
    "sports": 0.09,
}  # fmt: skip

SUPPLIER_SIZE_TAIL = 1.4  # Pareto index of supplier size weights: most own 1–3 products
SUPPLIER_SIZE_CAP = 0.006  # no supplier holds more than this share of the extra products
MAIN_CATEGORY_SHARE = 0.85  # products in the supplier's main category
MAIN_TYPE_SHARE = 0.5  # of those, products of the supplier's main type
QUALITY_FROM_SUPPLIER = 0.7  # correlation of product quality with its supplier's quality
TRAP_QUALITY_PULL = 3.0  # traps are drawn with weight e^(-pull · quality): mostly poor shops


@dataclass(frozen=True)
class Suppliers:
    """The suppliers of a market, by supplier index."""

    size: np.ndarray
    main_category: np.ndarray
    main_type: np.ndarray  # local type index within the main category
    quality: np.ndarray


def draw_suppliers(rng: np.random.Generator, m: MarketConfig) -> Suppliers:
    """Supplier sizes (at least one product each), main categories, main types, quality."""
    if m.n_suppliers > m.n_products:
        raise ValueError("a market needs at least one product per supplier")
    weight = rng.pareto(SUPPLIER_SIZE_TAIL, m.n_suppliers) + 1.0
    weight = np.minimum(weight, SUPPLIER_SIZE_CAP * weight.sum())
    size = 1 + rng.multinomial(m.n_products - m.n_suppliers, weight / weight.sum())
    shares = per_category(CATEGORY_SHARES, m.categories, 0.1)
    main_category = rng.choice(len(m.categories), size=m.n_suppliers, p=shares / shares.sum())
    main_type = rng.integers(0, m.types_per_category, size=m.n_suppliers)
    # Larger shops are slightly better run: quality drifts up with log size.
    quality = rng.standard_normal(m.n_suppliers) + 0.1 * (np.log(size) - np.log(size).mean())
    return Suppliers(size, main_category, main_type, quality)


def _type_popularity(rng: np.random.Generator, m: MarketConfig) -> np.ndarray:
    """[n_categories, types_per_category] probabilities of a product being of each type."""
    weight = rng.lognormal(0.0, 0.8, size=(len(m.categories), m.types_per_category))
    return weight / weight.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Products:
    """Who sells each product, its category, its product type and its hidden quality."""

    supplier: np.ndarray
    category: np.ndarray
    type_id: np.ndarray
    quality: np.ndarray


def draw_products(rng: np.random.Generator, m: MarketConfig, sup: Suppliers) -> Products:
    """Products mostly in their supplier's main category and type, quality near the supplier's."""
    owner = rng.permutation(np.repeat(np.arange(m.n_suppliers), sup.size))
    n, n_cat, n_types = m.n_products, len(m.categories), m.types_per_category
    shares = per_category(CATEGORY_SHARES, m.categories, 0.1)
    other = rng.choice(n_cat, size=n, p=shares / shares.sum())
    in_main = rng.random(n) < MAIN_CATEGORY_SHARE
    category = np.where(in_main, sup.main_category[owner], other)
    popularity = _type_popularity(rng, m)
    local = np.zeros(n, dtype=np.int64)
    for c in range(n_cat):
        idx = np.flatnonzero(category == c)
        local[idx] = rng.choice(n_types, size=len(idx), p=popularity[c])
    use_main = (category == sup.main_category[owner]) & (rng.random(n) < MAIN_TYPE_SHARE)
    local = np.where(use_main, sup.main_type[owner], local)
    rho = QUALITY_FROM_SUPPLIER
    quality = rho * sup.quality[owner] + np.sqrt(1 - rho**2) * rng.standard_normal(n)
    return Products(owner, category, category * n_types + local, quality)


def choose_traps(rng: np.random.Generator, m: MarketConfig, quality: np.ndarray) -> np.ndarray:
    """Traps come mostly from low-quality products and shops (weight e^(-pull · quality)),
    without replacement."""
    n_traps = round(m.trap_fraction * m.n_products)
    weight = np.exp(-TRAP_QUALITY_PULL * quality)
    chosen = rng.choice(m.n_products, size=n_traps, replace=False, p=weight / weight.sum())
    is_trap = np.zeros(m.n_products, dtype=bool)
    is_trap[chosen] = True
    return is_trap


def type_table(
    rng: np.random.Generator, m: MarketConfig
) -> tuple[list[vocab.ProductType], np.ndarray]:
    """The product types of the market (types_per_category per category) and their categories."""
    types: list[vocab.ProductType] = []
    for category in m.categories:
        pool = vocab.type_pool(category, m.types_per_category)
        chosen = np.sort(rng.choice(len(pool), size=m.types_per_category, replace=False))
        types.extend(pool[k] for k in chosen)
    return types, np.repeat(np.arange(len(m.categories)), m.types_per_category)
