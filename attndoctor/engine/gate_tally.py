"""The gate over results that come one at a time (a streamed report): the same checks as evaluate_gate, kept alone."""

from __future__ import annotations

from typing import Any, Sequence

from ..environment import Environment
from .results import ConfigResult
from .gate import GateCheck, GateResult, config_checks, present_frameworks

MEMO_LIMIT = 4096


class GateTally:
    """Adds each result's checks as it passes; configs that share their verdicts and selections share the work."""

    def __init__(self, environment: Environment, *, require: Sequence[str] = (),
                 require_any: Sequence[Sequence[str]] = (), fail_on: str | None = None, survey: bool = False,
                 keeps: bool = True) -> None:
        self.environment = environment
        self.keeps = keeps
        """False in a worker process: its checks travel to the parent's tally, which keeps them."""
        self.options: dict[str, Any] = {"require": require, "require_any": require_any, "fail_on": fail_on,
                                        "survey": survey}
        self.checks: list[GateCheck] = []
        self._memo: dict[tuple[int, ...], tuple[ConfigResult, list[GateCheck]]] = {}

    def add(self, result: ConfigResult) -> list[GateCheck]:
        """The result's checks (also kept for the final GateResult)."""
        key = (*map(id, result.all_verdicts), *map(id, result.selected))
        found = self._memo.get(key)
        if found is not None and _same(found[0], result):
            label = result.config.name or result.config.label()
            checks = [c._replace(config=label) for c in found[1]]
        else:
            if "present" not in self.options:  # the same for every result: the machine and the backends are
                self.options["present"] = present_frameworks(result, self.environment)
            checks = config_checks(result, **self.options)
            if len(self._memo) >= MEMO_LIMIT:
                self._memo.clear()
            self._memo[key] = (result, checks)
        if self.keeps:
            self.checks.extend(checks)
        return checks

    def keep(self, checks: Sequence[GateCheck]) -> None:
        """Checks made elsewhere (a worker's tally) for the final GateResult."""
        self.checks.extend(checks)

    def result(self) -> GateResult:
        return GateResult(passed=all(c.passed for c in self.checks), checks=tuple(self.checks))


def _same(a: ConfigResult, b: ConfigResult) -> bool:
    return all(x is y for x, y in zip(a.all_verdicts, b.all_verdicts)) and \
        all(x is y for x, y in zip(a.selected, b.selected))
