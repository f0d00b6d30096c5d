"""Chat endpoints that existing clients speak: OpenAIs and Ollamas."""
