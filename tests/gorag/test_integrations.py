"""The classifier through LangChain, LlamaIndex and the `rhizome classify` command."""

from __future__ import annotations

import json

import pytest
from langchain_core.runnables import RunnableLambda
from llama_index.core.schema import MetadataMode, TextNode

from langchain_rhizome import RhizomeClassifier
from llama_index.retrievers.rhizome import RhizomeClassifierTransform
from rhizome.gorag import GORAGClassifier
from rhizome.rag.cli import main
from tests.gorag.conftest import QUERIES, ROUND1, ROUND2, split


@pytest.fixture
def clf() -> GORAGClassifier:
    c = GORAGClassifier(online=False)
    c.fit_round(*split(ROUND1))
    c.fit_round(*split(ROUND2))
    return c


def test_langchain_runnable_invoke_and_label_output(clf):
    runnable = RhizomeClassifier(classifier=clf)
    result = runnable.invoke(QUERIES[0][1])
    assert result["label"] == "cardiology" and "tree" in result and "candidates" in result
    json.dumps(result)
    labeller = RhizomeClassifier(classifier=clf, output="label")
    assert labeller.invoke({"text": QUERIES[1][1]}) == "astronomy"
    chain = RunnableLambda(lambda q: {"text": q}) | labeller
    assert chain.invoke(QUERIES[2][1]) == "cooking"


async def test_langchain_runnable_async_and_batch(clf):
    labeller = RhizomeClassifier(classifier=clf, output="label")
    texts = [t for _, t in QUERIES]
    assert await labeller.ainvoke(texts[0]) == "cardiology"
    assert labeller.batch(texts) == ["cardiology", "astronomy", "cooking"]
    assert await labeller.abatch(texts) == ["cardiology", "astronomy", "cooking"]
    out = labeller.batch([texts[0], {"wrong": 1}], return_exceptions=True)
    assert out[0] == "cardiology" and isinstance(out[1], ValueError)


def test_langchain_runnable_online_batch_keeps_order():
    a = GORAGClassifier()
    b = GORAGClassifier()
    for c in (a, b):
        c.fit_round(*split(ROUND1))
    texts = [t for _, t in QUERIES[:2]]
    labels = RhizomeClassifier(classifier=a, output="label").batch(texts)
    assert labels == [b.classify(t).label for t in texts]
    assert a.stats_summary() == b.stats_summary()


def test_langchain_runnable_rejects_bad_input(clf):
    with pytest.raises(ValueError):
        RhizomeClassifier(classifier=object())
    with pytest.raises(ValueError, match="text"):
        RhizomeClassifier(classifier=clf).invoke({"question": "x"})


def test_llama_index_transform_labels_nodes(clf):
    nodes = [TextNode(text=t) for _, t in QUERIES] + [TextNode(text="   ")]
    out = RhizomeClassifierTransform(classifier=clf)(nodes)
    assert [n.metadata.get("label") for n in out] == ["cardiology", "astronomy", "cooking", None]
    assert "cardiology" in out[0].metadata["label_candidates"]
    assert "label" not in out[0].get_content(metadata_mode=MetadataMode.EMBED)
    assert "cardiology" in out[0].get_content(metadata_mode=MetadataMode.LLM)


async def test_llama_index_transform_async(clf):
    transform = RhizomeClassifierTransform(classifier=clf, label_key="topic", candidates_key=None)
    out = await transform.acall([TextNode(text=QUERIES[2][1])])
    assert out[0].metadata == {"topic": "cooking"}
    with pytest.raises(ValueError):
        RhizomeClassifierTransform(classifier=object())


def write_tsv(path, rows):
    path.write_text("".join(f"{label}\t{text}\n" for label, text in rows), encoding="utf-8")
    return path


def test_cli_classify_offline(tmp_path, capsys):
    r1 = write_tsv(tmp_path / "r1.tsv", ROUND1)
    r2 = write_tsv(tmp_path / "r2.tsv", ROUND2)
    queries = write_tsv(tmp_path / "q.tsv", QUERIES)
    code = main(["classify", str(queries), "--train", str(r1), "--train", str(r2), "--offline",
                 "--no-online", "--save", str(tmp_path / "clf")])
    out, err = capsys.readouterr()
    assert code == 0
    assert [line.split("\t")[0] for line in out.splitlines()] == ["cardiology", "astronomy", "cooking"]
    assert "accuracy 1.0000 over 3" in err and "round 2" in err
    # reuse the saved classifier, unlabelled input, JSON output
    plain = tmp_path / "plain.txt"
    plain.write_text(QUERIES[1][1] + "\n\n", encoding="utf-8")
    code = main(["classify", str(plain), "--classifier", str(tmp_path / "clf"), "--offline", "--json", "-q"])
    out, _ = capsys.readouterr()
    assert code == 0
    record = json.loads(out)
    assert record["label"] == "astronomy" and "gold" not in record


def test_cli_classify_errors(tmp_path, capsys):
    queries = write_tsv(tmp_path / "q.tsv", QUERIES)
    assert main(["classify", str(queries), "--offline"]) == 2
    assert "--train" in capsys.readouterr().err
    assert main(["classify", str(tmp_path / "nope.tsv"), "--train", str(queries), "--offline"]) == 2
    assert "not a file" in capsys.readouterr().err
    bad = tmp_path / "bad.tsv"
    bad.write_text("no tab here\n", encoding="utf-8")
    assert main(["classify", str(queries), "--train", str(bad), "--offline"]) == 2
    assert "expected `label<TAB>text`" in capsys.readouterr().err
