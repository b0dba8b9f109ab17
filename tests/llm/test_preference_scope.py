"""Which statements the offline extractor makes user-level: "every project" in nine languages, a
bare "everywhere" unless a part of the project is its subject (issue 34: one project's
convention must not reach another; a preference for every repository said in German must)."""

from __future__ import annotations

import pytest

from codex_memories.extract.heuristic import preference_scope
from codex_memories.scopes import PROJECT_SCOPE, USER_SCOPE

USER_LEVEL = [
    "use ruff for linting everywhere",
    "answer in English in all my projects",
    "en todos mis proyectos usa pnpm, nunca npm",
    "em todos os meus projetos use 2 espaços",
    "dans tous mes dépôts, les commits sont signés",
    "in allen Projekten bitte Tabs statt Leerzeichen",
    "во всех моих проектах используй uv",
    "모든 프로젝트에서 pnpm을 써",
    "すべてのリポジトリでコミットメッセージは英語で",
    "所有项目都用 pnpm",
]
PROJECT_LEVEL = [
    "the backend logs timestamps in UTC everywhere",
    "our tests use factories everywhere, never fixtures files",
    "la API devuelve fechas ISO en todas partes",
    "in this repo we use tabs",
    "hier nutzen wir poetry",
    "en este proyecto usamos yarn",
    "このリポジトリではyarnを使う",
    "이 저장소에서는 yarn을 써",
    "в этом проекте используем make",
    "always run the migrations before the tests",  # no scope said: the project's
]


@pytest.mark.parametrize("sentence", USER_LEVEL)
def test_every_project_said_in_any_language_is_user_level(sentence: str) -> None:
    assert preference_scope(sentence) == USER_SCOPE


@pytest.mark.parametrize("sentence", PROJECT_LEVEL)
def test_this_project_or_a_part_of_it_stays_with_the_project(sentence: str) -> None:
    assert preference_scope(sentence) == PROJECT_SCOPE
