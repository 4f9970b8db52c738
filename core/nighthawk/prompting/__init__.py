"""What the model sees: everything that turns a step into the text (and media) of its requests.

- `_templates.py` holds the default prompt templates, which `nighthawk.model._prompt` fills for a step;
  `_limits.py` how much of a step's context a prompt shows, and in which style.
- `_summaries.py` writes the locals and globals summaries of the user prompt; `_namespace.py` the two-tier
  locals summary of a module namespace (a notebook cell's), from `_mentions.py` (what the cell names),
  `_explorer.py` (one short line per other name) and `_imports.py` (the import lines).
- `_render.py` renders any value within a token budget; `_reprs.py` holds the short, safe texts it and the
  summaries build on (type names, bounded reprs, media sniffing); `_tables.py` describes table columns.
- `_tokens.py` counts tokens: the vocabulary-free estimate that every prompt budget uses, exact counts
  for reports where a vocabulary is available.
- `_media.py` finds the images and documents a block reads and sends them beside the text.

Its modules render values and templates and import nothing above them (no step, no runtime, no
configuration). The package face imports nothing: `configuration.py` reads the default templates when `import nighthawk`
runs, and that must not load the rendering stack.
"""
