/**
 * The server reads its environment in one place, by names from one table, and the restricted
 * relaunch grants exactly that table: a variable read anywhere else would be denied at run time
 * by the relaunch's --allow-env, or granted without anyone deciding to.
 */
import assert from "node:assert/strict";
import { ENVIRONMENT, HOST_ENV, readEnv } from "../src/config/environment.ts";

const SRC = new URL("../src/", import.meta.url);

async function* sourceFiles(dir: URL): AsyncGenerator<URL> {
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) yield* sourceFiles(url);
    else if (entry.name.endsWith(".ts")) yield url;
  }
}

Deno.test("only src/config/environment.ts reads the process environment", async () => {
  const readers: string[] = [];
  for await (const file of sourceFiles(SRC)) {
    if (file.pathname.endsWith("/config/environment.ts")) continue;
    const text = await Deno.readTextFile(file);
    if (/Deno\.env\.(get|toObject)\(/.test(text)) readers.push(file.pathname);
  }
  assert.deepEqual(readers, []);
});

Deno.test("the restricted relaunch's --allow-env list is the table of variables", () => {
  assert.deepEqual(HOST_ENV, Object.keys(ENVIRONMENT));
  assert.equal(readEnv("PATH"), Deno.env.get("PATH"));
  // @ts-expect-error: a variable outside the table cannot be read
  readEnv("SOME_OTHER_VARIABLE");
});
