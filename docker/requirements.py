"""Print kafkalite's requirements, one a line, for the image build's dependency layers.

    python requirements.py install        # [options] install_requires of setup.cfg
    python requirements.py extra spark    # [options.extras_require] spark
    python requirements.py build-system   # [build-system] requires of pyproject.toml

The dependency layers are built from setup.cfg alone, before the source is copied in, so editing
the source rebuilds only the small layer that installs kafkalite itself.
"""

import configparser
import sys
import tomllib


def lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def main(argv: list[str]) -> int:
    if argv[:1] == ["build-system"]:
        with open("pyproject.toml", "rb") as f:
            requirements = tomllib.load(f)["build-system"]["requires"]
    else:
        cfg = configparser.ConfigParser()
        if not cfg.read("setup.cfg"):
            raise SystemExit("requirements.py: no setup.cfg in the working directory")
        if argv[:1] == ["install"]:
            requirements = lines(cfg["options"]["install_requires"])
        elif argv[:1] == ["extra"] and len(argv) == 2:
            requirements = lines(cfg["options.extras_require"][argv[1]])
        else:
            raise SystemExit(__doc__)
    print("\n".join(requirements))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
