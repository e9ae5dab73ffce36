// Conditional rate-limit policies: the condition tree compiled once per snapshot into a closure
// over request attributes (regexes and CIDRs parsed at compile time, never per request).
import ipaddr from 'ipaddr.js';
import { compileGatewayRegex } from '../lib/gateway-regex.ts';
import type { Condition } from '../resources/types.ts';

/** What a condition can look at. Absent attributes match no leaf (before `negate`). */
export interface RequestAttributes {
  readonly team: string | undefined;
  readonly member: string | undefined;
  /** API key id. */
  readonly api_key: string | undefined;
  /** Model resource id (the group's, for a model group). */
  readonly model: string | undefined;
  /** The model's display name (the alias, or the wildcard pattern). */
  readonly model_name: string | undefined;
  readonly provider: string | undefined;
}

export type Matcher = (a: RequestAttributes) => boolean;

const always: Matcher = () => true;

function cidrMatcher(values: readonly string[]): (ip: string) => boolean {
  const ranges = values.map((v) => (v.includes('/') ? ipaddr.parseCIDR(v) : (() => {
    const addr = ipaddr.parse(v);
    return [addr, addr.kind() === 'ipv4' ? 32 : 128] as [ipaddr.IPv4 | ipaddr.IPv6, number];
  })()));
  return (ip) => {
    if (!ipaddr.isValid(ip)) return false;
    const addr = ipaddr.process(ip);
    return ranges.some(([net, bits]) => addr.kind() === net.kind() && addr.match([net, bits] as never));
  };
}

function leafTest(operator: string, value: string | string[]): (v: string) => boolean {
  const one = Array.isArray(value) ? value[0] ?? '' : value;
  switch (operator) {
    case '==':
      return (v) => v === one;
    case '~=':
      return (v) => v !== one;
    case '~~': {
      const re = compileGatewayRegex(one);
      return (v) => re.test(v);
    }
    case '~*': {
      const re = compileGatewayRegex(one, 'i');
      return (v) => re.test(v);
    }
    case 'in': {
      const set = new Set(Array.isArray(value) ? value : [value]);
      return (v) => set.has(v);
    }
    case 'has':
      return (v) => v.includes(one);
    case '>':
    case '>=':
    case '<':
    case '<=': {
      const n = Number(one);
      return (v) => {
        const x = Number(v);
        if (v.trim() === '' || !Number.isFinite(x)) return false;
        return operator === '>' ? x > n : operator === '>=' ? x >= n : operator === '<' ? x < n : x <= n;
      };
    }
    case 'ipmatch':
      return cidrMatcher(Array.isArray(value) ? value : [value]);
    default:
      return () => false;
  }
}

/** Compile a (validated) condition tree; no tree matches everything. */
export function compileCondition(node: Condition | undefined): Matcher {
  if (node === undefined) return always;
  let m: Matcher;
  if (node.children !== undefined) {
    const children = node.children.map((c) => compileCondition(c));
    m = node.logic === 'or' ? (a) => children.some((c) => c(a)) : (a) => children.every((c) => c(a));
  } else {
    const dim = node.dimension as keyof RequestAttributes;
    const test = leafTest(node.operator ?? '==', node.value ?? '');
    m = (a) => {
      const v = a[dim];
      return v !== undefined && test(v);
    };
  }
  if (node.negate === true) {
    const inner = m;
    return (a) => !inner(a);
  }
  return m;
}
