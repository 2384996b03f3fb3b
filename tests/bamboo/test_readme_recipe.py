"""The knowledge-base page's recipe from a folder of logs: its conversion step, run as written, gives valid
incident lines."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from hummingbird_agent.bamboo.learn.incidents import iter_incidents, read_lines

PAGE = Path(__file__).resolve().parents[2] / "docs" / "knowledge-base.md"


def recipe_conversion() -> str:
    """The recipe's shell block up to (and including) the here-document that writes incidents.jsonl."""
    text = PAGE.read_text(encoding="utf-8")
    block = re.search(r"<!-- recipe: logs-to-jsonl -->\n```sh\n(.*?)```", text, re.DOTALL)
    assert block, "the recipe is missing from docs/knowledge-base.md"
    script = block.group(1)
    return script[: script.index("\nPY\n") + len("\nPY\n")]


def test_the_recipe_turns_a_folder_of_logs_into_valid_incidents(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    (logs / "app").mkdir(parents=True)
    (logs / "lib").mkdir()
    (logs / "app" / "build.log").write_text("step 1\nnpm ERR! code ETIMEDOUT\n")
    (logs / "app" / "build.txt").write_text("The registry was down; a retry fixed it.")
    (logs / "lib" / "test.log").write_bytes(b"FAILED test_x \xff\n")
    subprocess.run(["bash", "-c", recipe_conversion()], cwd=tmp_path, check=True, timeout=60)
    lines = read_lines(str(tmp_path / "incidents.jsonl"))
    parsed = [item for _, item in iter_incidents(lines)]
    assert len(parsed) == 2 and all(not isinstance(item, str) for item in parsed), parsed
    first, second = (json.loads(line) for _, line in lines)
    assert first["id"] == "app/build" and first["email_text"].startswith("The registry was down")
    assert first["task_logs"] == {"build": "step 1\nnpm ERR! code ETIMEDOUT\n"}
    assert second["task_data"] == {"project": "lib", "job": "test"} and second["email_text"] == ""
