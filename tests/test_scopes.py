"""Project keys: one key per repository, whatever remote form or clone it is reached through."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codex_memories.scopes import normalise_git_origin, project_key, project_key_for_directory


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/Org/Repo.git",
        "https://github.com/Org/Repo",
        "https://user:ghp_secret@github.com/Org/Repo.git",
        "https://[REDACTED]@github.com/Org/Repo.git",
        "https://dana:[REDACTED_SECRET]@github.com/Org/Repo.git",
        "[REDACTED_SECRET]@github.com:Org/Repo.git",
        "git@github.com:Org/Repo.git",
        "ssh://git@github.com/Org/Repo.git",
        "ssh://git@GitHub.com:22/Org/Repo/",
        "git://github.com/Org/Repo.git",
    ],
)
def test_every_remote_form_of_one_repository_gives_one_key(url: str) -> None:
    assert normalise_git_origin(url) == "github.com/Org/Repo"


@pytest.mark.parametrize("url", [None, "", "/srv/git/repo.git", "file:///srv/git/repo.git", "https://github.com/"])
def test_an_origin_without_a_remote_host_gives_no_key(url: str | None) -> None:
    assert normalise_git_origin(url) is None


def test_the_key_falls_back_to_the_repository_root_then_the_cwd() -> None:
    assert project_key(git_origin_url="/local/path", repository_root="/work/app/", cwd="/work/app/src") == "/work/app"
    assert project_key(cwd="/work/scratch/") == "/work/scratch"
    assert project_key() is None


def test_a_directory_is_keyed_by_its_repository_origin(tmp_path: Path) -> None:
    repo = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "upstream", "git@example.org:team/tools.git"], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "https://tok@example.org/team/app.git"], check=True)
    (repo / "src" / "deep").mkdir(parents=True)
    assert project_key_for_directory(repo / "src" / "deep") == "example.org/team/app"


def test_a_linked_worktree_shares_its_repository_key(tmp_path: Path) -> None:
    repo = tmp_path / "main"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "https://example.org/team/app"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(tmp_path / "wt")], check=True)
    assert project_key_for_directory(tmp_path / "wt") == "example.org/team/app"


def test_a_directory_outside_any_repository_is_keyed_by_itself(tmp_path: Path) -> None:
    assert project_key_for_directory(tmp_path) == str(tmp_path)
    repo = tmp_path / "local-only"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "pkg").mkdir()
    assert project_key_for_directory(repo / "pkg") == str(repo)
