// The Node.js the launcher needs. Plain JavaScript that any Node runs, so that an older `node` on
// PATH (the `tollgate` command's shebang, `node bin/tollgate.js`) says what is wrong instead of
// failing on the TypeScript it cannot load.

/** The oldest Node.js major version Tollgate runs on (package.json `engines`). */
export const MIN_NODE_MAJOR = 24;

/** Why `version` (as process.version writes it) cannot run Tollgate; undefined when it can. */
export function nodeVersionProblem(version) {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (major >= MIN_NODE_MAJOR) return undefined;
  return `tollgate: needs Node.js ${MIN_NODE_MAJOR} or later, and this is ${version}. ` +
    'Run it through npm, which uses the Node.js that npm ci installed: `npm start -- <options>` or `npx tollgate <command>`.';
}
