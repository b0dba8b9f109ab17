import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ---- Synthetic formats in every placement (tests/support/secret_formats.py) -------------------
# The rules were written against seed 1; the benchmark also reports seed 2, which was not looked
# at. Formats no rule knows how to tell from ordinary text are listed with the reason, and the
# test checks that they really still get through: when a rule starts catching one, move it out.

from tests.support.secret_formats import (  # noqa: E402
    FORMATS,
    PLACEMENTS,
    leaked,
    ordinary_texts,
    planted_items,
    secret_cases,
    serialize,
)

_IN_TEXT = frozenset(PLACEMENTS) - {"git_remote_url"}
# format -> (why it gets through, the placements where it does). In a git URL most of them are
# caught anyway: the user part of a URL is judged on its own.
KNOWN_MISSES: dict[str, tuple[str, frozenset[str]]] = {
    "tencent": ("`SecretId` + AKID + 32 random characters: no separator after the prefix, no plugin, no name", _IN_TEXT),
    "sendinblue": ("xkeysib- + 64 hex + 16 base62: too few upper-case letters to read as random", frozenset(PLACEMENTS)),
}

_SEED = 1
_PLANTED = planted_items(secret_cases(_SEED), _SEED)


def test_the_synthetic_formats_number_at_least_one_hundred():
    assert len(FORMATS) >= 100
    assert len({fmt.name for fmt in FORMATS}) == len(FORMATS)
    assert set(KNOWN_MISSES) <= {fmt.name for fmt in FORMATS}


@pytest.mark.parametrize("planted", _PLANTED, ids=[f"{p.case.name}-{p.placement}" for p in _PLANTED])
def test_each_format_is_redacted_in_each_placement(planted):
    text = serialize(planted.item)
    redacted = redact_secrets(text)
    json.loads(redacted)  # redaction never breaks the item's JSON
    assert redact_secrets(redacted) == redacted
    if planted.placement in KNOWN_MISSES.get(planted.case.name, ("", frozenset()))[1]:
        assert leaked(planted.secret, redacted), f"{planted.case.name} is caught now: remove it from KNOWN_MISSES"
        return
    assert not leaked(planted.secret, redacted)
    assert REDACTED in redacted
    assert find_secret_kinds(text)
    assert find_secret_kinds(redacted) == []


_ORDINARY = [(name, placement) for name in ordinary_texts(_SEED) for placement, build in PLACEMENTS.items() if build]


@pytest.mark.parametrize(("name", "placement"), _ORDINARY, ids=[f"{n}-{p}" for n, p in _ORDINARY])
def test_ordinary_transcript_text_survives_in_each_placement(name, placement):
    import random

    item = serialize(PLACEMENTS[placement](ordinary_texts(_SEED)[name], random.Random(0)))
    assert redact_secrets(item) == item
    assert find_secret_kinds(item) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("curl -u dana:Tr0ub4dor-x https://api.example.com", "curl -u dana:[REDACTED_SECRET] https://api.example.com"),
        ("mysql -u root -pTr0ub4dor-x billing", "mysql -u root -p[REDACTED_SECRET] billing"),
        ("sshpass -p 'Tr0ub4dor-x' ssh deploy@host", "sshpass -p '[REDACTED_SECRET]' ssh deploy@host"),
        ("PGPASSWORD=Tr0ub4dor-x psql -h db", "PGPASSWORD=[REDACTED_SECRET] psql -h db"),
        ("DB_PASS=Tr0ub4dor-x", "DB_PASS=[REDACTED_SECRET]"),
        ("app login --password Tr0ub4dor-x", "app login --password [REDACTED_SECRET]"),
        ("Server=db;User ID=sa;Pwd=Tr0ub4dor-x;Encrypt=true", "Server=db;User ID=sa;Pwd=[REDACTED_SECRET];Encrypt=true"),
        ("Cookie: sessionid=k2j3h4g5f6d7s8a9q0w1e2r3", "Cookie: sessionid=[REDACTED_SECRET]"),
        (
            "git remote add origin https://oauth2:" + "gh" + "p_aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5@github.com/o/r.git",
            "git remote add origin https://oauth2:[REDACTED_SECRET]@github.com/o/r.git",
        ),
        (
            "https://" + "gh" + "p_aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5:x-oauth-basic@github.com/o/r.git",
            "https://[REDACTED_SECRET]:x-oauth-basic@github.com/o/r.git",
        ),
        # Codex's `token:` rule comes first and takes the rest of the URL with the token.
        (
            "https://x-access-token:" + "gh" + "p_aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5@github.com/o/r.git",
            "https://x-access-token:[REDACTED_SECRET]",
        ),
        ("token " + "gl" + "pat-xK3_aB7-dE9fG2hJ4kL6m", "token [REDACTED_SECRET]"),
        ("HF " + "h" + "f_CJXDCGLmlZGEONYlgCtjfIZSOcMzCPVNPk", "HF [REDACTED_SECRET]"),
    ],
)
def test_credentials_keep_their_context(text, expected):
    assert redact_secrets(text) == expected


def test_a_key_wrapped_onto_the_next_line_is_redacted_on_both_lines():
    first, second = "gh" + "p_aB3dE5fG7hJ9kL2mN4", "pQ6rS8tU0vW1xY3zA5bC7d"
    assert redact_secrets(f"token:\n{first}\n{second}\n") == f"token:\n{REDACTED}\n{REDACTED}\n"


def test_sort_keys_and_session_ids_are_not_secrets():
    text = "SORT_KEY=created_at_desc_then_id session_id=0199e1a2-7c3d-7f10-9a4b-2c6d8e0f1a23 inside=compute_value()"
    assert redact_secrets(text) == text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("aB3dE5fG7hJ9kL2mN4pQ6rS8tU0v", True),
        ("4f1c2e9ab07d55c3e1b2a9f0c6d7e8f9", True),
        ("AbstractSingletonProxyFactoryBean2", False),
        ("CODEX_MEMORIES_TEST_S3_ENDPOINT", False),
        ("openai-0.1.4-cp311-cp311-manylinux_2_17_x86_64", False),
        ("test_redaction_is_idempotent_for_every_format", False),
    ],
)
def test_looks_random_tells_generated_values_from_names(value, expected):
    from codex_memories.redact import looks_random

    assert looks_random(value) is expected


def test_importing_the_module_does_not_import_the_detector():
    import subprocess
    import sys

    code = "import sys, codex_memories.redact; print('detect_secrets' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_the_one_pass_hint_scan_finds_exactly_the_hints_a_substring_search_finds():
    """`redact_secrets` skips a rule when none of its hints occurs: the set it reads them from
    (one Aho-Corasick pass) must agree with `hint in text` for every hint, overlapping and
    nested hints (`passw` inside `password=`, `key` inside `accountkey=`) and non-ASCII text
    included, or a rule would be skipped on text it could match."""
    from codex_memories.redact.engine import _MARKER_LOWER, _present_hints, _rules

    hints = sorted({hint for rule in _rules() for hint in rule.hints if hint != _MARKER_LOWER})
    texts = [
        "",
        "plain words, nothing here",
        "accountkey=abc;password=x glpat-glsoat-xoxapp-",  # overlapping / nested hints
        "漢字 ✓ İstanbul ghp_ k_live_ _test_ sk- -us -u",
        "".join(hints),  # every hint, each one running into the next
        "".join(reversed(hints)),
        *PLANTED_SECRETS.values(),
    ]
    for text in texts:
        lowered = text.lower()
        assert _present_hints(lowered) == frozenset(hint for hint in hints if hint in lowered), text[:80]


def _prefixed_token_rule():
    from codex_memories.redact.engine import _rules

    return next(rule for rule in _rules() if rule.name == "prefixed_token")


# Pieces of text around the edges of a token run: token characters, the two that only block a
# match (`/`, `%`), JSON escapes, non-ASCII (2, 3 and 4 UTF-8 bytes), a lone surrogate.
_TOKENISH = st.lists(
    st.sampled_from(list("aZ9_-.~/%\\n \"'+:") + ["漢", "✓", "İ", "😀", "\ud800", "ghp_", "sk-", "Ab3xYz9Qw" * 2]),
    max_size=60,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(_TOKENISH, max_size=6).map("".join))
def test_prefixed_token_tried_at_run_starts_only_finds_what_a_full_scan_finds(text):
    """`prefixed_token` runs its regex only where a long run of token characters starts
    (`_token_run_starts`): it must find exactly the matches `finditer` finds at every position,
    on ASCII and non-ASCII text, with lone surrogates and JSON escapes."""
    rule = _prefixed_token_rule()
    assert [m.span() for m in rule._matches(rule.public, text)] == [m.span() for m in rule.public.finditer(text)]


def test_prefixed_token_run_starts_on_real_tokens():
    rule = _prefixed_token_rule()
    for text in [*PLANTED_SECRETS.values(), "漢字 /ghp_" + "Ab3xYz9Qw" * 4, "x" * 17 + "." + "Ab3xYz9Qw" * 3, "%" + "a_" + "b" * 40, "a_" + "b" * 16, " a_" + "b" * 16 + " 漢 a_" + "b" * 16]:
        for wrapped in (text, json.dumps(text), json.dumps(json.dumps(text)), json.dumps(text, ensure_ascii=False)):
            expected = [m.span() for m in rule.public.finditer(wrapped)]
            assert [m.span() for m in rule._matches(rule.public, wrapped)] == expected
    assert [m.span() for m in rule.public.finditer("a_" + "b" * 16)] == [(0, 18)]  # the shortest match


@pytest.mark.parametrize(
    ("name", "strength"),
    [
        ("password", "strong"),
        ("DB_PASSWORD", "strong"),
        ("db-pass", "strong"),
        ("user_pwd", "strong"),
        ("apiSecret", "strong"),
        ("clientSecret", "strong"),
        ("X-Auth-Token", "strong"),
        ("proxyAuth", "strong"),
        ("api_key", "strong"),
        ("apiKey", "strong"),
        ("APIKEY", "strong"),
        ("passphrase", "strong"),
        ("aws_secret_access_key", "strong"),
        ("JWT_SIGNING_KEY", "weak"),
        ("auth_key", "weak"),
        ("PresharedKey", "weak"),
        ("client-key-data", "weak"),
        ("token_value", "strong"),
        ("SecretString", "strong"),
        ("PublicKey", None),
        ("public key", None),
        ("psk", "strong"),
        ("bypass", None),
        ("compass", None),
        ("max_tokens", None),
        ("oauth_provider", None),
        ("keyboard", None),
        ("monkey", None),
        ("", None),
    ],
)
def test_a_name_says_secret_by_its_last_words(name, strength):
    from codex_memories.redact.names import name_strength

    assert name_strength(name) == strength


def test_the_rollout_readers_have_no_key_name_list_of_their_own():
    # Issue 31 item 3: one module owns the list; the transcript's leaf fallback imports it.
    import inspect

    from codex_memories.ingest import rollout_reader, rollout_scan, transcript

    assert "name_strength" in inspect.getsource(transcript)
    for module in (rollout_reader, rollout_scan, transcript):
        source = inspect.getsource(module)
        assert "passwd" not in source and "api[_-]?key" not in source, module.__name__


# ---- Shapes no provider list names (issue 29) ----------------------------------------------------

_PW = "Tr0ub4dor-x9"
_TOKEN = "aB3dE5fG7hJ9kL2mN4pQ6rS"
_B64_KEY = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
_HEX32 = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"sqlcmd -S db01 -U sa -P {_PW} -Q 'SELECT 1'", f"sqlcmd -S db01 -U sa -P {REDACTED} -Q 'SELECT 1'"),
        (f"ldapsearch -x -D cn=admin,dc=acme -w '{_PW}' -b dc=acme", f"ldapsearch -x -D cn=admin,dc=acme -w '{REDACTED}' -b dc=acme"),
        (f"smbclient //fs/share -U dana%{_PW} -c ls", f"smbclient //fs/share -U dana%{REDACTED} -c ls"),
        (f"7z a -p{_PW} vault.7z docs/", f"7z a -p{REDACTED} vault.7z docs/"),
        (f"PsExec.exe \\\\web01 -u deploy -p {_PW} cmd", f"PsExec.exe \\\\web01 -u deploy -p {REDACTED} cmd"),
        (f"keytool -list -keystore a.jks -storepass {_PW}", f"keytool -list -keystore a.jks -storepass {REDACTED}"),
        (f"./deploy.sh --db-password={_PW} --env prod", f"./deploy.sh --db-password={REDACTED} --env prod"),
        (f"openssl rsa -in k.pem -passin pass:{_PW}", f"openssl rsa -in k.pem -passin pass:{REDACTED}"),
        (f"xfreerdp /v:10.0.0.5 /u:admin /p:{_PW}", f"xfreerdp /v:10.0.0.5 /u:admin /p:{REDACTED}"),
        (f"mycli -h db -u admin -p{_PW} inventory", f"mycli -h db -u admin -p{REDACTED} inventory"),
        (f"sqlplus scott/{_PW}@//db:1521/ORCL", f"sqlplus scott/{REDACTED}@//db:1521/ORCL"),
        (f"impacket-psexec acme/admin:{_PW}@10.0.3.5", f"impacket-psexec acme/admin:{REDACTED}@10.0.3.5"),
        (f"echo '{_PW}' | sudo -S apt-get update", f"echo '{REDACTED}' | sudo -S apt-get update"),
        (f"echo 'deploy:{_PW}' | sudo chpasswd", f"echo 'deploy:{REDACTED}' | sudo chpasswd"),
        (f"rabbitmqctl add_user deploy {_PW}", f"rabbitmqctl add_user deploy {REDACTED}"),
        (f"$pw = ConvertTo-SecureString '{_PW}' -AsPlainText -Force", f"$pw = ConvertTo-SecureString '{REDACTED}' -AsPlainText -Force"),
        (f"CREATE USER reporting WITH PASSWORD '{_PW}';", f"CREATE USER reporting WITH PASSWORD '{REDACTED}';"),
        (f"ALTER USER 'app'@'%' IDENTIFIED BY '{_PW}';", f"ALTER USER 'app'@'%' IDENTIFIED BY '{REDACTED}';"),
        (f"bind 127.0.0.1\nrequirepass {_PW}\n", f"bind 127.0.0.1\nrequirepass {REDACTED}\n"),
        (f"machine api.example.com\n  login dana\n  password {_PW}", f"machine api.example.com\n  login dana\n  password {REDACTED}"),
        (f"db.internal:5432:billing:app:{_PW}", f"db.internal:5432:billing:app:{REDACTED}"),
        ("postgres://app:Tr0#b4dor-x9@db.internal/app", f"postgres://app:{REDACTED}@db.internal/app"),
        (f'apiSecret := "{_TOKEN}"', f'apiSecret := "{REDACTED}"'),
        (f"Client.new(:auth_token => '{_TOKEN}')", f"Client.new(:auth_token => '{REDACTED}')"),
        (f"  authToken: {_HEX32}", f"  authToken: {REDACTED}"),
        (f"[Interface]\nPrivateKey = {_B64_KEY}\n", f"[Interface]\nPrivateKey = {REDACTED}\n"),
        (f"PresharedKey = {_B64_KEY}", f"PresharedKey = {REDACTED}"),
        (f'{{"token_value": "dapi{_HEX32}"}}', f'{{"token_value": "{REDACTED}"}}'),
        (f"databricks token dapi{_HEX32}", f"databricks token {REDACTED}"),
        ("the staging admin password is Harbor1987! until Friday", f"the staging admin password is {REDACTED} until Friday"),
        (f"auth_key: {_TOKEN}", f"auth_key: {REDACTED}"),
    ],
)
def test_shapes_of_credentials_are_redacted_and_keep_their_context(text, expected):
    assert redact_secrets(text) == expected
    assert find_secret_kinds(expected) == []


@pytest.mark.parametrize(
    "text",
    [
        "mysql -u root -p billing < dump.sql",
        "ssh -p 2222 deploy@10.0.3.7 && mkdir -p build/out && docker run -p 8080:80 nginx",
        "grep -P '^[a-z]+-[0-9]{4}$' app.log | xargs -P 4 -n 1 ./process.sh",
        "echo \"$REGISTRY_PASSWORD\" | docker login -u ci --password-stdin registry.example.com",
        'curl -sS -u "$API_USER:$API_TOKEN" https://api.example.com',
        "keytool -list -keystore app.jks -storepass:env KEYSTORE_PASS; pg_dump --no-password billing",
        "passwd: password updated successfully",
        "the password is stored in Vault under secret/data/prod/db",
        "authToken = defaultAuthToken",
        "tokenLimit: 4096\npasswordMinLength: 12\nsecretName: prod-db",
        f"PublicKey = {_B64_KEY}",
        f"the server's public key {_B64_KEY}",
        "the session token budget is 150000 tokens",
        "src/app/views.py:42:10: E501 line too long (120 > 88 characters)",
        "root:x:0:0:root:/root:/bin/bash",
        "FROM python:3.11-slim@sha256:" + "ab" * 32 + " AS base",
        "To:dana@example.com From:ci@example.com",
        "cache_key: Linux-pip-" + _HEX32 + "0f1e2d3c",
        "sort_key: created_at_desc_then_id",
        ("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n" * 3),
        "docker run --rm \\\n  -v \"$PWD\":/src \\\n  ghcr.io/acme/builder:1.4.2 make test",
        # Code and docs from the installed packages that the name rules once took for values
        # (benchmarks/secret_redaction.py's corpus).
        'response = {"Policies": policies, "NextToken": next_token}',
        ":param auth: (optional) Auth tuple to enable Basic/Digest/Custom HTTP Auth.",
        'auth = "{user}:{password}@".format(**parts)',
        "auth = (self.user, self.password)",
        "Pass ``exc_type=ImportError`` to also skip",
        "we should pass usedforsecurity=False argument to md5()",
        "        pass\n\n    **Reporting:**\n",
        "For MultiGraphs, the edges are identified by incident nodes AND edge-key.",
        "-pi**8/(8100*zeta(5)**2) + zeta(3)/zeta(5)",
        '"AWS::ApiGateway::UsagePlanKey": "bfa3add8b26e8530",',
        'appSecret = "%(secret)s";',
        '_TOKEN: Final[str] = rf"[{_TCHAR}]+"',
        "'Credential=' + access_key + '/' + credential_scope",
        ":type credentials: :py:class:`~botocore.credentials.Credentials`",
    ],
)
def test_near_misses_of_the_shapes_are_left_alone(text):
    assert redact_secrets(text) == text
    assert find_secret_kinds(text) == []


def test_a_certificate_body_is_left_alone_and_a_private_key_body_without_its_header_is_not():
    import base64
    import random

    rng = random.Random(7)
    body = base64.b64encode(rng.randbytes(48 * 4)).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    certificate = f"-----BEGIN CERTIFICATE-----\n{lines}\n-----END CERTIFICATE-----"
    assert redact_secrets(certificate) == certificate
    middle = f"$ sed -n 3,6p ~/.ssh/id_rsa\n{lines}\n"
    assert redact_secrets(middle) == f"$ sed -n 3,6p ~/.ssh/id_rsa\n{REDACTED}\n"
    # The same lines inside JSON text, at two depths: the escapes stay, the JSON stays valid.
    for depth in (1, 2):
        serialized = middle
        for _ in range(depth):
            serialized = json.dumps(serialized)
        redacted = redact_secrets(serialized)
        assert body[:24] not in redacted
        json.loads(redacted)


def test_a_base64_encoded_private_key_is_redacted_and_an_encoded_certificate_is_not():
    import base64

    key = base64.b64encode(b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIByq" + b"A" * 40 + b"\n-----END EC PRIVATE KEY-----\n").decode()
    assert redact_secrets(f"    client-key-data: {key}") == f"    client-key-data: {REDACTED}"
    certificate = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmg\n-----END CERTIFICATE-----\n").decode()
    assert redact_secrets(f"certificate-authority-data: {certificate}") == f"certificate-authority-data: {certificate}"


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_a_value_cut_by_a_line_continuation_is_redacted_at_every_json_depth(depth):
    blob = "s3yYmP3XKy1fePGW/LlPsgkhx+R2f4p+GzWv3CUXm8ZP"
    rest = "DhjHhB3BzeiNiads5ugfECzd5F2DsUhT3eTbC9ZB8JvV"
    bearer = "LnaZYoquJUfKyXj6gtgtr6wtwrOEpUGogwpgEgMs"
    text = f"echo {blob}\\\n  {rest} | base64 -d\ncurl -H \"Authorization: Bearer \\\n  {bearer}\" https://x"
    for _ in range(depth):
        text = json.dumps(text)
    redacted = redact_secrets(text)
    assert blob[:12] not in redacted and rest[-12:] not in redacted and bearer[:12] not in redacted
    if depth:
        json.loads(redacted)


def test_the_rest_of_a_wrapped_key_is_redacted_even_when_it_is_short():
    first, second = "gh" + "p_vGhHjnBevVIfFIsYUj", "5PzcgvuODkXUN8Rd6U"
    text = json.dumps(f"token:\n{first}\n{second}")
    assert redact_secrets(text) == json.dumps(f"token:\n{REDACTED}\n{REDACTED}")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Tr0ub4dor-x", True),
        ("Harbor1987!", True),
        ("s3cr3tP4ss", True),
        ("hunter2hunter2", False),
        ("Python3Parser", False),
        ("release-2024", False),
        ("^[a-z]+-[0-9]{4}$", False),
        ("$DB_PASSWORD", False),
        ("self.password", False),
        ("your_password_here", False),
    ],
)
def test_looks_like_password_tells_chosen_passwords_from_names_and_patterns(value, expected):
    from codex_memories.redact.values import looks_like_password

    assert looks_like_password(value) is expected
