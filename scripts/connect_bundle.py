"""Stage the Posit Connect bundle: exactly the app's files, nothing private.

An allow-list, not an exclude list: whatever else is in the working tree (review logs with
reviewers' names and notes, caches, .venv, bench-data, tests, screenshots) cannot end up
in the bundle. `make connect-bundle` runs this, then `rsconnect write-manifest` on the
staged folder.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path("src/trajectory_review")
# (folder, file suffixes) the app needs at run time
SHIPPED = [
    (PACKAGE, (".py", ".toml")),
    (Path("static"), (".css", ".js", ".svg")),
    (Path("traces"), (".jsonl", ".jsonl.gz", ".ndjson", ".json", ".json.gz")),
]
FILES = ["app.py", "requirements.txt", ".python-version"]


def stage(out: Path) -> list[str]:
    if out.exists():
        shutil.rmtree(out)
    copied = []
    for name in FILES:
        copied.append(name)
    for folder, suffixes in SHIPPED:
        for path in sorted((ROOT / folder).rglob("*")):
            rel = path.relative_to(ROOT)
            if path.is_file() and path.name.endswith(suffixes) and "__pycache__" not in rel.parts:
                if ".reviews." in path.name:  # a review log kept beside the sample traces
                    continue
                copied.append(str(rel))
    for rel in copied:
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    return copied


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build" / "connect")
    files = stage(out)
    print(f"staged {len(files)} files in {out}", file=sys.stderr)
