// One spawned gateway in front of one scriptable mock upstream, shared by the tests of a file:
// registers the node:test hooks (start before, stop after, reset the mock before each test).
import { before, after, beforeEach } from 'node:test';
import OpenAI from 'openai';
import { startGateway, type Gateway } from './spawn.ts';
import { startMockUpstream, type MockUpstream } from './mock-upstream.ts';

export interface ProxyFixture {
  mock: MockUpstream;
  gw: Gateway;
  /** The official SDK pointed at the gateway with `callerKey` (when given), no retries. */
  client: OpenAI;
}

type Section = Record<string, unknown>;

export interface ProxyFixtureOptions {
  /** Merged per section over the test defaults (every listener on port 0, 10 s upstream timeout). */
  config?: { proxy?: Section; upstream?: Section; observability?: Section; [section: string]: unknown };
  /** The resources document, built once the mock's URL is known. */
  resources: (mockUrl: string) => object | Promise<object>;
  env?: Record<string, string>;
  callerKey?: string;
  /** Called once everything runs, e.g. to copy the fixture into the test file's variables. */
  ready?: (fx: ProxyFixture) => void;
}

export function testConfig(config: ProxyFixtureOptions['config'] = {}): object {
  return {
    ...config,
    proxy: { addr: '127.0.0.1:0', ...config.proxy },
    observability: { metrics: { prometheus: { addr: '127.0.0.1:0' } }, ...config.observability },
    upstream: { timeout_ms: 10_000, ...config.upstream },
  };
}

export function useProxyFixture(options: ProxyFixtureOptions): ProxyFixture {
  const fx = {} as ProxyFixture;
  before(async () => {
    fx.mock = await startMockUpstream();
    fx.gw = await startGateway({
      config: testConfig(options.config),
      resources: await options.resources(fx.mock.url),
      env: options.env,
    });
    if (options.callerKey !== undefined) {
      fx.client = new OpenAI({ apiKey: options.callerKey, baseURL: `${fx.gw.proxyUrl}/v1`, maxRetries: 0 });
    }
    options.ready?.(fx);
  });
  after(async () => {
    await fx.gw?.stop();
    await fx.mock?.close();
  });
  beforeEach(() => fx.mock.reset());
  return fx;
}
