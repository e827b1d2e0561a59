"""Compare two folders written by ``tools/synth_all.sh``: every template byte for byte.

``python -m tools.same_templates BEFORE AFTER`` prints, per assembly, the templates that are byte-identical and
those that differ only in asset hashes (a Lambda function's code changed, so its asset's content hash and S3 key
changed), naming the assets; any other difference is printed as a unified diff and the exit status is 1.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path

HASH = re.compile(r"\b[0-9a-f]{64}\b")
DESTINATION = re.compile(r"#:(\d{12}-[a-z0-9-]+?-)[0-9a-f]{8}\b")
"""A pipeline's publish step names ``<asset hash>:<account>-<region>-<hash of the two>``."""


def normalized(text: str) -> str:
    """``text`` with every asset hash (and a publish step's destination hash after it) as ``#``."""
    return DESTINATION.sub(r"#:\1#", HASH.sub("#", text))


def asset_hashes(folder: Path) -> dict[str, str]:
    """Asset hash -> the asset's source path (from the assembly's ``*.assets.json``)."""
    found: dict[str, str] = {}
    for manifest in folder.glob("*.assets.json"):
        for kind in ("files", "dockerImages"):
            for digest, asset in json.loads(manifest.read_text(encoding="utf-8")).get(kind, {}).items():
                found[digest] = asset.get("displayName") or asset.get("source", {}).get("path", digest)
    return found


def compare(before: Path, after: Path) -> tuple[list[str], bool]:
    lines: list[str] = []
    ok = True
    for old_dir in sorted(p for p in before.iterdir() if p.is_dir()):
        new_dir = after / old_dir.name
        old_files = {p.name for p in old_dir.glob("*.template.json")}
        new_files = {p.name for p in new_dir.glob("*.template.json")} if new_dir.is_dir() else set()
        if old_files != new_files:
            ok = False
            lines.append(f"{old_dir.name}: templates {sorted(old_files ^ new_files)} are in only one of the two")
        same, hashes_only = 0, []
        old_assets, new_assets = asset_hashes(old_dir), asset_hashes(new_dir)
        for name in sorted(old_files & new_files):
            a, b = (old_dir / name).read_bytes(), (new_dir / name).read_bytes()
            if a == b:
                same += 1
                continue
            ta, tb = a.decode(), b.decode()
            changed = set(HASH.findall(ta)) ^ set(HASH.findall(tb))
            if normalized(ta) == normalized(tb) and changed <= set(old_assets) | set(new_assets):
                names = sorted({(old_assets | new_assets)[h] for h in changed})
                hashes_only.append(f"{name} ({', '.join(names)})")
                continue
            ok = False
            diff = difflib.unified_diff(
                ta.splitlines(), tb.splitlines(), f"before/{name}", f"after/{name}", lineterm=""
            )
            lines.append(f"{old_dir.name}/{name} differs:\n" + "\n".join(list(diff)[:80]))
        lines.append(
            f"{old_dir.name}: {same} identical"
            + (f"; asset hashes only: {'; '.join(hashes_only)}" if hashes_only else "")
        )
    return lines, ok


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tools.same_templates BEFORE AFTER (folders written by tools/synth_all.sh)")
        return 2
    lines, ok = compare(Path(argv[0]), Path(argv[1]))
    print("\n".join(lines))
    print(
        "every template is the same" + (" (asset hashes aside)" if any("asset hashes" in x for x in lines) else "")
        if ok
        else "TEMPLATES DIFFER"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
