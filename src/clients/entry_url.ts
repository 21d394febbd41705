/**
 * An entry's URL as fetch will read it (pure): parsed by WHATWG `new URL()`, not by a pattern,
 * so `http://a:1\@b/` is seen going to `a` (fetch reads `\` as `/`), as the server sends it.
 * `${NAME}` placeholders are parsed as stand-ins and shown again as written.
 */
import { replaceUpToLast } from "../_util/replace_up_to_last.ts";

/** Lowercase letters and digits: kept as they are by every part of a parsed URL. */
const STAND_IN = (i: number) => `codemodevar${i}x`;
const PLACEHOLDER = /\$\{[^}]*\}/g;

export interface EntryUrl {
  url: URL;
  /** Text from `url` (its host, its href) with the stand-ins back as the placeholders. */
  show: (text: string) => string;
}

/** `text` parsed as fetch would, or null when it is no URL. */
export function parseEntryUrl(text: string): EntryUrl | null {
  const placeholders: string[] = [];
  const substituted = replaceUpToLast(
    text,
    "}",
    PLACEHOLDER,
    (p) => STAND_IN(placeholders.push(p) - 1),
  );
  let url: URL;
  try {
    url = new URL(substituted);
  } catch {
    return null;
  }
  const show = (shown: string) =>
    placeholders.reduce((acc, p, i) => acc.replaceAll(STAND_IN(i), p), shown);
  return { url, show };
}

/** The host (and port) `text` connects to, as fetch reads it; the text itself if no URL. */
export function hostOf(text: string): string {
  const parsed = parseEntryUrl(text);
  return parsed ? parsed.show(parsed.url.host) : text;
}

/**
 * Why a project file's URL is refused, or null: spellings that read one way and connect
 * another (a backslash, user info before the host, a host in non-ASCII letters).
 */
export function deceptiveUrl(text: string): string | null {
  if (text.includes("\\")) {
    return "its url holds a backslash, which fetch reads as / (so the host is not the one it " +
      "seems to name)";
  }
  const parsed = parseEntryUrl(text);
  if (!parsed) return null; // the config's own check says why
  if (parsed.url.username !== "" || parsed.url.password !== "") {
    return `its url has user info before the host (it connects to ${parsed.show(parsed.url.host)})`;
  }
  const written = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)/.exec(text)?.[1] ?? "";
  if ([...written].some((c) => c.codePointAt(0)! > 0x7f)) {
    return `its url's host is written in non-ASCII letters (it connects to ${
      parsed.show(parsed.url.hostname)
    })`;
  }
  return null;
}
