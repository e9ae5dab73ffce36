// Where a callgrind count goes, by function: the self cost of each function in a dump, with the
// JIT's code (which callgrind sees only as addresses) named from the perf map V8 writes with
// `--perf-basic-prof` (`/tmp/perf-<pid>.map`), the functions whose cost differs most between
// two targets, and who calls a given function at what cost. For `instructions.ts --functions`
// and `--callers`.

/**
 * Walks a dump's cost lines: `self(fn, ir)` for a function's own lines, `call(fn, callee, calls,
 * ir)` for a call line (`ir` is the callee's inclusive cost on that call, not the caller's own).
 * Names come back as written, compressed ones (`fn=(id)`) resolved.
 */
function walkDump(dump: string, self: (fn: string, ir: number) => void, call: (fn: string, callee: string, calls: number, ir: number) => void): void {
  const names = new Map<string, string>();
  let fn: string | undefined;
  let callee: string | undefined;
  let calls = -1;
  // `fn=(id) name` defines a compressed name, `fn=(id)` reuses it; `cfn=` lines define names too.
  const named = (spec: string): string => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(spec);
    if (m === null) return spec;
    if (m[2] !== undefined) names.set(m[1], m[2]);
    return names.get(m[1]) ?? `(${m[1]})`;
  };
  for (const line of dump.split('\n')) {
    if (line.startsWith('fn=')) {
      fn = named(line.slice(3));
    } else if (line.startsWith('cfn=')) {
      callee = named(line.slice(4));
    } else if (line.startsWith('calls=')) {
      // The next cost line is the call's inclusive cost, not the caller's own.
      calls = Number(line.slice(6).split(' ')[0]);
    } else if (/^[\d+\-*]/.test(line)) {
      const ir = Number(line.split(/\s+/)[1] ?? 0);
      if (calls >= 0) {
        if (fn !== undefined && callee !== undefined) call(fn, callee, calls, ir);
        calls = -1;
      } else if (fn !== undefined && ir > 0) {
        self(fn, ir);
      }
    }
  }
}

/** Self cost (the `Ir` of a function's own lines, calls excluded) by function name. */
export function selfCostByFunction(dump: string): Map<string, number> {
  const cost = new Map<string, number>();
  walkDump(dump, (fn, ir) => cost.set(fn, (cost.get(fn) ?? 0) + ir), () => {});
  return cost;
}

export interface CallerCost {
  /** Inclusive instructions of the calls. */
  cost: number;
  calls: number;
}

/** A dump's calls: by callee, by caller (both as callgrind names them), the calls and their inclusive cost. */
export type CallEdges = Map<string, Map<string, CallerCost>>;

function addCallerCost(byCaller: Map<string, CallerCost>, caller: string, cost: number, calls: number): void {
  const c = byCaller.get(caller);
  if (c === undefined) byCaller.set(caller, { cost, calls });
  else {
    c.cost += cost;
    c.calls += calls;
  }
}

function addEdge(edges: CallEdges, callee: string, caller: string, cost: number, calls: number): void {
  let byCaller = edges.get(callee);
  if (byCaller === undefined) edges.set(callee, (byCaller = new Map()));
  addCallerCost(byCaller, caller, cost, calls);
}

/** The calls of one dump. */
export function callEdges(dump: string): CallEdges {
  const edges: CallEdges = new Map();
  walkDump(dump, () => {}, (fn, callee, calls, ir) => addEdge(edges, callee, fn, ir, calls));
  return edges;
}

/** The edges of several dumps (a target's batches), summed. */
export function addCallEdges(list: readonly CallEdges[]): CallEdges {
  const out: CallEdges = new Map();
  for (const edges of list) for (const [callee, byCaller] of edges) for (const [caller, c] of byCaller) addEdge(out, callee, caller, c.cost, c.calls);
  return out;
}

/**
 * The callers of the functions whose name (as `nameOf` gives it: a JIT address named from the
 * perf map, say) matches `callee`: per caller, named by `nameOf` too, the calls and their
 * inclusive cost, most costly first. Answers "who makes this builtin or runtime function cost so much".
 */
export function callersOf(edges: CallEdges, callee: RegExp, nameOf: (raw: string) => string): Array<[string, CallerCost]> {
  const out = new Map<string, CallerCost>();
  for (const [target, byCaller] of edges) {
    if (!callee.test(nameOf(target))) continue;
    for (const [caller, c] of byCaller) addCallerCost(out, nameOf(caller), c.cost, c.calls);
  }
  return [...out].sort((a, b) => b[1].cost - a[1].cost);
}

/** A perf map (`<start hex> <size hex> <name>` per line), searchable by address; later entries win. */
export class PerfMap {
  private readonly starts: number[];
  private readonly entries: Map<number, { end: number; name: string }>;

  constructor(text: string) {
    this.entries = new Map();
    for (const line of text.split('\n')) {
      const m = /^([0-9a-fA-F]+) ([0-9a-fA-F]+) (.*)$/.exec(line);
      if (m === null) continue;
      const start = parseInt(m[1], 16);
      this.entries.set(start, { end: start + parseInt(m[2], 16), name: m[3].replace(/^JS:/, '') });
    }
    this.starts = [...this.entries.keys()].sort((a, b) => a - b);
  }

  /** The name of the code at `address`, or undefined. */
  nameAt(address: number): string | undefined {
    let lo = 0;
    let hi = this.starts.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.starts[mid] <= address) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (found < 0) return undefined;
    const e = this.entries.get(this.starts[found])!;
    return address < e.end ? e.name : undefined;
  }
}

/**
 * The name of callgrind's function `raw`: unnamed code (`0x...`, the JIT's) named from the perf
 * map, `(JIT code)` when the map does not know it; with `roots` (the target's tree, and where its
 * `node_modules` link leads), paths under them written relative to them, so that two trees'
 * functions compare by name.
 */
export function functionName(raw: string, map: PerfMap, roots: readonly string[] = []): string {
  const m = /^0x([0-9a-fA-F]+)/.exec(raw);
  let name = m === null ? raw : (map.nameAt(parseInt(m[1], 16)) ?? '(JIT code)');
  for (const root of roots) {
    const dir = root.endsWith('/') ? root : `${root}/`;
    name = name.replaceAll(`file://${dir}`, '').replaceAll(dir, '');
  }
  return name;
}

/** Costs by function name (functionName), summed. */
export function symbolize(costs: Map<string, number>, map: PerfMap, roots: readonly string[] = []): Map<string, number> {
  const out = new Map<string, number>();
  for (const [raw, ir] of costs) {
    const key = functionName(raw, map, roots);
    out.set(key, (out.get(key) ?? 0) + ir);
  }
  return out;
}

/** Sum of several cost maps. */
export function addCosts(maps: readonly Map<string, number>[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of maps) for (const [k, v] of m) out.set(k, (out.get(k) ?? 0) + v);
  return out;
}

export interface FunctionDiff {
  name: string;
  /** Per request. */
  base: number;
  target: number;
}

/** The `top` functions whose per-request cost differs most (either way) between `base` and `target`. */
export function largestDifferences(base: Map<string, number>, baseRequests: number, target: Map<string, number>, targetRequests: number, top: number): FunctionDiff[] {
  const names = new Set([...base.keys(), ...target.keys()]);
  return [...names]
    .map((name) => ({ name, base: (base.get(name) ?? 0) / baseRequests, target: (target.get(name) ?? 0) / targetRequests }))
    .sort((a, b) => Math.abs(b.target - b.base) - Math.abs(a.target - a.base))
    .slice(0, top);
}
