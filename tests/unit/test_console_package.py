"""The console's page ships with every install: setup.cfg's package data covers every file of
kafkalite/console/static (a file it missed would be absent from the wheel the Docker images
install, as a module once was), and the page loads nothing from the internet."""

import configparser
import fnmatch
import os
import re

import kafkalite.console
from kafkalite.console.web import static_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_package_data_covers_every_static_file():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    patterns = config["options.package_data"]["kafkalite.console"].split()
    package = os.path.dirname(kafkalite.console.__file__)
    files = [os.path.relpath(os.path.join(d, f), package)
             for d, _, names in os.walk(static_dir()) for f in names]
    assert sorted(files) == ["static/console.css", "static/console.html", "static/console.js"]
    assert [f for f in files if not any(fnmatch.fnmatch(f, p) for p in patterns)] == []


def test_page_loads_nothing_from_elsewhere():
    for name in ("console.html", "console.js", "console.css"):
        with open(os.path.join(static_dir(), name), encoding="utf-8") as f:
            text = f.read()
        assert re.findall(r"(?:src|href)\s*=\s*[\"']https?://|url\(\s*[\"']?https?://|@import",
                          text) == [], name
