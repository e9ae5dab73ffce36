// Where a callgrind count goes, by function: the self cost of each function in a dump, with the
// JIT's code (which callgrind sees only as addresses) named from the perf map V8 writes with
// `--perf-basic-prof` (`/tmp/perf-<pid>.map`), and the functions whose cost differs most between
// two targets. For `instructions.ts --functions`.

/** Self cost (the `Ir` of a function's own lines, calls excluded) by function name. */
export function selfCostByFunction(dump: string): Map<string, number> {
  const names = new Map<string, string>();
  const cost = new Map<string, number>();
  let fn: string | undefined;
  let callCost = false;
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
      named(line.slice(4));
    } else if (line.startsWith('calls=')) {
      // The next cost line is the call's inclusive cost, not the caller's own.
      callCost = true;
    } else if (/^[\d+\-*]/.test(line)) {
      if (callCost) {
        callCost = false;
        continue;
      }
      const ir = Number(line.split(/\s+/)[1] ?? 0);
      if (fn !== undefined && ir > 0) cost.set(fn, (cost.get(fn) ?? 0) + ir);
    }
  }
  return cost;
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
 * Costs with callgrind's unnamed code (`0x...`, the JIT's) named from the perf map, summed by
 * name; code the map does not know is `(JIT code)`.
 */
export function symbolize(costs: Map<string, number>, map: PerfMap): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, ir] of costs) {
    const m = /^0x([0-9a-fA-F]+)/.exec(name);
    const key = m === null ? name : (map.nameAt(parseInt(m[1], 16)) ?? '(JIT code)');
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
