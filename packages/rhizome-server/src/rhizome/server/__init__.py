"""`rhizome serve`: Rhizome indexes over HTTP."""
