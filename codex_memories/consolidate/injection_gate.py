"""The injection gate: consolidated memory files are checked before they go live.

What reaches `memory_summary.md`, `MEMORY.md` and `skills/` is loaded into every later session,
so an instruction planted in a tool output, a web page or a rollout summary must not get there by
way of a consolidation. The gate runs after artifact validation and before the baseline reset;
a finding fails the run (`failed_injection_gate`) and the folder is restored.

Contract:
- `find_injections(files)` is the decision: a pure function over `GatedFile`s (path, text or
  None for bytes that are not UTF-8, executable bit) returning `InjectionFinding`s in file and
  line order. Same input, same findings.
- `gated_files(root_dir)` is the I/O that feeds it: `memory_summary.md`, `MEMORY.md` and every
  regular file under `skills/` (symlinks are never followed; `validate_artifacts` has removed
  them already). It reads, never writes.
- A finding's `excerpt` is redacted (`redact_secrets`), stripped of control and invisible
  characters and capped at `MAX_EXCERPT_CHARS`, so it can go into a run artifact and a log.

What is refused (rule codes):
- `download_piped_to_shell`: a download fed to an interpreter (`curl ... | sh`, `wget -O- | bash`,
  `bash <(curl ...)`, `sh -c "$(curl ...)"`, `iex (iwr ...)`, `base64 -d | sh`).
- `override_instructions`: "ignore previous instructions" and kin, notes addressed to AI
  assistants, "do not tell the user", chat-template role markers.
- `exfiltration`: secrets, key files or the environment sent over the network, or prose that says
  to send secrets to a URL.
- `remote_shell`: `/dev/tcp/` redirections, `nc -e`, `socat ... exec:`, socket-and-exec one-liners.
- `persistence`: SSH keys or git hooks fetched from a URL.
- `hidden_characters`: Unicode tag characters and bidirectional overrides (text a reader cannot
  see but a model reads).
- `executable_file`: any gated file with an exec bit; `binary_file`: bytes that are not text.

Ordinary advice passes: "run `make test` before pushing", "use curl -fsSL to fetch the fixture and
inspect it", a `curl -H "Authorization: Bearer $TOKEN" https://api...` call, "never pipe curl into sh".
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from codex_memories.paths import MEMORY_FILE, MEMORY_SUMMARY_FILE, SKILLS_DIR
from codex_memories.redact import redact_secrets

MAX_EXCERPT_CHARS = 160
MAX_REPORTED_FINDINGS = 20
# A gated file is read up to this size; memory files are far smaller, and a larger one is
# reported rather than scanned half.
MAX_GATED_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class GatedFile:
    path: str  # relative to the memory root, `/`-separated
    text: str | None  # None: the bytes are not UTF-8 text
    executable: bool = False
    too_large: bool = False


@dataclass(frozen=True)
class InjectionFinding:
    path: str
    line: int  # 1-based; 0 for a finding about the whole file
    rule: str
    excerpt: str

    def describe(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where} [{self.rule}] {self.excerpt}".rstrip()


_I = re.IGNORECASE

_DOWNLOADER = r"(?:curl|wget|fetch|aria2c|http(?:ie)?|iwr|irm|invoke-webrequest|invoke-restmethod|lwp-request|GET)"
_INTERPRETER = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+(?:\S+=\S*\s+)*)?"
    r"(?:(?:ba|z|k|c|tc|da|fi|a|mk)?sh|python[0-9.]*(?!\s+-m\s+json\.tool)|perl|ruby|node|php|iex|invoke-expression|pwsh|powershell|source|osascript)\b"
)

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "download_piped_to_shell",
        re.compile(rf"\b{_DOWNLOADER}\b[^\n|]*(?:\|[^\n|]*)*?\|\s*{_INTERPRETER}", _I),
    ),
    (
        "download_piped_to_shell",
        re.compile(
            rf"(?:\b(?:ba|z|k)?sh\b(?:\s+-s)?|\bsource\b|(?:^|\s)\.)\s*<\(\s*{_DOWNLOADER}\b"
            rf"|\b(?:eval|(?:ba|z)?sh\s+-c|exec)\s*[\"']?\s*\$\(\s*{_DOWNLOADER}\b"
            rf"|\b(?:iex|invoke-expression)\b[^\n]*\b(?:downloadstring|iwr|irm|invoke-webrequest|invoke-restmethod|net\.webclient)\b"
            rf"|\bbase64\s+(?:-d|--decode|-D)\b[^\n]*\|\s*{_INTERPRETER}",
            _I,
        ),
    ),
    (
        "download_piped_to_shell",
        re.compile(
            # Downloaded and run at once, with no look at it in between.
            rf"\b(?:curl|wget)\b[^\n&;|]*(?:&&|;)\s*(?:sudo\s+)?(?:(?:ba|z)?sh\s+\S|chmod\s+\+?[0-7]*x|\./)"
            r"|\b(?:exec|eval)\s*\([^\n]*\b(?:urlopen|urlretrieve|requests\.get|httpx\.get|fetch)\b"
            # Any interpreter fed a download by process or command substitution.
            rf"|\b(?:python[0-9.]*|ruby|perl|node|php|(?:ba|z|k)?sh)\b(?:\s+-\S+)*\s*<\(\s*{_DOWNLOADER}\b"
            rf"|\b(?:python[0-9.]*|ruby|perl|node|php|(?:ba|z|k)?sh)\s+-[ce]\s*[\"']?\$\(\s*{_DOWNLOADER}\b",
            _I,
        ),
    ),
    (
        "override_instructions",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass|pay\s+no\s+attention\s+to|do\s+not\s+follow|don'?t\s+follow|stop\s+following)\b"
            r"[^.\n]{0,40}?\b(?:agents\.md|system\s+prompt|developer\s+(?:message|instructions?)|safety\s+(?:checks?|rules|guidelines|policies))"
            r"|\b(?:ignore|disregard|forget)\s+(?:everything|anything|all)\s+(?:you\s+(?:were|have\s+been|'ve\s+been)\s+(?:told|given|shown)|above|before|else)"
            r"|\bpay\s+no\s+attention\s+to\b[^.\n]{0,30}\b(?:instructions?|rules|guidance)\b"
            r"|\boverride\s*:|\b(?:assistant|agent|ai|llm|model)\s+(?:instruction|directive|note)s?\s*:"
            r"|\b(?:text|note|message|instructions?|notice)\s+(?:for|to)\s+(?:llms?|language\s+models?|ais?)\b"
            r"|\b(?:any|all|every)\s+(?:ai|llms?|assistants?|agents?|models?)\s+(?:reading|processing|seeing|parsing)\s+this\b"
            r"|\b(?:has|have)\s+(?:authori[sz]ed|allowed|permitted)\s+you\s+to\b|\byou\s+are\s+(?:now\s+)?(?:authori[sz]ed|permitted)\s+to\b"
            r"|\byou\s+are\s+(?:now\s+)?allowed\s+to\s+(?:push|delete|skip|bypass|disable|run\s+any)"
            r"|\byour\s+(?:new|real|actual|true)\s+(?:goal|task|instructions?|objective|purpose|job)\b|\bthe\s+(?:real|actual|true)\s+task\s+is\b"
            r"|\b(?:hide|hidden|conceal(?:ed)?|secret)\b[^.\n]{0,20}\bfrom\s+(?:the\s+)?user\b"
            r"|\b(?:not|never)\s+(?:reveal|disclose|mention|tell|show|report)\b[^.\n]{0,30}\bto\s+(?:the\s+)?user\b"
            r"|^[\s>*-]*(?-i:SYSTEM)\s*:|</?(?:system|assistant|developer)>"
            r"|\b(?:instruct|order|command|direct)s?\s+(?:any|all|every|the)\s+(?:automated\s+)?(?:ai|assistants?|agents?|bots?|models?|llms?)\b"
            r"|\b(?:previous|prior|earlier|above|existing|original|system|other)\s+(?:guidance|instructions?|rules|directions|policies|prompts?)"
            r"\s+(?:is|are)\s+(?:now\s+)?(?:obsolete|void|invalid|cancel+ed|revoked|superseded|lifted|no\s+longer\s+(?:valid|in\s+effect))"
            r"|\b(?:policies|rules|instructions|guidelines|restrictions|guardrails)\s+(?:above\s+)?no\s+longer\s+apply\b"
            r"|\b(?:supersedes?|overrides?|replaces?|takes\s+precedence\s+over)\s+(?:your|all|any)\s+(?:system\s+|previous\s+|prior\s+|other\s+)?(?:instructions?|prompts?|rules|guidance)\b"
            r"|\bwithout\s+(?:any\s+)?(?:restrictions|guardrails)\b"
            r"|\b(?:never|don'?t|do\s+not)\s+let\s+(?:the\s+)?(?:user|human|operator|developer)s?\s+(?:know|see|find\s+out)\b"
            r"|\bfrom\s+(?:this\s+point|now)\s+(?:forward|on)\b[^.\n]{0,20}\b(?:respond|reply|answer|output)\b"
            r"|\b(?:secretly|silently|covertly|quietly)\s+(?:add|run|install|modify|change|send|upload|copy|delete|disable|commit|push|execute|replace)\b",
            _I,
        ),
    ),
    (
        "override_instructions",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}?"
            r"\b(?:previous|prior|above|earlier|preceding|former|system|original|your|all|any|safety)\b[^.\n]{0,30}?"
            r"\b(?:instructions?|prompts?|rules|directions|directives|guidelines|guardrails|policies)\b"
            r"|\b(?:new|updated|real|actual|hidden)\s+(?:system\s+)?instructions?\s*:"
            r"|\b(?:note|message|instructions?|notice|memo)\s+(?:to|for)\s+(?:all\s+|any\s+)?(?:the\s+)?"
            r"(?:ai|llm|language[ -]model|coding)\s*(?:assistants?|agents?|models?|tools?)?\b"
            r"|\b(?:note|message|instructions?|notice)\s+(?:to|for)\s+(?:all\s+|any\s+)?(?:the\s+)?"
            r"(?:assistants?|agents|codex|claude|copilot|chatgpt|gpt)\b\s*:"
            r"|\byou\s+are\s+now\s+(?:in\s+)?(?:a|an|the|developer|dan|unrestricted|jailbroken)\b"
            r"|\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|alert|notify|show)\s+(?:this\s+to\s+)?(?:the\s+)?user\b"
            r"|\bwithout\s+(?:asking|telling|informing|notifying|alerting)\s+(?:the\s+)?user\b"
            r"|<\|(?:im_start|im_end|system|endoftext)\|>|\[/?INST\]|<</?SYS>>",
            _I,
        ),
    ),
    (
        "exfiltration",
        re.compile(
            # A bulk secret source and a network tool on one line, in either order.
            r"(?=[^\n]*\b(?:curl|wget|nc|ncat|netcat|scp|rsync|sftp|ftp|socat|telnet|invoke-webrequest|invoke-restmethod|iwr|irm|requests\.(?:post|put|get))\b)"
            r"[^\n]*(?:\$\(\s*(?:env|printenv|set|history|cat\s+[^)]*(?:\.ssh|\.aws|\.netrc|\.env|auth\.json|id_[a-z0-9]+))\b"
            r"|`\s*(?:env|printenv)\s*`"
            r"|\b(?:env|printenv)\s*\|"
            r"|(?:~|\$HOME|/root|/home/[^/\s]+)/(?:\.ssh/(?![^\s\"']*\.pub\b)|\.ssh\b(?!/)|\.(?:aws|netrc|git-credentials|codex/auth\.json|docker/config\.json|kube/config)\b)"
            r"|\bid_(?:rsa|ed25519|ecdsa|dsa)\b(?!\.pub)"
            r"|@\.env\b|/etc/(?:passwd|shadow)\b)",
            _I,
        ),
    ),
    (
        "exfiltration",
        re.compile(
            r"\b(?:send|upload|post|exfiltrate|forward|transmit|leak|paste|e-?mail|report|submit|append|copy)\b[^\n]{0,80}?"
            r"(?:\b(?:secrets?|tokens?|api[ _-]?keys?|credentials?|passwords?|environment\s+variables|env\s+vars?|ssh\s+keys?|"
            r"private\s+keys?|cookies|session\s+(?:ids?|tokens?)|auth\.json|id_rsa)\b|(?<![\w.])\.env\b)[^\n]{0,80}?"
            r"(?:https?://|\bwebhook|\bpastebin|\bngrok|\brequestbin|\b(?:this|that|the\s+following|an?\s+external|a\s+remote)\s+(?:url|endpoint|server|address)"
            r"|\b[\w.+-]+@[\w-]+\.[\w.-]+\b)",
            _I,
        ),
    ),
    (
        "exfiltration",
        re.compile(
            # A dotfile of the home folder sent somewhere.
            r"\b(?:send|upload|post|exfiltrate|forward|transmit|leak|paste|e-?mail|submit|append|copy)\b[^\n]{0,60}?"
            r"(?:~|\$HOME|/root|/home/[^/\s]+)/\.[^\s/]+[^\n]{0,80}?(?:https?://|\b[\w.+-]+@[\w-]+\.[\w.-]+\b)",
            _I,
        ),
    ),
    (
        "persistence",
        re.compile(
            # Keys or git hooks fetched from somewhere: a way back in for whoever wrote the line.
            r"https?://[^\n]*(?:authorized_keys|\.git/hooks|core\.hookspath)|(?:authorized_keys|\.git/hooks|core\.hookspath)[^\n]*https?://",
            _I,
        ),
    ),
    (
        "remote_shell",
        re.compile(
            r"/dev/(?:tcp|udp)/|\b(?:nc|ncat|netcat)\b[^\n]*\s-[a-z]*e\s|\bsocat\b[^\n]*\bexec:"
            r"|\bsockaddr_in\b|\bpty\.spawn\b|\bexec\s*\(\s*[\"']/bin/(?:ba)?sh\s+-i",
            _I,
        ),
    ),
    (
        "hidden_characters",
        re.compile("[\U000e0000-\U000e007f\u202a-\u202e\u2066-\u2069]"),
    ),
)

_UNPRINTABLE = re.compile("[\x00-\x1f\x7f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\U000e0000-\U000e007f]")


def find_injections(files: Iterable[GatedFile]) -> list[InjectionFinding]:
    """Every line of the gated files that looks like an injected instruction, plus file-level
    findings (exec bits, binary content, oversize). One finding per (line, rule)."""
    findings: list[InjectionFinding] = []
    for gated in files:
        if gated.executable:
            findings.append(InjectionFinding(gated.path, 0, "executable_file", "exec bit set"))
        if gated.too_large:
            findings.append(InjectionFinding(gated.path, 0, "oversized_file", f"larger than {MAX_GATED_FILE_BYTES} bytes"))
            continue
        if gated.text is None:
            findings.append(InjectionFinding(gated.path, 0, "binary_file", "not UTF-8 text"))
            continue
        findings.extend(_line_findings(gated))
    return findings


def _line_findings(gated: GatedFile) -> Iterator[InjectionFinding]:
    text = gated.text or ""
    if "\x00" in text:
        yield InjectionFinding(gated.path, 0, "binary_file", "NUL bytes in text")
        return
    for number, line in enumerate(text.splitlines(), start=1):
        seen: set[str] = set()
        for rule, pattern in _RULES:
            if rule in seen:
                continue
            if pattern.search(line):
                seen.add(rule)
                yield InjectionFinding(gated.path, number, rule, excerpt(line))


def excerpt(line: str) -> str:
    """A line as it may appear in a report: redacted, visible characters only, capped."""
    cleaned = " ".join(_UNPRINTABLE.sub(" ", redact_secrets(line)).split())
    if len(cleaned) <= MAX_EXCERPT_CHARS:
        return cleaned
    return cleaned[: MAX_EXCERPT_CHARS - 3].rstrip() + "..."


def describe_findings(findings: list[InjectionFinding], limit: int = MAX_REPORTED_FINDINGS) -> list[str]:
    """The report lines for a refused consolidation: at most `limit`, then a count of the rest."""
    lines = [finding.describe() for finding in findings[:limit]]
    if len(findings) > limit:
        lines.append(f"... and {len(findings) - limit} more")
    return lines


def gated_files(root_dir: Path) -> list[GatedFile]:
    """The files the gate reads: the two always-loaded files and everything under `skills/`."""
    root_dir = Path(root_dir)
    relative_paths = [MEMORY_SUMMARY_FILE, MEMORY_FILE]
    skills = root_dir / SKILLS_DIR
    if skills.is_dir() and not skills.is_symlink():
        for directory, subdirectories, names in os.walk(skills, followlinks=False):
            subdirectories.sort()
            for name in sorted(names):
                relative_paths.append(Path(directory, name).relative_to(root_dir).as_posix())
    files = []
    for relative in relative_paths:
        path = root_dir / relative
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        executable = bool(info.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
        if info.st_size > MAX_GATED_FILE_BYTES:
            files.append(GatedFile(relative, None, executable, too_large=True))
            continue
        data = path.read_bytes()
        try:
            text: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and data.startswith((b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa")):
            text = None
        files.append(GatedFile(relative, text, executable))
    return files


def check_injection_gate(root_dir: Path) -> list[InjectionFinding]:
    """Phase 2's gate step: the findings over the consolidated files (empty: they may go live)."""
    return find_injections(gated_files(root_dir))
