"""The facts a condition reads: the config's half and the machine's half, and the per-object cache fix trials use."""

import functools
import re
from typing import Any

from packaging.version import InvalidVersion, Version

from ..config import AttentionConfig
from ..environment import ABSENT, PACKAGES, Environment, as_compared, parse_version
from ..fields import FACTS
from .memo import Memo
from .names import CONFIG_VARIABLES
from .rule_model import Rule

PARTNERS = {"hdim": ("hdim", "hdim_v"), "hdim_v": ("hdim", "hdim_v"), "seqlen_q": ("seqlen_q", "seqlen_kv"),
            "seqlen_kv": ("seqlen_q", "seqlen_kv"), "heads": ("heads", "kv_heads"), "kv_heads": ("heads", "kv_heads"),
            "window_left": ("window_left", "window_right"), "window_right": ("window_left", "window_right"),
            "window": ("window_left", "window_right"), "layout": ("layout", "qkv_format"),
            "qkv_format": ("layout", "qkv_format"), "cp": ("cp", "cp_comm"), "cp_comm": ("cp", "cp_comm")}
"""A config change a fix makes can be judged against the field's partner (hdim_v against hdim): both are read."""

CONFIG_FACTS = FACTS


def config_facts(config: AttentionConfig) -> dict[str, Any]:
    """The config's part of the facts; unknown fields are left out."""
    facts = {name: value for name in CONFIG_FACTS if (value := getattr(config, name)) is not None}
    facts["window_left"], facts["window_right"] = config.window
    facts["qkv_format"] = config.qkv_format
    return facts


def env_facts(env: Environment) -> dict[str, Any]:
    """The environment's part of the facts; unknown facts are left out, absent packages are ABSENT."""
    facts: dict[str, Any] = {}
    if env.sm is not None:
        facts["sm"] = env.sm
    if env.gpu is not None:
        facts["gpu"] = env.gpu
    for package in PACKAGES:
        value = env.versions.get(package)
        if value is None:
            continue
        facts[package] = ABSENT if value == ABSENT else compared_version(value, package)
    if env.cudnn_compiled:
        facts["cudnn_compiled"] = compared_version(env.cudnn_compiled, "cudnn_compiled")
    fa2 = env.versions.get("flash_attn")
    if fa2 is not None and fa2 != ABSENT:
        facts["flash_attn_local"] = "+" in str(fa2)
    dsl = env.versions.get("cutlass_dsl")
    if dsl is not None and dsl != ABSENT:
        facts["cutlass_dsl_dev"] = _prerelease(str(dsl))
    beta = re.match(BETA, str(env.versions.get("flash_attn_4") or ""))
    if beta:
        facts["flash_attn_4_beta"] = int(beta.group(1))
    for key, value in env.env_vars.items():
        facts[f"env:{key}"] = value
    for key, value in env.api.items():
        facts[f"api:{key}"] = value
    return facts


def _prerelease(text: str) -> bool:
    """Whether a version is a dev or pre-release build, which `parse_version` reads as its release."""
    try:
        return Version(text.strip()).is_prerelease
    except InvalidVersion:
        return False


@functools.lru_cache(maxsize=1024)
def compared_version(value: str, what: str) -> Any:
    return as_compared(what, parse_version(value, what=what))


def kept_beta(value: str, what: str) -> bool:
    """Whether a fix keeps this version as written: a flash-attn 4 beta, which the facts read as 4.0.0."""
    return what == "flash_attn_4" and re.match(BETA, str(value)) is not None


def fix_version(value: str, what: str) -> Any:
    """A version as a fix orders it: as compared, except that flash-attn 4's betas stay apart (4.0.0b16 after b4),
    since a fix to a later beta is a real step while the facts read every beta as 4.0.0."""
    return Version(str(value)) if kept_beta(value, what) else compared_version(value, what)


class FactCache:
    """Facts per config and per environment object, so fix trials rebuild only the half they change."""

    def __init__(self) -> None:
        self.configs: Memo = Memo(4096)
        self.envs: Memo = Memo(4096)

    def env(self, env: Environment) -> dict[str, Any]:
        found = self.envs.owned(env, id(env))
        return found[1] if found is not None else self.envs.put_owned(env, id(env), env_facts(env))

    def facts(self, config: AttentionConfig, env: Environment) -> dict[str, Any]:
        found = self.configs.owned(config, id(config))
        own = found[1] if found is not None else self.configs.put_owned(config, id(config), config_facts(config))
        return {**self.env(env), **own}


BETA = r"^\s*4\.0\.0(?:\.0)*(?:b|beta)(\d+)"
"""flash-attn 4 is published only as 4.0.0 betas; advisories tell them apart by their number."""


def build_facts(config: AttentionConfig, env: Environment) -> dict[str, Any]:
    """The flat map of names the condition language reads; unknown facts are left out."""
    return {**env_facts(env), **config_facts(config)}


def outside_when(rule: Rule, facts: dict[str, Any]) -> bool:
    """True when a known version or arch lies outside the rule's `when` ranges: no need to compile the rest."""
    for name, spec in rule.when.items():
        value = facts.get(name)
        if value is None:
            continue
        if value == ABSENT:
            return True
        if not spec.contains(_arch(value) if name == "sm" else value):
            return True
    return False


@functools.lru_cache(maxsize=64)
def _arch(sm: int) -> Any:
    from packaging.version import Version

    return Version(str(sm))


ABSTRACTED = ("batch", "seqlen_q", "seqlen_kv")
CONFIG_FACTS_ALL = CONFIG_VARIABLES
"""Config facts of many values: where no fix changes them, a verdict reads them only through a few comparisons."""


class RuleValues:
    """A rule's value by the facts it reads, so many configs and fix trials cost little (as many keys as the rules'
    facts take distinct values: a few thousand at most, so unbounded)."""

    def __init__(self) -> None:
        self.cache: dict[str, dict[tuple[Any, ...], Any]] = {}

    def value(self, rule: Rule, facts: dict[str, Any]) -> Any:
        per_rule = self.cache.get(rule.id)
        if per_rule is None:
            per_rule = self.cache[rule.id] = {}
        key = tuple(map(facts.get, rule.key_names))
        try:
            return per_rule[key]
        except KeyError:
            result = per_rule[key] = False if outside_when(rule, facts) else rule.compiled(facts)
            return result
