// The one way a configured regular expression is compiled, at load (resources/) and when a
// snapshot is built (limits/).

/**
 * Compile a configured pattern the way the gateway runs it: JavaScript syntax with the `u`
 * flag, and a leading `(?i)` (the reference gateway's syntax) taken as the `i` flag.
 * Throws SyntaxError for an invalid pattern.
 */
export function compileGatewayRegex(value: string, extraFlags = ''): RegExp {
  const insensitive = value.startsWith('(?i)');
  // A flag given twice is a SyntaxError: `(?i)` under a case-insensitive operator is just `i`.
  const flags = insensitive && !extraFlags.includes('i') ? `ui${extraFlags}` : `u${extraFlags}`;
  return new RegExp(insensitive ? value.slice(4) : value, flags);
}
