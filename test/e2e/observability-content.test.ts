// E2E, spec 3 §6 "Audit capture": an otlp_http exporter with `content_mode: full` receives the
// request body and the extracted (or raw) response text as span attributes, each cut to its own
// `content_max_bytes`; a metadata_only exporter beside it gets no content; the usage log line
// on stderr and the usage NDJSON file never hold it. Covers a chat JSON request, a chat stream,
// a pass-through request, and a reload that turns capture off.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { startGateway, type Gateway } from '../harness/spawn.ts';
import { startMockUpstream, type MockUpstream } from '../harness/mock-upstream.ts';
import { attr, startOtlpReceiver, until, type OtlpReceiver } from '../harness/otlp-receiver.ts';
import { openAIJson, replyFor } from '../harness/provider-wire.ts';
import { waitForLines } from '../harness/log-lines.ts';

const CALLER_KEY = 'sk-e2e-content-caller-5a1c';
const SMALL_CAP = 24;
const ANSWER = 'The capital of France is Paris — très bien 🇫🇷.';

let mock: MockUpstream;
let full: OtlpReceiver;
let small: OtlpReceiver;
let meta: OtlpReceiver;
let gw: Gateway;
let dir: string;
let usageFile: string;

function resources(mode: 'full' | 'metadata_only'): object {
  return {
    _format_version: '1',
    provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-e2e-content-upstream', api_base: `${mock.url}/v1` }],
    models: [{ display_name: 'fast', provider: 'openai', model_name: 'gpt-up', provider_key: 'up' }],
    api_keys: [{ display_name: 'caller', key_env: 'E2E_CONTENT_KEY', allowed_models: ['fast'], allowed_routes: ['*'] }],
    passthrough_routes: [{ name: 'vendor', path_prefix: '/passthrough/vendor', target_url: mock.url, provider_key: 'up' }],
    observability_exporters: [
      { name: 'audit', kind: 'otlp_http', endpoint: full.url, content_mode: mode },
      { name: 'audit-small', kind: 'otlp_http', endpoint: small.url, content_mode: mode, content_max_bytes: SMALL_CAP },
      { name: 'metrics-only', kind: 'otlp_http', endpoint: meta.url },
    ],
  };
}

before(async () => {
  mock = await startMockUpstream();
  mock.setFallback(replyFor({ text: ANSWER, usage: { input: 9, output: 12 } }));
  [full, small, meta] = await Promise.all([startOtlpReceiver(), startOtlpReceiver(), startOtlpReceiver()]);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-content-'));
  usageFile = path.join(dir, 'usage.ndjson');
  gw = await startGateway({
    config: {
      proxy: { addr: '127.0.0.1:0' },
      observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } }, usage_event: { file: usageFile } },
      upstream: { timeout_ms: 5000, retries: 0 },
    },
    resources: resources('full'),
    env: { E2E_CONTENT_KEY: CALLER_KEY },
  });
});
after(async () => {
  await gw?.stop();
  await Promise.all([mock?.close(), full?.close(), small?.close(), meta?.close()]);
  fs.rmSync(dir, { recursive: true, force: true });
});

const CONTENT_KEYS = ['tollgate.content.request', 'tollgate.content.response', 'tollgate.content.truncated'];

/** The span of request `id` at each receiver. */
async function spans(id: string): Promise<{ full: any; small: any; meta: any }> {
  const of = (r: OtlpReceiver, name: string) => until(`the ${name} span of ${id}`, () => r.acceptedSpans().find((s: any) => attr(s, 'tollgate.request_id')?.stringValue === id));
  const [f, s, m] = await Promise.all([of(full, 'audit'), of(small, 'audit-small'), of(meta, 'metrics-only')]);
  return { full: f, small: s, meta: m };
}

let seq = 0;
async function send(pathname: string, body: string): Promise<{ id: string; text: string }> {
  const id = `e2e-content-${++seq}`;
  const res = await fetch(`${gw.proxyUrl}${pathname}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}`, 'x-tollgate-request-id': id },
    body,
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return { id, text };
}

/** The prompt never reaches the usage log line (stderr) or the usage file. */
async function assertNotLogged(id: string, prompt: string): Promise<void> {
  const [line] = await waitForLines(gw, 'usage', (l) => l.request_id === id);
  assert.ok(line, 'the usage line was written');
  const stderrLine = gw.stderrText().split('\n').find((l) => l.includes(`"request_id":"${id}"`) && l.includes('"type":"usage"'));
  assert.ok(stderrLine !== undefined && !stderrLine.includes(prompt), 'the usage log line holds no prompt text');
  assert.ok(!gw.stderrText().includes(prompt), 'no stderr line holds the prompt');
  assert.ok(!gw.stderrText().includes('tollgate.content'), 'no content attribute in any log line');
  const fileLine = await until('the usage file line', () => {
    const text = fs.existsSync(usageFile) ? fs.readFileSync(usageFile, 'utf8') : '';
    return text.split('\n').find((l) => l.includes(`"request_id":"${id}"`));
  });
  assert.ok(!fileLine.includes(prompt), 'the usage file line holds no prompt text');
}

function assertCapped(span: any, request: string): void {
  const req = attr(span, 'tollgate.content.request').stringValue as string;
  const res = attr(span, 'tollgate.content.response').stringValue as string;
  assert.ok(Buffer.byteLength(req) <= SMALL_CAP && Buffer.byteLength(res) <= SMALL_CAP, `capped at ${SMALL_CAP} bytes: ${req} / ${res}`);
  assert.ok(request.startsWith(req) && req.length > 0, 'a prefix of the request body');
  assert.ok(ANSWER.startsWith(res) && res.length > 0, 'a prefix of the response text');
  assert.deepEqual(attr(span, 'tollgate.content.truncated'), { boolValue: true });
}

test('chat JSON: the request body and the extracted answer, capped per exporter, none for metadata_only, never logged', async () => {
  const prompt = 'PROMPT-json: what is the capital of France?';
  const body = JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: prompt }] });
  const { id, text } = await send('/v1/chat/completions', body);
  assert.equal(JSON.parse(text).choices[0].message.content, ANSWER);
  const s = await spans(id);
  assert.deepEqual(attr(s.full, 'tollgate.content.request'), { stringValue: body });
  assert.deepEqual(attr(s.full, 'tollgate.content.response'), { stringValue: ANSWER });
  assert.deepEqual(attr(s.full, 'tollgate.content.truncated'), { boolValue: false });
  assertCapped(s.small, body);
  for (const k of CONTENT_KEYS) assert.equal(attr(s.meta, k), undefined, `metadata_only exporter got ${k}`);
  assert.ok(!Buffer.concat(meta.received.map((r) => r.raw)).includes(prompt));
  await assertNotLogged(id, prompt);
});

test('chat stream: the deltas concatenated as the response text', async () => {
  const prompt = 'PROMPT-stream: and of Germany?';
  const body = JSON.stringify({ model: 'fast', stream: true, messages: [{ role: 'user', content: prompt }] });
  const { id, text } = await send('/v1/chat/completions', body);
  assert.ok(text.includes('data: '), 'an event stream');
  const s = await spans(id);
  assert.deepEqual(attr(s.full, 'tollgate.content.request'), { stringValue: body });
  assert.deepEqual(attr(s.full, 'tollgate.content.response'), { stringValue: ANSWER });
  assert.deepEqual(attr(s.full, 'tollgate.content.truncated'), { boolValue: false });
  assertCapped(s.small, body);
  for (const k of CONTENT_KEYS) assert.equal(attr(s.meta, k), undefined, k);
  await assertNotLogged(id, prompt);
});

test('pass-through: the same capture (request body, extracted answer); an unknown body is exported raw', async () => {
  const prompt = 'PROMPT-passthrough: and of Italy?';
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: prompt }] });
  mock.script({ json: openAIJson({ text: ANSWER }, 'gpt-4o-mini') });
  const { id } = await send('/passthrough/vendor/v1/chat/completions', body);
  const s = await spans(id);
  assert.deepEqual(attr(s.full, 'tollgate.operation'), { stringValue: 'passthrough' });
  assert.deepEqual(attr(s.full, 'tollgate.content.request'), { stringValue: body });
  assert.deepEqual(attr(s.full, 'tollgate.content.response'), { stringValue: ANSWER });
  assertCapped(s.small, body);
  for (const k of CONTENT_KEYS) assert.equal(attr(s.meta, k), undefined, k);
  await assertNotLogged(id, prompt);

  const raw = '{"object":"vendor.thing","value":42}';
  mock.script({ json: JSON.parse(raw) });
  const other = await send('/passthrough/vendor/v1/things', '{"kind":"thing"}');
  const t = await spans(other.id);
  assert.deepEqual(attr(t.full, 'tollgate.content.request'), { stringValue: '{"kind":"thing"}' });
  assert.deepEqual(attr(t.full, 'tollgate.content.response'), { stringValue: raw });
});

test('a reload to metadata_only turns capture off: later spans carry no content', async () => {
  const generation = async (): Promise<number> => ((await (await fetch(`${gw.metricsUrl}/status/config`)).json()) as { generation: number }).generation;
  const before = await generation();
  fs.writeFileSync(gw.resourcesPath!, YAML.stringify(resources('metadata_only')));
  gw.signal('SIGHUP');
  const deadline = Date.now() + 10_000;
  while ((await generation()) === before) {
    if (Date.now() > deadline) throw new Error('the reload was not applied');
    await new Promise((r) => setTimeout(r, 50));
  }
  const prompt = 'PROMPT-after-reload';
  const { id } = await send('/v1/chat/completions', JSON.stringify({ model: 'fast', messages: [{ role: 'user', content: prompt }] }));
  const s = await spans(id);
  for (const span of [s.full, s.small, s.meta]) {
    for (const k of CONTENT_KEYS) assert.equal(attr(span, k), undefined, k);
  }
});
