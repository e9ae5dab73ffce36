// Values made from the slowly changing part of a record (who called which model, how it ended),
// kept for the records that follow. The serialisers of the per-request records make the text of
// that part once and reuse it while later requests have the same values, which they mostly do:
// a gateway's traffic comes from a few callers and models. A few kinds are kept, the most recent
// ones, so callers that take turns keep theirs; a record of a kind not kept costs `size`
// comparisons more than making its value directly.

export class KeptValues<R, K, V> {
  private readonly size: number;
  private readonly same: (key: K, record: R) => boolean;
  private readonly keyOf: (record: R) => K;
  private readonly make: (record: R) => V;
  private readonly keys: K[] = [];
  private readonly values: V[] = [];
  /** The slot last hit or filled: checked first. */
  private last = 0;
  /** The slot the next new value replaces (the oldest filled). */
  private next = 0;

  /**
   * `keyOf` copies what `make` reads of a record (records may change after they are seen);
   * `same` says whether a record has the values of a key.
   */
  constructor(size: number, same: (key: K, record: R) => boolean, keyOf: (record: R) => K, make: (record: R) => V) {
    this.size = size;
    this.same = same;
    this.keyOf = keyOf;
    this.make = make;
  }

  get(record: R): V {
    const keys = this.keys;
    const n = keys.length;
    if (n > 0 && this.same(keys[this.last], record)) return this.values[this.last];
    for (let i = 0; i < n; i++) {
      if (i !== this.last && this.same(keys[i], record)) {
        this.last = i;
        return this.values[i];
      }
    }
    const value = this.make(record);
    const slot = this.next;
    keys[slot] = this.keyOf(record);
    this.values[slot] = value;
    this.last = slot;
    this.next = (slot + 1) % this.size;
    return value;
  }
}
