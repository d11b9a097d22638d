"""What every section of a bug report is written with: the facts, the redactor, the excerpt size and
the excerpts in full (for the .zip), and the file-name rule of the excerpts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pt2logs.bugreport.facts import Facts
from pt2logs.reports import markdown as md


@dataclass
class Ctx:
    facts: Facts
    r: Callable[[str], str]  # the redactor (identity with --no-redact)
    scale: float = 1.0  # excerpt sizes, lowered when the report is too long for an issue
    files: dict[str, str] = field(default_factory=dict)  # excerpts in full, for the .zip

    def excerpt(
        self,
        name: str,
        title: str,
        text: str,
        info: str = "",
        lines: int = 80,
        chars: int = 6000,
        open_: bool = False,
        tail: bool = False,
    ) -> str:
        """A folded excerpt of ``text`` (redacted): its start, or its end (``tail``: a log's last lines);
        the whole of it goes to the zip as ``excerpts/<name>``."""
        text = self.r(text)
        self.files[f"excerpts/{name}"] = text
        shown, left = (md.cut_tail if tail else md.cut)(
            text, max(5, int(lines * self.scale)), max(500, int(chars * self.scale))
        )
        where = "earlier" if tail else "more"
        note = (
            f"\n_{left} {where} lines in `excerpts/{name}` of the .zip bundle._\n" if left else ""
        )
        return md.details(title, md.fence(shown, info) + note, open_=open_)


def cid(ctx: Ctx) -> str | None:
    return (ctx.facts.compile or {}).get("compile_id")


def slug(s: Any) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in str(s or "run"))
