"""Secrets by class, and ordinary coding-session text: recall and precision of redaction, side by side.

    .venv/bin/python -m benchmarks.redaction_classes [--seed 1] [--split tune|heldout|heldout2|heldout3|heldout4|all] [--lines 6000]

1. Secret set (`SECRET_FAMILIES`, written for issues 34/36, not copied from
   tests/support/secret_formats.py): each family is one way a credential is handed over, with
   random values drawn from the seed, in a class (credentials in prose per language, command
   positions, tool-printed JSON and tables, SQL, config files of package managers and app
   servers, base64-wrapped config, webhook and collector URLs, wallet material, recovery codes).
   Families are split before any measurement: `tune` families were used while writing the rules,
   `heldout` families were written at the same time but not run until the rules were done (the
   figure to quote). Each case is planted in every transcript placement of
   `tests/support/secret_formats.PLACEMENTS` but the git URL, plus a session's first message (a
   title), serialised as phase 1 does; a case passes when any 12-character window of a secret
   survives (`leaked`).
2. Ordinary corpus (`ordinary_lines`, at least 5,000 lines, generated from templates plus real
   text: commands with long flags, ports, versions, hashes, paths, UUIDs, base64 fixtures of
   text, placeholders, logs, stack traces, tables and SQL without secrets, prose about passwords
   without one, in several languages). A line counts as changed when redaction alters it, raw or
   inside a tool output's JSON.

Reported: per class, secrets passing (count of N cases × placements) for the split, and changed
ordinary lines per 1,000, for `now` (`codex_memories.redact`) and `codex` (Codex's four rules,
the baseline measured in the same run).
"""

from __future__ import annotations

import argparse
import json
import random
import string
import uuid
from collections import defaultdict
from collections.abc import Callable

from tests.support.secret_families import (
    FAMILIES,
    b64,
    base62,
    chars,
    family,
    hex_digits,
    mnemonic,
    password,
    wif,
    xprv,
)
from tests.support.secret_formats import PLACEMENTS, leaked, serialize

# -- credentials in prose, per language. Tune: "word + is/: + value"; held out: other phrasings.
_PROSE_TUNE = {
    "en": "the password is {v}",
    "zh": "口令是 {v}",
    "ja": "パスワードは {v} です",
    "ko": "비밀번호는 {v}",
    "es": "la contraseña es {v}",
    "pt": "a senha é {v}",
    "fr": "le mot de passe est {v}",
    "de": "Passwort: {v}",
    "ru": "пароль: {v}",
}
_PROSE_HELDOUT = {
    "en": "fyi staging db login password for the admin user -> {v} (rotate next week)",
    "zh": "测试环境数据库的密码为{v}，别外传",
    "ja": "本番のトークンは「{v}」なので注意",
    "ko": "스테이징 서버 패스워드: {v} 입니다",
    "es": "La clave del servidor de pruebas es {v}, no la compartas",
    "pt": "A senha do banco de homologação: {v}",
    "fr": "Mot de passe du compte admin : {v}",
    "de": "Das Kennwort für den Staging-Server lautet {v}",
    "ru": "Пароль от тестовой базы — {v}, никому не давай",
}
for _language, _template in _PROSE_TUNE.items():
    family(f"prose_{_language}", f"prose_{_language}", "tune")(lambda rng, t=_template: (lambda v: (t.format(v=v), [v]))(password(rng)))
for _language, _template in _PROSE_HELDOUT.items():
    family(f"prose2_{_language}", f"prose_{_language}", "heldout")(lambda rng, t=_template: (lambda v: (t.format(v=v), [v]))(password(rng) + str(rng.randrange(10, 99))))


# -- command positions
@family("ngrok_add_authtoken", "cli_position", "tune")
def _ngrok(rng):
    v = "2" + base62(rng, 26) + "_" + base62(rng, 21)
    return f"ngrok config add-authtoken {v}", [v]


@family("service_install_token", "cli_position", "tune")
def _cloudflared(rng):
    v = b64(json.dumps({"a": hex_digits(rng, 32), "t": str(uuid.UUID(int=rng.getrandbits(128))), "s": b64(bytes(rng.getrandbits(8) for _ in range(32)))}).encode())
    return f"sudo cloudflared service install {v}", [v]


@family("vault_login_positional", "cli_position", "heldout")
def _vault_login(rng):
    v = "hvs." + base62(rng, 24)
    return f"$ vault login -address=https://vault.internal:8200 {v}\nSuccess! You are now authenticated.", [v]


@family("auth_uuid_positional", "cli_position", "heldout")
def _snyk(rng):
    v = str(uuid.UUID(int=rng.getrandbits(128)))
    return f"npx snyk auth {v} && npx snyk test", [v]


@family("login_user_password_positional", "cli_position", "heldout")
def _login_pos(rng):
    v = password(rng)
    return f"mega-login dana@example.org {v}", [v]


# -- tool-printed JSON and tables
@family("vault_init_json", "tool_json", "tune")
def _vault_json(rng):
    keys = [b64(bytes(rng.getrandbits(8) for _ in range(32))) for _ in range(3)]
    root = "hvs." + base62(rng, 24)
    return json.dumps({"unseal_keys_b64": keys, "unseal_threshold": 2, "root_token": root}, indent=2), [*keys, root]


@family("vault_init_text", "tool_json", "heldout")
def _vault_text(rng):
    keys = [b64(bytes(rng.getrandbits(8) for _ in range(33))) for _ in range(3)]
    root = "hvs." + base62(rng, 24)
    lines = [f"Unseal Key {i + 1}: {k}" for i, k in enumerate(keys)] + ["", f"Initial Root Token: {root}"]
    return "\n".join(lines), [*keys, root]


@family("cloud_key_list_json", "tool_json", "heldout")
def _az_keys(rng):
    keys = [b64(bytes(rng.getrandbits(8) for _ in range(64))) for _ in range(2)]
    data = [{"creationTime": "2026-03-01T10:00:00Z", "keyName": f"key{i + 1}", "permissions": "FULL", "value": k} for i, k in enumerate(keys)]
    return json.dumps(data, indent=2), keys


@family("credential_file_json", "tool_json", "heldout")
def _sa_json(rng):
    v = hex_digits(rng, 40)
    secret = base62(rng, 40)
    # `private_key_id` names the key, it is no secret (corrected after round 1: only the secret counts).
    return json.dumps({"type": "service_account", "client_id": str(rng.randrange(10**20, 10**21)), "private_key_id": v, "client_secret": secret}, indent=2), [secret]


@family("markdown_table", "table", "tune")
def _md(rng):
    v1, v2 = password(rng), password(rng)
    return f"| user | password | role |\n|---|---|---|\n| admin | {v1} | owner |\n| ci | {v2} | deploy |", [v1, v2]


@family("csv_table", "table", "tune")
def _csv(rng):
    v1, v2 = base62(rng, 24), base62(rng, 24)
    return f"id,email,api_key\n1,dana@example.org,{v1}\n2,lee@example.org,{v2}", [v1, v2]


@family("tsv_secret_column", "table", "heldout")
def _tsv(rng):
    v1, v2 = password(rng), base62(rng, 20)
    return f"service\tusername\tsecret\nbilling\tsvc_bill\t{v1}\nsearch\tsvc_search\t{v2}", [v1, v2]


@family("aligned_table", "table", "heldout")
def _aligned(rng):
    v = "AK" + base62(rng, 30)
    return f"NAME          ACCESS KEY                          CREATED\nprod-deploy   {v}    2026-01-02", [v]


@family("sql_insert", "sql", "tune")
def _sql(rng):
    v = password(rng)
    return f"INSERT INTO users (email, password) VALUES ('dana@example.org', '{v}');", [v]


@family("sql_insert_multirow", "sql", "heldout")
def _sql2(rng):
    v1, v2 = base62(rng, 32), base62(rng, 32)
    return (f"INSERT INTO `api_clients` (`id`, `name`, `client_secret`, `created_at`) VALUES\n"
            f"  (1, 'web', '{v1}', NOW()),\n  (2, 'cli', '{v2}', NOW());"), [v1, v2]


# -- config files of package managers and app servers
@family("maven_settings_xml", "config_file", "tune")
def _settings_xml(rng):
    v = password(rng)
    return f"<servers>\n  <server>\n    <id>nexus</id>\n    <username>deploy</username>\n    <password>{v}</password>\n  </server>\n</servers>", [v]


@family("nuget_config", "config_file", "tune")
def _nuget(rng):
    v = password(rng)
    return f'<packageSourceCredentials>\n  <feed>\n    <add key="Username" value="dana" />\n    <add key="ClearTextPassword" value="{v}" />\n  </feed>\n</packageSourceCredentials>', [v]


@family("composer_auth_json", "config_file", "tune")
def _composer(rng):
    v = base62(rng, 30)
    return json.dumps({"github-oauth": {"github.com": v}}, indent=4), [v]


@family("npmrc", "config_file", "heldout")
def _npmrc(rng):
    v = b64(f"dana:{password(rng)}".encode())
    return f"registry=https://npm.internal.example.org/\n//npm.internal.example.org/:_auth={v}\nalways-auth=true", [v]


@family("pip_conf", "config_file", "heldout")
def _pipconf(rng):
    v = password(rng)
    return f"[global]\nindex-url = https://dana:{v}@pypi.internal.example.org/simple\ntimeout = 60", [v]


@family("pypirc", "config_file", "heldout")
def _pypirc(rng):
    v = password(rng)
    return f"[distutils]\nindex-servers = internal\n\n[internal]\nrepository = https://pypi.internal.example.org/\nusername = dana\npassword = {v}", [v]


@family("gradle_properties", "config_file", "heldout")
def _gradle(rng):
    v = password(rng)
    return f"org.gradle.jvmargs=-Xmx2g\nossrhUsername=dana\nossrhPassword={v}\nsigning.keyId=24875D73", [v]


@family("composer_http_basic", "config_file", "heldout")
def _composer2(rng):
    v = password(rng)
    return json.dumps({"http-basic": {"repo.example.org": {"username": "dana", "password": v}}}, indent=2), [v]


@family("tomcat_users", "config_file", "heldout")
def _tomcat(rng):
    v = password(rng)
    return f'<tomcat-users>\n  <user username="admin" password="{v}" roles="manager-gui"/>\n</tomcat-users>', [v]


@family("kubernetes_env_pair", "config_file", "heldout")
def _k8s_env(rng):
    v = base62(rng, 28)
    return f"env:\n  - name: STRIPE_API_KEY\n    value: {v}\n  - name: LOG_LEVEL\n    value: info", [v]


# -- base64-wrapped config
@family("dockerconfigjson_secret", "base64_wrapped", "tune")
def _dockercfg(rng):
    auth = b64(f"deploy:{password(rng)}".encode())
    blob = b64(json.dumps({"auths": {"registry.example.com": {"auth": auth}}}).encode())
    return f"apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {blob}", [blob]


@family("base64_env_file", "base64_wrapped", "heldout")
def _b64env(rng):
    blob = b64(f"DATABASE_URL=postgres://app:{password(rng)}@db:5432/app\nSECRET_KEY={base62(rng, 40)}\n".encode())
    return f"echo {blob} | base64 -d > .env", [blob]


@family("basic_auth_header_b64", "base64_wrapped", "heldout")
def _basic_b64(rng):
    blob = b64(f"ci-bot:{password(rng)}".encode())
    return f"curl -H 'X-Upstream-Credentials: {blob}' https://artifacts.example.org/api", [blob]


# -- webhook and collector URLs
@family("webhook_path_uuid_hex", "url_token", "tune")
def _outlook(rng):
    a, b, c = str(uuid.UUID(int=rng.getrandbits(128))), str(uuid.UUID(int=rng.getrandbits(128))), hex_digits(rng, 32)
    return f"https://acme.webhook.office.com/webhookb2/{a}@{b}/IncomingWebhook/{c}/{a}", [c, b]


@family("webhook_path_generated", "url_token", "tune")
def _hook_path(rng):
    v = base62(rng, 32)
    return f"curl -X POST https://hooks.example.com/webhook/{v} -d '{{\"text\":\"deploy done\"}}'", [v]


@family("collector_query_key", "url_token", "heldout")
def _collector_query(rng):
    v = hex_digits(rng, 32)
    return f"OTEL_EXPORTER_OTLP_ENDPOINT=https://collector.example.io/v1/traces?dd-api-key={v}", [v]


@family("collector_path_hex", "url_token", "heldout")
def _collector_path(rng):
    v = hex_digits(rng, 32)
    return f"logs shipped to https://http-intake.logs.example.com/v1/input/{v}?ddsource=app", [v]


@family("function_url_code", "url_token", "heldout")
def _func_code(rng):
    v = base62(rng, 40) + "=="
    return f"POST https://app-prod.azurewebsites.net/api/ingest?code={v}", [v[:-2]]


# -- wallet material
@family("bip39_english", "wallet", "tune")
def _bip_en(rng):
    v = mnemonic(rng)
    return f"seed backup for the test wallet:\n{v}", [v]


@family("key_array_32", "wallet", "tune")
def _arr32(rng):
    numbers = [rng.randrange(256) for _ in range(32)]
    return json.dumps(numbers), [json.dumps(numbers)[1:-1]]


@family("bip39_24_other_language", "wallet", "heldout")
def _bip_other(rng):
    v = mnemonic(rng, rng.choice(["spanish", "french", "italian"]), 24)
    return f"phrase: {v}", [v]


@family("solana_keypair_64", "wallet", "heldout")
def _arr64(rng):
    numbers = [rng.randrange(256) for _ in range(64)]
    return "cat ~/.config/solana/id.json\n" + json.dumps(numbers, separators=(",", ":")), [",".join(map(str, numbers))]


@family("wif_key", "wallet", "heldout")
def _wif_case(rng):
    v = wif(rng)
    return f"bitcoin-cli importprivkey {v} \"\" false", [v]


@family("xprv_key", "wallet", "heldout")
def _xprv_case(rng):
    v = xprv(rng)
    return f"export WALLET_ROOT={v}", [v]


# -- recovery codes
@family("recovery_codes_list", "recovery_codes", "tune")
def _codes(rng):
    codes = [f"{chars(rng, string.ascii_lowercase + string.digits, 4)}-{chars(rng, string.ascii_lowercase + string.digits, 4)}" for _ in range(6)]
    codes = [c if any(ch.isdigit() for ch in c) else c[:-1] + "7" for c in codes]
    return "recovery codes: " + " ".join(codes), codes


@family("backup_codes_block", "recovery_codes", "heldout")
def _codes2(rng):
    codes = [hex_digits(rng, 5) + "-" + hex_digits(rng, 5) for _ in range(8)]
    return "Your backup codes (each works once):\n\n" + "\n".join(f"  {c}" for c in codes) + "\n\nKeep them somewhere safe.", codes


@family("recovery_codes_ja", "recovery_codes", "heldout")
def _codes3(rng):
    codes = [str(rng.randrange(10**7, 10**8)) for _ in range(5)]
    return "リカバリーコード：\n" + "\n".join(codes), codes


# ---- held-out round 2: written after round 1 was measured, before its misses were fixed ----------
_PROSE_HELDOUT2 = {
    "en": "Wi-Fi passphrase for the lab is {v}",
    "zh": "服务器root密码：{v}",
    "ja": "DBのパスワードを{v}に変更しました",
    "ko": "관리자 비밀번호를 {v}로 바꿨어요",
    "es": "contraseña nueva: {v}",
    "pt": "minha senha do vpn é {v}",
    "fr": "le mdp du wifi c'est {v}",
    "de": "neues Passwort für die DB = {v}",
    "ru": "новый пароль для VPN {v}",
}
for _language, _template in _PROSE_HELDOUT2.items():
    family(f"prose3_{_language}", f"prose_{_language}", "heldout2")(lambda rng, t=_template: (lambda v: (t.format(v=v), [v]))(password(rng) + str(rng.randrange(10, 99))))


@family("doppler_set_token", "cli_position", "heldout2")
def _doppler(rng):
    v = "dp.st.prd." + base62(rng, 40)
    return f"doppler configure set token {v} --scope /srv/app", [v]


@family("bw_unlock_password", "cli_position", "heldout2")
def _bw(rng):
    v = password(rng)
    return f"export BW_SESSION=$(bw unlock {v} --raw)", [v]


@family("markdown_table_spaced_header", "table", "heldout2")
def _md2(rng):
    v = base62(rng, 40)
    return f"| Access Key ID | Secret Key | Owner |\n| --- | --- | --- |\n| AKIA{chars(rng, string.ascii_uppercase + string.digits, 16)} | {v} | ci |", [v]


@family("csv_quoted_cells", "table", "heldout2")
def _csv2(rng):
    v = password(rng)
    return f'"id","user","password"\n"1","dana","{v}"', [v]


@family("aws_create_access_key_json", "tool_json", "heldout2")
def _aws_key(rng):
    v = chars(rng, string.ascii_letters + string.digits + "/+", 40)
    return json.dumps({"AccessKey": {"UserName": "ci", "AccessKeyId": "AKIA" + chars(rng, string.ascii_uppercase + string.digits, 16), "Status": "Active", "SecretAccessKey": v}}, indent=4), [v]


@family("sql_insert_without_columns", "sql", "heldout2")
def _sql3(rng):
    v = password(rng)
    return f"INSERT INTO service_accounts VALUES (7, 'svc-report', '{v}', now());", [v]


@family("cargo_credentials", "config_file", "heldout2")
def _cargo(rng):
    v = "cio" + base62(rng, 32)
    return f"[registry]\ntoken = \"{v}\"", [v]


@family("spring_yaml_password", "config_file", "heldout2")
def _spring(rng):
    v = password(rng)
    return f"spring:\n  datasource:\n    url: jdbc:postgresql://db:5432/app\n    username: app\n    password: {v}", [v]


@family("k8s_secret_config_json", "base64_wrapped", "heldout2")
def _k8s_cfg(rng):
    blob = b64(json.dumps({"endpoint": "https://api.example.org", "token": base62(rng, 32)}).encode())
    return f"kind: Secret\ndata:\n  config.json: {blob}", [blob]


@family("url_push_path", "url_token", "heldout2")
def _push(rng):
    v = base62(rng, 32)
    return f"curl -d 'build ok' https://api.example.io/v2/push/{v}", [v]


@family("url_events_hex_path", "url_token", "heldout2")
def _events(rng):
    v = hex_digits(rng, 40)
    return f"SENTRYISH_URL=https://events.example.net/e/{v}/store", [v]


@family("bip39_chinese", "wallet", "heldout2")
def _bip_zh(rng):
    v = mnemonic(rng, "chinese_simplified")
    return f"助记词：{v}", [v]


@family("eth_private_key_hex", "wallet", "heldout2")
def _eth(rng):
    v = "0x" + hex_digits(rng, 64)
    return f"deployer private key: {v}", [v]


@family("backup_codes_digit_groups", "recovery_codes", "heldout2")
def _codes4(rng):
    codes = [f"{rng.randrange(1000, 9999)} {rng.randrange(1000, 9999)}" for _ in range(5)]
    return "Backup codes\n" + "\n".join(codes), codes


# Held-out rounds 3 and 4 (written blind: benchmarks/redaction_heldout3.py, redaction_heldout4.py)
# register on import, after the rounds above, into the one registry this file uses too
# (tests/support/secret_families.py), also when this file runs as `__main__`.
from benchmarks import redaction_heldout3, redaction_heldout4  # noqa: E402, F401 - importing registers them

SECRET_FAMILIES = FAMILIES

# ---- placements -----------------------------------------------------------------------------------


def _title(snippet: str, rng: random.Random) -> dict:
    # The first user message, verbatim: Codex makes the session's title from it.
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": snippet}]}


def _placements() -> dict[str, Callable]:
    placements = {name: build for name, build in PLACEMENTS.items() if build is not None}
    placements["session_title"] = _title
    return placements


# ---- ordinary corpus ----------------------------------------------------------------------------------

_PROSE = [
    "the password must be at least 12 characters long",
    "密码长度至少12位，必须包含数字",
    "パスワードは8文字以上にしてください",
    "비밀번호는 최소 12자 이상이어야 합니다",
    "la contraseña debe tener al menos 12 caracteres",
    "a senha deve ter pelo menos 12 caracteres",
    "le mot de passe doit contenir au moins 12 caractères",
    "das Passwort muss mindestens 12 Zeichen lang sein",
    "пароль должен содержать не менее 12 символов",
    "rotate the token every 90 days and store it in the vault",
    "the API key is read from the environment, never from the repo",
    "token limit is 128000 for this model",
    "we store secrets in AWS Secrets Manager under /prod/app",
    "la clave está en el gestor de secretos",
    "Der Schlüssel liegt in Vault unter secret/data/app",
    "токен хранится в переменной окружения GITHUB_TOKEN",
    "令牌保存在环境变量 API_TOKEN 里",
    "recovery codes are stored in 1Password, ask Dana",
    "login with your SSO account, then run make dev",
    "always run terraform plan with -parallelism=30 in this repo",
    "use pnpm, not npm, in this monorepo",
    "the staging database listens on port 5433",
]


def _ordinary_templates(rng: random.Random) -> list[str]:
    sha = hex_digits(rng, 40)
    short = sha[:7]
    version = f"{rng.randrange(0, 20)}.{rng.randrange(0, 40)}.{rng.randrange(0, 20)}"
    port = rng.choice([3000, 5432, 6379, 8080, 8443, 9200, 27017, 5173])
    fixture = b64(rng.choice(["hello world, this is a fixture", '{"user": "dana", "role": "admin"}', "line one\nline two\n", "The quick brown fox jumps over the lazy dog"]).encode())
    fixture_uuid = str(uuid.UUID(int=rng.getrandbits(128)))
    path = rng.choice(["/home/dana/src/app/src/main.py", "/usr/local/lib/python3.11/site-packages/requests/adapters.py", "C:\\Users\\dana\\repo\\src\\index.ts", "./node_modules/.bin/vite"])
    placeholder = rng.choice(["<your-token>", "${DB_PASSWORD}", "********", "YOUR_API_KEY", "{{ secrets.NPM_TOKEN }}", "$GITHUB_TOKEN", "%API_KEY%", "xxxxxxxx", "<password>", "changeme"])
    return [
        f"terraform plan -parallelism={rng.randrange(2, 64)} -out=tfplan",
        f"node --max-old-space-size={rng.choice([2048, 4096, 8192])} scripts/build.js",
        f"docker run -p {port}:{port} -e NODE_ENV=production app:{version}",
        f"git log --oneline -n 5\n{short} fix: handle empty config\n{hex_digits(rng, 7)} chore: bump deps to {version}",
        f"git checkout {sha}",
        f"git push origin main\nTo github.com:acme/app.git\n   {hex_digits(rng, 7)}..{short}  main -> main",
        f"pip install 'requests=={version}' --index-url https://pypi.org/simple --no-cache-dir",
        f"  File \"{path}\", line {rng.randrange(1, 900)}, in send\n    raise ConnectionError(e, request=request)",
        f"npm ERR! code ERESOLVE\nnpm ERR! While resolving: app@{version}",
        f"sha256:{hex_digits(rng, 64)}",
        f"Digest: sha256:{hex_digits(rng, 64)}",
        f"  \"integrity\": \"sha512-{b64(bytes(rng.getrandbits(8) for _ in range(64)))}\",",
        f"const FIXTURE = \"{fixture}\";",
        f"echo {fixture} | base64 -d",
        f"user_id = \"{fixture_uuid}\"  # fixture",
        f"kubectl get pods -n prod -o wide --selector=app=web",
        f"curl -sS http://localhost:{port}/healthz --max-time 5",
        f"export API_TOKEN={placeholder}",
        f"password: {placeholder}",
        f"DB_PASSWORD={placeholder}",
        f"api_key = \"{placeholder}\"",
        f"Authorization: Bearer {placeholder}",
        f"2026-03-0{rng.randrange(1, 9)}T12:{rng.randrange(10, 59)}:01Z INFO request_id={fixture_uuid} status=200 duration_ms={rng.randrange(1, 900)}",
        f"[{version}] listening on 0.0.0.0:{port}",
        f"pytest -q -x tests/test_api.py::test_login --maxfail=1 -p no:cacheprovider",
        f"make build JOBS={rng.randrange(1, 16)} VERBOSE=1",
        f"cargo build --release --target x86_64-unknown-linux-gnu -j {rng.randrange(1, 16)}",
        f"go test ./... -run TestAuthToken -count=1 -timeout 120s",
        f"ls -la {path}",
        f"| name | port | version |\n|---|---|---|\n| web | {port} | {version} |",
        f"id,email,created_at\n1,dana@example.org,2026-01-02\n2,lee@example.org,2026-01-03",
        f"INSERT INTO users (email, name) VALUES ('dana@example.org', 'Dana');",
        f"https://github.com/acme/app/commit/{sha}",
        f"https://github.com/acme/webhooks-service/blob/{sha}/src/main.go#L{rng.randrange(1, 400)}",
        f"https://files.pythonhosted.org/packages/{hex_digits(rng, 2)}/{hex_digits(rng, 2)}/{hex_digits(rng, 60)}/requests-{version}-py3-none-any.whl",
        f"https://example.com/search?q=redaction+rules&page={rng.randrange(1, 9)}",
        f"ssh -p 2222 -i ~/.ssh/id_ed25519 deploy@10.0.{rng.randrange(0, 255)}.{rng.randrange(1, 255)}",
        f"psql -h localhost -p {port} -U app -d app_dev -c 'select 1'",
        f"mysql -h 127.0.0.1 -P 3306 -u root -p app_dev",
        f"gcc -O2 -pthread -pedantic -Wall -o build/app src/main.c",
        f"java -Xmx4g -Dspring.profiles.active=dev -jar target/app-{version}.jar",
        f"      at Object.<anonymous> ({path}:{rng.randrange(1, 300)}:{rng.randrange(1, 80)})",
        f"Successfully installed pydantic-{version} typing-extensions-4.12.2",
        f"{{\"name\": \"app\", \"version\": \"{version}\", \"private\": true, \"scripts\": {{\"build\": \"vite build\"}}}}",
        f"image: ghcr.io/acme/app@sha256:{hex_digits(rng, 64)}",
        f"ETag: \"{hex_digits(rng, 32)}\"",
        f"Set-Cookie: theme=dark; Path=/; Max-Age=31536000",
        f"jobs:\n  build:\n    runs-on: ubuntu-latest\n    env:\n      NPM_TOKEN: ${{{{ secrets.NPM_TOKEN }}}}",
        f"secrets: inherit",
        f"max_tokens: {rng.choice([1024, 4096, 128000])}",
        f"ruff check . --select E,F,I --line-length 100",
        f"ERROR: relation \"users\" does not exist at character {rng.randrange(1, 90)}",
        f"Traceback (most recent call last):\n  File \"{path}\", line {rng.randrange(1, 99)}, in <module>\n    main()",
        f"the recovery key is stored in the vault, see docs/runbook.md",
        f"Your backup codes were regenerated on 2026-03-02; old codes no longer work.",
        f"abandon hope all ye who enter here is not a mnemonic",
        f"[0, 0, 0, 0, 1, 1, 1, 1]",
        f"uuid.UUID('{fixture_uuid}')",
        f"commit {sha}\nAuthor: Dana <dana@example.org>\nDate:   Mon Mar 2 10:00:00 2026 +0000",
        rng.choice(_PROSE),
        rng.choice(_PROSE),
    ]


def ordinary_snippets(seed: int, lines: int) -> list[str]:
    rng = random.Random(seed * 104729 + 11)
    snippets: list[str] = []
    count = 0
    while count < lines:
        for snippet in _ordinary_templates(rng):
            snippets.append(snippet)
            count += snippet.count("\n") + 1
    return snippets


# ---- measuring ------------------------------------------------------------------------------------------


def changed_lines(snippet: str, redactor: Callable[[str], str]) -> int:
    """Lines of `snippet` that redaction changes, raw or inside a tool output's JSON."""
    original = snippet.split("\n")
    raw = redactor(snippet).split("\n")
    item = {"type": "function_call_output", "call_id": "call_1", "output": snippet}
    wrapped = json.loads(redactor(serialize(item)))["output"].split("\n")
    changed = 0
    for index, line in enumerate(original):
        if (index >= len(raw) or raw[index] != line) or (index >= len(wrapped) or wrapped[index] != line):
            changed += 1
    return changed


def measure(redactor: Callable[[str], str], seed: int, split: str, lines: int) -> dict:
    rng = random.Random(seed)
    per_class: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    passing: list[str] = []
    for fam in SECRET_FAMILIES:
        if split != "all" and fam.split != split:
            continue
        snippet, secrets = fam.build(rng)
        for placement, build in _placements().items():
            text = serialize(build(snippet, rng))
            out = redactor(text)
            leak = any(leaked(secret, out) for secret in secrets)
            per_class[fam.klass][1] += 1
            if leak:
                per_class[fam.klass][0] += 1
                passing.append(f"{fam.name}@{placement}")
    snippets = ordinary_snippets(seed, lines)
    total = sum(s.count("\n") + 1 for s in snippets)
    changed_examples = []
    changed = 0
    for snippet in snippets:
        n = changed_lines(snippet, redactor)
        if n:
            changed += n
            changed_examples.append(snippet)
    return {"per_class": dict(per_class), "passing": passing, "ordinary_lines": total, "ordinary_changed": changed,
            "changed_examples": changed_examples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--split", choices=["tune", "heldout", "heldout2", "heldout3", "heldout4", "all"], default="tune")
    parser.add_argument("--lines", type=int, default=6000)
    parser.add_argument("--show", action="store_true", help="print the passing cases and changed ordinary snippets")
    args = parser.parse_args()

    from benchmarks.secret_redaction import codex_redact
    from codex_memories.redact import redact_secrets

    results = {name: measure(redactor, args.seed, args.split, args.lines) for name, redactor in (("codex", codex_redact), ("now", redact_secrets))}
    classes = sorted(results["now"]["per_class"])
    print(f"split={args.split} seed={args.seed}")
    print("| class | codex: secrets passing | now: secrets passing |")
    print("|---|---|---|")
    for klass in classes:
        cells = [f"{results[n]['per_class'][klass][0]} of {results[n]['per_class'][klass][1]}" for n in ("codex", "now")]
        print(f"| {klass} | {cells[0]} | {cells[1]} |")
    totals = {n: (sum(v[0] for v in r["per_class"].values()), sum(v[1] for v in r["per_class"].values())) for n, r in results.items()}
    print(f"| **all** | {totals['codex'][0]} of {totals['codex'][1]} | {totals['now'][0]} of {totals['now'][1]} |")
    for name, result in results.items():
        rate = 1000 * result["ordinary_changed"] / result["ordinary_lines"]
        print(f"{name}: ordinary lines changed {result['ordinary_changed']} of {result['ordinary_lines']} ({rate:.2f} per 1,000)")
    if args.show:
        print("passing:", results["now"]["passing"])
        for example in results["now"]["changed_examples"][:40]:
            print("CHANGED:", json.dumps(example, ensure_ascii=False))


if __name__ == "__main__":
    main()
