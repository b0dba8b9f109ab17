"""A generated password may start with `$`; a variable does too (issue 36: an odbc.ini
`pwd = $…` came through whole, read as a shell variable). A variable is a name as people write
one, or a form only variables have (braces, `$(…)`, `$env:`); anything else after a credential
key is the credential."""

from __future__ import annotations

import pytest

from tests.redact.checks import assert_comes_through, assert_redacted_in_every_escaping

SECRETS = [
    ("[reporting]\nDriver = /opt/mssql/lib/libmsodbcsql.so\nUID = etl_reader\nPWD = {v}\n", "$Wm4tR8vZq1Lc"),
    ("DB_PASSWORD={v}\n", "$7hGk2Pq9xVb3"),
    ("spring.datasource.password={v}", "$pX3-kQ9.mZ7!r"),
    ("  password: \"{v}\"\n  username: ingest", "$Lr5nB2wK8sYe0"),
    ("mysql -u deploy --password='{v}' -h db.internal", "$aQ8zN3cR6tWj"),
]
VARIABLES = [
    "PWD = $ODBC_PASSWORD",
    "password: $dbPassword2",
    "DB_PASSWORD=$POSTGRES_PASSWORD",
    "token: $env:GITHUB_TOKEN",
    "password=$(cat /run/secrets/db_password)",
    "password: ${DB_PASSWORD}",
    "the password is $PGPASS-dev for now",
    "pass=$SecretValue",
]


@pytest.mark.parametrize(("template", "secret"), SECRETS)
def test_a_password_that_starts_with_a_dollar_is_redacted(template: str, secret: str) -> None:
    assert_redacted_in_every_escaping(template.format(v=secret), secret)


@pytest.mark.parametrize("text", VARIABLES)
def test_a_variable_after_a_credential_key_comes_through(text: str) -> None:
    assert_comes_through(text)
