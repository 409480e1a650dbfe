"""VersionRange agrees with packaging's SpecifierSet on release versions."""

from __future__ import annotations

import random

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from attndoctor.engine.ranges import VersionRange

SPECS = [">=9.1,<9.5", "<9.0", ">=1.8,<2.5", "==90", ">=80,<90", "!=9.10.0,!=9.10.1", "==2.5.*", "!=2.6.*",
         "~=2.6", "~=2.6.1", ">2.7.3", "<=2.8.3", ">=2.1.1,<=2.7.4", "==9.10.0", ">=100", "<100,>=90", ">2.8.3", "<=2.8.3", "==2.8.3", ">=2.7.4.post1", ">2.8.3.post1"]


@pytest.mark.parametrize("spec", SPECS)
def test_matches_packaging_on_release_versions(spec):
    rng = random.Random(spec)
    ours, theirs = VersionRange(spec), SpecifierSet(spec)
    candidates = ["2.8.3.post1", "2.8.3.post2", "2.7.4.post1", "9.0", "9.1.0", "9.4.9", "9.5", "9.10.0", "9.10.1", "2.5.8", "2.6.0", "2.6.3", "2.7.3",
                  "2.7.4", "90", "86", "100", "120", "1.8", "2.4.1", "2.8.3"]
    candidates += [".".join(str(rng.randint(0, 12)) for _ in range(rng.randint(1, 3))) for _ in range(200)]
    for text in candidates:
        v = Version(text)
        assert ours.contains(v) == theirs.contains(v, prereleases=True), (spec, text)


@pytest.mark.parametrize("bad", ["", "9.1", ">=x", ">=9.1,", "=>9.1", ">=9.*", "~=9"])
def test_rejects_what_is_not_a_range(bad):
    with pytest.raises(ValueError):
        VersionRange(bad)


def test_str_round_trips():
    assert str(VersionRange(">=9.1, <9.5")) == ">=9.1,<9.5"
