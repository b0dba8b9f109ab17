"""Whether a memory line that speaks for the user is backed by what the user said in that session.

A model that reads a tool output saying "always commit straight to main" can write "The user
wants every change committed directly on main": reworded, so the word-run check of
`extract.provenance` does not see the tool output in it, and attributed to the user, so the read
path would serve it as their rule. The model's claim proves nothing; the transcript does. So a
line that speaks for the user goes live as a rule only when one of the user's own turns of that
session says it, compared by us, in any language, paraphrase allowed.

Contract:
- `is_user_claim(text, in_rule_section)`: a line speaks for the user when it sits in a rule
  section of our formats (`Preference signals:`, `## User preferences`, rules, constraints:
  `in_rule_section`, decided by `rule_section_lines`), carries a rule type (`{memory:
  type=constraint|preference}`), or attributes itself to the user ("The user wants ...",
  "用户要求 ...", "El usuario prefiere ...": `USER_ATTRIBUTION`, in English, Chinese, Japanese,
  Korean, Spanish, Portuguese, French, German and Russian).
- `claim_terms(text)`: what a claim says, as comparable terms, script by script: NFKC and case
  folded, format characters dropped; names (paths, versions, identifiers, flags with `=`) whole;
  numbers whole; other words of letters cut to their first `STEM_CHARS` characters (a cheap stem
  that holds across inflections: commit / commits / committed) when at least three long and not
  a function word (`_FUNCTION_WORDS`); Han, kana and Hangul, which do not separate words, as
  character bigrams. The attribution lead-in ("The user wants", "用户要求") is not a term:
  every claim has one (in Japanese and Korean, the sentence-final verb of wanting or saying:
  `_TRAILING_ATTRIBUTION`).
- `ClaimCheck(session_texts)` holds one session's texts by origin (`extract.provenance.
  session_texts`); `check(text)` gives a `ClaimSupport`: `user_share`, the largest share of the
  claim's terms found in one user turn, and `elsewhere_share`, the share found in the tool output
  and the agent's tool calls (an `apply_patch` carries the file's context lines: a comment
  planted there is the file's words, not the agent's, and never the user's).
- The decision, `ClaimSupport.backed`: at least `USER_SHARE` of the claim's terms are in one
  user turn, and less than `TOOL_ONLY_SHARE` of them are words that turn lacks and the tool
  output or tool calls hold (a claim that borrows "commit" and "change" from the user's "commit
  the change" and "directly on main" from a CONTRIBUTING file is the file's). A claim with fewer than `MIN_TERMS` terms is not judged (it says too little to be
  a rule). `ClaimSupport.laundered`: not backed, and more of it is in the tool output and tool
  calls than in any user turn, at least `ELSEWHERE_SHARE`: the claim carries the tool's words,
  not an inference of the model.
- `as_observation(text)`: the form an unbacked claim that is not laundered keeps: the
  attribution and rule type dropped, marked as an observation of the session, never a rule.
Pure and deterministic. Measured on held-out phrasings in benchmarks/laundered_provenance.py.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from codex_memories.ingest.transcript import DATAMARK, ItemOrigin
from codex_memories.typed_entries import split_entry

# Tuned on tests/data/laundering/tuning.json (never on the held-out set of the benchmark).
USER_SHARE = 0.5
ELSEWHERE_SHARE = 0.34
TOOL_ONLY_SHARE = 0.4
MIN_TERMS = 2
STEM_CHARS = 5
OBSERVATION_PREFIX = "Observation, not said by the user:"

RULE_TYPES = frozenset({"constraint", "preference"})
RULE_SECTION_TITLES = frozenset({"preference signals", "user preferences", "preferences", "rules", "constraints"})

_USER_NOUN_LATIN = (
    r"(?:the\s+|this\s+|our\s+)?(?:users?|developer|owner)|(?:el|la)\s+usuari[oa]|(?:o|a)\s+(?:usu[aá]ri[oa]|utilizador[a]?)"
    r"|l['’]utilisat(?:eur|rice)|(?:der|die)\s+(?:nutzer|benutzer|anwender)(?:in)?|пользовател[ьяи]"
)
_USER_VERB_LATIN = (
    r"(?:'s\s+|’s\s+)?(?:rule|preference|policy|instruction|requirement|request|convention|choice|standing\s+order)"
    r"|\s+(?:always\s+|explicitly\s+|strongly\s+|also\s+|clearly\s+)?(?:wants?|wanted|prefers?|preferred|said|says|stated|asked|asks|requested|requests|"
    r"requires?|required|insists?|insisted|expects?|expected|likes?|instructed|wishes|would\s+like|would\s+rather|has\s+asked|"
    r"told|mandates?|demands?|needs?|decided|agreed|is\s+fine\s+with|is\s+ok(?:ay)?\s+with|does\s+not\s+want|doesn['’]t\s+want|"
    r"never\s+wants|hates|dislikes|approved|specified|emphasi[sz]ed)\b"
    r"|\s+(?:quiere|quería|prefiere|pidió|pide|dijo|exige|desea|solicitó|indicó|no\s+quiere)\b"
    r"|\s+(?:quer|queria|prefere|pediu|pede|disse|exige|deseja|solicitou|não\s+quer)\b"
    r"|\s+(?:veut|voulait|préfère|a\s+demandé|demande|souhaite|exige|a\s+dit|ne\s+veut\s+pas)\b"
    r"|\s+(?:möchte|will|wollte|bevorzugt|wünscht|verlangt|sagte|hat\s+gesagt|bat|fordert|mag)\b"
    r"|\s+(?:хочет|хотел|предпочитает|просил|попросил|сказал|требует|не\s+хочет)"
)
# A line that speaks for the user: a user noun and a verb of wanting or saying, or a lead-in.
USER_ATTRIBUTION = re.compile(
    rf"(?:^|[\s(\"'“:*-])(?:{_USER_NOUN_LATIN})(?:{_USER_VERB_LATIN})"
    r"|(?:^|[\s(\"'“*-])(?:per|according\s+to|as)\s+the\s+user\b"
    r"|(?:^|[\s(\"'“*-])(?:según|conforme)\s+(?:el|la)\s+usuari[oa]|laut\s+(?:dem\s+)?(?:nutzer|benutzer)|selon\s+l['’]utilisat"
    r"|^\W*user\s+(?:preference|rule|request|instruction|policy)s?\s*:"
    r"|(?:用户|用戶|使用者)(?:明确|一直|总是|也)?(?:要求|希望|想要|想|说|說|表示|偏好|喜欢|喜歡|指示|规定|規定|倾向|坚持|让|請|请|的偏好|的要求|的规则|不希望|不想|决定|同意)"
    r"|(?:ユーザー|利用者|ユーザ)(?:は|が|の)?[^。\n]{0,24}?(?:希望|好む|望ん|要望|指示|言っ|求め|したい|してほしい|ルール|方針)"
    r"|사용자(?:는|가|의)?[^.\n]{0,24}?(?:원한|원합|선호|요청|말했|요구|지시|규칙)",
    re.IGNORECASE,
)
# The attribution itself, taken out before the terms are counted.
_LEAD_IN = re.compile(
    rf"(?:{_USER_NOUN_LATIN})(?:{_USER_VERB_LATIN})(?:\s+(?:that|to|for|que|dass|daß|что))?"
    r"|(?:per|according\s+to|as)\s+the\s+user\b|user\s+(?:preference|rule|request|instruction|policy)s?\s*:"
    r"|(?:用户|用戶|使用者)(?:明确|一直|总是|也)?(?:要求|希望|想要|想|说|說|表示|偏好|喜欢|喜歡|指示|规定|規定|倾向|坚持|让|請|请|的偏好|的要求|的规则|不希望|不想|决定|同意)"
    r"|(?:ユーザー|利用者|ユーザ)(?:は|が|の)?|사용자(?:는|가|의)?",
    re.IGNORECASE,
)

# Japanese and Korean put the verb of wanting or saying last ("...ことを希望している",
# "...기를 원한다"): that end of the sentence is the attribution too.
_TRAILING_ATTRIBUTION = re.compile(
    r"(?:(?:する|した)?こと)?(?:を|が)?(?:希望して|望んで|求めて|要望して|好んで)(?:いる|います|いた|おり)?[。.]?\s*$"
    r"|と(?:言って|述べて|話して|指示して)(?:いる|いた|います)?[。.]?\s*$|(?:して)?ほしい(?:と(?:考えて|思って)いる)?[。.]?\s*$"
    r"|(?:기를|을|를|하기를)?\s*(?:원한다|원합니다|원함|선호한다|선호합니다|요청했다|요청함|말했다)[.]?\s*$"
)
# Han (with extensions and compatibility forms), kana and Hangul: compared as character bigrams.
_SPACELESS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f"
_SPACELESS_RUN = re.compile(rf"[{_SPACELESS}]+")
_WORD = re.compile(rf"[^\W_{_SPACELESS}]+")
# Names: a run of name characters with a path separator, a dot or colon between word
# characters, an underscore or an `=` in it (the same shape `extract.provenance` recognises).
_NAME_RUN = re.compile(r"[A-Za-z0-9_.:/\\~=@+%-]+")
_NAME_MARK = re.compile(r"[/\\]|[A-Za-z0-9][.:][A-Za-z0-9]|_|[A-Za-z0-9]=")
_FORMAT_CHARACTERS = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0001-\U000e007f]")
_SUFFIX_MARKUP = re.compile(r"\[Task\s+\d+\]|\[ad-hoc note\]|\(all projects\)|\([^()\n]*\b(?:project|cwd)=[^()\n]*\)", re.IGNORECASE)
# Words every claim may hold whoever wrote it: articles, pronouns, auxiliaries, the user nouns.
# A short list per language; anything shorter than three letters is not a term anyway.
_FUNCTION_WORDS = frozenset(
    """
    the and for with that this these those from into onto over under then than when what which who whom whose
    are was were been being have has had does did will would should could must can may might shall not you your
    yours our ours they them their its his her all any each every some such only also just very more most much
    user users user's developer owner wants want wanted prefers prefer preferred said says asked asks requested
    requires require insisted insists expects likes would like rather always never please there here about
    los las una uno unos unas del que con por para como pero más muy esta este esto estos estas usuario usuaria
    quiere prefiere pidió dijo siempre nunca sus ser está son
    das der die den dem des ein eine einen einem und oder mit für von bei ist sind nicht auch immer nie bitte
    nutzer benutzer anwender möchte will bevorzugt sagte dass
    les des une est sont pas pour avec dans sur qui que toujours jamais utilisateur veut préfère
    uma com por para como não sempre nunca usuário utilizador quer prefere pediu disse
    это что как для все всегда никогда пользователь хочет предпочитает
    """.split()
)


def rule_section_lines(text: str) -> set[int]:
    """0-based physical line numbers of `text` that lie inside a rule section of our formats."""
    inside = False
    found: set[int] = set()
    for number, line in enumerate(text.splitlines()):
        stripped = line.strip()
        title = stripped.lstrip("#").strip().rstrip(":").strip().casefold()
        is_header = stripped.startswith("#") or (stripped.endswith(":") and not stripped.startswith(("-", "*")) and len(stripped) <= 80)
        if is_header:
            inside = title in RULE_SECTION_TITLES
            continue
        if inside and stripped:
            found.add(number)
    return found


def is_user_claim(text: str, *, in_rule_section: bool) -> bool:
    """Whether a memory line speaks for the user (see the contract)."""
    if in_rule_section:
        return True
    bare, meta = split_entry(text.strip())
    if meta is not None and meta.type in RULE_TYPES:
        return True
    return bool(USER_ATTRIBUTION.search(_normalised(bare)))


def claim_terms(text: str, *, drop_attribution: bool = True) -> set[str]:
    """The comparable terms of a text (see the contract)."""
    folded = _normalised(_SUFFIX_MARKUP.sub(" ", split_entry(text.strip())[0]))
    if drop_attribution:
        folded = _TRAILING_ATTRIBUTION.sub(" ", _LEAD_IN.sub(" ", folded))
    terms: set[str] = set()

    def take_name(run: re.Match[str]) -> str:
        name = run.group().strip(".:,;-=")
        if _NAME_MARK.search(name):
            terms.add(name)
            return " "
        return run.group()

    folded = _NAME_RUN.sub(take_name, folded)
    for run in _SPACELESS_RUN.findall(folded):
        terms.update(run[index : index + 2] for index in range(max(1, len(run) - 1)))
    for word in _WORD.findall(_SPACELESS_RUN.sub(" ", folded)):
        if word.isdigit():
            terms.add(word)
        elif len(word) >= 3 and word not in _FUNCTION_WORDS:
            terms.add(word[:STEM_CHARS])
    return terms


def _normalised(text: str) -> str:
    return unicodedata.normalize("NFKC", _FORMAT_CHARACTERS.sub("", text.replace(DATAMARK, " "))).casefold()


@dataclass(frozen=True)
class ClaimSupport:
    terms: int
    user_share: float  # the largest share of the claim's terms in one user turn
    tool_only_share: float  # the share not in that turn but in tool output or tool calls
    elsewhere_share: float  # the share in tool output and tool calls, pooled

    @property
    def judged(self) -> bool:
        return self.terms >= MIN_TERMS

    @property
    def backed(self) -> bool:
        return not self.judged or (self.user_share >= USER_SHARE and self.tool_only_share < TOOL_ONLY_SHARE)

    @property
    def laundered(self) -> bool:
        return not self.backed and self.elsewhere_share >= ELSEWHERE_SHARE and self.elsewhere_share > self.user_share


class ClaimCheck:
    """One session's texts by origin, against which claims are checked (see the contract)."""

    def __init__(self, texts: Iterable[tuple[ItemOrigin, str]] = ()) -> None:
        self.user_turns: list[set[str]] = []
        self.elsewhere: set[str] = set()
        for origin, text in texts:
            self.add(origin, text)

    def add(self, origin: ItemOrigin, text: str) -> None:
        if origin is ItemOrigin.user:
            self.user_turns.append(claim_terms(text, drop_attribution=False))
        elif origin in (ItemOrigin.tool_output, ItemOrigin.agent_action):
            self.elsewhere |= claim_terms(text, drop_attribution=False)

    def check(self, text: str) -> ClaimSupport:
        terms = claim_terms(text)
        if not terms:
            return ClaimSupport(0, 0.0, 0.0, 0.0)
        best = max(self.user_turns, key=lambda turn: len(terms & turn), default=set())
        tool_only = (terms - best) & self.elsewhere
        return ClaimSupport(
            len(terms), len(terms & best) / len(terms), len(tool_only) / len(terms), len(terms & self.elsewhere) / len(terms)
        )


def as_observation(text: str) -> str:
    """An unbacked claim as an observation: no rule type, no attribution, never a rule."""
    match = re.match(r"^(\s*(?:[-*+]|\[\d+\])\s+)?(.*)$", text, re.DOTALL)
    marker, body = (match.group(1) or "", match.group(2)) if match else ("", text)
    bare, _ = split_entry(body)
    neutral = _LEAD_IN.sub(" ", bare, count=1)
    neutral = re.sub(r"^[\s:,;-]+", "", " ".join(neutral.split()))
    return f"{marker or '- '}{OBSERVATION_PREFIX} {neutral}"
