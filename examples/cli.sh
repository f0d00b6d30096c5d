#!/usr/bin/env bash
# The command line, offline: index the demo corpus, query it, answer extractively.
set -euo pipefail
out=$(mktemp -d)/index
corpus=$(uv run python -c "from rhizome.rag.cli import sample_corpus; print(sample_corpus())")
uv run rhizome index "$corpus" --out "$out" --offline --chunk-size 200 --chunk-overlap 20
uv run rhizome query "$out" "What did Brandt & Sons trade?" -k 2 --answer --offline
