// ISO 8601 timestamps with milliseconds (`YYYY-MM-DDTHH:MM:SS.mmmZ`, Date#toISOString's text)
// for the per-request records. `new Date().toISOString()` costs ~16k instructions (the Date
// object, then the C++ formatter); here the minute's prefix is formatted once a minute and each
// timestamp only appends its seconds and milliseconds to it.

let minuteStart = Number.NaN;
let minutePrefix = '';
/**
 * The last timestamp written, and its instant: requests finishing in the same millisecond (about
 * ten at 10k requests a second) share one string, and the span encoder reads it back for free.
 */
let lastMs = Number.NaN;
let lastText = '';

/** `ms` (milliseconds since the epoch, default now) as Date#toISOString writes it. */
export function isoTime(ms: number = Date.now()): string {
  if (ms === lastMs) return lastText;
  let inMinute = ms - minuteStart;
  if (!(inMinute >= 0 && inMinute < 60_000 && Number.isInteger(ms))) {
    // Outside the cached minute (or not an integer count of ms in 0000-9999): the formatter itself.
    if (!Number.isInteger(ms) || ms < 0 || ms >= 253402300800000) return new Date(ms).toISOString();
    minuteStart = ms - (ms % 60_000);
    minutePrefix = new Date(minuteStart).toISOString().slice(0, 17);
    inMinute = ms - minuteStart;
  }
  const s = Math.floor(inMinute / 1000);
  const m = inMinute - s * 1000;
  lastText = `${minutePrefix}${s < 10 ? '0' : ''}${s}.${m < 10 ? '00' : m < 100 ? '0' : ''}${m}Z`;
  lastMs = ms;
  return lastText;
}

/** The decimal digit at `i` of `text`, or NaN. */
function digit(text: string, i: number): number {
  const d = text.charCodeAt(i) - 0x30;
  return d >= 0 && d <= 9 ? d : Number.NaN;
}

/**
 * The instant an ISO timestamp names, in milliseconds since the epoch (Date.parse's result). The
 * timestamp isoTime wrote last (the usage event's occurred_at, read back by the span encoder) is
 * known; one in the minute it formatted last is read from its seconds and milliseconds alone.
 */
export function isoTimeMs(text: string): number {
  if (text === lastText) return lastMs;
  if (text.length === 24 && minutePrefix !== '' && text.startsWith(minutePrefix) && text.charCodeAt(19) === 0x2e && text.charCodeAt(23) === 0x5a) {
    const s = digit(text, 17) * 10 + digit(text, 18);
    const m = digit(text, 20) * 100 + digit(text, 21) * 10 + digit(text, 22);
    if (s < 60 && m >= 0) return minuteStart + s * 1000 + m;
  }
  return Date.parse(text);
}
