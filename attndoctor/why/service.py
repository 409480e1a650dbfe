"""`why` as a service: read the text, merge its facts with the machine's, run the engine, rank the explanations."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

from ..engine.results import DERIVED_FROM
from ..errors import UsageError
from .catalogue import CONFIG_TARGETS, ENV_TARGETS
from .candidate import Candidate
from .matcher import CAUSE_AT, rank
from .reader import Reading, read_text

FLAGS = {"sm": "--gpu", "arch": "--gpu", "gpu": "--gpu", "seqlen_q": "--seqlen-q", "seqlen_kv": "--seqlen-kv",
         "window_left": "--window", "window_right": "--window", "qkv_format": "--layout", "layout": "--layout",
         "train": "--train/--infer", "flash_attn_3": "--flash-attn-3", "flash_attn_4": "--flash-attn-4",
         "cutlass_dsl": "--cutlass-dsl", "cudnn_frontend": "--cudnn-frontend", "flash_attn": "--flash-attn"}
"""A missing fact -> the flag that gives it ("give --cudnn")."""
CLOSE = 1.5
"""Candidates within this many points of the best one leave the answer ambiguous."""


class WhyAnswer(NamedTuple):
    """Everything `why` found: what the text says, the config and machine it describes, and the ranked causes."""

    reading: Reading
    config: Any
    environment: Any
    result: Any
    candidates: tuple[Candidate, ...]
    settle: tuple[str, ...]
    dropped: tuple[str, ...]
    te: Mapping[str, Any] | None
    rule_count: int

    @property
    def cause(self) -> Candidate | None:
        """The likely cause, when the best candidate explains the text well enough."""
        return self.candidates[0] if self.candidates and self.candidates[0].score >= CAUSE_AT else None

    @property
    def ambiguous(self) -> bool:
        """The best candidates are different kinds of problem (a head dim, a broken install...), or known bugs of
        different backends, and the text cannot tell which; refusals of one kind on several backends (flash-attn 2 and
        3 refusing sm75) are one answer."""
        cause = self.cause
        if cause is None:
            return False
        known = set(cause.topics) - {"other"}
        if known and any(set(c.topics) - {"other"} and not set(c.topics) & known for c in self.alternatives):
            return True
        bugs = [set(c.backends) for c in self.alternatives if c.kind == "advisory" and c.backends]
        if cause.kind == "advisory":
            return bool(cause.backends) and any(not b & set(cause.backends) for b in bugs)
        # a runtime's message that names no kernel, beside known bugs of several backends that end in it
        return not cause.backends and any(not a & b for a in bugs for b in bugs)

    @property
    def verdict(self) -> str:
        """cause | ambiguous | unexplained: what `why` could say (the exit code follows it: 0, 1, 1)."""
        return "unexplained" if self.cause is None else "ambiguous" if self.ambiguous else "cause"

    @property
    def alternatives(self) -> tuple[Candidate, ...]:
        """The other candidates close to the cause."""
        if not self.cause:
            return ()
        return tuple(c for c in self.candidates[1:] if c.score >= CAUSE_AT and self.cause.score - c.score < CLOSE)


def explain_text(text: str, *, base_env: Any, env_flags: Mapping[str, Any] | None = None,
                 env_vars: Mapping[str, str] | None = None, config_flags: Mapping[str, Any] | None = None,
                 rules_dir: str | None = None,
                 install_findings: Sequence[Mapping[str, Any]] | None = None) -> WhyAnswer:
    """Answer `why` for a text. Flags beat the text, the text beats the machine (`base_env`).

    `install_findings` are findings about the installed binaries (an extension built for other GPUs or another
    torch), each a mapping with id, title, message, fix and optionally kind (arch, abi, unreadable), severity,
    package, file, backends, references; they join the candidates. None: the findings of the binaries `base_env`
    carries (the probe's, or an env file's), judged on the GPU and torch the merged facts give.
    """
    from ..config import make_config
    from ..engine.rules import load_rulebase
    from ..environment import environment_from_flags
    from ..gpus import other_vendor, several_gpus
    from ..services import diagnose_many
    from .catalogue import catalogue_path, check_links, load_catalogue
    from .index import load_index

    base = load_rulebase(rules_dir)
    catalogue = load_catalogue(str(catalogue_path(rules_dir)))
    check_links(catalogue, {r.id for r in base.rules}, set(base.backend_ids))
    known = rule_ids(base)
    reading = read_text(text, catalogue + tuple(e for e in load_index() if known.issuperset(e.rules)))
    dropped = list(reading.ignored)

    env = base_env
    other = _another_machine(reading, base_env)
    if other:
        dropped.append(f"this machine's facts ({other}): the text describes another machine")
        env = environment_from_flags({})
    for field in ENV_TARGETS:
        fact = reading.facts.get(field)
        if fact is None:
            continue
        try:
            env = environment_from_flags({field: fact.value}, base=env)
        except UsageError:
            dropped.append(f"line {fact.line}: {field} {fact.value!r} (not a version or GPU attndoctor knows)")
    if reading.env_vars or env_vars:
        env = environment_from_flags({"env_vars": {**reading.env_vars, **(env_vars or {})}}, base=env)
    explicit = {k: v for k, v in (env_flags or {}).items() if v is not None}
    if other_vendor(explicit.get("gpu")):
        dropped.append(f"--gpu {explicit.pop('gpu')!r}: not an NVIDIA GPU; the rules cover NVIDIA GPUs (CUDA) only, "
                       "so the text is read without a GPU")
    several = several_gpus(explicit.get("gpu"))
    if several:  # a thread's "RTX 3090 / RTX 5090": the text is still worth reading
        explicit.pop("gpu")
        dropped.append(f"--gpu: {several}, so the text is read without a GPU")
    if explicit:
        env = environment_from_flags(explicit, base=env)

    values: dict[str, Any] = {}
    for field in CONFIG_TARGETS:
        fact = reading.facts.get(field)
        if fact is None:
            continue
        partners = {k: reading.facts[k].value for k in ("heads", "hdim") if k in reading.facts and k != field}
        try:
            make_config({**partners, field: fact.value})
        except UsageError:
            dropped.append(f"line {fact.line}: {field} {fact.value!r} (not a valid value)")
            continue
        values[field] = fact.value
    flags = {k: v for k, v in (config_flags or {}).items() if v not in (None, False)}
    if (config_flags or {}).get("train") is False:
        flags["train"] = False
    if "seqlen" in flags:
        values.pop("seqlen_q", None), values.pop("seqlen_kv", None)
    config = make_config({**values, **flags})
    report = diagnose_many([config], env, command="why", rules_dir=rules_dir)
    result = report.results[0]
    if install_findings is None:
        install_findings = environment_findings(env)
    given = tuple(f for f in ENV_TARGETS if f != "gpu" and (f in explicit or f in reading.facts))
    candidates = tuple(rank(reading=reading, rules=base.rules, result=result, install_findings=install_findings,
                            given=given, cudnn=env.versions.get("cudnn")))
    answer = WhyAnswer(reading=reading, config=config, environment=env, result=result, candidates=candidates,
                       settle=(), dropped=tuple(dropped), te=_te_story(reading, result), rule_count=len(base.rules))
    return answer._replace(settle=_settle(answer))


def rule_ids(base: Any) -> frozenset[str]:
    return frozenset(r.id for r in base.rules)


def _another_machine(reading: Reading, env: Any) -> str:
    """What tells this machine apart from the one the text was written on ('' when nothing does, or when the base
    is not this machine): another GPU, or another torch release."""
    from ..environment import environment_from_flags

    if getattr(env, "source", "") != "probe":
        return ""
    gpu, torch = reading.facts.get("gpu"), reading.facts.get("torch")
    if gpu is not None:
        try:
            named = environment_from_flags({"gpu": gpu.value})
        except UsageError:
            named = None
        if named is not None and named.sm != env.sm:
            return f"{env.gpu or 'no GPU'} here, {named.gpu} in the text"
    mine = str(env.versions.get("torch") or "")
    if torch is not None and mine and mine.split(".")[:2] != str(torch.value).split(".")[:2]:
        return f"torch {mine} here, {torch.value} in the text"
    return ""


def environment_findings(env: Any) -> list[dict[str, Any]]:
    """The broken-install findings of the binaries an environment carries, shaped as candidates; none when it
    carries none (a what-if machine: this machine's files say nothing about it)."""
    if getattr(env, "binaries", None) is None:
        return []
    from ..engine.install import install_findings
    from ..engine.states import InstallKind

    out = []
    for f in install_findings(env):
        title = f"{f.label} was built against another torch" if f.kind is InstallKind.ABI else \
            f.message.split(": ", 1)[0]
        out.append({**f.to_dict(), "package": f.package, "file": f.file,
                    "id": f"INSTALL-{f.kind}-{f.package}".upper().replace("_", "-"), "label": f.label, "title": title})
    return out


def _settle(answer: WhyAnswer) -> tuple[str, ...]:
    """The flags that would decide between the candidates (or decide whether the cause applies)."""
    cause = answer.cause
    if cause is None:
        return ()
    pool = (cause,) + answer.alternatives
    out: list[str] = []
    for candidate in pool:
        for name in candidate.missing:
            if name.startswith("env("):
                flag = f"--set-env {name[5:-2]}=..." if name.endswith("')") else "--set-env"
            else:
                name = DERIVED_FROM.get(name, name)
                flag = FLAGS.get(name, "--" + name.replace("_", "-"))
            if flag not in out:
                out.append(flag)
    return tuple(out)


def _te_story(reading: Reading, result: Any) -> dict[str, Any] | None:
    """What TransformerEngine's debug lines say it did, beside what the rules predict it does."""
    te_lines = [h for h in reading.hits if h.entry.library == "transformer-engine" and h.entry.kind == "log"]
    if not te_lines:
        return None
    selection = next((s for s in result.selected if s.framework == "transformer-engine"), None)
    backends: dict[str, Any] = {}
    for backend_id in ("te-flash", "te-fused", "te-unfused"):
        try:
            verdict = result.verdict(backend_id)
        except StopIteration:
            continue
        blocking = [f for f in verdict.findings if f.applies is not False and f.blocking]
        backends[backend_id] = {
            "log_available": reading.te_available.get(backend_id),
            "log_disabled": list(reading.te_disabled.get(backend_id, ())),
            "status": verdict.status,
            "rules": [f.id for f in blocking],
            "why": blocking[0].message if blocking else "",
        }
    predicted = selection.backend if selection else None
    return {
        "config_from_log": any(h.entry.parse == "te-config" for h in te_lines),
        "log_selected": reading.te_selected,
        "predicted": predicted,
        "predicted_status": selection.status if selection else None,
        "agrees": None if reading.te_selected is None or predicted is None else reading.te_selected == predicted,
        "backends": backends,
    }
