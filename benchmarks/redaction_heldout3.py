"""Held-out round 3 for `redaction_classes`: secret shapes written blind, while the redactor was being changed.

    .venv/bin/python -m benchmarks.redaction_classes --split heldout3     # the measurement (once)
    .venv/bin/python -m benchmarks.redaction_heldout3 [--seed 1]          # lists the cases, redacts nothing

Written by someone who read neither the redactor nor its results on these families: only the
family registry and value generators (now `tests/support/secret_families.py`) and the families of
`redaction_classes.py` (so that these are other shapes and wordings than the tune, heldout and
heldout2 families) and the placements of
`tests/support/secret_formats.py` (whose command lines, such as `curl -u`, `docker login -p`,
`htpasswd -b`, `openssl -passin`/`-k`, `.netrc` and `.pgpass`, are development data and so are
left out here). Each family is one way a credential is handed over, with random values from the
seed; it returns the text and the values that must not survive. Every value is at least 12
characters, the benchmark's leak window, so a value counts as leaked when any 12 characters of it
survive.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import uuid

from tests.support.secret_families import FAMILIES, b64, base62, chars, family, hex_digits, mnemonic, password

SPLIT = "heldout3"

# ---- values ---------------------------------------------------------------------------------------

_WORDS = ["lantern", "quartz", "mosaic", "harbor", "pepper", "glacier", "violet", "cobalt", "meadow", "falcon", "ember",
          "orchid", "tundra", "copper", "saffron", "breeze", "marble", "willow", "canyon", "nimbus", "juniper", "pixel"]


def _generated(rng: random.Random, size: int = 16, symbols: str = "!#%*-_.~+=@") -> str:
    """A password manager's password: letters, digits and a few symbols, every class present."""
    while True:
        value = chars(rng, string.ascii_letters + string.digits + symbols, size)
        if any(c.isdigit() for c in value) and any(c.isupper() for c in value) and any(c.islower() for c in value) \
                and (not symbols or any(c in symbols for c in value)):
            return value


def _memorable(rng: random.Random, separator: str | None = None) -> str:
    """A memorable password: three capitalised words and a number, e.g. Quartz-Ember-Willow-47."""
    sep = separator if separator is not None else rng.choice(["-", ".", "_"])
    words = [w.capitalize() for w in rng.sample(_WORDS, 3)]
    return sep.join(words) + sep + str(rng.randrange(10, 999))


def _human(rng: random.Random) -> str:
    """A person's own password (`_password`), lengthened with a year the way people do."""
    return password(rng) + str(rng.randrange(1990, 2027))


def _pw(rng: random.Random, symbols: str = "!#%*-_.~+=@") -> str:
    """One of the three kinds, chosen by the seed; never shorter than the 12-character leak window."""
    kind = rng.randrange(3)
    if kind == 0:
        value = _generated(rng, rng.randrange(14, 21), symbols)
    elif kind == 1:
        value = _memorable(rng, "-" if "-" in symbols else "")
    else:
        value = _human(rng)
        value = "".join(c for c in value if c.isalnum() or c in symbols)
    while len(value) < 12:
        value += str(rng.randrange(10, 99))
    return value


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128)))


# ---- credentials in prose: handed over in a sentence, not "<word> is <value>" ----------------------
# A user name beside the secret, a slang or clipped word for it, the value before its noun, or no
# word for it at all.
_PROSE = {
    "en": "Jenkins is back up. Sign in as admin with {v} and set your own once you're in.",
    "de": "Ich hab dir den SFTP-Zugang eingerichtet: Benutzer lieferant01, Kennwort {v} – "
          "bitte beim ersten Login ändern.",
    "fr": "Je t'ai créé un compte sur le GitLab interne, identifiant jdupont et code d'accès {v}, pense à le changer.",
    "es": "Te paso el acceso al panel: entra con soporte y {v} como clave, y cámbiala cuando puedas.",
    "pt": "Criei teu acesso no Jira, a senha provisória ficou {v} e expira amanhã.",
    "ru": "Доступ к админке: логин admin, пасс {v}, смени после первого входа.",
    "zh": "你的VPN账号开好了，用户名 zhangwei，初始密码 {v}，首次登录后请修改。",
    "ja": "共有アカウントのログイン情報です。ID: support / PW: {v} 取り扱い注意でお願いします。",
    "ko": "공유 계정 정보 보내드려요. 아이디 ops, 비번 {v} 입니다.",
}
for _language, _template in _PROSE.items():
    family(f"prose4_{_language}", f"prose_{_language}", SPLIT)(
        lambda rng, t=_template: (lambda v: (t.format(v=v), [v]))(_pw(rng, "#%*-_~+=@")))


# ---- command positions: other tools that take a secret on the command line --------------------------
@family("minio_alias_set_keys", "cli_position", SPLIT)
def _mc_alias(rng):
    access = chars(rng, string.ascii_uppercase + string.digits, 20)
    secret = base62(rng, 40)
    text = f"mc alias set backup https://minio.internal.example.org:9000 {access} {secret}\n"
    text += "Added `backup` successfully."
    return text, [secret]


@family("aws_configure_set_secret", "cli_position", SPLIT)
def _aws_configure(rng):
    v = chars(rng, string.ascii_letters + string.digits + "/+", 40)
    return f"aws configure set aws_secret_access_key {v} --profile billing-prod", [v]


@family("kubectl_from_literal", "cli_position", SPLIT)
def _kubectl_literal(rng):
    v = _pw(rng, "-_.+")
    return (f"kubectl -n payments create secret generic ledger-db --from-literal=username=ledger "
            f"--from-literal=password={v}\nsecret/ledger-db created"), [v]


@family("lftp_user_comma_password", "cli_position", SPLIT)
def _lftp(rng):
    v = _pw(rng, "-_.+")
    return f"lftp -u partner-upload,{v} sftp://files.example.net -e 'mirror -R ./exports /incoming; bye'", [v]


# ---- tool-printed JSON --------------------------------------------------------------------------------
@family("terraform_output_json_sensitive", "tool_json", SPLIT)
def _tf_output(rng):
    v = _generated(rng, 24, "!#%*-_+=")
    data = {
        "db_endpoint": {"sensitive": False, "type": "string",
                        "value": "ledger.c8x2k1.eu-west-1.rds.amazonaws.com:5432"},
        "db_master_password": {"sensitive": True, "type": "string", "value": v},
        "vpc_id": {"sensitive": False, "type": "string", "value": "vpc-0" + hex_digits(rng, 16)},
    }
    return "$ terraform output -json\n" + json.dumps(data, indent=2), [v]


@family("az_sp_create_for_rbac_json", "tool_json", SPLIT)
def _az_sp(rng):
    v = base62(rng, 3) + "8Q~" + chars(rng, string.ascii_letters + string.digits + "-_.~", 34)
    data = {"appId": _uuid(rng), "displayName": "gh-actions-deploy", "password": v, "tenant": _uuid(rng)}
    return ("The output includes credentials that you must protect. Be sure that you do not include these credentials "
            "in your code or check the credentials into your source control.\n" + json.dumps(data, indent=2)), [v]


# ---- tables -------------------------------------------------------------------------------------------
@family("psql_aligned_result", "table", SPLIT)
def _psql_table(rng):
    rows = [("1", "ci-runner", base62(rng, 32)), ("2", "nightly-export", base62(rng, 32))]
    lines = [" id |      name      |            api_token             ",
             "----+----------------+----------------------------------"]
    lines += [f" {i:>2} | {name:<14} | {token}" for i, name, token in rows]
    lines.append("(2 rows)")
    return "app=> SELECT id, name, api_token FROM integrations;\n" + "\n".join(lines), [r[2] for r in rows]


# ---- SQL ----------------------------------------------------------------------------------------------
@family("mysql_change_replication_source", "sql", SPLIT)
def _replication(rng):
    v = _pw(rng, "#%*-_~+=@")
    return ("CHANGE REPLICATION SOURCE TO\n  SOURCE_HOST='db-primary.internal',\n  SOURCE_USER='repl',\n"
            f"  SOURCE_PASSWORD='{v}',\n  SOURCE_AUTO_POSITION=1;\nSTART REPLICA;"), [v]


# ---- config files -------------------------------------------------------------------------------------
@family("terraform_tfvars", "config_file", SPLIT)
def _tfvars(rng):
    v = base62(rng, 40)
    return (f'region               = "eu-central-1"\ninstance_type        = "t3.medium"\n'
            f'cloudflare_api_token = "{v}"\nenable_waf           = true'), [v]


@family("wp_config_define", "config_file", SPLIT)
def _wp_config(rng):
    v = _pw(rng, "#%*-_~+=@!")
    return (f"/** Database settings */\ndefine( 'DB_NAME', 'wp_shop' );\ndefine( 'DB_USER', 'wp_shop' );\n"
            f"define( 'DB_PASSWORD', '{v}' );\ndefine( 'DB_HOST', 'localhost' );"), [v]


@family("ansible_inventory_host_vars", "config_file", SPLIT)
def _ansible_inventory(rng):
    v = _pw(rng, "-_.%+!@")
    return (f"[legacy]\nbackup01 ansible_host=10.20.4.11 ansible_user=root ansible_ssh_pass={v}\n"
            f"[legacy:vars]\nansible_python_interpreter=/usr/bin/python3"), [v]


@family("hibernate_cfg_xml", "config_file", SPLIT)
def _hibernate(rng):
    v = _pw(rng, "#%*-_~+=@!")
    return ('<session-factory>\n  <property name="hibernate.connection.url">jdbc:mysql://db:3306/crm</property>\n'
            '  <property name="hibernate.connection.username">crm</property>\n'
            f'  <property name="hibernate.connection.password">{v}</property>\n</session-factory>'), [v]


# ---- base64-wrapped -----------------------------------------------------------------------------------
@family("kubeconfig_pasted_as_base64", "base64_wrapped", SPLIT)
def _kubeconfig_b64(rng):
    token = chars(rng, string.ascii_letters + string.digits + "-_", 48)
    kubeconfig = ("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.12.5:6443\n"
                  "  name: stage\n"
                  f"users:\n- name: ci\n  user:\n    token: {token}\n")
    blob = b64(kubeconfig.encode())
    return f"here's the kubeconfig for the new stage cluster, base64'd so chat doesn't mangle it:\n{blob}", [blob]


# ---- URLs ---------------------------------------------------------------------------------------------
@family("chat_space_webhook_token", "url_token", SPLIT)
def _chat_webhook(rng):
    space = "AAAA" + chars(rng, string.ascii_letters + string.digits + "-_", 7)
    token = chars(rng, string.ascii_letters + string.digits + "-_", 43)
    # The `key` is the same in every such webhook (no secret); assembled so that scanners do not flag this file.
    key = "AI" + "zaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"
    url = f"https://chat.googleapis.com/v1/spaces/{space}/messages?key={key}&token={token}%3D"
    body = json.dumps({"text": "nightly build failed"})
    return f"curl -X POST -H 'Content-Type: application/json' '{url}' -d '{body}'", [token]


# ---- wallet material ----------------------------------------------------------------------------------
@family("bip39_japanese_18", "wallet", SPLIT)
def _bip_ja(rng):
    v = mnemonic(rng, "japanese", 18)
    return f"テスト用ウォレットの復元フレーズ（紙に控えたら消す）\n{v}", [v]


# ---- recovery codes -----------------------------------------------------------------------------------
@family("account_recovery_key_groups", "recovery_codes", SPLIT)
def _recovery_key(rng):
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    v = "-".join(chars(rng, alphabet, 4) for _ in range(7))
    return f"Recovery key for the shared Apple ID (print it, then delete this message):\n{v}", [v]


HELDOUT3 = [f for f in FAMILIES if f.split == SPLIT]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    # Run as a script this file is `__main__` and registers a second time: list the package's copy.
    from benchmarks.redaction_heldout3 import HELDOUT3 as families

    for fam in families:
        text, secrets = fam.build(rng)
        print(f"## {fam.name} ({fam.klass}), {len(secrets)} secret(s)\n{text}\n")


if __name__ == "__main__":
    main()
