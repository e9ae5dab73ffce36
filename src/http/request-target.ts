// The request target as a path: RFC 9112 §3.2.2 has servers accept the absolute form
// (`GET http://host/v1/models`), which Node hands over as is.

const ABSOLUTE = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/** `/path?query` of an origin-form or absolute-form target; any other form unchanged. */
export function originForm(target: string): string {
  if (target.charCodeAt(0) === 47) return target;
  const m = ABSOLUTE.exec(target);
  if (m === null) return target;
  const rest = target.slice(m[0].length);
  return rest === '' ? '/' : rest.charCodeAt(0) === 63 ? `/${rest}` : rest;
}
