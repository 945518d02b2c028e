"""The seed's five stages, runnable as ``python -m examples.stepNN_...``."""
