"""Synthetic secrets in 100+ formats, planted in every place a transcript carries text.

Used by `tests/test_redact.py` (table-driven) and `benchmarks/secret_redaction.py` (survivors and the
false-positive rate). Everything is generated from a seed: `secret_cases(seed)` gives one
`SecretCase` per format with a random value of the right shape (alphabet, length, prefix), and
the snippet a person or a tool would actually write around it. Nothing here is a real
credential; the provider prefixes are assembled from pieces so that secret scanners on the
repository do not flag this file.

Placements (`PLACEMENTS`) wrap a snippet into the rollout item that carries it, the way Codex
writes them: a user message, a shell tool's output (plain text and JSON text inside the output),
the arguments of a shell function call, assistant text, an `apply_patch` body and the git remote
URL of `session_meta`. `serialize(item)` is the compact JSON that phase 1 redacts
(`codex_memories.ingest.transcript._dumps`).

`leaked(secret, text)` is the survival test: the secret counts as leaked when any window of
`LEAK_WINDOW` consecutive characters of it (the whole value when shorter) is still in the text,
raw or JSON-escaped once or twice. A redactor that keeps a provider prefix and removes the random
part passes; one that removes half a key does not.
"""

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LEAK_WINDOW = 12

_B62 = string.ascii_letters + string.digits
_B64 = _B62 + "+/"
_B64URL = _B62 + "-_"
_HEX = "0123456789abcdef"
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
_PASSWORD = string.ascii_letters + string.digits + "!#%^*_-.~"
_DJANGO = string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)"

_ALPHABETS = {
    "b62": _B62,
    "b64": _B64,
    "b64url": _B64URL,
    "hex": _HEX,
    "HEX": _HEX.upper(),
    "UD": _UPPER_DIGITS,
    "ld": _LOWER_DIGITS,
    "alpha": string.ascii_letters,
    "digit": string.digits,
    "bech32": _BECH32,
    "pw": _PASSWORD,
    "django": _DJANGO,
}


def _join(*parts: str) -> str:
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class SecretFormat:
    name: str
    # The value: literal text with `{alphabet:length}` fields (see _ALPHABETS), or a callable.
    value: str | Callable[[random.Random], str]
    # The text around it, with `{secret}`; may also use `{user}` and `{host}`.
    context: str
    # How the value sits in a git remote URL: "password" (user:value@), "token" (value@ or
    # x-access-token:value@, chosen by the seed) or None when a URL cannot carry it (multi-line).
    url_form: str | None = "password"


@dataclass(frozen=True, slots=True)
class SecretCase:
    name: str
    secret: str  # what must not survive
    snippet: str  # the secret in its context
    url_form: str | None


def _fill(template: str, rng: random.Random) -> str:
    out: list[str] = []
    index = 0
    while index < len(template):
        start = template.find("{", index)
        if start < 0:
            out.append(template[index:])
            break
        end = template.index("}", start)
        out.append(template[index:start])
        alphabet, length = template[start + 1 : end].split(":")
        out.append("".join(rng.choice(_ALPHABETS[alphabet]) for _ in range(int(length))))
        index = end + 1
    return "".join(out)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"}).encode())
    claims = {"sub": str(rng.randrange(10**6, 10**9)), "name": rng.choice(["dana", "lee", "sam"]), "iat": rng.randrange(1.7e9, 1.8e9)}
    payload = _b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{_fill('{b64url:43}', rng)}"


def _pem_body(rng: random.Random, lines: int = 6) -> str:
    data = base64.b64encode(rng.randbytes(48 * lines)).decode()
    return "\n".join(data[i : i + 64] for i in range(0, len(data), 64))


def _pem(label: str) -> Callable[[random.Random], str]:
    def make(rng: random.Random) -> str:
        return _pem_body(rng)

    make.__name__ = label
    return make


def _password(rng: random.Random) -> str:
    # Letters, digits and a few symbols; always one of each class, 12-20 characters.
    length = rng.randint(12, 20)
    chars = [rng.choice(string.ascii_lowercase), rng.choice(string.ascii_uppercase), rng.choice(string.digits)]
    chars += [rng.choice(_PASSWORD) for _ in range(length - 3)]
    rng.shuffle(chars)
    return "".join(chars)


def _url_password(rng: random.Random) -> str:
    """A password as it can stand in a URL or a form body without percent-encoding."""
    return "".join(char if char not in "#%^" else rng.choice("-._~") for char in _password(rng))


def _basic(rng: random.Random) -> str:
    return base64.b64encode(f"{rng.choice(['dana', 'deploy', 'ci'])}:{_password(rng)}".encode()).decode()


def _wrapped(template: str, column: int) -> Callable[[random.Random], str]:
    """A token the terminal wrapped: the value with a newline after `column` characters."""

    def make(rng: random.Random) -> str:
        value = _fill(template, rng)
        return value[:column] + "\n" + value[column:]

    return make


def _memorable(rng: random.Random) -> str:
    """A password a person makes up: a capitalised word, a year or a number, a symbol."""
    word = rng.choice(["Harbor", "Violet", "Granite", "Pelican", "Orchard", "Falcon", "Juniper", "Copper"])
    return word + str(rng.randint(1970, 2029)) + rng.choice("!#$%&*?@+")


def _password_with(symbols: str) -> Callable[[random.Random], str]:
    """A password that holds one of `symbols` (a `#` in a URL, a `%` after a user name, ...)."""

    def make(rng: random.Random) -> str:
        value = _url_password(rng)
        at = rng.randrange(1, len(value) - 1)
        return value[:at] + rng.choice(symbols) + value[at:]

    return make


def _pem_base64(rng: random.Random) -> str:
    """A PEM private key, base64-encoded once more, as kubeconfig's `client-key-data` holds it."""
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + _pem_body(rng) + "\n-----END RSA PRIVATE KEY-----\n"
    return base64.b64encode(pem.encode()).decode()


def _pem_lines(rng: random.Random) -> str:
    """The middle lines of a PEM key (64 characters each), without the header around them."""
    return "\n".join(_pem_body(rng, lines=8).split("\n")[2:6])


def _pem_escaped(rng: random.Random) -> str:
    """A PEM body as a JSON string holds it: its line breaks written `\\n`."""
    return _pem_body(rng).replace("\n", "\\n")


def _continued(template: str, column: int, indent: str = "  ") -> Callable[[random.Random], str]:
    """A value cut by a shell line continuation: `\\`, a line break, indentation, the rest."""

    def make(rng: random.Random) -> str:
        value = _fill(template, rng)
        return value[:column] + "\\\n" + indent + value[column:]

    return make


def _pgpass_password(rng: random.Random) -> str:
    # `.pgpass` escapes `:` and `\\` with a backslash: keep the password free of both.
    return _password(rng)


def _p(*pieces: str) -> str:
    return "".join(pieces)


# Prefixes are split ("gh" + "p_") so that scanners on this repository see no token shape.
FORMATS: tuple[SecretFormat, ...] = (
    # --- model providers -----------------------------------------------------------------
    SecretFormat("openai_legacy", _p("sk", "-{b62:20}T3Blbk", "FJ{b62:20}"), "export OPENAI_API_KEY={secret}", "token"),
    SecretFormat("openai_project", _p("sk", "-proj-{b64url:74}T3Blbk", "FJ{b64url:74}"), "client = OpenAI(api_key='{secret}')", "token"),
    SecretFormat("openai_service_account", _p("sk", "-svcacct-{b64url:64}"), "using {secret} for the batch job", "token"),
    SecretFormat("openai_admin", _p("sk", "-admin-{b64url:64}"), "admin key: {secret}", "token"),
    SecretFormat("anthropic_api", _p("sk", "-ant-api03-{b64url:93}AA"), "ANTHROPIC_API_KEY={secret}", "token"),
    SecretFormat("anthropic_admin", _p("sk", "-ant-admin01-{b64url:93}AA"), "the admin key {secret} rotates monthly", "token"),
    SecretFormat("openrouter", _p("sk", "-or-v1-{hex:64}"), "OPENROUTER_KEY {secret}", "token"),
    SecretFormat("deepseek", _p("sk", "-{hex:32}"), "deepseek: {secret}", "token"),
    SecretFormat("groq", _p("gs", "k_{b62:52}"), "GROQ={secret}", "token"),
    SecretFormat("xai", _p("xa", "i-{b62:80}"), "xai key {secret}", "token"),
    SecretFormat("perplexity", _p("pp", "lx-{b62:48}"), "curl -H 'x-key: {secret}' https://api.perplexity.ai", "token"),
    SecretFormat("huggingface", _p("h", "f_{alpha:34}"), "huggingface-cli login --token {secret}", "token"),
    SecretFormat("replicate", _p("r", "8_{b62:37}"), "REPLICATE_API_TOKEN={secret}", "token"),
    SecretFormat("fireworks", _p("f", "w_{b62:24}"), "fireworks key is {secret}", "token"),
    SecretFormat("langsmith", _p("lsv", "2_pt_{hex:32}_{hex:10}"), "LANGCHAIN_API_KEY={secret}", "token"),
    SecretFormat("pinecone", _p("pcs", "k_{b62:5}_{b62:60}"), "pc = Pinecone('{secret}')", "token"),
    SecretFormat("cohere_named", "{b62:40}", "COHERE_API_KEY={secret}", "token"),
    SecretFormat("mistral_named", "{b62:32}", "export MISTRAL_API_KEY=\"{secret}\"", "token"),
    SecretFormat("azure_openai_named", "{hex:32}", "AZURE_OPENAI_API_KEY: {secret}", "token"),
    # --- code hosting and package registries ------------------------------------------------
    SecretFormat("github_classic", _p("gh", "p_{b62:36}"), "GITHUB_TOKEN={secret}", "token"),
    SecretFormat("github_oauth", _p("gh", "o_{b62:36}"), "oauth token {secret} expires in 8h", "token"),
    SecretFormat("github_app", _p("gh", "s_{b62:36}"), "installation token: {secret}", "token"),
    SecretFormat("github_refresh", _p("gh", "r_{b62:76}"), "refresh={secret}", "token"),
    SecretFormat("github_fine_grained", _p("github", "_pat_{b62:22}_{b62:59}"), "gh auth login --with-token <<< {secret}", "token"),
    SecretFormat("gitlab_pat", _p("glp", "at-{b64url:20}"), "git clone https://oauth2:{secret}@gitlab.com/acme/app.git", "token"),
    SecretFormat("gitlab_deploy", _p("gld", "t-{b64url:20}"), "deploy token {secret}", "token"),
    SecretFormat("gitlab_runner", _p("glr", "t-{b64url:20}"), "gitlab-runner register --token {secret}", "token"),
    SecretFormat("gitlab_feed", _p("glf", "t-{b64url:20}"), "feed token: {secret}", "token"),
    SecretFormat("bitbucket", _p("ATB", "B{b62:32}"), "BITBUCKET_APP_PASSWORD={secret}", "token"),
    SecretFormat("npm", _p("np", "m_{b62:36}"), "//registry.npmjs.org/:_authToken={secret}", "token"),
    SecretFormat("npm_bare", _p("np", "m_{b62:36}"), "npm token created: {secret}", "token"),
    SecretFormat("pypi", _p("pyp", "i-AgEIcHlwaS5vcmc{b64url:70}"), "twine upload -u __token__ -p {secret} dist/*", "token"),
    SecretFormat("pypi_test", _p("pyp", "i-AgENdGVzdC5weXBpLm9yZw{b64url:70}"), "TWINE_PASSWORD={secret}", "token"),
    SecretFormat("rubygems", _p("rubyg", "ems_{hex:48}"), "GEM_HOST_API_KEY: {secret}", "token"),
    SecretFormat("docker_hub", _p("dck", "r_pat_{b64url:27}"), "echo {secret} | docker login -u dana --password-stdin", "token"),
    SecretFormat("clojars", _p("CLOJ", "ARS_{hex:60}"), "clojars token {secret}", "token"),
    SecretFormat("sonarqube", _p("sq", "u_{hex:40}"), "sonar-scanner -Dsonar.token={secret}", "token"),
    # --- chat, mail, payments -----------------------------------------------------------------
    SecretFormat("slack_bot", _p("xo", "xb-{digit:12}-{digit:13}-{b62:24}"), "SLACK_BOT_TOKEN={secret}", "token"),
    SecretFormat("slack_user", _p("xo", "xp-{digit:12}-{digit:12}-{digit:13}-{hex:32}"), "slack user token {secret}", "token"),
    SecretFormat("slack_app", _p("xa", "pp-1-A{UD:10}-{digit:13}-{hex:64}"), "app-level token: {secret}", "token"),
    SecretFormat("slack_webhook", "T{UD:8}/B{UD:10}/{b62:24}", "POST https://hooks.slack.com/services/{secret}", None),
    SecretFormat("discord_webhook", "{b64url:68}", "curl -X POST https://discord.com/api/webhooks/112233445566778899/{secret}", None),
    SecretFormat("discord_bot", "M{b62:23}.{b64url:6}.{b64url:27}", "bot.run('{secret}')", "token"),
    SecretFormat("telegram_bot", "{digit:10}:AA{b64url:33}", "TELEGRAM_BOT_TOKEN={secret}", None),
    SecretFormat("stripe_secret", _p("sk", "_live_{b62:24}"), "stripe.api_key = '{secret}'", "token"),
    SecretFormat("stripe_restricted", _p("rk", "_live_{b62:24}"), "restricted key {secret}", "token"),
    SecretFormat("stripe_webhook", _p("whs", "ec_{b62:32}"), "STRIPE_WEBHOOK_SECRET={secret}", "token"),
    SecretFormat("square_access", _p("EAA", "A{b64url:60}"), "square access token {secret}", "token"),
    SecretFormat("square_oauth", _p("sq0", "csp-{b64url:43}"), "oauth secret {secret}", "token"),
    SecretFormat("shopify_access", _p("shp", "at_{hex:32}"), "X-Shopify-Access-Token: {secret}", "token"),
    SecretFormat("shopify_shared", _p("shp", "ss_{hex:32}"), "shared secret {secret}", "token"),
    SecretFormat("sendgrid", _p("S", "G.{b64url:22}.{b64url:43}"), "sg = SendGridAPIClient('{secret}')", "token"),
    SecretFormat("sendinblue", _p("xkey", "sib-{hex:64}-{b62:16}"), "brevo key {secret}", "token"),
    SecretFormat("mailgun", _p("ke", "y-{hex:32}"), "curl -s --user 'api:{secret}' https://api.mailgun.net/v3", "token"),
    SecretFormat("mailchimp", "{hex:32}-us{digit:2}", "MAILCHIMP_KEY={secret}", "token"),
    SecretFormat("twilio_api_key", _p("S", "K{hex:32}"), "twilio api key {secret}", "token"),
    SecretFormat("twilio_auth_named", "{hex:32}", "TWILIO_AUTH_TOKEN={secret}", "token"),
    # --- clouds and infrastructure --------------------------------------------------------------
    SecretFormat("aws_access_key", _p("AK", "IA{UD:16}"), "aws_access_key_id = {secret}", "token"),
    SecretFormat("aws_temporary_key", _p("AS", "IA{UD:16}"), "AccessKeyId: {secret}", "token"),
    SecretFormat("aws_secret_env", "{b64:40}", "AWS_SECRET_ACCESS_KEY={secret}", None),
    SecretFormat("aws_session_token", "IQoJb3JpZ2luX2Vj{b64:200}", "aws_session_token = {secret}", None),
    SecretFormat("google_api", _p("AI", "za{b64url:35}"), "https://maps.googleapis.com/maps/api/geocode/json?key={secret}", "token"),
    SecretFormat("google_oauth_secret", _p("GOC", "SPX-{b64url:28}"), "client secret {secret}", "token"),
    SecretFormat("google_oauth_access", _p("ya", "29.{b64url:100}"), "gcloud auth print-access-token -> {secret}", "token"),
    SecretFormat("azure_storage_connection", "{b64:86}==", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={secret};EndpointSuffix=core.windows.net", None),
    SecretFormat("azure_sas", "{b64url:43}%3D", "https://acme.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T00:00:00Z&spr=https&sig={secret}", None),
    SecretFormat("azure_service_bus", "{b64:43}=", "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={secret}", None),
    SecretFormat("azure_client_secret", "{b62:3}8Q~{b64url:34}", "az login --service-principal -u 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 -p {secret} --tenant acme.onmicrosoft.com", "token"),
    SecretFormat("digitalocean", _p("do", "p_v1_{hex:64}"), "doctl auth init -t {secret}", "token"),
    SecretFormat("heroku", _p("HRK", "U-AA{b64url:58}"), "HEROKU_API_KEY={secret}", "token"),
    SecretFormat("vercel_flag", "{b62:24}", "vercel deploy --prod --token {secret}", "token"),
    SecretFormat("netlify", _p("nf", "p_{b62:36}"), "netlify token: {secret}", "token"),
    SecretFormat("cloudflare_named", "{b64url:40}", "CLOUDFLARE_API_TOKEN={secret}", "token"),
    SecretFormat("datadog_named", "{hex:32}", "DD_API_KEY={secret}", "token"),
    SecretFormat("new_relic", _p("NRA", "K-{UD:27}"), "new relic user key {secret}", "token"),
    SecretFormat("sentry_dsn", "{hex:32}", "SENTRY_DSN=https://{secret}@o123456.ingest.sentry.io/4504321", None),
    SecretFormat("sentry_user", _p("sntr", "yu_{hex:64}"), "sentry auth token {secret}", "token"),
    SecretFormat("grafana_service_account", _p("gl", "sa_{b62:32}_{hex:8}"), "grafana token {secret}", "token"),
    SecretFormat("dynatrace", _p("dt0", "c01.{UD:24}.{UD:64}"), "Api-Token {secret}", "token"),
    SecretFormat("vault", _p("hv", "s.{b64url:90}"), "VAULT_TOKEN={secret}", "token"),
    SecretFormat("terraform_cloud", _p("{b62:14}.atlas", "v1.{b64url:67}"), "credentials app.terraform.io token {secret}", "token"),
    SecretFormat("pulumi", _p("pu", "l-{hex:40}"), "pulumi login with {secret}", "token"),
    SecretFormat("doppler", _p("dp", ".pt.{b62:43}"), "DOPPLER_TOKEN={secret}", "token"),
    SecretFormat("databricks", _p("dap", "i{hex:32}"), "databricks token {secret}", "token"),
    SecretFormat("supabase", _p("sb", "p_{hex:40}"), "supabase login --token {secret}", "token"),
    SecretFormat("planetscale", _p("pscale", "_tkn_{b64url:43}"), "pscale token {secret}", "token"),
    SecretFormat("flyio", _p("fm", "2_{b64url:120}"), "FLY_API_TOKEN=FlyV1 {secret}", "token"),
    SecretFormat("alibaba", _p("LT", "AI{b62:20}"), "aliyun access key {secret}", "token"),
    SecretFormat("tencent", _p("AK", "ID{b62:32}"), "tencent SecretId {secret}", "token"),
    SecretFormat("jfrog", _p("AK", "Cp{b62:69}"), "ARTIFACTORY_API_KEY={secret}", "token"),
    # --- SaaS -----------------------------------------------------------------------------------
    SecretFormat("linear", _p("lin", "_api_{b62:40}"), "linear key {secret}", "token"),
    SecretFormat("notion", _p("nt", "n_{b62:46}"), "NOTION_TOKEN={secret}", "token"),
    SecretFormat("airtable", _p("pa", "t{b62:14}.{hex:64}"), "airtable personal access token {secret}", "token"),
    SecretFormat("atlassian", _p("ATA", "TT3xFfGF0{b64url:140}={HEX:8}"), "jira token {secret}", "token"),
    SecretFormat("postman", _p("PMA", "K-{hex:24}-{hex:34}"), "postman key {secret}", "token"),
    SecretFormat("figma", _p("fig", "d_{b64url:40}"), "FIGMA_TOKEN={secret}", "token"),
    SecretFormat("dropbox", _p("s", "l.{b64url:130}"), "dropbox access token {secret}", "token"),
    SecretFormat("mapbox_secret", _p("sk", ".eyJ1{b64url:50}.{b64url:22}"), "MAPBOX_ACCESS_TOKEN={secret}", "token"),
    SecretFormat("contentful", _p("CFP", "AT-{b64url:43}"), "contentful cma token {secret}", "token"),
    SecretFormat("prefect_cloud", _p("pn", "u_{b62:36}"), "prefect cloud login --key {secret}", "token"),
    SecretFormat("adafruit", _p("ai", "o_{b62:28}"), "ADAFRUIT_IO_KEY={secret}", "token"),
    SecretFormat("scalingo", _p("tk", "-us-{b64url:48}"), "scalingo token {secret}", "token"),
    SecretFormat("infracost", _p("ic", "o-{b62:32}"), "infracost key {secret}", "token"),
    SecretFormat("jwt_cookie", _jwt, "Cookie: session={secret}; Path=/", "token"),
    SecretFormat("jwt_bare", _jwt, "the id_token was {secret}", "token"),
    SecretFormat("age_secret_key", _p("AGE-SEC", "RET-KEY-1{bech32:58}"), "# created: 2026-11-30\n# public key: age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq\n{secret}", "token"),
    # --- passwords and credentials on command lines -----------------------------------------------
    SecretFormat("curl_user", _password, "curl -u dana:{secret} https://api.example.com/v1/me"),
    SecretFormat("curl_user_long", _password, "curl --user \"deploy:{secret}\" -X POST https://ci.example.com/job"),
    SecretFormat("mysql_attached", _password, "mysql -h db.internal -u root -p{secret} billing"),
    SecretFormat("mysqldump_flag", _password, "mysqldump --user=app --password={secret} billing > dump.sql"),
    SecretFormat("sshpass", _password, "sshpass -p '{secret}' ssh deploy@10.0.3.7"),
    SecretFormat("pgpassword", _password, "PGPASSWORD={secret} psql -h db.internal -U app billing"),
    SecretFormat("mysql_pwd_env", _password, "MYSQL_PWD={secret} mysql -u root"),
    SecretFormat("redis_cli", _password, "redis-cli -h cache.internal -a {secret} PING"),
    SecretFormat("docker_login", _password, "docker login -u dana -p {secret} registry.example.com"),
    SecretFormat("htpasswd_batch", _password, "htpasswd -b -c .htpasswd admin {secret}"),
    SecretFormat("netrc", _password, "machine api.example.com login dana password {secret}"),
    SecretFormat("password_flag_space", _password, "app-cli login --username dana --password {secret}"),
    # --- .env and config files ------------------------------------------------------------------------
    SecretFormat("django_secret_key", "django-insecure-{django:50}", "DJANGO_SECRET_KEY={secret}", None),
    SecretFormat("env_db_pass", _password, "DB_PASS={secret}"),
    SecretFormat("env_db_pwd", _password, "DB_PWD={secret}"),
    SecretFormat("env_session_secret", "{hex:64}", "SESSION_SECRET={secret}"),
    SecretFormat("env_encryption_key", "{b64:43}=", "ENCRYPTION_KEY={secret}", None),
    SecretFormat("env_jwt_signing_key", "{b64url:48}", "JWT_SIGNING_KEY=\"{secret}\""),
    SecretFormat("env_rails_master_key", "{hex:32}", "RAILS_MASTER_KEY={secret}"),
    SecretFormat("env_nextauth_secret", "{b64:43}=", "NEXTAUTH_SECRET={secret}", None),
    SecretFormat("env_laravel_app_key", "base64:{b64:43}=", "APP_KEY={secret}", None),
    SecretFormat("env_smtp_pass", _password, "SMTP_PASSWORD='{secret}'"),
    SecretFormat("yaml_password", _password, "database:\n  user: app\n  password: {secret}\n  host: db"),
    SecretFormat("ini_passwd", _password, "[client]\nuser = app\npasswd = {secret}"),
    SecretFormat("docker_compose_env", _password, "    environment:\n      - POSTGRES_PASSWORD={secret}"),
    SecretFormat("kubeconfig_token", "{b64url:120}", "users:\n- name: admin\n  user:\n    token: {secret}"),
    SecretFormat("docker_config_auth", _basic, "{{\"auths\": {{\"registry.example.com\": {{\"auth\": \"{secret}\"}}}}}}", None),
    SecretFormat("json_client_secret", "{b64url:40}", "{{\"client_id\": \"web\", \"client_secret\": \"{secret}\"}}"),
    SecretFormat("python_kwarg_password", _password, "conn = psycopg.connect(host='db', user='app', password='{secret}')"),
    # --- connection strings and URLs ----------------------------------------------------------------
    SecretFormat("postgres_url", _url_password, "DATABASE_URL=postgres://app:{secret}@db.internal:5432/app"),
    SecretFormat("mongodb_srv", _url_password, "mongodb+srv://app:{secret}@cluster0.ab12c.mongodb.net/app?retryWrites=true"),
    SecretFormat("redis_url", _url_password, "REDIS_URL=redis://:{secret}@cache.internal:6379/0"),
    SecretFormat("amqp_url", _url_password, "amqp://guest:{secret}@rabbit.internal:5672/"),
    SecretFormat("jdbc_password_param", _url_password, "jdbc:postgresql://db.internal:5432/app?user=app&password={secret}&ssl=true"),
    SecretFormat("mssql_connection", _password, "Server=tcp:db.example.com,1433;Database=app;User ID=sa;Password={secret};Encrypt=true;"),
    SecretFormat("odbc_pwd", _password, "Driver={{ODBC Driver 18}};Server=db;Uid=app;Pwd={secret};"),
    SecretFormat("url_encoded_form", _url_password, "POST /login  body: username=dana&password={secret}&remember=1"),
    SecretFormat("url_encoded_json", "{b62:32}", "GET /search?q=%7B%22api_key%22%3A%22{secret}%22%7D"),
    SecretFormat("query_access_token", "{b64url:40}", "https://api.example.com/v2/items?access_token={secret}&page=2"),
    SecretFormat("git_credentials_store", _p("gh", "p_{b62:36}"), "https://dana:{secret}@github.com", "token"),
    SecretFormat("git_remote_token_user", _p("gh", "p_{b62:36}"), "git remote add origin https://{secret}@github.com/acme/app.git", "token"),
    SecretFormat("pip_index_token", _p("gh", "p_{b62:36}"), "pip install --index-url https://__token__:{secret}@pkgs.example.com/simple app", "token"),
    # --- headers and cookies --------------------------------------------------------------------------
    SecretFormat("bearer_header", "{b64url:40}", "curl -H 'Authorization: Bearer {secret}' https://api.example.com", "token"),
    SecretFormat("basic_header", _basic, "Authorization: Basic {secret}", None),
    SecretFormat("x_api_key_header", "{b62:32}", "curl -H \"X-API-Key: {secret}\" https://api.example.com/v1", "token"),
    SecretFormat("cookie_sessionid", "{ld:32}", "Cookie: sessionid={secret}; csrftoken=abc", "token"),
    SecretFormat("set_cookie_session", "{b64:120}", "Set-Cookie: _gh_sess={secret}; path=/; secure; HttpOnly", None),
    SecretFormat("connect_sid", "s%3A{b64url:32}.{b64url:43}", "curl -b 'connect.sid={secret}' http://localhost:3000/api", None),
    SecretFormat("jsessionid", "{HEX:32}", "JSESSIONID={secret}; Path=/app", "token"),
    SecretFormat("php_session", "{ld:26}", "Cookie: PHPSESSID={secret}", "token"),
    # --- private keys -------------------------------------------------------------------------------
    SecretFormat("rsa_private_key", _pem("rsa"), "-----BEGIN RSA PRIVATE KEY-----\n{secret}\n-----END RSA PRIVATE KEY-----", None),
    SecretFormat("openssh_private_key", _pem("openssh"), "-----BEGIN OPENSSH PRIVATE KEY-----\n{secret}\n-----END OPENSSH PRIVATE KEY-----", None),
    SecretFormat("pkcs8_encrypted_key", _pem("pkcs8"), "-----BEGIN ENCRYPTED PRIVATE KEY-----\n{secret}\n-----END ENCRYPTED PRIVATE KEY-----", None),
    SecretFormat("ec_private_key", _pem("ec"), "-----BEGIN EC PRIVATE KEY-----\n{secret}\n-----END EC PRIVATE KEY-----", None),
    SecretFormat("pgp_private_key", _pem("pgp"), "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{secret}\n=mQ3x\n-----END PGP PRIVATE KEY BLOCK-----", None),
    SecretFormat("private_key_truncated", _pem("cut"), "-----BEGIN PRIVATE KEY-----\n{secret}\n[... output truncated ...]", None),
    SecretFormat("putty_private_key", _pem("putty"), "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: dana@laptop\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIBv\nPrivate-Lines: 6\n{secret}\nPrivate-MAC: 0a1b2c3d", None),
    # --- keys the terminal wrapped across two lines --------------------------------------------------
    SecretFormat("wrapped_github_token", _wrapped(_p("gh", "p_{b62:36}"), 22), "token:\n{secret}", None),
    SecretFormat("wrapped_anthropic_key", _wrapped(_p("sk", "-ant-api03-{b64url:93}AA"), 60), "{secret}", None),
    SecretFormat("wrapped_aws_secret", _wrapped("{b62:40}", 20), "aws_secret_access_key = {secret}", None),
    # --- shapes no provider list names (issue 29): written before the held-out set was read -------
    # Passwords as command-line flags of tools that take one.
    SecretFormat("sqlcmd_flag", _password, "sqlcmd -S tcp:db.internal,1433 -U sa -P {secret} -Q \"SELECT 1\""),
    SecretFormat("bcp_flag", _memorable, "bcp dbo.orders out orders.dat -S db01 -U loader -P '{secret}' -c"),
    SecretFormat("ldapsearch_flag", _password, "ldapsearch -x -H ldap://ldap.internal -D \"cn=admin,dc=acme,dc=org\" -w {secret} -b dc=acme,dc=org"),
    SecretFormat("ldapmodify_flag", _memorable, "ldapmodify -D cn=admin,dc=acme -w '{secret}' -f change.ldif"),
    SecretFormat("smbclient_user_percent", _password, "smbclient //fs.internal/share -U dana%{secret} -c 'ls'"),
    SecretFormat("rpcclient_user_percent", _memorable, "rpcclient -U \"svc_backup%{secret}\" 10.0.3.9"),
    SecretFormat("zip_flag", _password, "zip -P {secret} -r backup.zip reports/"),
    SecretFormat("unzip_flag", _memorable, "unzip -P '{secret}' backup.zip -d restore/"),
    SecretFormat("sevenzip_attached", _password, "7z a -p{secret} -mhe=on vault.7z secrets/"),
    SecretFormat("keytool_storepass", _password, "keytool -importkeystore -srckeystore app.p12 -srcstoretype PKCS12 -srcstorepass {secret} -destkeystore app.jks"),
    SecretFormat("jarsigner_storepass", _memorable, "jarsigner -keystore release.jks -storepass '{secret}' app.apk release"),
    SecretFormat("openssl_passin", _password, "openssl rsa -in server.key -passin pass:{secret} -out plain.key"),
    SecretFormat("openssl_k", _password, "openssl enc -aes-256-cbc -salt -in db.sql -out db.sql.enc -k {secret}"),
    SecretFormat("xfreerdp_flag", _password, "xfreerdp /v:10.0.3.20 /u:Administrator /p:{secret} /cert:ignore"),
    SecretFormat("ipmitool_flag", _password, "ipmitool -I lanplus -H 10.0.9.4 -U ADMIN -P {secret} chassis power status"),
    SecretFormat("mosquitto_flag", _memorable, "mosquitto_pub -h mqtt.internal -u sensor -P '{secret}' -t home/temp -m 21.5"),
    SecretFormat("psexec_flag", _password, "PsExec.exe \\\\web01 -u ACME\\deploy -p {secret} cmd /c ipconfig"),
    SecretFormat("pscp_flag", _password, "pscp -pw {secret} build.zip deploy@10.0.3.7:/srv/app/"),
    SecretFormat("sqlplus_user_slash", _password, "sqlplus scott/{secret}@//db.internal:1521/ORCL"),
    SecretFormat("gpg_passphrase", _password, "gpg --batch --yes --passphrase {secret} -d secrets.tar.gz.gpg > secrets.tar.gz"),
    SecretFormat("snmpwalk_auth", _password, "snmpwalk -v3 -l authPriv -u monitor -a SHA -A {secret} -x AES 10.0.0.1"),
    SecretFormat("wget_password", _password, "wget --user=ci --password={secret} https://ci.example.com/artifact.tgz"),
    SecretFormat("attached_p_unknown_tool", _password, "mycli -h db.internal -u admin -p{secret} inventory"),
    SecretFormat("long_flag_with_prefix", _memorable, "./deploy.sh --env prod --db-password '{secret}' --migrate"),
    SecretFormat("single_dash_long_flag", _password, "influx -username admin -password {secret} -execute 'SHOW DATABASES'"),
    SecretFormat("echo_into_sudo", _password, "echo '{secret}' | sudo -S apt-get update"),
    SecretFormat("echo_into_chpasswd", _password, "echo 'deploy:{secret}' | sudo chpasswd"),
    SecretFormat("rabbitmqctl_add_user", _password, "rabbitmqctl add_user deploy {secret}"),
    SecretFormat("powershell_securestring", _memorable, "$pw = ConvertTo-SecureString '{secret}' -AsPlainText -Force"),
    SecretFormat("crackmapexec_flag", _memorable, "crackmapexec smb 10.0.3.0/24 -u administrator -p '{secret}'"),
    SecretFormat("nmcli_wifi", _password, "nmcli device wifi connect HomeNet password {secret}"),
    SecretFormat("sql_with_password", _password, "CREATE USER reporting WITH PASSWORD '{secret}';"),
    SecretFormat("sql_identified_by", _memorable, "ALTER USER 'app'@'%' IDENTIFIED BY '{secret}';"),
    # Config files of well-known tools and connection strings.
    SecretFormat("pgpass_line", _pgpass_password, "$ cat ~/.pgpass\ndb.internal:5432:billing:app:{secret}"),
    SecretFormat("pgpass_wildcard", _memorable, "*:*:*:replicator:{secret}"),
    SecretFormat("netrc_multiline", _password, "machine api.example.com\n  login dana@example.com\n  password {secret}"),
    SecretFormat("npmrc_auth", _basic, "//registry.example.com/:_auth={secret}\nalways-auth=true", None),
    SecretFormat("kubeconfig_client_key_data", _pem_base64, "users:\n- name: admin\n  user:\n    client-key-data: {secret}", None),
    SecretFormat("wireguard_private_key", "{b64:42}A=", "[Interface]\nPrivateKey = {secret}\nAddress = 10.8.0.2/24\nDNS = 1.1.1.1", None),
    SecretFormat("wireguard_preshared_key", "{b64:42}E=", "[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\nPresharedKey = {secret}\nEndpoint = vpn.example.com:51820", None),
    SecretFormat("rclone_key", "{b62:31}", "[b2]\ntype = b2\naccount = 0012ab34cd56\nkey = {secret}", "token"),
    SecretFormat("redis_requirepass", _password, "# redis.conf\nbind 127.0.0.1\nrequirepass {secret}\nmaxmemory 256mb"),
    SecretFormat("wpa_psk", _password, "network={{\n    ssid=\"HomeNet\"\n    psk=\"{secret}\"\n}}"),
    SecretFormat("url_password_with_hash", _password_with("#"), "DATABASE_URL=postgres://app:{secret}@db.internal:5432/app"),
    SecretFormat("firebase_server_key", _p("AAA", "A{b64url:7}:APA91b{b64url:134}"), "legacy FCM server key {secret}", "token"),
    SecretFormat("token_value_json", _p("dap", "i{hex:32}"), "{{\"token_value\": \"{secret}\", \"token_info\": {{\"comment\": \"ci\"}}}}", "token"),
    SecretFormat("secret_string_json", "{b64url:40}", "{{\"Name\": \"prod/api\", \"SecretString\": \"{secret}\"}}", "token"),
    SecretFormat("yaml_camel_case_token", "{hex:32}", "twilio:\n  accountSid: AC0f1e2d3c4b5a69788796a5b4c3d2e1f0\n  authToken: {secret}", "token"),
    SecretFormat("ruby_hash_arrow", "{b62:32}", "Client.new(:auth_token => \"{secret}\", :region => \"us\")", "token"),
    SecretFormat("go_short_assignment", "{b62:40}", "apiSecret := \"{secret}\"", "token"),
    SecretFormat("weak_name_random_value", "{b64url:32}", "auth_key: {secret}", "token"),
    SecretFormat("password_in_prose", _memorable, "the staging admin password is {secret} until Friday"),
    # Key material cut over lines or continuations.
    SecretFormat("pem_body_without_header", _pem_lines, "$ sed -n 3,6p ~/.ssh/id_rsa\n{secret}", None),
    SecretFormat("base64_continued", _continued("{b64:88}", 44), "echo {secret} | base64 -d > key.bin", None),
    SecretFormat("bearer_after_continuation", "{b64url:40}", "curl -sS https://api.example.com/v1/jobs \\\n  -H \"Authorization: Bearer \\\n  {secret}\"", None),
    SecretFormat("service_account_escaped_key", _pem_escaped, "{{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{secret}\\n-----END PRIVATE KEY-----\\n\"}}", None),
    SecretFormat("wrapped_named_key", _wrapped("{b62:40}", 20), "your new secret key:\n{secret}", None),
)


def secret_cases(seed: int) -> list[SecretCase]:
    """One case per format, values drawn from `random.Random(seed)`."""
    rng = random.Random(seed)
    cases = []
    for fmt in FORMATS:
        secret = fmt.value(rng) if callable(fmt.value) else _fill(fmt.value, rng)
        cases.append(SecretCase(fmt.name, secret, fmt.context.format(secret=secret), fmt.url_form))
    return cases


# ---- placements ---------------------------------------------------------------------------------


def _user_message(snippet: str, rng: random.Random) -> dict[str, Any]:
    text = rng.choice(["Use this: ", "Here is the config, fix the deploy:\n", "why does this fail?\n\n"]) + snippet
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _tool_output(snippet: str, rng: random.Random) -> dict[str, Any]:
    output = f"Exit code: 0\nWall time: {rng.uniform(0.1, 4):.1f} seconds\nOutput:\n{snippet}\n"
    return {"type": "function_call_output", "call_id": f"call_{rng.getrandbits(40):x}", "output": output}


def _function_call_arguments(snippet: str, rng: random.Random) -> dict[str, Any]:
    arguments = json.dumps({"command": ["bash", "-lc", snippet], "workdir": "/home/dana/src/app", "timeout_ms": 120000})
    return {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": f"call_{rng.getrandbits(40):x}"}


def _assistant_text(snippet: str, rng: random.Random) -> dict[str, Any]:
    text = "I found the value in the logs:\n\n```\n" + snippet + "\n```\n\nRotate it."
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}], "phase": "final_answer"}


def _apply_patch(snippet: str, rng: random.Random) -> dict[str, Any]:
    body = "\n".join("+" + line for line in snippet.split("\n"))
    patch = f"*** Begin Patch\n*** Add File: config/{rng.choice(['.env', 'settings.txt', 'deploy.sh'])}\n{body}\n*** End Patch"
    return {"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": f"call_{rng.getrandbits(40):x}", "status": "completed"}


def _json_in_tool_output(snippet: str, rng: random.Random) -> dict[str, Any]:
    output = json.dumps({"output": snippet + "\n", "metadata": {"exit_code": 0, "duration_seconds": round(rng.uniform(0.1, 4), 1)}})
    return {"type": "function_call_output", "call_id": f"call_{rng.getrandbits(40):x}", "output": output}


def git_remote_url(case: SecretCase, rng: random.Random) -> str | None:
    """The secret as a git remote URL carries it, or None when it cannot (multi-line values)."""
    if case.url_form is None:
        return None
    value = urllib.parse.quote(case.secret, safe="")
    if case.url_form == "password":
        return f"https://{rng.choice(['dana', 'ci-bot', 'deploy'])}:{value}@git.example.com/acme/app.git"
    form = rng.choice(["x-access-token:{v}@github.com", "{v}@github.com", "oauth2:{v}@gitlab.example.com", "{v}:x-oauth-basic@github.com"])
    return "https://" + form.format(v=value) + "/acme/app.git"


def _session_meta(url: str, rng: random.Random) -> dict[str, Any]:
    return {
        "type": "session_meta",
        "payload": {
            "id": str(uuid.UUID(int=rng.getrandbits(128))),
            "cwd": "/home/dana/src/app",
            "originator": "codex_cli_rs",
            "cli_version": "0.147.0",
            "git": {"commit_hash": f"{rng.getrandbits(160):040x}", "branch": "main", "repository_url": url},
        },
    }


ItemBuilder = Callable[[str, random.Random], dict[str, Any]]

# Placement name -> builder of the item that carries a snippet. `git_remote_url` is handled by
# `planted_items` because it carries the bare value rather than the snippet.
PLACEMENTS: dict[str, ItemBuilder | None] = {
    "user_message": _user_message,
    "tool_output": _tool_output,
    "function_call_arguments": _function_call_arguments,
    "assistant_text": _assistant_text,
    "apply_patch": _apply_patch,
    "json_in_tool_output": _json_in_tool_output,
    "git_remote_url": None,
}


@dataclass(frozen=True, slots=True)
class PlantedItem:
    case: SecretCase
    placement: str
    item: dict[str, Any]
    secret: str  # what must not survive, as this placement writes it (URL-encoded in URLs)


def planted_items(cases: list[SecretCase], seed: int) -> list[PlantedItem]:
    """Every case in every placement it fits (multi-line values have no git URL)."""
    rng = random.Random(seed * 7919 + 1)
    planted = []
    for case in cases:
        for placement, build in PLACEMENTS.items():
            if build is None:
                url = git_remote_url(case, rng)
                if url is not None:
                    planted.append(PlantedItem(case, placement, _session_meta(url, rng), urllib.parse.quote(case.secret, safe="")))
                continue
            planted.append(PlantedItem(case, placement, build(case.snippet, rng), case.secret))
    return planted


def serialize(item: dict[str, Any]) -> str:
    """The item's JSON as phase 1 redacts it (same as `codex_memories.ingest.transcript._dumps`)."""
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def _escaped_forms(piece: str) -> set[str]:
    once = json.dumps(piece, ensure_ascii=False)[1:-1]
    twice = json.dumps(once, ensure_ascii=False)[1:-1]
    return {piece, once, twice}


def leaked(secret: str, text: str) -> bool:
    """True when any `LEAK_WINDOW`-character window of any line of `secret` is still in `text`."""
    for line in secret.split("\n"):
        line = line.strip()
        if not line:
            continue
        width = min(LEAK_WINDOW, len(line))
        for start in range(0, len(line) - width + 1):
            window = line[start : start + width]
            if any(form in text for form in _escaped_forms(window)):
                return True
    return False


# ---- ordinary text that must survive ---------------------------------------------------------


def _sentence(rng: random.Random) -> str:
    words = "the retry loop now backs off when the queue is full and logs the request id once".split()
    return " ".join(rng.choice(words) for _ in range(rng.randint(6, 14)))


def ordinary_texts(seed: int) -> dict[str, str]:
    """Ordinary transcript text of many kinds that no redactor should change, drawn from `seed`."""
    rng = random.Random(seed)
    sha = f"{rng.getrandbits(160):040x}"
    sha256 = f"{rng.getrandbits(256):064x}"
    uid = str(uuid.UUID(int=rng.getrandbits(128)))
    b64_fixture = base64.b64encode(_sentence(rng).encode()).decode()
    b64_bytes = base64.b64encode(rng.randbytes(33)).decode()
    nix = "".join(rng.choice("0123456789abcdfghijklmnpqrsvwxyz") for _ in range(32))
    return {
        "commit_sha": f"commit {sha}\nAuthor: Dana <dana@example.com>\n\n    Fix the retry loop",
        "short_sha_log": f"{sha[:7]} Fix the retry loop\n{sha[7:14]} Add a test for the backoff",
        "git_describe_version": f"v2.{rng.randint(0, 30)}.{rng.randint(0, 9)}-{rng.randint(1, 90)}-g{sha[:9]}",
        "uuid": f"thread {uid} resumed",
        "uuid_key_value": f'{{"thread_id": "{uid}", "turn_id": "{uuid.UUID(int=rng.getrandbits(128))}"}}',
        "sha256_digest": f"sha256:{sha256}",
        "sha256sum_output": f"{sha256}  dist/app-1.4.2.tar.gz",
        "pip_hash": f"requests==2.32.3 --hash=sha256:{sha256}",
        "npm_integrity": f'"integrity": "sha512-{base64.b64encode(rng.randbytes(64)).decode()}"',
        "go_sum": f"github.com/stretchr/testify v1.9.0 h1:{base64.b64encode(rng.randbytes(32)).decode()}",
        "docker_image_digest": f"ghcr.io/acme/api@sha256:{sha256}",
        "docker_container_id": f"{sha256}   acme/api:latest   \"python -m app\"   Up 2 hours",
        "version_strings": f"Python 3.11.{rng.randint(0, 12)}, pydantic 2.{rng.randint(0, 11)}.{rng.randint(0, 9)}, node v20.11.1, 1.0.0-rc.1+build.{rng.randint(1, 999)}",
        "base64_test_fixture": f'assert encode(b"...") == "{b64_fixture}"',
        "base64_bytes_fixture": f"FIXTURE = \"{b64_bytes}\"",
        "long_snake_identifier": "def test_redaction_is_idempotent_for_every_planted_secret_format_and_placement():",
        "long_camel_identifier": "AbstractSingletonProxyFactoryBean2 extends DefaultListableBeanFactoryConfigurer",
        "screaming_identifier": "CODEX_MEMORIES_TEST_S3_ENDPOINT=http://127.0.0.1:9000",
        "file_paths": "/home/dana/src/billing-api/src/secret_manager/token_store.py:42: in test_rotate_password",
        "nix_store_path": f"/nix/store/{nix}-python3-3.11.9/bin/python",
        "url_without_credentials": "https://example.com:8443/api/v2/items?page=2&sort=desc&utm_source=newsletter#top",
        "ssh_git_url": "git@github.com:acme/billing-api.git and ssh://git@github.com/acme/app",
        "url_with_user_only": "https://dana@git.example.com/acme/app.git",
        "email_and_ip": "contact dana@example.com from 10.0.3.7 or 192.168.1.20",
        "k8s_pod_names": f"api-7d4b9c8f6d-{''.join(rng.choice(_LOWER_DIGITS) for _ in range(5))}   1/1   Running   0   3h",
        "aws_arn": "arn:aws:iam::123456789012:role/service-role/codex-memories-exec",
        "token_words": "the token bucket algorithm limits bursts; max_tokens: 4096; token_count = 12",
        "password_words": "update the password reset flow so the password field accepts 64 characters",
        "secret_words": '{"secret_name": "prod/db", "secret_arn_suffix": "-a1B2c3"}',
        "pytest_output": "tests/test_redact.py::test_each_planted_secret_is_redacted[github_token] PASSED [ 42%]",
        "python_code": "def get_api_key(settings):\n    return settings.api_key.get_secret_value()",
        "package_names": "pip install scikit-learn sk-video; see disk-usage-report-for-the-whole-cluster",
        "css_hex_colors": "color: #1a2b3c; background: #ffffff; border-color: #a1b2c3d4",
        "lockfile_resolved": "resolved \"https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz\"",
        "wheel_filename": "detect_secrets-1.5.0-py3-none-any.whl bpe_openai-0.1.4-cp311-cp311-manylinux_2_17_x86_64.whl",
        "redaction_marker": "Authorization: Bearer [REDACTED_SECRET] and password = [REDACTED_SECRET]",
        "webpack_chunk": f"static/js/main.{sha[:8]}.chunk.js  vendors~main.{sha[8:16]}.js",
        "timestamp_ids": f"run-2026-11-30T10-15-31-{sha[:6]}  job_20261130_101531_000042",
        "cache_key": f"cache-key: Linux-pip-{sha256[:40]}",
        # Near misses of the shapes added for issue 29: flags that are not passwords, config
        # lines and public key material.
        "port_and_parent_flags": "docker run -p 8080:80 -p 5432:5432 postgres:16 && ssh -p 2222 deploy@10.0.3.7 && mkdir -p build/out && cp -pr assets build/",
        "psql_port_flag": "psql -h db.internal -U app -d billing -p 5432 -c 'select count(*) from orders'",
        "mysql_prompts_for_password": "mysql -u root -p billing < dump.sql",
        "grep_and_xargs_flags": "grep -P '^[a-z]+-[0-9]{4}$' app.log | xargs -P 4 -n 1 ./process.sh; mvn -P release,sign deploy",
        "pytest_plugin_flags": "python -m pytest -p no:cacheprovider -k test_login -x && pip install -U pip",
        "zip_listing": "zip -r release.zip dist/ && unzip -l release.zip && 7z l archive.7z",
        "password_from_stdin": "echo \"$REGISTRY_PASSWORD\" | docker login -u ci --password-stdin registry.example.com",
        "password_from_variable": "curl -sS -u \"$API_USER:$API_TOKEN\" https://api.example.com && mysql -u root -p\"$MYSQL_ROOT_PASSWORD\"",
        "password_file_flags": "keytool -list -keystore app.jks -storepass:env KEYSTORE_PASS; openssl rsa -in k.pem -passin file:/run/secrets/pw; pg_dump --no-password billing",
        "password_prompts": "[sudo] password for dana: \npasswd: password updated successfully\nEnter passphrase for key '/home/dana/.ssh/id_ed25519':",
        "password_prose": "the password is stored in Vault under secret/data/prod/db and rotated by the password-rotation job",
        "key_value_config": "sort_key: created_at\nprimary_key: id\ncache_key: user_profile\nkey: value\nsigning: enabled",
        "flake8_output": "src/app/views.py:42:10: E501 line too long (120 > 88 characters)\nsrc/app/models.py:7:1: F401 'os' imported but unused",
        "etc_passwd": "root:x:0:0:root:/root:/bin/bash\ndana:x:1000:1000:Dana,,,:/home/dana:/bin/zsh",
        "ssh_public_key": f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{base64.b64encode(rng.randbytes(32)).decode().rstrip('=')} dana@laptop",
        "certificate_block": "-----BEGIN CERTIFICATE-----\n" + "\n".join(base64.b64encode(rng.randbytes(48 * 4)).decode()[i : i + 64] for i in range(0, 256, 64)) + "\n-----END CERTIFICATE-----",
        "docker_image_pin": f"FROM python:3.11-slim@sha256:{sha256} AS base",
        "email_in_header": "To:dana@example.com From:ci@example.com Subject: build 1042 passed",
        "shell_continuation": "docker run --rm \\\n  -v \"$PWD\":/src \\\n  -e LOG_LEVEL=debug \\\n  ghcr.io/acme/builder:1.4.2 make test",
        "camel_case_settings": "tokenLimit: 4096\npasswordMinLength: 12\nsecretName: prod-db\nauthMode: oauth\nkeyPrefix: cache_",
        "token_usage_prose": "the token count was 1842 and the session token budget is 150000 tokens",
    }
