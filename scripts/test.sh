#!/usr/bin/env bash
# Set up a fresh virtual environment per supported Python, install the project with its test and Ray extras,
# and run the whole test suite in each: unit and kernel tests (the Ray ones on a local cluster, required:
# a missing Ray fails them rather than skipping), the install/autoload check, and on the first
# Python also the example notebooks under nbval (twice: as they are, and with an exact tokenizer available)
# and the real-browser check. Installs chromium through apt when it is missing.
# Usage: bash scripts/test.sh [extra pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

pyenv_root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
pythons=("${NIGHTHAWK_PYTHON_311:-python3}" "${NIGHTHAWK_PYTHON_313:-$pyenv_root/versions/3.13.0/bin/python}")

# The real-browser check drives a headless chromium; on a fresh machine, install Debian's package.
ensure_chromium() {
    command -v chromium >/dev/null 2>&1 && return 0
    local sudo_cmd=()
    if [ "$(id -u)" != 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "!!! chromium is missing and this user is not root and has no sudo to install it." >&2
            echo "!!! Install it yourself (Debian/Ubuntu: apt-get install chromium) or put a chromium on PATH." >&2
            return 1
        fi
        sudo_cmd=(sudo)
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "!!! chromium is missing and there is no apt-get here to install it; put a chromium on PATH." >&2
        return 1
    fi
    echo "=== installing chromium (apt-get${sudo_cmd:+ through sudo}) for the real-browser check"
    if ! { "${sudo_cmd[@]}" apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq chromium >/dev/null; }; then
        echo "!!! installing chromium with apt-get failed (see above); install it yourself and run again." >&2
        return 1
    fi
}
ensure_chromium

# Run with no project environment variable: the notebooks and tests carry their own settings.
unset NIGHTHAWK_TOKENIZER NIGHTHAWK_REPLAY_MODE

first=1
for python in "${pythons[@]}"; do
    version="$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
    venv="$root/build/venv-$version"
    extras="test,ray"
    targets=("$root/tests")
    notebooks=("$root/notebooks" --nbval --nbval-sanitize-with "$root/notebooks/sanitize.cfg")
    if [ "$first" = 1 ]; then
        extras="test,browser,ray"
        targets=("$root/tests" "${notebooks[@]}")
    fi
    echo "=== Python $version: installing into build/venv-$version"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet ".[$extras]"
    echo "=== Python $version: running the tests"
    # Run from a folder outside the checkout's import path so the installed package is what gets tested.
    # The first Python must run the real-browser check, every Python the Ray tests; neither may skip for a
    # missing tool.
    (cd "$root/build" && NIGHTHAWK_REQUIRE_BROWSER="$first" NIGHTHAWK_REQUIRE_RAY=1 "$venv/bin/python" -m pytest -c "$root/pyproject.toml" --rootdir "$root" \
        "${targets[@]}" "$@")
    if [ "$first" = 1 ]; then
        # The same notebooks where tiktoken's vocabulary loads: a stand-in encoding (one token per byte, no
        # download) shadows tiktoken's own. Prompts, and so every replayed answer, must not change.
        echo "=== Python $version: the notebooks again, with an exact tokenizer available"
        (cd "$root/build" && PYTHONPATH="$root/tests/support/exact_tokenizer" "$venv/bin/python" -m pytest \
            -c "$root/pyproject.toml" --rootdir "$root" "${notebooks[@]}" "$@")
        # The token estimate against the real o200k vocabulary (and cl100k, for tests/core/test_tokens.py), built offline from a PyPI package
        # by the shared tool when it is beside the checkout (the suite above skips these checks, saying so).
        vocabulary_tool="$root/../shared/tools/tiktoken_offline_cache.sh"
        if [ -f "$vocabulary_tool" ] && bash "$vocabulary_tool" "$root/build/tiktoken-vocabulary"; then
            echo "=== Python $version: the token estimate against the exact vocabularies"
            (cd "$root/build" && TIKTOKEN_CACHE_DIR="$root/build/tiktoken-vocabulary" "$venv/bin/python" -m pytest \
                -c "$root/pyproject.toml" --rootdir "$root" "$root/tests/core/test_token_estimate.py" "$root/tests/core/test_fixed_prompt.py" \
                "$root/tests/core/test_tokens.py" "$@")
        else
            echo "=== Python $version: no exact vocabulary could be built; the token estimate was checked only where it needs none"
        fi
    fi
    first=0
done
