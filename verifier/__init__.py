"""gotchas: verify LLM serving-engine gotchas against engine source code."""

__version__ = "0.5.0"
