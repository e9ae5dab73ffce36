// Helpers for the pass-through unit tests: a real snapshot built by the resources loader from a
// small document, so tests exercise the same compiled routes the gateway serves.
import { createHash } from 'node:crypto';
import { stringify } from 'yaml';
import { loadResourcesText } from '../resources/loader.ts';
import { Snapshot } from '../snapshot/snapshot.ts';

export const PK = { display_name: 'pk', provider: 'openai', api_key: 'sk-provider' };

export function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/** A snapshot of `{ _format_version: "1", provider_keys: [PK], ...body }`; throws on load errors. */
export function snapshotOf(body: Record<string, unknown>, env: Record<string, string> = {}): Snapshot {
  const r = loadResourcesText(stringify({ _format_version: '1', provider_keys: [PK], ...body }), env);
  if (!r.ok) throw new Error(`resources did not load:\n  ${r.errors.join('\n  ')}`);
  return new Snapshot(r.resources, 1, r.count);
}
