/**
 * Downloads with bounds: a body larger than its cap is refused while it streams (a hostile or
 * broken source cannot fill the host's memory), and every download of one resolution shares a
 * deadline besides its own timeout (a slow source cannot hold a request for hours).
 */
import { NotPlainFileError, readPlainFileSync } from "../_util/plain_file.ts";
import { mib, readAtMost } from "../_util/bytes.ts";
import { shownUrl } from "../_util/url_secrets.ts";

/** Largest files: a lock or index page, and a package file (the sandbox gets it in one line). */
export const MAX_PAGE_BYTES = 16 * 1024 * 1024;
export const MAX_PACKAGE_BYTES = 48 * 1024 * 1024;

/**
 * A package file from a folder or the cache, read only if it is a regular file (no symlink,
 * device or FIFO: a link to /dev/zero filled the host's memory, a FIFO held the call for ever)
 * within MAX_PACKAGE_BYTES, a download's bound (a file of hundreds of MiB held the host's thread
 * for seconds while it was read and encoded, for every client); its size is checked before a
 * byte is read.
 */
export function readPackageFile(path: string, file: string): Uint8Array {
  try {
    return readPlainFileSync(path, MAX_PACKAGE_BYTES);
  } catch (error) {
    if (!(error instanceof NotPlainFileError)) throw error;
    if (error.size !== undefined) {
      throw new Error(
        `${file} is ${mib(error.size)}, larger than the ${
          mib(MAX_PACKAGE_BYTES)
        } a package file may be`,
      );
    }
    throw new Error(`${file} is not read: ${error.message.replace(path, "it")}`);
  }
}

/**
 * How much of the packages' files (as base64) the host keeps in memory between executions, for
 * all callers together: past it, the least recently used are read from disk again.
 */
export const PACKAGE_CACHE_BYTES = 128 * 1024 * 1024;

/** The body of `url`, or an Error saying why not (unreachable, status, too large, too slow). */
export async function download(
  url: URL,
  maxBytes: number,
  options: { fetch?: typeof fetch; deadline?: AbortSignal; timeoutMs?: number } = {},
): Promise<Uint8Array> {
  const signals = [AbortSignal.timeout(options.timeoutMs ?? 120_000)];
  if (options.deadline) signals.push(options.deadline);
  const signal = AbortSignal.any(signals);
  const shown = shownUrl(url);
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(url, { signal, redirect: "error" });
  } catch (error) {
    throw new Error(`${shown} cannot be reached (${reason(error, signal)})`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`${shown} answered ${response.status}`);
  }
  let body: Uint8Array | null;
  try {
    body = await readAtMost(response.body ?? [], maxBytes);
  } catch (error) {
    throw new Error(`${shown} could not be read (${reason(error, signal)})`);
  }
  if (body === null) throw new Error(`${shown} is larger than ${maxBytes} bytes`);
  return body;
}

function reason(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) return "took too long";
  return (error as Error).message;
}
