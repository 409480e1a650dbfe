"""Memoisation in one place: a bounded dict, and the set of memos an evaluator keeps across configs."""

from typing import Any, Hashable

SHARED_LIMIT = 8192
"""Shared verdicts, findings and selections kept per backend in a batch; beyond it the oldest are computed again."""


class Memo(dict):  # type: ignore[type-arg]
    """A dict bounded at `limit` entries: when full it empties (or, `fifo`, drops its oldest entry) before a put.

    Values keyed by an object's id are stored with the object (`put_owned`), and `owned` returns them only while the
    key's id still names that object: an id is reused once its object is freed.
    """

    __slots__ = ("limit", "fifo")

    def __init__(self, limit: int, *, fifo: bool = False) -> None:
        super().__init__()
        self.limit, self.fifo = limit, fifo

    def put(self, key: Hashable, value: Any) -> Any:
        if len(self) >= self.limit:
            if self.fifo:
                del self[next(iter(self))]
            else:
                self.clear()
        self[key] = value
        return value

    def owned(self, owner: object, key: Hashable) -> tuple[object, Any] | None:
        """(owner, value) stored for `owner` under `key`, or None."""
        found = self.get(key)
        return found if found is not None and found[0] is owner else None

    def put_owned(self, owner: object, key: Hashable, value: Any) -> Any:
        self.put(key, (owner, value))
        return value


class Caches:
    """Everything an Evaluator remembers across configs, each memo with its key and its bound."""

    def __init__(self) -> None:
        self.live = Memo(256)
        """Rules with a machine's facts filled in, by the machine's facts (see Evaluator._live_rules)."""
        self.live_env: tuple[object, Any] | None = None
        """The last machine object and its live rules: most calls ask for the same machine again."""
        self.live_by_backend = Memo(SHARED_LIMIT)
        """A backend's rules that can apply on a machine, by (backend, id of the live rules)."""
        self.open = Memo(SHARED_LIMIT)
        """A rule's open condition and the facts it still needs, by (rule, the facts it reads)."""
        self.blocking: dict[str, list[Any]] = {}
        """A backend's blocking rules (one entry per backend: unbounded)."""
        self.findings = Memo(SHARED_LIMIT)
        """One Finding object per distinct finding, shared by every config it applies to."""
        self.builtin = Memo(SHARED_LIMIT)
        """A machine's own findings for a backend, by (backend, id of the machine)."""
        self.no_release = Memo(SHARED_LIMIT)
        """where.no_release_runs per backend, machine and set of open findings."""
        self.shared: dict[str, Any] = {}
        """Per backend, what its verdicts on the batch's machine are shared by (a _Share; one per backend)."""
        self.shared_env: object | None = None
        """The machine `shared` and `selections` hold for: another machine empties them."""
        self.selections = Memo(SHARED_LIMIT)
        """Each framework's selection, by the verdicts its walk reads and the facts its orders read."""
        self.selection_names: dict[str, Any] = {}
        """Per framework, the facts its orders read and the backends its walk visits (one entry per framework)."""

    def forget_machine(self) -> None:
        """Empty what holds for one machine only: the shared verdicts and the selections."""
        self.shared.clear()
        self.selections.clear()
