"""Stage 4 of the road, on pydantic-ai: the executor (`executor.py`), the two prompts of a step
(`_prompt.py`), the step's agent and its first round without the agent loop, the models built from
`provider:model` strings and their tool schemas adapted once (`_schema_adaptation.py`), and what every
request passes on its way out (the budget gate, the send gate, the request count, and the repeat check that
`_watch.py` runs with `_repeats.py`)."""
