"""Shapes secrets take whatever their provider: the same few ways to hand over a credential.

Contract: data only, like `rules.py` (plus the checks each rule calls on its match); the engine
runs `CONTEXT_SHAPES` after the known formats and before the detector, and `TOKEN_SHAPES` last,
so a value a more precise rule already replaced is left alone. No rule here names a provider:
each is one shape, and whether a value is a credential is decided by `values.py` (random,
password-like, or only a pointer to one) and whether a name says secret by `names.py`.

The shapes, from what got through in issue 29:
* Credentials as command-line flags: a table of tools and the short flag that takes their
  password (`sqlcmd -P`, `ldapsearch -w`, `zip -P`, `7z -p...`), and the general forms any tool
  uses: a long flag whose name ends in a secret word (`--db-password`, `-storepass`,
  `-Dsonar.token=`), `-p<value>` and `-P <value>` when the value is password-like,
  `user%password`, `-u user,password` (password-like: a comma also joins lists) and
  `user:password@host` without a scheme, `user/password@db`, an access key id followed by its
  generated secret (`mc alias set NAME URL ID SECRET`), a password piped into a command that
  reads one from standard input, and the positional forms of a few well-known commands and
  config files (`htpasswd -b`, `.netrc`, `requirepass`, `IDENTIFIED BY`).
* Config files and connection strings: a `.pgpass` line, a base64-encoded private key
  (kubeconfig `client-key-data`), and any name that says secret assigned a value
  (`PrivateKey = ...`, `apiSecret := "..."`, `:auth_token => "..."`, `"token_value": "..."`): the
  value is redacted when the name is a strong secret word, or a weak one (`key`, `sig`, ...) and
  the value looks generated. The same words followed by a generated value without `=` or `:`
  (`databricks token dapi...`, `secret key\n...`) count too.
* Key material cut over lines: PEM body lines without their header, a base64 blob continued
  with a backslash on the next line, the rest of a key wrapped after a redacted first part.
* Generated tokens without a separator after their prefix (`dapi` + hex).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator
from functools import cache, lru_cache

import ahocorasick

from codex_memories.redact.lazy import lazy_compile
from codex_memories.redact.names import STRONG_WORDS, TRANSPARENT_WORDS, WEAK_WORDS, name_strength, name_words, words_pattern
from codex_memories.redact.rules import (
    CONTINUATION,
    NAME_CHARS,
    NEWLINE,
    QUOTE,
    REDACTED,
    Rule,
    at_boundary,
)
from codex_memories.redact.values import (
    HASH_NAMES,
    HEX_DIGITS,
    is_indirect,
    looks_like_fragment,
    looks_like_password,
    looks_like_random_base64,
    looks_like_word_and_number,
    looks_random,
    token_looks_random,
)

Span = tuple[int, int]
Locate = Callable[[re.Match[str], str], Span | None]

# Blanks between a name or flag and its value, line continuations included.
_GAP = r"(?:[ \t]|" + CONTINUATION + r")"
# One command line, in plain or JSON text: no line break (raw or escaped), `;`, `|` or `&`.
# Backslashes are allowed when they escape something else (`\"`, `\\host`).
_SAME_COMMAND = r"(?:[^\n;|&\\]|\\+(?![nr\\]))"


# ---- reading the value --------------------------------------------------------------------------

_OPEN_QUOTE = lazy_compile(r"\\{0,31}[\"']")
_BARE_VALUE = lazy_compile(r"[^\s\"'\\]{1,512}")
_MARKERS = (REDACTED, REDACTED.lower())


def value_at(text: str, position: int) -> Span | None:
    """The value that starts at `position`: between quotes when a quote opens there (up to the
    same quote, escaped the same way, on the same line, without a backslash inside), else up to
    white space, a quote or a backslash. None when there is none or it is already a marker."""
    quote = _OPEN_QUOTE.match(text, position)
    if quote is not None:
        start = quote.end()
        end = text.find(quote.group(), start, start + 513)
        if end > start and "\n" not in text[start:end] and "\\" not in text[start:end]:
            return None if text.startswith(_MARKERS, start) else (start, end)
        position = start
    bare = _BARE_VALUE.match(text, position)
    if bare is None or text.startswith(_MARKERS, position):
        return None
    return bare.span()


def _secret_value(value: str) -> bool:
    """Not a pointer to the secret (`$VAR`, `<password>`, a path, a call), not the next key of
    a mapping (`username:`), not an option (`--verbose`), not (holding) a marker already."""
    trimmed = value.rstrip(",;)]}")
    if not trimmed or trimmed.endswith(":") or "[redacted_secret]" in value.lower():
        return False
    if value != value.strip():  # a quoted piece of code (`' + access_key + '`), not a value
        return False
    return not (is_indirect(value) or is_indirect(trimmed))


def _looks_generated(value: str) -> bool:
    """Random on its own, a random body after a prefix (`glpat-...`), hex glued to a short
    prefix (`dapi0f1e...`), random bytes in base64 (`PresharedKey = ...`), or a long random piece between separators (`AAAA...:APA91b...`;
    a piece of hex alone is a digest's, `sha256:...`, `Linux-pip-...`)."""
    if looks_random(value) or token_looks_random(value) or _glued_hex(value) or looks_like_random_base64(value):
        return True
    return any(
        looks_like_random_base64(piece)
        or (len(piece) >= 32 and not all(char in HEX_DIGITS for char in piece) and looks_random(piece))
        for piece in re.split(r"[:.]", value)
    )


_GLUED_HEX = lazy_compile(r"([A-Za-z]{2,8}?)([0-9a-f]{32,128})(?:-\d{1,2})?")


def _glued_hex(value: str) -> bool:
    """Letters, at least one of them not a hex digit, glued to 32+ random hex digits: a prefix
    and a key (`dapi...`), not a digest (`sha256...`) or a plain hex string."""
    match = _GLUED_HEX.fullmatch(value)
    if match is None:
        return False
    prefix = match.group(1)
    return (
        any(char not in "abcdefABCDEF" for char in prefix)
        and prefix.lower() not in HASH_NAMES
        and not prefix.lower().startswith(("sha", "md", "blake", "crc"))
        and looks_random(match.group(2))
    )


def _value_after(check: Callable[[str], bool]) -> Locate:
    """A `locate` that takes the value right after the match and keeps it when `check` says so."""

    def locate(match: re.Match[str], text: str) -> Span | None:
        span = value_at(text, match.end())
        if span is None:
            return None
        value = text[span[0] : span[1]]
        return span if _secret_value(value) and check(value) else None

    return locate


def _any_value(value: str) -> bool:
    return len(value.rstrip(",;)]}")) >= 3


# ---- 1. credentials on command lines ----------------------------------------------------------

# Tools whose short flag takes a password, and how the value follows it: " " (the next argument),
# "" (attached: `mysql -pSECRET`; `mysql -p db` asks for it) or "?" (either).
_TOOL_PASSWORD_FLAGS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("-P", " ", ("sqlcmd", "bcp", "osql", "isql", "zip", "unzip", "ipmitool", "mosquitto_pub", "mosquitto_sub", "mosquitto_rr")),
    ("-w", " ", ("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldappasswd", "ldapwhoami", "ldapcompare", "ldapmodrdn", "ldapexop")),
    ("-s", " ", ("ldappasswd",)),
    (
        "-p",
        "",
        ("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mariadb", "mariadb-dump",
         "mariadb-admin", "mycli", "7z", "7za", "7zz", "rar", "unrar"),
    ),
    ("-p", "?", ("sshpass",)),
    (
        "-p",
        " ",
        ("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport", "psexec", "psexec64",
         "crackmapexec", "nxc", "netexec", "evil-winrm", "hydra", "medusa", "smbmap", "rdesktop", "login", "upload"),
    ),
    ("-a", " ", ("redis-cli", "keydb-cli")),
    ("-pw", " ", ("pscp", "plink", "psftp", "putty")),
    ("-A", " ", ("snmpwalk", "snmpget", "snmpgetnext", "snmpbulkwalk", "snmpset", "snmptable", "snmptrap")),
    ("-X", " ", ("snmpwalk", "snmpget", "snmpgetnext", "snmpbulkwalk", "snmpset", "snmptable", "snmptrap")),
    ("-k", " ", ("openssl",)),
    ("/p:", "", ("xfreerdp", "xfreerdp3", "wlfreerdp", "sdl-freerdp", "sdl-freerdp3")),
)


def _tool_flag_rule(flag: str, separation: str, tools: tuple[str, ...]) -> Rule:
    separator = {" ": r"[ \t]{1,4}", "": "", "?": r"[ \t]{0,4}"}[separation]
    return Rule(
        f"tool_password_flag.{tools[0]}.{flag.strip('-/:')}",
        # Tool names in any case (`PsExec.exe`), the flag as written; the value on the same line.
        r"(?i:" + "|".join(re.escape(tool) for tool in tools) + r")(?:\.exe)?\b"
        + _SAME_COMMAND + r"{0,300}?\s" + re.escape(flag) + separator + r"(?=\S)",
        (REDACTED,),
        tuple(sorted({tool.lower() for tool in tools})),
        locate=_value_after(lambda value: True),
        boundary=NAME_CHARS,
    )


# The flag's own name: the secret word at its end, after separators or glued to a short word.
_FLAG_WORDS = words_pattern(STRONG_WORDS + WEAK_WORDS)
# Literals one of which every name that says secret holds (the words of `names.py`, shortened).
_NAME_HINTS = ("pass", "pwd", "secret", "token", "key", "auth", "credential", "sig", "cookie", "session", "salt", "seed", "psk")
_GLUED_PASS = lazy_compile(r"(?:store|key|src|dest|srcstore|deststore|srckey|destkey|new|old|db|root|admin|user|proxy|bind|ssh|sudo|become|vault)(?:pass|pwd)")


def _locate_flag_value(match: re.Match[str], text: str) -> Span | None:
    """`--db-password X`, `-storepass X`, `-Dsonar.token=X`, `--key X`: the value after a flag
    whose name says secret. Strong names take any value; weak ones (`--key`) a generated one."""
    name = text[match.start("name") : match.end("name")]
    last = re.split(r"[-_.]", name)[-1].lower()
    strength = name_strength(name)
    if strength is None and _GLUED_PASS.fullmatch(last):
        strength = "strong"
    if strength is None or re.split(r"[-_.]", name)[0].lower() == "no":  # --no-password
        return None
    span = value_at(text, match.end())
    if span is None:
        return None
    value = text[span[0] : span[1]]
    if not _secret_value(value):
        return None
    if strength == "strong":
        return span if _any_value(value) else None
    return span if _looks_generated(value) else None


def _locate_password_like(match: re.Match[str], text: str) -> Span | None:
    """`-pSECRET` / `-P SECRET` of a tool the table does not know: a password-like value, not
    arithmetic (`-pi**8/(8100*zeta(5))`)."""
    span = value_at(text, match.end())
    if span is None:
        return None
    value = text[span[0] : span[1]]
    if "(" in value or "**" in value:
        return None
    if match.group()[-1] in "pP" and _SINGLE_DASH_OPTION.match(value):
        return None  # `-parallelism=30`, `-platform=linux`: an option spelled with one dash
    return span if _secret_value(value) and (looks_like_password(value) or _looks_generated(value)) else None


# The rest of a one-dash long option after its `p`: lower-case letters up to `=` or `:`.
_SINGLE_DASH_OPTION = lazy_compile(r"[a-z][a-z0-9_\-.]*[=:]")


def _locate_access_key_pair(match: re.Match[str], text: str) -> Span | None:
    """The secret of an access key pair: the id mixes capitals and digits and is no hex digest
    (`K7ZX5B4CTZKK6OAM89OZ`, not `4F2A9C1E8B7D6F5A`), the secret is generated and mixes cases
    (a second upper-case hash in a checksum list is not one)."""
    key_id = match.group()[: match.group().find(" ") if " " in match.group() else None].rstrip("\t")
    if not (any(char.isdigit() for char in key_id) and any(char.isalpha() and char not in "ABCDEF" for char in key_id)):
        return None
    start, end = match.span("value")
    value = text[start:end]
    if value.isupper() or value.islower() or not _looks_generated(value):
        return None
    return start, end


def _not_a_uuid(value: str) -> bool:
    return re.fullmatch(r"[0-9a-fA-F\-]{36}", value) is None


def _locate_user_password(match: re.Match[str], text: str) -> Span | None:
    """The password of `-u user:password` (any value but a UUID), or of `-u user,password`: a
    comma also joins lists (`ps -u root,daemon`), so that one must look like a password."""
    span = _value_after(_not_a_uuid)(match, text)
    if span is None or match.group()[-1] != ",":
        return span
    value = text[span[0] : span[1]]
    return span if looks_like_password(value) or looks_like_word_and_number(value) or _looks_generated(value) else None


_USER_AND_HOST = lazy_compile(r"[A-Za-z0-9_.\-$]{1,64}(?:[/\\]{1,2}[A-Za-z0-9_.\-$]{1,64})?\Z")


def _locate_password_at_host(match: re.Match[str], text: str) -> Span | None:
    """`user:password@host` without a scheme (`scott:tiger@db`, `acme/admin:pw@10.0.3.5`): the
    part before is a user name at a word start, not a URL (`url_password` has those), the host
    not a digest (`image:tag@sha256:...`), and the password password-like or generated."""
    start, end = match.span("value")
    user = _USER_AND_HOST.search(text, max(0, match.start() - 130), match.start())
    if user is None or user.end() != match.start():
        return None
    before = text[max(0, user.start() - 3) : user.start()]
    if before.endswith("://") or not at_boundary(text, user.start(), NAME_CHARS | set("./:@")):
        return None
    host = text[match.start("host") : match.end("host")].lower()
    if host in HASH_NAMES or host.startswith("sha"):
        return None
    value = text[start:end]
    return (start, end) if _secret_value(value) and (looks_like_password(value) or _looks_generated(value)) else None


def _locate_user_slash_password(match: re.Match[str], text: str) -> Span | None:
    """The password of `user/password@db`; in a session (`CONNECT user/pw@db`) only with the
    database, or prose (`connect to/from`) would match."""
    start, end = match.span("value")
    if match.group("tool").lower().startswith("conn") and text[end : end + 1] != "@":
        return None
    value = text[start:end]
    return (start, end) if _secret_value(value) and _any_value(value) else None


_SQL_ACCOUNT = lazy_compile(r"(?i)\b(?:user|role|login)\b")


def _locate_sql_password(match: re.Match[str], text: str) -> Span | None:
    """A password in SQL: quoted, or (Oracle's `IDENTIFIED BY pw`) after `USER`, `ROLE` or
    `LOGIN` on the same line; `identified by incident nodes` is prose."""
    span = value_at(text, match.end())
    if span is None:
        return None
    value = text[span[0] : span[1]]
    quoted = text[span[0] - 1 : span[0]] in ("\"", "'")
    line_start = max(text.rfind("\n", 0, match.start()), text.rfind("\\n", 0, match.start()), match.start() - 120, 0)
    if not quoted and not _SQL_ACCOUNT.search(text, line_start, match.start()):
        return None
    return span if _secret_value(value) and _any_value(value) else None


_STDIN_READER = lazy_compile(
    r"\s{0,4}\|\s{0,4}(?:sudo\b" + _SAME_COMMAND + r"{0,40}?\s-[A-Za-z]{0,3}S\b|(?:sudo\s+)?(?:chpasswd|kinit|vncpasswd)\b"
    r"|passwd\s+--stdin|" + _SAME_COMMAND + r"{0,200}?(?:--password-stdin|--passphrase-fd|-passin\s+stdin|--with-token)\b)"
)


_CLOSE_QUOTE = lazy_compile(r"\\{0,31}[\"']?")


def _locate_piped_password(match: re.Match[str], text: str) -> Span | None:
    """`echo 'pw' | sudo -S ...`, `echo "user:pw" | chpasswd`, `printf pw | docker login
    --password-stdin`: what is echoed into a command that reads a password from its input."""
    span = value_at(text, match.end())
    if span is None:
        return None
    start, end = span
    after = _CLOSE_QUOTE.match(text, end).end()
    if _STDIN_READER.match(text, after) is None:
        return None
    value = text[start:end]
    if "chpasswd" in text[after : after + 40] and ":" in value:
        start += value.index(":") + 1
        value = text[start:end]
    return (start, end) if _secret_value(value) and _any_value(value) else None


_COMMAND_LINE_SHAPES: tuple[Rule, ...] = (
    *(_tool_flag_rule(flag, separation, tools) for flag, separation, tools in _TOOL_PASSWORD_FLAGS),
    Rule(
        # --password X, --db-password=X, -storepass X, -Dsonar.token=X, --api-key X, --key <random>.
        "secret_flag",
        r"(?:--?|-d[a-z0-9_.\-]{0,60}[.\-_])(?P<name>(?:[a-z0-9][a-z0-9_.\-]{0,40}?)??" + _FLAG_WORDS + r")(?:=|[ \t]{1,4})(?=\S)",
        (REDACTED,),
        _NAME_HINTS,
        case_insensitive=True,
        locate=_locate_flag_value,
        boundary=NAME_CHARS,
    ),
    Rule(
        # openssl -passin pass:X, -passout pass:X, -pass pass:X: the part after `pass:`.
        "openssl_pass_argument",
        r"-(?:passin|passout|pass|kdfpass|password)[ \t]{1,4}" + QUOTE + r"?pass:",
        (REDACTED,),
        ("pass:",),
        locate=_value_after(_any_value),
        boundary=NAME_CHARS,
    ),
    Rule(
        # -pSECRET, -P SECRET for any tool: only a password-like value (`-p8080`, `-P 4`,
        # `mkdir -pv`, `grep -P '^a+$'` are not).
        "short_password_flag",
        r"\s-(?:p|P[ \t]{0,4})(?=[^\s\-])",
        (REDACTED,),
        ("-p",),
        locate=_locate_password_like,
    ),
    Rule(
        # curl -u user:password, --user "user:password", smbclient -U user%password, lftp -u
        # user,password: user kept.
        "cli_user_password",
        r"(?:-u|--user|--proxy-user|-U|--username)(?:[ \t]{1,4}|=)" + QUOTE + r"?[^\s:%,\"'\\]{1,64}[:%,]",
        (REDACTED,),
        ("-u", "--user"),
        locate=_locate_user_password,
        boundary=NAME_CHARS,
    ),
    Rule(
        # scott:tiger@db, acme/admin:pw@10.0.3.5: user:password@host without a scheme.
        "password_at_host",
        r":(?P<value>[^\s:@/\"'\\]{3,128})@(?P<host>[A-Za-z0-9][A-Za-z0-9.\-]{0,252})",
        (REDACTED,),
        ("@",),
        locate=_locate_password_at_host,
    ),
    Rule(
        # sqlplus scott/tiger@db, CONNECT system/manager@orcl: Oracle's user/password@database.
        "user_slash_password",
        r"(?P<tool>(?i:sqlplus|rman|expdp|impdp|sqlldr|dgmgrl)(?:\.exe)?(?:[ \t]{1,4}-[A-Za-z]{1,12})*|(?i:connect|conn))"
        r"[ \t]{1,4}" + QUOTE + r"?[A-Za-z0-9_$#.]{1,64}/(?P<value>[^\s@/\"'\\]{1,128})(?=@|[\s\"'\\]|$)",
        (REDACTED,),
        ("sqlplus", "rman", "expdp", "impdp", "sqlldr", "dgmgrl", "conn"),
        locate=_locate_user_slash_password,
        boundary=NAME_CHARS,
    ),
    Rule(
        # echo 'pw' | sudo -S ..., echo "user:pw" | chpasswd, printf pw | docker login --password-stdin.
        "password_piped_to_stdin",
        r"(?:echo|printf)(?:[ \t]{1,4}-[neE]{1,3})*[ \t]{1,4}",
        (REDACTED,),
        ("echo", "printf"),
        locate=_locate_piped_password,
        boundary=NAME_CHARS,
    ),
    Rule(
        # htpasswd -b file user password; .netrc "login user password secret", on one line or
        # several; rabbitmqctl add_user name password; net user name password; nmcli ... password
        # X; ConvertTo-SecureString 'X' -AsPlainText; redis requirepass / masterauth X.
        "positional_password",
        r"(?:htpasswd[ \t]{1,4}(?>(?:-[a-z]{1,6}[ \t]{1,4})+)[^\s\-]\S{0,255}[ \t]{1,4}\S{1,64}"
        r"|(?:machine[ \t]{1,4}[^\s\\]{1,253}|default)(?:\s|" + NEWLINE + r"){1,8}login[ \t]{1,4}[^\s\\]{1,64}(?:\s|"
        + NEWLINE + r"){1,8}password"
        r"|rabbitmqctl(?:[ \t]{1,4}-\S{1,40})*[ \t]{1,4}(?:add_user|change_password|authenticate_user)[ \t]{1,4}\S{1,64}"
        r"|net[ \t]{1,4}user[ \t]{1,4}\S{1,64}"
        r"|nmcli\b" + _SAME_COMMAND + r"{0,200}?[ \t](?:password|wifi-sec\.psk|802-1x\.password)"
        r"|(?i:convertto-securestring)(?:[ \t]{1,4}-string)?"
        r"|(?:requirepass|masterauth|masteruser-password))[ \t]{1,4}",
        (REDACTED,),
        ("htpasswd", "password", "rabbitmqctl", "net", "nmcli", "securestring", "requirepass", "masterauth", "masteruser"),
        locate=_value_after(_any_value),
        boundary=NAME_CHARS,
    ),
    Rule(
        # An access key id and its secret side by side, as S3-style tools take them (`mc alias
        # set NAME URL ACCESS SECRET`, `s3cmd`, `rclone`, a pasted pair): the secret after an id
        # of 16 to 32 capitals and digits. Found from the id's run (`_access_key_id_starts`).
        "access_key_pair",
        r"[A-Z0-9]{16,32}[ \t]{1,4}(?:\\*[\"'])?(?P<value>[A-Za-z0-9/+=]{30,128})(?![\w/+=\-])",
        (REDACTED,),
        (),
        locate=_locate_access_key_pair,
        starts=lambda text: _access_key_id_starts(text),
    ),
    Rule(
        # SQL: CREATE USER x WITH PASSWORD 'pw', ALTER ROLE x PASSWORD 'pw', IDENTIFIED BY 'pw'.
        "sql_password",
        r"(?:password[ \t]{1,4}(?=\\{0,31}')|identified[ \t]{1,4}by(?:[ \t]{1,4}password)?[ \t]{1,4})",
        (REDACTED,),
        ("password", "identified"),
        case_insensitive=True,
        locate=_locate_sql_password,
        boundary=NAME_CHARS,
    ),
)


# ---- 2. config files, and names that say secret ---------------------------------------------------

_LINE_BREAK = lazy_compile(r"\n|\\+n")


def _line_starts(text: str) -> Iterator[int]:
    """0 and the position after every line break, raw or JSON-escaped (at any depth)."""
    yield 0
    for match in _LINE_BREAK.finditer(text):
        yield match.end()


_PGPASS_HOST = lazy_compile(r"[A-Za-z0-9_.\-*]{1,253}\Z")


def _locate_pgpass_password(match: re.Match[str], text: str) -> Span | None:
    """The password of a `.pgpass` line: the host (or `*`) before `:port:` starts a line, a
    string or a word (`flake8`'s `views.py:42:10: E501` has a space where the user would be)."""
    host = _PGPASS_HOST.search(text, max(0, match.start() - 253), match.start())
    if host is None:
        return None
    start = host.start()
    escaped = start > 0 and text[start - 1] == "\\" and text[start] in "nrt"  # `\n` + host
    if not escaped and start > 0 and text[start - 1] not in "\n\"' \t+":
        return None
    return _value_after(_any_value)(match, text)


def _locate_base64_private_key(match: re.Match[str], text: str) -> Span | None:
    """A base64 blob that decodes to a PEM private key header (kubeconfig `client-key-data`,
    a Kubernetes secret's `tls.key`, a CI variable): the blob, whatever holds it."""
    head = text[match.start() : match.start() + 64]
    try:
        decoded = base64.b64decode(head[: len(head) // 4 * 4])
    except (binascii.Error, ValueError):
        return None
    return match.span() if b"PRIVATE KEY" in decoded else None


_NAME_BEFORE = lazy_compile(r"[A-Za-z0-9_.\-]{0,64}\Z")
# The secret word at the end of a name, and the words that may follow it (`names.py`).
_SECRET_NAME_END = (
    words_pattern(STRONG_WORDS + WEAK_WORDS)
    + r"(?:[_\-.]?(?:"
    + "|".join(sorted(TRANSPARENT_WORDS, key=len, reverse=True))
    + r"))?"
)


# Letters that may follow a secret word inside one name: a transparent word (`value`, `data`,
# `string`, `material`, `b64`, `base`, `hex`, `raw`, `plain`, `text`) or the `key` of `apikey`.
_NAME_CONTINUES = frozenset("vdsmbhrptk")


@cache
def _secret_word_automaton() -> ahocorasick.Automaton:
    """The first word of every entry of the name lists (`api` of `api key`)."""
    automaton = ahocorasick.Automaton()
    for entry in (*STRONG_WORDS, *WEAK_WORDS):
        automaton.add_word(entry[0], len(entry[0]))
    automaton.make_automaton()
    return automaton


def _secret_word_starts(lowered: str) -> Iterator[int]:
    """Where a secret word starts in the (lower-cased) text, ascending: one Aho-Corasick pass
    instead of trying the rule's word alternation at every position (several rules start
    there, on the same text: computed once)."""
    return iter(_secret_word_start_list(lowered))


@lru_cache(maxsize=2)
def _secret_word_start_list(lowered: str) -> tuple[int, ...]:
    return tuple(_find_secret_word_starts(lowered))


def _find_secret_word_starts(lowered: str) -> Iterator[int]:
    # The longest word at each place, left to right without overlaps: ascending starts. A word
    # that runs on into a longer one (`tokenizer`, `keyboard`, `passed`) is no name's last word
    # and is skipped, unless what follows can end a name (`token_`, `apiKey`, `tokenValue`).
    size = len(lowered)
    for end, length in _secret_word_automaton().iter_long(lowered):
        following = lowered[end + 1] if end + 1 < size else " "
        if not following.isalnum() or following in _NAME_CONTINUES:
            yield end - length + 1
_WORD_BEFORE = lazy_compile(r"(?<![A-Za-z0-9_\-])([A-Za-z]{2,20})[ \t]\Z")
_IDENTIFIER = lazy_compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pass", "pwd"})


def _name_at(text: str, match: re.Match[str]) -> str:
    """The whole name whose secret word the match starts with (`apiSecret`, `client-key-data`,
    `//host/:_auth` gives `_auth`), with the word before it when a blank separates them
    (`secret key`, `access key`, `public key`)."""
    before = _NAME_BEFORE.search(text, max(0, match.start() - 64), match.start())
    start = before.start() if before is not None else match.start()
    # A JSON escape right before the name (`\nDB_KEY`) is not part of it.
    if start < match.start() and text[start - 1 : start] == "\\" and text[start] in "nrtbf":
        start += 1
    name = text[start : match.end("word")]
    previous = _WORD_BEFORE.search(text, max(0, start - 24), start)
    return previous.group(1) + " " + name if previous is not None else name


def _irregular_capitals(value: str) -> int:
    """Capitals not followed by a small letter: CamelCase words have none, random text many."""
    return sum(1 for char, following in zip(value, value[1:] + " ") if char.isupper() and not following.islower())


def _locate_named_value(match: re.Match[str], text: str) -> Span | None:
    """The value after a name that says secret: `_assigned_value` after an operator,
    `_unassigned_value` after blanks alone. The value is read and its cheap checks made before
    the name is (most words in ordinary text are followed by another word)."""
    span = value_at(text, match.end())
    if span is None:
        return None
    value = text[span[0] : span[1]]
    if len(value) < 8 or (value.isalpha() and (value.islower() or value.istitle())) or not _secret_value(value):
        return None
    strength = name_strength(_name_at(text, match))
    if strength is None:
        return None
    if match.group("operator") is None:
        return span if _unassigned_value(value, strength, _name_at(text, match)) else None
    return span if _assigned_value(value, strength, match, text, span) else None


def _assigned_value(value: str, strength: str, match: re.Match[str], text: str, span: Span) -> bool:
    """`apiSecret := "..."`, `:auth_token => "..."`, `PrivateKey = ...`, `"token_value": "..."`:
    a strong name takes any value of 8+ characters (an unquoted bare word needs a digit: code
    assigns names, `token = self_token`); a weak name (`key`, `sig`, `seed`) a generated one."""
    if strength == "weak":
        # 20+ characters (a key; a 16-digit id after `...PlanKey` is not one): generated, or
        # mixing digits and both cases irregularly (`auth_key: uJTv0qJ1oJ0o...`);
        # `sort_key: created_at_desc` and `cache_key: Linux-pip-<sha>` are neither.
        if len(value) < 20:
            return False
        return _looks_generated(value) or (looks_like_fragment(value) and _irregular_capitals(value) >= 2)
    # Code assigns names (`authToken = defaultToken`, `"NextToken": next_token}`); a quoted
    # string, a value on the next line (as Codex's own rule reads `token:\n...`) or one with a
    # digit is a value.
    trimmed = value.rstrip(",;)]}")
    bare_name = _IDENTIFIER.fullmatch(trimmed) and not any(char.isdigit() for char in trimmed)
    quoted = text[span[0] - 1 : span[0]] in ("\"", "'")
    next_line = _LINE_BREAK.search(text, match.start(), span[0]) is not None
    return not bare_name or quoted or next_line


def _unassigned_value(value: str, strength: str, name: str) -> bool:
    """`databricks token dapi...`, `the password is Harbor1987!`, `secret key\n8fQ...`: after a
    secret word without `=` or `:`, a value that looks generated, or password-like after a
    password word. (`public key ...` names no secret: `name_strength`.)"""
    if _looks_generated(value):
        return True
    last = name_words(name)[-1]
    if last in _PASSWORD_WORDS:
        # `pass` and `pwd` are words and commands too (`pass the test`, Python's `pass`).
        return last not in ("pass", "pwd") and looks_like_password(value)
    # After `token`, `secret key`, `access key`: 16+ characters mixing digits and letters or
    # cases irregularly are enough (`pscale_tkn_kER-TBpRA05...`), a word is not.
    return strength == "strong" and len(value) >= 16 and looks_like_fragment(value)


_CONTEXT_CONFIG_SHAPES: tuple[Rule, ...] = (
    Rule(
        # ~/.pgpass: host:port:database:user:password. Found from `:port:` (a literal start),
        # the host checked before it.
        "pgpass_line",
        r":(?:\d{1,5}|\*):[^\s:\"'\\]{1,128}:[^\s:\"'\\]{1,128}:(?=[^\s\"'\\])",
        (REDACTED,),
        (":",),
        locate=_locate_pgpass_password,
    ),
    Rule(
        # LS0tLS1CRUdJTi... is `-----BEGIN` in base64: a private key encoded once more.
        "base64_private_key",
        r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,20000}={0,2}",
        (REDACTED,),
        ("ls0tls1crudjti",),
        locate=_locate_base64_private_key,
    ),
    Rule(
        # A name that says secret, then its value: after an assignment in any language's
        # spelling (`=`, `:`, `:=`, `=>`, `<-`), on the same line or the next (YAML, a wrapped
        # terminal), or after blanks alone (prose, a terminal's output). Tried where one of the
        # words starts only (`_secret_word_starts`).
        "named_secret_value",
        r"(?P<word>" + _SECRET_NAME_END + r")(?:" + QUOTE + r"?" + _GAP + r"{0,4}(?P<operator>=>|:=|<-|[:=])(?:" + _GAP + r"|"
        + NEWLINE + r"){0,6}|(?:[ \t]|" + NEWLINE + r"|" + CONTINUATION + r"){1,6}(?:(?:is|was)[ \t]{1,4})?"
        # Without an operator the value must be 8+ characters: most words in prose stop here.
        r"(?=" + QUOTE + r"?[^\s\"'\\]{8}))",
        (REDACTED,),
        _NAME_HINTS,
        case_insensitive=True,
        locate=_locate_named_value,
        starts=_secret_word_starts,
    ),
)

CONTEXT_SHAPES: tuple[Rule, ...] = (*_COMMAND_LINE_SHAPES, *_CONTEXT_CONFIG_SHAPES)


# ---- 3. key material cut over lines, and generated tokens -------------------------------------------

_PUBLIC_BLOCK = lazy_compile(r"-----BEGIN (?:CERTIFICATE|PUBLIC KEY|RSA PUBLIC KEY|CERTIFICATE REQUEST|NEW CERTIFICATE REQUEST|X509 CRL|PGP PUBLIC KEY BLOCK|PGP SIGNATURE|PGP MESSAGE|SSH2 PUBLIC KEY)-----")
_LINE_PREFIX = lazy_compile(r"[+ \t]{0,8}")


def _locate_key_lines(match: re.Match[str], text: str) -> Span | None:
    """Lines of 60-76 base64 characters (PEM, PGP and MIME line widths) with no header in sight
    (`sed -n 3,6p id_rsa`, a key pasted in two halves): the lines, unless the block they belong
    to is public (a certificate, a public key, a signature)."""
    start = _LINE_PREFIX.match(text, match.start()).end()
    if start > 0 and text[start - 1] == "\\" and text[start] in "nrt":
        start += 1  # the letter of a JSON escape (`\nMIIE...`)
    end = match.end()
    body = re.sub(r"[^A-Za-z0-9+/]", "", text[start:end])
    # Base64 of random bytes has both cases; lines of hex (digests, one per line) do not.
    if body.lower() == body or body.upper() == body or not looks_random(body[:64]) or not looks_random(body[-64:]):
        return None
    window = text[max(0, start - 4000) : start]
    begin = window.rfind("-----BEGIN ")
    if begin >= 0 and "-----END " not in window[begin:] and _PUBLIC_BLOCK.match(window, begin):
        return None
    return start, end


def _locate_continued_blob(match: re.Match[str], text: str) -> Span | None:
    """A base64 or token value cut by a shell line continuation (`abc...`, a backslash, then
    `def...` on the next line): both pieces, when they read as one generated value."""
    joined = match.group("first") + match.group("second")
    if not (looks_random(joined) or token_looks_random(joined)) or len(match.group("first")) < 8:
        return None
    start = match.start("first")
    if start > 0 and text[start - 1] == "\\" and text[start] in "nrtbf":
        start += 1  # the letter of a JSON escape
    return start, match.end("second")


def _locate_glued_token(match: re.Match[str], text: str) -> Span | None:
    start, end = match.span()
    if start > 0 and text[start - 1] == "\\" and text[start] in "nrtbf":
        start += 1  # the letter of a JSON escape
    return (start, end) if _glued_hex(text[start:end]) else None


def _fragment_after_marker(match: re.Match[str], text: str) -> bool:
    return looks_like_fragment(text[match.start("value") : match.end("value")])



def _locate_prefixed_token(match: re.Match[str], text: str) -> tuple[int, int] | None:
    """The token a run of token characters is, if it is one. The run may start with the letter
    of a JSON escape (`\\nghp_...`): the token then starts one character later."""
    start, end = match.span()
    if start > 0 and text[start - 1] == "\\" and text[start] in "nrtbf":
        start += 1
        if end - start < 17 or not text[start].isalpha():
            return None
    elif start > 0 and text[start - 1] == "+" and not text[max(0, start - 3) : start].endswith(("\n+", "\\n+")):
        return None  # inside base64 (`...+abc_...`), not a patch line
    return (start, end) if token_looks_random(text[start:end]) else None


def _user_part_looks_random(match: re.Match[str], text: str) -> bool:
    value = text[match.start("value") : match.end("value")]
    return looks_random(value) or token_looks_random(value)


# `prefixed_token` matches only characters of this class, at least 18 of them, and the character
# before a match is not of the class (its look-behind): so every match starts where a run of 18
# or more such characters starts. Found on the UTF-8 bytes mapped to one mark per class (every
# non-ASCII byte is outside it), where a plain substring search skips ahead quickly.
_TOKEN_RUN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.~"
_MIN_TOKEN_RUN = 18
_TOKEN_RUN_MARKS = bytes(0x61 if chr(code) in _TOKEN_RUN_CHARS else 0x20 for code in range(256))
# `key_lines_without_header`: lines of 60 to 76 base64 characters.
_BASE64_LINE_MARKS = bytes(
    0x61 if chr(code) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/" else 0x20 for code in range(256)
)


def _run_starts(text: str, marks_table: bytes, shortest: int, longest: int | None = None) -> Iterator[int]:
    """Start (a `text` index) of every maximal run of the characters `marks_table` marks, of
    `shortest` to `longest` characters, ascending."""
    ascii_only = text.isascii()
    # surrogatepass: a lone surrogate (from a JSON escape) has no strict UTF-8 form.
    data = text.encode("ascii") if ascii_only else text.encode("utf-8", "surrogatepass")
    marks = data.translate(marks_table)
    run = b"a" * shortest
    byte_at, char_at = 0, 0  # a run start seen last, as a byte offset and a text index
    found = marks.find(run)
    while found >= 0:
        start = marks.rfind(b" ", 0, found) + 1
        end = marks.find(b" ", found + shortest)
        if longest is None or (end if end >= 0 else len(marks)) - start <= longest:
            if ascii_only:
                yield start
            else:
                # Run starts are ASCII characters, so character boundaries: count the characters
                # between the previous start and this one.
                char_at += len(data[byte_at:start].decode("utf-8", "surrogatepass"))
                byte_at = start
                yield char_at
        if end < 0:
            return
        found = marks.find(run, end)


@lru_cache(maxsize=2)
def _token_runs(text: str) -> tuple[int, ...]:
    # Two rules (`glued_prefix_token`, `prefixed_token`) start at these, on the same text.
    return tuple(_run_starts(text, _TOKEN_RUN_MARKS, _MIN_TOKEN_RUN))


def _token_run_starts(text: str) -> Iterator[int]:
    """Start of every maximal run of `_TOKEN_RUN_CHARS` of `_MIN_TOKEN_RUN` or more characters."""
    return iter(_token_runs(text))


_HEX_MARKS = bytes(0x61 if chr(code) in "0123456789abcdef" else 0x20 for code in range(256))
_PREFIX_LETTERS = lazy_compile(r"[A-Za-z]{1,9}\Z")


_KEY_ID_MARKS = bytes(0x61 if chr(code) in "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" else 0x20 for code in range(256))


def _access_key_id_starts(text: str) -> Iterator[int]:
    """Where an access key id can start: a run of 16 to 32 capitals and digits, ascending."""
    return _run_starts(text, _KEY_ID_MARKS, 16, 32)


def _glued_token_starts(text: str) -> Iterator[int]:
    """Where a `glued_prefix_token` can start: up to 9 letters before a run of 32+ hex digits
    (rare in ordinary text, found like the token runs), ascending."""
    last = -1
    for hex_start in _run_starts(text, _HEX_MARKS, 32):
        letters = _PREFIX_LETTERS.search(text, max(0, hex_start - 9), hex_start)
        start = letters.start() if letters is not None else hex_start
        if start > last:
            last = start
            yield start


def _base64_line_starts(text: str) -> Iterator[int]:
    return _run_starts(text, _BASE64_LINE_MARKS, 60, 76)


TOKEN_SHAPES: tuple[Rule, ...] = (
    Rule(
        "key_lines_without_header",
        r"[+ \t]{0,8}(?:[A-Za-z0-9+/]{60,76}" + NEWLINE + r"[+ \t]{0,8}){1,400}[A-Za-z0-9+/]{16,76}={0,2}(?![A-Za-z0-9+/])",
        (REDACTED,),
        (),
        locate=_locate_key_lines,
        starts=_base64_line_starts,
    ),
    Rule(
        "continued_blob",
        r"(?P<first>[A-Za-z0-9+/=_\-]{8,4096})" + CONTINUATION + r"(?:[ \t+]|\\t){0,16}(?P<second>[A-Za-z0-9+/=_\-]{4,4096})",
        (REDACTED,),
        ("\\\n", "\\\\\\n"),
        locate=_locate_continued_blob,
    ),
    Rule(
        # dapi0f1e2d...: a short prefix glued to 32+ random hex digits.
        "glued_prefix_token",
        r"(?<![A-Za-z0-9_\-.~/%+])[A-Za-z]{2,9}[0-9a-f]{32,128}(?:-\d{1,2})?(?![A-Za-z0-9_\-.~/%+])",
        (REDACTED,),
        (),
        locate=_locate_glued_token,
        starts=_glued_token_starts,
    ),
    Rule(
        # glpat-..., hf_..., npm_..., pypi-..., dop_v1_..., hvs....: a short prefix, a separator,
        # then a random body. The look-ahead skips lower-case identifiers without running the check.
        "prefixed_token",
        # Prefix and separator in the regex (possessive: no backtracking), randomness in Python.
        # A single-character look-behind is cheap; the letter of a JSON escape (`\\nghp_...`)
        # may start the match, `_locate_prefixed_token` then skips it.
        r"(?<![A-Za-z0-9_\-.~/%])[A-Za-z][A-Za-z0-9]{0,24}+[_\-.][A-Za-z0-9_\-.~]{15,999}[A-Za-z0-9_~]",
        (REDACTED,),
        (),
        locate=_locate_prefixed_token,
        starts=_token_run_starts,
    ),
    Rule(
        # https://<token>@github.com, https://<token>:x-oauth-basic@...: a random user part.
        "url_token_user",
        r"(://)(?P<value>[A-Za-z0-9_\-.~%]{16,256})(?=@|:[^\s/?#@\"'\\]{0,256}@)",
        (1, REDACTED),
        ("://",),
        accept=_user_part_looks_random,
    ),
    Rule(
        # The rest of a key the terminal wrapped onto the next line: weaker evidence than a
        # whole value needs, since the line before was a secret.
        "wrapped_key_continuation",
        r"(\[REDACTED_SECRET\]" + NEWLINE + r"[+]?)(?P<value>[A-Za-z0-9+/=_\-]{8,1000})(?=[\s\"'\\]|$)",
        (1, REDACTED),
        ("[redacted_secret]",),
        accept=_fragment_after_marker,
    ),
)
