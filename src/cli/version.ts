// Tollgate's version: package.json's, read once (the CLI's --version, the OTLP exporter's
// service.version), whether the process was started by npm or not.
import { readFileSync } from 'node:fs';

let version: string | undefined;

export function tollgateVersion(): string {
  if (version === undefined) {
    try {
      const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
      version = typeof pkg.version === 'string' ? pkg.version : '0';
    } catch {
      version = '0';
    }
  }
  return version;
}
