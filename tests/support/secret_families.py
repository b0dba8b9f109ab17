"""What the redaction benchmarks' secret families are made of: value generators (random but
seeded: the same seed gives the same values) and the family registry (`family` registers a
builder under a class and a split). Rounds of families register on import:
`redaction_classes.py` (tune and rounds 1-2) and `redaction_heldout3.py` (round 3)."""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

Snippet = tuple[str, list[str]]


# ---- value generators ---------------------------------------------------------------------------


def chars(rng: random.Random, alphabet: str, size: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


def base62(rng: random.Random, size: int) -> str:
    while True:
        value = chars(rng, string.ascii_letters + string.digits, size)
        if any(c.isdigit() for c in value) and any(c.isupper() for c in value) and any(c.islower() for c in value):
            return value


def hex_digits(rng: random.Random, size: int) -> str:
    return chars(rng, "0123456789abcdef", size)


def password(rng: random.Random) -> str:
    word = rng.choice(["Harbor", "Tiger", "Sonne", "Gato", "Soleil", "Medved", "Praia", "Sakura", "Hangul", "Nordlys", "Violet", "Kestrel"])
    return word + rng.choice(["_", "#", "!", "-", "@", ""]) + str(rng.randrange(10, 9999)) + rng.choice(["", "!", "x", "Q", "$"])


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def mnemonic(rng: random.Random, language: str = "english", words: int = 12) -> str:
    from mnemonic import Mnemonic

    strength = {12: 128, 15: 160, 18: 192, 21: 224, 24: 256}[words]
    return Mnemonic(language).to_mnemonic(bytes(rng.getrandbits(8) for _ in range(strength // 8)))


def wif(rng: random.Random) -> str:
    import base58

    return base58.b58encode_check(b"\x80" + bytes(rng.getrandbits(8) for _ in range(32)) + b"\x01").decode()


def xprv(rng: random.Random) -> str:
    import base58

    payload = bytes.fromhex("0488ade4") + bytes(rng.getrandbits(8) for _ in range(9))
    payload += bytes(rng.getrandbits(8) for _ in range(32)) + b"\x00" + bytes(rng.getrandbits(8) for _ in range(32))
    return base58.b58encode_check(payload).decode()


# ---- families -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    name: str
    klass: str
    split: str  # "tune", "heldout" (round 1) or "heldout2" (round 2)
    build: Callable[[random.Random], Snippet]


FAMILIES: list[Family] = []


def family(name: str, klass: str, split: str) -> Callable[[Callable[[random.Random], Snippet]], Callable[[random.Random], Snippet]]:
    def wrap(build: Callable[[random.Random], Snippet]) -> Callable[[random.Random], Snippet]:
        FAMILIES.append(Family(name, klass, split, build))
        return build

    return wrap
