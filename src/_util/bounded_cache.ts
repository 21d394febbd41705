/**
 * A map that keeps at most `maxSize` in all (each value's size given when set), dropping the
 * least recently used values first: what is cached for every caller must not grow with what
 * callers ask for.
 */
export class BoundedCache<K, V> {
  readonly #entries = new Map<K, { value: V; size: number }>();
  #size = 0;

  constructor(readonly maxSize: number) {}

  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    // Most recently used last: a Map keeps insertion order.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** Keeps `value` unless it alone is larger than the whole cache. */
  set(key: K, value: V, size: number): void {
    this.delete(key);
    if (size > this.maxSize) return;
    this.#entries.set(key, { value, size });
    this.#size += size;
    for (const [oldest, entry] of this.#entries) {
      if (this.#size <= this.maxSize) break;
      this.#entries.delete(oldest);
      this.#size -= entry.size;
    }
  }

  delete(key: K): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#size -= entry.size;
  }

  /** The sum of the sizes kept. */
  get size(): number {
    return this.#size;
  }
}
