// The debug listener's handler (`observability.debug`, default 127.0.0.1:9091): heap diagnostics
// at `path` (default /debug/pprof/heap). A plain GET answers V8 heap statistics as JSON, cheap
// enough to poll; `?format=heapsnapshot` streams a full V8 heap snapshot (open it in Chrome
// DevTools), which pauses the process while it is written — use it on loopback, by hand.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import v8 from 'node:v8';

export function heapStatistics(): Record<string, unknown> {
  return {
    pid: process.pid,
    uptime_seconds: Math.round(process.uptime()),
    memory_usage: process.memoryUsage(),
    heap: v8.getHeapStatistics(),
    heap_spaces: v8.getHeapSpaceStatistics(),
  };
}

export function createDebugHandler(path: string): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://debug');
    if (url.pathname !== path) {
      res.writeHead(404, { 'content-length': 0 }).end();
      return;
    }
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET', 'content-length': 0 }).end();
      return;
    }
    if (url.searchParams.get('format') === 'heapsnapshot') {
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-disposition': `attachment; filename="tollgate-${process.pid}-${Date.now()}.heapsnapshot"`,
      });
      pipeline(v8.getHeapSnapshot(), res, () => {});
      return;
    }
    const body = JSON.stringify(heapStatistics());
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  };
}
