"""Every error a person reads is a sentence with the path or the module (issue 36, item 7)."""

from __future__ import annotations

import errno

from codex_memories_cli.errors import error_sentence


def test_a_missing_optional_module_names_the_extra_that_installs_it() -> None:
    error = ModuleNotFoundError("No module named 'psycopg'", name="psycopg")
    assert error_sentence(error) == "the Python module 'psycopg' is not installed: pip install 'codex-memories[postgres]'"


def test_a_failed_file_operation_names_its_path_and_reason() -> None:
    sentence = error_sentence(PermissionError(errno.EACCES, "Permission denied", "/srv/memories/MEMORY.md"))
    assert sentence.startswith("cannot use /srv/memories/MEMORY.md: Permission denied")
    assert "PermissionError" not in sentence


def test_an_error_without_a_message_is_still_a_sentence() -> None:
    sentence = error_sentence(RuntimeError())
    assert sentence.startswith("the command stopped on an unexpected error")
