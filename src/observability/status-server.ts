// The metrics/status listener's handler: Prometheus exposition and the status documents
// (`/status/config`, `/status/models`).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Metrics } from './metrics.ts';

/** `/status/config`: what configuration is serving, and how the last load went. */
export interface ConfigStatus {
  source: { type: 'file'; path: string };
  /** Snapshot generation (1 for the first load, +1 per applied reload). */
  generation: number;
  /** Revision of the serving resources: the generation, for a file source. */
  revision: number;
  /** `sha256:<hex>` of the serving resources (normalised documents), to compare replicas. */
  hash: string | undefined;
  applied_at: string | undefined;
  resource_counts: Record<string, number>;
  last_reload: { at: string; ok: boolean; errors?: string[] } | undefined;
  /**
   * Resources the last load refused. A file source is applied whole or not at all, so after a
   * failed reload every error of the file is listed here (the previous snapshot keeps serving).
   */
  rejected_resources: Array<{ error: string }>;
}

/**
 * @param documents JSON status documents by path (`/status/config`, `/status/models`), each
 *   produced at request time.
 */
export function createStatusHandler(
  metrics: Metrics,
  metricsPath: string,
  documents: Readonly<Record<string, () => unknown>>,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-length': 0 }).end();
      return;
    }
    if (path === metricsPath) {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        () => res.writeHead(500, { 'content-length': 0 }).end(),
      );
      return;
    }
    const document = Object.hasOwn(documents, path) ? documents[path] : undefined;
    if (document !== undefined) {
      const body = JSON.stringify(document());
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      return;
    }
    res.writeHead(404, { 'content-length': 0 }).end();
  };
}
