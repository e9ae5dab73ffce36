// Upstream endpoints of pass-through targets. A target_url is compiled once per snapshot; a
// preserve_host target is built per request from the matched host. Connection pools: the shared
// per-origin pools of http/upstream.ts for plain targets, and one keep-alive agent per TLS
// setting (an agent pools per host:port itself) for preserve_host targets and provider keys with
// their own trust settings, so a wildcard host cannot grow the set of pools.
import https from 'node:https';
import { createHash } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import { compileEndpoint, type UpstreamEndpoint } from '../http/upstream.ts';
import type { UpstreamTls } from './credentials.ts';

const AGENT_OPTIONS: https.AgentOptions = { keepAlive: true, keepAliveMsecs: 1000, maxFreeSockets: 1024, scheduling: 'lifo' };

const tlsAgents = new Map<string, https.Agent>();

function httpsAgent(tls: UpstreamTls | undefined): https.Agent {
  const id = tls === undefined ? 'default' : `${tls.verify}|${tls.caCert === undefined ? '' : createHash('sha256').update(tls.caCert).digest('hex')}`;
  let agent = tlsAgents.get(id);
  if (agent === undefined) {
    const options: https.AgentOptions = { ...AGENT_OPTIONS };
    if (tls !== undefined) {
      options.rejectUnauthorized = tls.verify;
      // The key's bundle is trusted in addition to the public roots.
      if (tls.caCert !== undefined) options.ca = [...rootCertificates, tls.caCert];
    }
    agent = new https.Agent(options);
    tlsAgents.set(id, agent);
  }
  return agent;
}

/** The endpoint of a target_url (its path and query are kept by the caller, not here). */
export function targetUrlEndpoint(url: URL, tls: UpstreamTls | undefined): UpstreamEndpoint {
  const base = compileEndpoint(url.origin);
  if (tls === undefined || url.protocol !== 'https:') return base;
  return { ...base, agent: httpsAgent(tls) };
}

/** `https://<host>` for a preserve_host route; `host` is the normalized inbound host. */
export function preserveHostEndpoint(host: string, tls: UpstreamTls | undefined): UpstreamEndpoint {
  const hostname = host.startsWith('[') ? host.slice(1, -1) : host;
  return { origin: `https://${host}`, protocol: 'https:', hostname, port: 443, path: '/', agent: httpsAgent(tls) };
}
