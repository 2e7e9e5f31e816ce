"""Scenario configuration: every parameter of the simulation contract (docs/design.md) in one
frozen, typed object, with presets, a version and a content hash.

Money is held in integer fen (1 RMB = 100 fen), as everywhere in the engine. Rates are per hour
unless a name says otherwise. A scenario is a value: it never changes after it is made, and two
scenarios with the same content have the same `content_hash`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic_core import to_jsonable_python

SCENARIO_VERSION = "1.0"

CATEGORIES: tuple[str, ...] = (
    "office",
    "womenswear",
    "pet_garden",
    "appliances",
    "home_decor",
    "home_goods",
    "cleaning",
    "toys",
    "bags",
    "sports",
)


class Grown:
    """Marks a parameter added after run records existed (`Annotated[float, Grown(), Field(…)]`).

    While it is at its default it is left out of the canonical form (`model_dump`, so the
    content hash, `run.json`'s scenario and the market cache key): every scenario that does not
    set it keeps the hash it had before the parameter existed, and every record made then still
    verifies (docs/design.md §10). Set to any other value, it is part of the form like any
    parameter. What this does not cover: a new parameter whose default changes what the
    simulation does; its default must reproduce the behaviour before it existed.
    """

    __slots__ = ()


def _grown_fields(model: type[BaseModel]) -> tuple[tuple[str, Any], ...]:
    """(name, default) of the fields of `model` marked `Grown`."""
    return tuple(
        (name, info.default)
        for name, info in model.model_fields.items()
        if any(isinstance(mark, Grown) for mark in info.metadata)
    )


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_serializer(mode="wrap")
    def _leave_out_grown_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name, default in _grown_fields(type(self)):
                if getattr(self, name) == default:
                    data.pop(name, None)
        return data


class ClockConfig(_Frozen):
    days: int = Field(365, ge=1, le=365)
    hours_per_window: int = Field(12, ge=1, le=24)
    start_date: str = "2025-06-01"
    calls_per_window: int = Field(100, ge=1, description="tool calls per window, end_of_step aside")

    @model_validator(mode="after")
    def _window_divides_day(self) -> ClockConfig:
        if 24 % self.hours_per_window:
            raise ValueError("hours_per_window must divide 24")
        return self

    @property
    def hours(self) -> int:
        return self.days * 24

    @property
    def windows(self) -> int:
        return self.hours // self.hours_per_window


class MoneyConfig(_Frozen):
    initial_balance_fen: int = Field(200_000, ge=0)
    initial_deposit_fen: int = Field(100_000, ge=1)
    platform_fees: bool = False
    commission_range: tuple[float, float] = (0.05, 0.10)
    fulfilment_fee_fen: int = Field(0, ge=0)


class FineConfig(_Frozen):
    return_refund_fen: int = 800
    bad_review_fen: int = 500
    stockout_fen: int = 500
    late_fen: int = 300
    insufficient_balance_fen: int = 500
    cancel_fen: int = 0
    returnless_refund_fen: int = 0


class RatingEvidence(_Frozen):
    score: float
    weight: float


class RatingConfig(_Frozen):
    initial: float = 4.0
    prior_weight: float = 20.0
    half_life_days: float = 30.0
    star_thresholds: tuple[float, float, float, float] = (2.50, 3.30, 3.80, 4.20)
    star_multipliers: tuple[float, float, float, float, float] = (0.10, 0.35, 0.80, 1.00, 1.20)
    normal: RatingEvidence = RatingEvidence(score=4.5, weight=1.0)
    late_normal: RatingEvidence = RatingEvidence(score=3.0, weight=1.0)
    return_refund: RatingEvidence = RatingEvidence(score=2.0, weight=1.0)
    returnless_refund: RatingEvidence = RatingEvidence(score=1.5, weight=2.0)
    bad_review: RatingEvidence = RatingEvidence(score=1.0, weight=2.0)
    stockout: RatingEvidence = RatingEvidence(score=1.0, weight=3.0)

    @property
    def gamma(self) -> float:
        """Daily decay of rating evidence, 2^(-1/half_life)."""
        return float(2.0 ** (-1.0 / self.half_life_days))


class OrderConfig(_Frozen):
    late_after_hours: int = 48
    logistics_hours: tuple[int, int] = (12, 72)
    resolution_hours: tuple[int, int] = (0, 168)
    fines: FineConfig = FineConfig()


class DemandConfig(_Frozen):
    exposure_start: float = 0.2
    exposure_ramp_days: float = 14.0
    exposure_floor: float = 0.10
    exposure_decay_per_day: float = 0.0092
    price_term_cap: float = 6.0
    max_price_multiple_of_cost: float = 100.0


class SupplierConfig(_Frozen):
    price_change_hazard: tuple[float, float] = (0.001, 0.01)
    delisting_hazard: tuple[float, float] = (0.0005, 0.005)
    delay_hazard: tuple[float, float] = (0.0005, 0.003)
    event_hours: tuple[int, int] = (168, 672)
    price_factor: tuple[float, float] = (0.9, 1.5)
    delay_extra_hours: tuple[int, int] = (12, 96)
    ship_hours: tuple[int, int] = (1, 48)
    stock_capacity: tuple[int, int] = (50, 500)
    stock_refill_per_hour: tuple[int, int] = (1, 20)
    spring_festival_extra_ship_hours: int = 24


INDEPENDENT_SELLERS = 1.0  # β of docs/design.md §11 at which sellers of a product do not compete
MAX_SELLER_SUBSTITUTION = 50.0
ARENA_SELLER_SUBSTITUTION = 4.0  # the `arena` preset's β (docs/arena.md says why)


class MarketConfig(_Frozen):
    """Parameters of the synthetic market generator (docs/design.md §3).

    Targets and achieved values: docs/catalog.md and docs/calibration.md.
    """

    days: int = Field(365, ge=1, le=365, description="the market's year, always built whole")
    n_products: int = Field(98_843, ge=10, description="products in the catalog")
    n_suppliers: int = Field(36_576, ge=1, description="suppliers (shops) owning them")
    categories: tuple[str, ...] = Field(CATEGORIES, description="first-level categories")
    p_ref_median: float = Field(35.0, description="median reference retail price, RMB")
    p_ref_sigma: float = Field(0.75, description="log-sd of the reference price")
    p_ref_clip: tuple[float, float] = Field((3.0, 2000.0), description="reference price range")
    margin_range: tuple[float, float] = Field(
        (0.25, 0.40), description="retail margin m (cost = p_ref · (1 − m)), by category"
    )
    elasticity_clip: tuple[float, float] = Field((1.1, 6.0), description="bounds of ε = 1/m")
    base_demand_median: float = Field(
        0.14, description="median market demand level M at p_ref_median (orders/day)"
    )
    base_demand_sigma: float = Field(1.3, description="log-sd of the market demand level")
    base_demand_cap: float = Field(40.0, description="cap of M and of a store's daily D")
    demand_price_slope: float = Field(
        0.8, ge=0.0, description="log demand lost per log of p_ref above p_ref_median"
    )
    store_demand_saturation: float = Field(
        0.7, gt=0.0, description="K at p_ref_median: a store's demand level D = M / (1 + M / K)"
    )
    saturation_price_power: float = Field(
        1.0,
        ge=0.0,
        description="K grows as (p_ref / p_ref_median)^power: cheap best sellers "
        "draw the most competing stores",
    )
    daily_noise_sigma: float = Field(0.25, description="log-sd of the AR(1) daily demand noise")
    launch_fraction: float = Field(
        0.30, ge=0.0, le=1.0, description="share of products launched during the run"
    )
    fade_out_fraction: float = Field(
        0.10, ge=0.0, le=1.0, description="share of products whose demand fades out"
    )
    trap_fraction: float = Field(
        0.04, ge=0.0, le=1.0, description="share of trap products (cheap, hot, high hidden risk)"
    )
    market_sales_scale: float = Field(
        20.0, gt=0.0, description="realised market orders per unit of market demand M"
    )
    types_per_category: int = Field(24, ge=1, description="product types (keywords) per category")
    # Grown: β came with markets of several merchants; β = 1 keeps every earlier hash.
    seller_substitution: Annotated[float, Grown()] = Field(
        INDEPENDENT_SELLERS,
        ge=1.0,
        le=MAX_SELLER_SUBSTITUTION,
        description="β of a market with several merchants (docs/design.md §11): 1 gives each "
        "seller of a product its own single-store demand; larger values share the product's "
        "buyers among its sellers by attraction (price, rating, exposure)",
    )

    @property
    def generator_inputs(self) -> dict[str, Any]:
        """The fields the market generator reads (β is about buyers, not the catalog)."""
        data = self.model_dump(mode="json")
        data.pop("seller_substitution", None)
        return data


class ToolConfig(_Frozen):
    """Switches and limits of the agent's tools; tool descriptions and schemas state them."""

    market_brief: bool = False
    hot_search_terms: bool = False
    memory_doc_bytes: int = Field(256 * 1024, ge=1)
    list_batch_max: int = Field(100, ge=1)
    max_active_listings: int = Field(50, ge=1)
    page_size_max: int = Field(50, ge=1)

    @property
    def list_items_max(self) -> int:
        """Products one list_product call may name: the batch size, or the listing cap if that
        is lower (a batch is all or nothing, so more could never be listed)."""
        return min(self.list_batch_max, self.max_active_listings)


class Scenario(_Frozen):
    """One benchmark configuration. `paper` is the default; see `PRESETS`."""

    name: str = "paper"
    version: str = SCENARIO_VERSION
    clock: ClockConfig = ClockConfig()
    money: MoneyConfig = MoneyConfig()
    orders: OrderConfig = OrderConfig()
    rating: RatingConfig = RatingConfig()
    demand: DemandConfig = DemandConfig()
    suppliers: SupplierConfig = SupplierConfig()
    market: MarketConfig = MarketConfig()
    tools: ToolConfig = ToolConfig()

    @model_validator(mode="after")
    def _run_fits_market(self) -> Scenario:
        if self.clock.days > self.market.days:
            raise ValueError(f"clock.days ({self.clock.days}) exceeds market.days")
        return self

    @property
    def content_hash(self) -> str:
        """SHA-256 (hex, first 16 chars) of the canonical JSON of every parameter."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)


def _preset(name: str, n_products: int, n_suppliers: int, days: int) -> Scenario:
    return Scenario(
        name=name,
        clock=ClockConfig(days=days),
        market=MarketConfig(n_products=n_products, n_suppliers=n_suppliers),
    )


PRESETS: dict[str, Scenario] = {
    "paper": Scenario(),
    "small": _preset("small", 2_000, 740, 365),
    "smoke": _preset("smoke", 200, 74, 14),
    # Several merchants competing for the same buyers (docs/design.md §11): the paper's market.
    "arena": Scenario(
        name="arena", market=MarketConfig(seller_substitution=ARENA_SELLER_SUBSTITUTION)
    ),
}


def _editable_tree(scenario: Scenario) -> dict[str, Any]:
    """Every parameter of `scenario`, those its dump leaves out at their defaults included, so
    that `--set` and scenario files may name any of them."""
    tree = scenario.model_dump(mode="json")
    _add_grown_defaults(scenario, tree)
    return tree


def _add_grown_defaults(model: BaseModel, tree: dict[str, Any]) -> None:
    for name, _ in _grown_fields(type(model)):
        tree.setdefault(name, to_jsonable_python(getattr(model, name)))
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            _add_grown_defaults(value, tree[name])


class ScenarioError(ValueError):
    """A scenario name, file or override that cannot be used; the message says why."""


def _set_dotted(tree: dict[str, Any], key: str, value: Any) -> None:
    node = tree
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            raise ScenarioError(f"unknown scenario key {key!r} (no section {part!r})")
        node = child
    if parts[-1] not in node:
        raise ScenarioError(f"unknown scenario key {key!r}")
    node[parts[-1]] = value


def _merge(base: dict[str, Any], update: dict[str, Any], prefix: str = "") -> None:
    for key, value in update.items():
        path = f"{prefix}{key}"
        if key not in base:
            raise ScenarioError(f"unknown scenario key {path!r}")
        if isinstance(value, dict) and isinstance(base[key], dict):
            _merge(base[key], value, prefix=f"{path}.")
        else:
            base[key] = value


def _validation_message(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"invalid scenario value at {where!r}: {first['msg']}"


def _first_line(exc: yaml.YAMLError) -> str:
    """A YAML error's problem, on one line."""
    problem = getattr(exc, "problem", None) or str(exc)
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return " ".join(str(problem).split()) + where


def _read_scenario_file(path: Path) -> dict[str, Any]:
    """The mapping a scenario file holds (a one-line `ScenarioError` if it holds none)."""
    if path.is_dir():
        raise ScenarioError(f"scenario file {path} is a directory, not a YAML file")
    if not path.is_file():
        raise ScenarioError(f"scenario file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"scenario file {path} is not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise ScenarioError(f"scenario file {path} cannot be read: {exc.strerror}") from exc
    try:
        loaded = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ScenarioError(f"scenario file {path} is not valid YAML: {_first_line(exc)}") from exc
    if not isinstance(loaded, dict):
        raise ScenarioError(f"scenario file {path} must hold a mapping")
    return loaded


def load_scenario(
    name: str = "paper",
    overrides: list[str] | None = None,
    file: str | Path | None = None,
) -> Scenario:
    """Build a scenario from a preset name (or a YAML file) and `key=value` overrides.

    Raises:
        ScenarioError: the name, file, key or value is not valid; the message names it.
    """
    if file is not None:
        path = Path(file)
        loaded = _read_scenario_file(path)
        base_name = loaded.pop("base", loaded.get("name", name))
        if not isinstance(base_name, str) or base_name not in PRESETS:
            raise ScenarioError(f"unknown base scenario {base_name!r} in {path}")
        tree = _editable_tree(PRESETS[base_name])
        _merge(tree, loaded)
    else:
        if name not in PRESETS:
            raise ScenarioError(f"unknown scenario {name!r}; choose from {', '.join(PRESETS)}")
        tree = _editable_tree(PRESETS[name])
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ScenarioError(f"override {item!r} must look like key=value")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            reason = _first_line(exc)
            raise ScenarioError(f"override {item!r}: not a valid value ({reason})") from exc
        _set_dotted(tree, key.strip(), value)
    try:
        return Scenario.model_validate(tree)
    except ValidationError as exc:
        raise ScenarioError(_validation_message(exc)) from exc
