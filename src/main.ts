#!/usr/bin/env node
// CLI entry: parse the command and hand off to cli/.
import { runCli } from './cli/run.ts';

process.exitCode = await runCli(process.argv.slice(2));
