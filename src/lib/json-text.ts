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

/** The fraction of a millisecond in whole microseconds as the shortest decimal writes it: '', '.5', '.25', '.125'. */
const MICROS: readonly string[] = Array.from({ length: 1000 }, (_, f) => (f === 0 ? '' : `.${String(f).padStart(3, '0').replace(/0+$/, '')}`));

/**
 * A number as JSON writes it: `null` for null, undefined, NaN and the infinities. Durations in
 * whole microseconds (the records' milliseconds, rounded to three decimals) are the common
 * non-integer: their shortest form is the integer part and one of a thousand fractions, which
 * skips the engine's shortest-form algorithm for doubles. Below 1e12 the doubles a thousandth
 * apart are always distinct, so that text is the one the engine writes.
 */
export function jsonNumber(v: number | null | undefined): string {
  if (v === null || v === undefined) return 'null';
  if (Number.isInteger(v)) return `${v}`;
  const k = Math.round(v * 1000);
  if (k / 1000 === v && k > 0 && k < 1e15) {
    const whole = Math.floor(k / 1000);
    return `${whole}${MICROS[k - whole * 1000]}`;
  }
  return Number.isFinite(v) ? `${v}` : 'null';
}

/** A list or map: its JSON text, without serialising when it is empty (the common case). */
export function jsonList(v: readonly unknown[]): string {
  return v.length === 0 ? '[]' : JSON.stringify(v);
}

export function jsonMap(v: object): string {
  for (const _ in v) return JSON.stringify(v);
  return '{}';
}

/** Constant JSON text (a line's fixed ending) as UTF-8 bytes, made once. */
export const jsonText = (text: string): Uint8Array => new Uint8Array(Buffer.from(text));
