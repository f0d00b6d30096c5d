"""rhizome.gorag — work in progress."""
