"""Known releases per package and the versions held fixed in sweeps: shared by the coverage matrix and `where`."""

from typing import Sequence

from ..environment import parse_version

RECENT: dict[str, str] = {"torch": "2.11.0", "cuda": "13.0", "cudnn": "9.19.0", "flash_attn": "2.8.3",
                          "flash_attn_3": "3.0.0", "flash_attn_4": "4.0.0", "cudnn_frontend": "1.32.0",
                          "te": "2.18", "driver": "580.65"}
"""Versions held fixed while the backend's own package is swept."""

RELEASES: dict[str, tuple[str, ...]] = {
    "torch": ("2.2.0", "2.3.0", "2.4.0", "2.5.0", "2.5.1", "2.6.0", "2.7.0", "2.8.0", "2.9.0", "2.10.0", "2.11.0",
              "2.12.0", "2.13.0", "2.14.0", "2.15.0"),
    "te": ("1.6", "1.7", "1.8", "1.9", "1.10", "1.11", "1.12", "1.13", "2.0", "2.1", "2.2", "2.3", "2.4", "2.5",
           "2.6", "2.7", "2.8", "2.9", "2.10", "2.12", "2.14", "2.16", "2.17", "2.18", "2.19", "2.20"),
    "flash_attn": ("2.0.0", "2.1.0", "2.2.0", "2.3.0", "2.4.0", "2.4.1", "2.5.0", "2.5.8", "2.6.0", "2.6.3",
                   "2.7.0", "2.7.4", "2.8.0", "2.8.3"),
    "flash_attn_3": ("3.0.0",),
    "flash_attn_4": tuple(f"4.0.0b{n}" for n in range(3, 37)),
    "cudnn": ("8.9.0", "8.9.3", "8.9.6", "8.9.7", "9.0.0", "9.1.0", "9.2.0", "9.3.0", "9.5.0", "9.6.0", "9.7.0",
              "9.8.0", "9.9.0", "9.10.2", "9.11.0", "9.12.0", "9.13.0", "9.14.0", "9.15.1", "9.16.0", "9.17.0",
              "9.18.1", "9.19.0", "9.20.0", "9.21.0", "9.22.0", "9.23.0", "9.24.0", "9.25.0", "9.26.0"),
}
TE_FLASH_ATTN: tuple[tuple[str, str], ...] = (
    ("1.7", "2.4.2"), ("1.11", "2.5.8"), ("2.0", "2.6.3"), ("2.2", "2.7.3"), ("2.6", "2.7.4"), ("2.10", "2.8.1"),
    ("999", "2.8.3"),
)
"""(TE releases below this, the newest flash-attn they accept): a TE column pairs each release with it."""


def ranges_text(supported: Sequence[str], releases: Sequence[str]) -> str:
    """Contiguous runs of the sweep as text: all, none, >=2.5, 2.5-2.8, >=2.10."""
    if not supported:
        return "✗"
    if len(supported) == len(releases):
        return "✓"
    runs: list[list[str]] = []
    for version in releases:
        if version in supported:
            if runs and runs[-1][-1] == releases[releases.index(version) - 1]:
                runs[-1].append(version)
            else:
                runs.append([version])
    parts = []
    for run in runs:
        if run[-1] == releases[-1]:
            parts.append(f"≥{short(run[0])}")
        elif len(run) == 1:
            parts.append(short(run[0]))
        else:
            parts.append(f"{short(run[0])}–{short(run[-1])}")
    return ", ".join(parts)


def short(version: str) -> str:
    """2.5.0 reads 2.5 in a cell; 2.5.1 stays."""
    v = parse_version(version)
    release = list(v.release)
    while len(release) > 2 and release[-1] == 0:
        release.pop()
    return ".".join(map(str, release))


def flash_attn_for(te: str) -> str:
    """The newest flash-attn a TE release accepts, so a TE sweep does not trip over TE's own version check."""
    v = parse_version(te)
    return next(fa for bound, fa in TE_FLASH_ATTN if v < parse_version(bound))
