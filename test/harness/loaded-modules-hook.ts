// Preloaded with `--import` (NODE_OPTIONS) by tests that check which modules a process loads:
// writes `loaded-module <pid> <url>` on stderr for every module loaded from a file.
import module from 'node:module';
import { writeSync } from 'node:fs';

module.registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith('file:')) writeSync(2, `loaded-module ${process.pid} ${url}\n`);
    return nextLoad(url, context);
  },
});
