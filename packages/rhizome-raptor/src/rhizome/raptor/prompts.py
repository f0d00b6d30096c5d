"""The one prompt RAPTOR needs: a summary of a cluster of passages (or of lower summaries).
Our own wording; the reference asks a chat model to summarise "including as many key details as
possible", which is the aim here too, in JSON so the answer is validated like every other."""

from __future__ import annotations

from pydantic import BaseModel, Field

SUMMARY_SYSTEM = (
    "You write dense summaries for a search index. A summary stands in for the passages it was "
    "written from, so it keeps their specific content: names, dates, numbers, places, and who "
    "did what. It states only what the passages say."
)


class ClusterSummary(BaseModel):
    summary: str = Field(description="the summary, as plain prose")


def summary_prompt(passages: str, max_tokens: int) -> str:
    return (
        f"Passages:\n{passages}\n\n"
        f"Summarise the passages above in at most about {max_tokens} tokens. Cover what they have in "
        "common and the key details of each; do not mention the passages themselves. Reply as JSON."
    )


__all__ = ["SUMMARY_SYSTEM", "ClusterSummary", "summary_prompt"]
