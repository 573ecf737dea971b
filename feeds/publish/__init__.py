"""Render the state into the files of `public/` (pure), and write them (atomic)."""
