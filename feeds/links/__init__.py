"""Links found in papers: extracted from the digest text, then checked."""
