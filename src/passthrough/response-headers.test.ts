import { test } from 'node:test';
import assert from 'node:assert/strict';
import { relayedResponseHeaders } from './response-headers.ts';

test('hop-by-hop headers, Connection-named headers and x-tollgate-* are dropped; the rest is kept as sent', () => {
  const out = relayedResponseHeaders([
    'Content-Type', 'application/json', 'Connection', 'keep-alive, X-Hop', 'Keep-Alive', 'timeout=5', 'Transfer-Encoding', 'chunked',
    'X-Hop', 'h', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2', 'X-Tollgate-Request-Id', 'upstream-id', 'Vary', 'Accept', 'Vary', 'Origin',
    'Location', 'https://elsewhere.example.com/x', 'Upgrade', 'h2c', 'Proxy-Authenticate', 'Basic',
  ], 'rid', { dropContentLength: false });
  assert.deepEqual(out, [
    'Content-Type', 'application/json', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2', 'Vary', 'Accept', 'Vary', 'Origin',
    'Location', 'https://elsewhere.example.com/x', 'x-tollgate-request-id', 'rid',
  ]);
});

test('content-length is kept, dropped for event streams, or replaced for a re-framed body', () => {
  const raw = ['Content-Length', '10', 'Content-Type', 'text/plain'];
  assert.deepEqual(relayedResponseHeaders(raw, 'r', { dropContentLength: false }), ['Content-Length', '10', 'Content-Type', 'text/plain', 'x-tollgate-request-id', 'r']);
  assert.deepEqual(relayedResponseHeaders(raw, 'r', { dropContentLength: true }), ['Content-Type', 'text/plain', 'x-tollgate-request-id', 'r']);
  assert.deepEqual(relayedResponseHeaders(raw, 'r', { dropContentLength: false, contentLength: 4 }), [
    'Content-Type', 'text/plain', 'content-length', '4', 'x-tollgate-request-id', 'r',
  ]);
});
