"""Secrets out of what pt2logs stores and prints: command lines, captured stderr, error messages.

Obvious secret shapes only (a redactor cannot know every secret): options and environment variables
named like a token, secret, password or key; credentials in URLs (``https://user:pw@host``,
``s3://key:secret@bucket``); ``Authorization`` headers; well-known token formats (GitHub, Hugging
Face, AWS access key ids, OpenAI-style ``sk-`` keys). The value becomes ``***``; the name stays so
the line still reads.
"""

from __future__ import annotations

import re

MASK = "***"
#: a name whose last word says secret: HF_TOKEN, --hf-token, AWS_SECRET_ACCESS_KEY, api_key (not max_tokens, tokenizer)
_NAME = r"[\w.-]*?(?:token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|credentials?)(?![\w])"
_RULES: list[tuple[re.Pattern[str], str]] = [
    # --token=abc, --api-key abc, -password=abc
    (re.compile(rf"(?i)(--?{_NAME}(?:=|\s+))(?!-)(\"[^\"]*\"|'[^']*'|\S+)"), rf"\g<1>{MASK}"),
    # HF_TOKEN=abc, AWS_SECRET_ACCESS_KEY=abc, export GITHUB_TOKEN='abc', token: abc
    (re.compile(rf"(?i)\b({_NAME}\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;]+)"), rf"\g<1>{MASK}"),
    # scheme://user:password@host
    (re.compile(r"(\b[a-zA-Z][\w+.-]*://)([^/\s:@]+):([^/\s@]+)@"), rf"\g<1>\g<2>:{MASK}@"),
    # user:password@host without a scheme (a URL's authority quoted alone, e.g. in a bucket-name error)
    (re.compile(r"(?<![\w/:])([\w.+-]+):([^\s/@:'\"*]{3,})@(?=[\w.-])"), rf"\g<1>:{MASK}@"),
    # Authorization: Bearer abc
    (re.compile(r"(?i)(\bauthorization\s*[:=]\s*(?:bearer|basic|token)?\s*)\S+"), rf"\g<1>{MASK}"),
    # well-known token formats
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}|hf_[A-Za-z0-9]{30,}|AKIA[0-9A-Z]{16}|sk-[A-Za-z0-9_-]{20,})\b"),
     MASK),
]


def redact(text: str) -> str:
    """``text`` with the values of obvious secrets replaced by ``***``."""
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    return text


def redact_bytes(data: bytes) -> bytes:
    return redact(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


class LineRedactor:
    """Redacts a byte stream line by line (a secret is never cut by a chunk boundary)."""

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self._rest + chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) < (1 << 20):
            self._rest = data
            return b""
        cut = cut or len(data)
        self._rest = data[cut:]
        return redact_bytes(data[:cut])

    def flush(self) -> bytes:
        rest, self._rest = self._rest, b""
        return redact_bytes(rest) if rest else b""
