"""Secrets out of what pt2logs stores and prints: command lines, captured stderr, error messages.

Obvious secret shapes only (a redactor cannot know every secret): options and environment variables
named like a token, secret, password or key; credentials in URLs (``https://user:pw@host``,
``s3://key:secret@bucket``); ``Authorization`` headers; well-known token formats (GitHub, Hugging
Face, AWS access key ids, OpenAI-style ``sk-`` keys). The value becomes ``***``; the name stays so
the line still reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable

MASK = "***"
#: a name whose last word says secret: HF_TOKEN, --hf-token, AWS_SECRET_ACCESS_KEY, api_key, --auth, http_auth
#: (not max_tokens, tokenizer, author)
_NAME = (
    r"[\w.-]*?(?:token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|credentials?"
    r"|auth)(?![\w])"
)
#: a value: quoted (either quote), or up to a space, comma, semicolon, ampersand or closing bracket
_VALUE = r"(\"[^\"]*\"|'[^']*'|[^\s,;&'\"\])}=>][^\s,;&'\"\])}]*)"
_RULES: list[tuple[re.Pattern[str], str]] = [
    # --token=abc, --api-key abc, -password=abc, --auth=abc
    (
        re.compile(rf"(?i)(?<![\w.-])(--?{_NAME}(?:=|[ \t]+))(?!-)(\"[^\"]*\"|'[^']*'|\S+)"),
        rf"\g<1>{MASK}",
    ),
    # sys.argv as Python shows it: ['train.py', '--token', 'abc']
    (re.compile(rf"(?i)(['\"]--?{_NAME}['\"]\s*,\s*)('[^']*'|\"[^\"]*\")"), rf"\g<1>'{MASK}'"),
    # HF_TOKEN=abc, export GITHUB_TOKEN='abc', token: abc, api_key == 'abc', "password": "abc" (JSON),
    # {'api_key': 'abc'} (a dict's repr), os.environ['TORCH_HUB_TOKEN'] = 'abc' (fx_graph_runnable)
    (
        re.compile(
            rf"(?i)\b({_NAME}['\"\]]*[ \t]*(?:==|:=|=>|[=:])[ \t]*)(?!{re.escape(MASK)})" + _VALUE
        ),
        rf"\g<1>{MASK}",
    ),
    # scheme://user:password@host (a password may hold / + = :, as AWS secret keys do)
    (re.compile(r"(\b[a-zA-Z][\w+.-]*://)([^/\s:@]+):([^\s@]+)@"), rf"\g<1>\g<2>:{MASK}@"),
    # user:password@host without a scheme (a URL's authority quoted alone, e.g. in a bucket-name error)
    (re.compile(r"(?<![\w/:])([\w.+-]+):([^\s@:'\"*]{3,})@(?=[\w.-])"), rf"\g<1>:{MASK}@"),
    # curl -u user:password, --user=user:password
    (
        re.compile(r"(?<!\S)(-u\s*|--user[=\s]\s*)(['\"]?[^\s:'\"]+):([^\s'\"]+)"),
        rf"\g<1>\g<2>:{MASK}",
    ),
    # Authorization: Bearer abc
    (re.compile(r"(?i)(\bauthorization\s*[:=]\s*(?:bearer|basic|token)?\s*)\S+"), rf"\g<1>{MASK}"),
    # signed URLs: X-Amz-Signature=, X-Amz-Credential=, X-Amz-Security-Token=, X-Goog-Signature=, Azure SAS sig=
    (
        re.compile(
            r"(?i)([?&](?:x-amz-(?:signature|credential|security-token)|x-goog-(?:signature|credential)|sig)=)[^&\s'\"]+"
        ),
        rf"\g<1>{MASK}",
    ),
    # a wandb API key: 40 hex digits (or host-prefixed: local-<40 hex>) given as key=, e.g. wandb.login(key='…')
    (re.compile(r"(?i)\b(key\s*[=:]\s*['\"]?)(?:[\w]+-)?[0-9a-f]{40}\b"), rf"\g<1>{MASK}"),
    # well-known token formats
    (
        re.compile(
            r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}|hf_[A-Za-z0-9]{30,}|AKIA[0-9A-Z]{16}|sk-[A-Za-z0-9_-]{20,})\b"
        ),
        MASK,
    ),
]

#: what every rule needs (RE2 and Python syntax): text where this finds nothing is left alone unscanned.
#: Kept small: RE2 compiles it on every call (pt2logs.redaction.masking.scrub_batches, once per row group), then scans ~600 MB/s.
PREFILTER = (
    r"(?i:(?:token|secret|passw(?:or)?d|api.?key|access.?key|private.?key|credentials?|auth)(?:\W|$)"
    r"|x-amz-|x-goog-|[?&]sig=|--user|(?:^|\s)-u|key\s*[=:]\s*['\"]?(?:\w+-)?[0-9a-f]{40})"
    r"|://[^/\s:@]+:[^\s@]+@|:[^\s@:'\"*]{3,}@"
    r"|gh[pousr]_|github_pat_|hf_[A-Za-z0-9]{30}|AKIA[0-9A-Z]{16}|sk-[A-Za-z0-9_-]{20}"
)


def redact(text: str) -> str:
    """``text`` with the values of obvious secrets replaced by ``***``."""
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    return text


def redact_bytes(data: bytes) -> bytes:
    return redact(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


class LineRedactor:
    """Redacts a byte stream line by line (a secret is never cut by a chunk boundary)."""

    def __init__(self, also: Callable[[bytes], bytes] | None = None) -> None:
        self._rest = b""
        self._also = also  # more masking after the shapes (a run's learnt secrets)

    def _redact(self, data: bytes) -> bytes:
        data = redact_bytes(data)
        return self._also(data) if self._also is not None else data

    def feed(self, chunk: bytes) -> bytes:
        data = self._rest + chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) < (1 << 20):
            self._rest = data
            return b""
        cut = cut or len(data)
        self._rest = data[cut:]
        return self._redact(data[:cut])

    def flush(self) -> bytes:
        rest, self._rest = self._rest, b""
        return self._redact(rest) if rest else b""


# ---------------------------------------------------------------- who and where (bug reports)

#: home folders whose next part is a user name: /home/alice, /Users/alice, /data/users/alice (Meta
#: devservers), /export/home/alice, C:\Users\alice (either slash); /root is root's home
_HOME = re.compile(
    r"(?:(?<![\w.-])/(?:home|Users|users|data/users|export/home)/|(?<![\w])[A-Za-z]:[\\/]+Users[\\/]+)"
    r"([\w.-]+)(?=[\\/]|\b)"
)
_ROOT_HOME = re.compile(r"(?<![\w.-])/root(?=/|\b)")
#: torch's per-user temp folders: /tmp/torchinductor_alice, /tmp/torchelastic_alice
_TMP_USER = re.compile(r"(?<![\w.-])(torchinductor|torchelastic|torch_extensions|triton)_([\w.-]+)")
_IPV4 = re.compile(
    r"(?<![\w.])(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}(?![\w.])"
)
#: account names that say nothing about a person (not replaced wherever they appear as words)
_GENERIC_USERS = frozenset(
    {
        "root",
        "user",
        "users",
        "admin",
        "home",
        "runner",
        "ubuntu",
        "ec2-user",
        "jovyan",
        "shared",
        "lib",
    }
)
USER = "<user>"
HOST = "<host>"


class Redactor:
    """Secrets (:func:`redact`), and who and where: a home folder becomes ``~`` (``/home/alice/x.py``
    → ``~/x.py``), a user name seen in one (or given) becomes ``<user>`` wherever it stands as a word,
    a host name given (``runs.host``, this machine's) becomes ``<host>`` (its short name too), an IPv4
    address other than loopback or 0.0.0.0 becomes ``<ip>``.

    Call :meth:`learn` on every text first, then the redactor on each: a user name first seen in one
    excerpt is then taken out of all of them.
    """

    def __init__(
        self, users: tuple[str, ...] | list[str] = (), hosts: tuple[str, ...] | list[str] = ()
    ) -> None:
        self.users: set[str] = {u for u in users if self._personal(u)}
        self.hosts: set[str] = set()
        for h in hosts:
            if h and len(h) >= 2 and h.lower() != "localhost":
                self.hosts.add(h)
                short = h.split(".", 1)[0]
                if len(short) >= 2 and short.lower() != "localhost":
                    self.hosts.add(short)
        self._words: re.Pattern[str] | None = None

    @staticmethod
    def _personal(name: str) -> bool:
        return len(name) >= 2 and name.lower() not in _GENERIC_USERS

    def learn(self, text: str) -> None:
        for m in _HOME.finditer(text):
            if self._personal(m.group(1)):
                self.users.add(m.group(1))
        for m in _TMP_USER.finditer(text):
            if self._personal(m.group(2)):
                self.users.add(m.group(2))
        self._words = None

    def _pattern(self) -> re.Pattern[str] | None:
        if self._words is None and (self.users or self.hosts):
            names = sorted(self.users | self.hosts, key=len, reverse=True)
            self._words = re.compile(
                r"(?<![\w.-])(" + "|".join(re.escape(n) for n in names) + r")(?![\w-])", re.I
            )
        return self._words

    def __call__(self, text: str) -> str:
        text = redact(text)
        text = _HOME.sub("~", text)
        text = _ROOT_HOME.sub("~", text)
        text = _TMP_USER.sub(
            lambda m: f"{m.group(1)}_{USER}" if self._personal(m.group(2)) else m.group(0), text
        )
        text = _IPV4.sub(
            lambda m: m.group(0) if m.group(0) in ("127.0.0.1", "0.0.0.0") else "<ip>", text
        )
        words = self._pattern()
        if words is not None:
            hosts = {h.lower() for h in self.hosts}
            text = words.sub(lambda m: HOST if m.group(1).lower() in hosts else USER, text)
        return text
