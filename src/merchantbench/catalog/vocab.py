"""Per-category vocabularies for product titles (docs/design.md §3).

A title is built from a product *type* (the shared keyword of every product of that type, e.g.
"Storage Box"), a material, one or two modifiers and a use phrase:
"Foldable Oxford Cloth Storage Box with Lid". Because all products of a type carry the type's
words, searching a listing's keyword finds its substitutes, as the paper's human operators did.

A type may carry a season tag (`name:season`); such types follow a seasonal demand trajectory
peaking at the date in `SEASON_PEAKS`. Word lists are written for this project.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Peak (month, day) of each season tag used in the type lists below.
SEASON_PEAKS: dict[str, tuple[int, int]] = {
    "spring": (4, 15),
    "rainy": (6, 25),  # the plum-rain season of the Yangtze delta
    "summer": (7, 20),
    "school": (8, 28),
    "autumn": (10, 5),
    "winter": (12, 28),
    "holiday": (12, 15),  # Christmas goods shipped cross-border
    "newyear": (1, 28),  # shopping for the Spring Festival
}

# Qualifiers that derive extra types ("Mini Storage Box") when a scenario asks for more types
# per category than a list holds.
TYPE_QUALIFIERS: tuple[str, ...] = (
    "Mini", "Large", "Kids", "Travel", "Premium", "Compact", "Heavy Duty", "Deluxe",
)  # fmt: skip

# Opening words 1688 sellers put in front of titles; drawn for a minority of products.
TITLE_PREFIXES: tuple[str, ...] = (
    "Factory Direct", "Cross-border", "2025 New", "Hot Sale", "Wholesale", "Spot Goods",
)  # fmt: skip

# Supplier names: "<City> <Brand> <Business> Co., Ltd.", the city fitting the category's
# manufacturing belts (Yiwu small goods, Shantou toys, Cixi appliances, Guangzhou clothing, …).
SUPPLIER_CITIES: dict[str, tuple[str, ...]] = {
    "office": ("Yiwu", "Ningbo", "Wenzhou", "Shanghai", "Jinhua"),
    "womenswear": ("Guangzhou", "Hangzhou", "Humen", "Shenzhen", "Changshu"),
    "pet_garden": ("Yiwu", "Taizhou", "Jinhua", "Qingdao", "Foshan"),
    "appliances": ("Cixi", "Zhongshan", "Shenzhen", "Foshan", "Ningbo"),
    "home_decor": ("Yiwu", "Zhongshan", "Jingdezhen", "Caoxian", "Xiamen"),
    "home_goods": ("Yiwu", "Taizhou", "Jieyang", "Nantong", "Wuyi"),
    "cleaning": ("Yiwu", "Ningbo", "Guangzhou", "Jinhua", "Linyi"),
    "toys": ("Shantou", "Yiwu", "Dongguan", "Yunhe", "Pingxiang"),
    "bags": ("Guangzhou", "Baigou", "Pinghu", "Quanzhou", "Dongguan"),
    "sports": ("Jinjiang", "Ningbo", "Xiamen", "Nantong", "Yongkang"),
}
BRAND_SYLLABLES: tuple[str, ...] = (
    "Heng", "Da", "Xin", "Yuan", "Jin", "Sheng", "Hua", "Mei", "Long", "Tai", "Feng", "Rui",
    "Jia", "Kang", "Bao", "Li", "Hong", "Xing", "Tian", "Cheng", "Fu", "Shun", "Yi", "Ming",
    "Hao", "Wei", "Chang", "Rong", "Sen", "Hui", "Kai", "An", "Le", "Tong", "Ze", "Bang", "Yu",
    "Jun", "Han", "Qi",
)  # fmt: skip
BUSINESS_KINDS: tuple[str, ...] = (
    "Trading", "Commodity", "Industrial", "Technology", "Import & Export", "Manufacturing",
    "E-commerce", "Supply Chain",
)  # fmt: skip

_RAW: dict[str, dict[str, str]] = {
    "office": {
        "types": "Gel Pen|Ballpoint Pen|Highlighter|Notebook|Sticky Notes|File Folder|"
        "Desk Organizer|Pen Holder|Stapler|Binder Clips|Document Tray|Desk Mat|Monitor Stand|"
        "Laptop Stand|Whiteboard|Correction Tape|Pencil Case:school|Scissors|Tape Dispenser|"
        "Calculator|Label Maker|Planner:newyear|Bookends|Clipboard|Mechanical Pencil:school|"
        "Eraser:school|Desk Calendar:newyear|Envelope Bag|Badge Holder|Paper Clips",
        "materials": "Plastic|Metal|Bamboo|Kraft Paper|PU Leather|Acrylic|Wooden|"
        "Stainless Steel|Aluminum Alloy|Silicone|Mesh|Canvas",
        "modifiers": "Portable|Multifunction|Minimalist|Transparent|Large Capacity|Student|"
        "Cute Cartoon|Vintage|Magnetic|Adjustable|Refillable|Waterproof|Quick-Dry|Ergonomic|"
        "Foldable|Japanese Style",
        "uses": "for Home Office|for Students|for School Supplies|for Desk Storage|with Lid|"
        "for Meeting Notes|for Teachers|Set of 3|Set of 12|for Kids|A5 Size|A4 Size",
    },
    "womenswear": {
        "types": "Maxi Dress:summer|Midi Skirt|Wide Leg Pants|Knit Cardigan:autumn|"
        "Puffer Jacket:winter|Wool Coat:winter|Blouse|T-Shirt:summer|Camisole:summer|"
        "Hoodie:autumn|Sweater:winter|Jeans|Leggings|Trench Coat:autumn|Blazer|Pajama Set|"
        "Bodysuit|Shorts:summer|Suit Set|Sun Protection Jacket:summer|Down Vest:winter|"
        "Pleated Skirt|Shirt Dress|Crop Top:summer|Jumpsuit|Lace Bra|Seamless Underwear|"
        "Thermal Underwear:winter|Cheongsam Dress|Linen Pants:summer",
        "materials": "Cotton|Linen|Chiffon|Silk Satin|Knitted|Denim|Wool Blend|Polyester|"
        "Modal|Corduroy|Lace|Ice Silk",
        "modifiers": "Slim Fit|Oversized|Korean Style|High Waist|Loose|Vintage|French Style|"
        "Elegant|Casual|Plus Size|Floral|Solid Color|Striped|Off-Shoulder|Breathable|Thickened",
        "uses": "for Women|for Office Lady|for Summer|for Daily Wear|with Pockets|for Party|"
        "for Commute|for Vacation|with Belt|for Autumn and Winter|for Girls|for Dating",
    },
    "pet_garden": {
        "types": "Cat Litter Box|Dog Leash|Pet Bed|Cat Scratcher|Pet Feeder|Water Fountain|"
        "Dog Toy|Cat Toy|Pet Carrier Bag|Dog Harness|Grooming Brush|Cat Tree|Bird Cage|"
        "Aquarium Filter|Flower Pot:spring|Garden Hose:summer|Plant Stand|Watering Can:spring|"
        "Pruning Shears:spring|Seed Starter Tray:spring|Garden Gloves:spring|Sprinkler:summer|"
        "Pet Cooling Mat:summer|Heated Pet Pad:winter|Dog Raincoat:rainy|Pet Collar|"
        "Lawn Decoration|Hanging Planter:spring|Bug Zapper:summer|Nail Clipper",
        "materials": "Plastic|Stainless Steel|Ceramic|Nylon|Plush|Cotton Rope|Resin|Bamboo|"
        "Terracotta|Silicone|Oxford Cloth|Iron",
        "modifiers": "Automatic|Large|Small|Durable|Washable|Non-Slip|Adjustable|Self-Watering|"
        "Reflective|Chew-Resistant|Foldable|Outdoor|Indoor|Quiet|Anti-Tip|Breathable",
        "uses": "for Cats|for Dogs|for Small Pets|for Balcony|for Garden|for Indoor Plants|"
        "for Puppies|for Kittens|with Drainage Hole|for Travel|for Large Dogs|for Succulents",
    },
    "appliances": {
        "types": "Electric Kettle|Desk Fan:summer|Air Cooler:summer|Space Heater:winter|"
        "Electric Blanket:winter|Humidifier:winter|Dehumidifier:rainy|Air Fryer|Rice Cooker|"
        "Blender|Juicer:summer|Hair Dryer|Hair Straightener|Electric Toothbrush|Coffee Maker|"
        "Handheld Vacuum|Mini Fridge:summer|Electric Grill|Sandwich Maker|Egg Cooker|"
        "Steam Iron|Garment Steamer|Neck Fan:summer|Hand Warmer:winter|"
        "Foot Bath Massager:winter|Massage Gun|Electric Shaver|Slow Cooker:winter|"
        "Yogurt Maker|Soymilk Maker",
        "materials": "Stainless Steel|ABS Plastic|Glass|Ceramic Coated|Aluminum|Food-Grade PP|"
        "Borosilicate Glass|Silicone",
        "modifiers": "Portable|Rechargeable|USB|Smart|Mini|Household|Quiet|Energy-Saving|"
        "Cordless|Multifunction|Fast Heating|Digital Display|Timer|Large Capacity|Low Noise|"
        "Compact",
        "uses": "for Home|for Dormitory|for Office|for Travel|for Kitchen|with Remote Control|"
        "220V|for Bedroom|with Auto Shut-Off|for Car|for Baby|for Small Apartment",
    },
    "home_decor": {
        "types": "Wall Art|Throw Pillow|LED String Lights:holiday|Table Lamp|Vase|"
        "Artificial Flowers|Photo Frame|Wall Clock|Candle Holder|Scented Candle:winter|"
        "Curtain|Area Rug|Mirror|Wall Sticker|Tapestry|Door Curtain|Table Runner|Night Light|"
        "Storage Basket|Decorative Tray|Wind Chime:summer|Christmas Tree:holiday|"
        "Spring Couplets:newyear|Red Lantern:newyear|Desk Ornament|Aroma Diffuser|Floor Lamp|"
        "Wall Shelf|Dried Flower Bouquet|Cushion Cover",
        "materials": "Ceramic|Glass|Resin|Wooden|Rattan|Linen|Velvet|Metal|Cotton|Acrylic|"
        "Bamboo|Macrame",
        "modifiers": "Nordic|Boho|Modern|Vintage|Minimalist|Luxury|Handmade|Warm Light|"
        "Decorative|Cute|Geometric|Chinese Style|Cream Style|Wabi-Sabi|Ins Style|Retro",
        "uses": "for Living Room|for Bedroom|for Wedding|for Home Decoration|for Party|"
        "for Housewarming Gift|for Dining Table|for Kids Room|for Balcony|for Office|"
        "for Photography Props|for Christmas",
    },
    "home_goods": {
        "types": "Storage Box|Hanger|Shoe Rack|Vacuum Storage Bag|Drawer Organizer|Lunch Box|"
        "Water Bottle:summer|Thermos Cup:winter|Kitchen Rack|Cutting Board|Knife Set|"
        "Bath Towel|Bath Mat|Shower Caddy|Laundry Basket|Bedding Set|Pillow|Quilt:winter|"
        "Umbrella:rainy|Slippers|Food Container|Seasoning Jar|Dish Rack|Toothbrush Holder|"
        "Wardrobe Organizer|Makeup Organizer|Mosquito Net:summer|Cooling Mat:summer|"
        "Hot Water Bottle:winter|Coat Rack",
        "materials": "Plastic|Stainless Steel|Bamboo|Oxford Cloth|Cotton|Glass|Silicone|"
        "Wheat Straw|Non-Woven Fabric|PP|Memory Foam|Microfiber",
        "modifiers": "Foldable|Stackable|Large Capacity|Space-Saving|Transparent|Multi-Layer|"
        "Wall-Mounted|Non-Slip|Leak-Proof|Portable|Thickened|Household|Dustproof|Insulated|"
        "Quick-Dry|Punch-Free",
        "uses": "with Lid|for Wardrobe|for Kitchen|for Bathroom|for Bedroom|for Dormitory|"
        "for Students|for Travel|with Handles|for Closet|Set of 6|for Family",
    },
    "cleaning": {
        "types": "Mop|Broom|Dustpan Set|Cleaning Cloth|Sponge Scrubber|Toilet Brush|Trash Can|"
        "Garbage Bags|Spray Bottle|Window Squeegee|Lint Roller|Dish Brush|Rubber Gloves|"
        "Laundry Pods|Floor Cleaner|Descaling Tablets|Drain Cleaner|Mildew Remover:rainy|"
        "Feather Duster|Car Wash Brush|Shoe Cleaner|Toilet Cleaner|Glass Cleaner:newyear|"
        "Wet Wipes|Kitchen Degreaser:newyear|Mop Bucket|Fabric Shaver|Laundry Bag|"
        "Insect Repellent Spray:summer|Moisture Absorber:rainy",
        "materials": "Microfiber|Sponge|Nylon Bristle|Stainless Steel|Plastic|Silicone|"
        "Bamboo Fiber|Coral Fleece|Rubber|Cotton Yarn|PVA|Natural Loofah",
        "modifiers": "Self-Wringing|Rotating|Reusable|Disposable|Heavy Duty|Lint-Free|"
        "Absorbent|Long Handle|Household|Multipurpose|Scratch-Free|Biodegradable|Concentrated|"
        "Fragrance-Free|Extendable|Quick-Dry",
        "uses": "for Kitchen|for Bathroom|for Floor|for Window|for Car|for Pet Hair|"
        "for Toilet|for Dishes|for Home Cleaning|Pack of 10|Pack of 50|with Hook",
    },
    "toys": {
        "types": "Building Blocks|Plush Toy|Jigsaw Puzzle|Doll|Toy Car|Remote Control Car|"
        "Water Gun:summer|Bubble Machine:summer|Kite:spring|Slime|Fidget Toy|Board Game|"
        "Art Set|Drawing Board|Stacking Toy|Ride-On Toy|Toy Kitchen|Dinosaur Figure|"
        "Magnetic Tiles|Sand Toy Set:summer|Rubik Cube|Yo-Yo|Glow Stick:holiday|"
        "Christmas Stocking:holiday|Stuffed Animal|Balloon Set|Musical Toy|"
        "Flash Cards:school|Wooden Train|Toy Drone",
        "materials": "Plastic|Plush|Wooden|Silicone|ABS|Cotton|Foam|Magnetic|Felt|Rubber|"
        "Paper|Alloy",
        "modifiers": "Educational|Montessori|Cute|Cartoon|Interactive|Light-Up|Musical|"
        "Electric|DIY|Soft|Giant|Mini|Stress Relief|Creative|Classic|Glow-in-the-Dark",
        "uses": "for Toddlers|for Kids|for Boys|for Girls|for Party Favors|for Birthday Gift|"
        "for Babies|for Age 3+|for Christmas Gift|for Outdoor Play|for Family Game Night|"
        "for Classroom",
    },
    "bags": {
        "types": "Backpack:school|Tote Bag|Crossbody Bag|Shoulder Bag|Handbag|Wallet|"
        "Coin Purse|Makeup Bag|Travel Duffel:summer|Laptop Bag|Waist Bag|Phone Pouch|"
        "Luggage Organizer|Drawstring Bag|Shopping Bag|Clutch|Card Holder|Lunch Bag|"
        "Cooler Bag:summer|Diaper Bag|Messenger Bag|Beach Bag:summer|Bucket Bag|Saddle Bag|"
        "Chest Bag|Key Pouch|Toiletry Bag|School Bag:school|Luggage Cover|Gym Bag",
        "materials": "PU Leather|Genuine Leather|Canvas|Nylon|Oxford Cloth|Polyester|Straw|"
        "Denim|Corduroy|Felt|Velvet|Waterproof Nylon",
        "modifiers": "Large Capacity|Mini|Vintage|Korean Style|Fashion|Casual|Lightweight|"
        "Waterproof|Anti-Theft|Multi-Pocket|Minimalist|Quilted|Chain|Foldable|Retro|Trendy",
        "uses": "for Women|for Men|for Travel|for Work|for Students|for Daily Use|with Zipper|"
        "for Shopping|for Gym|for 15.6 Inch Laptop|for Beach|for Commute",
    },
    "sports": {
        "types": "Yoga Mat|Resistance Band|Dumbbell|Jump Rope|Sports Bottle:summer|"
        "Swim Goggles:summer|Swimsuit:summer|Cycling Gloves|Running Belt|Knee Brace|"
        "Badminton Racket:summer|Table Tennis Paddle|Basketball|Football|Camping Tent:summer|"
        "Sleeping Bag:autumn|Trekking Poles:autumn|Fishing Rod:spring|Ski Goggles:winter|"
        "Thermal Gloves:winter|Ab Roller|Foam Roller|Fitness Band|Sun Hat:summer|"
        "Sports Headband|Hand Grip|Pull-Up Bar|Balance Board|Sports Socks|Picnic Mat:spring",
        "materials": "TPE|NBR|Neoprene|Silicone|Nylon|Carbon Fiber|Aluminum Alloy|Latex|PVC|"
        "Polyester|EVA Foam|Spandex",
        "modifiers": "Non-Slip|Adjustable|Professional|Lightweight|Portable|Breathable|"
        "Quick-Dry|Anti-Fog|Thickened|Durable|Outdoor|Foldable|High Elastic|Sweat-Absorbing|"
        "Ultralight|Waterproof",
        "uses": "for Fitness|for Home Gym|for Yoga|for Running|for Camping|for Men and Women|"
        "for Beginners|for Outdoor Sports|for Training|for Hiking|for Kids|Set of 2",
    },
}


@dataclass(frozen=True)
class ProductType:
    """One product type: its name (the shared title keyword) and optional season tag."""

    name: str
    season: str | None


@dataclass(frozen=True)
class CategoryVocab:
    """The words of one category."""

    types: tuple[ProductType, ...]
    materials: tuple[str, ...]
    modifiers: tuple[str, ...]
    uses: tuple[str, ...]


def _parse_type(entry: str) -> ProductType:
    name, _, season = entry.partition(":")
    if season and season not in SEASON_PEAKS:
        raise ValueError(f"unknown season tag {season!r} on type {name!r}")
    return ProductType(name, season or None)


def category_vocab(category: str) -> CategoryVocab:
    """The vocabulary of one category.

    Raises:
        ValueError: the category has no vocabulary.
    """
    raw = _RAW.get(category)
    if raw is None:
        raise ValueError(f"no vocabulary for category {category!r}; known: {', '.join(_RAW)}")
    return CategoryVocab(
        types=tuple(_parse_type(t) for t in raw["types"].split("|")),
        materials=tuple(raw["materials"].split("|")),
        modifiers=tuple(raw["modifiers"].split("|")),
        uses=tuple(raw["uses"].split("|")),
    )


def type_pool(category: str, n_types: int) -> tuple[ProductType, ...]:
    """At least `n_types` distinct types for a category: the listed ones, then qualified ones.

    Qualified types ("Mini Storage Box") keep their base type's season and words, so a search for
    the base keyword also finds them.
    """
    base = category_vocab(category).types
    pool = list(base)
    for qualifier in TYPE_QUALIFIERS:
        if len(pool) >= n_types:
            break
        pool.extend(
            ProductType(f"{qualifier} {t.name}", t.season)
            for t in base
            if not t.name.startswith(f"{qualifier} ")  # no "Mini Mini Fridge"
        )
    if len(pool) < n_types:
        raise ValueError(f"category {category!r} cannot supply {n_types} product types")
    return tuple(pool)


def _type_materials(
    rng: np.random.Generator, vocabs: Sequence[CategoryVocab], type_cat: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each type is made of 3–5 of its category's materials, so titles of a type look alike."""
    picks = np.zeros((len(type_cat), 5), dtype=np.int64)
    counts = rng.integers(3, 6, size=len(type_cat))
    for t, c in enumerate(type_cat):
        picks[t] = rng.choice(len(vocabs[c].materials), size=5, replace=False)
    return picks, counts


def compose_titles(
    rng: np.random.Generator,
    vocabs: Sequence[CategoryVocab],
    product_type: np.ndarray,
    type_cat: np.ndarray,
    type_names: Sequence[str],
) -> np.ndarray:
    """Titles "[Prefix] Modifier [Modifier] [Material] <Type> [Use]" for every product.

    Args:
        rng: the generator's title stream.
        vocabs: vocabulary per category index.
        product_type: type index of each product.
        type_cat: category index of each type.
        type_names: name of each type (always part of the title).

    Returns:
        A fixed-width unicode array of titles, one per product.
    """
    n = len(product_type)
    materials, counts = _type_materials(rng, vocabs, type_cat)
    cat = type_cat[product_type].tolist()
    mat = materials[product_type, (rng.random(n) * counts[product_type]).astype(np.int64)].tolist()
    keep = (rng.random((5, n)) < np.array([[0.15], [0.9], [0.35], [0.8], [0.75]])).tolist()
    prefix, mod_a, mod_b, use = rng.integers(0, 1 << 30, size=(4, n)).tolist()
    types = product_type.tolist()
    titles = []
    for i in range(n):
        v = vocabs[cat[i]]
        first, second = mod_a[i] % len(v.modifiers), mod_b[i] % len(v.modifiers)
        words = [TITLE_PREFIXES[prefix[i] % len(TITLE_PREFIXES)]] if keep[0][i] else []
        if keep[1][i]:
            words.append(v.modifiers[first])
        if keep[2][i] and second != first:
            words.append(v.modifiers[second])
        if keep[3][i]:
            words.append(v.materials[mat[i]])
        words.append(type_names[types[i]])
        if keep[4][i]:
            words.append(v.uses[use[i] % len(v.uses)])
        titles.append(" ".join(words))
    return np.array(titles, dtype=str)


def _company_name(city: str, first: str, second: str, kind: str, branch: int) -> str:
    suffix = f" Branch {branch}" if branch else ""
    return f"{city} {first}{second.lower()} {kind} Co., Ltd.{suffix}"


def compose_supplier_names(
    rng: np.random.Generator, main_category: np.ndarray, categories: Sequence[str]
) -> np.ndarray:
    """Unique company names such as "Yiwu Hengda Trading Co., Ltd." for each supplier.

    The city comes from the main category's manufacturing belt. A name already taken is redrawn;
    after a few rounds (a vocabulary too small for the scenario) a branch number makes it unique.
    """
    names = np.empty(len(main_category), dtype=object)
    taken: set[str] = set()
    todo = np.arange(len(main_category))
    for round_ in range(64):
        draws = rng.integers(0, 1 << 30, size=(4, len(todo))).tolist()
        retry = []
        for j, s in enumerate(todo.tolist()):
            cities = SUPPLIER_CITIES[categories[main_category[s]]]
            a = BRAND_SYLLABLES[draws[0][j] % len(BRAND_SYLLABLES)]
            b = BRAND_SYLLABLES[draws[1][j] % len(BRAND_SYLLABLES)]
            kind = BUSINESS_KINDS[draws[2][j] % len(BUSINESS_KINDS)]
            name = _company_name(cities[draws[3][j] % len(cities)], a, b, kind, round_ // 8)
            if a == b or name in taken:
                retry.append(s)
                continue
            taken.add(name)
            names[s] = name
        todo = np.array(retry, dtype=np.int64)
        if not len(todo):
            return names.astype(str)
    raise ValueError("cannot make unique supplier names; the vocabulary is too small")
