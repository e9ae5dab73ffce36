// E2E: target health across SIGHUP reloads. A group target served by a wildcard model has its own
// health key (`<model id>#<upstream model>`); a reload must keep the cooldown of every target the
// new snapshot still routes to, and forget the targets it no longer has. The steps share one
// process and run in order.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import YAML from 'yaml';
import type { Gateway } from '../harness/spawn.ts';
import { useProxyFixture } from '../harness/proxy-fixture.ts';
import type { MockUpstream, RecordedRequest, Reply } from '../harness/mock-upstream.ts';
import { errorReplyFor, replyFor } from '../harness/provider-wire.ts';
import { deriveId } from '../../src/resources/ids.ts';

const CALLER_KEY = 'sk-e2e-routing-reload-caller';
const WAIT_MS = 5_000;

let mock: MockUpstream;
let gw: Gateway;
let mockUrl: string;

/** `wild/<name>` is served by one wildcard model; the group routes to one of its names, then `ok`. */
const resources = (wildTarget: string, generation: number) => ({
  _format_version: '1',
  provider_keys: [{ display_name: 'up', provider: 'openai', api_key: 'sk-up', api_base: `${mockUrl}/v1` }],
  models: [
    { display_name: 'wild/*', provider: 'openai', model_name: '*', provider_key: 'up' },
    { display_name: 'ok', provider: 'openai', model_name: 'ok-up', provider_key: 'up' },
    { display_name: 'g', routing: { targets: [{ model: wildTarget }, { model: 'ok' }] } },
    // Changes the file so each reload is a real new generation.
    { display_name: `filler-${generation}`, provider: 'openai', model_name: 'filler-up', provider_key: 'up' },
  ],
  api_keys: [{ display_name: 'caller', key_env: 'E2E_ROUTING_RELOAD_KEY', allowed_models: ['*'] }],
});

useProxyFixture({
  resources: (url) => {
    mockUrl = url;
    return resources('wild/bad', 1);
  },
  env: { E2E_ROUTING_RELOAD_KEY: CALLER_KEY },
  ready: (fx) => ({ mock, gw } = fx),
});

function failing(upstreamModel: string): void {
  mock.setFallback((req: RecordedRequest): Reply =>
    req.json?.model === upstreamModel ? errorReplyFor(502, 'bad_gateway', 'down')(req) : replyFor({ text: 'served' })(req));
}

const calledModels = (): string[] => mock.requests.map((r) => r.json?.model);

async function ask(model: string): Promise<string | null> {
  const res = await fetch(`${gw.proxyUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER_KEY}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const body = await res.text();
  assert.equal(res.status, 200, body);
  return res.headers.get('x-tollgate-served-by');
}

async function healthRows(): Promise<any[]> {
  const status: any = await (await fetch(`${gw.metricsUrl}/status/models`)).json();
  return status.models;
}

async function healthKeys(): Promise<string[]> {
  return (await healthRows()).map((m: any) => m.key);
}

async function reload(doc: object): Promise<void> {
  const before: any = await (await fetch(`${gw.metricsUrl}/status/config`)).json();
  fs.writeFileSync(gw.resourcesPath!, YAML.stringify(doc));
  gw.signal('SIGHUP');
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const now: any = await (await fetch(`${gw.metricsUrl}/status/config`)).json();
    if (now.generation > before.generation) return;
    if (Date.now() > deadline) assert.fail(`no reload within ${WAIT_MS} ms: ${gw.stderrText()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const WILD = deriveId('models', 'wild/*');

describe('target health across reloads', () => {
  it('a cooled-down wildcard target stays cooled down after a reload that keeps it', async () => {
    failing('bad');
    assert.equal(await ask('g'), 'ok');
    assert.deepEqual(calledModels(), ['bad', 'ok-up']);
    const rows = await healthRows();
    const wildRow = rows.find((m) => m.key === `${WILD}#bad`);
    assert.ok(wildRow, JSON.stringify(rows));
    assert.equal(wildRow.model, 'wild/*', 'the row of a wildcard target names its model');
    assert.equal(wildRow.upstream_model, 'bad');
    assert.ok(wildRow.cooling_down_until !== null);
    const okRow = rows.find((m) => m.model === 'ok');
    assert.equal(okRow?.key, deriveId('models', 'ok'));
    assert.equal(okRow?.upstream_model, 'ok-up');

    await reload(resources('wild/bad', 2));
    mock.reset();
    failing('bad');
    assert.equal(await ask('g'), 'ok');
    assert.deepEqual(calledModels(), ['ok-up'], 'the cooled-down target is still skipped after the reload');
  });

  it('a reload that drops the wildcard target forgets its health', async () => {
    await reload(resources('wild/other', 3));
    const keys = await healthKeys();
    assert.ok(!keys.includes(`${WILD}#bad`), keys.join(','));
    mock.reset();
    failing('bad');
    assert.equal(await ask('g'), 'wild/*');
    assert.deepEqual(calledModels(), ['other']);
  });
});
