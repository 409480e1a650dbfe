"""`attndoctor fleet`: the pure comparison of a job's ranks (ranks) and the distributed gathering of their answers
(dist)."""
