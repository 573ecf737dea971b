"""Which papers belong to which topics, and why: terms (terms), a paper's matchable text
(fields), the fast matcher (fast) held to the slow obvious one (reference), what to
re-match when (membership), the matching step of a cycle (step), and the report that
`feeds check` prints (report)."""
