"""The user's durable statements in what they typed: rules, conventions, decisions, environment
facts and preferences, in their own words, in any of nine languages (issues 15 and 34).

Contract:
- `judge_sentence(sentence, said_at) -> Judgement`: the rules one sentence states (usually one;
  two when a standing statement and a time-boxed one share it), or none with the reason code
  (`QUESTION`, `REQUEST`, `CHATTER`, `STATUS`, `NARRATION`, `ONE_OFF`, `PROGRAM_OUTPUT`,
  `NO_SIGNAL`). `recognise_rule` is its first rule or None.
- `rules_in_message(text, said_at)`: the rules of one user message, in order, each once, code
  blocks and pasted output skipped, a rule followed by the sentences that explain it.
- `rules_in_session(user_turns, said_at)`: the rules of a whole session, each with `turn` (which
  user message said it, from 1); a later correction replaces the statement it corrects.

How a sentence is judged (`judge_sentence`'s docstring has the steps): from its structure, in its
language, with the small per-language tables of `extract.lexicons` (English, Chinese, Japanese,
Korean, Spanish, Portuguese, French, German, Russian). Kept: every statement about the project,
its environment or how to work, with or without a keyword ("Decision: ...", "Note: ...",
"FYI ...", "test files live next to the module", "the local API listens on port 8087"). Not
kept: a question, a request about the change at hand, chatter, a report of the moment's state,
a past event, pasted program output. A past-tense clause beside a rule is its reason, not a
veto ("don't edit the lockfile by hand, we shipped a broken one last time").

Time (the contract consolidation relies on):
- A one-off ("only for this commit", "just today", "this time", "just this once", 这次, 今回だけ,
  이번만, esta vez, desta vez, cette fois, diesmal, в этот раз, ...) is never a rule: the sentence
  gives nothing (`ONE_OFF`), so it never reaches a stage-1 output, cannot be served as a rule and
  cannot replace a standing one. A standing rule in the same sentence is kept alone, without the
  one-off clause.
- A time-boxed rule ("for now", "this week", "until Friday", "not yet", "today", and the same in
  each language) is `temporary` with `expires` counted from `said_at` (the session's time, UTC):
  explicit dates, weekdays, "this week", "this month", "for 3 days"; an open-ended one holds
  `OPEN_ENDED_TEMPORARY_DAYS`. It is served until then and leaves by the `entry_expiry` route.
  Without `said_at` it keeps no date and says so in its reason.
- A clause that holds from now on ("for good", a decision, "always") is not made temporary by a
  "don't touch it yet" beside it: the standing part is one rule without expiry, the time-boxed
  part another, temporary.
- Everything else is permanent (no `expires`).

Pure and deterministic: regular expressions and one bundled language classifier, no I/O.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from codex_memories.extract.lexicons import (
    FROM_NOW_ON,
    LEXICONS,
    VALUE,
    Lexicon,
    lexicon_for,
    likely_languages,
    other_latin_languages,
)
from codex_memories.typed_entries import word_stem

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
    language: str = "en"
    # Which of the session's user turns said it (1 is the first message the user typed).
    turn: int | None = None


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
    text: str,
    said_at: datetime | None,
    *,
    fallback: Callable[[str], RecognisedRule | None] | None = None,
    answers_a_question: bool = False,
) -> list[RecognisedRule]:
    """The rules in one user message, in order, each once; code blocks are skipped.

    A rule is its sentence plus the sentences right after it in the same paragraph (at most
    `MAX_ELABORATION_SENTENCES`, up to the next rule or question, `MAX_RULE_CHARS` in all): people
    state a rule and then say what it means and why. `fallback` judges a sentence no pattern
    here recognises (the heuristic provider's scoped-instruction form); a sentence judged a
    one-off is never handed to it. When the message answers the assistant's question
    (`answers_a_question`), a leading fragment that states nothing on its own and is followed by
    a rule is the answer that rule goes with ("Decimal, mit zwei Nachkommastellen. Keine Floats
    für Geld, nirgends." to "Decimal or integer cents?"): it leads the rule's text."""
    rules: list[RecognisedRule] = []
    for number, paragraph in enumerate(message_paragraphs(text)):
        judged: list[tuple[str, Judgement]] = []
        for sentence in paragraph:
            judgement = judge_sentence(sentence, said_at)
            if not judgement.rules and fallback is not None and judgement.verdict not in (ONE_OFF, QUESTION, PROGRAM_OUTPUT):
                fallen = fallback(sentence)
                if fallen is not None:
                    judgement = Judgement((fallen,), KEPT, strong=True)
            judged.append((sentence, judgement))
        consumed: set[int] = set()
        answer = _answer_lead(judged) if answers_a_question and number == 0 else None
        if answer is not None:
            consumed.add(0)
        for index, (_, judgement) in enumerate(judged):
            if index in consumed:
                continue
            for position, rule in enumerate(judgement.rules):
                if answer is not None and index == 1 and position == 0:
                    rule = replace(rule, text=answer + ("" if answer.endswith(("。", "！", "．")) else " ") + rule.text)
                elaboration = []
                # Only the last rule of a sentence takes the sentences after it; a sentence that
                # only describes ("writes go to the primary only") explains the rule before it.
                following = judged[index + 1 : index + 1 + MAX_ELABORATION_SENTENCES] if position == len(judgement.rules) - 1 else []
                for offset, (sentence, other) in enumerate(following, start=index + 1):
                    if (other.rules and other.strong) or sentence.rstrip().endswith(("?", "？")):
                        break
                    elaboration.append(sentence)
                    consumed.add(offset)
                if elaboration:
                    joined = " ".join([rule.text, *elaboration])
                    rule = replace(rule, text=joined if len(joined) <= MAX_RULE_CHARS else rule.text)
                if all(rule.text != seen.text for seen in rules):
                    rules.append(rule)
    return rules


def _answer_lead(judged: list[tuple[str, Judgement]]) -> str | None:
    """The first sentence, when it is a fragment that is not a question, chatter, a request, a
    report, a one-off or a strong rule of its own, and the sentence after it states a rule."""
    first = judged[0][1]
    # A weak reading of the fragment on its own ("UTC, in ISO 8601." as a fact) gives way to the
    # rule it answers with.
    if len(judged) < 2 or first.verdict not in (NO_SIGNAL, KEPT) or first.strong or not judged[1][1].rules:
        return None
    sentence = judged[0][0].strip()
    return sentence if _fragments(sentence, lexicon_for(sentence)) else None


def asks_one_off(text: str) -> bool:
    """The message asks for an exception for once ("use --no-verify for this commit only", 今回だけ,
    "nur dieses Mal"), as a statement or as a question ("could you build it with X just today?").
    What is done in answer is not a way of working to remember."""
    return any(lexicon_for(sentence).one_off.search(sentence) for sentence in message_sentences(text))


def rules_in_session(
    user_turns: list[str],
    said_at: datetime | None,
    *,
    fallback: Callable[[str], RecognisedRule | None] | None = None,
    answers: Sequence[bool] = (),
) -> list[RecognisedRule]:
    """The standing statements of a whole session, each with the user turn that said it.

    `user_turns` are the messages the user typed, in order (turn 1 first); `answers[i]` says
    whether turn i + 1 came right after a question of the assistant's. A statement that
    corrects an earlier one replaces it, so only the corrected one is kept: a later statement
    with a correction marker ("actually", "I meant", 其实, 訂正, en realidad, eigentlich, ...) that
    names the earlier one's value or shares two of its words, or a later statement that repeats
    most of an earlier one's words with another value ("the API listens on 8087" -> "... on
    8090"). Said again with no change, the first saying is kept."""
    kept: list[RecognisedRule] = []
    for turn, text in enumerate(user_turns, start=1):
        answering = turn <= len(answers) and answers[turn - 1]
        found = rules_in_message(text, said_at, fallback=fallback, answers_a_question=answering)
        follow_ups = [] if found else _follow_up(text, kept, said_at)
        for rule in found or follow_ups:
            rule = replace(rule, turn=turn)
            if any(rule.text == seen.text for seen in kept):
                continue
            corrected = _corrected(rule, kept, answers_the_last=not found)
            kept = [seen for seen in kept if seen is not corrected and not _replaces(rule, seen)]
            kept.append(rule)
    return kept


def _follow_up(text: str, kept: list[RecognisedRule], said_at: datetime | None) -> list[RecognisedRule]:
    """A message that only makes sense beside a standing statement said earlier in the session:
    it corrects it ("actually scratch that, ruff format instead"), drops what it named ("loguru is
    out") or adds to it ("also run tsc before committing" after "always run eslint before you
    commit"). It stands as the earlier one stood, with its type."""
    stripped = text.strip()
    if not kept or not stripped or len(stripped) > MAX_RULE_CHARS or "\n" in stripped:
        return []
    if judge_sentence(stripped, said_at).verdict in (QUESTION, PROGRAM_OUTPUT, CHATTER, ONE_OFF):
        return []
    lexicon = lexicon_for(stripped)
    candidate = RecognisedRule(text=stripped, type=kept[-1].type, weight=kept[-1].weight, language=lexicon.language)
    if _corrects(stripped, lexicon):
        earlier = _corrected(candidate, kept, answers_the_last=True)
        return [replace(candidate, type=earlier.type, weight=earlier.weight)] if earlier is not None else []
    dropped = [seen for seen in kept if _drops_earlier(stripped, seen.text, lexicon)]
    if dropped:
        return [replace(candidate, type=dropped[-1].type, weight=dropped[-1].weight)]
    if lexicon.also.search(stripped):
        related = [seen for seen in kept if len(_subject_words(stripped) & _subject_words(seen.text)) >= ADDITION_SHARED_WORDS]
        return [replace(candidate, type=related[-1].type, weight=related[-1].weight)] if related else []
    return []


# An addition ("also run tsc before committing") shares this many words with the rule it adds to.
ADDITION_SHARED_WORDS = 2
# "No, ..." in each language: the message answers what was said before it.
_LEADING_NO = re.compile(r"^(?:[^\W\d]+[,\s]+){0,2}?(?:no|nope|nah|nee|nein|ne|non|não|нет|不|いや|아니|아니다|아뇨|아니요)\s*[,，.!、]", re.IGNORECASE)


def _corrects(text: str, lexicon: Lexicon) -> bool:
    return bool(lexicon.correction.search(text) or _LEADING_NO.search(text))


def _corrected(later: RecognisedRule, kept: list[RecognisedRule], *, answers_the_last: bool = False) -> RecognisedRule | None:
    """The earlier statement a correction ("actually", "no, ...", "wait, changed my mind") replaces:
    the latest that shares a word or a value with it; failing that, for a message that states
    nothing on its own (`answers_the_last`) led by a "no" ("en fait non, on part sur Liquibase"),
    the latest of all. None when the later statement is no correction, or adds ("actually, also
    run the linter")."""
    stripped = later.text.strip()
    lexicon = lexicon_for(stripped)
    if not _corrects(stripped, lexicon) or lexicon.also.search(stripped):
        return None
    earlier = [seen for seen in kept if seen.turn is None or later.turn is None or seen.turn < later.turn]
    if not earlier:
        return None
    later_stems, later_values = _stems(stripped), _values(stripped)
    related = [seen for seen in earlier if later_stems & _stems(seen.text) or later_values & _values(seen.text)]
    if related:
        return related[-1]
    # "en fait non, on part sur Liquibase": a "no" answers what was just said, whatever it names.
    return earlier[-1] if answers_the_last and _LEADING_NO.search(stripped) else None


def _stems(text: str) -> set[str]:
    """A correction need not repeat the earlier word exactly (`typed_entries.word_stem`)."""
    return {word_stem(word) for word in _subject_words(text)}


def _values(text: str) -> set[str]:
    return {value.strip("`").casefold() for value in VALUE.findall(text)}


_SUBJECT_WORD = re.compile(r"[^\W\d_]{3,}|[\u3400-\u9fff\u3040-\u30ff\uac00-\ud7af]{2}")


def _subject_words(text: str) -> set[str]:
    """The words a statement is about, values left out (CJK text as overlapping pairs of characters)."""
    bare = VALUE.sub(" ", text).casefold()
    words = set()
    for run in re.findall(r"[^\W\d_]+", bare):
        if re.match(r"[\u3400-\u9fff\u3040-\u30ff\uac00-\ud7af]", run):
            words |= {run[index : index + 2] for index in range(max(1, len(run) - 1))}
        elif len(run) >= 3:
            words.add(run)
    return words


# A later statement with most of an earlier one's words and a new value replaces it.
REPLACEMENT_OVERLAP = 0.6


def _replaces(later: RecognisedRule, earlier: RecognisedRule) -> bool:
    if later.turn == earlier.turn:
        return False
    later_words, earlier_words = _subject_words(later.text), _subject_words(earlier.text)
    shared = later_words & earlier_words
    later_values, earlier_values = _values(later.text), _values(earlier.text)
    lexicon = lexicon_for(later.text)
    if lexicon.correction.search(later.text.strip()) and (len(shared) >= 2 or later_values & earlier_values):
        return True
    # "logging goes through structlog now, loguru is out": the later statement drops what the earlier one named.
    if _drops_earlier(later.text, earlier.text, lexicon):
        return True
    smaller = min(len(later_words), len(earlier_words))
    return bool(smaller and later_values and earlier_values and later_values != earlier_values and len(shared) / smaller >= REPLACEMENT_OVERLAP)


# A name a statement is about (a tool, a library, a value): something in backticks or a Latin word
# of three characters or more, ASCII only: "Redis는" names Redis, its particle is Korean.
_NAME = re.compile(r"`[^`]+`|[A-Za-z][A-Za-z0-9_.+-]{2,}")
# How far from a retraction marker the name it drops may stand ("loguru 不要了", "no more yarn").
_DROPPED_NAME_REACH = 24


def _drops_earlier(later: str, earlier: str, lexicon: Lexicon) -> bool:
    """The later statement drops what the earlier one named: the name right beside a retraction
    marker ("loguru 不要了", "instead of loguru", "yarn is out") is one the earlier statement used."""
    earlier_names = {name.strip("`").casefold() for name in _NAME.findall(earlier)}
    for marker in lexicon.retraction.finditer(later):
        before = _NAME.findall(later[max(0, marker.start() - _DROPPED_NAME_REACH) : marker.start()])
        after = _NAME.findall(later[marker.end() : marker.end() + _DROPPED_NAME_REACH])
        beside = ([before[-1]] if before else []) + ([after[0]] if after else [])
        if any(name.strip("`").casefold() in earlier_names for name in beside):
            return True
    return False


def recognise_rule(sentence: str, said_at: datetime | None) -> RecognisedRule | None:
    """The standing rule one sentence states (the first when it states two), or None."""
    judgement = judge_sentence(sentence, said_at)
    return judgement.rules[0] if judgement.rules else None


def judge_sentence(sentence: str, said_at: datetime | None) -> Judgement:
    """What one user sentence states: its rules, or the reason it states none (`Judgement`).

    Decided from the structure of the sentence, in its language (`extract.lexicons`):
    1. What is not a statement goes first: pasted program output, a question.
    2. A lead-in ("Note:", "Decision:", "FYI", 注意：...) is taken off; the rest is judged.
    3. Clauses that narrate the past ("we shipped a broken lockfile last time") are set aside:
       they are the reason of the rule they sit beside, not a rule and not a veto. A sentence
       with nothing else is a past event. A clause that moved the project to a new state ("we
       switched the CI image to ubuntu-24.04 last week") is a fact, and the day it names dates
       the change rather than boxing it.
    4. The signal: a normative word, a standing-time adverb, a decision, a meaningful lead-in
       (strong), or a preference, a practice of the team, a convention form, an environment
       fact with its value (weak). A weak signal loses to chatter, a request about the change at
       hand and a report of the moment's state; a standing-time adverb alone loses to a report
       ("the test always fails").
    5. Time: a one-off clause ("only for this commit") never gives a rule; a time-boxed clause
       gives a temporary rule; a clause with a standing marker beside them stays permanent.
    """
    stripped = sentence.strip().lstrip("-*> ").strip()
    judged = _CORRECTION.sub("", stripped)
    if not judged:
        return Judgement((), NO_SIGNAL)
    judgement = Judgement((), NO_SIGNAL)
    # A short Latin-script sentence may be read as a neighbouring language ("As branches de
    # feature se chamam ..." as French): when its first reading finds nothing, the next one judges.
    readings = likely_languages(judged)
    for language in readings:
        judgement = _judge_in(LEXICONS[language], stripped, judged, said_at)
        if judgement.verdict != NO_SIGNAL:
            return judgement
    # A short sentence the classifier did not place ("Nunca hagas force push a main." read as
    # English): another Latin language's table may still know an unmistakable rule word in it.
    # Only a strong signal counts there; a weak one in the wrong language is noise.
    for language in other_latin_languages(judged, readings):
        other = _judge_in(LEXICONS[language], stripped, judged, said_at)
        if other.verdict == KEPT and other.strong:
            return other
    return judgement


def _judge_in(lexicon: Lexicon, stripped: str, judged: str, said_at: datetime | None) -> Judgement:
    if _PROGRAM_OUTPUT.search(judged):
        return Judgement((), PROGRAM_OUTPUT)
    if _asks(judged, lexicon):
        return Judgement((), QUESTION)
    if lexicon.language == "en" and _NOT_RULES.search(judged):
        return Judgement((), CHATTER)
    lead = lexicon.lead_in.match(judged)
    body = judged[lead.end() :].strip() if lead else judged
    if not body:
        return Judgement((), NO_SIGNAL)
    clauses = _clauses(body, lexicon)
    narrated = [clause for clause in clauses if _narrates(clause, lexicon)]
    content = [clause for clause in clauses if clause not in narrated]
    if not content:
        return Judgement((), NARRATION)
    whole = _join(content, lexicon)
    one_off = [clause for clause in content if lexicon.one_off.search(clause)]
    # A day named beside a change of state dates the change ("we moved to node 20 today"); it does not box the fact.
    timed = [
        clause for clause in content if clause not in one_off and not _changes_state(clause, lexicon) and _time_boxed(clause, said_at, lexicon)
    ]
    # Beside a one-off, only what says it holds from now on stands ("just this once skip the hooks,
    # but never push to main"); a bare imperative ("..., usa SKIP=rubocop") is how the one-off is done.
    standing_beside = [clause for clause in content if clause not in one_off and clause not in timed and _standing(clause, lexicon)]
    if one_off and not standing_beside:
        return Judgement((), ONE_OFF)
    signal = _signal(whole, judged, lexicon, lead_in=bool(lead) and _meaningful_lead_in(lead.group(0)))
    if signal is None:
        return Judgement((), _why_not(whole, lexicon))
    kind, weight = signal
    strong = _strong(whole, lexicon) or (bool(lead) and _meaningful_lead_in(lead.group(0)))
    reason = _reason(stripped, lexicon) or _join([clause.strip(" .。") for clause in narrated], lexicon)

    def rule(text: str, temporary_from: str | None) -> RecognisedRule:
        expires, temporary = _expiry(temporary_from, said_at, lexicon) if temporary_from else (None, False)
        why = reason
        if temporary and expires is None:
            why = "; ".join(part for part in (why, "temporary, no date to count from") if part)
        return RecognisedRule(text=text, type=kind, weight=weight, reason=why, expires=expires, temporary=temporary, language=lexicon.language)

    if one_off:
        return Judgement((rule(_join(standing_beside, lexicon), None),), KEPT, strong)
    if timed:
        standing = [clause for clause in content if clause not in timed and _standing(clause, lexicon)]
        if not standing:
            return Judgement((rule(stripped, stripped),), KEPT, strong)
        rules = [rule(_join(standing, lexicon), None)]
        rest = [clause for clause in content if clause not in standing]
        if rest and _signal(_join(rest, lexicon), _join(rest, lexicon), lexicon, lead_in=False) is not None:
            rules.append(rule(_join(rest, lexicon), _join(rest, lexicon)))
        return Judgement(tuple(rules), KEPT, strong)
    return Judgement((rule(stripped, None),), KEPT, strong)


# Why nothing was kept: one code each, counted by the benchmark (`benchmarks/rule_recognition.py`).
KEPT = "kept"
NO_SIGNAL = "no_signal"
PROGRAM_OUTPUT = "program_output"
QUESTION = "question"
CHATTER = "chatter"
REQUEST = "request"
STATUS = "status"
NARRATION = "narration"
ONE_OFF = "one_off"


@dataclass(frozen=True)
class Judgement:
    rules: tuple[RecognisedRule, ...]
    verdict: str
    # Kept on a strong signal (a normative word, a standing-time adverb, a decision, a lead-in);
    # a sentence kept on a weak one right after a rule is that rule's explanation.
    strong: bool = False


def _asks(sentence: str, lexicon: Lexicon) -> bool:
    if sentence.endswith(("?", "？")) or re.search(r"[?？]\s*[\"')\]]?$", sentence):
        return True
    if lexicon.language == "en":
        return bool(_QUESTION_START.search(sentence) or lexicon.question.search(sentence))
    if lexicon.language == "zh":
        return bool(_QUESTION_START.search(sentence) or lexicon.question.search(sentence))
    return bool(lexicon.question.search(sentence))


# Where a sentence divides into clauses: commas, semicolons, dashes and the "but" of each language.
_CLAUSE_BREAK = re.compile(
    r"\s*[;；]\s*|(?<=[^\d]),\s+|，|、(?=\S{4,})|\s+(?:—|–|--)\s+"
    r"|\s+(?=(?:but|pero|mas|mais|aber|но|sondern)\s)|(?<=[けが])[、,]\s*|(?:但是|不过|可是)|지만\s*",
    re.IGNORECASE,
)
# A clause this short is a scope or a time ("This time", "In this repo", "Just today", 在这个仓库里):
# it belongs to the clause after it.
_BARE_CLAUSE_WORDS = 3
_BARE_CLAUSE_CHARS = 8


def _clauses(text: str, lexicon: Lexicon) -> list[str]:
    parts = [part.strip() for part in _CLAUSE_BREAK.split(text) if part and part.strip(" ,.;。")]
    merged: list[str] = []
    carry = ""
    for part in parts:
        joined = f"{carry} {part}".strip() if lexicon.language not in _SPACELESS_LANGUAGES else carry + part
        if _bare(part, lexicon) and part is not parts[-1]:
            carry = joined + ("" if lexicon.language in _SPACELESS_LANGUAGES else ",")
            continue
        merged.append(joined)
        carry = ""
    if carry:
        merged.append(carry.rstrip(","))
    return merged or [text]


_SPACELESS_LANGUAGES = frozenset({"zh", "ja"})


def _bare(clause: str, lexicon: Lexicon) -> bool:
    if lexicon.language in _SPACELESS_LANGUAGES:
        return len(clause.strip(" .。")) <= _BARE_CLAUSE_CHARS and not VALUE.search(clause)
    return len(clause.split()) <= _BARE_CLAUSE_WORDS and not VALUE.search(clause)


def _join(clauses: list[str], lexicon: Lexicon) -> str:
    separator = "，" if lexicon.language == "zh" else "、" if lexicon.language == "ja" else ", "
    return separator.join(clause.strip() for clause in clauses if clause.strip())


def _narrates(clause: str, lexicon: Lexicon) -> bool:
    """A past event ("we shipped a broken lockfile last time"), unless it is a decision, holds
    from now on, or moved the project to a new state ("we moved the workspace to node 20 last week")."""
    return bool(lexicon.narration.search(clause)) and not (
        lexicon.decision.search(clause) or FROM_NOW_ON.search(clause) or _changes_state(clause, lexicon)
    )


# A file a clause names (`utils.py`, `src/app/`): moving something into it is an edit of the moment.
_FILE_VALUE = re.compile(r"/|\.(?:[a-z]{1,5})$", re.IGNORECASE)
_FILE_NAME = re.compile(
    r"[\w.-]+\.(?:py|pyi|js|jsx|ts|tsx|mjs|go|rs|rb|java|kt|kts|scala|swift|c|h|cc|cpp|hpp|cs|php|vue|svelte|css|scss|html"
    r"|md|rst|txt|json|ya?ml|toml|ini|cfg|sh|sql|proto|lock)\b"
)


def _changes_state(clause: str, lexicon: Lexicon) -> bool:
    """The project or its environment moved to a new standing state, and the clause names it: a
    version, a port, a profile, a host ("switched the CI image to ubuntu-24.04", "von yarn auf bun",
    "ポートを 8093 に変えた"). Moving a function into a file is an edit of the moment, not a state."""
    change = lexicon.state_change.search(clause)
    if change is None:
        return False
    # The new state follows the verb ("switched the repo to pnpm 9"), except where the verb comes
    # last ("auf Postgres 16 umgestiegen", "Python 3.12 に上げた").
    target = _FILE_NAME.sub(" ", clause if lexicon.language in _VERB_LAST_LANGUAGES else clause[change.end() :])
    values = [value.strip("`") for value in VALUE.findall(target)]
    if any(not _FILE_VALUE.search(value) for value in values) or _NAMED_VERSION.search(target):
        return True
    # "the team switched from yarn to bun": two named tools and no number is still a state.
    return bool(_FROM_TO.search(clause))


_VERB_LAST_LANGUAGES = frozenset({"ja", "ko", "de"})


# A tool and its major version, which `VALUE` leaves out for being one digit: "pnpm 9", "Java 8".
_NAMED_VERSION = re.compile(r"\b[A-Za-z][\w.+-]*\s+v?\d+(?:\.\d+)*\b")


_FROM_TO = re.compile(
    r"\b(?:from|von|de|desde|с)\s+\S+(?:\s+\S+)?\s+(?:to|auf|zu|nach|a|para|à|vers|на)\s+\S|从.{1,20}(?:换成|改成|切换到|迁移到|升级到|到)"
    r"|から.{1,30}(?:に|へ)|에서.{1,30}(?:으로|로)",
    re.IGNORECASE,
)


_MEANINGFUL_LEAD_IN = re.compile(r"^(?:btw|by the way|au fait|übrigens|кстати|顺便|ちなみに|참고로|por cierto|aliás)\b", re.IGNORECASE)


def _meaningful_lead_in(lead: str) -> bool:
    """"Note:", "Decision:", "FYI" say the rest is worth keeping; "by the way" says nothing."""
    return not _MEANINGFUL_LEAD_IN.match(lead.strip())


_DECIDING_LEAD_IN = re.compile(
    r"^(?:decision|convention|rule|policy|important|决定|约定|规则|规定|原则|重要|決定|決まり|ルール|規約|方針|重要|결정|규칙|규약|중요"
    r"|decisión|convención|regla|norma|importante|decisão|convenção|regra|décision|règle|entscheidung|konvention|regel|wichtig"
    r"|решение|соглашение|правило|важно)",
    re.IGNORECASE,
)


def _strong(clause: str, lexicon: Lexicon) -> bool:
    return bool(lexicon.normative.search(clause) or lexicon.decision.search(clause) or _standing(clause, lexicon) or _old_patterns(clause, lexicon))


def _standing(clause: str, lexicon: Lexicon) -> bool:
    """A marker that the statement holds from now on: "always", "from now on", "for good", a decision."""
    return bool(lexicon.durable.search(clause) or lexicon.decision.search(clause))


def _old_patterns(text: str, lexicon: Lexicon) -> list[tuple[str, float]]:
    if lexicon.language not in ("en", "zh"):
        return []
    clauses = [text, *(part.strip() for part in _LEAD_IN.split(text)[1:] if part.strip())]
    patterns = _ZH_RULES if lexicon.language == "zh" else _EN_RULES
    return [(kind, weight) for pattern, kind, weight in patterns if any(pattern.search(clause) for clause in clauses)]


# A pronoun subject or a past verb with a standing-time adverb describes, it does not rule: "it
# never finishes", "the delivery never arrived".
_DESCRIBED = re.compile(r"^(?:it|this|that|they|he|she)\b|\b(?:always|never)\s+(?-i:[a-z]+ed)\b", re.IGNORECASE)


def _signal(whole: str, sentence: str, lexicon: Lexicon, *, lead_in: bool) -> tuple[str, float] | None:
    old = _old_patterns(whole, lexicon)
    if old:
        return _type_of(whole, old, lexicon.language == "zh")
    if lexicon.normative.search(whole):
        return "constraint", 0.9
    if lexicon.decision.search(whole):
        return "constraint", 0.8
    if lead_in:
        return ("constraint", 0.8) if _DECIDING_LEAD_IN.match(sentence) else ("fact", 0.6)
    if lexicon.durable.search(whole) and not (lexicon.status.search(whole) or _DESCRIBED.search(whole) or _scope_of_request(whole, lexicon)):
        return "constraint", 0.8
    if _changes_state(whole, lexicon) and not (lexicon.request.search(whole) or lexicon.chatter.search(whole) or lexicon.at_hand.search(whole)):
        return "fact", 0.7
    if _weak_blocked(whole, lexicon) or _too_short(whole, lexicon):
        return None
    if lexicon.preference.search(whole):
        return "preference", 0.6
    if VALUE.search(whole) and lexicon.fact.search(whole):
        return "fact", 0.6
    if lexicon.team.search(whole) or lexicon.convention.search(whole):
        return "preference", 0.7
    if lexicon.terse.search(whole) and _fragments(whole, lexicon):
        return "preference", 0.6
    if _versioned_value(whole) and _PLACE.search(whole) and _fragments(whole, lexicon):
        return "fact", 0.6
    return None


# An instruction without a verb is a few short fragments ("Small diffs, one change per PR.",
# "respuestas cortas, sin resumen al final"); a sentence with a subject is something else.
_FRAGMENT_BREAK = re.compile(r"[,;，、；：。！]\s*|[.:!](?:\s+|$)|\s[—–>-]\s")
MAX_FRAGMENT_WORDS = 7
MAX_FRAGMENT_CHARACTERS = 16
MAX_FRAGMENTS = 3
_SUBJECT = re.compile(
    r"^(?:I|we|you|it|this|that|they|he|she|there|ich|wir|du|es|das|je|nous|tu|il|on|yo|nosotros|tú|eu|nós|você|я|мы|ты|это|он|она)\b|^[jc]['’]"
    r"|^(?:我|我们|你|它|这|那|他|她|私|僕|俺|これ|それ|나는|저는|우리)",
    re.IGNORECASE,
)


# Where a value holds, in a fragment ("Node 20 in CI", "Staging at staging.internal:8443"): an
# environment fact said without a verb. Its value has a digit (a version, a port, a host), so
# "Commit-Messages auf Deutsch" is not one.
_PLACE_WORDS = frozenset(("in", "on", "at", "en", "sur", "auf", "unter", "im", "em", "no", "na", "nos", "nas", "в", "на"))
_PLACE = re.compile(r"\b(?:" + "|".join(sorted(_PLACE_WORDS)) + r")\s|\S\s*(?:上|里)\s", re.IGNORECASE)


def _versioned_value(text: str) -> bool:
    """A value with a letter and a digit in it: a version ("Redis 7", "v2.3"), a host and port, a
    numbered name; a time or a bare number is not one ("at 02:00")."""
    names = (match.group(0).split()[0] for match in _NAMED_VERSION.finditer(text))
    named = any(len(name) >= 3 and name.lower() not in _PLACE_WORDS for name in names)
    return named or any(re.search(r"\d", value.group(0)) and re.search(r"[^\W\d_]", value.group(0)) for value in VALUE.finditer(text))


# A Latin name or number inside a fragment of a spaceless language (`PR`, `request_id`, `8443`).
_LATIN_RUN = re.compile(r"[A-Za-z0-9_.:-]+")


def _fragments(text: str, lexicon: Lexicon) -> bool:
    parts = [part.strip() for part in _FRAGMENT_BREAK.split(text) if part.strip()]
    if not parts or len(parts) > MAX_FRAGMENTS or any(_SUBJECT.match(part) for part in parts):
        return False
    if lexicon.language in _SPACELESS_LANGUAGES:
        # Characters, a Latin name or number counting as one (`PR`, `request_id`, `8443`).
        return all(len(re.sub(r"\s", "", _LATIN_RUN.sub("x", part))) <= MAX_FRAGMENT_CHARACTERS for part in parts)
    return all(len(part.split()) <= MAX_FRAGMENT_WORDS for part in parts)


# "everywhere" (and Japanese 全部, "all of it") in each language's durable words: in a request it
# says how far the change at hand reaches ("rename get_usr to get_user everywhere"), not that
# something holds from now on.
_EVERYWHERE = re.compile(r"\b(?:everywhere|partout|überall|везде|en todas partes|em todo lugar|em toda parte)\b|到处|所有地方|どこでも|全部|모든 곳", re.IGNORECASE)


def _scope_of_request(text: str, lexicon: Lexicon) -> bool:
    """A request whose only standing word is its reach: "rename X everywhere please"."""
    if not lexicon.request.search(text):
        return False
    return all(_EVERYWHERE.fullmatch(match.group(0).strip()) for match in lexicon.durable.finditer(text))


# A weak signal in fewer words than this is a fragment ("go", "in dev"), not a statement.
MIN_WEAK_WORDS = 3
MIN_WEAK_CHARACTERS = 6


def _too_short(text: str, lexicon: Lexicon) -> bool:
    if lexicon.language in ("zh", "ja"):
        return len(re.sub(r"\s|[。，、．.!！]", "", text)) < MIN_WEAK_CHARACTERS
    return len(text.split()) < MIN_WEAK_WORDS


def _weak_blocked(text: str, lexicon: Lexicon) -> bool:
    return bool(
        lexicon.chatter.search(text) or lexicon.request.search(text) or lexicon.at_hand.search(text) or lexicon.status.search(text)
    )


def _why_not(text: str, lexicon: Lexicon) -> str:
    if lexicon.chatter.search(text):
        return CHATTER
    if lexicon.request.search(text) or lexicon.at_hand.search(text):
        return REQUEST
    if lexicon.status.search(text):
        return STATUS
    return NO_SIGNAL


def _time_boxed(clause: str, said_at: datetime | None, lexicon: Lexicon) -> bool:
    return _expiry(clause, said_at, lexicon)[1]


# "no, don't bother with the CLI": a correction leads in with "no"; the rest is what is judged.
_CORRECTION = re.compile(r"^(?:no|nope|nah)[,.!]\s+(?=\S)", re.IGNORECASE)


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


def _reason(sentence: str, lexicon: Lexicon) -> str:
    chinese = lexicon.language == "zh"
    pattern = _EN_REASON if lexicon.language == "en" else lexicon.reason
    explicit = pattern.search(sentence) if pattern is not None else None
    if explicit:
        return explicit.group(1).strip(" .。")
    if lexicon.language not in ("en", "zh"):
        return ""
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


def _expiry(sentence: str, said_at: datetime | None, lexicon: Lexicon) -> tuple[date | None, bool]:
    """(the last day the rule holds, whether it is temporary)."""
    day = said_at.date() if said_at is not None else None
    lower = sentence.lower()
    explicit = _explicit_date(sentence, day)
    if explicit is not None:
        return explicit, True
    if _TODAY.search(lower):
        return day, True
    if _TOMORROW.search(lower):
        return (day + timedelta(days=1)) if day else None, True
    weekday = _EN_WEEKDAY.search(sentence) or _ZH_WEEKDAY.search(sentence)
    if weekday is not None:
        return (_next_weekday(day, weekday) if day else None), True
    if _THIS_WEEK.search(lower):
        return (day + timedelta(days=6 - day.weekday())) if day else None, True
    if re.search(r"\bthis month\b|本月|这个月", lower):
        return (day.replace(day=calendar.monthrange(day.year, day.month)[1])) if day else None, True
    span = _EN_SPAN.search(sentence)
    if span is not None:
        count = int(span.group(1)) if span.group(1).isdigit() else _NUMBER_WORDS[span.group(1).lower()]
        days = count * (7 if span.group(2).lower() == "week" else 1)
        return (day + timedelta(days=days)) if day else None, True
    if _OPEN_ENDED.search(sentence) or lexicon.temporary.search(sentence):
        return (day + timedelta(days=OPEN_ENDED_TEMPORARY_DAYS)) if day else None, True
    return None, False


# The day words of the nine languages (`extract.lexicons`): a rule for today holds through today.
_TODAY = re.compile(
    r"\btoday\b|\btonight\b|今天|今晚|今日|今夜|今晩|오늘|\bhoy\b|\besta noche\b|\bhoje\b|\besta noite\b|aujourd'hui|\bce soir\b"
    r"|\bcette nuit\b|\bheute\b|сегодня|этой ночью",
    re.IGNORECASE,
)
_TOMORROW = re.compile(r"\btomorrow\b|明天|明日|내일|\bmañana\b|\bamanhã\b|\bdemain\b|\bmorgen\b|завтра", re.IGNORECASE)
_THIS_WEEK = re.compile(
    r"\bthis week\b|\buntil next week\b|本周|这周|这个星期|本星期|今週|이번 주|esta semana|essa semana|cette semaine|diese woche|на этой неделе",
    re.IGNORECASE,
)


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
# An aside inside a request ("fix the address form; by the way, we validate with Zod"): what
# follows the marker is a sentence of its own, judged without the request around it.
_ASIDE = re.compile(
    r"(?<=[,;:，、；])\s*(?:y\s+|and\s+|e\s+|et\s+|und\s+|и\s+)?(?=(?:by the way|btw|por cierto|de paso|a propósito|aliás|au fait"
    r"|d'ailleurs|übrigens|кстати)\b|顺便说一下|顺便|ちなみに|참고로)",
    re.IGNORECASE,
)
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
        sentences = [
            aside.strip()
            for part in _SENTENCE_END.split(line.strip())
            for aside in _ASIDE.split(part)
            if aside.strip()
        ]
        if sentences:
            paragraphs.append(sentences)
    return paragraphs
