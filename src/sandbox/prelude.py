"""The Python side of the sandbox runtime, baked into the Pyodide memory snapshot as `_codemode`.

Running a script with top-level `await`, turning its last expression into a JSON-safe value,
formatting errors without Pyodide-internal frames, and the bridge that tool modules
(`mcp_tools.<server>`) call. It must not touch `js` at import time: a snapshot cannot hold
references to JavaScript objects.

Embedded into TypeScript as src/sandbox/prelude_py.ts by `deno task generate`. Changing it
changes the snapshot key, so the snapshot is rebuilt on next start.
"""
import ast, asyncio, base64, builtins, gc, importlib, importlib.abc, importlib.util, json
import linecache, os, shutil, signal, sys, traceback, types
import inspect
from pyodide.ffi import run_sync

SCRIPT = "<script>"
# Bound now, so a script that monkey-patches json or textwrap cannot break the runtime's own
# replies or a session's next script.
_dumps = json.dumps
_loads = json.loads
from textwrap import dedent as _dedent
_HIDDEN_PREFIXES = ("/lib/python", "<codemode", "/lib/pyodide")


# The exception classes a failed tool call raises, generated from the host's outcome table
# (OUTCOMES in src/execution/outcomes.ts) and installed ahead of this module; mcp_tools
# re-exports them.
from _codemode_errors import *  # noqa: F401,F403
from _codemode_errors import ERROR_CLASSES, ToolError


class Image:
    """An image returned by a tool: base64 'data' and its 'mime_type'."""

    def __init__(self, data, mime_type):
        self.data = data
        self.mime_type = mime_type

    def __repr__(self):
        return f"Image(mime_type={self.mime_type!r}, {len(self.data)} base64 chars)"


class Resource:
    """An embedded resource returned by a tool: its uri, mime type, and text or base64 blob."""

    def __init__(self, uri, mime_type=None, text=None, blob=None):
        self.uri = uri
        self.mime_type = mime_type
        self.text = text
        self.blob = blob

    def __repr__(self):
        return f"Resource(uri={self.uri!r}, mime_type={self.mime_type!r})"


Image.__module__ = Resource.__module__ = "mcp_tools"


# Deeper JSON text stays a str: Python's JSON reader recurses once per level, and past a few
# thousand the interpreter's stack overflows, which ends the sandbox past any `except`. As
# MAX_TOOL_RESULT_DEPTH in tool_gate.ts, which holds structured results to the same.
_MAX_JSON_DEPTH = 500


def _text_value(text):
    """Text content that is a JSON object or array comes back parsed (when it nests no deeper
    than _MAX_JSON_DEPTH); any other text as str."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and _nests_at_most(stripped, _MAX_JSON_DEPTH):
        try:
            return _loads(stripped)
        except ValueError:
            pass
    return text


_JSON_STRING = _NOT_BRACKET = None


def _nests_at_most(text, limit):
    """Whether JSON text nests arrays and objects no deeper than `limit` (brackets in strings
    not counted). Counting all brackets settles most texts; the rest are measured with C-level
    passes (regular expressions, then a running sum), never one Python step a character."""
    global _JSON_STRING, _NOT_BRACKET
    if text.count("[") + text.count("{") <= limit:
        return True
    import itertools, operator, re
    if _JSON_STRING is None:
        # Possessive, and an unclosed string runs to the end: no quote is tried twice, so
        # the pass is linear (a text of escaped quotes after an open one was quadratic).
        _JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
        _NOT_BRACKET = re.compile(r"[^\[\]{}]+")
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)).encode()
    steps = brackets.translate(_BRACKET_STEPS)  # an opening one 2, a closing one 0
    levels = itertools.accumulate(map(operator.sub, steps, itertools.repeat(1)))
    return max(levels, default=0) <= limit


_BRACKET_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def _content_value(item):
    kind = item.get("type")
    if kind == "text":
        return _text_value(item.get("text", ""))
    if kind in ("image", "audio"):
        return Image(item.get("data", ""), item.get("mimeType", ""))
    if kind == "resource":
        res = item.get("resource", {})
        return Resource(res.get("uri"), res.get("mimeType"), res.get("text"), res.get("blob"))
    if kind == "resource_link":
        return Resource(item.get("uri"), item.get("mimeType"))
    return item


def to_python_value(result):
    """An MCP CallToolResult as a Python value (the documented rule, see the README)."""
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    values = [_content_value(item) for item in result.get("content", [])]
    if len(values) == 0:
        return None
    if len(values) == 1:
        return values[0]
    if all(isinstance(v, str) for v in values):
        return "\n".join(values)
    return values


def report_progress(progress, total=None, message=None):
    """Reports progress to the MCP client (when it asked for progress). Cheap; call it freely."""
    report = {"progress": float(progress)}
    if total is not None:
        report["total"] = float(total)
    if message is not None:
        report["message"] = str(message)[:500]
    _host().report_progress(_dumps(report))


def _host():
    import _codemode_host
    return _codemode_host


def _decode_reply(server, tool, reply_json):
    reply = _loads(reply_json)
    if "error" in reply:
        err = reply["error"]
        cls = ERROR_CLASSES.get(err.get("kind"), ToolError)
        raise cls(server, tool, err.get("message", "failed"), err.get("kind", "tool_error"))
    return to_python_value(reply["result"])


def call_tool(server, tool, arguments):
    """Calls an upstream tool and blocks until it answers."""
    reply_json = _wait_interruptibly(
        lambda: run_sync(_host().call_tool(server, tool, _dumps(arguments))))
    return _decode_reply(server, tool, reply_json)


async def call_tool_async(server, tool, arguments):
    """Calls an upstream tool; await it (several can run at once with asyncio.gather)."""
    reply_json = await _host().call_tool(server, tool, _dumps(arguments))
    return _decode_reply(server, tool, reply_json)


def star_names(names):
    """What a tool module's or the package's `import *` takes: the names, except those of
    Python builtins."""
    return [n for n in names if not hasattr(builtins, n)]


def missing_function(module, server, functions, name, unavailable=""):
    """What a generated tool module answers for a name it does not define: a "did you mean"
    error; or, when it has no functions at all (its server is not connected, for the reason
    `unavailable`), a function whose call asks the host, which runs it if the server has
    connected since and raises UpstreamUnavailable with the reason if not."""
    if name.startswith("__") or functions:
        raise AttributeError(_no_such_name(f"module {module!r} has no function {name!r}",
                                           name, functions))
    tool = name[:-len("_async")] if name.endswith("_async") else name

    def keywords_only(args):
        # Positional arguments cannot be named without the tool's parameters: the reason the
        # server had no tools comes first (a TypeError about arguments hid it).
        if args:
            why = unavailable or "it was not connected"
            raise ERROR_CLASSES["unavailable"](
                server, tool,
                f"server {server!r} had no tools when this script started: {why}. Its tools' "
                f"parameters are not known here, so {module}.{name}() takes name=value "
                f"arguments only", "unavailable")

    if tool != name:
        async def call_async(*args, **arguments):
            keywords_only(args)
            return await call_tool_async(server, tool, arguments)
        return call_async

    def call(*args, **arguments):
        keywords_only(args)
        return call_tool(server, tool, arguments)
    return call


def _no_such_name(message, name, known):
    import difflib
    # A function's `_async` twin is suggested only for a name asked for with `_async`, and
    # names are compared without the suffix, which every twin shares.
    suffix = "_async" if name.endswith("_async") else ""
    alike = {k.removesuffix(suffix): k for k in known if k.endswith("_async") == bool(suffix)}
    if not alike:
        alike, suffix = {k: k for k in known}, ""
    close = [alike[c] for c in difflib.get_close_matches(
        name.removesuffix(suffix), list(alike), n=3, cutoff=0.6)]
    if close:
        return message + ". Did you mean: " + ", ".join(repr(c) for c in close) + "?"
    shown = [k for k in known if not k.endswith("_async")][:30]
    return message + (f"; it has: {', '.join(shown)}" if shown else "")


class _SourceLoader(importlib.abc.Loader):
    """Loads a generated module from its source text when it is first imported."""

    def __init__(self, source, filename):
        self.source = source
        self.filename = filename

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(compile(self.source, self.filename, "exec"), module.__dict__)


class _GeneratedModules(importlib.abc.MetaPathFinder):
    """Finds the submodules of packages installed by install_modules, compiling them lazily."""

    def __init__(self):
        self.sources = {}
        # Packages whose missing names this finder explains (their own __init__ does not).
        self.explained = set()

    def find_spec(self, fullname, path=None, target=None):
        source = self.sources.get(fullname)
        if source is None:
            package, _, name = fullname.rpartition(".")
            if package not in self.explained:
                return None
            # `from mcp_tools import github` would otherwise end in Python's bare "cannot import
            # name"; a ModuleNotFoundError naming another module is passed on as it is.
            known = sorted(n[len(package) + 1:] for n in self.sources if n.startswith(package + "."))
            raise ModuleNotFoundError(
                _no_such_name(f"module {package!r} has no module {name!r}", name, known))
        loader = _SourceLoader(source, f"<codemode:{fullname}>")
        return importlib.util.spec_from_loader(fullname, loader)


_generated = _GeneratedModules()
sys.meta_path.insert(0, _generated)


def install_modules(package, sources):
    """Creates package 'package' whose submodules (name -> Python source) compile on first import."""
    # Replaces whatever an earlier install (prepare) left for this package.
    for name in [n for n in _generated.sources if n.startswith(package + ".")]:
        del _generated.sources[name]
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
    pkg = types.ModuleType(package)
    pkg.__path__ = []
    modules = sorted(n for n in sources if n != "__init__")
    # A star import takes no module named like a builtin (a server called `open`).
    pkg.__all__ = star_names(modules)
    sys.modules[package] = pkg
    if "__init__" in sources:
        exec(compile(sources["__init__"], f"<codemode:{package}>", "exec"), pkg.__dict__)
    for name, source in sources.items():
        if name != "__init__":
            _generated.sources[f"{package}.{name}"] = source

    def __getattr__(name):
        if f"{package}.{name}" in _generated.sources:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(
            _no_such_name(f"module {package!r} has no attribute {name!r}", name, modules))

    def __dir__():
        return sorted(set(pkg.__dict__) | set(modules))

    if "__getattr__" not in pkg.__dict__:  # a package's own __init__ may resolve names itself
        pkg.__getattr__ = __getattr__
        pkg.__dir__ = __dir__
        _generated.explained.add(package)
    else:
        _generated.explained.discard(package)


def prepare(request_json):
    """Installs packages ahead of the script (while the sandbox waits in the pool)."""
    for package, sources in _loads(request_json)["packages"].items():
        install_modules(package, sources)


_session_scope = None
# True from the settle run until a script runs: outputs/ is then an empty folder (the host
# refuses input files under it), so a fresh sandbox's script need not look, which costs three
# file-system calls through JavaScript (about 0.25 ms of a warm call).
_outputs_empty = False


_interrupted_waiting = False
# An interrupt that found Python waiting and has not been raised in the script yet: raised by
# the next blocking wait that returns, once (one interrupt, one KeyboardInterrupt, so a script
# that catches it can still sleep or call a tool while it cleans up).
_interrupt_pending = False


# Whether the script is suspended in a blocking wait (see _on_interrupt).
_in_blocking_wait = False


def _wait_interruptibly(wait):
    """Runs a blocking wait of the script (a tool call, a sleep) and returns what it returns.
    An interrupt that found it waiting is raised where it returns, as KeyboardInterrupt (not to
    be taken by `except Exception`), once: whatever the cancelled wait raised, and also when it
    came as the wait ended, before Python resumed, with nothing left to cancel and the
    interrupt buffer cleared (a `while True: time.sleep(0.1)` ran on until it was killed)."""
    global _interrupt_pending, _in_blocking_wait
    outer = _in_blocking_wait
    _in_blocking_wait = True
    try:
        result = wait()
    except BaseException:
        _in_blocking_wait = outer
        if _interrupted_waiting:
            _interrupt_pending = False
            raise KeyboardInterrupt from None
        raise
    _in_blocking_wait = outer
    if _interrupt_pending:
        _interrupt_pending = False
        raise KeyboardInterrupt
    return result


def _on_interrupt(signum, frame):
    """Python's SIGINT handler, which the host's interrupt runs: KeyboardInterrupt where the
    script runs. While the script is suspended in a blocking wait, the Python that runs is the
    event loop's callbacks, the one that resolves the wait among them (Pyodide's
    `_future_helper.set_result`): a KeyboardInterrupt there was dropped with the resolution, and
    the wait never ended, nor the script (1 interrupt in 12 of a `while True: time.sleep(0.1)`,
    half of them with sleeps of 1 ms; the session was then killed). So it waits: the main
    thread, told of the interrupt too, ends the wait (interrupt_waiting_script), or the wait
    raises it as it returns."""
    global _interrupt_pending
    if _in_blocking_wait:
        _interrupt_pending = True
        return
    raise KeyboardInterrupt


def interrupt_waiting_script():
    """The host interrupted the script while it waited (an await, a tool call), when Python
    reads no interrupt: its tasks are cancelled, and `run` reports a KeyboardInterrupt."""
    global _interrupted_waiting, _interrupt_pending
    _interrupted_waiting = _interrupt_pending = True
    for task in asyncio.all_tasks(asyncio.get_event_loop()):
        task.cancel()


def execute(request_json):
    """The sandbox's one job: install changed packages, place the input files, run the code,
    answer in JSON with the files it wrote to outputs/. A persistent session keeps its scope."""
    global _session_scope, _outputs_empty
    request = _loads(request_json)
    for package, sources in (request.get("packages") or {}).items():
        install_modules(package, sources)
    place_files(request.get("files") or [])
    if not _outputs_empty:
        reset_outputs()
    _outputs_empty = False
    scope = started = None
    if request.get("persistent"):
        if _session_scope is None:
            _session_scope = new_scope()
        scope = _session_scope
        started = _host().script_started
    # A session's script may be interrupted (KeyboardInterrupt) from `started` on. The host
    # signals once, and the interrupt may land in this runtime's own code as the script ends:
    # the script is then done, and its answer is made again.
    try:
        outcome = run(request["code"], request["result_bytes"], scope, started)
    except KeyboardInterrupt as exc:
        outcome = {"ok": False, "error": describe_error(exc)}
    try:
        return _answer(outcome, request)
    except KeyboardInterrupt:
        return _answer(outcome, request)


def _answer(outcome, request):
    outcome["outputs"] = collect_outputs(
        request.get("output_files_bytes", 0), request.get("large_outputs_dir"))
    return to_json(outcome)


_WARM_MODULE = """
from typing import Any, Literal
import _codemode as _cm

def f(a: str, *, b: int | None = None) -> Any:
    \"\"\"A function shaped like a generated tool stub.\"\"\"
    return {k: v for k, v in {"a": a, "b": b}.items() if v is not None}

async def f_async(a: str) -> Any:
    return f(a)
"""


def forget_host_paths():
    """The snapshot was made by a process started from a host path, which Python kept as its
    executable and in the environment; a script must not learn it."""
    sys.executable = ""
    sys._base_executable = ""
    sys.orig_argv = [""]
    os.environ.pop("_", None)


def _interruptible_sleep():
    """A session's script interrupted in `time.sleep` gets KeyboardInterrupt, as in a busy
    loop: Pyodide's sleep awaits, and the interrupt (interrupt_waiting_script) cancels what it
    awaits, so the script saw CancelledError and its `except KeyboardInterrupt` never ran. Set
    at each boot: Pyodide installs its sleep when it starts."""
    import time
    sleep = time.sleep
    if getattr(sleep, "_codemode", False):
        return

    def interruptible(secs):
        _wait_interruptibly(lambda: sleep(secs))

    interruptible._codemode = True
    interruptible.__name__ = interruptible.__qualname__ = "sleep"
    interruptible.__module__ = "time"
    interruptible.__doc__ = sleep.__doc__
    time.sleep = interruptible


def warm_up():
    """Runs the execution path once so a booted sandbox answers its first script quickly
    (WebAssembly functions are compiled on first use). Leaves nothing behind."""
    _interruptible_sleep()
    signal.signal(signal.SIGINT, _on_interrupt)
    install_modules("_codemode_warm", {"__init__": "x = 1", "m": _WARM_MODULE})
    run(
        "from _codemode_warm import m\nimport asyncio\nawait asyncio.sleep(0)\n"
        "print('warm')\n[m.f('x', b=2), await m.f_async('y'), {1, 2}, 2.5, None]",
        1000,
    )
    run("x = [1, 2.5, None, 'text']\nprint(x)\nx", 1000)
    run("def g():\n    return 1 / 0\ng()", 1000)
    execute(_dumps({
        "code": "open('outputs/w.txt', 'w').write(open('w_in.txt').read())",
        "files": [{"name": "w_in.txt", "data": "dw=="}],
        "result_bytes": 100,
        "output_files_bytes": 100,
    }))
    os.remove(os.path.join(HOME, "w_in.txt"))
    reset_outputs()
    for name in [n for n in sys.modules if n.startswith("_codemode_warm")]:
        del sys.modules[name]
    for name in [n for n in _generated.sources if n.startswith("_codemode_warm")]:
        del _generated.sources[name]
    linecache.cache.pop(SCRIPT, None)


def settle():
    """The last step before the sandbox says ready. Runs a trivial script once more, after V8 has
    put the optimized eval loop in place (see compilationSettled in worker.ts): the first run
    after that costs about 6 ms more than the ones after it (measured), and that run must not
    be the caller's script. Then freezes the runtime's objects for the cyclic collector."""
    global _outputs_empty
    execute(_dumps({"code": "pass", "result_bytes": 100, "output_files_bytes": 0}))
    linecache.cache.pop(SCRIPT, None)
    _outputs_empty = True
    # The runtime's own objects (about 20,000: modules, classes, functions) live as long as
    # this process, which serves one script: the cyclic collector need never look at them
    # again. Without this, a script's first collection walks them all: the first compile of a
    # 2 KB script took 21 ms, against 12 ms with them frozen (median of 8 fresh sandboxes).
    gc.freeze()


def _frame_visible(frame):
    return not frame.filename.startswith(_HIDDEN_PREFIXES)


_TYPE_NAME = type.__dict__["__name__"]


def _error_type(exc):
    # Read past the class's own metaclass, which a script may give a `__name__` that raises.
    return _TYPE_NAME.__get__(type(exc))


def _one_suggestion(text, message):
    """Python appends its own "Did you mean" to a message that already gives ours: keep ours."""
    if "Did you mean" not in message:
        return text
    import re
    return re.sub(re.escape(message) + r"\. Did you mean: '[^'\n]*'\?", lambda m: message, text)


_DENO_FLAG_HINT = None


def _profile_hint(text):
    """Deno's refusal ends "run again with the --allow-read flag", which neither the script nor
    its caller can do: name what decides instead, the permission profile."""
    global _DENO_FLAG_HINT
    if "run again with the --allow-" not in text:
        return text
    if _DENO_FLAG_HINT is None:
        import re
        _DENO_FLAG_HINT = re.compile(r", run again with the --allow-[a-z-]+ flag")
    return _DENO_FLAG_HINT.sub(
        ": not granted by this sandbox's permission profile (execute_code's `profile` parameter "
        "says what each profile grants)",
        text,
    )


_CALL_MISMATCH = None


def _signature_hint(exc, message):
    """A tool or skill function called with arguments it does not take: Python names the
    function; the script's author (often a model) needs its parameters to put the call right."""
    global _CALL_MISMATCH
    if type(exc) is not TypeError:
        return message
    if _CALL_MISMATCH is None:
        import re
        _CALL_MISMATCH = re.compile(
            r"(\w+)\(\) (?:got an unexpected keyword|got multiple values|missing \d+ required"
            r"|takes (?:from )?\d+ (?:to \d+ )?positional)")
    match = _CALL_MISMATCH.match(message)
    if not match:
        return message
    name = match.group(1)
    found = []
    for module_name in sorted(_generated.sources):
        fn = getattr(sys.modules.get(module_name), "__dict__", {}).get(name)
        if callable(fn) and getattr(fn, "__module__", None) == module_name:
            try:
                signature = inspect.signature(fn).replace(return_annotation=inspect.Signature.empty)
                found.append(f"{module_name}.{name}{signature}")
            except Exception:
                pass
    if not found or len(found) > 3:
        return message
    return f"{message} (it takes: {'; '.join(found)})"


_MAX_DESCRIBED_EXCEPTIONS = 1000


def _hide_internal_frames(te):
    """Keeps the script's frames in `te` and in the exceptions it chains (its cause, the one it
    was raised while handling, a group's members): the standard library's are noise there. Each
    once, without recursion (a script may chain thousands, or in a circle)."""
    pending, seen = [te], set()
    while pending and len(seen) < _MAX_DESCRIBED_EXCEPTIONS:
        te = pending.pop()
        if te is None or id(te) in seen:
            continue
        seen.add(id(te))
        te.stack = traceback.StackSummary.from_list([f for f in te.stack if _frame_visible(f)])
        pending.extend((te.__cause__, te.__context__, *(getattr(te, "exceptions", None) or ())))


_EHOSTUNREACH = 23  # Emscripten's number, which its socket layer gives every connection


def _socket_hint(exc, message):
    """urllib, http.client and socket connect through sockets, which a sandbox does not have:
    "Host is unreachable" would read as a network fault. Follows the exceptions `exc` chains
    (each once: a script may chain them in a circle)."""
    seen = set()
    while isinstance(exc, BaseException) and id(exc) not in seen:
        seen.add(id(exc))
        try:
            if issubclass(type(exc), OSError) and exc.errno == _EHOSTUNREACH:
                return (f"{message} (a sandbox has no sockets: reach the hosts its profile's "
                        "`net` lists with pyodide.http.pyfetch or js.fetch)")
            exc = exc.__cause__ or exc.__context__ or getattr(exc, "reason", None)
        except BaseException:  # a script's exception class may make any attribute raise
            return message
    return message


def _package_hint(exc, message):
    """`import numpy` in a script that did not ask for it: Pyodide has the package, installed
    only when the call names it."""
    if type(exc) is not ModuleNotFoundError or not isinstance(exc.name, str):
        return message
    try:
        import pyodide_js
        package = pyodide_js._api._import_name_to_package_name.get(exc.name.partition(".")[0])
    except Exception:
        return message
    if not isinstance(package, str):
        return message
    return (f"{message} (Pyodide has it, in package {package!r}: pass packages=[{package!r}] "
            "to execute_code, or name it in the script's PEP 723 block)")


def _file_hint(exc, message):
    """A host path the sandbox does not have (`open('/etc/passwd')`): the FileNotFoundError says
    only that there is no such file, which reads as if the host had none. And a PermissionError
    (Emscripten's EACCES is errno 2, which reads as ENOENT) for what the profile does not grant,
    such as writing to a folder it mounts read-only."""
    path = getattr(exc, "filename", None)
    if not isinstance(path, str):
        return message
    if type(exc) is PermissionError:
        return (f"{message} (not granted by this sandbox's permission profile, which may mount "
                "a folder read-only: execute_code's `profile` parameter says what each profile "
                "grants)")
    if type(exc) is FileNotFoundError and path.startswith("/"):
        top = "/" + path.lstrip("/").split("/", 1)[0]
        if not os.path.exists(top):
            return (f"{message} (this sandbox has no {top}: it sees its own files, under "
                    f"{HOME}, and the folders its permission profile mounts, not the host's)")
        # Its own /tmp and /home exist, empty but for its home: a host path under them (a
        # scratch file in /tmp) is none of its files. A folder a profile mounts there exists.
        nearest = os.path.dirname(os.path.normpath(path))
        while not os.path.exists(nearest):
            nearest = os.path.dirname(nearest)
        if nearest in ("/tmp", "/home"):
            return (f"{message} (this sandbox's {nearest} is its own, not the host's: it sees "
                    f"its own files, under {HOME}, and the folders its permission profile "
                    "mounts)")
    return message


def _import_hint(exc, message):
    """A tool module or skill used without its import (a NameError that says only "not
    defined"), and `from skills import x` for a skill that is not there (Python's ImportError
    says only "cannot import name")."""
    name = getattr(exc, "name", None)
    if not isinstance(name, str):
        return message
    sources = _generated.sources
    if type(exc) is NameError and "Did you mean" not in message:
        if f"mcp_tools.{name}" in sources:
            return f"{message} (a tool module: write `from mcp_tools import {name}` first)"
        if f"skills._skill_{name}" in sources:
            return f"{message} (a saved skill: write `from skills import {name}` first)"
    if type(exc) is ImportError and name == "skills" and message.startswith("cannot import name"):
        wanted = getattr(exc, "name_from", None)  # Python 3.12 on
        known = sorted(n[len("skills._skill_"):] for n in sources if n.startswith("skills._skill_"))
        if isinstance(wanted, str):
            return _no_such_name(message, wanted, known) if known else f"{message} (no skills saved)"
    return message


def _await_hint(exc, message):
    """`await server.tool(...)`: the blocking function has run and returned its result, which
    Python then cannot await; the message says only that a dict can't be awaited. The same in
    `asyncio.gather(server.tool(...), ...)`, where it says "unhashable type: 'dict'". And the
    other way round, `server.tool_async(...)["key"]` without `await`: "'coroutine' object is not
    subscriptable"."""
    if type(exc) is not TypeError:
        return message
    if "can't be awaited" in message or "can't be used in 'await'" in message:
        return (f"{message} (a tool function such as server.tool(...) returns its result, and "
                "has run by then: drop the await, or await its _async twin, "
                "await server.tool_async(...))")
    if "'coroutine' object" in message:
        return (f"{message} (a tool's _async twin, server.tool_async(...), returns a coroutine "
                "to await: write `await` before the call, or call server.tool(...), which "
                "returns the result)")
    if _raised_in(exc, "gather"):
        return (f"{message} (asyncio.gather takes awaitables, and a tool function such as "
                "server.tool(...) has run and returned its result by then: gather the _async "
                "twins, asyncio.gather(server.tool_async(...), ...))")
    return message


def _raised_in(exc, function):
    """Whether `exc` was raised inside asyncio's `function` (its traceback passes there)."""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == function and "asyncio" in code.co_filename:
            return True
        tb = tb.tb_next
    return False


def describe_error(exc):
    """Error type, message, traceback without internal frames, and line number. Whatever the
    script's exception does (a `__str__` that raises, chains in a circle), an answer: the
    sandbox must not die describing it."""
    try:
        return _describe_error(exc)
    except BaseException as failed:  # a script's __str__ may raise SystemExit, even
        return {
            "error_type": _error_type(exc),
            "message": f"(the error could not be described: {_error_type(failed)})",
            "traceback": "",
            "lineno": None,
        }


def _safe_str(exc):
    try:
        return str(exc)
    except BaseException:
        return "<exception str() failed>"


def _describe_error(exc):
    te = traceback.TracebackException.from_exception(exc, limit=-40)
    _hide_internal_frames(te)
    lineno = None
    if issubclass(type(exc), SyntaxError) and exc.filename == SCRIPT:
        lineno = exc.lineno
    else:
        for frame in te.stack:
            if frame.filename == SCRIPT:
                lineno = frame.lineno
    message = said = _safe_str(exc)
    if issubclass(type(exc), (ImportError, NameError)) and "Did you mean" not in message:
        # Python puts its "Did you mean" suggestion in the traceback's last line only.
        last = "".join(te.format_exception_only()).strip().splitlines()[-1:]
        if last and "Did you mean" in last[0]:
            message = last[0].split(": ", 1)[-1]
    text = _one_suggestion("".join(te.format()), said)
    hinted = _signature_hint(exc, message)
    for hint in (_socket_hint, _await_hint, _package_hint, _import_hint, _file_hint):
        hinted = hint(exc, hinted)
    if hinted != message and hinted.startswith(message):
        # Said where the traceback ends too: that is what a client shows.
        suffix = hinted[len(message):]
        head, sep, tail = text.rpartition(message) if message else ("", "", text)
        text = head + sep + suffix + tail if sep else text.rstrip("\n") + suffix + "\n"
        message = hinted
    return {
        "error_type": _error_type(exc),
        "message": _profile_hint(message),
        "traceback": _profile_hint(text),
        "lineno": lineno,
    }


_EXACT_INTS = 2**53


def exact_ints(value):
    """The value with integers that a JSON reader would round (beyond 2**53) as digit strings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -_EXACT_INTS < value < _EXACT_INTS else str(value)
    if isinstance(value, (list, tuple)):
        return [exact_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: exact_ints(v) for k, v in value.items()}
    return value


def json_safe(value, limit):
    """(value, cut): the value if it survives a JSON round trip (and fits 'limit' bytes), else
    its repr, cut to the limit when it does not fit (then `cut` is True). Integers beyond 2**53
    come back as strings of their digits, not rounded floats."""
    if value is None:
        return None, False
    try:
        text = _dumps(value, allow_nan=False, ensure_ascii=False)
        value = exact_ints(value)
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is not None and _utf16_length(text) <= limit:
        return value, False
    shown = repr(value)
    if _json_length(shown) <= limit:
        return shown, False
    # Cut so that the result, as the JSON the host measures, fits: the host would cut it again.
    # The longest start that fits, found by halving (a character may take 1 to 6 units).
    marker = f"... [result truncated: {len(shown)} chars, limit {limit}]"
    low, high = 0, min(len(shown), limit)
    while low < high:
        middle = (low + high + 1) // 2
        if _json_length(shown[:middle] + marker) <= limit:
            low = middle
        else:
            high = middle - 1
    return shown[:low] + marker, True


def _json_length(text):
    """The length of `text` as a JSON string, as the host counts it (JSON.stringify: only
    quotes, backslashes and control characters escaped; UTF-16 units)."""
    return _utf16_length(_dumps(text, ensure_ascii=False))


def _utf16_length(text):
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def new_scope():
    return {"__name__": "__main__", "__builtins__": builtins}


def compile_script(code):
    """The script as (body, last): code objects for its statements and, when it ends with an
    expression statement, for that expression (else None), whose value is the result.

    What Pyodide's CodeRunner does with return_mode "last_expr" (the source dedented; a last
    expression followed by a semicolon gives no result), without its extra passes: it tokenizes
    the whole script again to find that semicolon, deep-copies a template tree and walks the
    whole tree to fix locations. Those passes took over half the time: compiling a 2 KB script
    in a sandbox took 21 ms with CodeRunner and 8.5 ms this way (measured, median of 30).
    """
    code = _dedent(code)
    tree = compile(code, SCRIPT, "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr) or _semicolon_after(code, last):
        return compile(tree, SCRIPT, "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), None
    tree.body.pop()
    body = compile(tree, SCRIPT, "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT) if tree.body else None
    value = compile(ast.Expression(last.value), SCRIPT, "eval", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    return body, value


def _semicolon_after(code, statement):
    """Whether a semicolon follows the statement (after it come only blanks, semicolons and a
    comment). Lines as the parser counts them (str.splitlines also splits at form feeds and
    other separators a string literal may hold); columns in UTF-8 bytes."""
    lines = code.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    line = lines[statement.end_lineno - 1].encode()
    return line[statement.end_col_offset:].lstrip().startswith(b";")


def _evaluate(compiled, scope):
    """Runs one code object of the script in its scope, awaiting it if it used top-level await."""
    if compiled is None:
        return None
    if compiled.co_flags & inspect.CO_COROUTINE:
        return run_sync(eval(compiled, scope))
    return eval(compiled, scope)


def run(code, result_limit, scope=None, started=None):
    """Runs a script; returns {ok, result} or {ok: false, error}.

    Called with JSPI enabled (PyProxy.callPromising), so tool calls and top-level await can
    suspend Python while JavaScript waits; a script without await never touches the event loop.
    A persistent session passes the same scope every time, and `started`, called as the script
    starts, after which an interrupt counts as the script's.
    """
    linecache.cache[SCRIPT] = (len(code), None, code.splitlines(True), SCRIPT)
    if scope is None:
        scope = new_scope()
    global _interrupted_waiting, _interrupt_pending
    _interrupted_waiting = _interrupt_pending = False
    try:
        if started is not None:
            started()
        body, last = compile_script(code)
        _evaluate(body, scope)
        value = _evaluate(last, scope)
        if inspect.iscoroutine(value):
            value.close()  # never run: a result would read as if it had
            raise TypeError(_NOT_AWAITED.format(getattr(value, "__qualname__", "?")))
        result, cut = json_safe(value, result_limit)
        outcome = {"ok": True, "result": result}
        if cut:
            outcome["result_cut"] = True
    except BaseException as exc:
        if _interrupted_waiting:
            # Interrupted while it waited (interrupt_waiting_script), whatever that raised.
            exc = KeyboardInterrupt()
        if _clean_exit(exc):
            outcome = {"ok": True, "result": None}
        else:
            outcome = {"ok": False, "error": describe_error(exc)}
    sys.stdout.flush()
    sys.stderr.flush()
    return outcome


_NOT_AWAITED = ("the script ends with a coroutine, {}(), that was never awaited, so it did not "
                "run: write `await` before the call")


def _clean_exit(exc):
    """`sys.exit()`, `sys.exit(0)` (or False): a success. Only built-in codes count, so no
    script's `__eq__` runs here."""
    if not issubclass(type(exc), SystemExit):
        return False
    try:
        code = exc.code
    except BaseException:
        return False
    return code is None or (type(code) in (int, bool) and code == 0)


def to_json(outcome):
    try:
        return _dumps(outcome)
    except (TypeError, ValueError):
        outcome["result"] = repr(outcome.get("result"))
        return _dumps(outcome)


HOME = "/home/pyodide"
OUTPUTS = HOME + "/outputs"


def place_files(files):
    """Writes the caller's input files (names already checked by the host) under HOME."""
    for f in files:
        path = os.path.join(HOME, f["name"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(f["data"]))


def reset_outputs():
    """Leaves outputs/ an empty folder, whatever the last script of a session made of it."""
    if os.path.islink(OUTPUTS) or os.path.isfile(OUTPUTS):
        os.remove(OUTPUTS)
    elif _empty_folder(OUTPUTS):
        return  # as warm-up leaves it, for a fresh sandbox's script: nothing to remove
    else:
        shutil.rmtree(OUTPUTS, ignore_errors=True)
    os.makedirs(OUTPUTS, exist_ok=True)


def _empty_folder(path):
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def collect_outputs(limit_bytes, spill_dir=None, limit_files=50):
    """Files the script wrote to outputs/, base64, within the limits. Files beyond them are
    moved to spill_dir (a writable host folder) when there is one, else listed as omitted."""
    found, total = [], 0
    if _empty_folder(OUTPUTS):
        return found
    for root, _dirs, names in os.walk(OUTPUTS):
        for name in sorted(names):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, OUTPUTS)
            size = os.path.getsize(path)
            if len(found) >= limit_files or total + size > limit_bytes:
                entry = {"name": rel, "size": size, "omitted": True}
                if spill_dir:
                    target = os.path.join(spill_dir, rel)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    shutil.copyfile(path, target)
                    entry["saved_to"] = target
                found.append(entry)
                continue
            with open(path, "rb") as fh:
                data = fh.read()
            total += size
            found.append({"name": rel, "size": size, "data": base64.b64encode(data).decode()})
    return found
