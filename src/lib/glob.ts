// Single-`*` glob matching, anchored at both ends (`openai/*`, `gpt-*-preview`, `*`).

export interface Glob {
  readonly pattern: string;
  readonly wildcard: boolean;
  readonly prefix: string;
  readonly suffix: string;
  /** Literal characters: the specificity used to pick the most specific match. */
  readonly literalLength: number;
}

export function compileGlob(pattern: string): Glob {
  const star = pattern.indexOf('*');
  if (star < 0) {
    return { pattern, wildcard: false, prefix: pattern, suffix: '', literalLength: pattern.length };
  }
  return {
    pattern,
    wildcard: true,
    prefix: pattern.slice(0, star),
    suffix: pattern.slice(star + 1),
    literalLength: pattern.length - 1,
  };
}

/** The text `*` stands for, or undefined when `value` does not match. */
export function globCapture(glob: Glob, value: string): string | undefined {
  if (!glob.wildcard) return value === glob.prefix ? '' : undefined;
  if (value.length < glob.literalLength) return undefined;
  if (!value.startsWith(glob.prefix) || !value.endsWith(glob.suffix)) return undefined;
  return value.slice(glob.prefix.length, value.length - glob.suffix.length);
}

export function globMatches(glob: Glob, value: string): boolean {
  return globCapture(glob, value) !== undefined;
}
