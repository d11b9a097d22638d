"""``ChildFailedError``'s table in a job's stderr: one ``child_failure`` row per entry (a mixin of
:class:`~pt2logs.readers.lines.outcome_lines.OutcomeLines`; patterns in :mod:`.outcome_patterns`)."""

from __future__ import annotations

from typing import Any

from pt2logs.readers.lines import outcome_patterns as P
from pt2logs.readers.timebase import TimeBase
from pt2logs.readers.timebase import time_of_day_us as _tod


class ChildFailedTable:
    """Reads the table the elastic agent prints after ``ChildFailedError`` (``self.table`` while in it)."""

    table: dict[str, Any] | None
    entry: dict[str, Any] | None
    pid_rank: dict[int, int]

    def add(self, row: dict[str, Any]) -> None:  # (OutcomeLines.add)
        raise NotImplementedError

    def table_line(self, line_no: int, text: str, raw: str) -> bool:
        """Read one line of the table; False when the table has ended (the line is read normally)."""
        t = self.table
        assert t is not None
        if P.CFE_ROOT.match(text):
            self.close_entry()
            t["root"] = True
            return True
        e = P.CFE_ENTRY.match(text)
        if e is not None:
            self.close_entry()
            self.entry = {"line_no": line_no, "root": t["root"], "lines": [raw], "fields": {}}
            return True
        f = P.CFE_FIELD.match(text)
        if f is not None and self.entry is not None:
            self.entry["fields"][f.group("key")] = f.group("value").strip()
            self.entry["lines"].append(raw)
            return True
        if self.entry is not None and text.startswith("  "):
            self.entry["lines"].append(raw)  # the entry's traceback, indented
            return True
        self.close_entry()
        if (
            P.CFE_BORDER.match(text)
            or text.strip().endswith(" FAILED")
            or text.startswith(("---", "Failures:"))
        ):
            if P.CFE_BORDER.match(text) and t.get("bordered") and line_no - t["start"] > 3:
                self.table = None  # the closing border
            t["bordered"] = True
            return True
        if not text.strip() or text.strip() == "<NO_OTHER_FAILURES>":
            return True
        self.table = None
        return False

    def close_entry(self) -> None:
        e, self.entry = self.entry, None
        if e is None:
            return
        f = e["fields"]
        row: dict[str, Any] = {
            "line_no": e["line_no"],
            "n_lines": len(e["lines"]),
            "kind": "child_failure",
            "text": "\n".join(e["lines"]),
            "secondary": False,
            "root_cause": e["root"],
        }
        r = P.CFE_RANK.match(f.get("rank", ""))
        if r is not None:
            row["rank"], row["rank_from"], row["local_rank"] = (
                int(r.group("rank")),
                "table",
                int(r.group("local_rank")),
            )
        x = P.CFE_EXIT.match(f.get("exitcode", ""))
        if x is not None:
            code, pid = int(x.group("code")), int(x.group("pid"))
            row["exit_code"], row["pid"] = code, pid
            row["signal"] = x.group("sig") or P.signal_name(code)
            if r is not None:
                self.pid_rank[pid] = row["rank"]
        row["means"] = P.exit_means(row.get("exit_code"), row.get("signal"))
        tm = P.CFE_TIME.match(f.get("time", ""))
        if tm is not None:
            y, mo, d, hh, mi, ss = tm.groups()
            tod = _tod(f"{hh}:{mi}:{ss}")
            key = int(mo + d)
            if tod is not None:
                base = TimeBase()
                base.year = int(y)
                row["ts"] = base.to_utc(key, tod)
        row["detail"] = {k: f[k] for k in ("host", "error_file", "traceback") if k in f}
        self.add(row)
