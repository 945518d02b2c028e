"""Structured answers: a JSON value of the caller's shape, each field traced to the reads.

``OutputShape``/``shape_of`` read the shape (``minipi.structured.shape``); ``trace_fields``
traces a value's leaves (``minipi.structured.trace``); ``run_agent(..., output=...)`` asks
for it (``minipi.agent.output``).
"""

from __future__ import annotations

from minipi.structured.shape import OutputShape, shape_of
from minipi.structured.trace import FieldTrace, StructuredOutput, trace_fields, verdict_of

__all__ = [
    "FieldTrace",
    "OutputShape",
    "StructuredOutput",
    "shape_of",
    "trace_fields",
    "verdict_of",
]
