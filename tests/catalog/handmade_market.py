"""A small hand-made market for catalog tests: three dozen products with realistic titles,
explicit prices, ratings, hours, launches, market sales and supplier events."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from merchantbench.catalog.market import CHANNELS, Market, SupplierEvents
from merchantbench.scenario import CATEGORIES

HISTORY_DAYS = 30


@dataclass(frozen=True)
class Item:
    title: str
    category: str
    type_name: str
    price: float  # RMB
    supplier: int = 0
    ship: int = 24
    logistics: int = 48
    rating: float = 4.5
    launch_day: int = -60
    daily_sales: int = 1


@dataclass(frozen=True)
class Supplier:
    name: str
    shop_rating: float
    return_buyer_rate: float = 0.3
    age_years: float = 3.0


SUPPLIERS = (
    Supplier("Yiwu Homeware Factory", 4.8, 0.42, 9.0),
    Supplier("Ningbo Stationery Co.", 4.2, 0.25, 2.5),
    Supplier("Guangzhou Fashion Trading", 3.6, 0.12, 0.8),
    Supplier("Shenzhen Smart Appliance", 4.9, 0.51, 12.0),
)

ITEMS = (
    Item("Foldable Oxford Cloth Storage Box with Lid", "home_goods", "storage box", 12.50, 0),
    Item("Plastic Storage Box Stackable Transparent", "home_goods", "storage box", 8.90, 0, 12),
    Item("Large Fabric Storage Boxes for Clothes", "home_goods", "storage box", 15.00, 2, 36),
    Item(
        "Bamboo Storage Box Desk Organizer",
        "home_goods",
        "storage box",
        18.80,
        0,
        6,
        rating=4.9,
        daily_sales=5,
    ),
    Item("Under Bed Storage Bag Zipper", "home_goods", "storage bag", 9.90, 2),
    Item("Kitchen Spice Rack Wall Mounted", "home_goods", "spice rack", 22.00, 0),
    Item("Gel Ballpoint Pen Black 0.5mm", "office", "ballpoint pen", 1.20, 1, daily_sales=40),
    Item("Retractable Ballpoint Pens Blue Ink 12 Pack", "office", "ballpoint pen", 6.50, 1),
    Item("A5 Spiral Notebook Kraft Cover", "office", "notebook", 3.80, 1, daily_sales=12),
    Item("Leather Notebook Cover Refillable", "office", "notebook", 28.00, 1, rating=4.1),
    Item("Desk Organizer Mesh Pen Holder", "office", "pen holder", 7.70, 1),
    Item("Cat Litter Mat Double Layer", "pet_garden", "litter mat", 11.00, 0),
    Item("Self Watering Flower Pot Plastic", "pet_garden", "flower pot", 5.50, 0),
    Item("Ceramic Flower Pots with Drainage", "pet_garden", "flower pot", 16.00, 0, rating=4.7),
    Item("Dog Leash Reflective Nylon", "pet_garden", "dog leash", 7.00, 2),
    Item(
        "Electric Kettle Stainless Steel 1.8L",
        "appliances",
        "electric kettle",
        45.00,
        3,
        logistics=24,
        daily_sales=8,
    ),
    Item("Mini Electric Fan USB Rechargeable", "appliances", "electric fan", 19.00, 3),
    Item("Portable Blender Cup Rechargeable", "appliances", "blender", 32.00, 3, rating=3.9),
    Item("Nordic Wall Clock Silent Quartz", "home_decor", "wall clock", 26.00, 0),
    Item("Artificial Flower Bouquet Silk Roses", "home_decor", "artificial flower", 6.80, 2),
    Item("LED Fairy String Lights Warm White", "home_decor", "string light", 4.50, 3),
    Item(
        "Microfiber Cleaning Cloth 10 Pack", "cleaning", "cleaning cloth", 5.20, 0, daily_sales=25
    ),
    Item("Spin Mop and Bucket Set", "cleaning", "mop", 48.00, 0, 48, 72),
    Item("Toilet Brush with Holder Silicone", "cleaning", "toilet brush", 8.00, 0),
    Item("Building Blocks Set 500 Pieces", "toys", "building blocks", 29.00, 2, rating=4.6),
    Item("Plush Bear Toy Soft Stuffed", "toys", "plush toy", 14.00, 2),
    Item("Wooden Puzzle Toy for Kids", "toys", "puzzle", 9.50, 2),
    Item("Canvas Tote Bag Large Capacity", "bags", "tote bag", 7.90, 2, daily_sales=15),
    Item("Leather Crossbody Bag Women", "bags", "crossbody bag", 38.00, 2),
    Item("Waterproof Backpack Travel Laptop", "bags", "backpack", 42.00, 2, rating=4.0),
    Item("Yoga Mat Non Slip 6mm TPE", "sports", "yoga mat", 24.00, 3),
    Item("Resistance Bands Set of 5", "sports", "resistance band", 6.00, 3),
    Item("Chiffon Summer Dress Floral", "womenswear", "dress", 35.00, 2),
    Item("Knitted Cardigan Women Loose", "womenswear", "cardigan", 41.00, 2),
    Item("Collapsible Storage Box Car Trunk", "home_goods", "storage box", 21.00, 0, launch_day=5),
    Item("Storage Box Drawer Type Plastic", "home_goods", "storage box", 13.20, 1, launch_day=0),
)


@dataclass
class Events:
    """Events per channel as (product, start hour, end hour, value) tuples."""

    price_change: list[tuple[int, int, int, float]] = field(default_factory=list)
    delisting: list[tuple[int, int, int, float]] = field(default_factory=list)
    delay: list[tuple[int, int, int, float]] = field(default_factory=list)


def supplier_events(rows: list[tuple[int, int, int, float]], n: int) -> SupplierEvents:
    rows = sorted(rows)
    product = np.array([r[0] for r in rows], dtype=np.int32)
    return SupplierEvents(
        product=product,
        start=np.array([r[1] for r in rows], dtype=np.int32),
        end=np.array([r[2] for r in rows], dtype=np.int32),
        value=np.array([r[3] for r in rows], dtype=np.float32),
        offsets=np.searchsorted(product, np.arange(n + 1)).astype(np.int64),
    )


def handmade_market(
    items: tuple[Item, ...] = ITEMS, events: Events | None = None, days: int = 14
) -> Market:
    """A market of `items`; each sells `daily_sales` orders a day from its launch on."""
    n, rows = len(items), HISTORY_DAYS + days
    events = events or Events()
    types = sorted({item.type_name for item in items})
    launch = np.array([item.launch_day for item in items], dtype=np.int32)
    day_of_row = np.arange(rows)[:, None] - HISTORY_DAYS
    on_market = day_of_row >= launch[None, :]
    sales = on_market * np.array([item.daily_sales for item in items])[None, :]
    cum = np.vstack([np.zeros((1, n), dtype=np.int64), np.cumsum(sales, axis=0)])
    price_fen = np.array([round(item.price * 100) for item in items], dtype=np.int64)
    supplier = np.array([item.supplier for item in items], dtype=np.int32)
    ratings = np.array([item.rating for item in items], dtype=np.float32)
    return Market(
        n_products=n,
        n_suppliers=len(SUPPLIERS),
        days=days,
        history_days=HISTORY_DAYS,
        categories=CATEGORIES,
        product_ids=np.array([f"P{10_000 + i}" for i in range(n)], dtype=object),
        titles=np.array([item.title for item in items], dtype=object),
        category=np.array([CATEGORIES.index(item.category) for item in items], dtype=np.int16),
        supplier=supplier,
        base_price_fen=price_fen,
        ship_hours=np.array([item.ship for item in items], dtype=np.int16),
        logistics_hours=np.array([item.logistics for item in items], dtype=np.int16),
        historical_avg_rating=ratings,
        launch_day=launch,
        market_sales_cum=cum.astype(np.int32),
        p_ref_fen=np.rint(price_fen / 0.7).astype(np.int64),
        elasticity=np.full(n, 1 / 0.3, dtype=np.float32),
        demand=(on_market * 0.05).astype(np.float32),
        type_id=np.array([types.index(item.type_name) for item in items], dtype=np.int32),
        risk_cancel=np.full(n, 0.02, dtype=np.float32),
        risk_return=np.full(n, 0.05, dtype=np.float32),
        risk_refund_only=np.full(n, 0.01, dtype=np.float32),
        risk_bad_review=(5.0 - ratings) / 10,
        is_trap=np.zeros(n, dtype=bool),
        stock_capacity=np.full(n, 200, dtype=np.int32),
        stock_refill=np.full(n, 5, dtype=np.int32),
        events={ch: supplier_events(getattr(events, ch), n) for ch in CHANNELS},
        supplier_ids=np.array([f"S{500 + k}" for k in range(len(SUPPLIERS))], dtype=object),
        supplier_names=np.array([s.name for s in SUPPLIERS], dtype=object),
        shop_rating=np.array([s.shop_rating for s in SUPPLIERS], dtype=np.float32),
        return_buyer_rate=np.array([s.return_buyer_rate for s in SUPPLIERS], dtype=np.float32),
        supplier_age_years=np.array([s.age_years for s in SUPPLIERS], dtype=np.float32),
        supplier_product_count=np.bincount(supplier, minlength=len(SUPPLIERS)).astype(np.int32),
        hourly_weights=np.full((len(CATEGORIES), 24), 1 / 24),
        ship_extra_hours=np.zeros(days, dtype=np.int16),
        type_names=np.array(types, dtype=object),
    )
