// Snapshot: the immutable, precompiled runtime view of one generation of resources. The hot
// path reads one snapshot per request; lookups are Maps and presorted arrays.
import { compileGlob, globCapture, globMatches, type Glob } from '../lib/glob.ts';
import { OPERATIONS, type Adapter, type EndpointSpec, type Operation, type ProviderKeyView } from '../ai/providers/contract.ts';
import { adapterFor } from '../ai/providers/registry.ts';
import { compileBodyShaping, type BodyShaping } from '../ai/providers/key-body.ts';
import { compileKeyHeaders, type KeyHeaders } from '../ai/providers/key-headers.ts';
import { compileOpenAIResponseOptions, type OpenAIResponseOptions } from '../ai/protocols/openai-response-options.ts';
import type { ApiKey, Model, ProviderKey, Resources } from '../resources/types.ts';
import { compileSourceCidrs, type SourceCidrs } from '../lib/source-cidrs.ts';

export interface ApiKeyEntry {
  readonly id: string;
  readonly name: string | undefined;
  readonly allowedModels: readonly Glob[];
  readonly disabled: boolean;
  /** Epoch ms; the key is expired from this instant on. */
  readonly expiresAt: number | undefined;
  readonly doc: ApiKey;
}

export interface ProviderKeyEntry {
  readonly id: string;
  readonly name: string;
  readonly view: ProviderKeyView;
  /** Undefined when no adapter can serve the key; `unavailable` says why. */
  readonly adapter: Adapter | undefined;
  readonly unavailable: string | undefined;
  /** Upstream endpoint per operation, or why the key cannot serve it. */
  readonly endpoints: ReadonlyMap<Operation, EndpointSpec | Error>;
  /** The key's request body options; undefined when it has none. */
  readonly body: BodyShaping | undefined;
  /** Its default and forwarded caller headers; undefined when it has none. */
  readonly headers: KeyHeaders | undefined;
  /** How its OpenAI-family upstream answers (reasoning field, end marker); undefined = the defaults. */
  readonly response: OpenAIResponseOptions | undefined;
  /** Its upstream TLS trust; undefined = default verification against the public roots. */
  readonly tls: { readonly verify: boolean; readonly caCert: string | undefined } | undefined;
}

export interface ModelEntry {
  readonly id: string;
  readonly name: string;
  readonly glob: Glob;
  readonly kind: 'direct' | 'group';
  readonly provider: string;
  /** Fixed upstream name, a pattern with `*`, or undefined (the captured text is used). */
  readonly modelName: string | undefined;
  readonly providerKey: ProviderKeyEntry | undefined;
  readonly timeoutMs: number | undefined;
  readonly streamTimeoutMs: number | undefined;
  /** Client addresses allowed to use the model (`allowed_cidrs`); undefined = everyone. */
  readonly allowedCidrs: SourceCidrs | undefined;
  readonly doc: Model;
}

export interface ResolvedModel {
  readonly entry: ModelEntry;
  readonly upstreamModel: string;
}

function compileProviderKey(pk: ProviderKey): ProviderKeyEntry {
  const view: ProviderKeyView = {
    provider: pk.provider ?? '',
    apiKey: pk.api_key,
    apiBase: pk.api_base ?? undefined,
  };
  const options = {
    body: compileBodyShaping(pk.request, pk.response?.content_list_to_string),
    headers: compileKeyHeaders(pk.request),
    response: compileOpenAIResponseOptions(pk.response),
    tls: pk.tls !== undefined && (pk.tls.ca_cert !== undefined || pk.tls.verify === false)
      ? { verify: pk.tls.verify !== false, caCert: pk.tls.ca_cert }
      : undefined,
  };
  const adapter = adapterFor({ provider: view.provider, adapter: pk.adapter, api_base: pk.api_base });
  if (typeof adapter === 'string') {
    return { id: pk.id, name: pk.display_name, view, adapter: undefined, unavailable: adapter, endpoints: new Map(), ...options };
  }
  const endpoints = new Map<Operation, EndpointSpec | Error>();
  for (const op of OPERATIONS) endpoints.set(op, adapter.endpoint(op, view));
  return { id: pk.id, name: pk.display_name, view, adapter, unavailable: undefined, endpoints, ...options };
}

function compileModel(m: Model, keys: Map<string, ProviderKeyEntry>): ModelEntry {
  const cidrs = m.allowed_cidrs ?? [];
  const base = {
    id: m.id, name: m.display_name, glob: compileGlob(m.display_name), doc: m, timeoutMs: m.timeout, streamTimeoutMs: m.stream_timeout,
    allowedCidrs: cidrs.length === 0 ? undefined : compileSourceCidrs(cidrs),
  };
  if ('routing' in m && m.routing !== undefined) {
    return { ...base, kind: 'group', provider: 'group', modelName: undefined, providerKey: undefined };
  }
  const direct = m as Extract<Model, { provider_key_id: string }>;
  return {
    ...base,
    kind: 'direct',
    provider: direct.provider,
    modelName: direct.model_name,
    providerKey: keys.get(direct.provider_key_id),
  };
}

export class Snapshot {
  readonly generation: number;
  readonly createdAt = Date.now();
  readonly resources: Resources;
  readonly resourceCount: number;
  readonly apiKeysByHash = new Map<string, ApiKeyEntry>();
  readonly providerKeys = new Map<string, ProviderKeyEntry>();
  private readonly exactModels = new Map<string, ModelEntry>();
  /** Wildcard aliases, most specific (longest literal) first, ties in file order. */
  private readonly wildcardModels: ModelEntry[] = [];
  /** Concrete direct models by `<provider> <model_name>`, the smallest id on ties. */
  private readonly modelsByUpstreamName = new Map<string, ModelEntry>();

  constructor(resources: Resources, generation: number, resourceCount: number) {
    this.resources = resources;
    this.generation = generation;
    this.resourceCount = resourceCount;
    for (const pk of resources.provider_keys) this.providerKeys.set(pk.id, compileProviderKey(pk));
    for (const m of resources.models) {
      const entry = compileModel(m, this.providerKeys);
      if (entry.glob.wildcard) this.wildcardModels.push(entry);
      else this.exactModels.set(entry.name, entry);
    }
    this.wildcardModels.sort((a, b) => b.glob.literalLength - a.glob.literalLength);
    for (const entry of this.exactModels.values()) {
      if (entry.kind !== 'direct' || entry.modelName === undefined) continue;
      const key = `${entry.provider} ${entry.modelName}`;
      const seen = this.modelsByUpstreamName.get(key);
      if (seen === undefined || entry.id < seen.id) this.modelsByUpstreamName.set(key, entry);
    }
    for (const k of resources.api_keys) {
      this.apiKeysByHash.set(k.key_hash, {
        id: k.id,
        name: k.display_name,
        allowedModels: k.allowed_models.map(compileGlob),
        disabled: k.disabled === true,
        expiresAt: k.expires_at === undefined ? undefined : Date.parse(k.expires_at),
        doc: k,
      });
    }
  }

  /** Exact alias first, then the most specific wildcard alias; the capture fills `model_name`. */
  resolveModel(name: string): ResolvedModel | undefined {
    const exact = this.exactModels.get(name);
    if (exact !== undefined) return { entry: exact, upstreamModel: exact.modelName ?? exact.name };
    for (const entry of this.wildcardModels) {
      const capture = globCapture(entry.glob, name);
      if (capture === undefined) continue;
      const upstreamModel = entry.modelName === undefined ? capture : entry.modelName.replace('*', () => capture);
      return { entry, upstreamModel };
    }
    return undefined;
  }

  /**
   * The model a provider-native body names, for a route of `provider` (spec 3 limits): the
   * concrete direct model of that provider with this display name, else the one whose
   * `model_name` it is (the smallest id when several are). Wildcard aliases never match.
   */
  modelOfProvider(provider: string, name: string): ModelEntry | undefined {
    const exact = this.exactModels.get(name);
    if (exact !== undefined && exact.kind === 'direct' && exact.provider === provider) return exact;
    return this.modelsByUpstreamName.get(`${provider} ${name}`);
  }

  isModelAllowed(key: ApiKeyEntry, requested: string): boolean {
    for (const g of key.allowedModels) if (globMatches(g, requested)) return true;
    return false;
  }

  /** Concrete aliases the key may use: no wildcard patterns, no multi-target groups. */
  visibleModels(key: ApiKeyEntry): ModelEntry[] {
    const out: ModelEntry[] = [];
    for (const entry of this.exactModels.values()) {
      if (entry.kind === 'direct' && this.isModelAllowed(key, entry.name)) out.push(entry);
    }
    return out;
  }
}

/** Holds the snapshot currently serving; swapped whole, never mutated. */
export class SnapshotHolder {
  current: Snapshot | undefined = undefined;
  private nextGeneration = 1;

  install(resources: Resources, resourceCount: number): Snapshot {
    const snapshot = new Snapshot(resources, this.nextGeneration++, resourceCount);
    this.current = snapshot;
    return snapshot;
  }
}
