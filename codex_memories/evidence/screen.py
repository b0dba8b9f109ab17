"""The instruction screen: text that is hostile on its face, wherever it would reach a session.

Text from a session is evidence, never an instruction. The screen is the tripwire every path
shares: phase 2's injection gate (`consolidate.injection_gate`) runs it over the consolidated files
before they go live, extraction runs it over what a model wrote (`extract.extraction`), the read
path over notes and team files (`memory_folder.notes`, `memory_folder.team_memory`). It is not the defence that
decides by wording: phase 2's provenance check (`consolidate.provenance_check`) removes every added
line whose words came only from tool output.

Contract:
- `find_injections(files)` is the decision: a pure function over `GatedFile`s (path, text or
  None for bytes that are not UTF-8, executable bit) returning `InjectionFinding`s in file and
  line order. Same input, same findings.
- Text is normalised before any rule sees it (`normalise`): NFKC (fullwidth and compatibility
  forms), zero-width and other format characters removed, Cyrillic and Greek look-alikes folded
  to Latin, backticks dropped; case is folded by the rules themselves. A bullet wrapped over
  several lines is one logical line (`logical_lines`), reported at its first line.
- A finding's `excerpt` is redacted (`redact_secrets`), stripped of control and invisible
  characters and capped at `MAX_EXCERPT_CHARS`, so it can go into a run artifact and a log.

What is refused (rule codes):
- `download_piped_to_shell`: a download fed to an interpreter (`curl ... | sh`, `wget -O- | bash`,
  `bash <(curl ...)`, `sh -c "$(curl ...)"`, `iex (iwr ...)`, `base64 -d | sh`, `exec(urlopen(...))`),
  or downloaded and run in one command line with no look at it in between.
- `override_instructions`: "ignore previous instructions" and kin, notes and standing orders
  addressed to AI assistants, "you are now ...", role markers, "do not tell the user".
- `hidden_directive`: an HTML comment (invisible once rendered) addressed to an AI reader or
  telling it to act.
- `exfiltration`: secrets, key files or the environment sent over the network (a URL, a webhook,
  a pastebin or gist, a DNS lookup of a computed name), or prose that says to.
- `remote_shell`: `/dev/tcp/` redirections, `nc -e`, `socat ... exec:`, socket-and-exec one-liners.
- `persistence`: a way back in: SSH keys or git hooks fetched from a URL, a file written into
  `.git/hooks/`, `core.hooksPath` outside the repository, shell startup files edited, an alias
  that redefines a standard command, `chmod +x` on a downloaded, temporary or hook file.
- `hidden_characters`: Unicode tag characters and bidirectional overrides (text a reader cannot
  see but a model reads).
- `executable_file`: any gated file with an exec bit or a `#!` first line; `skill_not_markdown`:
  a file under `skills/` that is not Markdown (skills hold procedures, never scripts);
  `binary_file`: bytes that are not text.

Ordinary advice passes: "run `make test` before pushing", "use curl -fsSL to fetch the fixture and
inspect it", a `curl -H "Authorization: Bearer $TOKEN" https://api...` call, "never pipe curl into sh".
Measured on held-out phrasings in benchmarks/injection_gate_holdout.py: a tripwire, not a proof.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from codex_memories.paths import SKILLS_DIR
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
        "override_instructions",
        re.compile(
            # Ignoring what the reader was told, in words the older rules did not list.
            r"\b(?:ignore|disregard|forget|overlook|set\s+aside|discard|drop|abandon)\b[^.\n]{0,40}?"
            r"\b(?:(?:told|asked|instructed|taught|gave|given)\s+(?:you|to\s+you)|you\s+(?:were|have\s+been)\s+(?:told|given|asked))\b"
            # Ranking a note over the reader's instructions.
            r"|\b(?:outranks?|supersedes?|overrides?|trumps?|takes?\s+(?:priority|precedence)\s+over|(?:is|are)\s+more\s+important\s+than)\s+"
            r"(?:(?:the|your|all|any|every|previous|prior|earlier|system)\s+)+(?:\w+'s\s+)?"
            r"(?:rules|instructions?|guidance|prompts?|policies|guidelines|user|developer|operator|system)\b"
            r"|\byour\s+(?:instructions|rules|orders|guidelines|directives|task|goal|role|mission)\s+(?:have|has)\s+(?:changed|been\s+(?:updated|replaced|changed|revoked))"
            r"|\b(?:rules|instructions|restrictions|guidelines|policies)\b[^.\n]{0,25}\bno\s+longer\s+(?:apply|applies|bind|binds|matter|count|restrict)"
            # "You are now ..." and unrestricted personas.
            r"|\byou\s+are\s+now\s+(?!(?:able|ready|done|finished|free\s+to\s+use|on|in|at|using|logged|connected|set\s+up)\b)\w"
            r"|\byou\s+are\s+(?:now\s+)?(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|unconstrained|unbound)\b"
            r"|\bno\s+(?:safety|security|ethical)\s+(?:rules|checks|restrictions|guidelines|limits)\b"
            # Role markers that talk to the reader, and system or developer overrides.
            r"|^[\s>*+-]*\[?\s*(?:system|assistant|developer)\s*\]?\s*:\s*(?:you|ignore|always|never|from\s+now|act|do\s+not|don'?t|obey|forget)\b"
            r"|\b(?:system|admin|developer|root|god)\s+(?:override|mode\s+(?:on|enabled|activated))\b"
            r"|\b(?:new|updated|real|actual|hidden|revised)\s+system\s+prompt\b"
            # Standing orders addressed to agents in general.
            r"|\b(?:ai|llm|coding|automated|autonomous)\s+(?:assistants?|agents?|models?|tools?|bots?)\b[^.\n]{0,25}?"
            r"\b(?:must|should|shall|need\s+to|have\s+to|are\s+(?:required|expected|instructed)\s+to)\b"
            r"|\b(?:any|every|all|each)\s+(?:ai\s+|llm\s+|coding\s+|automated\s+)?(?:assistants?|agents?|models?|bots?|llms?)\b[^.\n]{0,30}?"
            r"\b(?:must|should|shall|needs?\s+to|has\s+to|have\s+to)\b"
            # Keeping the user or anyone else in the dark.
            r"|\b(?:user|human|operator|developer|maintainer|owner|anyone|nobody)s?\s+(?:must|should|may|can)\s*(?:not|never)\s+(?:find\s+out|know|learn|notice|discover|see)\b"
            r"|\b(?:do\s+not|don'?t|never)\s+(?:inform|tell|notify|alert|warn)\s+(?:anyone|anybody|the\s+(?:user|human|operator|owner|team))\b",
            _I,
        ),
    ),
    (
        "hidden_directive",
        re.compile(
            # An HTML comment is invisible once rendered, yet a model reads it.
            # Flagged when the comment addresses such a reader, or opens with an order.
            r"<!--(?:(?!-->)[^\n])*?\b(?:ai|assistants?|agents?|llms?|models?|bots?|codex|claude|copilot|chatgpt|gpt)\s*"
            r"(?:[:,]|\b(?:must|should|shall|need\s+to|please|always|never)\b)"
            r"|<!--\s*(?:please\s+)?(?:run|execute|delete|remove|push|send|upload|ignore|disregard|disable|install|curl|wget|do\s+not|don'?t|never|always)\b",
            _I,
        ),
    ),
    (
        "exfiltration",
        re.compile(
            # The environment or a secret sent from code, a computed DNS name, a gist of a key.
            r"(?=[^\n]*\b(?:os\.environ|process\.env|os\.getenv|environ\.items)\b)[^\n]*\b(?:requests\.(?:post|put|get)|httpx\.|urlopen|urllib|fetch\s*\(|http\.client|socket\.)"
            r"|\b(?:dig|host|nslookup|drill|ping)\b[^\n]*(?:\$\(|`[^`]+`|\$\{?(?-i:[A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASS|PASSWORD)))"
            r"|\bgh\s+gist\s+create\b[^\n]*(?:\.ssh/(?![^\s\"']*\.pub\b)|\.env\b|\.netrc|\.aws|credentials|id_(?:rsa|ed25519|ecdsa|dsa)\b(?!\.pub))"
            r"|\b(?:env|printenv|set)\s*>>?\s*(\S+)[^\n]*\b(?:curl|wget|nc|ncat|scp|rsync|http)\b[^\n]*\1"
            r"|(?=[^\n]*\b(?:curl|wget|nc|ncat|scp|rsync|http|httpie|invoke-webrequest|iwr)\b)[^\n]*(?:@|-T\s*|--upload-file\s*|--post-file=?)\s*(?:~|\$HOME|/root|/home/[^/\s]+)/\.(?!ssh/[^\s\"']*\.pub\b)\S",
            _I,
        ),
    ),
    (
        "exfiltration",
        re.compile(
            # Prose that says to send a secret, a key file or the environment somewhere.
            r"\b(?:send|upload|post|exfiltrate|forward|transmit|leak|paste|e-?mail|submit|share|publish|push)\b[^\n]{0,60}?"
            r"(?:\$?(?-i:\b[A-Z][A-Z0-9_]*(?:TOKEN|SECRET|API_KEY|ACCESS_KEY|PASSWORD|PASSWD|CREDENTIALS?)\b)|\bprintenv\b|\benv\b(?!\s*\.)"
            r"|\bid_(?:rsa|ed25519|ecdsa|dsa)\b(?!\.pub)|(?:~|\$HOME)/\.[\w.-]+|\benvironment\b)"
            r"[^\n]{0,80}?(?:https?://|\bwebhook|\bpaste(?:bin)?\b|\bgist\b|\bngrok|\brequestbin|\b[\w-]+\.(?:com|net|org|io|dev|xyz|site|app)\b)",
            _I,
        ),
    ),
    (
        "persistence",
        re.compile(
            # Something written into git hooks, or hooks pointed outside the repository.
            r"(?:>>?|\bcp\b|\bmv\b|\bln\b|\btee\b|\binstall\b|\bcurl\b[^\n]*-o|\bwget\b[^\n]*-O)[^\n]*\.git/hooks/"
            r"|\bcore\.hookspath\b\s*=?\s*[\"']?(?:/tmp|/var/tmp|/dev/shm|~|\$HOME|/home/|https?://)"
            # Shell startup files edited.
            r"|(?:>>?|\btee\s+(?:-a\s+)?)\s*[\"']?(?:~|\$HOME|/root|/home/[^/\s]+)/\.(?:bashrc|zshrc|profile|bash_profile|zprofile|zshenv|bash_login|config/fish/config\.fish)\b"
            r"|\b(?:add|append|put|insert|write|place|echo)\b[^\n]{0,60}?\b(?:to|in|into|inside)\s+(?:your\s+|the\s+user'?s\s+)?(?:~/|\$HOME/)?\.(?:bashrc|zshrc|profile|bash_profile|zprofile|zshenv)\b"
            # An alias that redefines a standard command.
            r"|\balias\s+(?:sudo|su|git|ls|cd|ssh|scp|cat|rm|cp|mv|curl|wget|passwd|gpg|make)\s*="
            # Execute permission for a downloaded, temporary or hook file.
            r"|\bchmod\s+(?:[ugoa]*\+[rw]*x|[0-7]?[0-7]*[1357][0-7]{0,2})\s+[\"']?(?:/tmp/|/var/tmp/|/dev/shm/|\S*\.git/hooks/|\S*skills/)",
            _I,
        ),
    ),
    (
        "hidden_characters",
        re.compile("[\U000e0000-\U000e007f\u202a-\u202e\u2066-\u2069]"),
    ),
)

_RULES_BY_NAME = {rule: pattern for rule, pattern in _RULES}
_RULE_ORDER = tuple(dict.fromkeys(rule for rule, _ in _RULES))

_UNPRINTABLE = re.compile("[\x00-\x1f\x7f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\U000e0000-\U000e007f]")


# Look-alike letters folded to the Latin letter they imitate (Unicode confusables for the
# Cyrillic and Greek letters that pass for Latin in a command or a keyword). NFKC already folds
# fullwidth and mathematical forms; these are separate letters it leaves alone.
_HOMOGLYPHS = str.maketrans(
    "аеорсухіјѕԁӏѵԝвкмнтАВЕКМНОРСТХІЈЅԌԜ"
    "αβεικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdlvwbkmhtABEKMHOPCTXIJSGW"
    "abeiknoptuxABEZHIKMNOPTYX",
)
# Format characters (zero-width spaces and joiners, soft hyphens, word joiners, BOM) a reader
# does not see and that split a keyword in two for a pattern.
_FORMAT_CATEGORY = "Cf"


def normalise(text: str) -> str:
    """The text the rules see: NFKC, format characters removed, look-alikes folded, no backticks."""
    folded = unicodedata.normalize("NFKC", text)
    visible = "".join(char for char in folded if unicodedata.category(char) != _FORMAT_CATEGORY)
    return visible.translate(_HOMOGLYPHS).replace("`", "")


_BLOCK_START = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|#|>|```|~~~|<!--|\|)")


def logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each logical line: an indented line that does not open a
    new block (bullet, heading, quote, fence, table row) continues the one above it, as a
    wrapped bullet does in rendered Markdown; so does the line after a trailing backslash."""
    current: list[str] = []
    first = 0
    in_fence = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        continues = (
            bool(current)
            and not in_fence
            and stripped != ""
            and (current[-1].endswith("\\") or (line[:1].isspace() and not _BLOCK_START.match(line)))
        )
        if continues:
            current[-1] = current[-1].removesuffix("\\")
            current.append(stripped)
        else:
            if current:
                yield first, " ".join(current)
            current, first = [line], number
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
    if current:
        yield first, " ".join(current)


_SHELL_SEPARATOR = re.compile(r"\s*(?:&&|\|\||;)\s*")
_DOWNLOAD_SEGMENT = re.compile(r"^(?:sudo\s+)?(?:curl|wget|iwr|invoke-webrequest|aria2c)\b", _I)
_REVIEW_SEGMENT = re.compile(r"^(?:less|more|cat|head|vi|vim|nano|code|sha\d+sum|shasum|gpg|cosign|diff|grep|tar\s+-?t)\b", _I)
_RUN_SEGMENT = re.compile(
    r"^(?:sudo\s+(?:-\S+\s+)*)?(?:(?:ba|z|k|da)?sh\s+[^-\s]|source\s|\.\s+\S|\./|/tmp/|python[0-9.]*\s+[^-\s]|perl\s+[^-\s]"
    r"|ruby\s+[^-\s]|node\s+[^-\s]|chmod\s+(?:[ugoa]*\+[rw]*x|[0-7]?[0-7]*[1357][0-7]{0,2})\s)",
    _I,
)


def downloaded_and_run(line: str) -> bool:
    """A download followed, in the same command line, by running something (a shell or an
    interpreter on a file, `./x`, an exec bit) with no review step (less, a checksum) between."""
    segments = [segment.strip().strip("'\"") for segment in _SHELL_SEPARATOR.split(line)]
    downloaded = False
    for segment in segments:
        if _DOWNLOAD_SEGMENT.match(segment) or re.search(r"\s(?:curl|wget)\s+\S*(?:https?://|\.\w+/)", " " + segment, _I):
            downloaded = True
        elif downloaded and _REVIEW_SEGMENT.match(segment):
            return False
        elif downloaded and _RUN_SEGMENT.match(segment):
            return True
    return False


def find_injections(files: Iterable[GatedFile]) -> list[InjectionFinding]:
    """Every line of the gated files that looks like an injected instruction, plus file-level
    findings (exec bits, shebangs, scripts under skills/, binary content, oversize). One finding
    per (line, rule)."""
    findings: list[InjectionFinding] = []
    for gated in files:
        if gated.executable:
            findings.append(InjectionFinding(gated.path, 0, "executable_file", "exec bit set"))
        if _under_skills(gated.path) and not gated.path.lower().endswith(".md"):
            findings.append(InjectionFinding(gated.path, 0, "skill_not_markdown", "skills hold Markdown procedures, never scripts"))
        if gated.too_large:
            findings.append(InjectionFinding(gated.path, 0, "oversized_file", f"larger than {MAX_GATED_FILE_BYTES} bytes"))
            continue
        if gated.text is None:
            findings.append(InjectionFinding(gated.path, 0, "binary_file", "not UTF-8 text"))
            continue
        if not gated.executable and normalise(gated.text[:256]).lstrip().startswith("#!"):
            findings.append(InjectionFinding(gated.path, 0, "executable_file", "starts with a #! interpreter line"))
        findings.extend(_line_findings(gated))
    return findings


def _under_skills(path: str) -> bool:
    return path.split("/", 1)[0] == SKILLS_DIR


def line_rules(line: str) -> list[str]:
    """The rules one logical line breaks, in rule order (empty: it passes)."""
    rules: list[str] = []
    if _RULES_BY_NAME["hidden_characters"].search(line):
        rules.append("hidden_characters")
    text = normalise(line)
    for rule, pattern in _RULES:
        if rule not in rules and rule != "hidden_characters" and pattern.search(text):
            rules.append(rule)
    if "download_piped_to_shell" not in rules and downloaded_and_run(text):
        rules.append("download_piped_to_shell")
    return [rule for rule in _RULE_ORDER if rule in rules]


def _line_findings(gated: GatedFile) -> Iterator[InjectionFinding]:
    text = gated.text or ""
    if "\x00" in text:
        yield InjectionFinding(gated.path, 0, "binary_file", "NUL bytes in text")
        return
    for number, line in logical_lines(text):
        for rule in line_rules(line):
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
