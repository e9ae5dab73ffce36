import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clearOfWindowEdge } from './window-edge.ts';

test('returns with at least the margin left in the current window, waiting past an edge when needed', async () => {
  // A 1 s window with a 0.9 s margin: most calls must wait for the next window to start.
  for (let i = 0; i < 5; i++) {
    await clearOfWindowEdge(900, 1);
    const left = 1000 - (Date.now() % 1000);
    assert.ok(left >= 900 - 20, `only ${left} ms left in the window`);
    await new Promise((r) => setTimeout(r, 150));
  }
});
