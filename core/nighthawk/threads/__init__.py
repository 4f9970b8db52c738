"""Where and when user code runs: the background event loop with user code kept on the caller's thread
(`_loop.py`), the wall-time deadline that stops user code (`_deadline.py`), and Ctrl-C taken while a step or a
map waits (`_interrupts.py`)."""
