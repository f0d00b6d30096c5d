"""The retrieval layer: the contract every retrieval mode keeps and what modes are written with —
:mod:`~rhizome.core.retrieval.contract`, the contract (``BaseRetriever``, ``Retrieval``),
``MapReduceSearch`` and the toolkit every mode is written with;
:mod:`~rhizome.core.retrieval.evidence`, graph evidence for ranking passages: seeds, one walk,
chains of facts; :mod:`~rhizome.core.retrieval.filters`, metadata filters on the documents a
search may draw on; :mod:`~rhizome.core.retrieval.answer`, an answer with citations from
retrieved hits; :mod:`~rhizome.core.retrieval.params`. Import from the modules: this package
loads none of them.
"""
