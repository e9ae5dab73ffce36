// Routing tags: a caller narrows a model group to the targets carrying one of the tags it names
// in the `x-tollgate-routing-tags` header (comma-separated). When no target carries any of them,
// the targets tagged `default` serve; a request without the header is not filtered.
export const ROUTING_TAGS_HEADER = 'x-tollgate-routing-tags';
export const DEFAULT_TAG = 'default';

/** The tags a request names (trimmed, empty ones dropped); undefined when it names none. */
export function requestedTags(header: string | string[] | undefined): ReadonlySet<string> | undefined {
  if (header === undefined) return undefined;
  const tags = new Set<string>();
  for (const value of Array.isArray(header) ? header : [header]) {
    for (const part of value.split(',')) {
      const tag = part.trim();
      if (tag !== '') tags.add(tag);
    }
  }
  return tags.size === 0 ? undefined : tags;
}

/**
 * Which of `targets` a request naming `tags` may use: those carrying one of them, else those
 * tagged `default`; undefined when the request names no tags (every target).
 */
export function tagFilter<T extends { readonly tags: readonly string[] }>(targets: readonly T[], tags: ReadonlySet<string> | undefined): ((target: T) => boolean) | undefined {
  if (tags === undefined) return undefined;
  const carries = (t: T): boolean => t.tags.some((tag) => tags.has(tag));
  return targets.some(carries) ? carries : (t) => t.tags.includes(DEFAULT_TAG);
}
