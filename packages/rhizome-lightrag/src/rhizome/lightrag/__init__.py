"""rhizome.lightrag — work in progress."""
