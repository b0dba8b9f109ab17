"""Secrets by where they stand in words: after a credential word in any supported language, in a
credential position of a command, in a list of recovery codes.

Contract: data only, like `rules.py` and `shapes.py` (plus the checks each rule calls on its
match); `engine.py` runs `PROSE_SHAPES` after `shapes.CONTEXT_SHAPES`. Words come from
`names.py` (one list per language), value judgements from `values.py`. No rule names a
provider or a tool: a value is a secret because of the word or the verb before it and because
it does not read as a word, a number, a path or a placeholder.

* `credential_phrase`: "the password is X", "口令是 X", "Passwort: X", "la contraseña del
  servidor es X", "パスワードはXです", "пароль — X", "비밀번호를 X로" (en, zh, ja, ko, es, pt, fr,
  de, ru, it, nl, pl, tr, sv, nb, cs, vi, id). After the word: up to five filler words (a run of
  CJK or Hangul letters is one, up to a particle glued to it), then a connector (`is`, `es`,
  `ist`, `è`, `是`, `改为`, `は`, `는`, `를`, `:`, ...) or none; a soft connector (`to`, `на`,
  `auf`) counts only when a value, not a word, follows; "stays / ficou / bleibt / будет" are
  connectors too (the noun, a verb, the value). The value is a password-like or generated
  token, or words and a number (`values.looks_like_word_and_number`, `Gato-47572016`); a
  connector lets a weaker one in. The words include slang and clipped ones (`pw`, `pwd`, `mdp`,
  `пасс`, `비번`, `code d'accès`). When nothing usable follows the word, the value may stand
  before it: "use X as the password", "X als Passwort", "X como contraseña" (`VALUE_AS_PHRASES`).
* `login_as_user`: "sign in as <user> with X", "melde dich als <user> mit X an", "connecte-toi
  en tant que <user> avec X", "entra como <user> con X", "войди как <user> с X"
  (`names.LOGIN_PHRASES`, every language above with such a phrase): X when it looks like a
  password on its own (`SSO`, `your own key` are not).
* `credential_argument`: a token given to a command's `login`, `auth`, `authtoken`,
  `add-authtoken`, `install`, `register`, `unlock`, `set-token`... verb (`ngrok config
  add-authtoken X`, `cloudflared service install X`, `vault login X`, `bw unlock X`): the first
  positional arguments after the verb when generated, a password-like one as the second
  (`login user password`), or as the first after `unlock` / `unseal`, which take no user.
* `password_in_prose`: a credential alone among words with nothing that announces it
  (`standalone.py`).
* `recovery_codes`: the codes listed after "recovery codes", "backup codes", "恢复码",
  "Wiederherstellungscodes", "kody zapasowe", ...: every code-like token (digits and letters, or
  upper-case groups, joined by `-`; digit groups also by single blanks, `8410 2275`) up to a
  blank line; at least two of them, or one recovery key of four or more dash-joined groups
  (`Q7RM-2KXP-9WNB-4HTD-6JFV-8LCZ`) after "recovery key", "恢复密钥", "clave de recuperación".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache

import ahocorasick

from codex_memories.redact.lazy import lazy_compile
from codex_memories.redact.names import (
    CREDENTIAL_PHRASES,
    LOGIN_PHRASES,
    PASSWORD_PHRASES,
    RECOVERY_PHRASES,
    VALUE_AS_PHRASES,
)
from codex_memories.redact.rules import REDACTED, Rule
from codex_memories.redact.shapes import _looks_generated
from codex_memories.redact.standalone import PASSWORD_IN_PROSE
from codex_memories.redact.values import (
    is_indirect,
    is_placeholder,
    looks_like_password,
    looks_like_random_base64,
    looks_like_word_and_number,
)

Span = tuple[int, int]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"


def escaped_form(literal: str) -> str:
    """`literal` as a pattern that also matches it JSON-escaped with `ensure_ascii` (`ñ` as
    `\\u00f1`, at any nesting depth): tool-call arguments are serialised that way."""
    parts = []
    for char in literal:
        if char == " ":
            parts.append(r"[ \t]{1,3}")
        elif ord(char) < 128:
            parts.append(re.escape(char))
        elif ord(char) <= 0xFFFF:
            # Either case: the rule runs over lower-cased text, but an escape keeps the code of
            # the letter as written (`\\u041f` for `П`).
            codes = "|".join(sorted({f"{ord(form):04x}" for form in (char, char.upper()) if len(form) == 1}))
            parts.append(f"(?:{re.escape(char)}|\\\\{{1,16}}u(?:{codes}))")
        else:
            parts.append(re.escape(char))
    return "".join(parts)


def _phrase_pattern(phrases: dict[str, tuple[str, ...]]) -> str:
    """Every phrase, longest first; Latin-script ones stand alone, CJK ones may touch text."""
    words = sorted({phrase for group in phrases.values() for phrase in group}, key=len, reverse=True)
    touching = [escaped_form(word) for word in words if re.search("[" + _CJK + "]", word)]
    alone = [escaped_form(word) for word in words if not re.search("[" + _CJK + "]", word)]
    # Not part of an identifier or a path (`token_store.py`, `_TOKEN`, `api-key.txt`). The guards
    # stand once around the alternation of plain words, which fails at a first letter fast.
    standing_alone = r"(?:(?<=\\[nrtbf])|(?<![\w\-./]))(?:" + "|".join(alone) + r")(?![\w\-])"
    return "(?:" + "|".join([standing_alone, *touching]) + ")"


_PASSWORD_WORDS = frozenset(phrase for group in PASSWORD_PHRASES.values() for phrase in group)

# Connectors between a credential word and its value, all languages (lower case): the verb "is"
# and its equivalents, the particles of Japanese and Korean, and the punctuation of a label.
_CONNECTOR_WORDS = (
    "is", "was", "are", "be", "es", "era", "é", "est", "ist", "lautet", "это", "равен", "sera", "será", "e",
    "è", "je", "är", "er", "là", "adalah", "ialah", "olarak",
    # "stays / became / will be": the noun, a verb, the value ("la senha ficou X", "das Passwort
    # bleibt X", "пароль будет X"), in every language above that has such a verb.
    "stays", "remains", "becomes", "became", "quedó", "queda", "sigue", "ficou", "fica", "reste", "devient",
    "bleibt", "wird", "diventa", "resta", "rimane", "будет", "остаётся", "остается", "стал", "blijft", "wordt",
    "zostaje", "będzie", "kalır", "blir", "förblir", "zůstává", "bude", "tetap", "vẫn là",
)
# Marks: particles that end the word in Korean (topic, subject, object, "also", "as") and
# Japanese, the verbs "is / set to / changed to" of Chinese.
_CONNECTOR_MARKS = (
    ":", "：", "=", "＝", "=>", "->", "→", "—", "–", "是", "为", "為", "设为", "設為", "改成", "改为", "改為", "设置为",
    "設置為", "设成", "設成", "换成", "換成", "变更为", "變更為", "は", "が", "を", "も", "는", "은", "이", "가", "를", "을",
    "도", "로", "으로",
)
# "set the password to X", "пароль на X", "Passwort auf X": a connector only when a value follows;
# before a word ("the password to the db is X") it is one of the phrase's filler words.
_SOFT_CONNECTOR_WORDS = ("to", "na", "на", "auf", "zu", "op", "a", "en", "sur", "para", "per", "till", "til")
_CONNECTOR = lazy_compile(
    "(?:"
    + "|".join(escaped_form(mark) for mark in sorted(_CONNECTOR_MARKS, key=len, reverse=True))
    + r"|-(?=\s)|"
    + "|".join(r"(?<![^\W\d_])" + escaped_form(word) + r"(?![^\W\d_])" for word in (*_CONNECTOR_WORDS, *_SOFT_CONNECTOR_WORDS))
    + ")",
    re.IGNORECASE,
)
_SOFT_CONNECTORS = frozenset(_SOFT_CONNECTOR_WORDS)
# The characters a connector can start with (either case, or a backslash: escaped): the regex
# is tried only there.
_CONNECTOR_FIRST = frozenset(
    {"-", "\\"} | {form for item in (*_CONNECTOR_MARKS, *_CONNECTOR_WORDS, *_SOFT_CONNECTOR_WORDS) for form in (item[0], item[0].upper())}
)
# Scripts written without blanks between words: a run of their letters after the credential
# word is one filler ("密码已经", "비밀번호 변경"), up to a connector.
_UNSPACED_LETTER = lazy_compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
# A connector glued to the word before it can only be a mark of these scripts (a Latin word
# stands alone): a filler word of their letters, raw or escaped, ends before the first letter of
# one (a character class: one test per letter).
_GLUED_MARK_STARTS = sorted({mark[0] for mark in _CONNECTOR_MARKS if _UNSPACED_LETTER.match(mark)})
_GLUED_MARK = "(?:[" + "".join(_GLUED_MARK_STARTS) + r"]|\\+u(?:" + "|".join(f"{ord(char):04x}" for char in _GLUED_MARK_STARTS) + "))"
_UNSPACED_WORD = lazy_compile(_UNSPACED_LETTER.pattern + "(?:(?!" + _GLUED_MARK + ")" + _UNSPACED_LETTER.pattern + ")*")
# Short words a phrase may carry before its connector ("del servidor", "for the db", "de la base").
_FILLER = lazy_compile(r"[^\W\d_][\w'’\-]{0,15}")
# `「`, `『`, `“`, `‘`, `（`, `【`, `«` JSON-escaped.
_ESCAPED_OPENER = lazy_compile(r"\\+u(?:300c|300e|201c|2018|ff08|3010|00ab)", re.IGNORECASE)
_ESCAPED_LETTERS = lazy_compile(r"(?:[^\W\d_]*\\+u[0-9a-fA-F]{4})+[^\W\d_]*")
_ESCAPED_WORD = lazy_compile(r"(?:[^\W\d_]|\\+u[0-9a-fA-F]{4})(?:(?!" + _GLUED_MARK + r")(?:[^\W\d_]|\\+u[0-9a-fA-F]{4}))*")
_OPENERS = "\"'`「『“‘（(《【<>«"
_VALUE_CHARS = lazy_compile(r"[^\s\"'`「」『』“”‘’（）()。，、；！？《》【】«»<\\" + _CJK + r"]{1,256}")
_TRAILING = ".,;:!?)]}>"


def _prose_value(text: str, position: int) -> tuple[Span, bool] | None:
    """The value after a credential word at `position`: (its span, whether a connector came
    first). Skips blanks, openers, up to five short filler words (only before a connector)."""
    connector = False
    soft = False  # the connector was a soft one (`to`): a filler word may still follow
    fillers = 0
    end_limit = min(len(text), position + 120)
    while position < end_limit:
        char = text[position]
        if char in " \t\u3000":
            position += 1
            continue
        if text.startswith(("\\n", "\\t"), position) and connector:
            position += 2  # a JSON-escaped line break after a label (`password:\n X`)
            continue
        found = None if connector or char not in _CONNECTOR_FIRST else _CONNECTOR.match(text, position)
        if found is not None and found.end() > position:
            connector = True
            soft = found.group().lower() in _SOFT_CONNECTORS
            position = found.end()
            continue
        if char in _OPENERS:
            position += 1
            continue
        escaped_opener = _ESCAPED_OPENER.match(text, position)
        if escaped_opener is not None:
            position = escaped_opener.end()
            continue
        if not connector and _UNSPACED_LETTER.match(text, position):
            # CJK or Hangul letters, the same as the JSON-escaped ones below: one filler, up to
            # a connector mark (`密码已经改成 X`, `비밀번호 변경: X`).
            if fillers >= 5:
                return None
            fillers += 1
            position = _filler_end(text, position, _UNSPACED_WORD, end_limit)
            continue
        escaped = _ESCAPED_LETTERS.match(text, position)
        if escaped is not None:
            # JSON-escaped letters (`f\\u00fcr`): a filler word.
            if soft and fillers < 5:
                connector = soft = False  # `to` was a word of the phrase (`password to the db`)
            if connector or fillers >= 5:
                return None
            fillers += 1
            position = _filler_end(text, position, _ESCAPED_WORD, escaped.end())
            continue
        if text[position : position + len(REDACTED)].upper() == REDACTED:
            return None
        value = _VALUE_CHARS.match(text, position)
        if value is None:
            return None
        start, end = value.span()
        while end > start and text[end - 1] in _TRAILING and not _keeps_trailing(text[start:end]):
            closer = text[end - 1]
            opener = {")": "(", "]": "[", "}": "{", ">": "<"}.get(closer)
            if opener is not None and text.count(opener, start, end) >= text.count(closer, start, end):
                break  # a balanced bracket belongs to the value (`Optional[str]`: code)
            end -= 1
        token = text[start:end]
        raw_token = text[value.start() : value.end()]
        if not connector and fillers < 5 and raw_token.endswith((":", "：")) and _FILLER.fullmatch(raw_token[:-1]):
            # `de homologação: X`: the last filler word carries the label's colon.
            fillers += 1
            connector = True
            position = value.end()
            continue
        if soft and fillers < 5 and _FILLER.fullmatch(token) and not any(char.isdigit() for char in token):
            connector = soft = False  # `to` was a word of the phrase (`password to the db is X`)
        if not connector and fillers < 5 and _FILLER.fullmatch(token) and not any(char.isdigit() for char in token):
            # A word of the phrase ("de la base", "for the"), unless a connector already came.
            fillers += 1
            position = value.end()
            continue
        return ((start, end), connector) if end > start else None
    return None


def _filler_end(text: str, position: int, word: re.Pattern[str], limit: int) -> int:
    """The end of a filler word (`_UNSPACED_WORD` or `_ESCAPED_WORD`) starting at `position`:
    before `limit`, or before a connector glued to it (`已经改成`, `\\u6539\\u4e3a` "改为")."""
    found = word.match(text, position, limit)
    return found.end() if found is not None else position + 1


def _keeps_trailing(value: str) -> bool:
    """A password may end in `!` or `?`: kept when the rest already mixes kinds of character."""
    return value[-1] in "!?" and looks_like_password(value)


def _credential_value(value: str, connector: bool, password_word: bool) -> bool:
    """A password or token, not a word, number, path, version or placeholder. After a connector
    a value that mixes letters with digits or symbols is enough (`Gato_azul77`); a run of 6+
    digits only after a password word (`密码是 84213977`, a PIN); without a connector the value
    must be password-like or generated on its own."""
    if REDACTED in value or is_placeholder(value) or len(value) < 6:
        return False
    if password_word and connector and value.isdigit() and len(value) >= 6:
        return True
    if is_indirect(value):
        return False
    if _looks_generated(value):
        return True
    if not any(char.isdigit() for char in value):
        # `credentials: Optional[Block]`, `le mot de passe est oublié!`: code and prose; a typed
        # password holds a digit (a generated one is caught above).
        return False
    if looks_like_password(value) or looks_like_word_and_number(value):
        return True
    if not connector:
        return False
    # Letters and digits both (`Gato_azul77`), not a file name (`config2.yaml`).
    letters = sum(char.isalpha() for char in value)
    digits = sum(char.isdigit() for char in value)
    return letters > 0 and digits > 0 and not re.fullmatch(r"[\w\-]+\.[A-Za-z]{1,5}", value)


def _locate_phrase_value(match: re.Match[str], text: str) -> Span | None:
    if text[max(0, match.start() - 10) : match.start()].upper().endswith("[REDACTED_"):
        return None  # the word of the marker itself
    word = re.sub(r"\s+", " ", text[match.start() : match.end()].lower())
    found = _prose_value(text, match.end())
    if found is not None:
        (start, end), connector = found
        assigned = re.search(r"[=:][ \t]*\\*[\"']?\Z", text[match.end() : start]) is not None
        if assigned and word.isascii() and end - start < 8:
            # `password = hunter2`: Codex's assignment rule and its 8-character floor (spec 1.9).
            return None
        if _credential_value(text[start:end], connector, word in _PASSWORD_WORDS):
            return start, end
    return _value_before(match, text)


def _value_before(match: re.Match[str], text: str) -> Span | None:
    """The value before `as the password` (`VALUE_AS_PHRASES`): "use X as the password", "X als
    Passwort", "X como contraseña". Nothing says it is one but its place, so it must look like a
    password on its own (no connector)."""
    found = _VALUE_AS.search(text, max(0, match.start() - 160), match.start())
    if found is None:
        return None
    start, end = found.span("value")
    while end > start and text[end - 1] in _TRAILING and not _keeps_trailing(text[start:end]):
        end -= 1
    return (start, end) if end > start and _credential_value(text[start:end], False, True) else None


# The value, blanks, a phrase of `VALUE_AS_PHRASES`, blanks, right before the password word.
_VALUE_AS = lazy_compile(
    r"(?:(?<=\\[nrt])|(?<![^\s\"'`(\[]))(?P<value>[^\s\"'`\\]{6,128})[ \t]{1,3}(?:"
    + "|".join(sorted((escaped_form(p) for group in VALUE_AS_PHRASES.values() for p in group), key=len, reverse=True))
    + r")[ \t]{1,3}\Z",
    re.IGNORECASE,
)


def _login_pattern() -> str:
    """`LOGIN_PHRASES` as one pattern over lower-cased text: a log-in verb, up to three words
    (`log in to grafana`), the `as` word, a user name, the `with` word, up to the value."""

    def alternation(key: str) -> str:
        words = {word for group in LOGIN_PHRASES.values() for word in group[key]}
        return "(?:" + "|".join(sorted((escaped_form(word) for word in words), key=len, reverse=True)) + ")"

    return (
        r"(?:(?<=\\[nrt])|(?<![\w\-]))" + alternation("verbs") + r"(?:[ \t]{1,3}[^\s\"'\\]{1,30}){0,3}?[ \t]{1,3}"
        + alternation("as")
        + r"[ \t]{1,3}\\*[\"']?[^\s,;\"'\\]{1,64}\\*[\"']?,?[ \t]{1,3}"
        + alternation("with")
        + r"[ \t]{1,3}"
    )


def _locate_login_value(match: re.Match[str], text: str) -> Span | None:
    """The value after "log in as <user> with": nothing names it, so it must look like a
    password on its own (`Kestrel#3318`, `Walnut-77104`; not `SSO`, `your own key`)."""
    token = _COMMAND_TOKEN.match(text, match.end())
    if token is None:
        return None
    start, end = token.span(1)
    while end > start and text[end - 1] in _TRAILING and not _keeps_trailing(text[start:end]):
        end -= 1
    return (start, end) if end > start and _credential_value(text[start:end], False, True) else None


_LOGIN_VERBS = tuple(sorted({verb for group in LOGIN_PHRASES.values() for verb in group["verbs"]}))

# Verbs after which a command takes a credential as a positional argument.
_CREDENTIAL_VERBS = (
    "login", "log-in", "signin", "sign-in", "auth", "authenticate", "authtoken", "add-authtoken", "set-token",
    "settoken", "install", "register", "unlock", "unseal", "connect", "attach", "enroll", "activate", "join",
)
# Verbs whose first positional argument is the secret a person typed, no user name before it
# (`bw unlock <master password>`, `rbw unlock`, `vault operator unseal <key>`).
_UNLOCK_VERBS = frozenset(("unlock", "unseal"))
_COMMAND_TOKEN = lazy_compile(r"\\*[\"']?([^\s\"'\\]{1,512})\\*[\"']?")


def _locate_verb_arguments(match: re.Match[str], text: str) -> list[Span]:
    """The positional arguments after a credential verb, on the same command line: a generated
    one in the first two places, a password-like one in the second (`login user password`), or
    in the first after a verb that takes no user (`unlock password`).
    Options (`--force`, `-u name`) are skipped; an option's own value is not an argument here."""
    position = match.end()
    spans: list[Span] = []
    place = 0
    typed_place = 0 if text[match.start() : match.end()].lower() in _UNLOCK_VERBS else 1
    limit = min(len(text), position + 600)
    while position < limit and place < 2:
        blank = re.compile(r"[ \t]+").match(text, position)
        if blank is None:
            break
        position = blank.end()
        token = _COMMAND_TOKEN.match(text, position)
        if token is None:
            break
        value = token.group(1)
        position = token.end()
        if value.startswith("-"):
            continue  # an option; `-u name` and `--flag=value` belong to other rules
        if value in ("|", "&&", ";", "<", ">", "<<<") or value.startswith(("$(", "|")):
            break
        start, end = token.span(1)
        generated = _looks_generated(value) or _looks_uuid_token(value) or looks_like_random_base64(value)
        typed = place == typed_place and (looks_like_password(value) or _credential_value(value, True, True))
        if REDACTED not in value and not is_placeholder(value) and (generated or typed):
            spans.append((start, end))
        place += 1
    return spans


_UUID = lazy_compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _looks_uuid_token(value: str) -> bool:
    """A UUID in a credential position is an API key (`snyk auth <uuid>`), not an id."""
    return _UUID.fullmatch(value) is not None


# A code starts at a word start, or right after a JSON escape (`\\n8f3k-2mzp`), never at its `n`.
# Groups are joined by `-`, or by single blanks when they are all digits (`8410 2275`,
# `123 456 789`: how authenticator apps print them).
_CODE_TOKEN = lazy_compile(
    r"(?:(?<=\\[nrt])|(?<![\w\-\\]))(\d{3,8}(?: \d{3,8}){1,3}(?![\w\-])|[A-Za-z0-9]{3,12}(?:-[A-Za-z0-9]{3,12}){0,11}(?![\w\-]))"
)
_BLANK_LINE = lazy_compile(r"(?:\r?\n|\\+n)[ \t]*(?:\r?\n|\\+n)")


def _is_code(token: str) -> bool:
    """A one-time code: 6+ characters of letters and digits with a digit (`8f3k-2mzp`,
    `47213958`, `8410 2275`), or upper-case groups (`ABCD-EFGH`); not a word, not a date or
    version."""
    body = token.replace("-", "").replace(" ", "")
    if len(body) < 6 or re.fullmatch(r"\d{4}-\d{2}(?:-\d{2})?|v?\d+(?:\.\d+)+", token):
        return False
    if any(char.isdigit() for char in body):
        return any(char.isalpha() for char in body) or len(body) >= 6
    return "-" in token and token.isupper()


def _locate_recovery_codes(match: re.Match[str], text: str) -> list[Span]:
    """Code-like tokens after a recovery-codes phrase, up to a blank line or 1,500 characters."""
    start = match.end()
    end = min(len(text), start + 1500)
    blank = _BLANK_LINE.search(text, start, end)
    if blank is not None and blank.start() > start + 40:
        end = blank.start()
    spans = []
    for token in _CODE_TOKEN.finditer(text, start, end):
        if _is_code(token.group(1)) and not text.startswith(REDACTED, token.start()):
            spans.append(token.span(1))
    # One code-like word after the phrase is prose (`stored in 1Password`, `JIRA-4412`); codes come
    # as a list, or as one recovery key of four or more groups (`Q7RM-2KXP-9WNB-4HTD-6JFV-8LCZ`).
    if len(spans) == 1 and not _is_grouped_key(text[spans[0][0] : spans[0][1]]):
        return []
    return spans


def _is_grouped_key(token: str) -> bool:
    """A recovery key printed in groups: four or more groups of 4 to 8 letters and digits, with
    both kinds, joined by `-` (not a ticket id, `ABCD-1234`, or a date)."""
    groups = token.split("-")
    body = "".join(groups)
    return (
        len(groups) >= 4
        and all(4 <= len(group) <= 8 for group in groups)
        and any(char.isdigit() for char in body)
        and any(char.isalpha() for char in body)
    )


def _phrase_starts(phrases: dict[str, tuple[str, ...]]) -> Callable[[str], Iterator[int]]:
    """Where one of `phrases` can start in lower-cased text, ascending: one Aho-Corasick pass
    (an alternation of ~150 phrases tried at every position cost 10 s per MB). Keys: each
    phrase as written and, when it is not ASCII, JSON-escaped at the usual depths (`contrase\\u00f1a`)."""
    keys: set[str] = set()
    for group in phrases.values():
        for phrase in group:
            keys.add(phrase)
            if not phrase.isascii():
                # JSON-escaped once, twice, three times (1, 2, 4 or 8 backslashes per letter).
                for slashes in (1, 2, 4, 8):
                    for form in {phrase, phrase.capitalize()}:
                        keys.add("".join(char if char.isascii() else "\\" * slashes + f"u{ord(char):04x}" for char in form))

    @cache
    def automaton() -> ahocorasick.Automaton:
        built = ahocorasick.Automaton()
        for key in keys:
            built.add_word(key, len(key))
        built.make_automaton()
        return built

    def starts(lowered: str) -> Iterator[int]:
        found = set()
        for end, length in automaton().iter(lowered):
            start = end - length + 1
            while start > 0 and lowered[start - 1] == "\\":
                start -= 1  # the backslashes of an escaped letter belong to the match
            found.add(start)
        return iter(sorted(found))

    return starts


def _hints(phrases: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(sorted({phrase.split(" ")[0] for group in phrases.values() for phrase in group}))


PROSE_SHAPES: tuple[Rule, ...] = (
    Rule(
        "credential_phrase",
        _phrase_pattern({language: PASSWORD_PHRASES[language] + CREDENTIAL_PHRASES[language] for language in PASSWORD_PHRASES}),
        (REDACTED,),
        # `\\u`: the non-ASCII words JSON-escaped (`escaped_form`).
        (*_hints(PASSWORD_PHRASES), *_hints(CREDENTIAL_PHRASES), "\\u"),
        case_insensitive=True,
        locate=_locate_phrase_value,
        starts=_phrase_starts({language: PASSWORD_PHRASES[language] + CREDENTIAL_PHRASES[language] for language in PASSWORD_PHRASES}),
    ),
    Rule(
        "login_as_user",
        _login_pattern(),
        (REDACTED,),
        # The whole verb (`log in`, not `log`: that one is in every logger call), or an escape.
        (*_LOGIN_VERBS, "\\u"),
        case_insensitive=True,
        locate=_locate_login_value,
        starts=_phrase_starts({"": _LOGIN_VERBS}),
    ),
    Rule(
        "credential_argument",
        # After a command word (`ngrok authtoken`), or ending a tool's name (`mega-login`).
        r"(?:(?<=[\w.\-:]\s)(?<![\w\-])|(?<=[a-z0-9]-))(?:" + "|".join(re.escape(verb) for verb in _CREDENTIAL_VERBS) + r")(?![\w\-])",
        (REDACTED,),
        ("login", "log-in", "sign", "auth", "token", "install", "register", "unlock", "unseal", "connect", "attach", "enroll", "activate", "join"),
        case_insensitive=True,
        locate_all=_locate_verb_arguments,
        starts=_phrase_starts({"": _CREDENTIAL_VERBS}),
    ),
    PASSWORD_IN_PROSE,
    Rule(
        "recovery_codes",
        _phrase_pattern(RECOVERY_PHRASES),
        (REDACTED,),
        (*_hints(RECOVERY_PHRASES), "\\u"),
        case_insensitive=True,
        locate_all=_locate_recovery_codes,
        starts=_phrase_starts(RECOVERY_PHRASES),
    ),
)
