import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseWrkOutput, wrkScript } from './wrk.ts';

const SAMPLE = `Running 5s test @ http://127.0.0.1:1234/v1/chat/completions
  1 threads and 64 connections
WRK_RESULT {"requests":75000,"duration_us":5000000,"connect":0,"read":1,"write":0,"status":2,"timeout":3,"p50":3100,"p99":9000,"max":20000}
`;

test('parseWrkOutput reads the done() hook line', () => {
  const r = parseWrkOutput(SAMPLE);
  assert.equal(r.requests, 75000);
  assert.equal(r.durationSec, 5);
  assert.equal(r.requestsPerSec, 15000);
  assert.equal(r.errors, 6);
  assert.equal(r.non2xx, 2);
  assert.equal(r.latencyP99Us, 9000);
});

test('parseWrkOutput fails loudly without the summary line', () => {
  assert.throws(() => parseWrkOutput('Requests/sec: 100\n'), /no summary/);
});

test('wrkScript posts the body verbatim with the headers', () => {
  const lua = wrkScript('{"a":"b"}', { Authorization: 'Bearer k' });
  assert.match(lua, /wrk\.method = "POST"/);
  assert.match(lua, /wrk\.body = \[==\[\{"a":"b"\}\]==\]/);
  assert.match(lua, /wrk\.headers\["Authorization"\] = "Bearer k"/);
  assert.match(lua, /wrk\.headers\["Content-Type"\] = "application\/json"/);
  assert.throws(() => wrkScript('x]==]y', {}), /body/);
});
