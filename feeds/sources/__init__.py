"""What brings papers in: inbox folders (inbox), the digest format (digest), remote digest
files (remote) and arXiv categories (arxiv/); ingest stores a batch of papers from any of
them."""
