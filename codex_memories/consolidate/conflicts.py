"""Conflicts between memory entries: a later statement on the same subject replaces an earlier one.

Contract:
- `find_conflicts(entries)` takes `DatedEntry`s (an entry's text, its scope group, where it came
  from and when the user said it) and returns one `Conflict` per replaced entry, with the winner
  (the newer entry: later `updated_at`, the thread's time, then later `position`) and the loser.
  Each loser is named once, against the newest entry that replaces it; an entry that lost replaces
  nothing. Entries are compared only within one `group`: the caller decides what a group is (the
  consolidators use the scope: one project key, or the user level; the read path uses everything
  one session is served).
- Two entries are about the same subject, and the newer one wins, when (any language where a
  structure is language-independent, small multilingual cue lists where it is not):
  - one asks for what the other forbids ("use httpx, not requests", "don't use Y", 不要用 Y);
  - the newer one says a thing is no longer used ("X instead of Y", "Y ではなく X", "用 X 而不是
    Y", "X en lugar de Y", "statt Y", "switch from Y to X", "no longer Y", "not Y anymore", "not Y
    but X", "Y -> X") and the older one asked for it, set it, or works with it ("format with
    black"; "con", "mit", "avec", "par", "через"; or a code-like token), the version said with
    the name included ("instead of Node 18");
  - both ask for different members of one family of alternatives (pnpm / npm / bun; tabs /
    spaces), whatever the verb's language ("use", "usa", "verwende", "utilise", "を使う", "用");
  - both set one slot to different values. A slot is derived from the statement's structure, not
    from a list of tools: a named version (`Node 18`, `python3.12`, `node@20`); an attribute cue
    (port, profile, alias, region, version, package manager, naming, in several languages) with
    its value (the code-like token next to it: digits, `-_./@:`, backticks; a port only digits; a
    naming convention the pattern next to the verb, `wl/<ticket>`, its entity what is named);
    `KEY=value` (a key naming an attribute, `AWS_PROFILE=x`, is that attribute); a configuration
    line `key: value`; "use X for Y" (the slot is Y); "Y is X" / "Y: X" / "Y should be X" with a
    code-like X (or an ASCII name inside CJK text, "默认分支是 master"), and "Y is N" also sets
    Y's version; "change / set / bump / cambiamos / trocamos Y to X", "Y 换成 X"; "keep Y at N".
    A slot is qualified by its entity, the statement's other plain ASCII words (stop words and
    scope words such as "every repository" removed): two statements set the same slot when
    their entities overlap (for attribute cues, also when either names none: "ポートは 5433" and
    "the port is 5432", unless both name only a CJK thing before the cue and those differ:
    前端端口 / 后端端口); "use X for Y" and "Y is X" need most of Y's words in common. Two
    purposes ("to read invoices" / "to deploy") make two subjects.
  - the same words around another code-like value ("sign commits with the key ABC123" / "...
    DEF456"; two commands in the extractor's "`X` succeeded" template are two things);
  - the newer statement says something changed ("moved", "now", "from now on", 换成, に移した,
    이제, ...) and names one value of a shape the older one named once (a port, also inside a URL;
    a URL, a bucket, a host, a path, a backticked name), on a subject they share a word of.
    Without the change said, two values of one shape are two things ("logs go to s3://a",
    "reports go to s3://b"); an attribute's entities must then overlap more.
- A temporary entry (a typed entry with an `expires` date: a one-off or a short-lived rule, as
  extraction marks it, `typed_entries`) never replaces a standing entry; a standing entry does
  replace a temporary one.
- The heuristic consolidator (`consolidate.heuristic.find_input_conflicts`) builds the entries
  from `raw_memories.md` (preferences and knowledge, grouped by scope), phase 2 lists the same
  conflicts in its run artifact and in the model consolidator's prompt, and the read path
  (`read.injection`) drops what lost among the lines one session is served.

Pure: regular expressions over text, no I/O. Deterministic. Only entries that share a key (a value,
a name, a slot) are compared, so a large folder is not compared pair by pair.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from datetime import UTC, datetime

from codex_memories.typed_entries import split_entry, word_stem

# Alternatives a project picks one of: asking for two of them is a contradiction. Only one
# source of subjects among several (slots below need no list).
_FAMILIES: tuple[frozenset[str], ...] = (
    frozenset({"tabs", "spaces"}),
    frozenset({"requests", "httpx", "aiohttp", "urllib3"}),
    frozenset({"npm", "yarn", "pnpm", "bun"}),
    frozenset({"pip", "poetry", "uv", "pipenv", "conda", "pdm"}),
    frozenset({"pytest", "unittest", "nose"}),
    frozenset({"jest", "vitest", "mocha"}),
    frozenset({"black", "yapf", "autopep8"}),
    frozenset({"rebase", "merge"}),
    frozenset({"single-quotes", "double-quotes"}),
    frozenset({"camelcase", "snake_case"}),
)
_SYNONYMS = {
    "tab": "tabs", "制表符": "tabs", "空格": "spaces", "space": "spaces",
    "single": "single-quotes", "double": "double-quotes", "merges": "merge", "rebasing": "rebase",
    "node.js": "node", "nodejs": "node", "db": "database", "postgresql": "postgres",
}
_STOPWORDS = frozenset(
    # English
    "the a an our my your only always just it them this that these those is are was be been being to of in on at by "
    "for from with and or but not no now here there then than as so if when while also please all any every each "
    "use uses used using run runs running start starts set sets keep keeps make makes go goes do does should must "
    "will would can could need needs want we you they he she i me us let lets via into onto per instead rather over "
    "new old latest current default prefer prefers switch switched moved move migrate migrated anymore longer again "
    "listen listens listening serve serves served point points live lives sits work works working our its their "
    # Spanish, Portuguese, French, German, Italian function words and verbs for "use"
    "el la los las un una unos unas de del al en y o es son que para por con sin su sus lo le les se ya ahora siempre "
    "usa usar usamos usen utiliza utilizar utilizamos o os um uma da do das dos em no na nos nas com sem pra ao "
    "le les des du un une et ou est sont pour avec sans sur dans au aux ce cette utilise utilisez utiliser toujours "
    "der die das den dem des ein eine einen und oder ist sind mit ohne auf im zu zum zur für fur verwende verwenden "
    "benutze benutzen nutze nutzen immer jetzt nicht mehr statt anstatt kein keine von".split()
)
# "for every repository", "en todos los repos": where a rule applies, not what it is about.
_SCOPE_WORDS = frozenset(
    "repo repos repository repositories project projects codebase codebases everywhere anywhere machine machines "
    "todos todas cada repositorio repositorios proyecto proyectos projeto projetos repositório repositórios "
    "tous toutes chaque dépôt projet projets alle allen jedes jedem projekt projekte überall".split()
)
# Attribute cues: an attribute is a slot whatever the entity it belongs to.
_ATTRIBUTE_CUES: dict[str, str] = {
    "port": r"\bports?\b|\bpuertos?\b|\bportas?\b|ポート|端口|порт\w*|포트",
    "profile": r"\bprofiles?\b|\bperfil(?:es)?\b|\bprofil\b|プロファイル|配置文件|профил\w*|프로필",
    "alias": r"\balias(?:es)?\b|エイリアス|别名|別名|псевдоним\w*|별칭",
    "region": r"\bregions?\b|\bregión\b|\brégion\b|\bregião\b|リージョン|区域|регион\w*|리전",
    "version": r"\bversions?\b|\bversión\b|\bversão\b|バージョン|版本|верси\w*|버전",
    "registry": r"\bregistr(?:y|ies)\b|\bregistro\b|\bregistre\b|レジストリ|镜像仓库|реестр\w*|레지스트리",
    "package manager": (
        r"package[ -]manager|gestor de paquetes|gerenciador de pacotes|gestionnaire de paquets|paketmanager"
        r"|パッケージ(?:マネージャ|管理)\w*|包管理\w*|менеджер\w* пакетов|패키지 매니저"
    ),
    # A naming convention ("name branches wl/<ticket>", "Branches heißen dev/wl-<ticket>"): the
    # value is the code-like pattern next to the verb, the entity what is named.
    "naming": (
        r"\bnam(?:e|ed|ing)\b|\bcall(?:ed)?\b(?=[^.;\n]{0,30}[<{/_-])|\bhei(?:ß|ss)(?:en|t)\b|\bbenenn\w*|\bse\s+llaman?\b"
        r"|\bnombr\w+|\bs'appell\w+|\bnomm\w+|\bchamad[ao]s?\b|\bnome(?:ie|ar)\w*|命名|名前|이름|называ\w*|назван\w*"
    ),
}
_CUE = {name: re.compile(pattern, re.I) for name, pattern in _ATTRIBUTE_CUES.items()}
# Lower-case text each cue needs, checked before its pattern runs (most statements hold none).
_CUE_STEMS = {
    "port": ("port", "puert", "ポート", "端口", "порт", "포트"),
    "profile": ("profil", "perfil", "プロファイル", "配置文件", "профил", "프로필"),
    "alias": ("alias", "エイリアス", "别名", "別名", "псевдоним", "별칭"),
    "region": ("region", "región", "région", "região", "リージョン", "区域", "регион", "리전"),
    "version": ("version", "versión", "versão", "バージョン", "版本", "верси", "버전"),
    "registry": ("registr", "registre", "レジストリ", "镜像仓库", "реестр", "레지스트리"),
    "package manager": ("package", "paquet", "pacote", "paketmanager", "パッケージ", "包管理", "пакет", "패키지"),
    "naming": ("nam", "call", "heiß", "heiss", "benenn", "llam", "nombr", "appel", "nomm", "chamad", "nome", "命名", "名前", "이름", "назва", "называ"),
}
_CUE_WORDS = frozenset({"port", "ports", "profile", "profiles", "alias", "aliases", "region", "regions", "version", "versions",
                        "registry", "registries", "registro", "registre",
                        "package", "manager", "puerto", "perfil", "porta", "profil", "versión", "versão", "región",
                        "name", "named", "naming", "call", "called", "heißen", "heisst", "heißt"})
_CUE_WINDOW = 40
# A naming pattern: one token holding a placeholder or a separator ("wl/<ticket>", "hf-{id}", `x_*`).
_NAMING_PATTERN = re.compile(r"`[^`\n]+`|[^\s,;]*(?:<[^>\s]+>|\{[^}\s]+\}|\*)[^\s,;]*|[A-Za-z0-9]+[/_][^\s,;]*")

# Python's `\w` is Unicode: "5433です" would be one token. Technical values are ASCII runs; a
# Latin word is bounded by any Latin letter (so "índice" is not "ndice"), a run next to CJK text is
# a word of its own ("開発DBの").
_LATIN = "A-Za-z\u00c0-\u024f"
_ASCII_TOKEN = re.compile(r"`([^`\n]{1,80})`|([A-Za-z0-9][A-Za-z0-9_.@/:+-]*[A-Za-z0-9_@/+-]|[A-Za-z0-9])")
_PLAIN_WORD = re.compile(rf"(?<![{_LATIN}0-9_'-])[A-Za-z][A-Za-z'-]*[A-Za-z](?![{_LATIN}0-9_'-])")
# A named version: `Node 18`, `python3.12`, `node@20`, `Go 1.22`, `Terraform v1.7`.
_NAMED_VERSION = re.compile(r"(?<![A-Za-z0-9_.@/-])([A-Za-z][A-Za-z.+-]*[A-Za-z])\s?(?:@|v|\s)?\s?(\d+(?:\.(?:\d+|x)){0,2})(?![A-Za-z0-9_]|\.\d|[:/])")
# Words a number follows without being their version ("issue 34", "line 100", "wait 30").
_NOT_VERSIONED = frozenset(
    "issue issues pr prs step steps task tasks line lines times minutes seconds hours days weeks months years top max min "
    "chars characters columns items files retries attempts workers threads page pages ticket tickets at to in on of for by "
    "and or is are was be the than about under below above over up down with from every each after before since port "
    "ports puerto porta version versions the exit code codes sprint round rounds level phase stage http utf sha base".split()
)
_VERSION_NUMBER = re.compile(r"\d+(?:\.(?:\d+|x)){0,2}")
_VERSION_AFTER = re.compile(r"`?\s*v?(\d+(?:\.(?:\d+|x)){0,2})\b")
_KEY_VALUE = re.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{3,})\s*=\s*`?([A-Za-z0-9_.@/:+-]+)")
# The copula and the value after it; the subject is the text before it (`_copula_subject`): a
# lazy subject group in the pattern would be tried from every position of every statement.
_COPULA = re.compile(
    r"(?:\b(?:is|are|es|son|est|sont|ist|sind|é|são|should be|must be|has to be|needs to be|debe ser|deve ser|doit être|muss|soll)(?:\s+(?:now|ahora|jetzt|maintenant|agora))?\b|[:=：→]|->|は|是|为|為)\s*(?P<value>`[^`\n]{1,80}`|[A-Za-z0-9][A-Za-z0-9_.@/:+-]*)",
    re.I,
)
_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]")
_LOCAL_NAME = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]{2,12}$")
_SUBJECT_END = re.compile(r"[.;:!?。！？\n=]")
# Words that say a value changed, beside `_CHANGE`'s "change Y to X" forms.
_CHANGE_MARKER = re.compile(
    r"\b(?:moved|switched|migrated|changed|replaced|now|no longer|anymore|going forward|ahora|agora|daqui pra frente|daqui para a frente"
    r"|a partir de (?:agora|ahora|hoy|hoje)|desde ahora|maintenant|désormais|dorénavant|jetzt|nun|ab sofort|künftig|теперь|отныне"
    r"|перешл\w*|перешёл|dead|gone|retired|deprecated|killed|correction|actually|movimos|subimos|cambiamos|pasamos|migramos"
    r"|mudamos|trocamos|morreu|desativad[oa]|umgezogen|umgestellt|gewechselt|korrektur|eigentlich|en realidad|na verdade|en fait"
    r"|на самом деле|поправка|с этого момента|больше не)\b"
    r"|现在|以后|今后|改成|换成|換成|改用|不用了|没了|今は|今後|これから|になった|移した|変えた|切り替えた|に統一|で統一|이제|앞으로|변경"
    r"|바꿨|바뀌었|없어졌|잘못 말",
    re.IGNORECASE,
)
# "change Y to X", "cambiamos Y a X", "Y 换成 X": Y is the slot, X its new value.
_CHANGE = (
    re.compile(
        r"\b(?:change[ds]?|changing|switch(?:ed)?|set|bump(?:ed)?|mov(?:e|ed)|updat(?:e|ed)|upgrad(?:e|ed)|point(?:ed)?"
        r"|cambi[ao](?:mos)?|cambiar|trocamos|trocar|troca|mudamos|mudar|ändern|änderte|geändert|setz(?:e|en)?|stell(?:e|en|ten)"
        r"|chang[eé]|changez|passé|passez|mets|mettez)\s+(?P<subject>[^.,;:!?()\n]{2,60}?)\s+"
        r"(?:to|a|para|pra|pour|auf|zu|en|à|sur)\s+(?P<value>`[^`\n]+`|[A-Za-z0-9][A-Za-z0-9_.@/:+-]*)",
        re.I,
    ),
    re.compile(r"(?P<subject>[\u3040-\u30ff\u4e00-\u9fff]{2,12}?)\s*(?:换成|改成|改为|变更为|切换到|换到|を|は)?\s*(?:换成|改成|改为|变更为|切换到|换到)\s*(?P<value>[A-Za-z0-9][A-Za-z0-9_.@/:+-]*)"),
)
# A configuration line: `timezone: UTC`, `region = us-west-2`, whatever the value looks like.
_CONFIG_LINE = re.compile(r"^\s*(?P<key>[A-Za-z_][A-Za-z0-9_.-]{1,40})\s*[:=]\s*`?(?P<value>[^\s`]{1,80})`?\s*$")
_USE_FOR = (
    re.compile(r"\b(?:use|using|prefer|run)\s+(?P<value>`[^`\n]+`|[A-Za-z0-9_.@/:+-]+)\s+(?:for|to)\s+(?P<subject>[^.,;:!?()\n]{2,60})", re.I),
    re.compile(r"\b(?:usa|usar|usamos|utiliza|utilizar|use)\s+(?P<value>`[^`\n]+`|[A-Za-z0-9_.@/:+-]+)\s+(?:para|pra)\s+(?P<subject>[^.,;:!?()\n]{2,60})", re.I),
    re.compile(r"\b(?:verwende|verwenden|benutze|nutze)\s+(?P<value>`[^`\n]+`|[A-Za-z0-9_.@/:+-]+)\s+(?:für|fur)\s+(?P<subject>[^.,;:!?()\n]{2,60})", re.I),
    re.compile(r"\b(?:utilise|utilisez|utiliser)\s+(?P<value>`[^`\n]+`|[A-Za-z0-9_.@/:+-]+)\s+pour\s+(?P<subject>[^.,;:!?()\n]{2,60})", re.I),
)

_WORD = r"`?([A-Za-z0-9_.+#/@-]+|[\u4e00-\u9fff]{1,4})`?"
_ARTICLES = r"(?:(?:the|a|an|el|la|los|las|le|les|der|die|das|den|o|a|os|as)\s+)?"
# Prohibitions: they contradict an older request for the same thing.
_NEGATED = (
    re.compile(r"\b(?:don'?t|do not|never|stop|avoid)\s+(?:use|using|add|call|run)?\s*" + _ARTICLES + _WORD, re.I),
    re.compile(r",\s*not\s+" + _ARTICLES + _WORD, re.I),
    re.compile(r"\b(?:rather than|over)\s+" + _ARTICLES + _WORD, re.I),
    re.compile(r"\b(?:no uses|não use|não usar|не используй\w*)\s+" + _ARTICLES + _WORD, re.I),
    re.compile(r"(?:不要用|不要使用|别用|禁止使用|禁止用|不用|不要)\s*" + _WORD),
)
# Replacements: they say the thing was used before and is not any more, so an older statement
# that merely mentions it ("format with black" after "we no longer use black") is replaced.
_REPLACED = (
    re.compile(r"\bno longer\s+(?:use|using|run|need)?\s*" + _ARTICLES + _WORD, re.I),
    re.compile(r"\b(?:instead of|in place of|replacing)\s+" + _ARTICLES + _WORD, re.I),
    re.compile(r"\b(?:en lugar de|en vez de|em vez de|ao invés de|au lieu de|plutôt que|statt|anstatt|anstelle von|вместо)\s+" + _ARTICLES + _WORD, re.I),
    re.compile(r"\b(?:ya no (?:uses|usamos|usar|se usa)|n'utilise plus|não usamos mais|nicht mehr)\s+" + _ARTICLES + _WORD, re.I),
    re.compile(r"\b(?:switch(?:ed)?|mov(?:e|ed)|migrat(?:e|ed)|go|went|chang(?:e|ed))\s+(?:\w+\s+)?from\s+" + _ARTICLES + _WORD, re.I),
    re.compile(r"\b(?:replace|replaced)\s+" + _ARTICLES + _WORD + r"\s+(?:with|by)\b", re.I),
    re.compile(r"\b(?:cambia(?:mos)?|pasamos|migramos|wechsel\w*|passamos|passé|passe)\s+de\s+" + _ARTICLES + _WORD, re.I),
    re.compile(r"\bvon\s+" + _WORD + r"\s+(?:auf|zu)\b", re.I),
    re.compile(r"(?<!\w)(?:с|со)\s+" + _WORD + r"\s+на\b", re.I),
    # The dropped thing first: "stern ya no", "yarn nicht mehr", "black, no more", "jest はもう".
    re.compile(_WORD + r"[\s,—-]+(?:ya no|no more|not any ?more|nicht mehr|n'est plus|não mais|больше не)\b", re.I),
    re.compile(r"\bnot\s+" + _ARTICLES + _WORD + r"\s+(?:anymore|any more|any longer)\b", re.I),
    # "not X but Y" in several languages: X was the old value.
    re.compile(r"\b(?:not|no|não|pas|nicht|не)\s+" + _ARTICLES + _WORD + r"(?:\s+v?\d[\d.]*)?[\s,]+(?:but|sino|mas|mais|sondern|а)\b", re.I),
    re.compile(r"(?:不是|不再是)\s*" + _WORD + r"\s*(?:了|，|,|而是)"),
    # "A -> B", "A → B", "A => B": language-independent.
    re.compile(r"`?([A-Za-z0-9_.+#/@-]+)`?\s*(?:->|→|=>)\s*`?[A-Za-z0-9_.+#/@-]+"),
    re.compile(r"(?:不再用|不再使用|而不是|代替)\s*" + _WORD),
    # Japanese and Korean put the replaced thing first: "npm ではなく pnpm", "npm 대신 pnpm".
    re.compile(r"`?([A-Za-z0-9_.+#/@-]+)`?\s*(?:ではなく|じゃなくて|じゃなく|の代わりに|はもう使わない|대신)"),
)
# Literal text without which a pattern cannot match (its cost is paid only where it can).
_SUFFIX_MARKERS = (
    "ではなく", "じゃな", "の代わりに", "使わない", "대신", "を使", "で統一", "に統一", "に変更", "に切り替", "사용", "통일",
    "ya no", "no more", "not any", "nicht mehr", "n'est plus", "não mais", "больше не",
)
_ARROWS = ("->", "→", "=>")
_ASKED = (
    re.compile(r"\b(?:use|using|prefer|switch to|switched to|stick to|stick with|indent with|move to|moved to|migrate to|migrated to)\s+" + _ARTICLES + r"(?:only\s+)?" + _WORD, re.I),
    re.compile(r"\b(?:usa|usar|usamos|usen|utiliza|utilizar|utilizamos|prefiero|prefiere|preferimos|prefira|prefiro|preferimos|uso)\s+" + _ARTICLES + _WORD, re.I),
    re.compile(r"\b(?:verwende|verwenden|benutze|benutzen|nutze|nutzen|bevorzuge|bevorzugen)\s+" + _ARTICLES + _WORD, re.I),
    re.compile(r"(?<![\w])(?:utilise|utilisez|utiliser|utilisons|préfère|préférons|preferez|préférez|passe à|passez à)\s+" + _ARTICLES + _WORD, re.I),
    re.compile(r"`?[A-Za-z0-9_.+#/@-]+`?\s*(?:->|→|=>)\s*`?([A-Za-z0-9_.+#/@-]+)"),
    re.compile(r"\b(?:de|from)\s+`?[\w.+#/@-]+`?\s+(?:a|para|to)\s+" + _WORD, re.I),
    re.compile(r"\bvon\s+`?[\w.+#/@-]+`?\s+(?:auf|zu)\s+" + _WORD, re.I),
    re.compile(r"\b(?:используй\w*|переходим на|предпочитаю|предпочитаем)\s+" + _WORD, re.I),
    # What things are now: "now it's pnpm", "agora é pnpm", "ahora usamos kubectl", "теперь ruff".
    re.compile(
        r"\b(?:now(?:\s+it'?s|\s+we\s+use)?|it'?s\s+now|agora(?:\s+é|\s+usamos)?|ahora(?:\s+es|\s+usamos)?|maintenant(?:\s+c'est|\s+on\s+utilise)?"
        r"|jetzt(?:\s+ist\s+es|\s+nehmen\s+wir)?|теперь)\s+" + _ARTICLES + _WORD,
        re.I,
    ),
    re.compile(r"(?:统一用|统一使用|优先用|优先使用|必须用|都用|改用|换成|用)\s*" + _WORD),
    re.compile(r"`?([A-Za-z0-9_.+#/@-]+)`?\s*(?:を使|で統一|に統一|に変更|に切り替|를 사용|을 사용|로 통일|으로 통일|사용)"),
)
_TOOL_POSITION = re.compile(r"\b(?:with|via|using|through|con|mit|avec|com|par|por|über|через)\s+" + _ARTICLES + _WORD, re.I)
_NEEDS: dict[re.Pattern[str], tuple[str, ...]] = {
    pattern: (_ARROWS if "->" in pattern.pattern else _SUFFIX_MARKERS)
    for pattern in (*_REPLACED, *_ASKED)
    if pattern.pattern.startswith("`?[") or pattern.pattern.startswith("`?(")
}
_PURPOSE = re.compile(r"(?:\bto|\bfor|\bpara|\bpour|\bfür|\bum)\s+((?:[A-Za-z\u00c0-\u024f]+\s*){1,3})", re.I)
_SETTING = (
    re.compile(r"\b(?:keep|set|cap|limit)\s+(?:the\s+|each\s+|every\s+)?([a-z][\w -]{1,40}?)\s+(?:at|to|under|below)\s+([\w.%]+)", re.I),
    re.compile(r"([\u4e00-\u9fff\w]{1,12}?)\s*(?:保持在|设为|不超过|控制在)\s*([\w.%]+)"),
)


@dataclass(frozen=True)
class DatedEntry:
    text: str
    group: str
    source: str
    updated_at: str
    position: int

    @property
    def order(self) -> tuple[datetime, int]:
        return parse_time(self.updated_at), self.position


@dataclass(frozen=True)
class Conflict:
    subject: str
    winner: DatedEntry
    loser: DatedEntry


@dataclass(frozen=True)
class Slot:
    """What a statement sets: an attribute (`port`, `version`, `for`, `is`, `KEY`), the entity it
    belongs to (plain words), and the value."""

    attribute: str
    entity: frozenset[str]
    value: str
    # The CJK name right before an attribute cue ("前端" in 前端端口): compared only when neither
    # statement names an ASCII entity, so "開発DBのポート" still replaces "the dev database port".
    local_name: str = ""

    @property
    def label(self) -> str:
        return " ".join([*sorted(self.entity), self.attribute]).strip()


@dataclass(frozen=True)
class _Claims:
    asked: frozenset[str]
    forbidden: frozenset[str]
    settings: dict[str, str]
    slots: tuple[Slot, ...]
    temporary: bool
    replaced: frozenset[str] = frozenset()  # what the statement says is no longer used
    mentions: frozenset[str] = frozenset()  # the tools and code-like tokens it names
    purpose: frozenset[str] = frozenset()  # "to deploy", "para desplegar": what it is for
    changes: bool = False  # it says something changed ("we moved the registry over to ...", "now", 换成)
    # The statement with its code-like tokens left out, and those tokens: the same words around
    # another value ("sign commits with the key ABC123" / "... DEF456") say the same thing anew.
    frame: str = ""
    frame_values: frozenset[str] = frozenset()
    # Values by the shape they have (a port, a bucket, a URL, a host, a path, a backticked name),
    # and what the statement is about around them (`_subject_keys`).
    typed: tuple[tuple[str, str], ...] = ()
    subject: frozenset[str] = frozenset()

    @property
    def values(self) -> frozenset[str]:
        return self.asked | {slot.value for slot in self.slots}


def find_conflicts(entries: list[DatedEntry]) -> list[Conflict]:
    """Every replaced entry, the newer entry winning (see the module docstring)."""
    conflicts: list[Conflict] = []
    by_group: dict[str, list[DatedEntry]] = {}
    for entry in entries:
        by_group.setdefault(entry.group, []).append(entry)
    for group in sorted(by_group):
        newest_first = sorted(by_group[group], key=lambda entry: entry.order, reverse=True)
        claims = [_cached_claims(entry.text) for entry in newest_first]
        # Only pairs that share something can contradict: an index from what an older entry
        # offers to what a newer one asks keeps a month-sized folder (and the SessionStart hook)
        # far from comparing every pair.
        offered: dict[str, list[int]] = {}
        for index, claim in enumerate(claims):
            for key in _offered_keys(claim):
                offered.setdefault(key, []).append(index)
        lost: set[int] = set()
        for newer_index, newer in enumerate(newest_first):
            if newer_index in lost:
                continue  # an overruled entry overrules nothing
            candidates = sorted({
                index for key in _sought_keys(claims[newer_index]) for index in offered.get(key, ()) if index > newer_index
            })
            for older_index in candidates:
                if older_index in lost:
                    continue
                if claims[newer_index].temporary and not claims[older_index].temporary:
                    continue  # a one-off never replaces a standing rule
                subject = _contradiction(claims[newer_index], claims[older_index])
                if subject is not None:
                    lost.add(older_index)
                    conflicts.append(Conflict(subject=subject, winner=newer, loser=newest_first[older_index]))
    return conflicts


def _offered_keys(claim: _Claims) -> set[str]:
    """What a newer entry can contradict this one through (`_contradiction`'s tests, as keys)."""
    keys = {f"value:{value}" for value in claim.values} | {f"mention:{value}" for value in claim.mentions}
    keys |= {f"forbidden:{value}" for value in claim.forbidden} | {f"setting:{name}" for name in claim.settings}
    keys |= {f"family:{index}" for index, family in enumerate(_FAMILIES) if claim.asked & family}
    keys |= {f"frame:{claim.frame}"} if claim.frame else set()
    keys |= {f"typed:{kind}" for kind, _ in claim.typed}
    return keys | {key for slot in claim.slots for key in _slot_keys(slot)}


def _sought_keys(claim: _Claims) -> set[str]:
    keys = {f"value:{value}" for value in claim.forbidden} | {f"mention:{value}" for value in claim.replaced}
    keys |= {f"forbidden:{value}" for value in claim.asked} | {f"setting:{name}" for name in claim.settings}
    keys |= {f"family:{index}" for index, family in enumerate(_FAMILIES) if claim.asked & family}
    keys |= {f"frame:{claim.frame}"} if claim.frame else set()
    keys |= {f"typed:{kind}" for kind, _ in claim.typed}
    return keys | {key for slot in claim.slots for key in _slot_keys(slot)}


def _slot_keys(slot: Slot) -> set[str]:
    # An attribute cue matches any entity when either names none; the other slots need a word in
    # common (`_same_entity`).
    if slot.attribute in _CUE:
        return {f"slot:{slot.attribute}"}
    return {f"slot:{slot.attribute}:{word}" for word in slot.entity}


@lru_cache(maxsize=4096)
def _cached_claims(text: str) -> _Claims:
    # The hooks ask for the same lines on every session; phase 2 for the same inputs on every run.
    return statement_claims(text)


def losers(conflicts: list[Conflict]) -> set[tuple[str, str, int]]:
    """The (group, source, position) of every entry that lost, for dropping it."""
    return {(conflict.loser.group, conflict.loser.source, conflict.loser.position) for conflict in conflicts}


def _contradiction(newer: _Claims, older: _Claims) -> str | None:
    for target in sorted(newer.forbidden & older.values):
        return target
    for target in sorted(newer.replaced & older.mentions):
        return target
    for target in sorted(newer.asked & older.forbidden):
        return target
    for family in _FAMILIES:
        mine, theirs = newer.asked & family, older.asked & family
        if mine and theirs and not (mine & theirs) and not (theirs & newer.asked):
            return " vs ".join(sorted(mine | theirs))
    for subject in sorted(newer.settings.keys() & older.settings.keys()):
        if newer.settings[subject] != older.settings[subject]:
            return subject
    for mine in newer.slots:
        for theirs in older.slots:
            if mine.attribute == theirs.attribute and mine.value != theirs.value and _same_entity(mine, theirs, changed=newer.changes):
                if newer.purpose and older.purpose and not newer.purpose & older.purpose:
                    continue  # one profile to read invoices, another to deploy: two subjects
                # The older value reappearing in the newer statement ("18 -> 20", "not 18 but
                # 20") is the replacement said out loud, not a second value.
                if mine.value in newer.values and theirs.value in newer.values and theirs.value not in newer.forbidden:
                    continue
                return mine.label
    if newer.frame and newer.frame == older.frame and newer.frame_values != older.frame_values:
        changed = newer.frame_values ^ older.frame_values
        # Two commands in one template ("`make seed` succeeded (exit 0) in ...", "`pytest -q`
        # succeeded ...") are two things that worked, not one value said anew.
        if not any(" " in value for value in changed):
            return ", ".join(sorted(newer.frame_values - older.frame_values)) or newer.frame
    return _moved_value(newer, older)


def _moved_value(newer: _Claims, older: _Claims) -> str | None:
    """A newer statement that says something changed ("api's up at http://localhost:9310 now",
    "アップロード先のバケット、`acme-media-ap` に移したよ") and names one value of a shape the older
    one also named once, on a subject they share a word of. Without the change said, two values of
    one shape are two things ("logs go to s3://a" / "reports go to s3://b")."""
    if not newer.changes or not newer.subject & older.subject:
        return None
    for kind in sorted({kind for kind, _ in newer.typed} & {kind for kind, _ in older.typed}):
        mine = {value for shape, value in newer.typed if shape == kind}
        theirs = {value for shape, value in older.typed if shape == kind}
        if len(mine) == 1 and len(theirs) == 1 and mine != theirs:
            return f"{kind} {next(iter(mine))}"
    return None


def _same_entity(mine: Slot, theirs: Slot, *, changed: bool = False) -> bool:
    """Whether two slots of one attribute qualify the same thing. A newer statement that says it
    changed something ("we moved the image registry over to ...") needs less in common with the
    older one than one that only states a value: "base images come from registry docker.io" and
    "our images are pushed to registry ghcr.io" are two registries."""
    if mine.attribute in _CUE:
        if not mine.entity and not theirs.entity and mine.local_name and theirs.local_name:
            return mine.local_name == theirs.local_name
        if not mine.entity or not theirs.entity:
            return True
        # "images" and "the image registry": one thing, whatever its number.
        mine_stems, their_stems = _stems(mine.entity), _stems(theirs.entity)
        shared = len(mine_stems & their_stems) * 2
        return shared >= (min(len(mine_stems), len(their_stems)) if changed else len(mine_stems | their_stems))
    if not mine.entity or not theirs.entity:
        return False
    return len(mine.entity & theirs.entity) * 2 >= len(mine.entity | theirs.entity)


def statement_claims(text: str) -> _Claims:
    """What one entry asks for, forbids and sets (see the module docstring)."""
    bare, meta = split_entry(text)
    bare = bare.strip().strip("\"'“”「」")
    prohibitions = _matches(_NEGATED, bare)
    replacements = _matches(_REPLACED, bare)
    prohibited = {_target(match.group(1)) for match in prohibitions}
    replaced = {_target(match.group(1)) for match in replacements} - {""}
    # "instead of Node 18", "not Java 17 but ...": the version said with the replaced name goes too.
    replaced |= {
        number.group(1) for match in replacements if (number := _VERSION_AFTER.match(bare, match.end(1)))
    }
    forbidden = prohibited | replaced
    # What a negation names is not also asked for ("use httpx, not requests" asks for httpx only).
    negated_spans = [match.span(1) for match in (*prohibitions, *replacements)]
    asked = {
        _target(match.group(1))
        for match in _matches(_ASKED, bare)
        if not any(start <= match.start(1) < end for start, end in negated_spans)
        and not _negated_before(bare, match.start())
    }
    settings = {
        " ".join(match.group(1).lower().split()): match.group(2).lower()
        for pattern in _SETTING
        for match in pattern.finditer(bare)
    }
    forbidden -= {""}
    # What an older statement is about, for a later "no longer X": the tools it works with and
    # its code-like tokens, not every word (a later "we no longer need the cache" must not retire
    # "the cache lives in /var/cache/app").
    mentions = {_target(match.group(1)) for match in _TOOL_POSITION.finditer(bare)} | {
        _target(token) for match in _ASCII_TOKEN.finditer(bare) if _code_like(token := match.group(1) or match.group(2))
    }
    purpose = frozenset(word for match in _PURPOSE.finditer(bare) for word in _content_words(match.group(1)))
    return _Claims(
        asked=frozenset(asked - forbidden - {""}),
        forbidden=frozenset(forbidden),
        settings=settings,
        slots=tuple(slot for slot in _slots(bare) if slot.value not in forbidden),
        temporary=meta is not None and meta.expires is not None,
        replaced=frozenset(target for target in replaced if len(target) > 2),
        mentions=frozenset(mentions - {""}),
        purpose=purpose,
        changes=bool(_CHANGE_MARKER.search(bare) or _matches(_CHANGE, bare)),
        **_frame(bare),
        typed=_typed_values(bare),
        subject=_subject_keys(bare),
    )


# Values by their shape. A port inside a URL or after a host is a port as well.
_BUCKET = re.compile(r"\b(?:s3|gs|az|abfss?|oci|r2)://[^\s`'\"，。、]+", re.IGNORECASE)
_URL = re.compile(r"\bhttps?://[^\s`'\"，。、]+", re.IGNORECASE)
_HOST_PORT = re.compile(r"(?:\b[a-z0-9-]+(?:\.[a-z0-9-]+)*|\blocalhost|\]):(\d{2,5})\b", re.IGNORECASE)
_HOST = re.compile(r"\b[a-z0-9-]+(?:\.[a-z0-9-]+){1,}\.[a-z]{2,}\b", re.IGNORECASE)
_PATH = re.compile(r"(?<![\w/:])(?:~|\.{1,2})?/?[\w.-]+(?:/[\w.*<>{}-]+)+/?")
_TICKED = re.compile(r"`([^`\n]{1,80})`")


def _typed_values(text: str) -> tuple[tuple[str, str], ...]:
    found: list[tuple[str, str]] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, match: re.Match[str], group: int = 0) -> None:
        if not any(start <= match.start() < end for start, end in taken):
            found.append((kind, match.group(group).casefold().rstrip(".,;:)")))
        taken.append(match.span())

    for pattern, kind in ((_BUCKET, "bucket"), (_URL, "url"), (_HOST, "host"), (_PATH, "path")):
        for match in pattern.finditer(text):
            add(kind, match)
    found += [("port", match.group(1)) for match in _HOST_PORT.finditer(text)]
    for cue in _CUE["port"].finditer(text):
        port = _value_near(text, cue.start(), cue.end(), digits_only=True)
        if port:
            found.append(("port", port))
    found += [("name", match.group(1).casefold()) for match in _TICKED.finditer(text)]
    return tuple(dict.fromkeys(found))


_CJK_RUN = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]{2,}")
_ALPHABETIC_WORD = re.compile(r"(?:(?![\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af])[^\W\d_]){3,}")


def _subject_keys(text: str) -> frozenset[str]:
    """What a statement is about, its values left out: the stems of its plain words and the pairs
    of characters of its CJK runs."""
    bare = _TICKED.sub(" ", _PATH.sub(" ", _HOST.sub(" ", _URL.sub(" ", _BUCKET.sub(" ", text)))))
    # Words of any alphabet (Cyrillic, accented Latin), not only ASCII, by their first letters.
    words = {word.casefold() for word in _ALPHABETIC_WORD.findall(bare)} - _STOPWORDS - _SCOPE_WORDS
    keys = {word_stem(_SYNONYMS.get(word, word)) for word in words}
    for run in _CJK_RUN.findall(bare):
        keys |= {run[index : index + 2] for index in range(len(run) - 1)}
    return frozenset(keys)


# A restatement's frame holds at least this many words of its own.
_FRAME_WORDS = 2


def _frame(text: str) -> dict[str, object]:
    tokens = [token for match in _ASCII_TOKEN.finditer(text) if _code_like(token := match.group(1) or match.group(2))]
    if not tokens:
        return {}
    frame = _ASCII_TOKEN.sub(lambda match: "\u0000" if _code_like(match.group(1) or match.group(2)) else match.group(0), text)
    if len(_content_words(frame)) < _FRAME_WORDS:
        return {}  # `STAGING_URL=...` and `PROD_URL=...` are two values with no words around them
    return {"frame": " ".join(frame.casefold().split()), "frame_values": frozenset(token.casefold() for token in tokens)}


def _matches(patterns: tuple[re.Pattern[str], ...], text: str) -> list[re.Match[str]]:
    found = []
    for pattern in patterns:
        needed = _NEEDS.get(pattern)
        if needed is not None and not any(marker in text for marker in needed):
            continue  # a pattern that starts with a token is tried at every position: only when it can match
        found.extend(pattern.finditer(text))
    return found


def _slots(text: str) -> list[Slot]:
    slots: list[Slot] = []
    values: set[str] = set()
    lowered = text.lower()
    for name, cue in _CUE.items():
        if not any(stem in lowered for stem in _CUE_STEMS[name]):
            continue
        for match in cue.finditer(text):
            if name == "naming":
                pattern = _NAMING_PATTERN.search(text, match.end(), min(len(text), match.end() + _CUE_WINDOW))
                if pattern is None:
                    pattern = _NAMING_PATTERN.search(text, max(0, match.start() - _CUE_WINDOW), match.start())
                if pattern is not None:
                    value = pattern.group(0).strip("`'\".,;:()").lower()
                    # What is named, hyphens split ("Feature-Branches" names branches too).
                    named = _content_words(_NAMING_PATTERN.sub(" ", text).replace("-", " ")) - _CUE_WORDS
                    slots.append(Slot(name, named, value))
                    values.add(value)
                continue
            value = _value_near(text, match.start(), match.end(), digits_only=name == "port")
            if value:
                names = _LOCAL_NAME.findall(text[max(0, match.start() - 12) : match.start()])
                slots.append(Slot(name, frozenset(), value, local_name=names[-1].strip("のはをが的") if names else ""))
                values.add(value)
    for match in _KEY_VALUE.finditer(text):
        parts = match.group(1).lower().split("_")
        attribute = next((part for part in parts if part in _CUE), match.group(1))
        entity = frozenset(part for part in parts if part != attribute) if attribute in _CUE else frozenset()
        value = _target(match.group(2))
        slots.append(Slot(attribute, entity, value))
        values.add(value)
    for match in _NAMED_VERSION.finditer(text):
        name = _SYNONYMS.get(match.group(1).lower(), match.group(1).lower())
        if name in _NOT_VERSIONED or match.group(2) in values:
            continue
        slots.append(Slot("version", frozenset({name}), match.group(2)))
        values.add(match.group(2))
    for pattern in _USE_FOR:
        for match in pattern.finditer(text):
            subject = _content_words(match.group("subject"))
            if subject:
                slots.append(Slot("for", subject, _target(match.group("value"))))
    for match in _COPULA.finditer(text):
        value = _target(match.group("value"))
        before = text[max(0, match.start() - 60) : match.start()]
        said = _SUBJECT_END.split(before)[-1]
        subject = _subject_words(said) - {value}
        # A plain word is a value when it is an ASCII name inside CJK text ("默认分支是 master").
        technical = _code_like(match.group("value")) or bool(_CJK.search(text))
        if subject and technical and not _CUE_WORDS & subject:
            slots.append(Slot("is", frozenset(sorted(subject)[-4:]), value))
            named = _PLAIN_WORD.findall(said)
            if _VERSION_NUMBER.fullmatch(value) and named and named[-1].lower() not in _NOT_VERSIONED | _STOPWORDS:
                # "Local Postgres is 16 now": the version of the last thing named.
                name = _SYNONYMS.get(named[-1].lower(), named[-1].lower())
                slots.append(Slot("version", frozenset({name}), value))
    for pattern in _CHANGE:
        for match in pattern.finditer(text):
            value = _target(match.group("value"))
            subject = _subject_words(match.group("subject")) - {value}
            if value and subject:
                slots.append(Slot("is", subject, value))
                named = _PLAIN_WORD.findall(match.group("subject"))
                if _VERSION_NUMBER.fullmatch(value) and named and named[-1].lower() not in _NOT_VERSIONED | _STOPWORDS:
                    slots.append(Slot("version", frozenset({_SYNONYMS.get(named[-1].lower(), named[-1].lower())}), value))
    config = _CONFIG_LINE.match(text)
    if config:
        slots.append(Slot(f"key {config.group('key').lower()}", frozenset({config.group("key").lower()}), config.group("value").lower()))
    # Attribute slots are qualified by the statement's other words; computed last so that every
    # value found above is left out of them.
    # The value's own parts ("ghcr", "io" of `ghcr.io/acme`) are not what it qualifies.
    unvalued = text
    for value in sorted(values, key=len, reverse=True):
        unvalued = re.sub(re.escape(value), " ", unvalued, flags=re.IGNORECASE)
    entity = _content_words(unvalued) - _CUE_WORDS
    return [
        Slot(slot.attribute, entity, slot.value, slot.local_name) if slot.attribute in _CUE and not slot.entity else slot
        for slot in slots
    ]


def _value_near(text: str, start: int, end: int, *, digits_only: bool) -> str:
    """The value an attribute cue names: a code-like token right after the cue, else a plain one
    after it, else the nearest code-like token before it."""
    after = [match for match in _ASCII_TOKEN.finditer(text, end, min(len(text), end + _CUE_WINDOW))]
    before = [match for match in _ASCII_TOKEN.finditer(text, max(0, start - _CUE_WINDOW), start)]

    def usable(match: re.Match[str], *, plain_ok: bool) -> str:
        token = match.group(1) or match.group(2)
        cleaned = _target(token)
        if not cleaned or cleaned in _CUE_WORDS or cleaned in _SCOPE_WORDS:
            return ""
        if digits_only:
            return cleaned if re.fullmatch(r"\d{2,5}", cleaned) else ""
        if match.group(1) or _code_like(token):
            return cleaned
        return cleaned if plain_ok and cleaned not in _STOPWORDS and not cleaned.isdigit() else ""

    for candidates, plain_ok in ((after, False), (list(reversed(before)), False), (after, True)):
        for match in candidates:
            found = usable(match, plain_ok=plain_ok)
            if found:
                return found
    return ""


def _code_like(token: str) -> bool:
    token = token.strip()
    return token.startswith("`") or bool(re.search(r"\d|[-_./@:]\w", token))


def _subject_words(text: str) -> frozenset[str]:
    """The words naming a slot: the plain ASCII words, and a CJK name written right before the
    verb ("默认分支是 ...", "默认分支换成 ...": both `默认分支`)."""
    cjk = re.findall(r"[\u3040-\u30ff\u4e00-\u9fff]{2,12}", text)
    tail = cjk[-1].strip("のはをが的了") if cjk and text.rstrip().endswith(cjk[-1]) else ""
    return _content_words(text) | ({tail} if len(tail) >= 2 else set())


def _stems(words: frozenset[str]) -> set[str]:
    return {word_stem(word) for word in words}


def _content_words(text: str) -> frozenset[str]:
    words = {word.lower() for word in _PLAIN_WORD.findall(text)}
    words = {_SYNONYMS.get(word, word) for word in words}
    return frozenset(word for word in words if word not in _STOPWORDS and word not in _SCOPE_WORDS and len(word) > 1)


def _negated_before(text: str, start: int) -> bool:
    before = text[max(0, start - 12) : start].lower()
    return bool(re.search(r"(?:don'?t|do not|never|stop|avoid|not|no|nicht|pas|не)\s*$|(?:不要|别|禁止|不)\s*$", before))


def _target(word: str) -> str:
    cleaned = word.strip("`'\".,;:()「」").lower()
    if cleaned in _STOPWORDS:
        return ""
    return _SYNONYMS.get(cleaned, cleaned)


def parse_time(value: str) -> datetime:
    """An RFC 3339 time (naive means UTC); the epoch when it does not parse, so it sorts oldest."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return datetime(1970, 1, 1, tzinfo=UTC)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
