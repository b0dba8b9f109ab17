"""Markdown cells of the run reports: one line, and a table cell that cannot break its table."""

from __future__ import annotations


def one_line(text: str) -> str:
    return " ".join(text.split())


def table_cell(text: str) -> str:
    return one_line(text).replace("|", "\\|").replace("`", "'")


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
