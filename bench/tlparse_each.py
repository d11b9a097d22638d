"""tlparse as its users run it over many jobs: one `tlparse LOG -o DIR --overwrite --no-browser` per trace file.

    python -m bench.tlparse_each ROOT OUT [--jobs N]

With --jobs N, N tlparse processes run at once (a shell loop with `xargs -P N`).
Prints the number of files, bytes and failures as JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TLPARSE = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("out")
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args()
    logs = sorted(p for p in Path(a.root).rglob("*.log") if p.is_file())
    out = Path(a.out)

    def one(i_p: tuple[int, Path]) -> int:
        i, p = i_p
        r = subprocess.run(
            [TLPARSE, str(p), "-o", str(out / f"{i:05d}"), "--overwrite", "--no-browser"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return r.returncode

    with ThreadPoolExecutor(a.jobs) as ex:
        rcs = list(ex.map(one, enumerate(logs)))
    print(
        json.dumps(
            {
                "files": len(logs),
                "bytes": sum(p.stat().st_size for p in logs),
                "failed": sum(1 for rc in rcs if rc != 0),
            }
        )
    )


if __name__ == "__main__":
    main()
