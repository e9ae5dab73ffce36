// JSON text pieces for the hand-written serialisers of the per-request observability records
// (usage-event and access-log lines). A record of fixed shape written as one template literal of
// constant keys and these pieces costs about a third fewer instructions than JSON.stringify of
// the same object (`npm run bench:serialisers`), and the text is the same: each piece is exactly
// what JSON.stringify writes for its value.

/** Characters JSON writes as they are (printable ASCII but `"` and `\`). */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** `s` as a JSON string literal. */
export const jsonString = (s: string): string => (PLAIN.test(s) ? `"${s}"` : JSON.stringify(s));

/** A string, or `null` for null or undefined. */
export const jsonStringOrNull = (s: string | null | undefined): string => (s === null || s === undefined ? 'null' : jsonString(s));

/** A number as JSON writes it: `null` for null, undefined, NaN and the infinities. */
export const jsonNumber = (v: number | null | undefined): string => (v === null || v === undefined || !Number.isFinite(v) ? 'null' : `${v}`);

/** A list or map: its JSON text, without serialising when it is empty (the common case). */
export function jsonList(v: readonly unknown[]): string {
  return v.length === 0 ? '[]' : JSON.stringify(v);
}

export function jsonMap(v: object): string {
  for (const _ in v) return JSON.stringify(v);
  return '{}';
}
