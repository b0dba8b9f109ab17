"""The regex plugins of Yelp's `detect-secrets` (a maintained detector, a dependency), as rules.

Contract: `detector_rules()` lists every installed plugin that has a `denylist`, except those in
`_SKIPPED_PLUGINS` (each with its reason), as a `DetectorRule`: the plugin's own compiled regexes
(with their own flags, run over the original text), and the literal hints and gate that only
decide when it is worth running. `widened_span` turns one of its matches into the span to
replace: a plugin's match is widened to the whole token it sits in.

Import cost: importing this module does not import `detect-secrets` (0.06-0.2 s, it pulls in
`requests`), and neither does `detector_rules` when the installed version is the one
`_RECORDED_PLUGINS` was read from: the plugins' names, hints and gates are known without it, and
a rule's regexes (`DetectorRule.regexes`) import it the first time a text passes that rule's
hints and gate. A prompt hook's block rarely does, so the hook does not pay for the import.
Otherwise (another version, or detect-secrets already imported, whose settings may add plugins)
`detector_rules` imports it and lists what is installed, as before.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from codex_memories.redact.lazy import lazy_compile
from codex_memories.redact.rules import REDACTED


@dataclass(frozen=True, slots=True)
class DetectorRule:
    name: str
    # Lower-case literals, one of which every match contains (empty: always runs).
    hints: tuple[str, ...]
    # A regex every match contains, tried before the plugin's own (None: always runs).
    gate: re.Pattern[str] | None

    @property
    def regexes(self) -> tuple[re.Pattern[str], ...]:
        """The plugin's own compiled regexes (imports detect-secrets on first use)."""
        return _installed_plugins()[self.name.removeprefix(_PREFIX)]


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
# plugin runs only on texts where its gate matches. A plugin not listed always runs. Plugins
# whose hints are common in ordinary text (`ac`, `://`, `aws`, `-us`, `sg.` of `msg.`) have one
# too, so that a short block that holds none of their tokens does not import detect-secrets
# (see the module docstring); each is a part of every one of the plugin's regexes (1.5.0), with
# its character classes as wide or wider (`tests/redact/test_detector_import.py` checks them on
# the plugins' own matches).
_DETECTOR_GATES = {
    "ArtifactoryDetector": r"AKC|AP[0-9A-F]",
    "AWSKeyDetector": r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}|(?i:[0-9a-z/+]{40}[\'\"])",
    "BasicAuthDetector": r"://[^\s:/@]+:[^\s:/@]+@",
    "DiscordBotTokenDetector": r"\.[a-zA-Z0-9_\-]{6}\.[a-zA-Z0-9_\-]{27}",
    "MailchimpDetector": r"[0-9a-z]{32}-us[0-9]",
    "SendGridDetector": r"SG\.[a-zA-Z0-9_\-]{22}\.",
    "TelegramBotTokenDetector": r":[0-9A-Za-z_\-]{35}",
    "TwilioKeyDetector": r"(?:AC|SK)[a-z0-9]{32}",
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




_PREFIX = "detect_secrets."

# The plugins `detector_rules` lists for detect-secrets 1.5.0 (with a denylist, not skipped), in
# the order its plugin mapping gives them: the rule table's order. Checked against the installed
# package by tests/redact/test_detector_import.py.
_RECORDED_VERSION = "1.5.0"
_RECORDED_PLUGINS = (
    "ArtifactoryDetector", "AWSKeyDetector", "AzureStorageKeyDetector", "BasicAuthDetector", "DiscordBotTokenDetector",
    "GitHubTokenDetector", "GitLabTokenDetector", "JwtTokenDetector", "MailchimpDetector", "NpmDetector", "OpenAIDetector",
    "PypiTokenDetector", "SendGridDetector", "SlackDetector", "SquareOAuthDetector", "StripeDetector",
    "TelegramBotTokenDetector", "TwilioKeyDetector",
)


def detector_rules() -> list[DetectorRule]:
    """One rule per installed detect-secrets plugin with regexes (except `_SKIPPED_PLUGINS`)."""
    names = recorded_plugins()
    if names is None:
        names = tuple(_installed_plugins())
    return [
        DetectorRule(
            name=_PREFIX + name,
            hints=_DETECTOR_HINTS.get(name, ()),
            gate=re.compile(_DETECTOR_GATES[name]) if name in _DETECTOR_GATES else None,
        )
        for name in names
    ]


def recorded_plugins() -> tuple[str, ...] | None:
    """`_RECORDED_PLUGINS` when they are what `_installed_plugins` would list, known without
    importing detect-secrets: it is not imported yet (so nothing has configured custom plugins
    in its settings) and its version file says the recorded version. None: import it to know."""
    if "detect_secrets" in sys.modules:
        return None
    spec = importlib.util.find_spec("detect_secrets")
    if spec is None or not spec.submodule_search_locations:
        return None  # not installed: the import says so, as before
    try:
        version = (Path(spec.submodule_search_locations[0]) / "__version__.py").read_text(encoding="utf-8")
    except OSError:
        return None  # an unusual layout: the import decides
    return _RECORDED_PLUGINS if version.strip() == f"VERSION = '{_RECORDED_VERSION}'" else None


@cache
def _installed_plugins() -> dict[str, tuple[re.Pattern[str], ...]]:
    """{plugin class name: its compiled denylist} of every installed plugin with one, in
    detect-secrets' order, `_SKIPPED_PLUGINS` left out. Imports detect-secrets."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    plugins = {}
    for plugin_class in get_mapping_from_secret_type_to_class().values():
        name = plugin_class.__name__
        if name in _SKIPPED_PLUGINS:
            continue
        regexes = tuple(plugin_class().denylist)
        if regexes:
            plugins[name] = regexes
    return plugins
