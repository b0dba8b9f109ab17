"""Project keys: one key per repository, whatever remote form or clone it is reached through."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from codex_memories import paths
from codex_memories.scopes import (
    normalise_git_origin,
    project_key,
    project_key_for_directory,
    read_recorded_project_keys,
    recorded_project_key,
    recorded_project_keys,
    write_recorded_project_keys,
)


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


# -- recorded project keys: the sessions' own records when git config cannot be read -------------


@pytest.fixture
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This environment's Codex home, where the hooks look for the recorded map by default."""
    home = tmp_path / "codex-home"
    monkeypatch.delenv("CODEX_MEMORIES_CODEX_HOME", raising=False)
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def test_a_checkout_whose_git_folder_is_gone_keeps_the_project_its_sessions_recorded(tmp_path: Path, codex_home: Path) -> None:
    repo = tmp_path / "src" / "app"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "git@example.org:team/app.git"], check=True)
    (repo / "pkg").mkdir()
    assert project_key_for_directory(repo) == "example.org/team/app"
    # Phase 1 recorded the session that ran there (its rollout's cwd and git.repository_url).
    keys = recorded_project_keys({str(repo): "git@example.org:team/app.git"})
    assert write_recorded_project_keys(paths.recorded_project_keys_path(codex_home), keys)

    shutil.rmtree(repo / ".git")  # moved, mounted elsewhere, opened in a container

    assert project_key_for_directory(repo) == "example.org/team/app"
    assert project_key_for_directory(repo / "pkg") == "example.org/team/app"  # the nearest recorded parent
    assert project_key_for_directory(repo, recorded={}) == str(repo)  # without the records: the folder
    assert project_key_for_directory(tmp_path / "src") == str(tmp_path / "src")  # a parent is not claimed


def test_a_readable_origin_wins_over_the_recorded_project(tmp_path: Path) -> None:
    repo = tmp_path / "app"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "https://example.org/team/renamed"], check=True)
    assert project_key_for_directory(repo, recorded={str(repo): "example.org/team/app"}) == "example.org/team/renamed"


def test_the_latest_session_of_a_folder_decides_and_only_origins_are_recorded() -> None:
    keys = recorded_project_keys(
        {"/work/app/": "https://example.org/team/app.git", "/work/was-a-repo": None, "relative/dir": "git@h:o/r.git", "/work/local": "/srv/git/x.git"}
    )
    assert keys == {"/work/app": "example.org/team/app"}


def test_the_home_folder_never_claims_the_folders_below_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    keys = {str(tmp_path): "example.org/me/dotfiles"}
    assert recorded_project_key(tmp_path, keys) == "example.org/me/dotfiles"
    assert recorded_project_key(tmp_path / "scratch", keys) is None


def test_a_damaged_or_foreign_map_file_reads_as_no_records(tmp_path: Path) -> None:
    path = tmp_path / "project-keys.json"
    for text in ("{not json", '["a", "list"]', '{"keys": {"/a": 1, "/b": "example.org/b"}}'):
        path.write_text(text, encoding="utf-8")
        assert read_recorded_project_keys(path) == ({"/b": "example.org/b"} if "/b" in text else {})
    assert read_recorded_project_keys(tmp_path / "missing.json") == {}


def test_writing_the_same_map_again_leaves_the_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "state" / "project-keys.json"
    assert write_recorded_project_keys(path, {"/w/a": "example.org/a"})
    before = path.stat().st_mtime_ns
    assert not write_recorded_project_keys(path, {"/w/a": "example.org/a"})
    assert path.stat().st_mtime_ns == before and read_recorded_project_keys(path) == {"/w/a": "example.org/a"}


@pytest.mark.parametrize("cwd", ["/tmp/" + "n" * 300 + "/src", "/tmp/" + "d/" * 3000], ids=["name-past-255-bytes", "path-past-PATH_MAX"])
def test_a_folder_name_no_file_system_holds_is_keyed_by_itself_and_has_no_switch(cwd: str) -> None:
    """A session's cwd is what Codex recorded: hostile or damaged, it must not stop a run."""
    from codex_memories.scopes import repository_switch

    assert project_key_for_directory(cwd, recorded={}) == cwd.rstrip("/")
    switch = repository_switch(cwd)
    assert switch.path is None and switch.injection_allowed
