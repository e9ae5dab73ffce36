// Cross-reference checks over the whole file: model and route allowlists and routing targets name things that exist, routing groups do
// not form cycles, and no two API keys share a credential. Name → id references were
// already checked while desugaring. They run on every entry, including ones with schema
// errors, so each value is type-checked before use.

import { reportAt, type Entry, type LoadContext } from './context.ts';
import type { ApiKeyDoc } from './api-key.ts';

/** Single-`*` glob anchored at both ends (`openai/*` matches `openai/gpt-4o`); no `*` = exact. */
export function matchGlob(pattern: string, name: string): boolean {
  const star = pattern.indexOf('*');
  if (star < 0) return pattern === name;
  const prefix = pattern.slice(0, star);
  const suffix = pattern.slice(star + 1);
  return name.length >= prefix.length + suffix.length && name.startsWith(prefix) && name.endsWith(suffix);
}

const wildcardCache = new WeakMap<LoadContext, string[]>();

/** display_names of the direct wildcard models. */
function wildcards(ctx: LoadContext): string[] {
  let list = wildcardCache.get(ctx);
  if (!list) {
    list = ctx.entries.models
      .filter((m) => m.identity?.includes('*') && !Object.hasOwn(m.doc, 'routing'))
      .map((m) => m.identity as string);
    wildcardCache.set(ctx, list);
  }
  return list;
}

/** A model name resolves when a model has it as display_name or a direct wildcard model matches it. */
function modelResolves(ctx: LoadContext, name: string): boolean {
  return ctx.byName.models.has(name) || wildcards(ctx).some((w) => matchGlob(w, name));
}

function checkApiKeyRefs(ctx: LoadContext, entry: Entry): void {
  const { allowed_models: models, allowed_routes: routes } = entry.doc;
  strings(models).forEach(([name, i]) => {
    if (!name.includes('*') && !modelResolves(ctx, name)) {
      reportAt(ctx, entry, ['allowed_models', i], `unknown model ${JSON.stringify(name)}`);
    }
  });
  strings(routes).forEach(([name, i]) => {
    if (!name.includes('*') && !ctx.byName.passthrough_routes.has(name)) {
      reportAt(ctx, entry, ['allowed_routes', i], `unknown pass-through route ${JSON.stringify(name)}`);
    }
  });
}

/** The string items of a list with their indexes; anything else yields nothing. */
function strings(list: unknown): [string, number][] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((v, i): [string, number][] => (typeof v === 'string' ? [[v, i]] : []));
}

/** The `model` of each routing target, with its index. */
function targetModels(doc: Record<string, unknown>): [string, number][] {
  const routing = doc.routing as { targets?: unknown } | undefined;
  if (routing === null || typeof routing !== 'object' || !Array.isArray(routing.targets)) return [];
  return strings(routing.targets.map((t: unknown) => (t !== null && typeof t === 'object' ? (t as { model?: unknown }).model : undefined)));
}

function checkRoutingTargets(ctx: LoadContext, entry: Entry): void {
  for (const [model, i] of targetModels(entry.doc)) {
    if (model !== entry.identity && !model.includes('*') && !modelResolves(ctx, model)) {
      reportAt(ctx, entry, ['routing', 'targets', i, 'model'], `unknown model ${JSON.stringify(model)}`);
    }
  }
}

/** Routing models may target other routing models, but never in a loop. */
function checkRoutingCycles(ctx: LoadContext): void {
  const groups = new Map<string, Entry>();
  for (const e of ctx.entries.models) {
    if (e.identity !== undefined && Object.hasOwn(e.doc, 'routing') && ctx.byName.models.get(e.identity) === e) {
      groups.set(e.identity, e);
    }
  }
  const state = new Map<string, 'visiting' | 'done'>();
  const reported = new Set<string>();
  const visit = (name: string, stack: string[]): void => {
    state.set(name, 'visiting');
    const entry = groups.get(name)!;
    for (const [model, i] of targetModels(entry.doc)) {
      if (model === name || !groups.has(model)) continue; // self-targets are reported by the model check
      const s = state.get(model);
      if (s === 'visiting') {
        const cycle = [...stack.slice(stack.indexOf(model)), name, model];
        const key = [...new Set(cycle)].sort().join('\u0000');
        if (!reported.has(key)) {
          reported.add(key);
          reportAt(ctx, entry, ['routing', 'targets', i, 'model'], `routing cycle: ${cycle.join(' -> ')}`);
        }
      } else if (s === undefined) {
        visit(model, [...stack, name]);
      }
    }
    state.set(name, 'done');
  };
  for (const name of groups.keys()) if (!state.has(name)) visit(name, []);
}

function checkCredentialUniqueness(ctx: LoadContext): void {
  const byHash = new Map<string, Entry>();
  const byJwt = new Map<string, Entry>();
  const scope = (e: Entry) => `api_keys[${e.index}]${e.identity !== undefined ? ` (${JSON.stringify(e.identity)})` : ''}`;
  for (const entry of ctx.entries.api_keys) {
    const doc = entry.doc as unknown as ApiKeyDoc;
    if (typeof doc.key_hash !== 'string') continue; // key_env failed; already reported
    const first = byHash.get(doc.key_hash);
    // The hash itself is never printed: it identifies the credential.
    if (first) {
      const field = entry.written.has('key_env') ? 'key_env' : 'key_hash';
      reportAt(ctx, entry, [field], `same key as ${scope(first)}; every API key must be unique`);
    } else {
      byHash.set(doc.key_hash, entry);
    }
    if (typeof doc.jwt_provider === 'string' && typeof doc.jwt_subject === 'string') {
      const key = `${doc.jwt_provider}\u0000${doc.jwt_subject}`;
      const firstJwt = byJwt.get(key);
      if (firstJwt) reportAt(ctx, entry, ['jwt_subject'], `same jwt_provider and jwt_subject as ${scope(firstJwt)}`);
      else byJwt.set(key, entry);
    }
  }
}

export function checkCrossReferences(ctx: LoadContext): void {
  for (const entry of ctx.entries.api_keys) checkApiKeyRefs(ctx, entry);
  for (const entry of ctx.entries.models) checkRoutingTargets(ctx, entry);
  checkRoutingCycles(ctx);
  checkCredentialUniqueness(ctx);
}
