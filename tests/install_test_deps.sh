#!/usr/bin/env bash
# Install what the test suite needs: the package with its test extra (from PyPI) and, for the
# report's screenshot test (tests/test_report_run.py), headless Chromium from Debian's packages
# when it is missing and this runs as root. Without root it says so; that test is then skipped
# (outside CI) instead of failing.
set -euo pipefail
cd "$(dirname "$0")/.."
pip install -e ".[test]"
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
    else
        echo "note: headless Chromium is missing and this is not root: install Debian's chromium package" \
             "to run the report's screenshot test" >&2
    fi
fi
