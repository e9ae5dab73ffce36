// Loading the bootstrap config: read config.yaml (JSON is valid YAML), apply TOLLGATE_*
// environment overrides (they win over the file), validate against ConfigSchema with
// defaults filled in, then normalise (header names lowercased, resources_file made
// absolute). Every problem found is reported at once.

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import type { TSchema } from '@sinclair/typebox';
import { applyEnvOverrides } from './env.ts';
import { ConfigSchema, type GatewayConfig } from './schema.ts';
import { validateConfig } from './validate.ts';

export { parseAddr } from './address.ts';

export type ConfigResult = { ok: true; config: GatewayConfig } | { ok: false; errors: string[] };

type Json = Record<string, unknown>;

const isPlainObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'is a directory',
};

/** Parse the file into a document; on failure the errors name the file and data is empty. */
function readConfigFile(file: string, abs: string): { data: Json; errors: string[] } {
  const where = `config file ${JSON.stringify(file)}`;
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    return { data: {}, errors: [`${where}: cannot read: ${READ_ERRORS[err.code ?? ''] ?? err.message}`] };
  }

  // prettyErrors off: its messages quote the offending source line, which may hold a secret.
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  // The library keeps the plain value of a tag it cannot resolve and only warns: `!ENV ADMIN_KEY`
  // would make the string "ADMIN_KEY" the admin key. Such a tag is an error, as in the resources file.
  const unresolved = doc.warnings.filter((w) => w.code === 'TAG_RESOLVE_FAILED');
  if (doc.errors.length > 0 || unresolved.length > 0) {
    return {
      data: {},
      errors: [
        ...doc.errors.map((err) => {
          const { line, col } = lineCounter.linePos(err.pos[0]);
          const msg = err.code === 'MULTIPLE_DOCS' ? 'the file must hold a single YAML document' : yamlDescription(err.message);
          return `${where}: YAML syntax error at line ${line}, column ${col}: ${msg}`;
        }),
        ...unresolved.map((w) => {
          const { line, col } = lineCounter.linePos(w.pos[0]);
          return `${where}: unsupported YAML tag at line ${line}, column ${col} (write plain values; the environment overrides keys as TOLLGATE_<SECTION>__<KEY>)`;
        }),
      ],
    };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    return { data: {}, errors: [`${where}: ${yamlDescription((e as Error).message)}`] };
  }
  if (value === null || value === undefined) return { data: {}, errors: [] };
  if (!isPlainObject(value)) return { data: {}, errors: [`${where}: top level must be a mapping of config keys`] };
  return { data: value, errors: [] };
}

/**
 * A section written with every key commented out parses as null: treat it as absent so
 * its defaults apply, instead of failing with "must be a mapping".
 */
function dropNullSections(data: Json, schema: TSchema): void {
  const props = schema.properties as Record<string, TSchema> | undefined;
  if (!props) return;
  for (const [key, child] of Object.entries(props)) {
    if (child.type !== 'object' || !Object.hasOwn(data, key)) continue;
    if (data[key] === null) delete data[key];
    else if (isPlainObject(data[key])) dropNullSections(data[key], child);
  }
}

const uniqueLower = (names: string[]): string[] => [...new Set(names.map((n) => n.toLowerCase()))];

/**
 * Load the bootstrap config. `file` absent → defaults plus env overrides. `cwd` (default
 * process.cwd()) resolves a relative `file`, and a relative path setting (resources_file,
 * observability.usage_event.file) that came from the environment or with no file; one from the
 * file resolves against the file's directory.
 */
export function loadConfig(opts: { file?: string; env: Record<string, string | undefined>; cwd?: string }): ConfigResult {
  const cwd = opts.cwd ?? process.cwd();
  const errors: string[] = [];
  let data: Json = {};
  let baseDir = cwd;

  if (opts.file !== undefined) {
    const abs = resolve(cwd, opts.file);
    baseDir = dirname(abs);
    const read = readConfigFile(opts.file, abs);
    errors.push(...read.errors);
    data = read.data;
  }

  dropNullSections(data, ConfigSchema);
  const env = applyEnvOverrides(data, opts.env, ConfigSchema);
  errors.push(...env.errors);
  // Paths in the file are relative to the file; paths from the environment, to the working
  // directory. The usage file is resolved before validation, which checks it can be written.
  const base = (key: string): string => (env.origins.has(key) ? cwd : baseDir);
  const usageEvent = (data.observability as Json | undefined)?.usage_event as Json | undefined;
  if (typeof usageEvent?.file === 'string' && usageEvent.file.length > 0) {
    usageEvent.file = resolve(base('observability.usage_event.file'), usageEvent.file);
  }
  errors.push(...validateConfig(data, env.origins));
  if (errors.length > 0) return { ok: false, errors: [...new Set(errors)] };

  const config = data as GatewayConfig;
  config.proxy.request_id.accept_headers = uniqueLower(config.proxy.request_id.accept_headers);
  config.proxy.real_ip.header = config.proxy.real_ip.header.toLowerCase();
  if (config.resources_file !== undefined) config.resources_file = resolve(base('resources_file'), config.resources_file);
  return { ok: true, config };
}

/** A YAML error's description, without the source text the parser may quote after it (a secret, say). */
function yamlDescription(message: string): string {
  const cut = message.indexOf(': ');
  return cut < 0 ? message : message.slice(0, cut);
}
