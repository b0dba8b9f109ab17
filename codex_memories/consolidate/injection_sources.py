"""Where a line the injection gate refused came from: the stage-1 outputs to quarantine.

A refused line usually reached the folder from one session's memory (a tool output or a web page
the session read, copied or paraphrased into its raw memory or rollout summary, then into the
consolidated files). Refusing the folder alone would fail every later run the same way, because
that stage-1 output stays selected; tracing the line to its source lets phase 2 quarantine that
one session and consolidate the rest.

Contract:
- `trace_findings(findings, files, sources)` is pure: for each finding on a line (file-level
  findings such as an exec bit are the consolidator's own doing and have no source), the full
  logical line is read back from `files` and compared with every logical line (and every pair of
  adjacent lines) of each source's `raw_memory` and `rollout_summary`, all normalised as the
  gate normalises (`evidence.screen.normalise`: NFKC, format characters, look-alikes).
- The comparison is token containment: the share of the refused line's content tokens, weighted
  by how rare each token is among the source lines (IDF), that a source line holds. Paraphrase
  keeps the rare tokens (a host name, a path, a command) and changes the common ones.
- A source matches when it holds `MIN_SHARED_TOKENS` or more of those tokens and either its
  containment reaches `STRONG_MATCH`, or it reaches `CORROBORATED_MATCH` and the source line
  itself breaks a gate rule (it is hostile on its own, not merely similar). Every source that
  matches is named: the same text may come from several sessions.
- Output: one `TracedFinding` per finding, in the findings' order, with the matching thread ids
  sorted (empty: no source found; the consolidator wrote it) and the best score.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from codex_memories.evidence.screen import GatedFile, InjectionFinding, line_rules, logical_lines, normalise
from codex_memories.state.records import Stage1Output

STRONG_MATCH = 0.75
CORROBORATED_MATCH = 0.5
MIN_SHARED_TOKENS = 2

# Words that say nothing about where a line came from.
_STOPWORDS = frozenset(
    "a an the and or but if then to of in on at by for from with as is are was were be been it its this that these those "
    "you your we our they their he she i me my so do does did not no yes can should must will would any all".split()
)
_TOKEN = re.compile(r"\w+")


@dataclass(frozen=True)
class TracedFinding:
    finding: InjectionFinding
    thread_ids: tuple[str, ...]  # sorted; empty when no source matched
    score: float  # the best containment seen, matched or not


@dataclass(frozen=True)
class _SourceLine:
    thread_id: str
    tokens: frozenset[str]
    text: str

    def hostile(self) -> bool:
        # Asked only of a middling match: the gate's rules over every source line would cost more.
        return bool(line_rules(self.text))


def tokens_of(text: str) -> frozenset[str]:
    """Content tokens of a text, normalised and case-folded."""
    return frozenset(
        token for token in _TOKEN.findall(normalise(text).casefold()) if len(token) > 1 and token not in _STOPWORDS
    )


def trace_findings(
    findings: Sequence[InjectionFinding], files: Iterable[GatedFile], sources: Iterable[Stage1Output]
) -> list[TracedFinding]:
    line_texts = {
        (gated.path, number): text for gated in files if gated.text is not None for number, text in logical_lines(gated.text)
    }
    source_lines = [line for source in sources for line in _source_lines(source)]
    document_frequency: Counter[str] = Counter(token for line in source_lines for token in line.tokens)
    documents = len(source_lines)

    def weight(token: str) -> float:
        return math.log((documents + 1) / (document_frequency[token] + 1)) + 1.0

    traced = []
    for finding in findings:
        text = line_texts.get((finding.path, finding.line)) if finding.line else None
        wanted = tokens_of(text) if text else frozenset()
        if not wanted:
            traced.append(TracedFinding(finding, (), 0.0))
            continue
        total = sum(weight(token) for token in wanted)
        matched: set[str] = set()
        best = 0.0
        for line in source_lines:
            shared = wanted & line.tokens
            if len(shared) < MIN_SHARED_TOKENS:
                continue
            score = sum(weight(token) for token in shared) / total
            best = max(best, score)
            if score >= STRONG_MATCH or (score >= CORROBORATED_MATCH and line.hostile()):
                matched.add(line.thread_id)
        traced.append(TracedFinding(finding, tuple(sorted(matched)), round(best, 3)))
    return traced


def _source_lines(source: Stage1Output) -> list[_SourceLine]:
    """Each logical line of a source, and each pair of adjacent ones (a line the extractor or the
    consolidator wrapped differently)."""
    lines: list[_SourceLine] = []
    for text in (source.raw_memory, source.rollout_summary):
        texts = [line for _, line in logical_lines(text or "") if line.strip()]
        windows = texts + [f"{first} {second}" for first, second in zip(texts, texts[1:])]
        for window in windows:
            tokens = tokens_of(window)
            if tokens:
                lines.append(_SourceLine(source.thread_id, tokens, window))
    return lines


def describe_traced(traced: Sequence[TracedFinding], limit: int) -> list[str]:
    """The artifact lines: each finding (redacted excerpt) with the thread(s) it came from."""
    lines = []
    for item in traced[:limit]:
        source = f" <- thread {', '.join(item.thread_ids)}" if item.thread_ids else " <- no source found"
        lines.append(item.finding.describe() + source)
    if len(traced) > limit:
        lines.append(f"... and {len(traced) - limit} more")
    return lines
