"""Print pip constraints that hold every dependency pyproject.toml declares with a floor (`>=X`) at
exactly that floor (`==X`), so that CI can run the adapter tests against the oldest
versions the project says it supports."""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
specs = list(project["dependencies"]) + [s for extra in ("postgres", "test")
                                         for s in project["optional-dependencies"][extra]]
seen = set()
for spec in specs:
    match = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*>=\s*([0-9][0-9.]*)", spec)
    if match and match.group(1).lower() not in seen:
        seen.add(match.group(1).lower())
        print(f"{match.group(1)}=={match.group(3)}")
sys.exit(0)
