"""Stage-1 extraction through the user's own Codex CLI: their login, their model provider.

One `codex exec --ephemeral` per extraction, in an empty temporary directory with the read-only
sandbox, with our own system prompt (as `model_instructions_file`), our rendered user prompt (the
redacted transcript inside it) on stdin, and our strict JSON schema as `--output-schema`. The
isolation overrides of `codex_runner` keep Codex's memory feature, hooks, MCP servers, web search
and tools out of the call. The answer is parsed by the same strict parser as the `openai`
provider, and failures raise the same provider errors, so concurrency, leases, retries and
outcomes are exactly those of `openai`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from codex_memories.llm.base import ExtractionRequest, ExtractionResponse, InvalidModelOutput
from codex_memories.llm.codex_runner import EXTRACTION_OVERRIDES, CodexRunner, require_output
from codex_memories.llm.schema import Stage1OutputError, parse_stage1_output, stage1_output_schema

PROVIDER_NAME = "codex"
CODEX_DEFAULT_MODEL = "codex-default"
"""The model label when none is configured: Codex then uses the user's own default model."""


class CodexExtractionProvider:
    name = PROVIDER_NAME

    def __init__(
        self,
        runner: CodexRunner,
        *,
        model: str | None,
        timeout_seconds: float = 300.0,
        reasoning_effort: str | None = "low",
    ) -> None:
        self.runner = runner
        self.model = model or None
        self.timeout_seconds = timeout_seconds
        # Spec 1.7: phase 1 runs at low effort unless configured otherwise.
        self.reasoning_effort = reasoning_effort or "low"

    def last_rate_limits(self) -> None:
        """Codex reports no rate limits for our calls: `exec --json` prints none and
        `--ephemeral` writes no rollout (measured on 0.147 and 0.171). The guard then reads the
        user's own rollouts."""
        return None

    def extract(self, request: ExtractionRequest) -> ExtractionResponse:
        scratch = Path(tempfile.mkdtemp(prefix="codex-memories-extract-"))
        try:
            workdir = scratch / "cwd"  # empty: the model has nothing to read, and may write nothing
            workdir.mkdir()
            schema = scratch / "stage1_schema.json"
            schema.write_text(json.dumps(stage1_output_schema()), encoding="utf-8")
            instructions = scratch / "instructions.md"
            instructions.write_text(request.system_prompt.text, encoding="utf-8")
            last_message = scratch / "last_message.json"
            args = self.runner.exec_args(
                cwd=workdir,
                sandbox="read-only",
                overrides=EXTRACTION_OVERRIDES,
                model=self.model,
                reasoning_effort=self.reasoning_effort,
                output_schema=schema,
                last_message=last_message,
                instructions_file=instructions,
            )
            run = self.runner.run(
                args, stdin_text=request.user_prompt.text, cwd=workdir, timeout_seconds=self.timeout_seconds
            )
            text = require_output(run, last_message, "codex extraction")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        try:
            extraction = parse_stage1_output(text)
        except Stage1OutputError as error:
            raise InvalidModelOutput(f"codex extraction: {error}") from None
        return ExtractionResponse(
            extraction=extraction, usage=run.usage(), provider=self.name, model=self.model or CODEX_DEFAULT_MODEL
        )
