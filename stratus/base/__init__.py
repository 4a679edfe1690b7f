"""The foundation every layer uses and that imports nothing of the project: errors
(the exit-status contract), resource vectors in integer units, temporary names, the ranges
of time options, what a reader may open, and which core runs (compiled or pure)."""
