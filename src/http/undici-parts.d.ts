// Types of the undici modules the upstream client loads by path rather than through the package
// index (see upstream.ts for why): each is the CommonJS module whose export the index re-exports.
declare module 'undici/lib/dispatcher/agent.js' {
  import type { Agent } from 'undici';
  const agent: typeof Agent;
  export default agent;
}

declare module 'undici/lib/core/connect.js' {
  import type { buildConnector } from 'undici';
  const build: typeof buildConnector;
  export default build;
}

declare module 'undici/lib/core/errors.js' {
  import type { errors } from 'undici';
  const all: typeof errors;
  export default all;
}
