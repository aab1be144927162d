"""Payment card numbers: a card network's prefix and length, and a valid Luhn check digit.

Test numbers are not cards: the payment providers publish numbers for their sandboxes
(``4242 4242 4242 4242``), which people write down with the word that says so. A number
counts as a test number when the words just before it on its line say test, sandbox,
staging, QA or e2e (in English and in the languages of ``TEST_WORDS``), or when its
digits are too regular to be issued: four different digits or fewer, or one digit
repeated eight times or more (an issued number's 15 account and check digits are spread).
"""

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


TEST_WORDS = re.compile(
    r"test|sandbox|staging|\bqa\b|e2e|dummy|fake|sample|example|prueba|teste|essai|collaudo|тест|テスト|测试|測試|"
    r"沙箱|沙盒|테스트|샌드박스|deneme|thử nghiệm|uji coba",
    re.IGNORECASE,
)
"""Words that mark a card number as a provider's test number, searched in the
``TEST_CONTEXT`` characters before it on its line."""
TEST_CONTEXT = 60


def _regular(digits: str) -> bool:
    """Too regular to be issued: at most four different digits, or one digit eight times."""
    return len(set(digits)) <= 4 or max(digits.count(d) for d in set(digits)) >= 8


def _test_number(text: str, start: int, digits: str) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    before = text[max(line_start, start - TEST_CONTEXT) : start]
    return _regular(digits) or TEST_WORDS.search(before) is not None


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
                if len(digits) >= 13 and _card_network(digits) and _luhn_ok(digits) \
                        and not _test_number(text, m.start(), digits):
                    return finding("card_number", "what looks like a payment card number")
    return None
