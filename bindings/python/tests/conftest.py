"""Shared paths and inputs for the module's tests."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
POLICY_PATH = str(ROOT / "policies" / "pi-desktop.policy")
REGISTRY_PATH = str(ROOT / "examples" / "registries" / "pi-desktop.json")

SMALL = [
    {"name": "Read", "description": "Read a file. Returns its text."},
    {
        "name": "WebFetch",
        "description": "Fetch a web page. Returns markdown.",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
        "cache_control": {"type": "ephemeral"},
    },
    {"name": "Secret", "description": "Never shown."},
]
SMALL_POLICY = "Defer(WebFetch)\nHide(Secret)\n"
