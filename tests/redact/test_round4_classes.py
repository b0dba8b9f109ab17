"""Round-4 secret classes (issue 36): shapes the blind round 4 (`benchmarks/redaction_heldout4.py`)
found leaking, written here with other tools, wording and values than its generators, so they
check the class of shape and not one generator. Each class has look-alikes that must come through
unchanged. The prose of round 4 (a credential handed over with no key word) is not fixed."""

from __future__ import annotations

import pytest

from tests.redact.checks import assert_comes_through, assert_redacted_in_every_escaping

NOSTR_KEY = "nsec1ecvtw0g9sc9lv6dhcdfat49975ez3qmdh9avarkgd2uttz8p2769m9fnqc"
BASE58_KEYPAIR = "2gZfntaXT4TmpqwYzq3pEDnr1xgz2Hgy1z7fnGx1mXrk5zf1MFhjdTSw9jWu2fPgBSUC36KzQG1GxdJtoDJ9jsu1"
RAILS_SECRET = "9d2c1f0e4b7a68d35c2e1f90ab34cd56ef7890a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071829"

ROUND4_SECRETS = [
    # A Nostr private key, anywhere.
    (f"relay bot identity (keep private): {NOSTR_KEY}", NOSTR_KEY),
    # A password typed at a redis-cli prompt, with and without a user name.
    ("10.0.3.7:6380> AUTH Sparrow-88213-blue\nOK", "Sparrow-88213-blue"),
    ("redis-sentinel:26379[1]> auth monitor Kestrel#44190x\n(error) WRONGPASS", "Kestrel#44190x"),
    # A value piped into a Kubernetes secret.
    ("printf '%s' 'Lq9Vx2Rm7Tn4Kw8Zp3Hj' | kubectl create secret generic webhook-token --from-file=token=/dev/stdin",
     "Lq9Vx2Rm7Tn4Kw8Zp3Hj"),
    ('echo -ne "w7Hc2PqLm9Xz4Rt8" | kubectl create secret generic api --from-file=key=/dev/stdin -n prod', "w7Hc2PqLm9Xz4Rt8"),
    # A Kubernetes secret printed decoded: the output line after the command.
    ("$ kubectl get secrets grafana -o go-template='{{index .data \"admin-password\"}}' | base64 --decode\nOwl-77120-Quarry\n$ ",
     "Owl-77120-Quarry"),
    # A TOTP key given for manual entry, in groups of four.
    ("Or type this secret key into your authenticator:\njbsw y3dp ehpk 3pxp kq2m 7vfn", "jbsw y3dp ehpk 3pxp kq2m 7vfn"),
    ("Manual entry key: gezd gnbv gy3t qojq mfrg gzdf", "gezd gnbv gy3t qojq mfrg gzdf"),
    # sssd's LDAP bind password, and Rails' secret key base.
    ("[domain/lab]\nldap_default_authtok_type = password\nldap_default_authtok = Otter+55301rain", "Otter+55301rain"),
    (f"export SECRET_KEY_BASE={RAILS_SECRET}", RAILS_SECRET),
    (f"SECRET_KEY_BASE:   {RAILS_SECRET}", RAILS_SECRET),
    # A keypair exported as base58 after words that say it is a private key.
    (f"Exported the private key of the test wallet (base58):\n{BASE58_KEYPAIR}", BASE58_KEYPAIR),
]


@pytest.mark.parametrize(("text", "secret"), ROUND4_SECRETS)
def test_round_four_classes_are_redacted_raw_and_json_escaped(text: str, secret: str) -> None:
    assert_redacted_in_every_escaping(text, secret)


ROUND4_ORDINARY = [
    "Run AUTH before any other command when requirepass is set.",
    "127.0.0.1:6379> AUTH <password>",
    "127.0.0.1:6379> PING\nPONG",
    "echo hello | kubectl create secret generic demo --dry-run=client -o yaml",
    "kubectl get secret db-creds -o yaml",
    "kubectl get secret db -o jsonpath='{.data.password}' | base64 -d\n$ kubectl rollout restart deploy/api",
    "The setup key steps are described in docs/2fa.md.",
    "ldap_default_authtok_type = password",
    "TOKEN_BASE_URL=https://auth.example.com/v1",
    "DATABASE_URL_BASE=postgres://db.internal:5432",
    "the public key of the wallet is listed on the explorer",
]


@pytest.mark.parametrize("text", ROUND4_ORDINARY)
def test_round_four_look_alikes_come_through(text: str) -> None:
    assert_comes_through(text)
