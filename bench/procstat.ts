// Reads what the kernel knows about the processes under test: CPU time and peak RSS of a
// process and all its descendants (so a gateway that forks workers is measured whole), and
// per-core busy time from /proc/stat (to tell a saturated target from a saturated rig).

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let clockTicks = 0;
function ticksPerSecond(): number {
  if (clockTicks === 0) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

export interface StatFields {
  pid: number;
  ppid: number;
  /** utime + stime in clock ticks. */
  cpuTicks: number;
}

/** Parses one /proc/<pid>/stat line; the command name may hold spaces and parentheses. */
export function parseStat(line: string): StatFields {
  const open = line.indexOf('(');
  const close = line.lastIndexOf(')');
  if (open < 0 || close < open) throw new Error(`/proc stat: unparsable line: ${line.slice(0, 80)}`);
  const rest = line.slice(close + 2).split(' ');
  // rest[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
  return {
    pid: Number(line.slice(0, open).trim()),
    ppid: Number(rest[1]),
    cpuTicks: Number(rest[11]) + Number(rest[12]),
  };
}

function readStat(pid: number): StatFields | null {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null; // exited between listing and reading
  }
}

/** The pid and every live descendant of it. */
export function processTree(root: number): StatFields[] {
  const all: StatFields[] = [];
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    const s = readStat(Number(name));
    if (s) all.push(s);
  }
  const inTree = new Set<number>([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const s of all) {
      if (!inTree.has(s.pid) && inTree.has(s.ppid)) {
        inTree.add(s.pid);
        grew = true;
      }
    }
  }
  return all.filter((s) => inTree.has(s.pid));
}

/** CPU time (user + system) consumed so far by the process tree, in µs. */
export function treeCpuMicros(root: number): number {
  let ticks = 0;
  for (const s of processTree(root)) ticks += s.cpuTicks;
  return (ticks * 1e6) / ticksPerSecond();
}

/** Peak resident set (VmHWM) summed over the process tree, in bytes. */
export function treePeakRssBytes(root: number): number {
  let kb = 0;
  for (const s of processTree(root)) {
    try {
      const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${s.pid}/status`, 'utf8'));
      if (m) kb += Number(m[1]);
    } catch {
      // exited
    }
  }
  return kb * 1024;
}

export interface CoreTimes {
  /** Everything but idle and iowait, jiffies. */
  busy: number[];
  /** user + nice + system: time charged to processes (irq and softirq excluded), jiffies. */
  process: number[];
  /** Time the hypervisor ran something else while this core wanted to run, jiffies. */
  steal: number[];
  total: number[];
}

/** Parses /proc/stat's per-core lines (cpu0, cpu1, ...) into busy and total jiffies. */
export function parseCoreTimes(procStat: string): CoreTimes {
  const busy: number[] = [];
  const process: number[] = [];
  const steal: number[] = [];
  const total: number[] = [];
  for (const line of procStat.split('\n')) {
    const m = /^cpu(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const v = m[2].trim().split(/\s+/).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already in user)
    const all = v.slice(0, 8).reduce((a, b) => a + b, 0);
    const core = Number(m[1]);
    busy[core] = all - v[3] - (v[4] ?? 0);
    process[core] = v[0] + v[1] + v[2];
    steal[core] = v[7] ?? 0;
    total[core] = all;
  }
  return { busy, process, steal, total };
}

export function readCoreTimes(): CoreTimes {
  return parseCoreTimes(readFileSync('/proc/stat', 'utf8'));
}

/** Busy fraction (0..1) of each core between two readings. */
export function coreBusyBetween(a: CoreTimes, b: CoreTimes): number[] {
  return b.total.map((t, i) => {
    const dt = t - (a.total[i] ?? 0);
    return dt > 0 ? (b.busy[i] - (a.busy[i] ?? 0)) / dt : Number.NaN;
  });
}

/** Jiffies of a CoreTimes field summed over cores, between two readings, in µs. */
export function coreMicrosBetween(a: CoreTimes, b: CoreTimes, field: 'busy' | 'process' | 'steal'): number {
  let j = 0;
  for (let i = 0; i < b[field].length; i++) j += b[field][i] - (a[field][i] ?? 0);
  return (j * 1e6) / ticksPerSecond();
}

/** CPU used by this process and by its children it has reaped (wrk, the generator), in µs. */
export function selfAndReapedCpuMicros(): number {
  const line = readFileSync('/proc/self/stat', 'utf8');
  const rest = line.slice(line.lastIndexOf(')') + 2).split(' ');
  // utime 14, stime 15, cutime 16, cstime 17 (rest[0] is field 3)
  const ticks = Number(rest[11]) + Number(rest[12]) + Number(rest[13]) + Number(rest[14]);
  return (ticks * 1e6) / ticksPerSecond();
}

/**
 * CPU time (µs) of each thread of one process, summed by thread name (`node` is the main
 * thread; `libuv-worker`, `V8Worker`, ... the helpers): where a process's CPU goes besides
 * its JavaScript.
 */
export function threadCpuMicros(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tids) {
    try {
      const line = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = line.slice(line.indexOf('(') + 1, line.lastIndexOf(')'));
      const micros = (parseStat(line).cpuTicks * 1e6) / ticksPerSecond();
      byName.set(name, (byName.get(name) ?? 0) + micros);
    } catch {
      // the thread exited between listing and reading
    }
  }
  return byName;
}
