"""Conflicts between memory entries: same subject, opposite instruction, the newer one wins."""

from __future__ import annotations

import pytest

from codex_memories.consolidate.conflicts import DatedEntry, find_conflicts


def entry(text: str, updated_at: str, *, group: str = "/work/app", source: str | None = None, position: int = 0) -> DatedEntry:
    return DatedEntry(text=text, group=group, source=source or updated_at, updated_at=updated_at, position=position)


@pytest.mark.parametrize(
    ("older", "newer", "subject"),
    [
        ('"Always use requests for HTTP calls."', '"Use httpx, not requests."', "requests"),
        ('"Use tabs for indentation."', '"Use spaces for indentation."', "spaces vs tabs"),
        ('"Use pnpm for this repo."', '"Use npm here."', "npm vs pnpm"),
        ('"Keep the line length at 100."', '"Keep the line length at 88."', "line length"),
        ('"Don\'t use requests."', '"Use requests for the sync client."', "requests"),
        ("以后都用 requests。", "以后都用 httpx，不要用 requests。", "requests"),
        ('"用 tab 缩进。"', '"统一用空格缩进，不要用 tab。"', "tabs"),
    ],
)
def test_contradicting_entries_are_found_and_the_newer_one_wins(older: str, newer: str, subject: str) -> None:
    old = entry(older, "2026-11-20T10:00:00+00:00", source="thread-old")
    new = entry(newer, "2026-11-28T10:00:00+00:00", source="thread-new", position=1)
    conflicts = find_conflicts([new, old])
    assert [(conflict.subject, conflict.winner, conflict.loser) for conflict in conflicts] == [(subject, new, old)]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ('"Use httpx, not requests."', '"Use httpx for async code."'),
        ('"Never push directly to main."', '"Run ruff before every commit."'),
        ('"Use pytest for tests."', '"Use tabs in the Makefile."'),
        ('"Keep the line length at 100."', '"Keep coverage above 90 percent."'),
    ],
)
def test_entries_that_agree_or_talk_about_different_things_do_not_conflict(first: str, second: str) -> None:
    assert find_conflicts([entry(first, "2026-11-20T10:00:00+00:00"), entry(second, "2026-11-28T10:00:00+00:00")]) == []


def test_different_working_folders_may_follow_opposite_rules() -> None:
    entries = [
        entry('"Use tabs."', "2026-11-20T10:00:00+00:00", group="/work/go-service"),
        entry('"Use spaces."', "2026-11-28T10:00:00+00:00", group="/work/python-app"),
    ]
    assert find_conflicts(entries) == []


def test_within_one_session_the_later_entry_wins_and_an_overruled_entry_overrules_nothing() -> None:
    same_time = "2026-11-28T10:00:00+00:00"
    first = entry('"Use requests."', same_time, source="t", position=0)
    second = entry('"Use httpx, not requests."', same_time, source="t", position=1)
    third = entry('"Use aiohttp, not httpx."', "2026-11-29T10:00:00+00:00", source="u", position=2)
    conflicts = find_conflicts([first, second, third])
    assert [(conflict.winner.text, conflict.loser.text) for conflict in conflicts] == [
        (third.text, second.text),
        (third.text, first.text),
    ]


def _pair(older: str, newer: str) -> list:
    return find_conflicts([
        DatedEntry(older, "user", "s1", "2026-03-01T09:00:00+00:00", 0),
        DatedEntry(newer, "user", "s2", "2026-04-01T09:00:00+00:00", 1),
    ])


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("name release branches rel/<version>", "release branches are named release-<version> now"),
        ("name feature branches feat/<jira-key>", "Feature-Branches heißen jetzt topic/<jira-key>"),
        ("nombra las ramas de hotfix hf/<ticket>", "name hotfix branches hotfix-<ticket> from now on"),
    ],
)
def test_a_newer_naming_convention_replaces_the_older_one_in_any_language(older: str, newer: str) -> None:
    [conflict] = _pair(older, newer)
    assert conflict.loser.text == older and conflict.winner.text == newer


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("name migration files <date>_<slug>.sql", "name test modules test_<unit>.py"),
        ("the service is called billing-api", "call the helper with --dry-run first"),
        ("name branches feature/<ticket>", "name tags v<major>.<minor>"),
    ],
)
def test_naming_conventions_of_different_things_both_stand(first: str, second: str) -> None:
    assert _pair(first, second) == []


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        # the dropped thing named before the marker
        ('"Tail the pod logs with stern."', '"stern no more, we read logs in Grafana Loki."'),
        ('"Die Doku baut mit mkdocs."', '"mkdocs nicht mehr, die Doku baut jetzt mit Sphinx."'),
        # "с X на Y"
        ('"Линтим через flake8."', '"Переехали с flake8 на ruff."'),
        # what things are now
        ('"Uso npm en todos los proyectos."', '"Ahora es pnpm en todos los proyectos."'),
        # the same words around another value
        ('"Deploy previews go to the team slug acme-web-1."', '"Deploy previews go to the team slug acme-web-7."'),
        # a registry moved, named with one word in each statement's number
        ('"Our charts are published to registry oci://charts.acme.io."', '"We moved the chart registry to oci://helm.acme.dev."'),
        # a value of one shape moved, said with other words around it
        ('"The handbook is served from https://docs.acme.dev"', '"the handbook moved, it lives at https://handbook.acme.io now"'),
        ('"Nightly dumps are written to gs://acme-dumps"', '"nightly dumps land in gs://acme-archive-2 from now on"'),
    ],
)
def test_a_replacement_in_other_words_retires_the_older_statement(older: str, newer: str) -> None:
    old = entry(older, "2026-11-20T10:00:00+00:00", source="thread-old")
    new = entry(newer, "2026-11-28T10:00:00+00:00", source="thread-new")
    assert [(conflict.winner, conflict.loser) for conflict in find_conflicts([new, old])] == [(new, old)]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # two registries: where images come from and where ours go
        ('"Base images are pulled from registry quay.io."', '"Release images are published to registry ghcr.io/acme."'),
        # two assignments with no words around them
        ('"API_URL=https://api.acme.dev"', '"WEB_URL=https://acme.dev"'),
        # one shape, two things, no change said
        ('"Audit logs go to s3://acme-audit."', '"Invoices go to s3://acme-invoices."'),
        # two commands that worked, in the offline extractor's one template
        ("`make seed-fixtures` succeeded (exit 0) in /src/api", "`pytest -q --durations=5` succeeded (exit 0) in /src/api"),
    ],
)
def test_look_alike_values_of_two_things_both_stand(first: str, second: str) -> None:
    older = entry(first, "2026-11-20T10:00:00+00:00", source="thread-old")
    newer = entry(second, "2026-11-28T10:00:00+00:00", source="thread-new")
    assert find_conflicts([newer, older]) == []
