// Derived resource ids: a resources file never carries ids; each entry's id is the UUIDv5 of
// "<collection>/<identity>" in the reference gateway's namespace, so ids are stable across
// reloads (rate-limit buckets keyed by id survive SIGHUP) and equal the reference gateway's.

import { v5 as uuidv5 } from 'uuid';

/** uuid5(URL namespace, "https://github.com/api7/aisix#resources-file"), fixed by the reference format. */
export const RESOURCE_ID_NAMESPACE = '63e50ab2-677a-54d3-8d1e-c0cb29ceae94';

/** The id of the entry named `identity` in `collection` (e.g. `deriveId('models', 'fast')`). */
export function deriveId(collection: string, identity: string): string {
  return uuidv5(`${collection}/${identity}`, RESOURCE_ID_NAMESPACE);
}
