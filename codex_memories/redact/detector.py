"""The regex plugins of Yelp's `detect-secrets` (a maintained detector, a dependency), as rules.

Contract: `detector_rules()` lists every installed plugin that has a `denylist`, except those in
`_SKIPPED_PLUGINS` (each with its reason), as a `DetectorRule`: the plugin's own compiled regexes
(with their own flags, run over the original text), and the literal hints and gate that only
decide when it is worth running. `widened_span` turns one of its matches into the span to
replace: a plugin's match is widened to the whole token it sits in. Importing this module does
not import `detect-secrets` (about 0.1-0.2 s, it pulls in `requests`); `detector_rules` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codex_memories.redact.lazy import lazy_compile
from codex_memories.redact.rules import REDACTED


@dataclass(frozen=True, slots=True)
class DetectorRule:
    name: str
    regexes: tuple[re.Pattern[str], ...]
    # Lower-case literals, one of which every match contains (empty: always runs).
    hints: tuple[str, ...]
    # A regex every match contains, tried before the plugin's own (None: always runs).
    gate: re.Pattern[str] | None


# Plugins whose denylist is not used, and why.
_SKIPPED_PLUGINS = {
    "IPPublicDetector": "an IP address is not a credential; transcripts are full of them",
    "PrivateKeyDetector": "matches the header line only; the key-block rules (`rules.py`) redact the body",
    "CloudantDetector": "keyword-style `name = value` regexes for one IBM service, 12-20 MB/s each on "
    "transcript text (benchmarks/secret_redaction.py); the name-based assignment rules cover that shape",
    "IbmCloudIamDetector": "same as CloudantDetector (13 MB/s)",
    "IbmCosHmacDetector": "same as CloudantDetector",
    "SoftlayerDetector": "same as CloudantDetector (45 MB/s)",
    "KeywordDetector": "no denylist; its keyword list feeds nothing here (the assignment rules cover it)",
    "Base64HighEntropyString": "no denylist; its fixed 4.5-bit limit misses every token under ~24 "
    "characters and flags base64 test fixtures (see benchmarks/README.md)",
    "HexHighEntropyString": "no denylist; its 3.0-bit limit flags every commit SHA and sha256",
}

# Regexes (on the original text) that every match of a plugin must contain, for speed only: the
# plugin runs only on texts where its gate matches. A plugin not listed always runs.
_DETECTOR_GATES = {
    "ArtifactoryDetector": r"AKC|AP[0-9A-F]",
    "DiscordBotTokenDetector": r"\.[a-zA-Z0-9_\-]{6}\.[a-zA-Z0-9_\-]{27}",
    "TelegramBotTokenDetector": r":[0-9A-Za-z_\-]{35}",
}

# Literal hints (lower case) per plugin, for speed only: a plugin not listed always runs.
_DETECTOR_HINTS = {
    "ArtifactoryDetector": ("akc", "ap"),
    "AWSKeyDetector": ("a3t", "abia", "acca", "akia", "asia", "aws"),
    "AzureStorageKeyDetector": ("accountkey=",),
    "BasicAuthDetector": ("://",),
    "CloudantDetector": ("cl",),
    "DiscordBotTokenDetector": (".",),
    "GitHubTokenDetector": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "GitLabTokenDetector": (
        "glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941", "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-",
    ),
    "IbmCloudIamDetector": ("ibm", "iam", "cloud", "api"),
    "IbmCosHmacDetector": ("secret",),
    "JwtTokenDetector": ("eyj",),
    "MailchimpDetector": ("-us",),
    "NpmDetector": ("_authtoken",),
    "OpenAIDetector": ("t3blbkfj",),
    "PypiTokenDetector": ("pypi-",),
    "SendGridDetector": ("sg.",),
    "SlackDetector": ("xox", "hooks.slack"),
    "SoftlayerDetector": ("softlayer", "sl"),
    "SquareOAuthDetector": ("sq0csp-",),
    "StripeDetector": ("k_live_",),
    "TelegramBotTokenDetector": (":",),
    "TwilioKeyDetector": ("ac", "sk"),
}



_TOKEN_CHARS = lazy_compile(r"[A-Za-z0-9_\-]*")
_VALUE_END = lazy_compile(r"[\s\"'\\]")


def widened_span(match: re.Match[str], text: str) -> tuple[int, int] | None:
    """The credential a detect-secrets match points at: its one capturing group when that is
    the value (8+ characters; a short group is a prefix such as `ghp`), else the whole match;
    trimmed of the delimiters some plugins include, cut at the end of the value, and widened to
    the end of the token (plugins match a fixed length or stop at upper case)."""
    start, end = match.span()
    if match.re.groups >= 1:
        group_start, group_end = match.span(1)
        if group_start >= 0 and group_end - group_start >= 8:
            start, end = group_start, group_end
    while start < end and text[start] in " \t\r\n=:\"'":
        start += 1
    stop = _VALUE_END.search(text, start, end)
    if stop is not None:
        end = stop.start()
    end = _TOKEN_CHARS.match(text, end).end()
    if end - start < 8 or text.startswith(REDACTED, start):
        return None
    return start, end




def detector_rules() -> list[DetectorRule]:
    """One rule per installed detect-secrets plugin with regexes (except `_SKIPPED_PLUGINS`)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    rules = []
    for plugin_class in get_mapping_from_secret_type_to_class().values():
        name = plugin_class.__name__
        if name in _SKIPPED_PLUGINS:
            continue
        regexes = tuple(plugin_class().denylist)
        if regexes:
            rules.append(
                DetectorRule(
                    name=f"detect_secrets.{name}",
                    regexes=regexes,
                    hints=_DETECTOR_HINTS.get(name, ()),
                    gate=re.compile(_DETECTOR_GATES[name]) if name in _DETECTOR_GATES else None,
                )
            )
    return rules
