// identity_header (spec 3 §2.1): a trusted device's identity for the caller, recorded as the
// usage event's client_identity. Bounded: control characters removed, trimmed, at most 256
// characters; an empty result records nothing.

export const MAX_IDENTITY_CHARS = 256;

export function boundedIdentity(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  const raw = Array.isArray(value) ? value[0] ?? '' : value;
  let out = '';
  for (let i = 0; i < raw.length && out.length < MAX_IDENTITY_CHARS * 2; i++) {
    const c = raw.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) continue;
    out += raw[i];
  }
  out = out.trim();
  if (out.length > MAX_IDENTITY_CHARS) out = out.slice(0, MAX_IDENTITY_CHARS);
  return out === '' ? null : out;
}
