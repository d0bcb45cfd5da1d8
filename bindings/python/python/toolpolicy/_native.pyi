# Types of the native module (written by hand; the module is Rust).
import os
import sys
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:
    from typing_extensions import NotRequired, TypedDict

ResultStatus = Literal["ok", "error", "interrupted", "missing"]
Provider = Literal["generic", "openai", "openai-responses", "anthropic", "anthropic-deferred"]
JsonText = str
Tools = Union[Sequence[Any], Mapping[str, Any], JsonText]
"""A list of tool definitions in any registry shape (generic, Anthropic,
OpenAI, MCP), a dict with a `tools` list, or JSON text of either."""
StrPath = Union[str, "os.PathLike[str]"]

class Context(TypedDict, total=False):
    """Where a chat runs: the policy's mode (required when the policy
    declares modes), a bot, the runtime's flags and its own grants (an
    allow-list of selectors on top of the policy's)."""

    mode: Optional[str]
    bot: Optional[str]
    flags: Sequence[str]
    grants: Optional[Sequence[str]]

class SessionState(TypedDict):
    """A chat as a host persists it: its context and the tools with evidence."""

    context: Dict[str, Any]
    evidence: List[str]

class AuditLogText(TypedDict):
    """Audit log text for `audit_report`: `name` (`log N` by default, its
    place in the list) names its bad lines."""

    text: str
    name: NotRequired[str]

AuditLogs = Sequence[Union[StrPath, AuditLogText]]

class AuditSuggestion(TypedDict):
    """A line `audit_report` suggests for one tool."""

    tool: str
    sessions: int
    line: str
    """`NoDefer(tool)` or `Defer(tool)`."""
    checked: NotRequired[bool]
    """With the engine's policy: whether the line changes the decision, and
    nothing else."""
    also_changes: NotRequired[List[str]]
    """With the engine's policy: other tools the line would change too."""

class AuditReport(TypedDict):
    """The `policy report --format json` contract (docs/audit.md)."""

    events: int
    sessions: int
    sessions_from_requests: int
    turns: int
    tokens: int
    tokens_all_declared: int
    empty_searches: List[List[Union[str, int]]]
    """`[query, count]` lists, most frequent first."""
    search_misses: List[Dict[str, Any]]
    load_in_most_sessions: List[AuditSuggestion]
    never_called: List[AuditSuggestion]
    refusals: List[Dict[str, Any]]
    latency: List[Dict[str, Any]]
    reloads: int
    failed_reloads: int
    drift: List[str]
    dropped_events: int
    bad_lines: int
    bad_lines_shown: List[Dict[str, Any]]

class Diagnostic(TypedDict):
    """One diagnostic of a `ToolPolicyError` or of `Engine.warnings()`."""

    code: Optional[str]
    severity: Literal["error", "warning"]
    message: str
    file: Optional[str]
    line: Optional[int]
    column: Optional[int]
    help: NotRequired[str]
    path: NotRequired[str]
    """A registry or skill list entry, such as `tools[3].name`."""

class ToolDefinition(TypedDict):
    """`{name, description, parameters}` and whatever else the registry
    entry carries (`source`, `cache_control`...). Definitions are shared
    between plans and lists: copy one before changing it."""

    name: str
    description: str
    parameters: Dict[str, Any]

class Tokens(TypedDict):
    """The meter: a quarter token per character."""

    declared: int
    catalog: int
    skills: int
    total: int
    all_declared: int
    """Had every tool that is not hidden been declared."""

class Plan(TypedDict):
    """One turn's plan. `declared` holds guards, search tools, active tools,
    then activated tools in first-activation order."""

    declared: Tuple[ToolDefinition, ...]
    deferred: Tuple[str, ...]
    hidden: Tuple[str, ...]
    activated: Tuple[str, ...]
    catalog: str
    """The `# On-demand tools` text; empty when nothing is deferred."""
    skills: Tuple[str, ...]
    skills_block: str
    search_tool: Optional[str]
    """The search tool the model is told about, while anything is deferred."""
    tokens: Tokens

class SearchResult(TypedDict):
    """What a search or load did, and the text the model reads as the
    tool's result."""

    activated: List[str]
    already_active: List[str]
    unavailable: List[str]
    """Hidden or unknown names, reported alike."""
    matches: List[str]
    over_limit: List[str]
    remaining_deferred: int
    status: ResultStatus
    text: str

class CallResult(TypedDict):
    """What a direct call of a tool gets."""

    allowed: bool
    """Whether the tool may run; report its result with `record_result`."""
    declared_next_step: bool
    text: Optional[str]
    """The not-found result to give the model; `None` when allowed."""

class SkillResult(TypedDict):
    name: str
    key: Optional[str]
    description: str
    source: Optional[str]

class ToolPolicyError(Exception):
    """An input the engine refuses: a policy, registry or skill list that
    does not load, a file it cannot read, a mode the policy does not
    declare. `diagnostics` says where and what; the message is the first
    one's. An argument of the wrong type raises `TypeError` instead, and a
    value no call accepts (an unknown provider, status or context key)
    `ValueError`, as Python's own functions do."""

    diagnostics: List[Diagnostic]

class Engine:
    """The policy, the registry and the skill list, shared by every chat
    and every thread. Reloads swap them whole; a failed one raises and
    keeps the last good engine."""

    def __init__(
        self,
        policy_text: str,
        tools: Tools,
        *,
        file: Optional[str] = None,
        skills: Union[Sequence[Any], JsonText, None] = None,
        dir: Optional[StrPath] = None,
        audit: Optional[StrPath] = None,
        audit_no_queries: Optional[bool] = None,
    ) -> None: ...
    @staticmethod
    def from_files(
        policy_path: StrPath,
        registry_path: StrPath,
        skills_path: Optional[StrPath] = None,
        *,
        audit: Optional[StrPath] = None,
        audit_no_queries: Optional[bool] = None,
    ) -> "Engine": ...
    def flush_audit(self, within: float = 5.0) -> int: ...
    @property
    def auditing(self) -> bool: ...
    def session(self, context: Optional[Context] = None) -> "Session": ...
    def resume(self, state: Union[SessionState, Mapping[str, Any], JsonText]) -> "Session": ...
    def explain(self, item: str, context: Optional[Context] = None) -> Dict[str, Any]: ...
    def audit_report(
        self, logs: AuditLogs, *, caller: Optional[str] = None, since: Optional[str] = None
    ) -> AuditReport:
        """The report of audit logs, with this engine's policy and registry."""
    def reload_policy(self, text: str, file: Optional[str] = None) -> None:
        """Replaces the policy and reads the lock it names again, from the
        folder the engine was built with; a failure keeps the last good."""
    def reload_registry(self, tools: Tools) -> None: ...
    def reload_skills(self, skills: Union[Sequence[Any], JsonText]) -> None: ...
    def warnings(self) -> List[Diagnostic]: ...
    @property
    def modes(self) -> List[str]: ...
    @property
    def tool_names(self) -> List[str]: ...

class Session:
    """One chat. Used by one thread at a time: a call made while another
    thread's call on the same session runs raises `RuntimeError`."""

    def plan(self) -> Plan: ...
    def plan_json(self) -> str: ...
    def provider_tools(self, provider: Provider) -> List[Dict[str, Any]]: ...
    def tool_list(self, *, call_through: Union[bool, str, None] = None) -> List[ToolDefinition]: ...
    def search(
        self,
        query: str,
        names: Optional[Sequence[str]] = None,
        *,
        status: Optional[ResultStatus] = None,
        call_through: Union[bool, str, None] = None,
    ) -> SearchResult: ...
    def load(
        self,
        names: Sequence[str],
        *,
        status: Optional[ResultStatus] = None,
        call_through: Union[bool, str, None] = None,
    ) -> SearchResult: ...
    def call(self, name: str) -> CallResult: ...
    def record_result(self, name: str, status: Optional[ResultStatus] = None) -> None: ...
    def prompt(self) -> None: ...
    def compact(self) -> int: ...
    def restart(self) -> None: ...
    def set_mode(self, mode: Optional[str]) -> None: ...
    def set_context(self, context: Context) -> None: ...
    def state(self) -> SessionState: ...
    def activated(self) -> List[str]: ...
    def resolve_skill(self, requested: str) -> Optional[SkillResult]: ...

def lock_text(tools: Tools) -> str:
    """The lock file's text for these tools: what `policy lock --registry`
    writes, one entry a line in name order after its header."""

def audit_report(logs: AuditLogs, *, caller: Optional[str] = None, since: Optional[str] = None) -> AuditReport:
    """The report of audit logs (paths and `{"text": ...}` dicts, read in
    order): `policy report --format json` as a dict, without a policy."""

def read_input(path: StrPath) -> str:
    """A text file read as the engine reads its inputs: under a 64 MiB cap,
    as UTF-8, without a leading byte-order mark."""

def _time_in_rust(engine: Engine, what: str, query: str, iterations: int) -> float: ...
def _panic_for_tests() -> None: ...
