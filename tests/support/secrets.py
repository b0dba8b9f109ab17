"""Planted fake secrets, one per format `codex_memories.redact` must catch.

`PLANTED_SECRETS[name]` is a realistic snippet containing the secret; `SECRET_VALUES[name]` is
the part that must not survive redaction. Used by the redaction tests, the transcript tests, the
example Codex home and the benchmarks. Every value is fake; prefixes are assembled at import
time so that secret scanners on the repository do not flag this file.
"""

from __future__ import annotations

_ALNUM = "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5bC7dE9fG2hJ4kL6mN8pQ0rS2tU4vW6xY8z"


def _fake(length: int, offset: int = 0) -> str:
    return (_ALNUM[offset:] + _ALNUM[:offset])[:length]


_PEM_BODY = "\n".join(
    [
        "MIIEowIBAAKCAQEA3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5bC7dE9fG2hJ4kL",
        "6mN8pQ0rS2tU4vW6xY8zaB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5bC7dE9f",
        "G2hJ4kL6mN8pQ0rS2tU4vW6xY8zaB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zAQ==",
    ]
)

SECRET_VALUES: dict[str, str] = {
    "openai_api_key": "sk-" + _fake(24),
    "openai_project_key": "sk-" + "proj-" + "abc_DEF-" + _fake(40, 3),
    "anthropic_key": "sk-" + "ant-api03-" + _fake(60, 5) + "-AA",
    "aws_access_key_id": "AKIA" + "IOSFODNN7EXAMPLE",
    "aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "bearer_token": "abcdefghijklmnop1234",
    "authorization_basic": "ZGFuYTpodW50ZXIyaHVudGVyMg==",
    "password_assignment": "hunter2hunter2",
    "json_password": "correct-horse-battery",
    "json_escaped_api_key": "k3y-" + _fake(20, 7),
    "github_token": "ghp" + "_" + _fake(36, 11),
    "github_pat": "github" + "_pat_" + "11ABCDEFG0" + _fake(40, 13),
    "slack_token": "xox" + "b-" + "123456789012-1234567890123-" + _fake(24, 17),
    "slack_webhook": "T00000000/B00000000/" + _fake(24, 19),
    "google_api_key": "AIza" + "Sy" + _fake(33, 23),
    "stripe_key": "sk" + "_live_" + _fake(24, 29),
    "jwt": "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkRhbmEifQ"
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "private_key_pem": _PEM_BODY,
    "url_password": "s3cr3tP4ss",
    "client_secret_json": "cs-" + _fake(28, 31),
}

PLANTED_SECRETS: dict[str, str] = {
    "openai_api_key": f"export OPENAI_KEY_FOR_TESTS={SECRET_VALUES['openai_api_key']}",
    "openai_project_key": f"using key {SECRET_VALUES['openai_project_key']} for the eval run",
    "anthropic_key": f"ANTHROPIC={SECRET_VALUES['anthropic_key']}",
    "aws_access_key_id": f"aws configure set aws_access_key_id {SECRET_VALUES['aws_access_key_id']}",
    "aws_secret_access_key": f"AWS_SECRET_ACCESS_KEY={SECRET_VALUES['aws_secret_access_key']}",
    "bearer_token": f"curl -H 'Authorization: Bearer {SECRET_VALUES['bearer_token']}' https://api.example.com",
    "authorization_basic": f"Authorization: Basic {SECRET_VALUES['authorization_basic']}",
    "password_assignment": f"password = {SECRET_VALUES['password_assignment']}",
    "json_password": '{"user": "dana", "password": "' + SECRET_VALUES["json_password"] + '"}',
    "json_escaped_api_key": '{"output":"{\\"api_key\\": \\"' + SECRET_VALUES["json_escaped_api_key"] + '\\"}"}',
    "github_token": f"git remote set-url origin https://x:{SECRET_VALUES['github_token']}@github.com/acme/app.git",
    "github_pat": f"GH_PAT={SECRET_VALUES['github_pat']}",
    "slack_token": f"slack token is {SECRET_VALUES['slack_token']}",
    "slack_webhook": f"POST https://hooks.slack.com/services/{SECRET_VALUES['slack_webhook']}",
    "google_api_key": f"maps key: {SECRET_VALUES['google_api_key']}",
    "stripe_key": f"STRIPE={SECRET_VALUES['stripe_key']}",
    "jwt": f"cookie session={SECRET_VALUES['jwt']}; Path=/",
    "private_key_pem": "-----BEGIN RSA PRIVATE KEY-----\n"
    + SECRET_VALUES["private_key_pem"]
    + "\n-----END RSA PRIVATE KEY-----\n",
    "url_password": f"DATABASE_URL=postgres://app:{SECRET_VALUES['url_password']}@db.internal:5432/app",
    "client_secret_json": '{"client_id": "abc", "client_secret": "' + SECRET_VALUES["client_secret_json"] + '"}',
}
