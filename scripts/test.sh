#!/usr/bin/env bash
# Set up a fresh virtual environment per supported Python, install the project with its test extras, and
# run the whole test suite in each. Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

pyenv_root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
pythons=("${NIGHTHAWK_PYTHON_311:-python3}" "${NIGHTHAWK_PYTHON_313:-$pyenv_root/versions/3.13.0/bin/python}")

for python in "${pythons[@]}"; do
    version="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
    venv="build/venv-$version"
    echo "=== Python $version: installing into $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet ".[test]"
    echo "=== Python $version: running the tests"
    # Run from a folder outside the checkout's import path so the installed package is what gets tested.
    (cd tests && NIGHTHAWK_TOKENIZER=estimate "../$venv/bin/python" -m pytest -c ../pyproject.toml --rootdir .. "$@")
done
