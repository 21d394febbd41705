/**
 * `deno task mutants`: a test that cannot fail protects nothing. Each mutation below breaks one
 * line of security-relevant code the way a careless change would; the tests named with it must
 * then fail. Runs in a copy of the checkout (the working tree is never touched), one mutation at
 * a time, and prints which mutations survived. Exit code 1 when any survived or went stale.
 *
 *   deno task mutants [--only SUBSTRING]...
 */
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath as fromFileUrl } from "node:url";
import { writeAllSync } from "../src/_util/write_all.ts";

interface Mutation {
  /** What the mutation breaks, in words. */
  name: string;
  file: string;
  /** Exact text, found exactly once in `file`. */
  from: string;
  to: string;
  /** Test files (and an optional --filter) that must catch it. */
  tests: string[];
  filter?: string;
}

const MUTATIONS: Mutation[] = [
  // Approvals
  {
    name: "the approve globs never ask",
    file: "src/policy/tool_policy.ts",
    from: "needsApproval: isToolAllowed(server, tool, policy.approve)",
    to: "needsApproval: false",
    tests: ["tests/policy_test.ts"],
  },
  {
    name: "a declined approval still runs the call",
    file: "src/execution/tool_gate.ts",
    from: 'if (record.approval !== "approved") {',
    to: 'if (record.approval === "unavailable") {',
    tests: ["tests/approvals_test.ts"],
  },
  {
    name: "a 2026-07-28 round approves whatever its answer says",
    file: "src/host/approvals.ts",
    from: "parked.pending.answer(readElicitAnswer(ctx.mcpReq.inputResponses?.approval));",
    to: 'parked.pending.answer("approved");',
    tests: ["tests/approvals_test.ts"],
  },
  // Tasks
  {
    name: "a task answers any caller",
    file: "src/host/tasks.ts",
    from: "return task && task.owner === owner ? task : undefined;",
    to: "return task;",
    tests: ["tests/tasks_test.ts"],
    filter: "only to its owner",
  },
  {
    name: "cancelling a task leaves its sandbox running",
    file: "src/host/tasks.ts",
    from: "known(taskId).abort.abort();",
    to: "known(taskId);",
    tests: ["tests/tasks_test.ts"],
    filter: "cancelling",
  },
  {
    name: "a stateless 2025-11-25 cancel is ignored",
    file: "src/host/stateless_legacy.ts",
    from: "if (stops?.size === 1) { for (const stop of stops) stop.abort(); }",
    to: "if (stops?.size === 1) { for (const _ of stops) continue; }",
    tests: ["tests/generations_test.ts"],
    filter: "v1 client (2025-11-25) over stateless",
  },
  {
    name: "a stateless client's answers are routed by the ids each fresh server reuses",
    file: "src/host/stateless_legacy.ts",
    from: "const routed = `r_${crypto.randomUUID()}`;",
    to: "const routed = String(message.id);",
    tests: ["tests/stateless_legacy_test.ts"],
  },
  {
    name: "a stateless client's answer is never routed back",
    file: "src/host/stateless_legacy.ts",
    from: "asked.transport.onmessage?.({ ...answer, id: asked.id } as JSONRPCMessage);",
    to: "void asked;",
    tests: ["tests/stateless_legacy_test.ts"],
  },
  // Profile -> Deno flags
  {
    name: "read-only folders become writable",
    file: "src/sandbox/profile.ts",
    from: 'profile.folders.filter((f) => f.mode === "rw").map((f) => f.host)',
    to: "profile.folders.map((f) => f.host)",
    tests: ["tests/profile_test.ts"],
    filter: "toDenoFlags",
  },
  {
    name: "the network grant ignores the profile's list",
    file: "src/sandbox/profile.ts",
    from: 'flags.push(`--allow-net=${unique(profile.net).join(",")}`)',
    to: 'flags.push("--allow-net")',
    tests: ["tests/profile_test.ts"],
    filter: "toDenoFlags",
  },
  // Refusals at load
  {
    name: "the root folder may be granted",
    file: "src/sandbox/profile.ts",
    from: 'if (host === "/") throw',
    to: 'if (host === "//") throw',
    tests: ["tests/profile_test.ts"],
    filter: "resolveProfile",
  },
  {
    name: "folders holding escaping symlinks load",
    file: "src/sandbox/profile.ts",
    from: "if (escaping) throw new FolderCheckError(",
    to: "if (false) throw new FolderCheckError(",
    tests: ["tests/profile_test.ts", "tests/profiles_test.ts"],
    filter: "refuses",
  },
  {
    name: "write access over trusted paths loads",
    file: "src/sandbox/profile.ts",
    from: 'if (mode === "rw" && overlaps(host, guarded)) {',
    to: 'if (mode === "rw" && false) {',
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "a folder that holds a trusted file is not an overlap",
    file: "src/policy/trusted_paths.ts",
    from: "if (isInside(trusted.path, folder)) return true;",
    to: "if (false) return true;",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "the config file is not protected",
    file: "src/policy/trusted_paths.ts",
    from: '{ path: inputs.configPath, what: "the config file" },',
    to: "",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "hard links in a granted folder go unnoticed",
    file: "src/config/config.ts",
    from: "if ((nlink ?? 1) <= 1) continue;",
    to: "continue;",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "a file hard-linked outside the folder goes unnoticed when another name is inside",
    file: "src/config/config.ts",
    from: "find((file) => file.found < file.links)",
    to: "find((file) => file.found < 2)",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "any hard link refuses the folder, even one a sandbox made inside it",
    file: "src/config/config.ts",
    from: "find((file) => file.found < file.links)",
    to: "find((file) => file.links > 1)",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "a server's working folder is not protected",
    file: "src/policy/trusted_paths.ts",
    from: "path: server.cwd,",
    to: 'path: "/nonexistent-cwd",',
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "only a server's script file is protected, not the modules beside it",
    file: "src/policy/trusted_paths.ts",
    from: "path: SCRIPT.test(token) || isFile(path) ? dirname(path) : path,",
    to: "path,",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "a file a server is given, of an extension not listed, is protected without its folder",
    file: "src/policy/trusted_paths.ts",
    from: "path: SCRIPT.test(token) || isFile(path) ? dirname(path) : path,",
    to: "path: SCRIPT.test(token) ? dirname(path) : path,",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "loadConfig never tells a file from a folder",
    file: "src/config/config.ts",
    from: "return Deno.statSync(path).isFile;",
    to: "return false;",
    tests: ["tests/trusted_paths_test.ts"],
  },
  // Tool policy
  {
    name: "one call past the limit is allowed",
    file: "src/policy/tool_policy.ts",
    from: "if (callsSoFar >= policy.tool_calls) {",
    to: "if (callsSoFar > policy.tool_calls) {",
    tests: ["tests/policy_test.ts"],
    filter: "enforced on the host",
  },
  {
    name: "globs match anywhere in the name",
    file: "src/policy/tool_policy.ts",
    from: 'return new RegExp(`^${body}$`, "s");',
    to: 'return new RegExp(body, "s");',
    tests: ["tests/policy_test.ts"],
    filter: "isToolAllowed",
  },
  // Redaction
  {
    name: "short secrets are accepted",
    file: "src/policy/redaction.ts",
    from: "if (length < MIN_SECRET_LENGTH) {",
    to: "if (length < 2) {",
    tests: ["tests/redaction_test.ts", "tests/config_test.ts"],
  },
  {
    name: "base64 forms are not scrubbed",
    file: "src/policy/redaction.ts",
    from: "...base64Forms(bytes, BASE64),",
    to: "",
    tests: ["tests/redaction_test.ts"],
  },
  {
    name: "JSON-escaped forms are not scrubbed",
    file: "src/policy/redaction.ts",
    from: "const escaped = JSON.stringify(secret).slice(1, -1);",
    to: "const escaped = secret;",
    tests: ["tests/redaction_test.ts"],
  },
  {
    name: "tool descriptions reach the catalog unscrubbed",
    file: "src/upstream/tool_catalog.ts",
    from: "new Catalog(this.#redact.json(this.#snapshot()), {",
    to: "new Catalog(this.#snapshot(), {",
    tests: ["tests/secret_surfaces_test.ts"],
  },
  // Limits, enforced from outside the sandbox
  {
    name: "the memory limit is a hundred times higher",
    file: "src/sandbox/launcher.ts",
    from: "resident > limitBytes &&",
    to: "resident > limitBytes * 100 &&",
    tests: ["tests/isolation_test.ts"],
    filter: "hostile scripts",
  },
  {
    name: "output past the cap does not stop the sandbox",
    file: "src/sandbox/launcher.ts",
    from: "if (buffer.overflowed) {",
    to: "if (false) {",
    tests: ["tests/isolation_test.ts"],
    filter: "hostile scripts",
  },
  {
    name: "a timeout is reported as a cancellation",
    file: "src/sandbox/launcher.ts",
    from: 'this.#halt("TIMEOUT", overtime)',
    to: 'this.#halt("CANCELLED", overtime)',
    tests: ["tests/isolation_test.ts"],
    filter: "hostile scripts",
  },
  {
    name: "protocol floods never stop the sandbox",
    file: "src/sandbox/launcher.ts",
    from: "} else if (this.#violations.length > MAX_VIOLATIONS) {",
    to: "} else if (false) {",
    tests: ["tests/host_facts_test.ts"],
    filter: "floods",
  },
  {
    name: "an idle session keeps running",
    file: "src/sandbox/launcher.ts",
    from: "else if (!this.#stop) this.#pause();",
    to: "else if (false) this.#pause();",
    tests: ["tests/session_idle_test.ts"],
  },
  {
    name: "lone \\r line breaks do not count as lines",
    file: "src/policy/code_size.ts",
    from: '"").split(/\\r\\n|\\r|\\n/).length',
    to: '"").split("\\n").length',
    tests: ["tests/small_promises_test.ts"],
  },
  {
    name: "an input file may be named outputs",
    file: "src/policy/input_files.ts",
    from: 'name === "outputs" || name.startsWith("outputs/")',
    to: 'name.startsWith("outputs/")',
    tests: ["tests/small_promises_test.ts"],
  },
  {
    name: "package names are not checked before I/O",
    file: "src/packages/package_sources.ts",
    from: "const invalid = names.filter((name) => !isPackageName(name));",
    to: "const invalid: string[] = [];",
    tests: ["tests/packages_test.ts"],
    filter: "package index",
  },
  {
    name: "a downloaded Pyodide package is not checked against the lock",
    file: "src/packages/pyodide_distribution.ts",
    from: "    await requireLockChecksum(bytes, entry);\n    await Deno.mkdir",
    to: "    await Deno.mkdir",
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "loopback mirror",
  },
  {
    name: "a Pyodide package read from a folder or the cache is not checked",
    file: "src/packages/pyodide_distribution.ts",
    from: "    await requireLockChecksum(bytes, entry);\n    return this.#remember",
    to: "    return this.#remember",
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "mirror folder",
  },
  {
    name: "Pyodide's packages are downloaded whatever the profile's net",
    file: "src/packages/pyodide_distribution.ts",
    from: "if (!hostAllowed(url, allowedHosts)) {",
    to: "if (false) {",
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "loopback mirror",
  },
  {
    name: "a mirror's lock for another Pyodide is used",
    file: "src/packages/pyodide_distribution.ts",
    from: "const mismatch = lockMismatch(lock.info, pinnedLock.info);",
    to: "const mismatch = null;",
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "failures of a source",
  },
  {
    name: "a wheel for another platform is installed",
    file: "src/packages/wheels.ts",
    from: 'if (!wheel.platform.split(".").some((tag) => platforms.includes(tag))) {',
    to: "if (false) {",
    tests: ["tests/pyodide_packages_test.ts"],
  },
  {
    name: "a lock's file name may be a path",
    file: "src/packages/pyodide_lock.ts",
    from: "if (!/^[A-Za-z0-9][A-Za-z0-9._+-]*$/.test(fileName)) {",
    to: "if (false) {",
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "file name that is a path",
  },
  {
    name: "the preloaded packages' folder is writable by scripts",
    file: "src/sandbox/sandbox_command.ts",
    from: "...preload.map((p) => p.host)];",
    to:
      '...preload.map((p) => p.host)];\n    profile = { ...profile, folders: [...profile.folders, ...preload.map((p) => ({ host: p.host, mount: `${p.mount}-w`, mode: "rw" as const }))] };',
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "preloaded packages are in its snapshot",
  },
  {
    name: "compiled packages may be preloaded",
    file: "src/packages/preload_check.ts",
    from: "if (compiled.length === 0) return null;",
    to: "return null;",
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "preloadRefusal",
  },
  {
    name: "a dependency's name from a lock is not checked",
    file: "src/packages/package_sources.ts",
    from: "if (!isPackageName(name)) {\n        problems.push(",
    to: "if (false) {\n        problems.push(",
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "dependency names",
  },
  {
    name: "a wheel file name may be a path",
    file: "src/packages/wheels.ts",
    from:
      "if (!/^[A-Za-z0-9][A-Za-z0-9._+!-]*\\.whl$/.test(file) || file.length > 255) return null;",
    to: "",
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "link's text",
  },
  {
    name: "an index link without a sha256 is trusted",
    file: "src/packages/package_sources.ts",
    from: "if (!expected) throw new Error(`the package index gives no sha256 for ${file}`);",
    to: "",
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "without a sha256",
  },
  {
    name: "METADATA is inflated without a cap",
    file: "src/packages/wheel_metadata.ts",
    from: "const text = await readAtMost(inflated, MAX_METADATA_BYTES);",
    to: "const text = await readAtMost(inflated, Infinity);",
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "METADATA bomb",
  },
  {
    name: "downloads are read whole, however large",
    file: "src/_util/bytes.ts",
    from: "if (size > maxBytes) return null;",
    to: "if (false) return null;",
    tests: ["tests/pyodide_packages_test.ts"],
    filter: "giant and slow",
  },
  {
    name: "the script runs on while a person decides",
    file: "src/sandbox/launcher.ts",
    from: "if (deciding++ === 0) this.#pause();",
    to: "deciding++;",
    tests: ["tests/approvals_test.ts"],
    filter: "2025-11-25",
  },
  {
    name: "a question shows arguments cut at a length",
    file: "src/execution/approval.ts",
    from: "return value.length > SHOWN_LIMITS.stringChars",
    to: "return false",
    tests: ["tests/approval_message_test.ts"],
  },
  {
    name: "an unanswered script is asked again and again",
    file: "src/execution/tool_gate.ts",
    from: 'if (record.approval === "timed_out") this.#unanswered = true;',
    to: "",
    tests: ["tests/approvals_test.ts"],
    filter: "2026-07-28",
  },
  // Calls given up on
  {
    name: "a call still running after its script ended is never cancelled upstream",
    file: "src/execution/tool_gate.ts",
    from: 'this.#abandon.abort(new Error("the script has ended"));',
    to: "",
    tests: ["tests/execution_stages_test.ts", "tests/upstream_dynamic_test.ts"],
  },
  {
    name: "a cancelled execution's calls run on through the grace",
    file: "src/execution/executor.ts",
    from: "await gate.close(ended ? 0 : PENDING_CALLS_GRACE_MS, options.signal);",
    to: "await gate.close(ended ? 0 : PENDING_CALLS_GRACE_MS);",
    tests: ["tests/upstream_dynamic_test.ts"],
  },
  {
    name: "a script the host stopped keeps its calls running through the grace",
    file: "src/execution/executor.ts",
    from: "const ended = outcome?.interrupted || outcome?.stop;",
    to: "const ended = outcome?.interrupted;",
    tests: ["tests/upstream_dynamic_test.ts"],
  },
  {
    name: "a cancellation during the grace waits the grace out",
    file: "src/execution/tool_gate.ts",
    from: "Promise.race([Promise.allSettled([...this.#inFlight]), abortOf(cancelled)]),",
    to: "Promise.allSettled([...this.#inFlight]),",
    tests: ["tests/execution_stages_test.ts"],
    filter: "during the grace",
  },
  {
    name: "a question still open when the script ends is never withdrawn",
    file: "src/execution/tool_gate.ts",
    from: "record.approval = await ask(question, this.#ended.signal)",
    to: "record.approval = await ask(question, new AbortController().signal)",
    tests: ["tests/execution_stages_test.ts"],
    filter: "withdraws a question",
  },
  {
    name: "a withdrawn question's elicitation stays open on the client",
    file: "src/host/approvals.ts",
    from: "const signal = AbortSignal.any([ctx.mcpReq.signal, withdrawn]);",
    to: "const signal = ctx.mcpReq.signal;",
    tests: ["tests/approvals_test.ts"],
    filter: "take a question back",
  },
  {
    name: "a withdrawn 2026-07-28 question is still handed to a round",
    file: "src/host/approvals.ts",
    from: "if (waiting >= 0) this.#questions.splice(waiting, 1);",
    to: "",
    tests: ["tests/approvals_test.ts"],
    filter: "take a question back",
  },
  {
    name: "closing a busy session reads as a crash",
    file: "src/sandbox/sessions.ts",
    from: 'session.sandbox.stop("CANCELLED", `Execution stopped: ${why}`);',
    to: "",
    tests: ["tests/sessions_files_test.ts"],
    filter: "persistent sessions",
  },
  {
    name: "a session closed while it starts reads as a crash",
    file: "src/sandbox/sessions.ts",
    from: "if (session.closedBecause) {",
    to: "if (false) {",
    tests: ["tests/sessions_unit_test.ts"],
    filter: "closed while it starts",
  },
  {
    name: "a session closed while it starts is not mapped to CANCELLED",
    file: "src/execution/sandbox_lease.ts",
    from: 'if (error instanceof SessionClosedError) return { outcome: "CANCELLED", message };',
    to: "",
    tests: ["tests/execution_stages_test.ts"],
    filter: "maps why",
  },
  {
    name: "a task waits for the answer to a question its script withdrew",
    file: "src/host/tasks.ts",
    from: "void call.serving.questionSettled?.(state)?.then(unanswered);",
    to: "",
    tests: ["tests/tasks_test.ts"],
    filter: "withdrawn because",
  },
  {
    name: "a session's interrupt is not sent again once its script starts (it is lost)",
    file: "src/sandbox/launcher.ts",
    from: "if (this.#interrupted && !this.#stop) this.#signalInterrupt();",
    to: "",
    tests: ["tests/sessions_files_test.ts"],
    filter: "persistent sessions",
  },
  {
    name: "a session's sandbox never says its script started",
    file: "src/sandbox/prelude.py",
    from: "started = _host().script_started",
    to: "started = None",
    tests: ["tests/sessions_files_test.ts"],
    filter: "persistent sessions",
  },
  {
    name: "an answer after the script ended wakes the frozen session",
    file: "src/sandbox/launcher.ts",
    from: "if (--deciding === 0 && running && !this.#stop) this.#resume();",
    to: "if (--deciding === 0 && !this.#stop) this.#resume();",
    tests: ["tests/session_idle_test.ts"],
    filter: "after its script ended",
  },
  {
    name: "the audit log leaves out how a person answered",
    file: "src/execution/audit_log.ts",
    from: "...(approval ? { approval } : {}),",
    to: "",
    tests: ["tests/audit_test.ts"],
    filter: "approval",
  },
  // Concurrency caps
  {
    name: "a call over the cap runs at once",
    file: "src/host/concurrency.ts",
    from: "if (this.#running < this.max) {",
    to: "if (true) {",
    tests: ["tests/concurrency_test.ts"],
  },
  {
    name: "a waiter cancelled by its client still runs",
    file: "src/host/concurrency.ts",
    from: "        this.#waiting = this.#waiting.filter((w) => w !== waiter);\n",
    to: "",
    tests: ["tests/concurrency_test.ts"],
  },
  // Parsing of what the sandbox sends
  {
    name: "output file names may climb out with ..",
    file: "src/rpc/sandbox_protocol.ts",
    from: 'name.split("/").every((part) => part !== "." && part !== "..")',
    to: "true",
    tests: ["tests/host_facts_test.ts"],
    filter: "parseOutputs",
  },
  {
    name: "the sandbox says where large outputs were saved",
    file: "src/rpc/sandbox_protocol.ts",
    from: "saved_to: `${savedIn}/${f.name}`",
    to: "saved_to: f.saved_to as string",
    tests: ["tests/host_facts_test.ts"],
    filter: "parseOutputs",
  },
  {
    name: "any text is taken as an exception's name",
    file: "src/rpc/sandbox_protocol.ts",
    from: "PYTHON_NAME.test(e.error_type)",
    to: "true",
    tests: ["tests/host_facts_test.ts"],
    filter: "cannot forge",
  },
  {
    name: "a crash quotes the sandbox's stderr as fact",
    file: "src/sandbox/launcher.ts",
    from: "its last words on stderr (unverified)",
    to: "its last words on stderr",
    tests: ["tests/host_facts_test.ts"],
    filter: "cannot forge",
  },
  {
    name: "a script may claim a host outcome",
    file: "src/execution/outcomes.ts",
    from: 'return isHostOutcome(name) ? "ScriptError" : name;',
    to: "return name;",
    tests: ["tests/host_facts_test.ts"],
    filter: "cannot forge",
  },
  {
    name: "a script's own ToolDenied becomes TOOL_DENIED",
    file: "src/execution/result_mapping.ts",
    from: 'const deniedCall = calls.find((c) => c.outcome === "denied");',
    to:
      'const deniedCall = { server: "s", tool: "t", error: "x", ...calls.find(() => true) } as ToolCallRecord;',
    tests: ["tests/host_facts_test.ts"],
    filter: "cannot forge",
  },
  {
    name: "request ids are guessable",
    file: "src/rpc/channel.ts",
    from: "const id = crypto.randomUUID();",
    to: "const id = String(this.#pending.size + 2);",
    tests: ["tests/host_facts_test.ts"],
    filter: "cannot forge",
  },
  {
    name: "calls still running at the end are not waited for",
    file: "src/execution/executor.ts",
    from: "await gate.close(ended ? 0 : PENDING_CALLS_GRACE_MS, options.signal);",
    to: "",
    tests: ["tests/host_facts_test.ts"],
    filter: "still running",
  },
  // What a sandbox can reach on the host
  {
    name: "sandboxes share a writable Deno cache folder",
    file: "src/sandbox/sandbox_command.ts",
    from: 'export const SANDBOX_DENO_DIR = "/dev/null/mcp-code-mode-sandbox";',
    to: 'export const SANDBOX_DENO_DIR = "/tmp/mcp-code-mode-mutant-deno-dir";',
    tests: ["tests/sandbox_traces_test.ts"],
    filter: "survives",
  },
  {
    name: "host paths are not hidden from the script",
    file: "src/sandbox/worker.ts",
    from: "  hideHostPaths();\n",
    to: "\n",
    tests: ["tests/sandbox_traces_test.ts"],
    filter: "no host path",
  },
  {
    name: "files a script writes become world-writable on the host",
    file: "src/sandbox/worker.ts",
    from: "    maskSharedModes(pyodide);\n",
    to: "\n",
    tests: ["tests/profiles_test.ts"],
    filter: "exactly",
  },
  {
    name: "Python keeps the snapshot builder's path",
    file: "src/sandbox/worker.ts",
    from: "  codemode.forget_host_paths!();\n",
    to: "\n",
    tests: ["tests/sandbox_traces_test.ts"],
    filter: "no host path",
  },
  {
    name: "a claimed saved output is not checked on the host",
    file: "src/execution/result_mapping.ts",
    from: "return stat.isFile ? { ...rest, size: stat.size, saved_to: savedTo } : rest;",
    to: "return { ...rest, saved_to: savedTo };",
    tests: ["tests/host_facts_test.ts"],
    filter: "come from the file",
  },
  {
    name: "a forged ToolDenied's message is taken as the host's",
    file: "src/execution/result_mapping.ts",
    from:
      "message: `${deniedCall.server}.${deniedCall.tool} was denied: ${deniedCall.error}`.slice(",
    to: "message: raised.message.slice(",
    tests: ["tests/host_facts_test.ts"],
    filter: "cannot forge",
  },
  {
    name: "the audit outcome takes the script's exception name",
    file: "src/execution/audit_log.ts",
    from: 'const errorType = diagnostics?.reported_by === "host" ? diagnostics.error_type : null;',
    to: "const errorType = diagnostics?.error_type ?? null;",
    tests: ["tests/audit_test.ts"],
  },
  {
    name: "live output reaches the client unscrubbed",
    file: "src/execution/executor.ts",
    from: "onOutput: live?.write,",
    to: "onOutput: options.onOutput,",
    tests: ["tests/secret_surfaces_test.ts"],
    filter: "reaches no surface",
  },
  {
    name: "a long partial line of live output is sent before its end",
    file: "src/execution/scrubbed_lines.ts",
    from: "held[stream] += text;",
    to:
      'held[stream] += text;\n        if (held[stream].length > 16384) {\n          emit(stream, redact.text(held[stream]));\n          held[stream] = "";\n        }',
    tests: ["tests/secret_surfaces_test.ts"],
    filter: "reaches no surface",
  },
  {
    name: "live output holds back no lines for a secret that spans lines",
    file: "src/execution/scrubbed_lines.ts",
    from: "lastLinesStart(scrubbed, redact.lineBreaks)",
    to: "lastLinesStart(scrubbed, 0)",
    tests: ["tests/scrubbed_lines_test.ts"],
  },
  {
    name: "the redactor counts no line breaks in its secrets",
    file: "src/policy/redaction.ts",
    from: 'const lineBreaks = Math.max(...given.map((s) => s.split("\\n").length - 1));',
    to: "const lineBreaks = 0;",
    tests: ["tests/scrubbed_lines_test.ts"],
  },
  {
    name: "a result nested thousands deep is taken as it is",
    file: "src/execution/result_mapping.ts",
    from: "const deep = depthOver(value, MAX_RESULT_DEPTH);",
    to: "const deep = false;",
    tests: ["tests/audit_test.ts", "tests/deep_results_test.ts"],
  },
  {
    name: "scrubbing walks a value however deep it nests",
    file: "src/policy/redaction.ts",
    from: "if (depth >= MAX_WALKED_DEPTH) return scrubbedJsonText(value, text) as T;",
    to: "",
    tests: ["tests/deep_results_test.ts"],
  },
  {
    name: "a result's text is indented however large that makes it",
    file: "src/execution/execution_result.ts",
    from: "return indented.length <= 2 * compact.length + INDENTED_UP_TO ? indented : compact;",
    to: "return indented;",
    tests: ["tests/deep_results_test.ts"],
  },
  {
    name: "empty output is taken, uncounted",
    file: "src/rpc/sandbox_protocol.ts",
    from: '|| typeof params.text !== "string" || params.text === "") return null;',
    to: '|| typeof params.text !== "string") return null;',
    tests: ["tests/policy_test.ts"],
    filter: "forges protocol",
  },
  {
    name: "a one-shot sandbox's 'started' is taken, uncounted",
    file: "src/sandbox/launcher.ts",
    from: "if (this.#hooks === null || this.#started || !this.persistent) {",
    to: "if (this.#hooks === null || this.#started) {",
    tests: ["tests/policy_test.ts"],
    filter: "forges protocol",
  },
  {
    name: "a folder a script filled past checking stops the whole server again",
    file: "src/config/config.ts",
    from: "if (!(error instanceof FolderCheckError) || !unavailable) throw error;",
    to: "throw error;",
    tests: ["tests/profiles_test.ts", "tests/trusted_paths_test.ts"],
  },
  {
    name: "the restricted server is not told which profiles the launcher found unavailable",
    file: "src/relaunch/restricted_relaunch.ts",
    from:
      "env: { [UNAVAILABLE_PROFILES]: JSON.stringify(Object.fromEntries(unavailableProfiles)) },",
    to: "",
    tests: ["tests/profiles_test.ts"],
    filter: "cannot stop the next start",
  },
  {
    name: "a call naming an unavailable profile is not told why",
    file: "src/execution/request_checks.ts",
    from: "if (unavailable) {",
    to: "if (false) {",
    tests: ["tests/profiles_test.ts"],
    filter: "cannot stop the next start",
  },
  {
    name: "a schema is rendered however many times its parts are named or listed",
    file: "src/catalog/schema_types.ts",
    from: 'if (depth > MAX_DEPTH || --this.#budget < 0) return "Any";',
    to: 'if (depth > MAX_DEPTH) return "Any";',
    tests: ["tests/schema_types_test.ts"],
  },
  {
    name: "a progress number holding a secret in its digits is sent",
    file: "src/execution/executor.ts",
    from: "const shown = deps.redact.json(report);",
    to: "const shown = report;",
    tests: ["tests/secret_surfaces_test.ts"],
    filter: "progress number",
  },
  {
    name: "a venv's packages may be granted read-write beside its python",
    file: "src/policy/trusted_paths.ts",
    from: "/^(bin|Scripts)$/.test(basename(folder)) ? dirname(folder) : folder;",
    to: "folder;",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "npx's package cache may be granted read-write",
    file: "src/policy/trusted_paths.ts",
    from: "paths.push(...launcherFolders(server.command, home));",
    to: "",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "the arguments of calls in flight are not bounded",
    file: "src/execution/tool_gate.ts",
    from: "if (this.#argumentBytes + bytes > MAX_ARGUMENT_BYTES_IN_FLIGHT) {",
    to: "if (false) {",
    tests: ["tests/execution_stages_test.ts"],
    filter: "bounds the arguments",
  },
  {
    name: "a script named ~/... in a shell command is resolved against the working folder",
    file: "src/policy/trusted_paths.ts",
    from: "const homed = /^(~|\\$HOME|\\$\\{HOME\\})\\//.exec(piece);",
    to: "const homed = /^(?!)/.exec(piece);",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "paths inside NAME=value and inline code are not looked for",
    file: "src/policy/trusted_paths.ts",
    from: "word.split(/[\\s:;=,()'\"`]+/)",
    to: "word.split(/[\\s:;]+/)",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "anyOf copies the keys beside it into every alternative, however many",
    file: "src/catalog/schema_types.ts",
    from: 'if (!this.#afford(alternatives.length * size(shared))) return "Any";',
    to: "",
    tests: ["tests/schema_types_test.ts"],
  },
  {
    name: "allOf merges however many parts",
    file: "src/catalog/schema_types.ts",
    from: 'if (!this.#afford(allOf.length * parts)) return "Any";',
    to: "",
    tests: ["tests/schema_types_test.ts"],
  },
  {
    name: "a result's shape takes every value it holds",
    file: "src/catalog/result_shapes.ts",
    from: "if (--budget.left < 0) return {};",
    to: "",
    tests: ["tests/schema_types_test.ts"],
  },
  {
    name: "a tool's merged result shape grows without bound",
    file: "src/catalog/observed_results.ts",
    from: "const open = mergedText.length > MAX_SHAPE_CHARS;",
    to: "const open = false;",
    tests: ["tests/schema_types_test.ts"],
  },
  {
    name: "an output schema's patterns are run on the host",
    file: "src/upstream/output_validator.ts",
    from: '.filter(([key]) => key !== "pattern" && key !== "patternProperties")',
    to: ".filter(() => true)",
    tests: ["tests/output_validator_test.ts"],
  },
  {
    name: "a tool name of one long run is encoded, however long",
    file: "src/catalog/token_count.ts",
    from: "this.#count && !LONG_RUN.test(text)",
    to: "this.#count",
    tests: ["tests/tool_search_test.ts"],
    filter: "long run",
  },
  {
    name: "the modules node loads from the home folder may be granted read-write",
    file: "src/policy/trusted_paths.ts",
    from: '    ".node_modules",\n',
    to: "",
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "output data is taken without checking it is base64",
    file: "src/rpc/sandbox_protocol.ts",
    from: 'typeof f.data === "string" && BASE64.test(f.data)',
    to: 'typeof f.data === "string"',
    tests: ["tests/host_facts_test.ts"],
    filter: "malformed output",
  },
  {
    name: "a config error quotes the expanded URL",
    file: "src/config/config.ts",
    from: '`: "${entry.url}" is not an http(s) URL${why}`',
    to: '`: "${url}" is not an http(s) URL${why}`',
    tests: ["tests/config_test.ts"],
    filter: "left out for its URL",
  },
  {
    name: "a server's working folder may be granted below",
    file: "src/policy/trusted_paths.ts",
    from: "except: isInside(examples, server.cwd) ? [examples] : [],",
    to: 'except: [server.cwd + "/"],',
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "folders too large to check for links load",
    file: "src/config/config.ts",
    from: "if (++seen > MAX_SCANNED_ENTRIES) {",
    to: "if (++seen > Infinity) {",
    tests: ["tests/trusted_paths_test.ts"],
  },
  // HTTP
  {
    name: "one connection may take every persistent session",
    file: "src/sandbox/sessions.ts",
    from: "if (mine >= this.#maxPerOwner) {",
    to: "if (false) {",
    tests: ["tests/http_sessions_test.ts"],
    filter: "its share",
  },
  {
    name: "the server names sessions with guessable ids",
    file: "src/sandbox/sessions.ts",
    from: "const id = newSessionId();",
    to: "const id = `s${this.#sessions.size + 1}`;",
    tests: ["tests/sessions_unit_test.ts"],
  },
  {
    name: "a session id opens the session for whoever presents it",
    file: "src/sandbox/sessions.ts",
    from: "const session = this.#sessions.get(`${owner}\\0${id}`);",
    to: "const session = [...this.#sessions.values()].find((s) => s.id === id);",
    tests: ["tests/http_sessions_test.ts"],
    filter: "its share",
  },
  {
    name: "HTTP sessions are not capped",
    file: "src/host/http_server.ts",
    from: "if (sessions.size + opening >= options.maxSessions) {",
    to: "if (false) {",
    tests: ["tests/http_sessions_test.ts"],
    filter: "max-http-sessions",
  },
  {
    name: "a closed host keeps listening to catalog changes",
    file: "src/host/server.ts",
    from: "      unsubscribe();\n",
    to: "\n",
    tests: ["tests/http_sessions_test.ts"],
    filter: "no catalog listener",
  },
  {
    name: "any bearer token is accepted",
    file: "src/host/http_guard.ts",
    from: "if (!constantTimeEqual(given, options.token)) {",
    to: "if (false) {",
    tests: ["tests/http_test.ts"],
    filter: "checkBind",
  },
  // Start-up and the pool
  {
    name: "tool requests are answered before the start-up finished",
    file: "src/host/startup_gate.ts",
    from: "const error = await failed;",
    to: "const error = null;",
    tests: ["tests/host_test.ts"],
    filter: "handshake",
  },
  {
    name: "a script runs before the server has started",
    file: "src/execution/starting_executor.ts",
    from: "executor = await Promise.race([this.#ready, cancelled.promise]);",
    to: "executor = await Promise.race([this.#ready, cancelled.promise, Promise.resolve(null)]);",
    tests: ["tests/startup_test.ts"],
    filter: "StartingExecutor",
  },
  {
    name: "the handshake waits for the snapshot",
    file: "src/commands/commands.ts",
    from:
      "    app = await openApp({ configPath, log, upstreamWaitMs: SERVE_UPSTREAM_WAIT_MS });\n  } catch",
    to:
      "    app = await startApp({ configPath, log, upstreamWaitMs: SERVE_UPSTREAM_WAIT_MS });\n  } catch",
    tests: ["tests/startup_test.ts"],
    filter: "handshake",
  },
  {
    name: "a snapshot build outlives a closed server",
    file: "src/app.ts",
    from: "    starting.abort();\n",
    to: "",
    tests: ["tests/startup_test.ts"],
    filter: "leaves no builder",
  },
  {
    name: "the boot's wrapped TypedArray set is left in place for scripts",
    file: "src/sandbox/worker.ts",
    from: "  } finally {\n    typedArray.set = set;\n  }",
    to: "  } finally {\n  }",
    tests: ["tests/snapshot_test.ts"],
  },
  {
    name: "a snapshot stamp hides a changed file",
    file: "src/sandbox/snapshot.ts",
    from: "=== fileStamp(info)) return true;",
    to: "!== null) return true;",
    tests: ["tests/snapshot_test.ts"],
  },
  {
    name: "an idle pool keeps its surplus sandboxes",
    file: "src/sandbox/pool.ts",
    from: "while (ready.length > target) ready.shift()!.kill();",
    to: "",
    tests: ["tests/sandbox_pool_test.ts"],
  },
  {
    name: "the pool grows past its ceiling",
    file: "src/sandbox/pool.ts",
    from: "const max = this.#options.maxReady ?? this.#options.warm;",
    to: "const max = 64;",
    tests: ["tests/sandbox_pool_test.ts"],
  },
  {
    name: "a 2026-07-28 call is answered in JSON, so a quiet one's vanished client goes unseen",
    file: "src/host/http_server.ts",
    from: "if (!callAsEventStream(request.headers))",
    to: "if (request.headers)",
    tests: ["tests/http_test.ts"],
  },
  {
    name: "a 2026-07-28 client that accepts only JSON is answered with an event stream",
    file: "src/host/call_response_mode.ts",
    from: 'return quality > 0 && ["text/event-stream", "text/*", "*/*"].includes(type);',
    to: "return true;",
    tests: ["tests/http_test.ts"],
  },
  {
    name: "an aborted fetch leaves its response open, as Deno's own does after a GC",
    file: "src/_util/fetch_that_aborts.ts",
    from: 'signal.addEventListener("abort",',
    to: 'signal.addEventListener("x-never",',
    tests: ["tests/fetch_that_aborts_test.ts"],
  },
  {
    name: "an Accept header in capitals is taken for JSON only",
    file: "src/host/call_response_mode.ts",
    from: ".map((part) => part.trim().toLowerCase());",
    to: ".map((part) => part.trim());",
    tests: ["tests/http_test.ts"],
  },
  {
    name: "Accept: */* is taken for JSON only",
    file: "src/host/call_response_mode.ts",
    from: '["text/event-stream", "text/*", "*/*"]',
    to: '["text/event-stream"]',
    tests: ["tests/http_test.ts"],
  },
  {
    name: "a q=0 range of event streams counts as taking them",
    file: "src/host/call_response_mode.ts",
    from: "return quality > 0 &&",
    to: "return quality >= 0 &&",
    tests: ["tests/http_test.ts"],
  },

  {
    name: "a refusal tells the script to run again with a Deno flag",
    file: "src/sandbox/prelude.py",
    from: '    if "run again with the --allow-" not in text:',
    to: "    if True:",
    tests: ["tests/isolation_test.ts"],
  },
  {
    name: "a server shutting down logs its stopped upstream connects as failures",
    file: "src/upstream/pool.ts",
    from: "      if (this.#isClosed()) return;\n      const stderr",
    to: "      const stderr",
    tests: ["tests/upstream_pool_test.ts"],
  },
  {
    name: "a replacement boots beside the script just handed out",
    file: "src/sandbox/pool.ts",
    from: "const soon = () => setTimeout(() => this.#refill(), REFILL_DELAY_MS);",
    to: "const soon = () => setTimeout(() => this.#refill(), 0);",
    tests: ["tests/sandbox_pool_test.ts"],
  },
  {
    name: "a sandbox handed out is never replaced",
    file: "src/sandbox/pool.ts",
    from: "const soon = () => setTimeout(() => this.#refill(), REFILL_DELAY_MS);",
    to: "const soon = () => 0;",
    tests: ["tests/sandbox_pool_test.ts"],
  },
  {
    name: "a replacement boots beside the script it slows, though another sandbox is ready",
    file: "src/sandbox/pool.ts",
    from: "const timer = setTimeout(() => this.#refill(), SCRIPT_ALONE_MS);",
    to: "const timer = setTimeout(() => this.#refill(), REFILL_DELAY_MS);",
    tests: ["tests/sandbox_pool_test.ts"],
  },
  {
    name: "the last ready sandbox's replacement waits for its script",
    file: "src/sandbox/pool.ts",
    from: "if ((this.#ready.get(key)?.length ?? 0) === 0) {",
    to: "if ((this.#ready.get(key)?.length ?? 0) < 0) {",
    tests: ["tests/sandbox_pool_test.ts"],
  },
  {
    name: "a replacement boots while the result of the script before is on its way",
    file: "src/sandbox/pool.ts",
    from: "      soon();\n    });",
    to: "      this.#refill();\n    });",
    tests: ["tests/sandbox_pool_test.ts"],
  },
  {
    name: "a long script's sandbox is never replaced while it runs",
    file: "src/sandbox/pool.ts",
    from: "const timer = setTimeout(() => this.#refill(), SCRIPT_ALONE_MS);",
    to: "const timer = 0;",
    tests: ["tests/sandbox_pool_test.ts"],
  },
  {
    name: "a script's js.console.log goes onto the protocol channel",
    file: "src/sandbox/worker.ts",
    from: "for (const name of Object.keys(ours)) {",
    to: "for (const name of Object.keys(ours).slice(1000)) {",
    tests: ["tests/execute_code_test.ts"],
    filter: "reports errors",
  },
  {
    name: "the host's own checks of code read as clients' runs in the audit log",
    file: "src/app.ts",
    from: '      purpose: "analysis",\n',
    to: "",
    tests: ["tests/audit_test.ts"],
    filter: "every execution",
  },
  {
    name: "a chained exception's traceback shows the standard library's frames",
    file: "src/sandbox/prelude.py",
    from: "        _hide_internal_frames(chained, seen)",
    to: "        pass",
    tests: ["tests/execute_code_test.ts"],
    filter: "reports errors",
  },
  {
    name: "a tool called with arguments it does not take is answered without its parameters",
    file: "src/sandbox/prelude.py",
    from: "    if type(exc) is not TypeError:\n        return message",
    to: "    if True:\n        return message",
    tests: ["tests/unavailable_server_test.ts"],
  },
  {
    name: "a session whose outputs/ became a file crashes on its next run",
    file: "src/sandbox/prelude.py",
    from: "if os.path.islink(OUTPUTS) or os.path.isfile(OUTPUTS):",
    to: "if False:",
    tests: ["tests/sessions_files_test.ts"],
  },
  {
    name: "a session script that replaces textwrap.dedent breaks its next script",
    file: "src/sandbox/prelude.py",
    from: "    code = _dedent(code)",
    to: "    import textwrap\n    code = textwrap.dedent(code)",
    tests: ["tests/execute_code_test.ts"],
    filter: "textwrap.dedent",
  },
  {
    name: "a script ending in a semicolon returns its last expression (CodeRunner does not)",
    file: "src/sandbox/prelude.py",
    from: 'return line[statement.end_col_offset:].lstrip().startswith(b";")',
    to: "return False",
    tests: ["tests/execute_code_test.ts"],
    filter: "CodeRunner",
  },
  {
    name: "the semicolon is looked for on the wrong line when a string holds a form feed",
    file: "src/sandbox/prelude.py",
    from: 'lines = code.replace("\\r\\n", "\\n").replace("\\r", "\\n").split("\\n")',
    to: "lines = code.splitlines()",
    tests: ["tests/execute_code_test.ts"],
    filter: "CodeRunner",
  },
  {
    name: "a session's next run starts with the files its last run left in outputs/",
    file: "src/sandbox/prelude.py",
    from: "        reset_outputs()\n    _outputs_empty = False",
    to: "        reset_outputs()\n    _outputs_empty = True",
    tests: ["tests/sessions_files_test.ts"],
  },
  // The opening answered before the SDK loads (issue 16)
  {
    name: "the SDK answers an opening answered early again",
    file: "src/commands/commands.ts",
    from: "if (answered !== null) {",
    to: "if (answered === -1) {",
    tests: ["tests/opening_answer_test.ts"],
  },
  {
    name: "the opening read early is not put back for the SDK",
    file: "src/host/stdio_opening.ts",
    from: "if (read.length > 0) stdin.unshift(read);",
    to: "",
    tests: ["tests/opening_answer_test.ts"],
  },
  {
    name: "start-up waits for the opening message for ever",
    file: "src/host/stdio_opening.ts",
    from: "const timer = setTimeout(() => done(false), waitMs);",
    to: "const timer = 0;",
    tests: ["tests/opening_answer_test.ts"],
  },
  {
    name: "a server whose stdin closed during the opening read runs on",
    file: "src/commands/commands.ts",
    from: 'if (process.stdin.readableEnded) void stop("stdin closed");',
    to: "",
    tests: ["tests/opening_answer_test.ts"],
  },
  {
    name: "the early answer announces other capabilities than the SDK",
    file: "src/host/opening_answer.ts",
    from: "capabilities: ANNOUNCED_CAPABILITIES.legacy,",
    to: "capabilities: ANNOUNCED_CAPABILITIES.modern,",
    tests: ["tests/opening_answer_test.ts"],
  },
  {
    name: "an opening the SDK refuses is answered early",
    file: "src/host/opening_answer.ts",
    from: '? typeof member === "boolean"',
    to: "? true",
    tests: ["tests/opening_answer_test.ts"],
  },
  // Typed stubs and observed results (issue 17)
  {
    name: "an observed shape keeps the values",
    file: "src/catalog/result_shapes.ts",
    from: '    case "string":\n      return { type: "string" };',
    to: '    case "string":\n      return { type: "string", const: value };',
    tests: ["tests/schema_types_test.ts"],
    filter: "never values",
  },
  {
    name: "keys that look like data are kept as field names",
    file: "src/catalog/result_shapes.ts",
    from: "!entries.every(([k]) => isFieldName(k))",
    to: "false",
    tests: ["tests/schema_types_test.ts"],
    filter: "never values",
  },
  {
    name: "ids and tokens as keys are kept as field names",
    file: "src/catalog/result_shapes.ts",
    from: "part.length < 6 || part.length / (part.match(NAME_WORD)?.length ?? 1) >= 2",
    to: "true",
    tests: ["tests/schema_types_test.ts"],
    filter: "never values",
  },
  {
    name: "a key that is not a name is written into a comment as it is",
    file: "src/catalog/schema_types.ts",
    from: ".map((f) => `${JSON.stringify(f.key)}: ${f.description}`),",
    to: ".map((f) => `${f.key}: ${f.description}`),",
    tests: ["tests/schema_types_test.ts"],
    filter: "hostile text",
  },
  {
    name: "observe_results false still records",
    file: "src/app.ts",
    from: "const observed = config.settings.observe_results\n",
    to: "const observed = true\n",
    tests: ["tests/typed_stubs_test.ts"],
  },
  {
    name: "the tool index ignores its budget",
    file: "src/catalog/tool_index.ts",
    from: "if (tokens <= budget) return { text, tokens, level };",
    to: "return { text, tokens, level };",
    tests: ["tests/tool_search_test.ts"],
    filter: "budget",
  },
  // Client configs, proxies, the launcher on PATH
  {
    name: "a proxy password is not scrubbed",
    file: "src/config/config.ts",
    from: "secrets: [...new Set([...parsed.secrets, ...proxy.map((p) => p.value)])],",
    to: "secrets: parsed.secrets,",
    tests: ["tests/proxy_test.ts"],
  },
  {
    name: "stdio servers do not get the proxy variables",
    file: "src/upstream/network_env.ts",
    from: 'if (value !== undefined && value !== "") env[name] = value;',
    to: 'if (value === "never") env[name] = value;',
    tests: ["tests/proxy_test.ts"],
  },
  {
    name: "an entry cannot turn a proxy variable off",
    file: "src/upstream/network_env.ts",
    from: 'if (entryEnv[name] === "") delete env[name];',
    to: 'if (entryEnv[name] === "off") delete env[name];',
    tests: ["tests/network_env_test.ts"],
  },
  {
    name: "the installed command runs with every permission",
    file: "src/commands/install_launcher.ts",
    from:
      'export const LAUNCHER_FLAGS = ["--no-prompt", "--allow-read", "--allow-env", "--allow-run"];',
    to: 'export const LAUNCHER_FLAGS = ["--no-prompt", "-A"];',
    tests: ["tests/install_launcher_test.ts"],
  },
  {
    name: "a literal token under a secret name is not a secret",
    file: "src/config/config.ts",
    from: "if (SECRET_NAME.test(key)) addSecret(",
    to: 'if (SECRET_NAME.test(key + "!")) addSecret(',
    tests: ["tests/config_test.ts"],
  },
  {
    name: "an SSE entry is spoken to over Streamable HTTP",
    file: "src/upstream/transport.ts",
    from: 'transport: server.transport === "sse"',
    to: 'transport: server.transport === "ssh"',
    tests: ["tests/pasted_config_test.ts"],
  },
  // Configs that list code mode itself, entries that cannot start, shutdown mid-connect
  {
    name: "a config's entry for code mode itself is started",
    file: "src/config/config.ts",
    from: "if (isThisServer(entry, PROJECT_ROOT)) {",
    to: "if (false) {",
    tests: ["tests/this_server_test.ts"],
    filter: "left out",
  },
  {
    name: "a chain of code mode servers is never refused",
    file: "src/config/this_server.ts",
    from: "if (depth <= MAX_NESTING) return null;",
    to: "if (depth <= 99) return null;",
    tests: ["tests/this_server_test.ts"],
    filter: "nesting",
  },
  {
    name: "closing leaves a server that is still connecting running",
    file: "src/upstream/pool.ts",
    from: "await connecting?.transport.close().catch(() => {});",
    to: "",
    tests: ["tests/upstream_pool_test.ts"],
    filter: "still connecting",
  },
  {
    name: "an entry's mistake or unset variable stops the whole server again",
    file: "src/config/config.ts",
    from: "if (!(error instanceof TypeError)) throw error;",
    to: "throw error;",
    tests: ["tests/config_test.ts"],
    filter: "leaves out a server whose variable",
  },
  {
    name: "a server with a secret too short to scrub is started",
    file: "src/config/config.ts",
    from: "if (problems.length > 0) {",
    to: "if (false) {",
    tests: ["tests/config_test.ts"],
    filter: "too short to scrub",
  },
  {
    name: "the scrubber looks first for a piece of the secret as is, which an escaped form lacks",
    file: "src/policy/redaction.ts",
    from: "needles: windowSpellings(spelledChars(secret, chain)),",
    to: "needles: windowSpellings(spelledChars(secret, [])),",
    tests: ["tests/redaction_test.ts"],
  },
  {
    name: "the scrubber looks for a non-ASCII character by its ASCII lower case",
    file: "src/policy/redaction.ts",
    from: 'if (codec === undefined) return [char < "\\x80" ? char.toLowerCase() : char];',
    to: "if (codec === undefined) return [char.toLowerCase()];",
    tests: ["tests/redaction_test.ts"],
  },
  {
    name: "forms without a certain literal (a secret in non-ASCII only) are never looked for",
    file: "src/policy/redaction.ts",
    from: "if (form.needles.length === 0) unanchored.push(pattern);",
    to: "if (form.needles.length === 0) continue;",
    tests: ["tests/redaction_test.ts"],
  },
  {
    name: "the literal finder matches letters in one case only",
    file: "src/policy/literal_finder.ts",
    from: "if (char !== char.toUpperCase()) symbols[char.toUpperCase().charCodeAt(0)] = size;",
    to: "",
    tests: ["tests/literal_finder_test.ts", "tests/redaction_test.ts"],
  },
  {
    name: "the literal finder starts over after a partial match",
    file: "src/policy/literal_finder.ts",
    from: "fallback[child] = state === 0 ? 0 : next[fallback[state]! * width + symbol]!;",
    to: "fallback[child] = 0;",
    tests: ["tests/literal_finder_test.ts"],
  },
  {
    name: "the literal finder misses a literal that ends inside a longer one",
    file: "src/policy/literal_finder.ts",
    from: "const inherited = state === 0 ? undefined : ends[fallback[state]!];",
    to: "const inherited = undefined;",
    tests: ["tests/literal_finder_test.ts"],
  },
  {
    name: "a session's script is interrupted with the signal that opens Deno's debugger",
    file: "src/sandbox/interrupt_listener.ts",
    from: 'export const INTERRUPT_SIGNAL: Deno.Signal = "SIGUSR2";',
    to: 'export const INTERRUPT_SIGNAL: Deno.Signal = "SIGUSR1";',
    tests: ["tests/sessions_files_test.ts"],
  },
  {
    name: "a call may name megabytes of server or tool",
    file: "src/rpc/sandbox_protocol.ts",
    from: 'return typeof name === "string" && name.length <= MAX_CALL_NAME_LENGTH;',
    to: 'return typeof name === "string";',
    tests: ["tests/policy_test.ts"],
    filter: "forges protocol messages",
  },
  {
    name: "a tool glob's * stops at a line break",
    file: "src/policy/tool_policy.ts",
    from: 'return new RegExp(`^${body}$`, "s");',
    to: "return new RegExp(`^${body}$`);",
    tests: ["tests/policy_test.ts"],
    filter: "matches server.tool globs",
  },
  {
    name: "an audit line keeps the line separators a script's tool names hold",
    file: "src/execution/audit_log.ts",
    from: "/[\\u0085\\u2028\\u2029]/g,",
    to: "/$^/g,",
    tests: ["tests/audit_test.ts"],
  },
  {
    name: "import shows a password in a URL under an env name that is no secret's",
    file: "src/clients/secrets.ts",
    from: "else if (withoutUrlPasswords(value) !== value) found.push(`a password in env ${key}`);",
    to: "",
    tests: ["tests/clients_test.ts"],
    filter: "read a url as fetch",
  },
  {
    name: "an interrupt that finds the script awaiting leaves it waiting",
    file: "src/sandbox/worker.ts",
    from: "codemode.interrupt_waiting_script!();",
    to: "",
    tests: ["tests/sessions_files_test.ts"],
  },
  {
    name: "an interrupt leaves a tool call the script waits on waiting",
    file: "src/sandbox/worker.ts",
    from: "for (const abort of waitingCalls) abort();",
    to: "",
    tests: ["tests/sessions_files_test.ts"],
  },
  {
    name: "an interrupt that lands in a callback of Python's event loop ends the session",
    file: "src/sandbox/worker.ts",
    from: "if (isInterrupt(event.reason)) event.preventDefault();",
    to: "",
    tests: ["tests/sessions_files_test.ts"],
  },
  {
    name: "skills without a bound on their number",
    file: "src/skills/skill_store.ts",
    from: "if (others.length >= this.#limits.skills) {",
    to: "if (false) {",
    tests: ["tests/skills_test.ts"],
    filter: "within their limits",
  },
  {
    name: "skills' code counted as written, not as the JSON every sandbox is sent",
    file: "src/skills/skill_store.ts",
    from: "return new TextEncoder().encode(JSON.stringify(code)).length;",
    to: "return code.length;",
    tests: ["tests/skills_test.ts"],
    filter: "within their limits",
  },
  {
    name: "every archived version of a skill is kept",
    file: "src/skills/skill_store.ts",
    from: "if (previous) await this.#pruneArchives(skill.name, saved.version);",
    to: "",
    tests: ["tests/skills_test.ts"],
    filter: "within their limits",
  },
  {
    name: "write access a script gives others through Deno stays",
    file: "src/execution/executor.ts",
    from: "await clearSharedWriteModes(profile, runStarted, log);",
    to: "",
    tests: ["tests/profiles_test.ts"],
    filter: "grant exactly",
  },
  {
    name: "the host takes group and world write from every file, a person's too",
    file: "src/execution/shared_write_modes.ts",
    from: "const changed = (info.ctime?.getTime() ?? Infinity) >= from;",
    to: "const changed = true;",
    tests: ["tests/profiles_test.ts"],
    filter: "grant exactly",
  },
  {
    name: "a failed server's reason ends in stack frames and terminal colours",
    file: "src/upstream/pool.ts",
    from: '.filter((line) => line !== "" && !/^at [^ ]/.test(line))',
    to: '.filter((line) => line !== "")',
    tests: ["tests/upstream_pool_test.ts"],
    filter: "lastWords",
  },
  {
    name: "a large result is cut to the limit before the JSON escapes that take it past",
    file: "src/sandbox/prelude.py",
    from: "if _json_length(shown[:middle] + marker) <= limit:",
    to: "if len(shown[:middle] + marker) <= limit:",
    tests: ["tests/hostile_test.ts"],
    filter: "exhausting resources",
  },
  {
    name: "the line break that ends a saved file counts as one more line",
    file: "src/policy/code_size.ts",
    from: 'const lines = code.replace(/(\\r\\n|\\r|\\n)$/, "").split(/\\r\\n|\\r|\\n/).length;',
    to: "const lines = code.split(/\\r\\n|\\r|\\n/).length;",
    tests: ["tests/small_promises_test.ts"],
  },
  {
    name: "a server whose args field is misspelt starts without its args",
    file: "src/config/config.ts",
    from: "return meant !== undefined && RUN_FIELDS.includes(meant) && !(meant in entry);",
    to: "return false;",
    tests: ["tests/config_test.ts"],
    filter: "typo meant",
  },
  {
    name: "upstream replies are read by the SDK's quadratic read buffer",
    file: "src/upstream/transport.ts",
    from: "const transport = readLinesLinearly(",
    to: "const transport = ((t) => t)(",
    tests: ["tests/message_lines_test.ts"],
  },
  {
    name: "the text lists every failed call, however many",
    file: "src/execution/execution_result.ts",
    from: "} else if (++failed <= FAILED_CALLS_SHOWN) {",
    to: "} else if (++failed) {",
    tests: ["tests/execution_stages_test.ts"],
    filter: "toolCallLines",
  },
  {
    name: "a deprecated tool ranks like any other",
    file: "src/catalog/tool_search.ts",
    from: "(this.#deprecated.has(String(r.id)) ? this.#tuning.deprecated : 1),",
    to: "1,",
    tests: ["tests/tool_search_test.ts"],
    filter: "deprecated",
  },
  {
    name: "a PEP 723 block starts after a U+2028 inside a string",
    file: "src/packages/wheels.ts",
    from: "const lines = code.split(/\\r\\n|\\r|\\n/);",
    to: "const lines = code.split(/\\r\\n|\\r|\\n|\\u2028/);",
    tests: ["tests/packages_test.ts"],
    filter: "PEP 723",
  },
  {
    name: "the package cache grows with every package asked for",
    file: "src/_util/bounded_cache.ts",
    from: "if (this.#size <= this.maxSize) break;",
    to: "break;",
    tests: ["tests/bounded_cache_test.ts"],
  },
  {
    name: "upstream results are checked with the SDK's validator, patterns included",
    file: "src/upstream/pool.ts",
    from: "jsonSchemaValidator: outputValidator(),",
    to: "",
    tests: ["tests/typed_stubs_test.ts"],
  },
  {
    name: "node_modules above an upstream server's folders may be granted",
    file: "src/policy/trusted_paths.ts",
    from: 'path: join(folder, "node_modules"),',
    to: 'path: join(folder, "other_modules"),',
    tests: ["tests/trusted_paths_test.ts"],
  },
  {
    name: "an interrupt that lands in Python a JavaScript timer calls ends the session",
    file: "src/sandbox/worker.ts",
    from: "if (isInterrupt(event.error)) event.preventDefault();",
    to: "",
    tests: ["tests/sessions_files_test.ts"],
  },
  {
    name: "an ASCII secret's host form (percent-decoded, without tabs) is not scrubbed",
    file: "src/policy/redaction.ts",
    from: "if (/[/?#@:\\\\[\\]]/.test(secret)) return null;",
    to: 'if (/[/?#@:\\\\[\\]]/.test(secret) || [...secret].every((c) => c < "\\x80")) return null;',
    tests: ["tests/redaction_test.ts"],
  },
  {
    name: "the host of a URL-shaped secret is scrubbed as a secret of its own",
    file: "src/policy/redaction.ts",
    from: "if (/[/?#@:\\\\[\\]]/.test(secret)) return null;",
    to: "",
    tests: ["tests/redaction_test.ts"],
  },
  {
    name: "a read-write folder too large to walk is left open to others",
    file: "src/execution/shared_write_modes.ts",
    from: "if (++seen > maxEntries) return `more than ${maxEntries} entries`;",
    to: "if (++seen > maxEntries) return null;",
    tests: ["tests/shared_write_modes_test.ts"],
  },
  {
    name: "a config refused before the relaunch leaves a stdio client with a closed connection",
    file: "src/cli.ts",
    from: "if (http || Deno.stdin.isTerminal()) throw error;",
    to: "throw error;",
    tests: ["tests/refused_config_test.ts"],
  },
  {
    name: "a config the server refuses leaves a stdio client with a closed connection",
    file: "src/commands/commands.ts",
    from: "if (process.stdin.isTTY) throw error; // a person at a terminal reads it and the exit",
    to: "throw error;",
    tests: ["tests/refused_config_test.ts"],
  },
  {
    name: "skills_read_only still lets clients save and delete skills",
    file: "src/host/tools/skills.ts",
    from: "  if (!options.readOnly) registerSkillWriting(server, options);",
    to: "  registerSkillWriting(server, options);",
    tests: ["tests/skills_test.ts"],
    filter: "skills_read_only",
  },
  {
    name: "a wheel in the index cache is installed for a profile without the index host",
    file: "src/packages/package_sources.ts",
    from:
      "    if (!hostAllowed(index, allowedHosts)) {\n      return `the profile does not allow the package index host ${index.host}`;\n    }\n    const cached = await this.#indexCache.find(name);\n    if (cached.wheel) return cached.wheel;\n",
    to:
      "    const cached = await this.#indexCache.find(name);\n    if (cached.wheel) return cached.wheel;\n    if (!hostAllowed(index, allowedHosts)) {\n      return `the profile does not allow the package index host ${index.host}`;\n    }\n",
    tests: ["tests/packages_test.ts"],
    filter: "package index only",
  },
  {
    name: "a snapshot another running server uses is removed as stale",
    file: "src/sandbox/snapshot.ts",
    from: "if (now - (marked.mtime?.getTime() ?? now) < STALE_CACHE_MS) continue;",
    to: "",
    tests: ["tests/snapshot_test.ts"],
    filter: "marked in use",
  },
  {
    name: "a setuid program a script left in a read-write folder keeps its bit",
    file: "src/execution/shared_write_modes.ts",
    from: "export const SHARED_MODE_BITS = 0o7022;",
    to: "export const SHARED_MODE_BITS = 0o022;",
    tests: ["tests/shared_write_modes_test.ts"],
  },
  {
    name: "a read-write folder with a subfolder the host cannot list is left open to others",
    file: "src/execution/shared_write_modes.ts",
    from: "unwalked ??= `${path}: ${(error as Error).message}`;",
    to: "",
    tests: ["tests/shared_write_modes_test.ts"],
  },
  {
    name: "Python's chmod makes a setuid program in a read-write folder",
    file: "src/sandbox/worker.ts",
    from: "const SHARED = 0o7022;",
    to: "const SHARED = 0o022;",
    tests: ["tests/profiles_test.ts"],
    filter: "grant exactly",
  },
  {
    name: "run exits 1 when its script could not run at all, as when it failed",
    file: "src/cli.ts",
    from: 'return command === "run" ? RUN_COULD_NOT_START : 1;',
    to: "return 1;",
    tests: ["tests/cli_test.ts"],
    filter: "CI smoke",
  },
  {
    name: "saves at the same time each pass the skills' limits",
    file: "src/skills/skill_store.ts",
    from: "return this.#inTurn(() => this.#save(skill));",
    to: "return this.#save(skill);",
    tests: ["tests/skills_test.ts"],
    filter: "within their limits",
  },
  {
    name: "a deleted skill's archived versions stay on disk",
    file: "src/skills/skill_store.ts",
    from: "await this.#pruneArchives(name, Infinity);",
    to: "",
    tests: ["tests/skills_test.ts"],
    filter: "within their limits",
  },
  {
    name: "a result's non-ASCII letters count six units each, as Python escapes them",
    file: "src/sandbox/prelude.py",
    from: "text = _dumps(value, allow_nan=False, ensure_ascii=False)",
    to: "text = _dumps(value, allow_nan=False)",
    tests: ["tests/hostile_test.ts"],
    filter: "exhausting resources",
  },
  {
    name: "the text of a timed-out session script shows only its traceback",
    file: "src/execution/execution_result.ts",
    from: 'const body = d.reported_by === "host" && d.traceback',
    to: "const body = false",
    tests: ["tests/sessions_files_test.ts"],
  },
  {
    name: "a misspelt settings key is ignored, and the settings with it",
    file: "src/config/config.ts",
    from: "if (meant !== undefined && !sameList && !CLIENT_TOP_LEVEL_FIELDS.has(key)) {",
    to: "if (false) {",
    tests: ["tests/config_test.ts"],
    filter: "misspelt list or settings",
  },
  {
    name: "an unknown option is said in the argument parser's words, without a suggestion",
    file: "src/cli.ts",
    from: "if (!unknown) return error.message;",
    to: "return error.message;",
    tests: ["tests/cli_test.ts"],
  },
  {
    name: "an unknown mcp_tools module gets Python's bare cannot-import message",
    file: "src/sandbox/prelude.py",
    from: "            if package not in self.explained:",
    to: "            if True:",
    tests: ["tests/unavailable_server_test.ts"],
  },
  {
    name: "dir(mcp_tools) shows no modules before they are imported",
    file: "src/sandbox/prelude.py",
    from: "        pkg.__dir__ = __dir__\n",
    to: "",
    tests: ["tests/unavailable_server_test.ts"],
  },
  {
    name: "a secret in a URL's host is not scrubbed (lower case)",
    file: "src/policy/redaction.ts",
    from: "...given.map((s) => s.toLowerCase())",
    to: "...given",
    tests: ["tests/redaction_test.ts"],
  },
  {
    name: "closing right after a failed connect leaves its server running",
    file: "src/upstream/pool.ts",
    from: "      this.#exiting.add(exited.promise);",
    to: "",
    tests: ["tests/upstream_pool_test.ts"],
    filter: "right after a failed connect",
  },
  {
    name: "files the server writes are world-writable whatever the umask",
    file: "src/_util/atomic_write.ts",
    from:
      "options.mode === undefined ? { createNew: true } : { createNew: true, mode: options.mode },",
    to: "{ createNew: true, mode: options.mode ?? 0o666 },",
    tests: ["tests/atomic_write_test.ts"],
  },
  {
    name: "a token written into a server's args is not scrubbed",
    file: "src/config/config.ts",
    from: "      if (!secretProblem(value)) secrets.add(value);",
    to: "",
    tests: ["tests/config_test.ts"],
    filter: "tokens written into args",
  },
  {
    name: "a non-ASCII secret in a URL's host is not scrubbed (punycode)",
    file: "src/policy/redaction.ts",
    from: "...given.map((s) => s.toLowerCase()), ...hostForms]",
    to: "...given.map((s) => s.toLowerCase())]",
    tests: ["tests/redaction_test.ts"],
  },
  // import and install (issue 18): a hostile project folder, a terminal, a client's file
  {
    name: "import takes a project folder's servers without --project",
    file: "src/commands/clients.ts",
    from: "const taken = (source: ConfigSource) => !isProjectFile(source) || options.project;",
    to: "const taken = (_source: ConfigSource) => true;",
    tests: ["tests/clients_test.ts"],
  },
  {
    name: "import prints a client file's control characters as they are",
    file: "src/clients/safe_text.ts",
    from:
      '(c) => c === "\\n" && options.keepNewlines ? c : `\\\\u{${c.codePointAt(0)!.toString(16)}}`,',
    to: "(c) => c,",
    tests: ["tests/clients_test.ts"],
  },
  {
    name: "secrets from a private client file land in a world-readable mcp_servers.json",
    file: "src/clients/secrets.ts",
    from: "if (why.length === 0) return { mode: current, why };",
    to: "return { mode: current, why: [] };",
    tests: ["tests/clients_test.ts"],
  },
  {
    name: "install drops the user's fields of the code-mode entry",
    file: "src/clients/merge.ts",
    from: "const updated = previous ? { ...previous, ...entry } : entry;",
    to: "const updated = entry;",
    tests: ["tests/clients_test.ts"],
  },
  {
    name: "import takes servers the user rejected in Claude Code",
    file: "src/clients/claude_code_approval.ts",
    from: 'const rejectedIn = sources.find(([, r]) => listed(r, "disabledMcpjsonServers"));',
    to: "const rejectedIn = sources.find(() => false);",
    tests: ["tests/clients_test.ts"],
  },
  {
    name: "import takes .mcp.json servers Claude Code never approved",
    file: "src/clients/claude_code_approval.ts",
    from: "  if (approved) return null;",
    to: "  return null;",
    tests: ["tests/clients_test.ts"],
  },
  // Tracing (issue 18)
  {
    name: "tool calls are not traced",
    file: "src/execution/tool_gate.ts",
    from: 'return tracing.span("tool_call", async (span) => {',
    to: 'return NO_TRACING.span("tool_call", async (span) => {',
    tests: ["tests/tracing_test.ts"],
    filter: "OTLP receiver",
  },
  {
    name: "a tool call's span carries its arguments",
    file: "src/execution/tool_gate.ts",
    from: "span.set(attributes);",
    to: 'span.set({ ...attributes, "mcp.arguments": JSON.stringify(params.arguments) });',
    tests: ["tests/tracing_test.ts"],
    filter: "OTLP receiver",
  },
  {
    name: "the upstream call runs outside its span (no traceparent for HTTP upstreams)",
    file: "src/_util/tracing.ts",
    from: "return context.with(open.context, async () => {",
    to: "return context.with(within, async () => {",
    tests: ["tests/tracing_test.ts"],
    filter: "OTLP receiver",
  },
  {
    name: "sandboxes inherit the host's environment (and its OpenTelemetry settings)",
    file: "src/sandbox/launcher.ts",
    from: "clearEnv: true,",
    to: "clearEnv: false,",
    tests: ["tests/tracing_test.ts"],
    filter: "OTLP receiver",
  },
];

const ROOT = fromFileUrl(new URL("..", import.meta.url));
/** Files whose change needs the sandbox worker bundled again. */
const WORKER_SOURCES =
  /^src\/(sandbox\/worker\.ts|sandbox\/prelude\.py|rpc\/|execution\/outcomes\.ts|sandbox\/(prelude_py|snapshot_format|snapshot_modules|interrupt_listener)\.ts|_util\/write_all\.ts)/;

async function run(command: string[], cwd: string, env: Record<string, string>) {
  const out = await new Deno.Command(command[0]!, {
    args: command.slice(1),
    cwd,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { ok: out.success, output: new TextDecoder().decode(out.stdout) };
}

/** A copy of the checkout's tracked and new files (not ignored ones) in a temporary folder. */
async function copyCheckout(): Promise<string> {
  const listed = await run(
    ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
    ROOT,
    {},
  );
  const copy = await Deno.makeTempDir({ prefix: "mcp-code-mode-mutants-" });
  for (const file of listed.output.split("\0").filter(Boolean)) {
    try {
      await Deno.mkdir(join(copy, dirname(file)), { recursive: true });
      await Deno.copyFile(join(ROOT, file), join(copy, file));
    } catch {
      // listed but deleted in the working tree
    }
  }
  return copy;
}

function testCommand(tests: string[], filter?: string): string[] {
  return [
    Deno.execPath(),
    "test",
    "--no-prompt",
    "--allow-all",
    "--v8-flags=--expose-gc", // as deno task test runs them
    ...(filter ? ["--filter", filter] : []),
    ...tests,
  ];
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: { only: { type: "string", multiple: true } },
  });
  const chosen = MUTATIONS.filter((m) =>
    !values.only || values.only.some((only) => m.name.includes(only))
  );
  const copy = await copyCheckout();
  // The copy builds its own snapshot once, in a cache folder of its own (outside the copy, as
  // a user's cache lies outside their checkout).
  const cache = await Deno.makeTempDir({ prefix: "mcp-code-mode-mutants-cache-" });
  const env = { CODEMODE_CACHE_DIR: cache, NO_COLOR: "1" };
  const log = (line: string) => writeAllSync(Deno.stderr, line + "\n");
  try {
    const baseline = new Set(chosen.map((m) => JSON.stringify([m.tests, m.filter ?? ""])));
    for (const key of baseline) {
      const [tests, filter] = JSON.parse(key) as [string[], string];
      const { ok, output } = await run(testCommand(tests, filter || undefined), copy, env);
      if (!ok) {
        log(output.slice(-3000));
        log(`the unmutated code fails ${tests.join(" ")} ${filter}: fix that first`);
        return 1;
      }
    }
    const survived: string[] = [];
    for (const mutation of chosen) {
      const path = join(copy, mutation.file);
      const original = await Deno.readTextFile(path);
      const count = original.split(mutation.from).length - 1;
      if (count !== 1) {
        survived.push(`${mutation.name} (stale: its text occurs ${count} times)`);
        log(`STALE     ${mutation.name}`);
        continue;
      }
      await Deno.writeTextFile(path, original.replace(mutation.from, mutation.to));
      try {
        if (WORKER_SOURCES.test(mutation.file)) {
          await run([Deno.execPath(), "run", "-A", "src/_build/generate.ts"], copy, env);
        }
        const started = performance.now();
        const { ok } = await run(testCommand(mutation.tests, mutation.filter), copy, env);
        const seconds = ((performance.now() - started) / 1000).toFixed(0);
        log(`${ok ? "SURVIVED" : "caught  "}  ${mutation.name}  (${seconds} s)`);
        if (ok) survived.push(mutation.name);
      } finally {
        await Deno.writeTextFile(path, original);
        if (WORKER_SOURCES.test(mutation.file)) {
          await run([Deno.execPath(), "run", "-A", "src/_build/generate.ts"], copy, env);
        }
      }
    }
    log(`\n${chosen.length - survived.length} of ${chosen.length} mutations caught`);
    for (const name of survived) log(`  survived: ${name}`);
    return survived.length === 0 ? 0 : 1;
  } finally {
    await Deno.remove(copy, { recursive: true }).catch(() => {});
    await Deno.remove(cache, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main());
