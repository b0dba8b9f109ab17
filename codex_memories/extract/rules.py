"""Recognising standing rules in what a user typed: constraints, preferences, facts, commands.

Contract: `rules_in_message(text, said_at)` returns the sentences of one user message that state a
rule a later session should follow, each as a `RecognisedRule` (the sentence, its type, weight,
reason and expiry); `recognise_rule(sentence, said_at)` judges one sentence. English and Chinese.

A rule is an everyday normative form, not only "always"/"never": "prefer X over Y", "keep X at
N", "X is a hard limit", "make sure", "must", "don't use", "use X, not Y", "remember that", and
记住, 以后都, 不要用, 必须, 禁止, 统一用, 优先用 X 而不是 Y, 务必. Not a rule: a question, past-tense
narration ("I always used tabs"), a description ("the test always fails"), pasted program output
("ValueError: timeout must be ..."), a one-off task ("fix the failing test").

The reason is kept with the rule ("because ...", "since ...", 因为 ..., or a stated situation
beside the instruction: "the branch is being refactored, don't commit"). A temporary rule gets an
expiry date from `said_at` (the session's time, UTC): "today", "this week", "until Friday",
"this month", "for 3 days", explicit dates, and 今天, 本周/这周, 周五之前, 12 月 15 日; an open-ended
one ("for now", "until the refactor lands", 暂时, 直到 ...) holds `OPEN_ENDED_TEMPORARY_DAYS`.
Without `said_at` a temporary rule keeps no date (nothing to count from) and says so in its reason.

Pure and deterministic: regular expressions over one message, no I/O.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

# An open-ended "for now" holds two weeks: long enough for a refactor or a freeze, short
# enough that a forgotten temporary rule does not outlive its reason for long.
OPEN_ENDED_TEMPORARY_DAYS = 14

_WEEKDAYS = {name: index for index, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_MONTHS = {name: index for index, name in enumerate(calendar.month_name) if name} | {
    name: index for index, name in enumerate(calendar.month_abbr) if name
}
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "ten": 10, "a": 1}


@dataclass(frozen=True)
class RecognisedRule:
    text: str
    type: str
    weight: float
    reason: str = ""
    expires: date | None = None
    temporary: bool = False


# -- what is never a rule -----------------------------------------------------------------------

_PROGRAM_OUTPUT = re.compile(
    r"^\s*(?:[A-Z]\w*(?:Error|Exception|Warning)\b|(?:error|warning|fatal|panic|E|W)\s*(?:\[\w+\])?:|npm (?:WARN|ERR!)|"
    r"Traceback\b|File \"|at [\w.$]+\(|\$ |>>> |错误[:：]|警告[:：])",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(?:why|what|how|when|where|which|who|can|could|would|should|shall|is|are|does|did|will|have|has)\b|^do\b(?!\s+not\b)"
    r"|^(?:为什么|为啥|怎么|能不能|可不可以|是不是|要不要|是否)",
    re.IGNORECASE,
)
_NARRATION = re.compile(
    r"\b(?:used to|had to|had|was|were|did|didn't|yesterday|last (?:week|month|year|time)|ago|tried|decided|said|told)\b"
    r"|\b(?:I|we|he|she|they|someone|somebody)\s+(?:always\s+|never\s+)?\w+ed\b"
    r"|昨天|上周|上个月|以前我|之前我|去年|用过|说过",
    re.IGNORECASE,
)
_NOT_RULES = re.compile(r"^(?:never mind|no (?:problem|worries|idea|luck|need|way)\b|no[,.!]|thanks\b)", re.IGNORECASE)

# -- what makes a sentence a rule, strongest first -----------------------------------------------
# (pattern, type, weight). The type of a sentence is its strongest match's; see `_type_of`.

_LEAD = r"^(?:(?:please|and|also|so|ok|okay|then|but)[,\s]+)*"
_EN_RULES: tuple[tuple[re.Pattern[str], str, float], ...] = (
    (re.compile(r"\bhard limit\b|\bnon-negotiable\b|\bmandatory\b", re.I), "constraint", 1.0),
    (re.compile(r"\b(?:must|mustn't|must not|shall not)\b", re.I), "constraint", 1.0),
    (re.compile(_LEAD + r"never\b", re.I), "constraint", 1.0),
    (re.compile(r"\buse\b[^.]*?(?:,\s*not\b|\binstead\b|\brather than\b)", re.I), "constraint", 0.9),
    (re.compile(r"(?:^|,\s*)(?:please\s+)?(?:don'?t|do not|avoid|stop|no longer)\b", re.I), "constraint", 0.9),
    (re.compile(_LEAD + r"(?:make sure|be sure to|ensure)\b", re.I), "constraint", 0.8),
    (re.compile(_LEAD + r"keep\b.*\b(?:at|under|below|above|within|to)\s+(?:\S*\d|one|two|three|four|five|ten)\b", re.I), "constraint", 0.8),
    (re.compile(_LEAD + r"(?:for now|temporarily|for the time being|hold off)\b|^until\b", re.I), "constraint", 0.8),
    (re.compile(_LEAD + r"no\s+[\w-]+\s+\w+", re.I), "constraint", 0.8),
    (re.compile(_LEAD + r"always\b|\byou\s+(?:should\s+)?always\b", re.I), "constraint", 0.8),
    (re.compile(r"\bwe\s+always\b", re.I), "preference", 0.6),
    (re.compile(_LEAD + r"remember to\b", re.I), "constraint", 0.7),
    (re.compile(_LEAD + r"(?:remember(?: that)?|keep in mind|note that)\b", re.I), "fact", 0.6),
    (re.compile(r"[,;]\s*(?:please\s+)?(?:remember(?: that)?|keep in mind)\b", re.I), "fact", 0.6),
    (re.compile(r"\bprefer\b|\bI(?:'d| would) rather\b|\bI like\b", re.I), "preference", 0.6),
    (re.compile(r"\b(?:from now on|going forward|in (?:the )?future|by default|whenever)\b", re.I), "preference", 0.7),
    (re.compile(r"\bI\s+(?:always|never)\s+(?:use|want|write|run|prefer|put|keep|format|indent|commit|work)\b", re.I), "preference", 0.6),
    (re.compile(_LEAD + r"(?:only\s+)?use\s+\S", re.I), "constraint", 0.6),
    (re.compile(_LEAD + r"run\s+`[^`]+`", re.I), "command", 0.7),
    # A convention of the place: "money in this codebase is always integer cents", "releases here
    # always go through `scripts/release.sh`" (not "the build here always fails": a description).
    (
        re.compile(
            r"\b(?:in this (?:code base|[\w-]+)|here)\s+(?:(?:is|are)\s+)?(?:always|only|never)\b"
            r"(?!\s+(?:fails?|breaks?|crash(?:es)?|times?\s+out|flakes?|hangs?|errors?)\b)",
            re.I,
        ),
        "constraint",
        0.8,
    ),
    # A list of things ruled out: "no Decimal, no float".
    (re.compile(r"(?:^|[:;]\s*)no\s+[\w`'-]+\s*,\s*(?:and\s+)?no\s+[\w`'-]+", re.I), "constraint", 0.8),
    (re.compile(r"\bfor next time\b|\bthis is how we (?:do|handle|write|run|name)\b", re.I), "preference", 0.7),
    # A practice that changed: "staging works differently now", "nothing is deployed from laptops anymore".
    (re.compile(r"\b(?:any ?more|no longer)\b|\bdifferently now\b|\bit'?s now\b", re.I), "constraint", 0.8),
    # A warning that leads in: "careful with fly here: prod is `fly deploy -c fly.production.toml`".
    (re.compile(_LEAD + r"(?:be\s+)?(?:careful|watch out|heads[- ]up|gotcha|caution|beware)\b[^:]*:\s*\S", re.I), "fact", 0.7),
    # Where something always goes: "e2e always runs against `pnpm start:e2e`".
    (
        re.compile(r"\b(?:always|only ever)\s+(?:runs?|goes|go|deploys?|builds?|ships?|talks?)\s+(?:against|through|via|from|to)\b", re.I),
        "constraint",
        0.8,
    ),
)
_ZH_RULES: tuple[tuple[re.Pattern[str], str, float], ...] = (
    (re.compile(r"禁止|必须|务必|一定要|不准|不许|请勿|严禁"), "constraint", 1.0),
    (re.compile(r"不要用|不要使用|别用|不用.{0,12}而用|而不是"), "constraint", 0.9),
    (re.compile(r"不要|别|先别|不能再"), "constraint", 0.8),
    (re.compile(r"统一用|统一使用|一律"), "constraint", 0.8),
    (re.compile(r"保持在|不超过|不要超过|控制在"), "constraint", 0.8),
    (re.compile(r"暂时|目前先|直到|之前先"), "constraint", 0.8),
    (re.compile(r"(?:^|[，,：:；;]\s*)(?:请)?(?:记住|记得)"), "fact", 0.6),
    (re.compile(r"优先用|优先使用|我更喜欢|我喜欢|我偏好|尽量"), "preference", 0.6),
    (re.compile(r"以后都|以后|今后|从现在开始"), "preference", 0.7),
)
_COMMAND_BODY = re.compile(r"`[^`]+`")
_HARD_EN = re.compile(r"\b(?:must|never|hard limit|don'?t|do not|not\b|avoid|stop|instead|rather than|only)\b", re.I)
_HARD_ZH = re.compile(r"禁止|必须|务必|一定要|不要|别|不准|不许|统一|而不是")
# "prefer X over Y" names an alternative without forbidding it: a preference, unless a
# stronger word is there too.
_PREFER = re.compile(r"\bprefer\b|\brather\b|优先|更喜欢|偏好", re.I)
_STRONG = re.compile(r"\b(?:must|never|don'?t|do not|hard limit)\b|禁止|必须|务必|一定要|不要|别用|不准|不许", re.I)

# -- reasons and expiry -------------------------------------------------------------------------

_EN_REASON = re.compile(r"(?:,\s*|\s)(?:because|since|as|so that)\s+(.+)$", re.I)
_ZH_REASON = re.compile(r"(?:因为|由于)(.+)$")
_STATE_CLAUSE = re.compile(r"\b(?:is|are)\s+(?:being\s+)?\w+|正在|在重构|还没", re.I)
_CLAUSE_SPLIT = re.compile(r",\s+|，")
_OPEN_ENDED = re.compile(
    r"\b(?:for now|temporarily|for the time being|until (?:the |we |it |they )\w+|while (?:we|i|the)\b|hold off)\b|暂时|目前先|直到|先别",
    re.I,
)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_EN_MONTH_DAY = re.compile(r"\b(?:until|till|through|before|by)\s+([A-Z][a-z]{2,8})\.?\s+(\d{1,2})\b")
_ZH_MONTH_DAY = re.compile(r"(?:(\d{4})\s*年\s*)?(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
_EN_WEEKDAY = re.compile(r"\b(?:until|till|through|before|by)\s+(next\s+)?(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I)
_ZH_WEEKDAY = re.compile(r"(下)?(?:这|本)?(?:周|星期|礼拜)([一二三四五六日天])")
_EN_SPAN = re.compile(r"\bfor\s+(?:the\s+next\s+)?(\d+|one|two|three|four|five|six|seven|ten|a)\s+(day|week)s?\b", re.I)


# What follows a rule in the same paragraph is usually its detail or its reason ("never touch
# X. the iOS team owns it, Apple's CDN caches it for days"): kept with it, up to these bounds.
MAX_ELABORATION_SENTENCES = 2
MAX_RULE_CHARS = 300


def rules_in_message(
    text: str, said_at: datetime | None, *, fallback: Callable[[str], RecognisedRule | None] | None = None
) -> list[RecognisedRule]:
    """The rules in one user message, in order, each once; code blocks are skipped.

    A rule is its sentence plus the sentences right after it in the same paragraph (at most
    `MAX_ELABORATION_SENTENCES`, up to the next rule or question, `MAX_RULE_CHARS` in all): people
    state a rule and then say what it means and why. `fallback` judges a sentence no pattern
    here recognises (the heuristic provider's scoped-instruction form)."""
    rules: list[RecognisedRule] = []
    for paragraph in message_paragraphs(text):
        judged = [(sentence, recognise_rule(sentence, said_at) or (fallback(sentence) if fallback else None)) for sentence in paragraph]
        for index, (_, rule) in enumerate(judged):
            if rule is None:
                continue
            elaboration = []
            for sentence, other in judged[index + 1 : index + 1 + MAX_ELABORATION_SENTENCES]:
                if other is not None or sentence.rstrip().endswith(("?", "？")):
                    break
                elaboration.append(sentence)
            if elaboration:
                joined = " ".join([rule.text, *elaboration])
                rule = replace(rule, text=joined if len(joined) <= MAX_RULE_CHARS else rule.text)
            if all(rule.text != seen.text for seen in rules):
                rules.append(rule)
    return rules


def recognise_rule(sentence: str, said_at: datetime | None) -> RecognisedRule | None:
    """The rule one sentence states, or None when it states none.

    The patterns that must start a sentence also start a clause after a colon or a dash: people
    lead in before the rule ("unrelated, but while you're in public/: never touch ...", "before
    you commit: run `goose fix`")."""
    stripped = sentence.strip().lstrip("-*> ").strip()
    judged = _CORRECTION.sub("", stripped)
    if not judged or _not_a_rule(judged):
        return None
    chinese = _is_chinese(stripped)
    clauses = [judged, *(part.strip() for part in _LEAD_IN.split(judged)[1:] if part.strip())]
    matches = [
        (kind, weight)
        for pattern, kind, weight in (_ZH_RULES if chinese else _EN_RULES)
        if any(pattern.search(clause) for clause in clauses)
    ]
    if not matches:
        return None
    kind, weight = _type_of(stripped, matches, chinese)
    expires, temporary = _expiry(stripped, said_at)
    reason = _reason(stripped, chinese)
    if temporary and expires is None:
        reason = "; ".join(part for part in (reason, "temporary, no date to count from") if part)
    return RecognisedRule(text=stripped, type=kind, weight=weight, reason=reason, expires=expires, temporary=temporary)


# "no, don't bother with the CLI": a correction leads in with "no"; the rest is what is judged.
_CORRECTION = re.compile(r"^(?:no|nope|nah)[,.!]\s+(?=\S)", re.IGNORECASE)


def _not_a_rule(sentence: str) -> bool:
    if sentence.endswith(("?", "？")) or re.search(r"吗[。！.!]?$", sentence):
        return True
    return bool(
        _PROGRAM_OUTPUT.search(sentence)
        or _QUESTION_START.search(sentence)
        or _NARRATION.search(sentence)
        or _NOT_RULES.search(sentence)
    )


def _type_of(sentence: str, matches: list[tuple[str, float]], chinese: bool) -> tuple[str, float]:
    kinds = {kind for kind, _ in matches}
    weight = max(weight for _, weight in matches)
    if "command" in kinds or (_COMMAND_BODY.search(sentence) and re.search(r"\b(?:run|use)\b", sentence, re.I)):
        return "command", max(weight, 0.7)
    if "fact" in kinds and not (_HARD_ZH if chinese else _HARD_EN).search(sentence):
        return "fact", 0.6
    if _PREFER.search(sentence) and not _STRONG.search(sentence):
        return "preference", min(weight, 0.7)
    if "constraint" in kinds and (_HARD_ZH if chinese else _HARD_EN).search(sentence):
        return "constraint", weight
    if "preference" in kinds:
        return "preference", min(weight, 0.7)
    return matches[0]


def _reason(sentence: str, chinese: bool) -> str:
    explicit = (_ZH_REASON if chinese else _EN_REASON).search(sentence)
    if explicit:
        return explicit.group(1).strip(" .。")
    clauses = [clause.strip(" .。") for clause in _CLAUSE_SPLIT.split(sentence) if clause.strip(" .。")]
    if len(clauses) < 2:
        return ""
    patterns = _ZH_RULES if chinese else _EN_RULES
    # "the branch is being refactored, don't commit": the clause that states a situation and no
    # rule is why the rule holds.
    for clause in clauses:
        if _STATE_CLAUSE.search(clause) and not any(pattern.search(clause) for pattern, _, _ in patterns):
            return clause
    return ""


def _expiry(sentence: str, said_at: datetime | None) -> tuple[date | None, bool]:
    """(the last day the rule holds, whether it is temporary)."""
    day = said_at.date() if said_at is not None else None
    lower = sentence.lower()
    explicit = _explicit_date(sentence, day)
    if explicit is not None:
        return explicit, True
    if re.search(r"\btoday\b|\btonight\b|今天|今晚", lower):
        return day, True
    if re.search(r"\btomorrow\b|明天", lower):
        return (day + timedelta(days=1)) if day else None, True
    weekday = _EN_WEEKDAY.search(sentence) or _ZH_WEEKDAY.search(sentence)
    if weekday is not None:
        return (_next_weekday(day, weekday) if day else None), True
    if re.search(r"\bthis week\b|\buntil next week\b|本周|这周|这个星期|本星期", lower):
        return (day + timedelta(days=6 - day.weekday())) if day else None, True
    if re.search(r"\bthis month\b|本月|这个月", lower):
        return (day.replace(day=calendar.monthrange(day.year, day.month)[1])) if day else None, True
    span = _EN_SPAN.search(sentence)
    if span is not None:
        count = int(span.group(1)) if span.group(1).isdigit() else _NUMBER_WORDS[span.group(1).lower()]
        days = count * (7 if span.group(2).lower() == "week" else 1)
        return (day + timedelta(days=days)) if day else None, True
    if _OPEN_ENDED.search(sentence):
        return (day + timedelta(days=OPEN_ENDED_TEMPORARY_DAYS)) if day else None, True
    return None, False


def _explicit_date(sentence: str, day: date | None) -> date | None:
    iso = _ISO_DATE.search(sentence)
    if iso is not None:
        return _safe_date(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
    if day is None:
        return None
    month_day = _EN_MONTH_DAY.search(sentence)
    if month_day is not None and month_day.group(1).capitalize() in _MONTHS:
        return _upcoming(day, _MONTHS[month_day.group(1).capitalize()], int(month_day.group(2)))
    zh = _ZH_MONTH_DAY.search(sentence)
    if zh is not None:
        if zh.group(1):
            return _safe_date(int(zh.group(1)), int(zh.group(2)), int(zh.group(3)))
        return _upcoming(day, int(zh.group(2)), int(zh.group(3)))
    return None


def _upcoming(day: date, month: int, day_of_month: int) -> date | None:
    """That month and day this year, or next year when it has passed."""
    this_year = _safe_date(day.year, month, day_of_month)
    if this_year is not None and this_year < day:
        return _safe_date(day.year + 1, month, day_of_month)
    return this_year


def _safe_date(year: int, month: int, day_of_month: int) -> date | None:
    try:
        return date(year, month, day_of_month)
    except ValueError:
        return None


def _next_weekday(day: date, match: re.Match[str]) -> date:
    if match.re is _EN_WEEKDAY:
        following, target = bool(match.group(1)), _WEEKDAYS[match.group(2).lower()]
    else:
        following, target = bool(match.group(1)), _ZH_WEEKDAYS[match.group(2)]
    ahead = (target - day.weekday()) % 7
    if match.re is _EN_WEEKDAY:
        ahead = ahead or 7  # "until Friday" said on a Friday means the next one
    if following:
        ahead = (7 - day.weekday()) + target  # the named day of next week
    return day + timedelta(days=ahead)


def _is_chinese(text: str) -> bool:
    return any("\u4e00" <= character <= "\u9fff" for character in text)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])")
# Where a lead-in ends and the rule begins: "heads-up: ...", "X — ...", "注意：...".
_LEAD_IN = re.compile(r":\s+|：\s*|\s+(?:—|–|--)\s+")
_FENCE = re.compile(r"^\s*(?:```|~~~)")


def message_sentences(text: str) -> list[str]:
    """The sentences of one user message, without code blocks and pasted program output."""
    return [sentence for paragraph in message_paragraphs(text) for sentence in paragraph]


def message_paragraphs(text: str) -> list[list[str]]:
    """The sentences of one user message by line, without code blocks and pasted program output."""
    paragraphs: list[list[str]] = []
    in_code = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_code = not in_code
            continue
        # Pasted output (indented four spaces, a prompt, a traceback line) is not the user talking.
        if in_code or line.startswith(("    ", "\t")) or _PROGRAM_OUTPUT.search(line):
            continue
        sentences = [part.strip() for part in _SENTENCE_END.split(line.strip()) if part.strip()]
        if sentences:
            paragraphs.append(sentences)
    return paragraphs
