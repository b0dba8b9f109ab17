"""Round-3 secret classes (issue 36), written before the rules and in wording, tools and values the
benchmark's generators (`benchmarks/redaction_heldout3.py`) do not use: they check the class of
shape, not one generator. Each class has look-alikes that must come through unchanged."""

from __future__ import annotations

import base64
import json

import pytest

from codex_memories.redact import redact_secrets
from tests.redact.checks import assert_comes_through, assert_redacted_in_every_escaping
from tests.support.secret_formats import leaked

ROUND3_SECRETS = [
    # Prose: log in as a user with a value, in several languages.
    ("Grafana is ready: log in as auditor with Kestrel#3318 for now", "Kestrel#3318"),
    ("you can login as ci-bot using Walnut-77104 until Friday", "Walnut-77104"),
    ("Melde dich als buchhaltung mit Birke-44107 an", "Birke-44107"),
    ("connecte-toi en tant que compta avec Renard-88213 stp", "Renard-88213"),
    ("inicia sesión como auditor con Nube#77120 y cámbiala", "Nube#77120"),
    ("accedi come ospite con Faro-55193 per ora", "Faro-55193"),
    ("faça login como suporte com Caju-66120 hoje", "Caju-66120"),
    ("войди как оператор с Береза-44719 и смени", "Береза-44719"),
    # Prose: the value, then its noun.
    ("just use Pinecone-7731x as the password for now", "Pinecone-7731x"),
    ("nimm Ahorn#90215 als Passwort", "Ahorn#90215"),
    ("mets Loutre-66140 comme mot de passe", "Loutre-66140"),
    ("usa Delfin-20931 como contraseña del wifi", "Delfin-20931"),
    ("coloque Jabuti-33071 como senha", "Jabuti-33071"),
    # Prose: the noun, a verb, the value; and a value right after the noun.
    ("la contraseña nueva quedó Tortuga-44102", "Tortuga-44102"),
    ("le mot de passe reste Hibou-77320 jusqu'à lundi", "Hibou-77320"),
    ("das Passwort bleibt Eule-55102 bis Montag", "Eule-55102"),
    ("the wifi password stays Heron-77104 this week", "Heron-77104"),
    ("la password diventa Volpe-33910 da domani", "Volpe-33910"),
    ("Zugangspasswort Fuchs-88210 bitte nicht weitergeben", "Fuchs-88210"),
    ("wifi 비번 Gurum-44128 이에요", "Gurum-44128"),
    # Slang and clipped words.
    ("pwd: Zebra9917x (temporary)", "Zebra9917x"),
    ("user ops / PW = Falke-22904", "Falke-22904"),
    ("логин root, пасс Сова-77215, не теряй", "Сова-77215"),
    ("código de acceso: Delfin-20931", "Delfin-20931"),
    ("mdp Mouette#44120 pour le NAS", "Mouette#44120"),
    # Command positions.
    ("mirror-tool -u ingest,Kelp#44120x ftps://drop.example.com", "Kelp#44120x"),
    ("webdav-sync --user archive:Fjord-77120q https://dav.example.org/", "Fjord-77120q"),
    ("mc config host add store https://s3.example.net:9000 Q3M8ZK1PX7WN2RTY4VB6 hT9kLm2Qx8Vb5Nc3Rz7Wp1Ys4Ud6Fg0Je2Ka8Lo5",
     "hT9kLm2Qx8Vb5Nc3Rz7Wp1Ys4Ud6Fg0Je2Ka8Lo5"),
    ("backup target: s3.example.net RTX4P9KZ2WQ7M3NB8VYC q8Lm2Zx9Rt4Wp7Ks3Ny5Bv1Hc6Jd0Fg2Ke8Ma4Nu",
     "q8Lm2Zx9Rt4Wp7Ks3Ny5Bv1Hc6Jd0Fg2Ke8Ma4Nu"),
    ("aws configure set aws_session_token IQoJb3JpZ2luX2VjEHcaCXVzLWVhc3QtMSJHMEUCIQ --profile dev",
     "IQoJb3JpZ2luX2VjEHcaCXVzLWVhc3QtMSJHMEUCIQ"),
    ("kubectl create secret generic smtp --from-literal=smtp-pass=Marten-4471q", "Marten-4471q"),
    # Aligned query results (psql, mysql) under a secret header.
    (" id |   owner   |     secret_key\n----+-----------+------------------------\n  7 | billing   | Zq8Xv2Lm9Rt4Wp7Ks3Ny5B\n(1 row)",
     "Zq8Xv2Lm9Rt4Wp7Ks3Ny5B"),
    ("+----+--------+--------------+\n| id | login  | password     |\n+----+--------+--------------+\n|  1 | mona   | Orca!9153ab  |\n"
     "+----+--------+--------------+", "Orca!9153ab"),
    # Name/value XML, PHP defines, INI and tfvars keys.
    ('<entry key="smtp.password">Sparrow#4471</entry>', "Sparrow#4471"),
    ("<setting name='LdapBindSecret'>Gr8-Owl-Night-11</setting>", "Gr8-Owl-Night-11"),
    ("define('AUTH_SALT', 'p{9Kq!vL2#mX7@wR');", "p{9Kq!vL2#mX7@wR"),
    ("[smtp]\nhost = mail.example.org\nsmtp_password = Lark-9915x", "Lark-9915x"),
    ('datadog_api_key = "7c4b1f9e2a6d8c3b5e0f7a1d9c2b4e6f"', "7c4b1f9e2a6d8c3b5e0f7a1d9c2b4e6f"),
    # Recovery keys in dash-separated groups after a recovery-key cue, several languages.
    ("Your recovery key:\nQ7RM-2KXP-9WNB-4HTD-6JFV-8LCZ", "Q7RM-2KXP-9WNB-4HTD-6JFV-8LCZ"),
    ("Wiederherstellungsschlüssel: 7HQ2-M9XK-3PWN-5RBT-2LDZ-8VCF", "7HQ2-M9XK-3PWN-5RBT-2LDZ-8VCF"),
    ("恢复密钥 K4TB-9QWM-2ZXN-7HRP-5DLC-3FVJ", "K4TB-9QWM-2ZXN-7HRP-5DLC-3FVJ"),
    ("clave de recuperación\nM2XQ-7PKW-4RNZ-9TBH-3CJD-6FLV-8GQS", "M2XQ-7PKW-4RNZ-9TBH-3CJD-6FLV-8GQS"),
]


@pytest.mark.parametrize(("text", "secret"), ROUND3_SECRETS)
def test_round_three_classes_are_redacted_raw_and_json_escaped(text, secret):
    assert_redacted_in_every_escaping(text, secret)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_base64_of_a_config_holding_a_credential_is_redacted_whole_in_every_escaping():
    config = "[default]\nregion = eu-west-3\naws_secret_access_key = t8Jq2Zx7Lm4Pv9Rk1Wn6Bc3Yd5Fg0Hs2Ke8Ma4Nu\n"
    docker = '{"registry": "reg.example.net", "auth_token": "h7Vq2Lm9Zx4Rk8Wp3Tn6Bc1Yd5"}'
    for blob in (_b64(config), _b64(docker)):
        text = "the file, base64'd:\n" + blob + "\nthanks"
        patch = "*** Add File: creds.b64\n+" + blob + "\n"  # an added line of an apply_patch body
        for form in (text, json.dumps(text), json.dumps(json.dumps(text)), patch, json.dumps(patch)):
            assert not leaked(blob, redact_secrets(form)), form


ROUND3_ORDINARY = [
    "sign in as admin with SSO",
    "log in as root with your own key, not the shared one",
    "inicia sesión como admin con tu cuenta de Google",
    "use utf-8 as the password encoding",
    "use v2.4.1 as the password policy version",
    "the password stays the same after a restart",
    "das Passwort bleibt gleich",
    "ps -u root,daemon -o pid,cmd",
    "mytool -u admin,ops --verbose",
    "mc alias set local http://localhost:9000 minioadmin minioadmin",
    "kubectl create secret generic app --from-literal=username=app --from-file=./key.pem",
    "kubectl create secret generic app --from-literal=password=${DB_PASSWORD}",
    " id                                   | name\n--------------------------------------+------\n"
    " 3f2b8c1e-9a4d-4e7b-8c2a-1d5e6f7a8b9c | ops\n(1 row)",
    " id | password_changed_at\n----+---------------------\n  1 | 2026-01-02 10:00:00\n(1 row)",
    '<property name="hibernate.dialect">org.hibernate.dialect.MySQLDialect</property>',
    '<entry key="password.min.length">12</entry>',
    "define('WP_DEBUG', false);",
    '{"Key": {"$ref": "#/definitions/MapKey"}, "SessionKey": {"$ref": "#/definitions/NonEmptyString"}}',
    "<entry key=\"session.key.cipher\">AES/GCM/NoPadding</entry>",
    "[server]\nport = 8080\npassword_min_length = 12",
    "echo " + _b64("hello world, this is a plain text fixture for the decoder tests\n") + " | base64 -d",
    "see ABCD-1234 and OPS-2291 for the recovery key rotation",
    "recovery key rotation: tracked in JIRA-4412",
    "Recovery key: stored in the safe, ask Dana",
    "commit 4f2a9c1e8b7d6f5a4c3b2a1f0e9d8c7b6a5f4e3d\nAuthor: Dana <dana@example.org>",
    "terraform apply -parallelism=30",
    "4F2A9C1E8B7D6F5A4C3B2A1F0E9D8C7B  4f2a9c1e8b7d6f5a4c3b2a1f0e9d8c7b6a5f4e3d  dist/app.tar.gz",
    "DEADBEEF00112233 0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
    "image: nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
]


@pytest.mark.parametrize("text", ROUND3_ORDINARY)
def test_round_three_look_alikes_come_through(text):
    assert_comes_through(text)
