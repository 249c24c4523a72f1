"""LLM roles' foundation: an OpenAI-compatible client with retries, accounting and a response
cache, the prompts as package files, and a loopback server for tests and benchmarks.

Nothing here needs an endpoint unless a role is asked for: importing it opens no connection.

- client.py     LLMConfig (options / TWIST_LLM_* environment), LLMClient (sync + async + batch)
- cache.py      ResponseCache: SQLite in WAL mode, keyed on the canonical request
- jsonreply.py  parse_json_reply: the tolerant JSON reader
- usage.py      token and cost accounting (usage_summary() for the manifest)
- prompts/      the prompt files and their loader (text, sha256, render)
- loopback.py   LoopbackServer: scripted replies, latency and injected faults on 127.0.0.1
- errors.py     LLMError and its kinds: an error for the item, never a score
"""

from twistbench.llm.cache import ResponseCache, request_key
from twistbench.llm.client import (
    ChatRequest,
    Completion,
    LLMClient,
    LLMConfig,
    Secret,
    is_configured,
    redact_url,
)
from twistbench.llm.errors import (
    LLMConnectionError,
    LLMError,
    LLMHTTPError,
    LLMJSONError,
    LLMRateLimitError,
    LLMResponseError,
    LLMTimeoutError,
    LLMTruncatedError,
)
from twistbench.llm.jsonreply import parse_json_reply
from twistbench.llm.prompts import Prompt, load_prompt, prompt_hashes, prompt_text
from twistbench.llm.usage import ModelPrice

__all__ = [
    "ChatRequest", "Completion", "LLMClient", "LLMConfig", "LLMConnectionError", "LLMError",
    "LLMHTTPError", "LLMJSONError", "LLMRateLimitError", "LLMResponseError", "LLMTimeoutError",
    "LLMTruncatedError", "ModelPrice", "Prompt", "ResponseCache", "Secret", "is_configured",
    "load_prompt", "parse_json_reply", "prompt_hashes", "prompt_text", "redact_url",
    "request_key",
]
