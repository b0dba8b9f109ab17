"""Held-out round 4 of `redaction_classes` is well formed, checked without the redactor.

The families are measured once, by `python -m benchmarks.redaction_classes --split heldout4`; until
then nothing here redacts them. Checked: each family plants every secret it names in its text,
draws other values from other seeds, names no secret shorter than the 12-character leak window,
and the split reaches the benchmark however it is started.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from benchmarks import redaction_classes
from benchmarks.redaction_heldout4 import HELDOUT4, SPLIT
from tests.support.secret_formats import LEAK_WINDOW

SEEDS = range(1, 9)


def test_round_four_has_its_own_families_across_the_classes() -> None:
    names = [f.name for f in redaction_classes.FAMILIES]
    assert len(names) == len(set(names))
    assert 40 <= len(HELDOUT4) <= 60
    classes = Counter(f.klass for f in HELDOUT4)
    assert {f"prose_{language}" for language in ("en", "de", "fr", "es", "pt", "ru", "zh", "ja", "ko", "it", "tr", "vi",
                                                  "pl")} <= set(classes)
    assert {"vendor_token", "config_file", "connection_string", "ci_config", "k8s_manifest", "tool_output",
            "log_output", "table", "sql", "base64_wrapped", "wallet", "recovery_codes"} <= set(classes)
    assert all(f.split == SPLIT for f in HELDOUT4)


@pytest.mark.parametrize("fam", HELDOUT4, ids=lambda f: f.name)
def test_a_family_plants_long_random_values_in_its_text(fam) -> None:
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


def test_the_benchmark_takes_the_split_whether_imported_or_run_as_a_script() -> None:
    assert [f for f in redaction_classes.SECRET_FAMILIES if f.split == SPLIT] == HELDOUT4
    # `python -m benchmarks.redaction_classes` runs the file under another name than the package's, in
    # a fresh interpreter: its own list must carry round 4 once. Another run name than __main__ keeps
    # main() (the redactor) from running.
    probe = (
        "import collections, json, runpy\n"
        "g = runpy.run_module('benchmarks.redaction_classes', run_name='__heldout4_check__', alter_sys=True)\n"
        "print(json.dumps([[f.name, f.split] for f in g['SECRET_FAMILIES']]))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True)
    families = json.loads(done.stdout)
    assert Counter(split for _, split in families) == Counter(f.split for f in redaction_classes.SECRET_FAMILIES)
    assert [name for name, split in families if split == SPLIT] == [f.name for f in HELDOUT4]
