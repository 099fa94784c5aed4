"""A small library with tests, and bug reports written against it, for the localisation tests."""

from __future__ import annotations

from pathlib import Path

from tests import fixture_repo

FILES: dict[str, str] = {
    "src/shop/__init__.py": '"""Shop."""\nfrom .cart import Cart\n',
    "src/shop/cart.py": '''"""Shopping carts."""
from .pricing import apply_discount


class Cart:
    """Items and their quantities."""

    def __init__(self):
        self.items = {}

    def add(self, sku, qty=1):
        if qty <= 0:
            raise ValueError("quantity must be positive")
        self.items[sku] = self.items.get(sku, 0) + qty

    def total(self, prices, coupon=None):
        amount = sum(prices[s] * q for s, q in self.items.items())
        return apply_discount(amount, coupon)
''',
    "src/shop/pricing.py": '''"""Prices, coupons and rounding."""


def apply_discount(amount, coupon):
    """Take a coupon's percentage off an amount."""
    if coupon is None:
        return amount
    return round_cents(amount * (100 - coupon.percent) / 100)


def round_cents(value):
    return int(value * 100) / 100


class Coupon:
    def __init__(self, percent):
        self.percent = percent

    def validate(self):
        return 0 <= self.percent <= 100
''',
    "src/shop/report.py": '''"""Sales reports."""


def render(rows):
    return "\\n".join(f"{name}: {total}" for name, total in rows)


def validate(rows):
    return all(len(r) == 2 for r in rows)
''',
    "tests/test_cart.py": '''from shop.cart import Cart
from shop.pricing import Coupon


def test_total_with_coupon_discount_rounding():
    cart = Cart()
    cart.add("apple", 3)
    assert cart.total({"apple": 0.1}, Coupon(10)) == 0.27
''',
}

#: A traceback through site-packages into pricing.round_cents.
TRACEBACK_REPORT = '''Cart total is off by a cent with a coupon

When a coupon applies, the total loses a cent.

```
Traceback (most recent call last):
  File "/home/me/app.py", line 12, in <module>
    print(cart.total(prices, coupon))
  File "/venv/lib/python3.11/site-packages/shop/cart.py", line 19, in total
    return apply_discount(amount, coupon)
  File "/venv/lib/python3.11/site-packages/shop/pricing.py", line 12, in round_cents
    return int(value * 100) / 100
AssertionError: 0.26 != 0.27
```
'''

BACKTICK_REPORT = "`Cart.add` accepts a quantity of zero\n\nCalling `Cart.add` with qty 0 should raise."
PATH_REPORT = "Rounding in src/shop/pricing.py truncates instead of rounding half up, see pricing.py:12."
NO_IDENTIFIER_REPORT = "it is broken\n\nplease fix it soon, nothing works as expected for me today"
AMBIGUOUS_REPORT = "`validate` returns True for bad input\n\nThe validate method should reject it."


def write_repo(root: Path) -> Path:
    """Write the bug-report repository under `root` and return it."""
    return fixture_repo.write_repo(root, FILES)
