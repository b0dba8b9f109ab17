"""Secrets by what they are (issues 34 and 36): where a value stands and how it looks, in every
supported language and structure; and ordinary coding-session text that must come through."""

from __future__ import annotations

import base64
import json
import random

import pytest

from benchmarks.redaction_classes import SECRET_FAMILIES, ordinary_snippets
from codex_memories.redact import REDACTED, find_secret_kinds, redact_secrets
from tests.redact.checks import assert_comes_through, assert_redacted_in_every_escaping, escapings
from tests.support.secret_formats import leaked, serialize

ORDINARY = [
    "always run terraform plan with -parallelism=30 in this repo",
    "node --max-old-space-size=4096 scripts/build.js",
    "export TOKEN=<your-token>",
    "password: ${DB_PASSWORD}",
    "password = ********",
    "api_key: YOUR_API_KEY",
    "Authorization: Bearer <token>",
    "mvn -Pprofile=dev -pl api package",
    "the password must be at least 12 characters long",
    "密码长度至少12位，必须包含数字",
    "recovery codes are stored in 1Password, ask Dana",
    "credentials: Optional[Block] = None",
    "src/auth/token_store.py:42: E501 line too long",
    "https://github.com/acme/webhooks-service/commit/4f2a9c1e8b7d6f5a4c3b2a1f0e9d8c7b6a5f4e3d",
    "echo aGVsbG8gd29ybGQsIHRoaXMgaXMgYSBmaXh0dXJl | base64 -d",
    "id,email,created_at\n1,dana@example.org,2026-01-02",
    "include_secrets=include_secrets,\n        limit=1,\n    )",
    '{"aws_secret_access_key": {"title": "Aws Secret Access Key", "type": "string"}}',
    "max_tokens: 4096",
    "secrets: inherit",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_and_placeholders_come_through_unchanged(text):
    assert_comes_through(text)


PROSE = [
    "the password is Harbor1987!",
    "口令是 Xk92mLq7Zp",
    "测试环境数据库的密码为Tiger2291，别外传",
    "パスワードは Sakura99xyz です",
    "本番のトークンは「Soleil_6828x92」なので注意",
    "비밀번호는 Hangul77!x",
    "La clave del servidor de pruebas es Gato_azul77, no la compartas",
    "a senha do banco de homologação: Praia9981",
    "le mot de passe est Soleil#2024",
    "Das Kennwort für den Staging-Server lautet Nordlys_4471",
    "Пароль от тестовой базы — Medved_2024x, никому не давай",
]


@pytest.mark.parametrize("text", PROSE)
def test_a_credential_after_a_credential_word_is_redacted_in_every_language_and_escaping(text):
    secret = next(word for word in text.replace("「", " ").replace("」", " ").replace(",", " ").replace("，", " ").split() if any(c.isdigit() for c in word))
    secret = secret.split("为")[-1]
    for form in escapings(text):
        redacted = redact_secrets(form)
        assert not leaked(secret, redacted), form
        assert find_secret_kinds(redacted) == []


STRUCTURED = [
    ("ngrok config add-authtoken 2aBcD3eFgH4iJkLmN5oPqRsT6uV_7wXyZ8aBcDeFgHiJk", "2aBcD3eFgH4iJkLmN5oPqRsT6uV_7wXyZ8aBcDeFgHiJk"),
    ("mega-login dana@example.org Sonne4481x", "Sonne4481x"),
    ("| user | password |\n|---|---|\n| admin | Tr0ub4dor&3 |", "Tr0ub4dor&3"),
    ("id,email,api_key\n1,a@b.c,k3J9xQ2mZ8pL4vR7tY1w", "k3J9xQ2mZ8pL4vR7tY1w"),
    ("INSERT INTO users (email, password) VALUES ('a@b.c', 'Zebra!stripes9');", "Zebra!stripes9"),
    ("<server><id>nexus</id><password>Sup3rS3cret!</password></server>", "Sup3rS3cret!"),
    ('<add key="ClearTextPassword" value="NuGetPw123" />', "NuGetPw123"),
    ('{"name": "DB_PASSWORD", "value": "hunter22x"}', "hunter22x"),
    ("define('DB_PASSWORD', 'wpPass99');", "wpPass99"),
    ('{"github-oauth": {"github.com": "abc123def456ghi789jkl"}}', "abc123def456ghi789jkl"),
    ('{"unseal_keys_b64": ["q9Xk2lPz7mN8vR4tY1wE6uI3oA5sD0fG"]}', "q9Xk2lPz7mN8vR4tY1wE6uI3oA5sD0fG"),
    ("Unseal Key 1: q9Xk2lPz7mN8vR4tY1wE6uI3oA5sD0fGq9Xk2lPz", "q9Xk2lPz7mN8vR4tY1wE6uI3oA5sD0fGq9Xk2lPz"),
    ("curl -X POST https://hooks.example.com/webhook/8f3kZp92LmQx7vR4tY1wE6uI3oA5sD0f", "8f3kZp92LmQx7vR4tY1wE6uI3oA5sD0f"),
    ("https://collector.example.io/v1/traces?dd-api-key=0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
    ("recovery codes: 8f3k-2mzp 7qx4-r9tl", "8f3k-2mzp"),
    ("リカバリーコード：\n13415285\n97180606", "13415285"),
]


@pytest.mark.parametrize(("text", "secret"), STRUCTURED)
def test_a_secret_in_a_command_position_a_document_field_or_a_url_is_redacted(text, secret):
    for form in (text, json.dumps(text), json.dumps(json.dumps(text))):
        redacted = redact_secrets(form)
        assert not leaked(secret, redacted), form
        if form != text:
            json.loads(redacted)  # the JSON stays valid
        assert redact_secrets(redacted) == redacted


def test_base64_is_redacted_when_what_it_decodes_to_holds_a_secret_and_kept_when_it_is_text():
    inner = base64.b64encode(b"deploy:Harbor1987!").decode()
    wrapped = base64.b64encode(json.dumps({"auths": {"registry.example.com": {"auth": inner}}}).encode()).decode()
    assert wrapped not in redact_secrets(f"  .dockerconfigjson: {wrapped}")
    fixture = base64.b64encode(b"hello world, this is a fixture").decode()
    assert redact_secrets(f"FIXTURE = '{fixture}'") == f"FIXTURE = '{fixture}'"


def test_wallet_material_is_redacted_by_word_list_byte_array_and_checksum():
    mnemonic = "early vocal lamp family float coral still liar pet file ladder enhance"
    assert mnemonic not in redact_secrets(f"seed backup:\n{mnemonic}")
    rng = random.Random(5)
    numbers = json.dumps([rng.randrange(256) for _ in range(64)])
    assert REDACTED in redact_secrets(numbers)
    wif = "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ"  # the documented example key
    assert wif not in redact_secrets(f"importprivkey {wif}")
    # A word-list run shorter than twelve words, and a list of small numbers, are not wallets.
    assert redact_secrets("abandon ability able about above absent absorb") == "abandon ability able about above absent absorb"
    assert redact_secrets("[0, 0, 0, 0, 1, 1, 1, 1]") == "[0, 0, 0, 0, 1, 1, 1, 1]"


# ---- round 2 classes (issue 36): written before the rules, in wording the benchmark's generators
# do not use, so they check the class and not the one generator.
ROUND2_SECRETS = [
    # Korean and other-language password cues, particles and "set it to" phrasings.
    ("DB 암호를 Qwerty_8841z로 설정했습니다", "Qwerty_8841z"),
    ("새 비번은 Maple#2290 이에요", "Maple#2290"),
    ("와이파이 패스워드도 Kimchi2024x 입니다", "Kimchi2024x"),
    ("la password del server è Lupo_4471x", "Lupo_4471x"),
    ("het wachtwoord van de database is Fiets_2291x", "Fiets_2291x"),
    ("hasło do bazy: Kotek_5512q", "Kotek_5512q"),
    ("yeni şifre: Deniz_7731k", "Deniz_7731k"),
    ("lösenordet är Granit_3390b", "Granit_3390b"),
    ("I changed the admin password to Walrus_6620t yesterday", "Walrus_6620t"),
    ("сменил пароль на Ёжик_4410z", "Ёжик_4410z"),
    ("データベースのパスワードも Kaede_5519w に変えた", "Kaede_5519w"),
    ("数据库密码改为 Lotus_8812m 了", "Lotus_8812m"),
    # A password manager's unlock command: the password as its positional argument.
    ('BW_SESSION="$(bw unlock "Quartz#7781" --raw)"', "Quartz#7781"),
    ("bw unlock --raw Topaz-5530x", "Topaz-5530x"),
    ("rbw unlock Heron_2231k && rbw get github", "Heron_2231k"),
    # Quoted CSV and TSV cells under a secret header, in JSON too.
    ('"service","login","api_key"\n"billing","svc","k3J9xQ2mZ8pL4vR7tY1w"', "k3J9xQ2mZ8pL4vR7tY1w"),
    ("'host'\t'user'\t'passwd'\n'db1'\t'root'\t'Orca!9153'", "Orca!9153"),
    ('"name";"token"\n"ci";"Lynx_40xT9qPz2wM8"', "Lynx_40xT9qPz2wM8"),
    ('here you go: "host","db_password"\n"db1","Pelican#5521"', "Pelican#5521"),
    # SQL inserts without a column list: a generated or password-like value.
    ("insert into api_tokens values (3, 'deploy-bot', 'q7Rk2LmZ9xV4pT8sW1nB6yC3');", "q7Rk2LmZ9xV4pT8sW1nB6yC3"),
    ("INSERT INTO `users` VALUES (12,'lee','Lee Park','Tulip!8842');", "Tulip!8842"),
    ("INSERT INTO accounts VALUES\n  (1, 'ops', 'Cobalt-7712', NOW()),\n  (2, 'bi', 'Amber-3391', NOW());", "Amber-3391"),
    # A long random path segment under an events / collector / intake path.
    ("POST https://api.example.org/v1/events/6b86b273ff34fce19d6b804eff5a3f5747ada4ea/track", "6b86b273ff34fce19d6b804eff5a3f5747ada4ea"),
    ("DSN=https://intake.metrics.example.com/api/v2/series/3f5c9e1a7b2d4f6e8a0c1e3b5d7f9a2c", "3f5c9e1a7b2d4f6e8a0c1e3b5d7f9a2c"),
    ("curl https://telemetry.example.dev/capture/8c1f2e4d6b8a0c2e4f6a8b0d2f4e6a8c0b2d4f6e -d @event.json", "8c1f2e4d6b8a0c2e4f6a8b0d2f4e6a8c0b2d4f6e"),
    # Recovery / backup codes in digit groups, several languages.
    ("Your Google backup codes:\n1. 8410 2275\n2. 3391 0486\n3. 7720 1645", "3391 0486"),
    ("Kody zapasowe: 55821 90317 / 44102 77315", "44102 77315"),
    ("Codici di backup\n 123 456 789\n 246 801 357", "246 801 357"),
    ("backup-codes.txt:\n4821-0937-1150\n6604-2219-8873", "6604-2219-8873"),
    ("复原码：\n7731 0042\n5518 2290", "5518 2290"),
]


@pytest.mark.parametrize(("text", "secret"), ROUND2_SECRETS)
def test_round_two_classes_are_redacted_raw_and_json_escaped(text, secret):
    assert_redacted_in_every_escaping(text, secret)


ROUND2_ORDINARY = [
    "INSERT INTO migrations VALUES (5, '2026_01_02_add_users', 1);",
    "INSERT INTO users VALUES (1, 'dana', 'dana@example.org', '2026-01-02', 'Dana Park');",
    "insert into releases values (7, 'v2.14.0', 'a3f9c1e', now());",
    "insert into commits values ('4f2a9c1e8b7d6f5a4c3b2a1f0e9d8c7b6a5f4e3d', 'fix: handle empty config');",
    '"id","user","created_at"\n"1","dana","2026-01-02"',
    '"user","password"\n"dana","<password>"',
    "Note: id, email, password are required\nsee docs/signup.md, section 2",
    "https://api.github.com/repos/acme/app/events",
    "https://github.com/acme/events-service/commit/4f2a9c1e8b7d6f5a4c3b2a1f0e9d8c7b6a5f4e3d",
    "https://example.com/events/2026/03/summit",
    "bw unlock --passwordenv BW_PASSWORD --raw",
    "bw unlock $BW_PASSWORD",
    "then unlock the vault with bw unlock and paste the session key",
    "set the password to something stronger than the default",
    "the password to the staging db is in 1Password",
    "비밀번호를 잊으셨나요? 재설정 링크를 보내드립니다",
    "passwort auf mindestens 12 Zeichen setzen",
    "backup codes: regenerate them after 30 days",
    "Backup codes\nGenerated 2026 03 02, 10 codes",
    "我 的 天 啊 这 是 什 么",
]


@pytest.mark.parametrize("text", ROUND2_ORDINARY)
def test_round_two_look_alikes_come_through(text):
    assert_comes_through(text)


@pytest.mark.parametrize("language", ["english", "japanese", "spanish", "czech", "korean", "chinese_simplified", "chinese_traditional",
                                      "portuguese", "turkish", "french", "italian", "russian"])
def test_a_mnemonic_in_every_word_list_is_redacted_in_every_escaping(language):
    from mnemonic import Mnemonic

    rng = random.Random(11)
    for size in (16, 32):
        words = Mnemonic(language).to_mnemonic(bytes(rng.getrandbits(8) for _ in range(size)))
        for text in (words, "助記詞：" + words, "restore with:\n" + words):
            for form in escapings(text):
                redacted = redact_secrets(form)
                assert not leaked(words, redacted), (language, form)


@pytest.mark.parametrize("family", [family for family in SECRET_FAMILIES if family.split in ("tune", "heldout", "heldout2")], ids=lambda family: family.name)
def test_each_benchmark_family_of_rounds_one_two_and_tuning_is_redacted_in_a_tool_output(family):
    snippet, secrets = family.build(random.Random(3))
    text = serialize({"type": "function_call_output", "call_id": "call_1", "output": snippet})
    redacted = redact_secrets(text)
    assert not any(leaked(secret, redacted) for secret in secrets)
    json.loads(redacted)


def test_a_generated_ordinary_coding_session_corpus_comes_through_unchanged():
    changed = [snippet for snippet in ordinary_snippets(2, 1500) if redact_secrets(snippet) != snippet]
    assert changed == []
