"""rhizome.graphrag — work in progress."""
