import re

import pytest

from codex_memories.tokens import count_tokens, marker_line, truncate_middle

MIXED = "héllo wörld — naïve café 😀🎉 世界 你好 こんにちは Ελληνικά\n"


def test_count_tokens_matches_known_o200k_values():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    # Special-token text is ordinary text to us, never an error.
    assert count_tokens("<|endoftext|>") == 7


def test_text_under_budget_is_returned_unchanged():
    result = truncate_middle("short text", 100)
    assert result.text == "short text"
    assert result.truncated_tokens == 0
    assert result.kept_tokens == result.original_tokens == count_tokens("short text")


def test_text_exactly_at_budget_is_returned_unchanged():
    text = "one two three four five"
    budget = count_tokens(text)
    assert truncate_middle(text, budget).text == text


def test_text_over_budget_keeps_head_and_tail_with_a_marker_line():
    text = " ".join(f"word{i}" for i in range(2000))
    result = truncate_middle(text, 200)
    assert count_tokens(result.text) <= 200
    head, marker, tail = result.text.split("\n")
    assert text.startswith(head) and text.endswith(tail)
    assert marker == marker_line(result.truncated_tokens)
    assert re.fullmatch(r"…\d+ tokens truncated…", marker)
    assert result.truncated_tokens == result.original_tokens - result.kept_tokens
    assert result.original_tokens == count_tokens(text)
    # Roughly half the content budget on each side.
    assert abs(count_tokens(head) - count_tokens(tail)) <= 5


@pytest.mark.parametrize("budget", [12, 13, 17, 25, 40, 101, 333])
def test_multibyte_text_is_never_split_inside_a_character(budget):
    text = MIXED * 50
    result = truncate_middle(text, budget)
    assert count_tokens(result.text) <= budget
    result.text.encode("utf-8", errors="strict")  # no lone surrogates, no replacement needed
    assert "\ufffd" not in result.text
    head = result.text.split("\n…")[0]
    tail = result.text.rsplit("…\n", 1)[-1]
    assert text.startswith(head)
    assert text.endswith(tail)


def test_emoji_only_text_truncates_to_whole_emoji():
    text = "👩‍👩‍👧‍👦🏳️‍🌈😀" * 200
    result = truncate_middle(text, 30)
    assert count_tokens(result.text) <= 30
    assert "\ufffd" not in result.text
    assert text.startswith(result.text.split("\n")[0])


def test_budget_smaller_than_the_marker_gives_marker_or_nothing():
    text = "lorem ipsum dolor sit amet " * 100
    assert truncate_middle(text, 0).text == ""
    tiny = truncate_middle(text, 1)
    assert count_tokens(tiny.text) <= 1
    small = truncate_middle(text, 9)
    assert count_tokens(small.text) <= 9


def test_negative_budget_is_rejected():
    with pytest.raises(ValueError):
        truncate_middle("x", -1)


def test_a_few_megabytes_truncate_to_budget():
    text = ("def handler(event):\n    return {'status': 200, 'body': 'ünïcödé ✓'}\n" * 60_000)
    assert len(text) > 3_000_000
    result = truncate_middle(text, 10_000)
    assert count_tokens(result.text) <= 10_000
    assert result.kept_tokens > 9_000
    assert result.text.startswith("def handler(event):")
    assert result.text.endswith("'body': 'ünïcödé ✓'}\n")
