"""What the model sees in a data notebook, with and without the usual import lines; and the fixed prompt.

Prints, for a `%%natural` cell over the data notebook of tests/kernel/data_notebook.py (a 1,000-row DataFrame,
a Series, a 64x32 array, 300 notes, a config dict, a dataclass, a helper function), the tokens of its LOCALS
and GLOBALS sections without the import cell, with the 45-name import cell (goal: it adds at most 100 tokens),
and with 44 more names; then the
first-request tokens of the three reference blocks of bench/bench_tokens.py (goal: at most 600 each).

Counts are exact (o200k_base) when tiktoken's vocabulary loads (`TIKTOKEN_CACHE_DIR`, see bench_tokens.py),
else the estimate; the output says which. Asserts nothing.

Run: PYTHONPATH=core:. python bench/bench_notebook_prompt.py
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests" / "kernel")]

from bench_tokens import counter, print_reference_blocks
from data_notebook import DATA, IMPORTS, MORE, first_request, prompt_section
from IPython.core.interactiveshell import InteractiveShell

PROGRAM = "Add up the amount of <sales> per region and store the totals in <:totals>."


def namespace_tokens(shell: InteractiveShell, count) -> int:
    _, user = first_request(shell, PROGRAM, "--display none")
    return sum(count(prompt_section(user, section)) for section in ("LOCALS", "GLOBALS"))


def main() -> None:
    count, label = counter()
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "nighthawk")
    print(f"notebook namespace sections, LOCALS + GLOBALS ({label})")
    shell.run_cell(DATA)
    plain = namespace_tokens(shell, count)
    shell.run_cell(IMPORTS)
    imported = namespace_tokens(shell, count)
    shell.run_cell(MORE)
    longer = namespace_tokens(shell, count)
    print(f"  data only                 {plain:6}")
    # The data of the other tier is one short line a name now, so a ratio to it says little: the import cell
    # adds one `imported:` line.
    print(f"  data + 45 imported names  {imported:6}  (+{imported - plain}; goal at most +100)")
    print(f"  + 44 more names           {longer:6}")
    print_reference_blocks(count, label)


if __name__ == "__main__":
    main()
