// Histogram bucket lists as the configuration accepts them (`observability.metrics.buckets`).

/** Errors of a bucket list: finite, positive, strictly ascending, non-empty. */
export function bucketErrors(path: string, buckets: readonly number[]): string[] {
  if (buckets.length === 0) return [`${path}: must list at least one bucket`];
  for (let i = 0; i < buckets.length; i++) {
    const b = buckets[i];
    if (!Number.isFinite(b) || b <= 0) return [`${path}[${i}]: must be a finite number > 0`];
    if (i > 0 && b <= buckets[i - 1]) return [`${path}: must be strictly ascending (${buckets[i - 1]} then ${b})`];
  }
  return [];
}
