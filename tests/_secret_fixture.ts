/**
 * The leaky upstream fixture (tests/fixtures/secret_server.ts) and how to look for its secret.
 */
import assert from "node:assert/strict";
import { ROOT, startServer, type TestServer } from "./_helpers.ts";

/** A secret with a quote and a backslash, as a config's ${TEST_SECRET} hands it over. */
export const SECRET = 'sk-"e2e\\secret"-9f8e7d6c';

const bytes = new TextEncoder().encode(SECRET);

const jsonEscaped = (text: string) => JSON.stringify(text).slice(1, -1);

/** The forms of SECRET a leak could take in text (the scrubbing itself is table-tested). */
export const SECRET_FORMS: string[] = [
  SECRET,
  jsonEscaped(SECRET),
  jsonEscaped(jsonEscaped(SECRET)),
  encodeURIComponent(SECRET),
  btoa(String.fromCharCode(...bytes)).replace(/=+$/, ""),
  [...bytes].map((b) => b.toString(16).padStart(2, "0")).join(""),
];

/** Fails naming the form when `text` holds the secret in any of its forms. */
export function assertNoSecret(text: string, where: string): void {
  for (const form of SECRET_FORMS) {
    assert.ok(!text.includes(form), `${where} holds the secret as ${JSON.stringify(form)}`);
  }
}

/** The real server with the leaky and the broken fixture servers, given SECRET. */
export function startWithLeakyServer(env: Record<string, string> = {}): Promise<TestServer> {
  return startServer({
    args: ["--config", `${ROOT}tests/fixtures/secret_servers.json`],
    env: { TEST_SECRET: SECRET, ...env },
  });
}
