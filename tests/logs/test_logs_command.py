"""The excerpt command: outputs and its one-line errors."""

import gzip
import json

import hummingbird_agent.logs as logs
from hummingbird_agent.logs import excerpt_command

LOG = "step 1\nstep 2\nERROR: tests failed: 2 failed, 3 passed\nThe command exited with 1.\n"


def test_json_output(tmp_path, capsys):
    path = tmp_path / "job.log"
    path.write_text(LOG)
    assert excerpt_command(str(path), None, None, None, True) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lines"] == 4
    assert any(first <= 3 <= last for first, last in out["ranges"])


def test_text_output_has_line_numbers(tmp_path, capsys):
    path = tmp_path / "job.log"
    path.write_text(LOG)
    assert excerpt_command(str(path), None, None, 10, False) == 0
    assert "3: ERROR: tests failed: 2 failed, 3 passed" in capsys.readouterr().out


def test_examples_file_is_used(tmp_path, capsys):
    path = tmp_path / "job.log"
    path.write_text(LOG)
    examples = tmp_path / "ex.jsonl"
    examples.write_text(json.dumps({"chunk": "ERROR: tests failed: 1 failed", "keywords": ["tests failed"]}) + "\n\n")
    assert excerpt_command(str(path), None, str(examples), None, True) == 0
    assert json.loads(capsys.readouterr().out)["ranges"][0][0] == 3


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err
    assert lines[0].startswith("error: "), lines[0]  # as every other command's errors (cli.main)
    return lines[0]


def test_missing_log(tmp_path, capsys):
    assert excerpt_command(str(tmp_path / "nope.log"), None, None, None, False) == 2
    assert "nope.log" in one_error_line(capsys)


def test_missing_passing_log(tmp_path, capsys):
    path = tmp_path / "job.log"
    path.write_text(LOG)
    assert excerpt_command(str(path), str(tmp_path / "pass.log"), None, None, False) == 2
    assert "pass.log" in one_error_line(capsys)


def test_malformed_examples(tmp_path, capsys):
    path = tmp_path / "job.log"
    path.write_text(LOG)
    for body in ("not json\n", '{"keywords": []}\n', '{"chunk": 3}\n', '{"chunk": "x", "from_end": "far"}\n'):
        examples = tmp_path / "ex.jsonl"
        examples.write_text(body)
        assert excerpt_command(str(path), None, str(examples), None, False) == 2
        assert "examples line 1" in one_error_line(capsys)


def test_examples_not_utf8(tmp_path, capsys):
    path = tmp_path / "job.log"
    path.write_text(LOG)
    examples = tmp_path / "ex.jsonl"
    examples.write_bytes(b"\xff\xfe\x00")
    assert excerpt_command(str(path), None, str(examples), None, False) == 2
    assert "UTF-8" in one_error_line(capsys)


def test_corrupt_gzip(tmp_path, capsys):
    path = tmp_path / "job.log.gz"
    path.write_bytes(gzip.compress(LOG.encode())[:20])
    assert excerpt_command(str(path), None, None, None, False) == 2
    assert "gzip" in one_error_line(capsys)


def test_bad_max_lines(tmp_path, capsys):
    path = tmp_path / "job.log"
    path.write_text(LOG)
    assert excerpt_command(str(path), None, None, 0, False) == 2
    assert "--max-lines" in one_error_line(capsys)


def test_through_the_cli_errors_read_like_every_other_commands(tmp_path, capsys):
    from hummingbird_agent.cli import main

    assert main(["excerpt", str(tmp_path / "nope.log")]) == 2
    excerpt_error = one_error_line(capsys)
    assert main(["check-config", "--config", str(tmp_path / "nope.yaml")]) == 2
    config_error = one_error_line(capsys)
    assert excerpt_error.split(" ", 1)[0] == config_error.split(" ", 1)[0] == "error:"


def test_exported_names_are_pinned():
    assert sorted(logs.__all__) == [
        "Example", "ExamplesError", "Excerpt", "clean_line", "excerpt_command", "excerpt_lines",
        "format_excerpt", "parse_examples", "signature",
    ]
