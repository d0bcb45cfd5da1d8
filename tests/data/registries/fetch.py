#!/usr/bin/env python3
"""Regenerates the registries in this folder from the real MCP servers.

Each server is installed at a pinned version from npm into a scratch folder,
started over stdio, and asked for its tools with
the MCP Python SDK's client, as an agent runtime would. The tools are written
as `NAME.json`: a JSON array of {name, description, parameters, source}, the
shape of the shared fixture registries, in the order the server listed them.

    pip install mcp==2.3.0  # the 2.x client API
    python3 tests/data/registries/fetch.py [--npm-dir /tmp/mcpreg] [NAME ...]

No server here needs network access or a real key to list its tools; dummy
credentials are passed where a server insists on one at start.
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent

# name -> (npm package@version, binary, arguments, extra environment, source tag)
SERVERS = {
    "notion": (
        "@notionhq/notion-mcp-server@2.5.2",
        "notion-mcp-server",
        [],
        {"NOTION_TOKEN": "ntn_dummy"},
        "mcp:notion",
    ),
    "kubernetes": (
        "mcp-server-kubernetes@4.1.7",
        "mcp-server-kubernetes",
        [],
        {},
        "mcp:kubernetes",
    ),
    "everything": (
        "@modelcontextprotocol/server-everything@2026.8.31",
        "mcp-server-everything",
        [],
        {},
        "mcp:everything",
    ),
    "metabase": (
        "@easecloudio/mcp-metabase-server@1.3.0",
        "mcp-metabase-server",
        [],
        {"METABASE_URL": "http://127.0.0.1:9", "METABASE_API_KEY": "dummy"},
        "mcp:metabase",
    ),
    "weather": (
        "@dangahagan/weather-mcp@1.23.0",
        "weather-mcp",
        [],
        {},
        "mcp:weather",
    ),
    "coolify": (
        "@masonator/coolify-mcp@3.5.0",
        "coolify-mcp",
        [],
        {"COOLIFY_BASE_URL": "http://127.0.0.1:9", "COOLIFY_ACCESS_TOKEN": "dummy"},
        "mcp:coolify",
    ),
    "slack": (
        "@modelcontextprotocol/server-slack@2025.4.25",
        "mcp-server-slack",
        [],
        {"SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T0"},
        "mcp:slack",
    ),
    # Feishu/Lark with Chinese descriptions (`-l zh`), the tools of a few
    # projects (calendar, tasks, wiki, approval), chosen by `lark_tools`.
    "lark-zh": (
        "@larksuiteoapi/lark-mcp@0.5.1",
        "lark-mcp",
        ["mcp", "-a", "cli_dummy", "-s", "dummy", "-l", "zh", "-t", "LARK_TOOLS"],
        {},
        "mcp:lark",
    ),
}

LARK_PROJECTS = ["calendar", "task", "wiki", "approval"]


def lark_tools(npm_dir: Path) -> str:
    """The names of the Lark tools of `LARK_PROJECTS`, as the server spells them."""
    script = (
        "const t=require('./node_modules/@larksuiteoapi/lark-mcp/dist/mcp-tool/tools/index.js');"
        f"const p={json.dumps(LARK_PROJECTS)};"
        "console.log(t.AllToolsZh.filter(x=>p.includes(x.project)).map(x=>x.name).join(','))"
    )
    out = subprocess.run(["node", "-e", script], cwd=npm_dir, check=True, capture_output=True)
    return out.stdout.decode().strip()


def install(npm_dir: Path, names):
    npm_dir.mkdir(parents=True, exist_ok=True)
    if not (npm_dir / "package.json").exists():
        subprocess.run(["npm", "init", "-y"], cwd=npm_dir, check=True, capture_output=True)
    packages = [SERVERS[n][0] for n in names]
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", *packages],
        cwd=npm_dir,
        check=True,
    )


async def list_tools(command, args, env):
    params = StdioServerParameters(
        command=command, args=args, env={**os.environ, **env}, cwd=str(HERE)
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools, cursor = [], None
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                tools.extend(page.tools)
                cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
                if not cursor:
                    return tools


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npm-dir", default="/tmp/mcpreg")
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("names", nargs="*", default=list(SERVERS))
    a = ap.parse_args()
    npm_dir = Path(a.npm_dir)
    if not a.no_install:
        install(npm_dir, a.names)
    for name in a.names:
        _, binary, args, env, source = SERVERS[name]
        command = str(npm_dir / "node_modules" / ".bin" / binary)
        if "LARK_TOOLS" in args:
            args = [lark_tools(npm_dir) if x == "LARK_TOOLS" else x for x in args]
        try:
            tools = asyncio.run(asyncio.wait_for(list_tools(command, args, env), 120))
        except BaseException as e:  # noqa: BLE001 - report and go on with the others
            print(f"{name}: failed: {e!r}", file=sys.stderr)
            continue
        out = [
            {
                "name": t.name,
                "description": t.description or "",
                "parameters": t.input_schema,
                "source": source,
            }
            for t in tools
        ]
        path = HERE / f"{name}.json"
        path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"{name}: {len(out)} tools -> {path.name}", file=sys.stderr)


if __name__ == "__main__":
    main()
