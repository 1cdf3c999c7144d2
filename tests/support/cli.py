"""The CLI run in process: ``Cli`` calls ``mood-poller`` through its real entry point
(``main``) and hands back what it printed and how it exited."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from click.testing import CliRunner


@dataclass
class Result:
    code: int
    out: str
    err: str


class Cli:
    """Runs ``mood-poller`` in-process through the real entry point (``main``)."""

    def __init__(self, db_url: str | None = None, config: str | None = None):
        self.db_url = db_url
        self.config = config

    def __call__(self, *args: str, input: str | bytes | None = None, ok: bool = True) -> Result:
        from poller.cli import main

        argv = []
        if self.db_url:
            argv += ["--db", self.db_url]
        if self.config:
            argv += ["--config", self.config]
        argv += [str(a) for a in args]
        runner = CliRunner()
        with runner.isolation(input=input) as (out, err, _):
            try:
                main(argv)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        result = Result(code, out.getvalue().decode(), err.getvalue().decode())
        if ok and code != 0:
            raise AssertionError(f"mood-poller {shlex.join(argv)} exited {code}: {result.err}")
        return result

    def fails(self, *args: str, input: str | bytes | None = None) -> Result:
        result = self(*args, input=input, ok=False)
        assert result.code != 0, f"expected failure, got: {result.out}"
        assert "Traceback" not in result.err
        lines = [line for line in result.err.strip().splitlines() if line.strip()]
        assert len(lines) >= 1
        return result
