"""The blind held-out rounds of `redaction_classes` (3 and 4) are well formed, checked without the
redactor.

Each round is measured once, by `python -m benchmarks.redaction_classes --split heldout<N>`; until
then nothing here redacts it. Checked: each family plants every secret it names in its text,
draws other values from other seeds, names no secret shorter than the 12-character leak window,
and the split reaches the benchmark however it is started.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks import redaction_classes, redaction_heldout3, redaction_heldout4
from tests.support.secret_families import Family
from tests.support.secret_formats import LEAK_WINDOW

SEEDS = range(1, 9)


@dataclass(frozen=True)
class Round:
    split: str
    families: list[Family]
    sizes: range
    languages: tuple[str, ...]
    classes: frozenset[str]


ROUNDS = [
    Round(
        redaction_heldout3.SPLIT,
        redaction_heldout3.HELDOUT3,
        range(20, 27),
        ("en", "de", "fr", "es", "pt", "ru", "zh", "ja", "ko"),
        frozenset({"cli_position", "tool_json", "table", "sql", "config_file", "base64_wrapped", "url_token", "wallet",
                   "recovery_codes"}),
    ),
    Round(
        redaction_heldout4.SPLIT,
        redaction_heldout4.HELDOUT4,
        range(40, 61),
        ("en", "de", "fr", "es", "pt", "ru", "zh", "ja", "ko", "it", "tr", "vi", "pl"),
        frozenset({"vendor_token", "config_file", "connection_string", "ci_config", "k8s_manifest", "tool_output",
                   "log_output", "table", "sql", "base64_wrapped", "wallet", "recovery_codes"}),
    ),
]
ROUND_IDS = [held_out.split for held_out in ROUNDS]


@pytest.mark.parametrize("held_out", ROUNDS, ids=ROUND_IDS)
def test_a_round_has_its_own_families_across_the_classes(held_out: Round) -> None:
    names = [f.name for f in redaction_classes.FAMILIES]
    assert len(names) == len(set(names))
    assert len(held_out.families) in held_out.sizes
    classes = Counter(f.klass for f in held_out.families)
    assert {f"prose_{language}" for language in held_out.languages} <= set(classes)
    assert held_out.classes <= set(classes)
    assert all(f.split == held_out.split for f in held_out.families)


@pytest.mark.parametrize(
    "fam", [fam for held_out in ROUNDS for fam in held_out.families], ids=lambda f: f"{f.split}-{f.name}"
)
def test_a_family_plants_long_random_values_in_its_text(fam: Family) -> None:
    seen: list[tuple[str, ...]] = []
    for seed in SEEDS:
        text, secrets = fam.build(random.Random(seed))
        assert secrets
        for secret in secrets:
            assert secret in text
            assert len(secret) >= LEAK_WINDOW, secret
        seen.append(tuple(secrets))
    assert len(set(seen)) == len(seen)
    # No value repeats across seeds either (a constant part would be no secret).
    for index in range(len(seen[0])):
        assert len({values[index] for values in seen}) == len(seen)


@pytest.mark.parametrize("held_out", ROUNDS, ids=ROUND_IDS)
def test_the_benchmark_takes_the_split_whether_imported_or_run_as_a_script(held_out: Round) -> None:
    assert [f for f in redaction_classes.SECRET_FAMILIES if f.split == held_out.split] == held_out.families
    # `python -m benchmarks.redaction_classes` runs the file under another name than the package's, in
    # a fresh interpreter: its own list must carry the round once. Another run name than __main__
    # keeps main() (the redactor) from running.
    probe = (
        "import collections, json, runpy\n"
        f"g = runpy.run_module('benchmarks.redaction_classes', run_name='__{held_out.split}_check__', alter_sys=True)\n"
        "print(json.dumps([[f.name, f.split] for f in g['SECRET_FAMILIES']]))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True)
    families = json.loads(done.stdout)
    assert Counter(split for _, split in families) == Counter(f.split for f in redaction_classes.SECRET_FAMILIES)
    assert [name for name, split in families if split == held_out.split] == [f.name for f in held_out.families]
