"""Profiling and deduplication: per-chunk mentions folded into entity and relation profiles.

An entity's profile is a pure function of the ordered list of its mentions (in the order of its
source chunks, then of the mentions inside a chunk); so is a relation's. Adding a chunk folds
its mentions onto the stored profile; removing a chunk rebuilds the profile from the remaining
chunks' stored mentions. Both give the record that folding the remaining mentions from scratch
gives, which is why an insert followed by a delete returns exactly the records held before.

The fold rules every entity method on :class:`~rhizome.core.graph.store.EntityGraphStore`
shares (LightRAG's deduplication, paper §3.1 and its reference code); what a method chooses is
its :class:`FoldPolicy`:

- entity: display name = the first mention's; type = majority vote over mentions with a type
  (ties: the type seen first); descriptions = distinct fragments in first-seen order; sources =
  chunk ids in the order they arrived;
- relation (keyed by :attr:`FoldPolicy.relation_key`, by default its pair of entity ids): weight = sum of strengths; keywords =
  union (case-insensitive) in first-seen order; descriptions and sources as for entities.

The profile *value* (``description``) is then the fragments joined, or a summary once they
exceed the summary budget (see :class:`~rhizome.core.graph.summarize.DescriptionSummarizer`). As in
the reference code, a summary then stands for the fragments it covers: later fragments are
joined after it, and the summary is written again (from the old summary and the new fragments)
only when those grow past the threshold again, at most once per insert call. So the value
depends on how the mentions arrived in insert calls; a delete rebuilds the profiles it touches
from their remaining fragments at once, as one insert call of the remaining documents would.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from rhizome.core.extraction.schema import relation_id, relation_key
from rhizome.core.graph.lists import counts, in_rows
from rhizome.core.graph.mentions import EntityMention, RelationMention
from rhizome.core.types import Entity, Relation

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


def pair_key(a: str, b: str, predicate: str = "") -> tuple[str, str, str]:
    """The undirected key of a relation between two entity ids, whatever its predicate: one
    relation per pair (LightRAG's)."""
    return relation_key(a, b, "", directed=False)


def triple_key(a: str, b: str, predicate: str = "") -> tuple[str, str, str]:
    """The key of a triple: directed and told apart by its predicate when it has one, else the
    undirected pair (a co-occurrence, or a relation the extractor gave no predicate; the
    kernel's :func:`~rhizome.core.extraction.schema.key_of`)."""
    return relation_key(a, b, predicate, directed=bool(predicate))


def _first_fragment_held(record: Entity | Relation) -> bool:
    """Whether a profile holds a fragment already (in its record, or in its rows)."""
    return bool(record.descriptions) or (in_rows(record) and counts(record)[1] > 0)


def new_entity(entity_id: str, name: str) -> Entity:
    return Entity(id=entity_id, name=name, metadata={"type_votes": []})


def fold_entity(entity: Entity, mention: EntityMention, chunk_id: str, seen: Seen | None = None, policy: FoldPolicy | None = None) -> None:
    """Add one mention to an entity profile in place. ``seen`` (one dict for every fold of a
    batch) keeps the profile's chunk ids and fragments as sets between folds: a long profile
    is read once a batch, not once a mention."""
    seen = {} if seen is None else seen
    union_into(entity.source_chunk_ids, [chunk_id], seen)
    if (policy or DEFAULT_POLICY).descriptions == "union" or not _first_fragment_held(entity):
        union_into(entity.descriptions, [mention.description.strip()], seen)
    if mention.type:
        votes: list[list] = entity.metadata.setdefault("type_votes", [])
        for vote in votes:
            if vote[0] == mention.type:
                vote[1] += 1
                break
        else:
            votes.append([mention.type, 1])
        best = max(range(len(votes)), key=lambda i: (votes[i][1], -i))
        entity.type = votes[best][0]


def new_relation(relation_key_: tuple[str, str, str]) -> Relation:
    """An empty relation profile; directed when its key holds a predicate (the first mention
    folded in gives the predicate as written)."""
    return Relation(
        id=relation_id(relation_key_),
        source=relation_key_[0],
        target=relation_key_[1],
        weight=0.0,
        metadata={"directed": bool(relation_key_[2])},
    )


def fold_relation(relation: Relation, mention: RelationMention, chunk_id: str, seen: Seen | None = None, policy: FoldPolicy | None = None) -> None:
    """Add one mention to a relation profile in place (``seen``: as for :func:`fold_entity`)."""
    seen = {} if seen is None else seen
    policy = policy or DEFAULT_POLICY
    new_chunk = chunk_id not in known_values(relation.source_chunk_ids, seen)
    union_into(relation.source_chunk_ids, [chunk_id], seen)
    if policy.weight == "strength":
        relation.weight += float(mention.strength)
    elif new_chunk:
        relation.weight += 1.0
    if relation.metadata.get("directed") and not relation.predicate:
        relation.predicate = mention.predicate
    if policy.descriptions == "union" or not _first_fragment_held(relation):
        union_into(relation.descriptions, [mention.description.strip()], seen)
    have = known_values(relation.keywords, seen, str.casefold)
    for word in mention.keywords:
        if word and word.casefold() not in have:
            relation.keywords.append(word)
            have.add(word.casefold())


def copy_entity(entity: Entity) -> Entity:
    votes = [list(v) for v in entity.metadata.get("type_votes", [])]
    return entity.model_copy(
        update={
            "descriptions": list(entity.descriptions),
            "source_chunk_ids": list(entity.source_chunk_ids),
            "metadata": {**entity.metadata, "type_votes": votes},
        }
    )


def copy_relation(relation: Relation) -> Relation:
    return relation.model_copy(
        update={
            "descriptions": list(relation.descriptions),
            "keywords": list(relation.keywords),
            "source_chunk_ids": list(relation.source_chunk_ids),
            "metadata": dict(relation.metadata),
        }
    )


SUMMARISED = "summarised"
"""Profile metadata: how many leading ``descriptions`` the stored summary covers."""
SUMMARY = "summary"
"""Profile metadata: the last summary written (of the covered fragments)."""


def covered(record: Entity | Relation) -> int:
    """How many leading fragments the profile's last summary covers (0: never summarised)."""
    return int(record.metadata.get(SUMMARISED, 0))


def pieces(record: Entity | Relation, since: list[str]) -> list[str]:
    """What a profile's value is made from: its last summary (when it has one) followed by
    ``since``, the fragments added after it (every fragment when it was never summarised)."""
    head = [record.metadata.get(SUMMARY, "")] if covered(record) else []
    return [*head, *since]


def set_summary(record: Entity | Relation, text: str, fragments: int) -> None:
    """Make ``text`` the profile's value, covering the ``fragments`` it holds now."""
    record.description = text
    record.metadata[SUMMARY] = text
    record.metadata[SUMMARISED] = fragments


def skip_stored(seen: Seen, record: Entity | Relation, sources: set[str], fragments: set[str]) -> None:
    """Make the next folds into ``record`` — a stored profile whose lists stay in their rows, so
    that its ``source_chunk_ids`` and ``descriptions`` collect only what the folds add — skip
    the chunk ids and fragments its rows hold already (``sources``, ``fragments``: those of
    the values about to be folded that are stored; see :mod:`rhizome.core.graph.lists`)."""
    seen[id(record.source_chunk_ids)] = (record.source_chunk_ids, {*sources, *record.source_chunk_ids})
    seen[id(record.descriptions)] = (record.descriptions, {*fragments, *record.descriptions})


def entity_text(entity: Entity) -> str:
    """What the entity vector embeds: its key (the name) and its value (the description)."""
    return f"{entity.name}\n{entity.description}".strip()


def relation_text(relation: Relation, source_name: str, target_name: str) -> str:
    """What the relation vector embeds: its theme keywords (its keys), both names and its value."""
    keywords = ", ".join(relation.keywords)
    return f"{keywords}\t{source_name}\t{target_name}\n{relation.description}".strip()


@dataclass(frozen=True)
class FoldPolicy:
    """The choices a method makes about its profiles, beside the fold rules every method shares
    (the type vote, the union of sources, the first name).

    ``relation_key``
        A relation's key from its two entity ids and its predicate: :func:`pair_key` (the
        default: one undirected relation per pair, as LightRAG keeps them) or :func:`triple_key`
        (a triple per predicate, as HippoRAG's facts).
    ``weight``
        ``"strength"``: the mentions' strengths summed (GraphRAG, LightRAG); ``"passages"``: the
        number of chunks stating the relation (HippoRAG's fact edges).
    ``descriptions``
        ``"union"``: every distinct fragment kept, the value their join or, past the summary
        budget, their summary; ``"first"``: the first fragment is the value, never summarised
        (HippoRAG's fact text).
    ``entity_text`` / ``relation_text``
        What the entity and relation vectors embed (the relation's with the display names of
        its endpoints); ``entity_text=None``: no entity vectors (the names are embedded anyway).
    """

    relation_key: Callable[[str, str, str], tuple[str, str, str]] = pair_key
    weight: Literal["strength", "passages"] = "strength"
    descriptions: Literal["union", "first"] = "union"
    entity_text: Callable[[Entity], str] | None = entity_text
    relation_text: Callable[[Relation, str, str], str] = relation_text

    def relation_id(self, source_id: str, target_id: str, predicate: str = "") -> str:
        return _relation_id(self.relation_key, source_id, target_id, predicate)


@functools.lru_cache(maxsize=1 << 18)
def _relation_id(key: Callable[[str, str, str], tuple[str, str, str]], source_id: str, target_id: str, predicate: str) -> str:
    """The id of a relation mention under a key function (kept: a plan asks for it several
    times per mention)."""
    return relation_id(key(source_id, target_id, predicate))


DEFAULT_POLICY = FoldPolicy()


__all__ = [
    "FoldPolicy",
    "Seen",
    "known_values",
    "union_into",
    "copy_entity",
    "copy_relation",
    "covered",
    "entity_text",
    "fold_entity",
    "fold_relation",
    "new_entity",
    "new_relation",
    "pair_key",
    "triple_key",
    "pieces",
    "set_summary",
    "skip_stored",
    "relation_text",
]
