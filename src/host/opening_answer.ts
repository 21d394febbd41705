/**
 * The answer to a stdio connection's opening message, given before the MCP SDK has loaded
 * (evaluating it holds a new process for about a quarter of a second): a 2025-era `initialize`
 * or a 2026-07-28 `server/discover`, in the plain shapes clients send. For anything else, or
 * anything unusual, there is none, and the SDK answers as always. The SDK still receives the
 * message, so its state follows the handshake; its own answer to it is dropped (stdio_opening.ts).
 * What this says must be what the SDK would say: tests/opening_answer_test.ts compares them.
 * Pure.
 */
import {
  ANNOUNCED_CAPABILITIES,
  LEGACY_VERSIONS,
  MODERN_VERSIONS,
  SERVER_INFO,
  SERVER_INSTRUCTIONS,
} from "./server_identity.ts";

export type RequestId = string | number;

const META = "io.modelcontextprotocol/";
const PROTOCOL_VERSION = `${META}protocolVersion`;
const CLIENT_CAPABILITIES = `${META}clientCapabilities`;
const CLIENT_INFO = `${META}clientInfo`;

export interface OpeningAnswer {
  /** The id of the request answered. */
  id: RequestId;
  /** The answer, one line of JSON (no newline). */
  line: string;
}

/** The answer to `line`, the connection's first message, if it can be given now. */
export function openingAnswer(line: string): OpeningAnswer | null {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return null;
  }
  if (!isObject(message) || !hasOnly(message, ["jsonrpc", "id", "method", "params"])) return null;
  const { jsonrpc, id, method, params } = message;
  if (jsonrpc !== "2.0" || !isRequestId(id) || !isObject(params)) return null;
  const result = method === "initialize"
    ? initializeResult(params)
    : method === "server/discover"
    ? discoverResult(params)
    : null;
  return result && { id, line: JSON.stringify({ result, jsonrpc: "2.0", id }) };
}

function initializeResult(params: Record<string, unknown>): Record<string, unknown> | null {
  const { protocolVersion, capabilities, clientInfo } = params;
  if (!hasOnly(params, ["protocolVersion", "capabilities", "clientInfo"])) return null;
  if (typeof protocolVersion !== "string") return null;
  if (!isPlainCapabilities(capabilities) || !isPlainClientInfo(clientInfo)) return null;
  const known = (LEGACY_VERSIONS as readonly string[]).includes(protocolVersion);
  return {
    protocolVersion: known ? protocolVersion : LEGACY_VERSIONS[0],
    capabilities: ANNOUNCED_CAPABILITIES.legacy,
    serverInfo: SERVER_INFO,
    instructions: SERVER_INSTRUCTIONS,
  };
}

function discoverResult(params: Record<string, unknown>): Record<string, unknown> | null {
  const meta = params._meta;
  if (!hasOnly(params, ["_meta"]) || !isObject(meta)) return null;
  if (!hasOnly(meta, [PROTOCOL_VERSION, CLIENT_CAPABILITIES, CLIENT_INFO])) return null;
  if (!(MODERN_VERSIONS as readonly unknown[]).includes(meta[PROTOCOL_VERSION])) return null;
  if (!isPlainCapabilities(meta[CLIENT_CAPABILITIES])) return null;
  if (CLIENT_INFO in meta && !isPlainClientInfo(meta[CLIENT_INFO])) return null;
  return {
    supportedVersions: MODERN_VERSIONS,
    capabilities: ANNOUNCED_CAPABILITIES.modern,
    instructions: SERVER_INSTRUCTIONS,
    resultType: "complete",
    ttlMs: 0,
    cacheScope: "private",
    _meta: { [`${META}serverInfo`]: SERVER_INFO },
  };
}

/**
 * Client capabilities in the plainest form: each an object, whose members are objects too
 * (`listChanged` and `applyDefaults`: booleans), whose own members are objects. The SDK accepts
 * more; for more, it answers itself.
 */
function isPlainCapabilities(value: unknown): boolean {
  if (!isObject(value)) return false;
  return Object.values(value).every((capability) =>
    isObject(capability) &&
    Object.entries(capability).every(([key, member]) =>
      key === "listChanged" || key === "applyDefaults"
        ? typeof member === "boolean"
        : isObject(member) && Object.values(member).every(isObject)
    )
  );
}

function isPlainClientInfo(value: unknown): boolean {
  if (!isObject(value) || !hasOnly(value, ["name", "version", "title", "description"])) {
    return false;
  }
  return typeof value.name === "string" && typeof value.version === "string" &&
    ["title", "description"].every((key) => !(key in value) || typeof value[key] === "string");
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === "string" || Number.isSafeInteger(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function hasOnly(value: Record<string, unknown>, keys: string[]): boolean {
  return Object.keys(value).every((key) => keys.includes(key));
}
