"""Payment card numbers: a card network's prefix and length, and a valid Luhn check digit."""

from __future__ import annotations

import re

from memvault.policy.secrets.finding import SecretFinding, finding

# --- 6. payment cards --------------------------------------------------------------

_DIGIT_GROUPS = re.compile(r"(?<![\w+\-.])\d+(?:[ \-]\d+)*(?![\w\-]|\.\d)")
_GROUP_SEPARATOR = re.compile(r"[ \-]")


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_network(digits: str) -> bool:
    """Known issuer prefixes (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro)."""
    n = len(digits)
    if digits[0] not in "23456":
        return False
    p2, p3, p4, p6 = int(digits[:2]), int(digits[:3]), int(digits[:4]), int(digits[:6])
    return (
        (digits[0] == "4" and n in (13, 16, 19))
        or (51 <= p2 <= 55 and n == 16)
        or (222100 <= p6 <= 272099 and n == 16)
        or (p2 in (34, 37) and n == 15)
        or ((p4 == 6011 or p2 == 65 or 644 <= p3 <= 649) and 16 <= n <= 19)
        or (3528 <= p4 <= 3589 and 16 <= n <= 19)
        or ((300 <= p3 <= 305 or p2 in (36, 38, 39)) and 14 <= n <= 19)
        or (p2 == 62 and 16 <= n <= 19)
        or ((p2 == 50 or 56 <= p2 <= 69) and 12 <= n <= 19)
    )


def card_number(text: str) -> SecretFinding | None:
    for m in _DIGIT_GROUPS.finditer(text):
        groups = _GROUP_SEPARATOR.split(m.group(0))
        # Any run of consecutive groups may be the card (a number may precede it).
        for i in range(len(groups)):
            digits = ""
            for g in groups[i:]:
                digits += g
                if len(digits) > 19:
                    break
                if len(digits) >= 13 and _card_network(digits) and _luhn_ok(digits):
                    return finding("card_number", "what looks like a payment card number")
    return None
