import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../config/load.ts';
import { createLimiter, type RateLimitConfig } from './create.ts';

function section(env: Record<string, string>): RateLimitConfig {
  const r = loadConfig({ env });
  if (!r.ok) assert.fail(r.errors.join('\n'));
  return r.config.ratelimit;
}

// The section's cross-key rules are checked by the config loader: src/config/load.test.ts.

test('a redis limiter starts even when Redis cannot be reached, and closes', async () => {
  const started = Date.now();
  const limiter = await createLimiter(section({ TOLLGATE_RATELIMIT__BACKEND: 'redis', TOLLGATE_RATELIMIT__REDIS__URL: 'redis://127.0.0.1:1' }), {});
  assert.ok(Date.now() - started < 3000);
  await limiter.close();
});
