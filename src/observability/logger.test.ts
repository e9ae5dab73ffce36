import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LOGGER = join(import.meta.dirname, 'logger.ts');

/** Node flags and script of a child that imports the logger module as `m` and runs `body`. */
const childArgs = (body: string): string[] => ['-e', `import(${JSON.stringify(LOGGER)}).then((m) => { ${body} })`];

/** Whether stderrStream() offers a writer in a process whose stderr is `stderr`. */
function offersWriter(stderr: 'pipe' | number): string {
  const child = spawnSync(process.execPath, childArgs('process.stdout.write(typeof m.stderrStream())'), { stdio: ['ignore', 'pipe', stderr], encoding: 'utf8' });
  assert.equal(child.status, 0, String(child.stderr));
  return child.stdout;
}

/** Runs `body` in a child whose stderr the test does not read (`onSpawn` may close it); resolves with its stdout, or null if it never finished. */
async function unreadStderrChild(body: string, onSpawn: (stderr: NodeJS.ReadableStream & { destroy(): void }) => void = (s) => s.pause()): Promise<{ out: string; code: number | null } | null> {
  const child = spawn(process.execPath, childArgs(body), { stdio: ['ignore', 'pipe', 'pipe'] });
  onSpawn(child.stderr);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null | 'timeout'>((resolve) => {
    const timer = setTimeout(() => resolve('timeout'), 10_000);
    child.once('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  child.kill('SIGKILL');
  return code === 'timeout' ? null : { out, code };
}

test('stderr is written from the event loop only when it is a pipe or a socket', () => {
  // spawnSync's 'pipe' is a socket pair (journald and Node supervisors hand out sockets too).
  assert.equal(offersWriter('pipe'), 'object');
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-stderr-'));
  // A named pipe, as Docker's and containerd's log drivers hand a container.
  const fifo = join(dir, 'err.fifo');
  execFileSync('mkfifo', [fifo]);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(fifo, 'w');
  const file = openSync(join(dir, 'err.log'), 'w');
  const devNull = openSync('/dev/null', 'w');
  try {
    assert.equal(offersWriter(writer), 'object');
    assert.equal(offersWriter(file), 'undefined', 'a file can block on its disk: the thread pool writes it');
    assert.equal(offersWriter(devNull), 'undefined', 'a character device (a terminal) is not known never to block');
  } finally {
    for (const fd of [writer, reader, file, devNull]) closeSync(fd);
  }
});

test('a full pipe holds batches back without blocking the event loop, even after another process put the pipe in blocking mode', async () => {
  // 6.4 MB into a stderr nobody reads, after putting the pipe back in blocking mode as a process
  // sharing it can: a writer that did not set non-blocking mode again would block on the first
  // batch the pipe has no room for, and the child would never answer.
  const result = await unreadStderrChild(`
    const stream = m.stderrStream();
    process.stderr._handle.setBlocking(true);
    const chunk = Buffer.alloc(65536, 120);
    let done = 0;
    for (let i = 0; i < 100; i++) stream.write(2, chunk, 0, chunk.length, null, () => done++);
    setTimeout(() => { process.stdout.write(JSON.stringify({ done })); process.exit(0); }, 200);
  `);
  assert.ok(result !== null, 'the writer blocked on the full pipe');
  const { done } = JSON.parse(result.out) as { done: number };
  assert.ok(done < 100, `the pipe filled: ${done} of 100 batches written, the rest wait for the reader`);
});

test('the part of a batch in flight that the pipe has not taken is known, and unknown when another writer queued bytes too', async () => {
  const result = await unreadStderrChild(`
    const stream = m.stderrStream();
    const big = Buffer.alloc(4 * 1024 * 1024, 120);
    stream.write(2, big, 0, big.length, null, () => {});
    setTimeout(() => {
      const alone = stream.unwritten(big.length);
      process.stderr.write('another writer\\n');
      const shared = stream.unwritten(big.length);
      process.stdout.write(JSON.stringify({ alone, shared: shared ?? null }));
      process.exit(0);
    }, 200);
  `);
  assert.ok(result !== null);
  const { alone, shared } = JSON.parse(result.out) as { alone: number; shared: number | null };
  assert.ok(alone > 0 && alone < 4 * 1024 * 1024, `the pipe took part of the 4 MiB batch: ${alone} bytes left`);
  assert.equal(shared, null);
});

test('a reader that went away fails the batch (EPIPE) and does not end the process', async () => {
  const result = await unreadStderrChild(
    `
    const stream = m.stderrStream();
    setTimeout(() => stream.write(2, Buffer.from('line\\n'), 0, 5, null, (err, written) => {
      process.stdout.write(JSON.stringify({ code: err?.code ?? null, written }));
    }), 200);
  `,
    (stderr) => stderr.destroy(),
  );
  assert.ok(result !== null);
  assert.equal(result.code, 0, 'the process went on');
  assert.deepEqual(JSON.parse(result.out), { code: 'EPIPE', written: 0 });
});

test('an exit while the log reader lags writes every line whole and in order', async () => {
  // 400 lines of ~1 KB into a stderr read only after a second; the process exits at 300 ms with
  // batches queued and one half taken by the pipe. The rest of that one must come first.
  const child = spawn(
    process.execPath,
    childArgs(`
      const logger = m.createLogger('info');
      for (let i = 0; i < 400; i++) logger.info({ i, pad: 'x'.repeat(1000) });
      setTimeout(() => process.exit(0), 300);
    `),
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  child.stderr.pause();
  setTimeout(() => child.stderr.resume(), 1000);
  let text = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => (text += d));
  await new Promise((resolve) => child.stderr.once('end', resolve));
  const lines = text.trimEnd().split('\n');
  const numbers = lines.map((line) => (JSON.parse(line) as { i: number }).i);
  assert.deepEqual(numbers, Array.from({ length: 400 }, (_, i) => i));
});
