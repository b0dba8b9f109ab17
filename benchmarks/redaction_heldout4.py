"""Held-out round 4 for `redaction_classes`: secret shapes written blind, by an outside author.

    .venv/bin/python -m benchmarks.redaction_classes --split heldout4     # the measurement (once)
    .venv/bin/python -m benchmarks.redaction_heldout4 [--seed 1]          # lists the cases, redacts nothing

Written by someone who read neither the redactor (`codex_memories/redact/`), nor its tests, nor
its documentation, nor its results on any family: only the family registry and value generators
(`tests/support/secret_families.py`), the families of `redaction_classes.py` (tune, heldout,
heldout2) and `redaction_heldout3.py` (round 3), and the placements and formats of
`tests/support/secret_formats.py`, read so that these families are other shapes and wordings than
theirs. Left out therefore: "<word> is/: <value>" prose, the `-p`/`--password` command lines of
`secret_formats.py`, `.netrc`, `.pgpass`, `.npmrc`, `pip.conf`, tfvars, wp-config, the vendor
prefixes listed there (OpenAI, Anthropic, GitHub, GitLab, Slack, Stripe, AWS, ...), and the shapes
of rounds 1-3. Nothing here was run through the redactor while it was being written, and the
families are not changed after their one measurement.

What is here, by class: vendor tokens with other prefixes (databases as a service, observability,
payments, CI, AI APIs, identity, VPN), config syntaxes (HCL, Nix, Java properties with
a JAAS line, systemd units, Helm values, docker-compose mappings, Caddyfile, sssd, odbc.ini,
git `extraheader`), connection strings (libpq keyword form, SQL Server
JDBC, MQTT, a redis-cli `AUTH`), CI config, Kubernetes manifests, tool output (`env` dumps,
`heroku config`, `aws secretsmanager`, decoded `kubectl` output, nested API JSON),
logs and stack traces, SQL, a MySQL box table, credentials in prose in 13 languages written as chat
messages, tickets, review comments and commit messages, wallet keys and one-time-password seeds.
Each family returns the text and the values that must not survive; every value is at least 12
characters, the benchmark's leak window, and is drawn from the seed.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import uuid

from tests.support.secret_families import FAMILIES, b64, base62, chars, family, hex_digits

SPLIT = "heldout4"

# ---- values ---------------------------------------------------------------------------------------

_LOWER_DIGITS = string.ascii_lowercase + string.digits
_B64URL = string.ascii_letters + string.digits + "-_"
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_SYLLABLES = ["ka", "ro", "mi", "tze", "lun", "bar", "vo", "quin", "sel", "dra", "mo", "pex", "tu", "gan", "rhi", "zol"]


def _mixed(rng: random.Random, size: int, symbols: str) -> str:
    """A generated password: every character class present, `symbols` among them when given."""
    while True:
        value = chars(rng, string.ascii_letters + string.digits + symbols, size)
        if any(c.isdigit() for c in value) and any(c.isupper() for c in value) and any(c.islower() for c in value) \
                and (not symbols or any(c in symbols for c in value)):
            return value


def _made_up(rng: random.Random, symbols: str) -> str:
    """A password someone invented: pronounceable syllables, a capital, digits and maybe a symbol."""
    word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randrange(3, 5)))
    word = word[0].upper() + word[1:]
    tail = str(rng.randrange(100, 99999))
    symbol = rng.choice(symbols) if symbols else ""
    value = rng.choice([word + symbol + tail, tail + symbol + word, word + tail + symbol])
    while len(value) < 12:
        value += str(rng.randrange(0, 10))
    return value


def _secret_pw(rng: random.Random, symbols: str = "!$%*-_.~+=") -> str:
    """A password of one of two kinds, never shorter than the 12-character leak window."""
    if rng.randrange(2):
        return _mixed(rng, rng.randrange(13, 23), symbols)
    return _made_up(rng, symbols)


def _url_pw(rng: random.Random) -> str:
    """A password that stands in a URL's user part without percent-encoding."""
    return _secret_pw(rng, "-_.~")


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128)))


def _rand_bytes(rng: random.Random, size: int) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(size))


def _b64url(data: bytes) -> str:
    return b64(data).replace("+", "-").replace("/", "_").rstrip("=")


def _jwt_like(rng: random.Random, claims: dict) -> str:
    head = _b64url(json.dumps({"alg": "EdDSA", "typ": "JWT"}).encode())
    body = _b64url(json.dumps(claims).encode())
    return f"{head}.{body}.{_b64url(_rand_bytes(rng, 64))}"


# ---- vendor tokens with prefixes the other rounds do not list ---------------------------------------
# Prefixes are split in the source ("na" + "pi_") so that scanners on this repository see no token.


@family("neon_api_key_python", "vendor_token", SPLIT)
def _neon(rng):
    v = "na" + "pi_" + chars(rng, _LOWER_DIGITS, 64)
    return (f"from neon_api import NeonAPI\n\nneon = NeonAPI(api_key=\"{v}\")\n"
            f"for project in neon.projects().projects:\n    print(project.id)"), [v]


@family("honeycomb_otlp_headers", "vendor_token", SPLIT)
def _honeycomb(rng):
    v = "hca" + "ik_01" + chars(rng, _LOWER_DIGITS, 58)
    return ("OTEL_EXPORTER_OTLP_ENDPOINT=https://api.honeycomb.io:443 \\\n"
            f"OTEL_EXPORTER_OTLP_HEADERS=\"x-honeycomb-team={v},x-honeycomb-dataset=checkout\" \\\n"
            "OTEL_SERVICE_NAME=checkout opentelemetry-instrument python app.py"), [v]


@family("axiom_vector_toml", "vendor_token", SPLIT)
def _axiom(rng):
    v = "xa" + "at-" + _uuid(rng)
    return ("[sinks.axiom]\ntype = \"axiom\"\ninputs = [\"parse_nginx\"]\ndataset = \"edge-logs\"\n"
            f"token = \"{v}\""), [v]




@family("paddle_live_key_ruby", "vendor_token", SPLIT)
def _paddle(rng):
    v = "pdl" + "_live_apikey_01" + chars(rng, "0123456789abcdefghjkmnpqrstvwxyz", 24) + "_" + base62(rng, 22) + "_A" + \
        chars(rng, string.ascii_letters + string.digits, 2)
    return f"Paddle.configure do |config|\n  config.environment = :production\n  config.api_key = \"{v}\"\nend", [v]


@family("together_ai_client", "vendor_token", SPLIT)
def _together(rng):
    v = "tg" + "p_v1_" + chars(rng, _B64URL, 43)
    return (f"from together import Together\nclient = Together(api_key=\"{v}\")\n"
            "resp = client.chat.completions.create(model=\"meta-llama/Llama-3.3-70B-Instruct-Turbo\", messages=msgs)"), [v]


@family("circleci_token_header", "vendor_token", SPLIT)
def _circleci(rng):
    v = "CCI" + "PAT_" + base62(rng, 22) + "_" + hex_digits(rng, 40)
    return (f"curl -s --header \"Circle-Token: {v}\" "
            "https://circleci.com/api/v2/project/gh/acme/shop/pipeline | jq '.items[0].state'"), [v]





@family("vercel_env_pull_file", "vendor_token", SPLIT)
def _vercel_env(rng):
    token = "A" + chars(rng, "XY", 1) + chars(rng, _B64URL, 58) + "="
    return ("$ vercel env pull .env.local\n> Downloading `development` Environment Variables for acme/shop\n"
            "✅  Created .env.local file  [312ms]\n$ cat .env.local\n# Created by Vercel CLI\n"
            "UPSTASH_REDIS_REST_URL=\"https://eu1-brave-kiwi-31337.upstash.io\"\n"
            f"UPSTASH_REDIS_REST_TOKEN=\"{token}\"\nVERCEL_ENV=\"development\""), [token[:-1]]


@family("turso_token_create_output", "vendor_token", SPLIT)
def _turso(rng):
    v = _jwt_like(rng, {"a": "rw", "iat": rng.randrange(1_700_000_000, 1_800_000_000), "id": _uuid(rng)})
    return f"$ turso db tokens create shop-prod\n{v}\n$ turso db shell shop-prod", [v]


@family("grafana_alloy_basic_auth", "vendor_token", SPLIT)
def _alloy(rng):
    inner = json.dumps({"o": str(rng.randrange(100000, 999999)), "n": "alloy-write", "k": base62(rng, 24),
                        "m": {"r": "prod-eu-west-2"}}, separators=(",", ":"))
    v = "gl" + "c_" + b64(inner.encode()).rstrip("=")
    return ("prometheus.remote_write \"cloud\" {\n  endpoint {\n"
            "    url = \"https://prometheus-prod-24-prod-eu-west-2.grafana.net/api/prom/push\"\n"
            f"    basic_auth {{\n      username = \"{rng.randrange(1000000, 9999999)}\"\n      password = \"{v}\"\n"
            "    }\n  }\n}"), [v]



@family("okta_ssws_header", "vendor_token", SPLIT)
def _okta(rng):
    v = "00" + chars(rng, _B64URL, 40)
    return (f"http GET https://acme.okta.com/api/v1/users?limit=25 'Authorization: SSWS {v}' "
            "Accept:application/json"), [v]



@family("tailscale_up_authkey", "vendor_token", SPLIT)
def _tailscale(rng):
    v = "tsk" + "ey-auth-" + base62(rng, 11) + "CNTRL-" + base62(rng, 33)
    return f"sudo tailscale up --authkey={v} --advertise-tags=tag:ci --hostname=runner-07", [v]



# ---- config syntaxes ------------------------------------------------------------------------------


@family("terraform_provider_block", "config_file", SPLIT)
def _tf_provider(rng):
    api, app = hex_digits(rng, 32), hex_digits(rng, 40)
    return (f"provider \"datadog\" {{\n  api_key = \"{api}\"\n  app_key = \"{app}\"\n"
            "  api_url = \"https://api.datadoghq.eu/\"\n}"), [api, app]


@family("nixos_module_option", "config_file", SPLIT)
def _nix(rng):
    v = _secret_pw(rng, "!$%*-_.~+=")
    return ("{ config, pkgs, ... }:\n{\n  services.grafana = {\n    enable = true;\n"
            f"    settings.security.admin_password = \"{v}\";\n    settings.server.http_port = 3000;\n  }};\n}}"), [v]


@family("kafka_jaas_properties", "config_file", SPLIT)
def _jaas(rng):
    v = _secret_pw(rng, "!$%*-_.~+=")
    return ("bootstrap.servers=pkc-4r087.europe-west3.gcp.confluent.cloud:9092\nsecurity.protocol=SASL_SSL\n"
            "sasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
            f"required username=\"{chars(rng, string.ascii_uppercase + string.digits, 16)}\" password=\"{v}\";"), [v]


@family("systemd_unit_environment", "config_file", SPLIT)
def _systemd(rng):
    v = base62(rng, 48)
    return ("[Service]\nUser=relay\nEnvironment=\"RELAY_LISTEN=0.0.0.0:7443\"\n"
            f"Environment=\"RELAY_SHARED_SECRET={v}\"\nExecStart=/usr/local/bin/relay serve\nRestart=on-failure"), [v]


@family("helm_values_bitnami_auth", "config_file", SPLIT)
def _helm_values(rng):
    root, key = _secret_pw(rng, "-_.~+="), base62(rng, 32)
    return ("# values-prod.yaml\narchitecture: replicaset\nreplicaCount: 3\nauth:\n  enabled: true\n"
            f"  rootUser: root\n  rootPassword: \"{root}\"\n  replicaSetKey: {key}\n"
            "persistence:\n  size: 50Gi"), [root, key]


@family("compose_environment_mapping", "config_file", SPLIT)
def _compose(rng):
    v = _secret_pw(rng, "-_.~+=")
    return ("services:\n  minio:\n    image: quay.io/minio/minio:RELEASE.2025-04-22T22-12-26Z\n"
            "    command: server /data --console-address \":9001\"\n    environment:\n"
            f"      MINIO_ROOT_USER: admin\n      MINIO_ROOT_PASSWORD: {v}\n    ports:\n      - \"9000:9000\""), [v]


@family("caddyfile_header_up", "config_file", SPLIT)
def _caddy(rng):
    v = chars(rng, _B64URL, 40)
    return ("api.acme.dev {\n\treverse_proxy /v1/* backend:8080 {\n"
            f"\t\theader_up Authorization \"Bearer {v}\"\n\t}}\n\tencode gzip\n}}"), [v]



@family("sssd_ldap_authtok", "config_file", SPLIT)
def _sssd(rng):
    v = _secret_pw(rng, "!$%*-_.~+=")
    return ("[domain/corp.acme.dev]\nid_provider = ldap\nldap_uri = ldaps://ldap.corp.acme.dev\n"
            "ldap_default_bind_dn = uid=sssd-reader,ou=services,dc=acme,dc=dev\n"
            f"ldap_default_authtok_type = password\nldap_default_authtok = {v}"), [v]


@family("odbc_ini_dsn", "config_file", SPLIT)
def _odbc_ini(rng):
    v = _secret_pw(rng, "!$%*-_.~+")
    return ("[warehouse]\nDriver      = /usr/lib/snowflake/odbc/lib/libSnowflake.so\n"
            "Server      = xy12345.eu-central-1.snowflakecomputing.com\nuid         = LOOKER_SVC\n"
            f"pwd         = {v}\ndatabase    = ANALYTICS"), [v]




@family("git_config_extraheader", "base64_wrapped", SPLIT)
def _extraheader(rng):
    blob = b64(f"x-access-token:{base62(rng, 40)}".encode())
    return ("$ git config --global --list | grep extraheader\n"
            f"http.https://git.acme.dev/.extraheader=AUTHORIZATION: basic {blob}"), [blob]


@family("k8s_secret_data_single_value", "base64_wrapped", SPLIT)
def _k8s_data(rng):
    blob = b64(_secret_pw(rng).encode())
    return ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: smtp-relay\ntype: Opaque\ndata:\n"
            f"  username: {b64(b'postmaster@acme.dev')}\n  password: {blob}"), [blob]


# ---- connection strings -----------------------------------------------------------------------------


@family("libpq_keyword_conninfo", "connection_string", SPLIT)
def _libpq(rng):
    v = _secret_pw(rng, "!$%*-_.~+")
    return f"psql \"host=pg-ha.internal port=6432 dbname=ledger user=ledger_ro password={v} sslmode=require\"", [v]


@family("jdbc_sqlserver_semicolons", "connection_string", SPLIT)
def _jdbc_mssql(rng):
    v = _secret_pw(rng, "!$%*-_.~+")
    return ("spring.datasource.url=jdbc:sqlserver://sql-prod.acme.local:1433;databaseName=crm;"
            f"user=crm_app;password={v};encrypt=true;trustServerCertificate=false"), [v]


@family("mqtt_url_in_code", "connection_string", SPLIT)
def _mqtt(rng):
    v = _url_pw(rng)
    return (f"const client = mqtt.connect('mqtts://sensor-17:{v}@broker.acme.io:8883', {{ clean: true }});\n"
            "client.on('connect', () => client.subscribe('plant/+/temp'));"), [v]


@family("redis_cli_auth_command", "connection_string", SPLIT)
def _redis_auth(rng):
    v = _secret_pw(rng, "!$%*-_.~+=")
    return f"$ redis-cli -h cache-01.internal\ncache-01.internal:6379> AUTH default {v}\nOK\ncache-01.internal:6379> DBSIZE\n(integer) 48213", [v]


# ---- CI config and Kubernetes manifests ------------------------------------------------------------


@family("github_actions_env_literal", "ci_config", SPLIT)
def _gha_env(rng):
    v = _uuid(rng)
    return ("      - name: Upload coverage\n        uses: codecov/codecov-action@v4\n        env:\n"
            f"          CODECOV_TOKEN: {v}\n        with:\n          files: ./coverage.xml"), [v]


@family("gitlab_ci_variables_block", "ci_config", SPLIT)
def _gitlab_vars(rng):
    v = _secret_pw(rng, "-_.~+=")
    return ("variables:\n  DOCKER_DRIVER: overlay2\n  REGISTRY_USER: ci-pusher\n"
            f"  REGISTRY_PASS: \"{v}\"\n\nbuild:\n  script:\n    - docker login -u $REGISTRY_USER -p $REGISTRY_PASS $CI_REGISTRY"), [v]


@family("helm_install_set_flags", "ci_config", SPLIT)
def _helm_set(rng):
    v = _secret_pw(rng, "-_.~+")
    return ("helm upgrade --install pg bitnami/postgresql -n data --create-namespace \\\n"
            f"  --set auth.postgresPassword={v} \\\n  --set primary.persistence.size=20Gi"), [v]


@family("k8s_secret_string_data", "k8s_manifest", SPLIT)
def _string_data(rng):
    redis, smtp = _secret_pw(rng, "!$%*-_.~+="), _secret_pw(rng, "!$%*-_.~+=")
    return ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: worker-config\nstringData:\n"
            f"  REDIS_PASSWORD: \"{redis}\"\n  config.yaml: |\n    smtp:\n      host: smtp.eu.mailgun.org\n"
            f"      user: worker@mg.acme.dev\n      pass: {smtp}"), [redis, smtp]


@family("sealed_secret_raw_input", "k8s_manifest", SPLIT)
def _sealed(rng):
    v = base62(rng, 40)
    return (f"echo -n {v} | kubectl create secret generic hmac-key --dry-run=client "
            "--from-file=key=/dev/stdin -o yaml | kubeseal -o yaml > sealed-hmac.yaml"), [v]


# ---- tool output ------------------------------------------------------------------------------------


@family("printenv_dump", "tool_output", SPLIT)
def _printenv(rng):
    meili, ch = base62(rng, 32), _secret_pw(rng, "-_.~+=")
    lines = ["HOME=/root", "HOSTNAME=search-7f9c6d8b5-x2kqp", "MEILI_ENV=production", f"MEILI_MASTER_KEY={meili}",
             "MEILI_NO_ANALYTICS=true", f"CLICKHOUSE_PASSWORD={ch}", "CLICKHOUSE_USER=ingest",
             "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin", "TERM=xterm"]
    return "$ kubectl exec -it deploy/search -- printenv | sort\n" + "\n".join(lines), [meili, ch]



@family("heroku_config_output", "tool_output", SPLIT)
def _heroku_config(rng):
    pw, skb = _url_pw(rng), hex_digits(rng, 128)
    return ("$ heroku config -a acme-shop-prod\n=== acme-shop-prod Config Vars\n"
            f"DATABASE_URL:    postgres://u8fk2l1m0q9:{pw}@ec2-52-17-88-10.eu-west-1.compute.amazonaws.com:5432/d9k2m\n"
            f"RAILS_ENV:       production\nSECRET_KEY_BASE: {skb}"), [pw, skb]


@family("secretsmanager_escaped_secret_string", "tool_output", SPLIT)
def _secretsmanager(rng):
    v = _secret_pw(rng, "!$%*-_.~+=")
    inner = json.dumps({"username": "admin", "password": v, "engine": "postgres", "host": "orders.cluster-c1.eu-west-1.rds.amazonaws.com", "port": 5432})
    data = {"ARN": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!cluster-0b1c-AbCdEf",
            "Name": "rds!cluster-0b1c", "VersionId": _uuid(rng), "SecretString": inner,
            "VersionStages": ["AWSCURRENT"], "CreatedDate": "2026-11-02T09:14:07.118000+00:00"}
    return "$ aws secretsmanager get-secret-value --secret-id 'rds!cluster-0b1c'\n" + json.dumps(data, indent=4), [v]


@family("kubectl_jsonpath_decoded", "tool_output", SPLIT)
def _jsonpath(rng):
    v = _secret_pw(rng, "!$%*-_.~+=")
    return ("$ kubectl get secret argocd-initial-admin-secret -n argocd -o jsonpath='{.data.password}' | base64 -d; echo\n"
            f"{v}\n$ argocd login argocd.acme.dev --username admin --grpc-web"), [v]


@family("api_response_nested_plaintext", "tool_output", SPLIT)
def _nested_json(rng):
    v = "sb" + "x_tok_" + chars(rng, _B64URL, 56)
    data = {"data": {"id": "at-" + base62(rng, 16), "type": "authentication-tokens",
                     "attributes": {"created-at": "2026-12-01T08:00:00.000Z", "description": "gha-deploy",
                                    "token": v, "expired-at": None}}}
    return "$ curl -s -X POST ... /api/v2/teams/team-ops/authentication-token | jq\n" + json.dumps(data, indent=2), [v]



# ---- logs and stack traces ---------------------------------------------------------------------------


@family("curl_verbose_token_scheme", "log_output", SPLIT)
def _curl_verbose(rng):
    v = hex_digits(rng, 40)
    return ("*   Trying 10.0.4.21:443...\n* Connected to inventory.acme.dev (10.0.4.21) port 443\n"
            "> GET /api/v1/stock/?sku=AB-1 HTTP/1.1\n> Host: inventory.acme.dev\n> User-Agent: curl/8.5.0\n"
            f"> Authorization: Token {v}\n> Accept: */*\n>\n< HTTP/1.1 403 Forbidden"), [v]


@family("json_log_outgoing_headers", "log_output", SPLIT)
def _json_log(rng):
    v = chars(rng, _B64URL, 44)
    line = {"ts": "2026-12-07T10:31:02.771Z", "level": "debug", "msg": "outgoing request",
            "req": {"method": "POST", "url": "https://ledger.partner.io/v3/entries",
                    "headers": {"content-type": "application/json", "x-auth-token": v}}}
    return json.dumps(line), [v]


@family("pytest_locals_redis_url", "log_output", SPLIT)
def _pytest_locals(rng):
    v = _url_pw(rng)
    return ("    def test_cache_roundtrip():\n>       client = redis.from_url(url)\n\n"
            f"url        = 'rediss://default:{v}@eu1-calm-otter-40211.upstash.io:6379'\n\n"
            "tests/test_cache.py:14:\nE   redis.exceptions.ConnectionError: Error 110 connecting to "
            "eu1-calm-otter-40211.upstash.io:6379. Connection timed out."), [v]


@family("node_stack_amqp_url", "log_output", SPLIT)
def _node_stack(rng):
    v = _url_pw(rng)
    return ("Error: Handshake terminated by server: 403 (ACCESS-REFUSED) with message \"ACCESS_REFUSED - Login was refused\"\n"
            "    at afterStartOk (/app/node_modules/amqplib/lib/connect.js:226:12)\n"
            "    at Object.connect (/app/src/queue.ts:18:22) {\n"
            f"  url: 'amqps://orders-svc:{v}@b-3f1c.mq.eu-west-1.amazonaws.com:5671/orders'\n}}"), [v]


# ---- SQL and tables -----------------------------------------------------------------------------------


@family("postgres_create_role_login", "sql", SPLIT)
def _create_role(rng):
    v = _secret_pw(rng, "!$%*-_.~+=")
    return f"CREATE ROLE metabase_ro LOGIN PASSWORD '{v}' VALID UNTIL '2027-06-30';\nGRANT pg_read_all_data TO metabase_ro;", [v]


@family("postgres_fdw_user_mapping", "sql", SPLIT)
def _user_mapping(rng):
    v = _secret_pw(rng, "!$%*-_.~+=")
    return ("CREATE SERVER legacy_erp FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '10.9.0.4', dbname 'erp');\n"
            f"CREATE USER MAPPING FOR etl SERVER legacy_erp OPTIONS (user 'etl_reader', password '{v}');"), [v]



@family("mysql_box_table", "table", SPLIT)
def _mysql_box(rng):
    rows = [("1", "billing-sync", _mixed(rng, 24, "")), ("2", "warehouse", _mixed(rng, 24, ""))]
    border = "+----+--------------+--------------------------+"
    lines = ["mysql> SELECT id, client, shared_key FROM partner_clients;", border,
             "| id | client       | shared_key               |", border]
    lines += [f"| {i:<2} | {c:<12} | {k:<24} |" for i, c, k in rows]
    lines += [border, "2 rows in set (0.00 sec)"]
    return "\n".join(lines), [r[2] for r in rows]


# ---- wallets and one-time-password seeds -----------------------------------------------------------


@family("nostr_nsec_key", "wallet", SPLIT)
def _nsec(rng):
    v = "nsec1" + chars(rng, _BECH32, 58)
    return f"moved the relay bot to its own identity, put this in NOSTR_SK on the box:\n{v}", [v]


@family("solana_base58_export", "wallet", SPLIT)
def _sol_b58(rng):
    v = chars(rng, _BASE58, 88)
    return f"Phantom → Settings → Show Private Key gave me this for the devnet faucet wallet:\n{v}", [v]


@family("otpauth_uri_secret", "recovery_codes", SPLIT)
def _otpauth(rng):
    v = chars(rng, _BASE32, 32)
    return f"otpauth://totp/ACME%20Admin:ops@acme.dev?secret={v}&issuer=ACME%20Admin&algorithm=SHA1&digits=6&period=30", [v]


@family("totp_setup_key_spaced", "recovery_codes", SPLIT)
def _totp_spaced(rng):
    groups = [chars(rng, _BASE32.lower(), 4) for _ in range(8)]
    v = " ".join(groups)
    return f"Can't scan the QR code? Enter this setup key in your authenticator app:\n{v}\nThen type the 6-digit code.", [v]



# ---- credentials in prose: chat, tickets, review comments, commit messages ---------------------------
# The value stands beside other words, not after "<password word> is"; several hand over a token.

_PROSE = {
    "en": ("review", "nit: line 42 still has the live key hard-coded (`{v}`), pull it out and rotate before we merge"),
    "zh": ("chat", "@李明 测试机你先用root登，{v} 这个，用完跟我说一声我去改掉"),
    "ja": ("ticket", "【依頼】検証環境のadminアカウントを暫定で {v} にしてあります。明日中にご自身で変更をお願いします。"),
    "ko": ("commit", "fix: 스테이징 DB 접속 정보 갱신 (계정 app / {v}), 다음 배포 전에 시크릿 매니저로 옮길 예정"),
    "es": ("chat", "oye, el token del bot que me pediste: {v} — no lo subas al repo porfa"),
    "pt": ("ticket", "Chamado #4821: usuário bloqueado; resetei para {v} e pedi para trocar no próximo acesso."),
    "fr": ("review", "Attention, ce commit embarque la clé d'API en dur ({v}) : il faut la révoquer avant la release."),
    "de": ("commit", "Testumgebung: Zugang für den Lieferanten angelegt, Token {v} läuft Freitag ab"),
    "ru": ("chat", "закинь себе в .env вот это {v} — ключ от прод-сентри, не свети им"),
    "it": ("chat", "ti giro l'accesso al gestionale: utente magazzino, parola d'ordine {v}, poi cambiala tu"),
    "tr": ("chat", "sunucuya giremezsen şunu dene: {v} — dün akşam değiştirdim"),
    "vi": ("chat", "wifi phòng họp mới đổi rồi nha mọi người, nhập {v} là vào được"),
    "pl": ("ticket", "Zgłoszenie 311: zresetowałem dostęp do panelu, tymczasowe hasło {v}, zmień je po zalogowaniu."),
}


def _prose_value(rng: random.Random, kind: str) -> str:
    # Review comments and commit messages mostly leak keys; chats and tickets mostly passwords.
    if kind in ("review", "commit") or rng.randrange(3) == 0:
        return base62(rng, rng.randrange(24, 41))
    return _secret_pw(rng, "!$%*-_.~+=")


for _language, (_kind, _template) in _PROSE.items():
    family(f"prose5_{_language}", f"prose_{_language}", SPLIT)(
        lambda rng, t=_template, k=_kind: (lambda v: (t.format(v=v), [v]))(_prose_value(rng, k)))


# Only this module's own registrations: run as a script, the file registers once as `__main__` and
# once more when `benchmarks.redaction_heldout4` is imported, into the same shared list.
HELDOUT4 = [f for f in FAMILIES if f.split == SPLIT and f.build.__module__ == __name__]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    for fam in HELDOUT4:
        text, secrets = fam.build(rng)
        print(f"## {fam.name} ({fam.klass}), {len(secrets)} secret(s)\n{text}\n")


if __name__ == "__main__":
    main()
