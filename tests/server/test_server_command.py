"""`rhizome serve` on the command line: its flags, what it prints, and how it runs uvicorn."""

from __future__ import annotations

import pytest
from server_support import API_KEY


def test_serve_is_a_rhizome_command(capsys):
    from rhizome.rag.cli import main

    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    shown = capsys.readouterr().out
    for flag in ("--root", "--host", "--port", "--api-key", "--cors", "--max-body", "--read-only", "--offline"):
        assert flag in shown


def test_serve_opens_the_workspaces_and_runs_uvicorn(built, capsys, monkeypatch):
    import uvicorn

    from rhizome.rag.cli import main

    ran = {}

    def run(app, **options):
        ran.update(options, app=app)

    monkeypatch.setattr(uvicorn, "run", run)
    monkeypatch.setenv("RHIZOME_API_KEY", API_KEY)
    assert main(["serve", f"light={built('lightrag')}", "--port", "0", "--host", "0.0.0.0", "--offline", "--no-cache"]) == 0
    assert (ran["host"], ran["port"]) == ("0.0.0.0", 0)
    assert ran["timeout_keep_alive"] > 5  # longer than httpx's pools keep an idle connection (5 s)
    out = capsys.readouterr().out
    assert "workspace light: lightrag, models rhizome/light, rhizome/light:hybrid" in out
    assert "writes: with the API key" in out
    ran["app"].state.server.workspaces.close()


def test_serve_without_a_key_says_writes_are_refused(built, capsys, monkeypatch):
    import uvicorn

    from rhizome.rag.cli import main

    monkeypatch.setattr(uvicorn, "run", lambda app, **options: app.state.server.workspaces.close())
    assert main(["serve", str(built("naive")), "--offline", "--no-cache"]) == 0
    assert "refused until an API key is set" in capsys.readouterr().out


def test_serve_help_loads_no_web_stack_and_the_server_needs_no_umbrella():
    import json
    import subprocess
    import sys

    def imported_by(code: str) -> list[str]:
        script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        return json.loads(result.stdout.strip().splitlines()[-1])

    modules = imported_by("from rhizome.rag.cli import main\ntry:\n    main(['serve', '--help'])\nexcept SystemExit:\n    pass")
    assert "rhizome.server.command" in modules
    assert not [m for m in modules if m.split(".")[0] in ("fastapi", "uvicorn", "starlette", "numpy", "httpx")]
    modules = imported_by("import rhizome.server.app, rhizome.server.command")
    assert not [m for m in modules if m == "rhizome.rag" or m.startswith("rhizome.rag.")]
