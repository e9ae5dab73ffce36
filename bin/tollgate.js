#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=8
// The production launcher (`npm start`, the `tollgate` command). Plain JavaScript so that it can
// turn on Node's compile cache before any TypeScript loads: with the cache warm, Node reuses the
// type-stripped sources of earlier runs and never loads its TypeScript stripper (~20 MiB of
// memory and a slower start). The first line also bounds V8's young generation and glibc's malloc
// arenas (see docs/configuration.md, "Running the process"). Tests and development run
// src/main.ts directly.
import module from 'node:module';
import { nodeVersionProblem } from './node-version.js';

const problem = nodeVersionProblem(process.version);
if (problem !== undefined) {
  console.error(problem);
  process.exit(1);
}
module.enableCompileCache?.();
await import('../src/main.ts');
