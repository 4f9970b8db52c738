"""What the model's answers do to a step: its tool calls (`tools.py`: `nh_eval`, `nh_assign` and the user's
tools) and its outcome, checked and resolved into Python control flow (`outcome.py`, stage 5). Both ask the
oversight in force first, and run in the isolated child when the step has one."""
