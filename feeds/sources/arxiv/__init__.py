"""New submissions in arXiv categories: the API's Atom read (atom), what to ask next and
what is new (harvest, pure), and the polite network edge (client)."""
