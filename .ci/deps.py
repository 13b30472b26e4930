"""Print requirements from pyproject.toml, one per line, for the CI scripts' pip installs.

    python3 .ci/deps.py SECTION...

SECTION is ``runtime`` (project.dependencies), ``build`` (build-system.requires),
``extra:NAME`` (an optional-dependencies extra) or ``extra:NAME:PKG,PKG`` (only the named
packages of that extra, as pinned there).
"""

import re
import sys
from pathlib import Path

import tomllib

meta = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
for section in sys.argv[1:]:
    kind, _, rest = section.partition(":")
    if kind == "runtime":
        wanted = meta["project"]["dependencies"]
    elif kind == "build":
        wanted = meta["build-system"]["requires"]
    elif kind == "extra":
        name, _, only = rest.partition(":")
        wanted = meta["project"]["optional-dependencies"][name]
        if only:
            names = "|".join(re.escape(n) for n in only.split(","))
            wanted = [d for d in wanted if re.match(rf"({names})\b", d)]
    else:
        sys.exit(f"deps.py: unknown section {section!r}")
    print("\n".join(wanted))
