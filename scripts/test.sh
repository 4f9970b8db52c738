#!/usr/bin/env bash
# Set up a fresh virtual environment per supported Python, install the project with its test extras, and
# run the whole test suite in each: unit and kernel tests, the install/autoload check, and on the first
# Python also the example notebooks under nbval and the real-browser check.
# Usage: bash scripts/test.sh [extra pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

pyenv_root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
pythons=("${NIGHTHAWK_PYTHON_311:-python3}" "${NIGHTHAWK_PYTHON_313:-$pyenv_root/versions/3.13.0/bin/python}")

# Budgets are estimated offline: tiktoken cannot download its vocabulary here.
export NIGHTHAWK_TOKENIZER=estimate

first=1
for python in "${pythons[@]}"; do
    version="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
    venv="$root/build/venv-$version"
    extras="test"
    targets=("$root/tests")
    if [ "$first" = 1 ]; then
        extras="test,browser"
        targets=("$root/tests" "$root/notebooks" --nbval --nbval-sanitize-with "$root/notebooks/sanitize.cfg")
    fi
    echo "=== Python $version: installing into build/venv-$version"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet ".[$extras]"
    echo "=== Python $version: running the tests"
    # Run from a folder outside the checkout's import path so the installed package is what gets tested.
    # The first Python must run the real-browser check; it may not skip it for a missing tool.
    (cd "$root/build" && NIGHTHAWK_REQUIRE_BROWSER="$first" "$venv/bin/python" -m pytest -c "$root/pyproject.toml" --rootdir "$root" \
        "${targets[@]}" "$@")
    first=0
done
