"""langgraph_rhizome — work in progress."""
