#!/usr/bin/env bash
# The main job: set up a fresh virtual environment, execute every example notebook offline (each step is
# answered from the notebook's replay store under notebooks/replays/), and render each one to HTML under
# build/notebooks/. The committed notebooks and stores are only read. Exits non-zero if a notebook fails.
# Usage: bash scripts/notebooks.sh [notebooks/NN-name.ipynb ...]
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

python="${NIGHTHAWK_PYTHON:-python3}"
venv="build/venv-notebooks"
out="build/notebooks"

echo "=== installing Nighthawk into $venv"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet ".[test]" nbconvert
# A kernel spec inside the environment, found first (JUPYTER_PATH), so the notebooks run on this
# environment's Python whatever kernels the machine or the user has installed.
"$venv/bin/python" -m ipykernel install --prefix "$venv" --name python3 --display-name "Python 3 (ipykernel)" >/dev/null
export JUPYTER_PATH="$root/$venv/share/jupyter"

# Offline: no key or server reaches the kernels and the stores are only replayed. Nothing else is set: the
# prompts do not depend on the machine (token budgets are always estimated), so the notebooks carry their
# own settings.
unset OPENAI_API_KEY OPENAI_BASE_URL NIGHTHAWK_TOKENIZER
export NIGHTHAWK_REPLAY_MODE=replay

if [ "$#" -gt 0 ]; then
    notebooks=("$@")
else
    notebooks=(notebooks/[0-9][0-9]-*.ipynb)
fi

rm -rf "$out"
mkdir -p "$out"
failed=()
started=$SECONDS
for notebook in "${notebooks[@]}"; do
    name="$(basename "$notebook" .ipynb)"
    echo "=== executing $notebook"
    # Widget state is not stored, so the HTML shows each step's static fallback instead of an empty widget
    # (the widget renderer would come from a CDN). Cells tagged `raises-exception` may fail; any other
    # error fails the notebook.
    if ! "$venv/bin/jupyter" nbconvert --to html --execute \
        --ExecutePreprocessor.store_widget_state=False \
        --ExecutePreprocessor.timeout=300 \
        --output-dir "$out" --output "$name" \
        "$notebook" >"$out/$name.log" 2>&1; then
        echo "!!! $notebook failed; the end of $out/$name.log:"
        tail -n 30 "$out/$name.log"
        failed+=("$notebook")
    fi
done

{
    echo "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Nighthawk example notebooks</title></head><body>"
    echo "<h1>Nighthawk example notebooks</h1><p>Executed offline from the replay stores in notebooks/replays/.</p><ul>"
    for page in "$out"/*.html; do
        base="$(basename "$page")"
        [ "$base" = "index.html" ] || echo "<li><a href=\"$base\">${base%.html}</a></li>"
    done
    echo "</ul></body></html>"
} >"$out/index.html"

echo
if [ "${#failed[@]}" -gt 0 ]; then
    echo "${#failed[@]} notebook(s) failed: ${failed[*]}"
    exit 1
fi
echo "${#notebooks[@]} notebooks executed offline in $((SECONDS - started)) s."
echo "Rendered output: $root/$out/index.html (one HTML page per notebook beside it)"
