"""``kafkalite tour``: guided walk-throughs of the classic architecture on a running cluster
(:mod:`.steps`, run by :mod:`.runner`), each printing the commands it runs and checking what it
predicted."""
