/**
 * Secrets out: replaces every known secret value in text, or in every string of a JSON value.
 * Very short values are left alone (they would redact ordinary text and protect nothing).
 */
export const REDACTED = "[REDACTED]";
const MIN_SECRET_LENGTH = 6;

export interface Redactor {
  text(value: string): string;
  /** A deep copy of a JSON value with secrets replaced in every string (keys included). */
  json<T>(value: T): T;
}

export function createRedactor(secrets: Iterable<string>): Redactor {
  const list = [...new Set(secrets)].filter((s) => s.length >= MIN_SECRET_LENGTH)
    .sort((a, b) => b.length - a.length);
  if (list.length === 0) return { text: (v) => v, json: (v) => v };
  const pattern = new RegExp(list.map(escapeRegExp).join("|"), "g");
  const text = (value: string) => value.replace(pattern, REDACTED);
  const json = <T>(value: T): T => {
    if (typeof value === "string") return text(value) as T;
    if (Array.isArray(value)) return value.map(json) as T;
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [text(k), json(v)])) as T;
    }
    return value;
  };
  return { text, json };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
