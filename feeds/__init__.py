"""paperfeeds: follow new papers from digest files through per-topic RSS, Atom and JSON feeds."""

__version__ = "0.1.0"
