"""The one list of words that make a name say "secret" (`DB_PASSWORD`, `apiSecret`, `auth_key`).

Contract:
* `STRONG_WORDS`: a name ending in one of these holds a secret whatever its value looks like
  (`password`, `token`, `api key`, ...). `WEAK_WORDS`: a name ending in one of these holds a
  secret only when the value looks generated (`SORT_KEY=created_at` is not one,
  `JWT_SIGNING_KEY=Zx81...` is). Each entry is a tuple of words: `("api", "key")` also matches
  `apikey`, `api_key`, `api-key`, `apiKey` and `API.KEY`.
* `name_strength(name)` says which list the last words of `name` come from ("strong", "weak" or
  None), splitting it into words at `_`, `-`, `.`, spaces and camel-case humps, so `bypass`,
  `compass` and `oauth_provider` name nothing and `pass`, `user_pwd` and `proxyAuth` do; words
  such as `value` and `data` after the secret word (`token_value`, `client-key-data`) are skipped,
  and `public` before it (`PublicKey`) names no secret.
* `names_accounts(name)` says whether a table's name says it holds accounts (`users`,
  `service_accounts`, `api_clients`: `ACCOUNT_WORDS`), whose rows carry a credential.
* `PASSWORD_PHRASES`, `CREDENTIAL_PHRASES`, `RECOVERY_PHRASES`, `LOGIN_PHRASES` and
  `VALUE_AS_PHRASES` are the words of prose, per language, that `codex_memories.redact.prose`
  reads ("the password is X", "recovery codes: ...", "log in as U with X", "X as the password").
* `words_pattern(words)` is the same list as a regular expression over lower-cased text, for the
  rules in `codex_memories.redact.rules` and `.shapes`.

Every rule that decides from a name, and the transcript reader's fallback
(`codex_memories.ingest.transcript`), reads these lists; nothing else keeps its own copy.
"""

from __future__ import annotations

import re

from codex_memories.redact.lazy import lazy_compile

STRONG_WORDS: tuple[tuple[str, ...], ...] = (
    ("password",),
    ("passwd",),
    ("passphrase",),
    ("pass",),
    ("pwd",),
    ("secret",),
    ("token",),
    ("api", "key"),
    ("secret", "key"),
    ("access", "key"),
    ("private", "key"),
    ("credential",),
    ("credentials",),
    ("auth",),
    ("psk",),
    ("oauth",),
    ("bearer",),
    ("mnemonic",),
    ("seed", "phrase"),
    ("recovery", "code"),
    ("recovery", "key"),
    ("backup", "code"),
    # sssd's `ldap_default_authtok` (the bind password of an LDAP client).
    ("authtok",),
)

WEAK_WORDS: tuple[tuple[str, ...], ...] = (
    ("key",),
    ("signature",),
    ("sig",),
    ("cookie",),
    ("session",),
    ("salt",),
    ("seed",),
)

# Words after the secret word that do not change what the name holds: `token_value`,
# `client-key-data`, `SecretString`, `key_material`, `password_b64`, Rails' `SECRET_KEY_BASE`.
TRANSPARENT_WORDS = frozenset({"value", "data", "string", "str", "material", "b64", "base64", "hex", "raw", "plain", "text", "base"})
# Words before the secret word that say it is not one: `PublicKey`, `public_key`.
PUBLIC_WORDS = frozenset({"public", "pub"})

_LAST_WORDS = frozenset(entry[-1] for entry in (*STRONG_WORDS, *WEAK_WORDS)) - {"pas"}

_WORD_SPLIT = lazy_compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def name_words(name: str) -> list[str]:
    """`name` cut into lower-case words: `DB_PASSWORD` -> db, password; `apiSecret` -> api,
    secret; `X-Auth-Token` -> x, auth, token; `HTTPProxyPass` -> http, proxy, pass."""
    return [word.lower() for word in _WORD_SPLIT.split(name) if word]


def _ends_with(words: list[str], entries: tuple[tuple[str, ...], ...]) -> bool:
    for entry in entries:
        if tuple(words[-len(entry) :]) == entry:
            return True
        if len(entry) > 1 and words and words[-1] == "".join(entry):  # `apikey`, `secretkey`
            return True
    return False


def name_strength(name: str) -> str | None:
    """"strong" when the last words of `name` are a strong secret word, "weak" for a weak one,
    else None. Trailing `TRANSPARENT_WORDS` are skipped; a `PUBLIC_WORDS` word right before the
    secret word makes it no secret."""
    words = name_words(name)
    while words and words[-1] in TRANSPARENT_WORDS:
        words.pop()
    if not words or (len(words) >= 2 and words[-2] in PUBLIC_WORDS):
        return None
    if words[-1].endswith("s") and words[-1][:-1] in _LAST_WORDS and words[-1] != "tokens":
        # Plurals hold several of the same (`unseal_keys_b64`, `recovery_codes`); not `tokens`,
        # which counts a model's tokens far more often (`max_tokens`).
        words = [*words[:-1], words[-1][:-1]]
    if _ends_with(words, STRONG_WORDS):
        return "strong"
    if _ends_with(words, WEAK_WORDS):
        return "weak"
    return None


# Words that make a table (or a record) one of accounts: `users`, `service_accounts`,
# `api_clients`, `oauth_tokens`. A row of such a table holds its credential in some column,
# named or not (`INSERT INTO service_accounts VALUES (7, 'svc', 'Harbor-2409', now())`).
ACCOUNT_WORDS = frozenset(
    {"user", "account", "login", "member", "customer", "client", "admin", "operator", "principal", "identity", "credential",
     "auth", "oauth", "secret", "token", "key", "password", "passwd", "apikey", "bot", "robot", "tenant"}
)


def names_accounts(name: str) -> bool:
    """Whether any word of `name` (plural or not) says it holds accounts (`ACCOUNT_WORDS`), or
    its last words name a secret (`name_strength`)."""
    return name_strength(name) is not None or any(
        word in ACCOUNT_WORDS or (word.endswith("s") and word[:-1] in ACCOUNT_WORDS) for word in name_words(name)
    )


def words_pattern(entries: tuple[tuple[str, ...], ...]) -> str:
    """An alternation matching each entry in lower-cased text, its words joined by nothing,
    `_`, `-` or `.` (longest first, so `passwd` is tried before `pass`)."""
    alternatives = sorted((r"[_\-.]?".join(map(re.escape, entry)) for entry in entries), key=len, reverse=True)
    return "(?:" + "|".join(alternatives) + ")"


# Words that say "a credential follows" in prose, per language (issue 36: "the password is ...",
# "口令是 ...", "Passwort: ..."). Lower case; a Latin-script word must stand alone (not inside
# `tokenizer` or `autoclave`), a CJK word may touch what follows. `PASSWORD_PHRASES` are the
# subset that name a password a person types (a value of digits only counts after them).
PASSWORD_PHRASES: dict[str, tuple[str, ...]] = {
    "en": ("password", "passwd", "passphrase", "pass phrase", "passcode", "pin code", "login password", "pw", "pwd"),
    "zh": ("密码", "口令", "密碼", "暗号", "登录密码", "登錄密碼"),
    "ja": ("パスワード", "暗証番号", "合言葉", "パスフレーズ"),
    "ko": ("비밀번호", "암호", "패스워드", "비번"),
    "es": ("contraseña", "contrasena", "clave de acceso", "clave", "código de acceso", "codigo de acceso"),
    "pt": ("senha", "palavra-passe", "palavra passe", "código de acesso", "codigo de acesso"),
    "fr": ("mot de passe", "mdp", "code secret", "code d'accès", "code d'acces"),
    "de": ("passwort", "kennwort", "zugangspasswort", "geheimzahl", "pw", "zugangscode"),
    "ru": ("пароль", "пароля", "паролем", "пин-код", "пасс", "пассворд"),
    # Languages people also write in (issue 36, round 2): the password word and its common
    # inflected forms (Polish, Turkish and the Nordic languages inflect the noun itself).
    "it": ("parola d'ordine", "parola chiave"),
    "nl": ("wachtwoord", "wachtwoorden"),
    "pl": ("hasło", "hasła", "hasłem", "haslo", "hasla"),
    "tr": ("şifre", "şifresi", "şifreniz", "şifrem", "parolası", "parolam"),
    "sv": ("lösenord", "lösenordet"),
    "nb": ("passord", "passordet", "adgangskode", "adgangskoden"),
    "cs": ("heslo", "hesla", "heslem"),
    "vi": ("mật khẩu",),
    "id": ("kata sandi", "kata laluan"),
}
CREDENTIAL_PHRASES: dict[str, tuple[str, ...]] = {
    "en": ("api key", "api token", "access key", "access token", "secret key", "auth token", "token", "secret",
           "credentials", "private key", "master key", "signing key", "client secret", "license key"),
    "zh": ("密钥", "秘钥", "金鑰", "令牌", "私钥", "私鑰", "访问密钥", "访问令牌", "授权码", "凭证", "凭据", "助记词", "token"),
    "ja": ("秘密鍵", "トークン", "アクセスキー", "シークレット", "apiキー", "シークレットキー", "認証トークン", "秘密の鍵"),
    "ko": ("토큰", "비밀 키", "비밀키", "액세스 키", "액세스키", "접근 키", "api 키", "api키", "개인 키", "개인키", "인증 토큰"),
    "es": ("token", "clave secreta", "clave api", "clave de api", "llave", "secreto", "credencial"),
    "pt": ("token", "chave", "chave secreta", "chave de acesso", "chave de api", "segredo", "credencial"),
    "fr": ("jeton", "clé", "cle", "clé secrète", "clé d'api", "clé api", "secret", "identifiant secret"),
    "de": ("token", "schlüssel", "geheimer schlüssel", "zugangsschlüssel", "api-schlüssel", "geheimnis", "zugangsdaten"),
    "ru": ("токен", "ключ", "секрет", "секретный ключ", "ключ доступа", "api-ключ", "ключ api"),
    "it": ("chiave segreta", "chiave api", "chiave di accesso"),
    "nl": ("geheime sleutel", "api-sleutel", "toegangssleutel"),
    "pl": ("tajny klucz", "klucz api", "klucz dostępu"),
    "tr": ("gizli anahtar", "api anahtarı", "erişim anahtarı"),
    "sv": ("hemlig nyckel", "api-nyckel", "åtkomstnyckel"),
    "nb": ("hemmelig nøkkel", "api-nøkkel", "tilgangsnøkkel"),
    "cs": ("tajný klíč", "přístupový klíč"),
    "vi": ("khóa bí mật", "khóa api"),
    "id": ("kunci rahasia", "kunci api"),
}
# Words that introduce a list of one-time recovery codes or a recovery key, per language.
RECOVERY_PHRASES: dict[str, tuple[str, ...]] = {
    "en": ("recovery codes", "recovery code", "backup codes", "backup code", "backup-codes", "recovery-codes", "recovery key", "emergency codes",
           "backup key", "rescue key", "recovery-key",
           "one-time codes", "scratch codes", "restore codes", "recovery phrase", "seed phrase"),
    "zh": ("恢复码", "恢复代码", "备用码", "备份码", "救援码", "恢復碼", "复原码", "復原碼", "备用验证码", "助记词", "助記詞", "恢复密钥", "恢復金鑰",
           "恢復密鑰", "备用密钥", "恢复秘钥"),
    "ja": ("リカバリーコード", "リカバリコード", "バックアップコード", "復旧コード", "回復コード", "リカバリーキー", "リカバリキー", "回復キー", "復旧キー"),
    "ko": ("복구 코드", "복구코드", "백업 코드", "백업코드", "복구 키", "복구키", "복구 열쇠"),
    "es": ("códigos de recuperación", "codigos de recuperacion", "códigos de respaldo", "clave de recuperación", "clave de recuperacion",
           "llave de recuperación"),
    "pt": ("códigos de recuperação", "codigos de recuperacao", "códigos de backup", "chave de recuperação", "chave de recuperacao"),
    "fr": ("codes de récupération", "codes de secours", "clé de récupération", "codes de recuperation", "cle de recuperation", "clé de secours"),
    "de": ("wiederherstellungscodes", "backup-codes", "wiederherstellungsschlüssel", "notfallcodes", "wiederherstellungsschluessel",
           "recovery-schlüssel"),
    "ru": ("коды восстановления", "резервные коды", "ключ восстановления", "код восстановления"),
    "it": ("codici di backup", "codici di recupero", "codici di riserva", "chiave di recupero"),
    "nl": ("herstelcodes", "back-upcodes", "backupcodes", "herstelsleutel"),
    "pl": ("kody zapasowe", "kody odzyskiwania", "kody awaryjne", "klucz odzyskiwania"),
    "tr": ("yedek kodlar", "kurtarma kodları", "yedek kodları", "kurtarma anahtarı"),
    "sv": ("reservkoder", "återställningskoder", "återställningsnyckel"),
    "nb": ("reservekoder", "gjenopprettingskoder", "backupkoder", "gjenopprettingsnøkkel"),
    "cs": ("záložní kódy", "kódy pro obnovení", "klíč pro obnovení", "obnovovací klíč"),
    "vi": ("mã khôi phục", "mã dự phòng", "khóa khôi phục"),
    "id": ("kode pemulihan", "kode cadangan", "kunci pemulihan"),
}
# "Sign in as <user> with <value>": a login handed over without naming the password, per language
# (issue 36, round 3). `verbs`: log in / sign in; `as`: the word before the user name; `with`:
# the word between the user name and the value.
LOGIN_PHRASES: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {"verbs": ("log in", "login", "log on", "sign in", "sign on", "signin", "logon"), "as": ("as",), "with": ("with", "using", "and", "pw", "password")},
    "es": {"verbs": ("inicia sesión", "inicia sesion", "entra", "entrá", "accede", "ingresa", "loguéate", "logueate"),
           "as": ("como",), "with": ("con", "y")},
    "pt": {"verbs": ("faça login", "faz login", "entre", "entra", "acesse", "acessa", "logue", "loga"), "as": ("como",), "with": ("com", "e")},
    "fr": {"verbs": ("connecte-toi", "connectez-vous", "connecte toi", "identifie-toi", "identifiez-vous", "logue-toi"),
           "as": ("en tant que", "comme", "avec le compte"), "with": ("avec", "et")},
    "de": {"verbs": ("melde dich", "meld dich", "melden sie sich", "logge dich", "logg dich", "einloggen", "anmelden"),
           "as": ("als",), "with": ("mit", "und")},
    "it": {"verbs": ("accedi", "entra", "fai login", "logga"), "as": ("come",), "with": ("con", "e")},
    "nl": {"verbs": ("log in", "login", "meld je aan", "inloggen"), "as": ("als",), "with": ("met", "en")},
    "pl": {"verbs": ("zaloguj się", "zaloguj sie", "loguj się"), "as": ("jako",), "with": ("z hasłem", "hasłem", "i")},
    "ru": {"verbs": ("войди", "войдите", "зайди", "зайдите", "залогинься", "логинься"), "as": ("как", "под"), "with": ("с", "и", "/")},
    "sv": {"verbs": ("logga in",), "as": ("som",), "with": ("med", "och")},
    "nb": {"verbs": ("logg inn",), "as": ("som",), "with": ("med", "og")},
    "tr": {"verbs": ("giriş yap", "giris yap"), "as": ("olarak",), "with": ("ile", "ve")},
    "cs": {"verbs": ("přihlas se", "prihlas se"), "as": ("jako",), "with": ("s", "a")},
    "id": {"verbs": ("masuk", "login"), "as": ("sebagai",), "with": ("dengan", "dan")},
    "vi": {"verbs": ("đăng nhập",), "as": ("bằng", "với tư cách"), "with": ("với", "và")},
}
# "X as the password", "X als Passwort", "X como contraseña", "X в качестве пароля": the value
# stands before the word for it. The words between the value and the password word, per language.
VALUE_AS_PHRASES: dict[str, tuple[str, ...]] = {
    "en": ("as", "as the", "as your", "as my", "as a", "as the new", "for the", "is the", "is my", "is your"),
    "es": ("como", "como la", "como tu", "es la"),
    "pt": ("como", "como a", "como sua", "é a"),
    "fr": ("comme", "comme le", "comme nouveau", "est le"),
    "de": ("als", "als das", "als neues", "ist das"),
    "it": ("come", "come la", "è la"),
    "nl": ("als", "als het", "is het"),
    "pl": ("jako",),
    "ru": ("в качестве", "как", "это"),
    "sv": ("som", "är"),
    "nb": ("som", "er"),
    "tr": ("olarak",),
    "cs": ("jako",),
    "id": ("sebagai",),
    "vi": ("làm",),
}
