"""The Messages API definitions (name, description, input_schema) of the built-in tools.

Written by hand so the descriptions read well to the model; a test keeps every schema's
properties and required keys equal to the fields of the tool's input Struct.
"""

from __future__ import annotations

from typing import Any

_PATH = "Absolute path, or relative to the workspace."


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


DEFINITIONS: list[dict[str, Any]] = [
    {
        "name": "Read",
        "description": (
            "Read a text file from the workspace. Lines come numbered like `cat -n`, starting "
            "at 1. By default up to 2000 lines from the start; use offset and limit for long "
            "files. Lines longer than 2000 characters are cut. Binary files are refused."
        ),
        "input_schema": _schema(
            {
                "file_path": {"type": "string", "description": f"The file to read. {_PATH}"},
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Line number to start reading from (1-based).",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "How many lines to read.",
                },
            },
            ["file_path"],
        ),
    },
    {
        "name": "Write",
        "description": (
            "Write a file in the workspace, replacing it if it exists and creating missing "
            "parent directories. Prefer Edit to change part of an existing file."
        ),
        "input_schema": _schema(
            {
                "file_path": {"type": "string", "description": f"The file to write. {_PATH}"},
                "content": {"type": "string", "description": "The complete new content."},
            },
            ["file_path", "content"],
        ),
    },
    {
        "name": "Edit",
        "description": (
            "Replace exact text in a file. old_string must match the file exactly, including "
            "whitespace, and occur exactly once unless replace_all is true. Read the file "
            "first. An empty old_string creates a file that does not exist yet."
        ),
        "input_schema": _schema(
            {
                "file_path": {"type": "string", "description": f"The file to edit. {_PATH}"},
                "old_string": {"type": "string", "description": "The text to replace."},
                "new_string": {
                    "type": "string",
                    "description": "The replacement (must differ from old_string).",
                },
                "replace_all": {
                    "type": "boolean",
                    "default": False,
                    "description": "Replace every occurrence of old_string.",
                },
            },
            ["file_path", "old_string", "new_string"],
        ),
    },
    {
        "name": "Glob",
        "description": (
            "Find files by name pattern, such as `**/*.py` or `src/**/*.{ts,tsx}`. `*` stays "
            "within one directory, `**` spans any number. Returns absolute paths, newest "
            "first, at most 100. The .git directory is skipped."
        ),
        "input_schema": _schema(
            {
                "pattern": {"type": "string", "description": "The glob pattern."},
                "path": {
                    "type": "string",
                    "description": f"Directory to search in (default: the workspace). {_PATH}",
                },
            },
            ["pattern"],
        ),
    },
    {
        "name": "Grep",
        "description": (
            "Search file contents with a Python regular expression. Binary files and .git "
            "are skipped. output_mode: files_with_matches (default; paths, newest first), "
            "content (matching lines as path:line:text), or count (matches per file)."
        ),
        "input_schema": _schema(
            {
                "pattern": {"type": "string", "description": "Regular expression (Python re)."},
                "path": {
                    "type": "string",
                    "description": f"File or directory to search (default: the workspace). {_PATH}",
                },
                "glob": {
                    "type": "string",
                    "description": "Only files matching this glob, e.g. `*.py` (file name) "
                    "or `src/**/*.py` (path below the search directory).",
                },
                "output_mode": {
                    "type": "string",
                    "enum": ["content", "files_with_matches", "count"],
                    "default": "files_with_matches",
                },
                "-i": {"type": "boolean", "description": "Case-insensitive search."},
                "-n": {
                    "type": "boolean",
                    "description": "Line numbers in content mode (default true).",
                },
                "-A": {"type": "integer", "minimum": 0, "description": "Lines after a match."},
                "-B": {"type": "integer", "minimum": 0, "description": "Lines before a match."},
                "-C": {"type": "integer", "minimum": 0, "description": "Lines around a match."},
                "head_limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Show only the first N lines or entries.",
                },
                "multiline": {
                    "type": "boolean",
                    "description": "Let the pattern span lines (`.` matches newlines).",
                },
            },
            ["pattern"],
        ),
    },
    {
        "name": "Bash",
        "description": (
            "Run a command with /bin/bash -c, with the workspace as the working directory. "
            "stdout and stderr come back together, with the exit code. The command is "
            "killed at its timeout (default set by the workspace configuration, at most "
            "600000 ms). Output beyond the limit is cut from the middle. stdin is empty."
        ),
        "input_schema": _schema(
            {
                "command": {"type": "string", "description": "The command to run."},
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "Timeout in milliseconds (at most 600000).",
                },
                "description": {
                    "type": "string",
                    "description": "A few words saying what the command does.",
                },
            },
            ["command"],
        ),
    },
]
