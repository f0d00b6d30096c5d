"""Inserts as background jobs: ``POST /{ws}/documents`` answers at once with a job, and
``GET /jobs/{id}`` tells how it goes (queued, running with the phase and its progress, done
with the insert's report, or failed with the reason).

A workspace's writes run one at a time in the order they came (its ``writer`` lock), each in a
worker thread through the index's own insert, which takes the kernel's write lock: a search
meanwhile sees the index as the last committed batch left it.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from rhizome.server.errors import DocumentNotFoundError, JobNotFoundError, public_message
from rhizome.server.offload import in_thread
from rhizome.server.schemas import DeleteResponse, JobView, Progress
from rhizome.server.workspaces import Workspace

KEPT = 1000
"""Finished jobs remembered (the oldest are forgotten first)."""


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Job:
    """One insert: its state, updated as it runs."""

    def __init__(self, workspace: str, documents: int) -> None:
        self.view = JobView(id=uuid.uuid4().hex, workspace=workspace, status="queued", documents=documents,
                            progress=Progress(), created=now())

    def advance(self, phase: str, done: int, total: int) -> None:
        self.view.progress = Progress(phase=phase, done=done, total=total)


class Jobs:
    """The server's jobs by id, and the tasks running them."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()
        self.redact = redact

    def get(self, job_id: str) -> JobView:
        job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFoundError(f"no job {job_id!r} on this server (it keeps the latest {KEPT} jobs)")
        return job.view

    def submit_insert(self, workspace: Workspace, documents: list[Any]) -> JobView:
        """Queue an insert of ``documents`` (validated already) into ``workspace``."""
        return self._queue(workspace, documents)[0].view

    async def insert(self, workspace: Workspace, documents: list[Any]) -> JobView:
        """Insert ``documents`` as :meth:`submit_insert` does, and wait until the job is done
        or failed (a cancelled caller leaves the job running)."""
        job, task = self._queue(workspace, documents)
        await asyncio.shield(task)
        return job.view

    def _queue(self, workspace: Workspace, documents: list[Any]) -> tuple[Job, asyncio.Task[None]]:
        job = Job(workspace.name, len(documents))
        self._jobs[job.view.id] = job
        while len(self._jobs) > KEPT:
            oldest = next(iter(self._jobs))
            if self._jobs[oldest].view.status in ("queued", "running"):
                break
            del self._jobs[oldest]
        task = asyncio.get_running_loop().create_task(self._run(job, workspace, documents))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return job, task

    async def _run(self, job: Job, workspace: Workspace, documents: list[Any]) -> None:
        async with workspace.writer:
            job.view.status, job.view.started = "running", now()
            workspace.progress_sink = job.advance
            try:
                report = await in_thread(lambda: workspace.index.ainsert(documents))
            except Exception as exc:
                _, message = public_message(exc, self.redact)
                job.view.status, job.view.error = "failed", message
            else:
                job.view.result = report.model_dump()
                job.view.status = "done"
            finally:
                workspace.writes += 1
                workspace.progress_sink = None
                job.view.finished = now()

    async def wait(self) -> None:
        """Let the running and queued jobs finish (the server is stopping)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


async def delete(workspace: Workspace, document_id: str) -> DeleteResponse:
    """Delete a document and whatever only it supported (the method's own delete), after the
    workspace's queued writes; a document the workspace does not hold is a 404."""
    async with workspace.writer:
        try:
            report = await in_thread(lambda: workspace.index.adelete([document_id]))
        finally:
            workspace.writes += 1
    if document_id in report.missing:
        raise DocumentNotFoundError(f"workspace {workspace.name!r} holds no document {document_id!r}; GET /{workspace.name}/documents lists them")
    return DeleteResponse(workspace=workspace.name, deleted=report.deleted, chunks=report.chunks, unfinished=report.unfinished)
