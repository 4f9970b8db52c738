"""The masking rules under the name users have imported them by: `nighthawk.redaction.ContextRedaction`,
`nighthawk.redaction.DEFAULT_MASK_NAME_PATTERNS`, ... They live in `nighthawk.secrets`, with the rest of the
secret machinery; this module only names them again. `import nighthawk` does not load it: `nh.redaction`
imports it on first use.
"""

from __future__ import annotations

from .secrets import DEFAULT_MASK_NAME_PATTERNS, DEFAULT_MASK_VALUE_PATTERNS, ContextRedaction, looks_ordinary

__all__ = [
    "DEFAULT_MASK_NAME_PATTERNS",
    "DEFAULT_MASK_VALUE_PATTERNS",
    "ContextRedaction",
    "looks_ordinary",
]
