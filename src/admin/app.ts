// The admin listener's Fastify app. This foundation serves an authenticated health check;
// later admin families (/api, /apisix/admin, /tollgate/admin resources) plug in here.
// Errors use the admin envelope `{error_msg}`.
import { timingSafeEqual, createHash } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';

export interface AdminOptions {
  adminKeys: readonly string[];
  status: () => { generation: number };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

function presented(headers: Record<string, string | string[] | undefined>): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth.toLowerCase().startsWith('bearer ')) return auth.slice(7).trim() || undefined;
  const x = headers['x-api-key'];
  return typeof x === 'string' && x !== '' ? x : undefined;
}

export function buildAdminApp(options: AdminOptions): FastifyInstance {
  const app = Fastify({ logger: false });
  const keys = options.adminKeys.map(digest);
  app.addHook('onRequest', async (req, reply) => {
    const key = presented(req.headers);
    // Compare digests in constant time so response timing reveals nothing about the keys.
    const ok = key !== undefined && keys.some((k) => timingSafeEqual(k, digest(key)));
    if (!ok) return reply.code(401).send({ error_msg: 'missing or invalid admin key' });
  });
  app.setNotFoundHandler((_req, reply) => reply.code(404).send({ error_msg: 'not found' }));
  app.setErrorHandler((err: { statusCode?: number; message: string }, _req, reply) => {
    const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    return reply.code(status).send({ error_msg: status === 500 ? 'internal error' : err.message });
  });
  app.get('/tollgate/admin/health', async () => ({ status: 'ok', generation: options.status().generation }));
  return app;
}
