"""servespec: declarative deployments of LLM inference servers."""

__version__ = "0.1.0"
