"""Stage 4 of the road, on pydantic-ai: the executor (`executor.py`), the two prompts of a step
(`_prompt.py`), the step's agent and its first round without the agent loop, the models built from
`provider:model` strings, and what every request passes on its way out (the budget gate, the send gate, the
request count, the repeat check)."""
