"""The README's first example is what the command prints today: docs that drift from the behaviour mislead."""

import re
import shlex
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def first_example() -> tuple[list[str], str, int]:
    """The README's first `$ attndoctor explain` block: its arguments, the text shown and the exit code shown."""
    block = re.search(r"```text\n(\$ attndoctor explain .*?)```", README.read_text(encoding="utf-8"), re.S).group(1)
    lines = block.splitlines()
    command = []
    while True:
        line = lines.pop(0)
        command.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    shown, _, code = "\n".join(lines).partition("$ echo $?\n")
    return shlex.split(" ".join(command))[2:], shown.rstrip("\n"), int(code.strip())


def test_the_first_example_prints_what_the_readme_shows(cli):
    args, shown, code = first_example()
    got_code, out, err = cli(*args)
    assert got_code == code, err
    assert out.rstrip("\n") == shown
