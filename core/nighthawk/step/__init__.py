"""Stage 3 of the road: one execution of a block. Its state (`_context.py`: `StepContext`, built by
`build_step`), what it allows (the outcome kinds and their schema, the user tools in scope) and the checks
its values pass (`_validation.py`; `_tool_signature.py` for a user tool when it is registered), the
boundary error a tool hands the model, and the evaluation of model-written expressions in its namespaces
(`_evaluate.py`)."""
