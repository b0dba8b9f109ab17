import json

import pytest

from codex_memories.redact import REDACTED, SECRET_PATTERNS, find_secret_kinds, redact_secrets
from tests.support.secrets import PLANTED_SECRETS, SECRET_VALUES


def _secret_pieces(name: str) -> list[str]:
    # A PEM body spans lines; every line of it must disappear.
    return [piece for piece in SECRET_VALUES[name].split("\n") if piece]


def test_the_planted_list_covers_at_least_fourteen_formats():
    assert len(PLANTED_SECRETS) >= 14
    assert set(PLANTED_SECRETS) == set(SECRET_VALUES)


@pytest.mark.parametrize("name", sorted(PLANTED_SECRETS))
def test_each_planted_secret_is_redacted(name):
    text = PLANTED_SECRETS[name]
    assert find_secret_kinds(text), f"{name} is not recognised at all"
    redacted = redact_secrets(text)
    for piece in _secret_pieces(name):
        assert piece not in redacted
    assert REDACTED in redacted
    assert find_secret_kinds(redacted) == []


@pytest.mark.parametrize("name", sorted(PLANTED_SECRETS))
def test_each_planted_secret_is_redacted_inside_json_and_the_json_stays_valid(name):
    once = json.dumps([{"type": "function_call_output", "call_id": "c1", "output": PLANTED_SECRETS[name]}])
    twice = json.dumps({"output": once})  # a tool output that is itself JSON text
    for serialized in (once, twice):
        redacted = redact_secrets(serialized)
        for piece in _secret_pieces(name):
            assert piece not in redacted
        json.loads(redacted)
        assert find_secret_kinds(redacted) == []


@pytest.mark.parametrize("name", sorted(PLANTED_SECRETS))
def test_redaction_is_idempotent(name):
    once = redact_secrets(PLANTED_SECRETS[name])
    assert redact_secrets(once) == once


# Spec scenario 75.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2", "key [REDACTED_SECRET]"),
        ("Authorization: Bearer abcdefghijklmnop1234", "Authorization: Bearer [REDACTED_SECRET]"),
        ("password = hunter2hunter2", "password = [REDACTED_SECRET]"),
        ("AKIA" + "ABCDEFGHIJKLMNOP", "[REDACTED_SECRET]"),
        ("key sk-short", "key sk-short"),
        ("Authorization: Bearer short", "Authorization: Bearer short"),
        ("password = hunter2", "password = hunter2"),
        ("AKIA" + "ABCDEF", "AKIAABCDEF"),
    ],
)
def test_scenario_75_codex_rules_and_thresholds(text, expected):
    assert redact_secrets(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TOKEN: 'abcdefgh12'", "TOKEN: '[REDACTED_SECRET]'"),
        ("api-key=abcdefgh12", "api-key=[REDACTED_SECRET]"),
        ("bearer ABCDEFGHIJKLMNOPQ", "Bearer [REDACTED_SECRET]"),
        ('{"token":"sk-abcdefghijklmnopqrstuvwxyz123456"}', '{"token":"[REDACTED_SECRET]"}'),
    ],
)
def test_codex_rules_keep_key_separator_and_quote(text, expected):
    assert redact_secrets(text) == expected


def test_scenario_77_token_in_a_json_tool_output_is_redacted():
    output = json.dumps({"token": "sk-abcdefghijklmnopqrstuvwxyz123456"})
    serialized = json.dumps([{"type": "function_call_output", "call_id": "c1", "output": output}])
    redacted = redact_secrets(serialized)
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in redacted
    assert REDACTED in redacted


def test_json_quoted_password_that_codex_misses_is_redacted():
    assert redact_secrets('{"password": "hunter2hunter2"}') == '{"password": "[REDACTED_SECRET]"}'
    escaped = '{\\"password\\": \\"hunter2hunter2\\"}'
    assert redact_secrets(escaped) == '{\\"password\\": \\"[REDACTED_SECRET]\\"}'


def test_url_password_keeps_scheme_user_and_host():
    text = "git clone https://dana:pa55w0rd-long@git.example.com/acme/app.git"
    assert redact_secrets(text) == "git clone https://dana:[REDACTED_SECRET]@git.example.com/acme/app.git"


def test_authorization_header_schemes_are_kept():
    assert redact_secrets("Authorization: Token 9f8e7d6c5b4a") == "Authorization: Token [REDACTED_SECRET]"
    assert redact_secrets("authorization: Basic ZGFuYTpodW50ZXIy") == "authorization: Basic [REDACTED_SECRET]"


def test_pem_block_with_json_escaped_newlines_is_redacted():
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" * 3
    text = '"-----BEGIN PRIVATE KEY-----\\n' + body + '\\n-----END PRIVATE KEY-----\\n"'
    redacted = redact_secrets(text)
    assert body[:40] not in redacted
    assert redacted.startswith('"-----BEGIN PRIVATE KEY-----[REDACTED_SECRET]-----END PRIVATE KEY-----')
    json.loads(redacted)


def test_pem_block_cut_short_is_still_redacted():
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" * 3
    redacted = redact_secrets("-----BEGIN EC PRIVATE KEY-----\n" + body)
    assert body[:40] not in redacted
    assert find_secret_kinds(redacted) == []


@pytest.mark.parametrize(
    "text",
    [
        "commit 4f1c2e9ab07d55c3e1b2a9f0c6d7e8f901234567 fixed the retry loop",
        "thread 0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23 resumed",
        "/home/dana/src/billing-api/src/secret_manager/token_store.py",
        "the token bucket algorithm limits bursts",
        "update the password reset flow",
        "pip install scikit-learn sk-video; see disk-usage-report-for-the-whole-cluster",
        "sk-learn",
        "base64 aGVsbG8gd29ybGQ=",
        "max_tokens: 4096",
        '{"max_tokens": 4096, "token_count": 12, "secret_name": "prod/db"}',
        "Authorization: Bearer [REDACTED_SECRET]",
        "git@github.com:acme/app.git and ssh://git@github.com/acme/app",
        "https://example.com:8443/path?q=1",
        "eyJhbGciOi is only a header",
        "AKIA is a prefix, AKIA1234 too short",
    ],
)
def test_ordinary_text_survives_unchanged(text):
    assert redact_secrets(text) == text
    assert find_secret_kinds(text) == []


def test_the_marker_matches_no_pattern():
    for _, pattern in SECRET_PATTERNS:
        assert pattern.search(REDACTED) is None
    assert find_secret_kinds(f"password = {REDACTED} token: {REDACTED} {REDACTED}") == []


def test_pattern_table_is_ordered_with_codex_rules_first():
    names = [name for name, _ in SECRET_PATTERNS]
    assert names[:4] == ["openai_api_key", "aws_access_key_id", "bearer_token", "secret_assignment"]
    assert len(names) == len(set(names))


def test_public_patterns_find_the_same_secrets_as_the_fast_path():
    for name, text in PLANTED_SECRETS.items():
        public_hits = [kind for kind, pattern in SECRET_PATTERNS if pattern.search(text)]
        assert public_hits == find_secret_kinds(text), name


def test_case_insensitive_rules_work_when_lowercasing_changes_the_length():
    # "İ" lower-cases to two characters; the rules must fall back to the case-insensitive regex.
    text = "İstanbul PASSWORD = hunter2hunter2"
    assert redact_secrets(text) == "İstanbul PASSWORD = [REDACTED_SECRET]"


def test_pathological_input_does_not_backtrack_for_long():
    # Many near-misses in a row: would take minutes with nested unbounded quantifiers.
    text = ("password=" + "a" * 7 + " ") * 20000 + "-----BEGIN RSA PRIVATE KEY-----" + "A" * 50000
    redacted = redact_secrets(text)
    assert redacted.endswith(REDACTED)


@pytest.mark.parametrize("separator", ["\n", "\t", "\r\n", " "])
@pytest.mark.parametrize("depth", [0, 1, 2, 3, 4])
def test_secrets_on_consecutive_lines_of_nested_json_are_all_redacted(separator: str, depth: int) -> None:
    # Regression: after a JSON-escaped newline (`\nAuthorization: ...`) the escape's `n` used to
    # count as a word character and hide the key from the word-boundary rules.
    text = separator.join(PLANTED_SECRETS.values())
    for _ in range(depth):
        text = json.dumps(text)
    redacted = redact_secrets(text)
    assert [name for name, value in SECRET_VALUES.items() if value in redacted] == []
