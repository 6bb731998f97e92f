// Just enough PromQL reading for the monitoring tests: the metric names and grouping labels an expression uses.
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/** Metric names an expression selects: identifiers that are not functions, keywords, label names or durations. */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values, strings
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // range and subquery durations
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // label lists
    .replace(/\boffset\s+\S+/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/(?<![\w:$.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = m;
    if (call !== undefined || KEYWORDS.has(name!.toLowerCase())) continue;
    names.add(name!);
  }
  return [...names];
}

/** Label names an expression groups or matches on (by/without/on/ignoring lists and {matchers}). */
export function labelNames(expr: string): string[] {
  const labels = new Set<string>();
  for (const m of expr.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)) for (const l of m[1]!.split(',')) if (l.trim() !== '') labels.add(l.trim());
  for (const m of expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').matchAll(/\{([^}]*)\}/g)) {
    for (const matcher of m[1]!.split(',')) {
      const name = /^\s*([a-zA-Z_]\w*)\s*(=~|!~|!=|=)/.exec(matcher)?.[1];
      if (name !== undefined) labels.add(name);
    }
  }
  return [...labels];
}

/** What a /metrics text exposes: every sample name (a histogram's _bucket/_sum/_count included) and its label names. */
export function exposition(text: string): Map<string, Set<string>> {
  const served = new Map<string, Set<string>>();
  const add = (name: string, labels: string[] = []): void => {
    const set = served.get(name) ?? new Set<string>();
    for (const l of labels) set.add(l);
    served.set(name, set);
  };
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\w+)$/.exec(line);
    if (type !== null) {
      const [, name, kind] = type;
      if (kind === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) add(name! + suffix);
      else if (kind === 'summary') for (const suffix of ['', '_sum', '_count']) add(name! + suffix);
      else add(name!);
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? /.exec(line);
    if (sample !== null) add(sample[1]!, [...(sample[2] ?? '').matchAll(/([a-zA-Z_]\w*)="/g)].map((m) => m[1]!));
  }
  return served;
}
