"""Merging per-chunk extractions into one set of entities and relations."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from rhizome.core.extraction.schema import Extraction, key_of, relation_id
from rhizome.core.progress import Phase, phase
from rhizome.core.types import Entity, Relation

COOCCURRENCE = "cooccurrence"
"""``Relation.metadata["kind"]`` of relations that only say two entities appear together."""

DESCRIPTION_SEPARATOR = "\n"
"""How the distinct descriptions of a merged record are joined into ``description``."""


def merge_extractions(
    extractions: Iterable[Extraction],
    existing_entities: Mapping[str, Entity] | None = None,
    existing_relations: Mapping[str, Relation] | None = None,
    *,
    consume: bool = False,
) -> tuple[dict[str, Entity], dict[str, Relation]]:
    """Combine per-chunk extractions (optionally into an existing graph) into entities keyed
    by id and relations keyed by id. Inputs are not modified — except, with ``consume``, the
    extractions' entity and relation records, which then become (and are changed as) the
    merged records instead of being copied: for a caller that read the extractions only to
    merge them. The result is the same either way.

    Entities
        Records with the same id (the case-insensitive name key) are one entity. The display
        name is the first one seen (existing records first). The type is the most frequent
        non-empty type, counting one vote per record and, for an existing entity, one vote per
        chunk it already cites; ties go to the type seen first. ``descriptions`` collects every
        distinct description in first-seen order and ``description`` is them joined by a
        newline — unless no new description arrived, in which case an existing ``description``
        (possibly a summary written later) is kept. ``source_chunk_ids`` is the ordered union.
        ``metadata`` keeps the first value seen for each key.

    Relations
        Keyed by ``(source id, target id, predicate)`` with the predicate compared
        case-insensitively; undirected relations (co-occurrence, and extractor relations with no
        predicate, see :func:`~rhizome.core.extraction.schema.is_directed`) use the sorted
        endpoint pair. Weights are summed (GraphRAG sums the model's strengths), keywords,
        descriptions and chunk ids are unioned in first-seen order. An endpoint with no entity
        record gets a placeholder entity (its id as name, empty type).

    Co-occurrence weights
        For relations whose ``metadata["kind"]`` is ``"cooccurrence"`` the PMI-style weights
        of :func:`cooccurrence_pmi` are recomputed over the merged graph and stored in
        ``metadata["pmi"]`` and ``metadata["npmi"]``; ``weight`` stays the raw count.

    Idempotence
        A record coming from a chunk that an existing record already cites is skipped, so
        merging the same extractions into their own result changes nothing (re-inserting a
        chunk does not double its weights).

    Order
        Existing records first, in their given order, then new ids in the order they are first
        seen in ``extractions``: the same input always gives the same output.
    """
    records = list(extractions)
    with phase("merging extractions", len(records), "chunk") as step:
        return _merge([records], existing_entities, existing_relations, consume, step)


def merge_extraction_batches(
    batches: Iterable[Sequence[Extraction]],
    total: int,
    existing_entities: Mapping[str, Entity] | None = None,
    existing_relations: Mapping[str, Relation] | None = None,
    *,
    consume: bool = False,
) -> tuple[dict[str, Entity], dict[str, Relation]]:
    """:func:`merge_extractions` of the extractions of ``batches`` taken in order (``total`` of
    them, for progress), with one batch held at a time: a caller that reads its extractions
    batch by batch never holds them all, only what they merge into. With ``consume``, a record
    object must not appear in two batches (batches decoded one at a time never share one)."""
    with phase("merging extractions", total, "chunk") as step:
        return _merge(batches, existing_entities, existing_relations, consume, step)


def merged_ids(extractions: Iterable[Extraction]) -> tuple[list[str], list[str]]:
    """The ids of the entities (relation endpoints included) and relations that
    :func:`merge_extractions` of ``extractions`` gives, in its order, without merging: what
    an incremental update reads of the stored graph before merging into it."""
    entity_ids: dict[str, None] = {}
    relation_ids: dict[str, None] = {}
    for extraction in extractions:
        entity_ids.update(dict.fromkeys(e.id for e in extraction.entities))
        for relation in extraction.relations:
            entity_ids.update(dict.fromkeys((relation.source, relation.target)))
            relation_ids.setdefault(relation_id(key_of(relation)))
    return list(entity_ids), list(relation_ids)


def _merge(
    batches: Iterable[Sequence[Extraction]],
    existing_entities: Mapping[str, Entity] | None,
    existing_relations: Mapping[str, Relation] | None,
    consume: bool,
    step: Phase,
) -> tuple[dict[str, Entity], dict[str, Relation]]:
    times: Counter[int] = Counter()  # consumed, how often each record object is in the batch

    def take(record: R) -> R:
        # consumed, a record object found twice is copied still (it would be folded into itself)
        return record if times[id(record)] == 1 else _copy(record)

    entities: dict[str, Entity] = {}
    votes: dict[str, Counter[str]] = {}
    first_type: dict[str, list[str]] = {}
    known_chunks: dict[str, set[str]] = {}
    changed: set[str] = set()
    seen: Seen = {}  # the values of each list grown below, so a fold costs what it adds

    for eid, entity in (existing_entities or {}).items():
        copy = _copy(entity)
        if not copy.descriptions and copy.description:
            copy.descriptions = [copy.description]
        entities[eid] = copy
        known_chunks[eid] = set(copy.source_chunk_ids)
        votes[eid] = Counter()
        first_type[eid] = []
        if copy.type:
            votes[eid][copy.type] += max(1, len(copy.source_chunk_ids))
            first_type[eid].append(copy.type)

    relations: dict[tuple[str, str, str], Relation] = {}
    rel_known_chunks: dict[tuple[str, str, str], set[str]] = {}
    rel_changed: set[tuple[str, str, str]] = set()
    for rid, relation in (existing_relations or {}).items():
        kept = _copy(relation)
        kept.id = rid
        if not kept.descriptions and kept.description:
            kept.descriptions = [kept.description]
        key = key_of(kept)
        if key in relations:  # two existing records with one key: fold them together
            _fold_relation(relations[key], kept, seen)
            rel_changed.add(key)
            continue
        relations[key] = kept
        rel_known_chunks[key] = set(kept.source_chunk_ids)

    def add_entity(entity: Entity) -> None:
        eid = entity.id
        held = entities.get(eid)
        if held is None:
            copy = take(entity)
            if not copy.descriptions and copy.description:
                copy.descriptions = [copy.description]
            copy.source_chunk_ids = list(dict.fromkeys(copy.source_chunk_ids))
            entities[eid] = copy
            votes[eid] = Counter()
            first_type[eid] = []
            changed.add(eid)
        else:
            if (
                set(entity.source_chunk_ids) <= known_chunks.get(eid, set())
                and entity.source_chunk_ids
            ):
                return
            incoming = entity.descriptions or ([entity.description] if entity.description else [])
            before = len(held.descriptions)
            union_into(held.descriptions, incoming, seen)
            if len(held.descriptions) != before:
                changed.add(eid)
            union_into(held.source_chunk_ids, entity.source_chunk_ids, seen)
            for k, v in entity.metadata.items():
                held.metadata.setdefault(k, v)
        if entity.type:
            votes[eid][entity.type] += 1
            if entity.type not in first_type[eid]:
                first_type[eid].append(entity.type)

    def add_extraction(extraction: Extraction) -> None:
        for entity in extraction.entities:
            add_entity(entity)
        for relation in extraction.relations:
            for endpoint in (relation.source, relation.target):
                if endpoint not in entities:
                    add_entity(
                        Entity(
                            id=endpoint,
                            name=endpoint,
                            source_chunk_ids=list(relation.source_chunk_ids),
                        )
                    )
            key = key_of(relation)
            held = relations.get(key)
            if held is None:
                copy = take(relation)
                copy.source, copy.target = key[0], key[1]
                copy.id = relation_id(key)
                if not copy.descriptions and copy.description:
                    copy.descriptions = [copy.description]
                copy.source_chunk_ids = list(dict.fromkeys(copy.source_chunk_ids))
                relations[key] = copy
                rel_changed.add(key)
                continue
            known = rel_known_chunks.get(key, set())
            if relation.source_chunk_ids and set(relation.source_chunk_ids) <= known:
                continue
            if _fold_relation(held, relation, seen):
                rel_changed.add(key)

    for batch in batches:
        if consume:
            times = Counter(id(r) for x in batch for r in (*x.entities, *x.relations))
        for extraction in batch:
            add_extraction(extraction)
        step.advance(len(batch))
    return _settled(entities, relations, votes, first_type, changed, rel_changed)


def _settled(
    entities: dict[str, Entity],
    relations: dict[tuple[str, str, str], Relation],
    votes: Mapping[str, Counter[str]],
    first_type: Mapping[str, list[str]],
    changed: set[str],
    rel_changed: set[tuple[str, str, str]],
) -> tuple[dict[str, Entity], dict[str, Relation]]:
    """The merged records with their types and joined descriptions settled and the
    co-occurrence weights computed, relations keyed by id."""
    # settle types and joined descriptions
    for eid, entity in entities.items():
        counter = votes.get(eid)
        if counter:
            order = first_type[eid]
            entity.type = max(order, key=lambda t: (counter[t], -order.index(t)))
        if eid in changed or not entity.description:
            entity.description = DESCRIPTION_SEPARATOR.join(entity.descriptions)
    for key, relation in relations.items():
        if key in rel_changed or not relation.description:
            relation.description = DESCRIPTION_SEPARATOR.join(relation.descriptions)

    merged_relations = {r.id: r for r in relations.values()}
    for rid, (pmi, npmi) in cooccurrence_pmi(entities, merged_relations).items():
        merged_relations[rid].metadata["pmi"] = pmi
        merged_relations[rid].metadata["npmi"] = npmi
    return entities, merged_relations


R = TypeVar("R", Entity, Relation)


def _copy(record: R) -> R:
    """A copy whose lists and metadata can be changed without touching the input (cheaper
    than a deep copy; nested metadata values are shared)."""
    update: dict[str, object] = {
        "descriptions": list(record.descriptions),
        "source_chunk_ids": list(record.source_chunk_ids),
        "metadata": dict(record.metadata),
    }
    if isinstance(record, Relation):
        update["keywords"] = list(record.keywords)
    return record.model_copy(update=update)


Seen = dict[int, tuple[list[str], set[str]]]
"""Per grown list (by identity): the list itself, held so its id cannot be reused while the
entry lives, and the set of its values' keys."""


def known_values(into: list[str], seen: Seen, key: Callable[[str], str] = str) -> set[str]:
    """The set of ``key`` of the values in ``into``, kept in ``seen`` while ``into`` only grows
    through these helpers: a popular entity folded in m times costs O(m), not O(m²)."""
    entry = seen.get(id(into))
    if entry is None or entry[0] is not into:
        entry = seen[id(into)] = (into, {key(v) for v in into})
    return entry[1]


def union_into(into: list[str], values: Iterable[str], seen: Seen) -> None:
    """Append to ``into`` the non-empty ``values`` it does not hold yet, in order."""
    known = known_values(into, seen)
    for value in values:
        if value and value not in known:
            into.append(value)
            known.add(value)


def _fold_relation(held: Relation, relation: Relation, seen: Seen) -> bool:
    """Add ``relation`` into ``held``; returns whether the descriptions changed."""
    held.weight += relation.weight
    incoming = relation.descriptions or ([relation.description] if relation.description else [])
    before = len(held.descriptions)
    union_into(held.descriptions, incoming, seen)
    keywords = known_values(held.keywords, seen, str.casefold)
    for word in relation.keywords:
        if word.casefold() not in keywords:
            held.keywords.append(word)
            keywords.add(word.casefold())
    union_into(held.source_chunk_ids, relation.source_chunk_ids, seen)
    if not held.predicate and relation.predicate:
        held.predicate = relation.predicate
    for k, v in relation.metadata.items():
        held.metadata.setdefault(k, v)
    return len(held.descriptions) != before


def cooccurrence_pmi(
    entities: Mapping[str, Entity], relations: Mapping[str, Relation]
) -> dict[str, tuple[float, float]]:
    """PMI-style weights of the co-occurrence relations (``metadata["kind"] == "cooccurrence"``),
    as ``{relation id: (pmi, npmi)}``.

    Let ``f(x)`` be the number of chunks citing entity ``x`` (its ``source_chunk_ids``), ``F``
    the sum of ``f`` over all entities, ``N`` the number of distinct chunks cited by any entity,
    ``w(x, y)`` the relation's co-occurrence count (``weight``) and ``W`` the sum of ``w`` over
    all co-occurrence relations.

    ``pmi`` is the frequency-weighted variant GraphRAG's fast method puts on its noun graph
    (multiplying by the joint probability damps the inflated PMI of pairs seen once)::

        pmi(x, y) = p(x, y) * log2(p(x, y) / (p(x) * p(y)))   with p(x) = f(x) / F, p(x, y) = w / W

    ``npmi`` is the classic normalised PMI over chunks, in [-1, 1] (1: the two always appear
    together; 0: independent; negative: they avoid each other), handy as a threshold::

        npmi(x, y) = log2(q(x, y) / (q(x) * q(y))) / -log2(q(x, y))   with q(x) = f(x) / N,
                     q(x, y) = min(w, f(x), f(y)) / N                  (1.0 when q(x, y) = 1)

    (With a sentence window ``w`` counts sentences, hence the cap at the entity frequencies.)
    :func:`merge_extractions` recomputes both, so they always describe the whole merged graph.
    """
    pairs = {
        rid: (r.source, r.target, r.weight)
        for rid, r in relations.items()
        if r.metadata.get("kind") == COOCCURRENCE
    }
    if not pairs:
        return {}
    freq = {eid: len(e.source_chunk_ids) for eid, e in entities.items()}
    n_chunks = len({c for e in entities.values() for c in e.source_chunk_ids})
    return pmi_values(freq, n_chunks, pairs)


def pmi_values(
    frequency: Mapping[str, int],
    n_chunks: int,
    pairs: Mapping[str, tuple[str, str, float]],
) -> dict[str, tuple[float, float]]:
    """The formulas of :func:`cooccurrence_pmi` on plain numbers: ``frequency`` maps entity ids
    to the chunks citing them, ``pairs`` maps relation ids to ``(source, target, count)``."""
    freq = {k: max(1, v) for k, v in frequency.items()}
    for source, target, _ in pairs.values():
        freq.setdefault(source, 1)
        freq.setdefault(target, 1)
    total_f = float(sum(freq.values()))
    total_w = float(sum(max(w, 0.0) for _, _, w in pairs.values()))
    n = float(max(1, n_chunks))
    out: dict[str, tuple[float, float]] = {}
    for rid, (source, target, weight) in pairs.items():
        if total_w <= 0 or weight <= 0:
            out[rid] = (0.0, 0.0)
            continue
        f_x, f_y = freq[source], freq[target]
        p_xy = weight / total_w
        pmi = p_xy * math.log2(p_xy / ((f_x / total_f) * (f_y / total_f)))
        q_xy = min(weight, f_x, f_y) / n
        npmi = 1.0
        if q_xy < 1.0:
            npmi = math.log2(q_xy / ((f_x / n) * (f_y / n))) / -math.log2(q_xy)
        out[rid] = (pmi, max(-1.0, min(1.0, npmi)))
    return out


__all__ = [
    "COOCCURRENCE",
    "DESCRIPTION_SEPARATOR",
    "Seen",
    "known_values",
    "union_into",
    "cooccurrence_pmi",
    "merge_extraction_batches",
    "merge_extractions",
    "merged_ids",
    "pmi_values",
]
