/**
 * A name someone else chose (a client's tool or argument name), quoted for a message in at most
 * 64 of its characters (pure): the name may be megabytes, and the message goes back whole.
 */
export const QUOTED_NAME_CHARS = 64;

export function quotedName(name: string): string {
  return JSON.stringify(
    name.length > QUOTED_NAME_CHARS ? `${name.slice(0, QUOTED_NAME_CHARS)}...` : name,
  );
}
