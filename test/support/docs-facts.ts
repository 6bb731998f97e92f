// What README.md and docs/ claim that the code can confirm: the CLI flags, metrics (and their labels), quoted error
// and log messages, configuration keys and Helm values they name, and that every measured figure says where it was
// measured. Pure functions over texts, so each check is tested on small documents that break it as well as on the
// real docs (test/unit/docs/facts.test.ts).
import { load } from 'js-yaml';
import ts from 'typescript';

export interface Doc {
  readonly path: string;
  readonly text: string;
}

export interface SourceFile {
  readonly path: string;
  readonly text: string;
}

// --- Markdown, as far as the checks need it -------------------------------------------------------------------

export type BlockKind = 'heading' | 'paragraph' | 'item' | 'row' | 'code';

export interface Block {
  readonly kind: BlockKind;
  readonly text: string;
  /** 1-based line of the block's first line. */
  readonly line: number;
  /** Table rows: their cells, and the header's cells. */
  readonly cells?: readonly string[];
  readonly header?: readonly string[];
}

/** Splits a table line into cells; a `|` inside a code span does not split. */
export function tableCells(line: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let code = false;
  const body = line.trim().replace(/^\|/, '').replace(/\|$/, '');
  for (const ch of body) {
    if (ch === '`') code = !code;
    if (ch === '|' && !code) {
      cells.push(cell.trim());
      cell = '';
    } else cell += ch;
  }
  cells.push(cell.trim());
  return cells;
}

/** The blocks of a Markdown text: headings, paragraphs, list items, table rows (with their header), code fences. */
export function blocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const out: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    const start = i + 1;
    if (/^\s*```/.test(line)) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !/^\s*```/.test(lines[i]!)) body.push(lines[i++]!);
      i++;
      out.push({ kind: 'code', text: body.join('\n'), line: start });
    } else if (/^#{1,6}\s/.test(line)) {
      out.push({ kind: 'heading', text: line.replace(/^#+\s*/, ''), line: start });
      i++;
    } else if (/^\s*\|/.test(line)) {
      const header = tableCells(line);
      i++;
      if (i < lines.length && /^\s*\|[\s|:-]+\|?\s*$/.test(lines[i]!)) i++;
      while (i < lines.length && /^\s*\|/.test(lines[i]!)) {
        out.push({ kind: 'row', text: lines[i]!, line: i + 1, cells: tableCells(lines[i]!), header });
        i++;
      }
    } else if (line.trim() === '') {
      i++;
    } else {
      const item = /^\s*([-*]|\d+\.)\s/.test(line);
      const body = [line];
      i++;
      while (
        i < lines.length &&
        lines[i]!.trim() !== '' &&
        !/^\s*([-*]|\d+\.)\s/.test(lines[i]!) &&
        !/^\s*(```|\||#{1,6}\s)/.test(lines[i]!)
      )
        body.push(lines[i++]!);
      out.push({ kind: item ? 'item' : 'paragraph', text: body.join('\n'), line: start });
    }
  }
  return out;
}

/** The texts of the code spans of a Markdown fragment. */
export function codeSpans(text: string): string[] {
  return [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

// --- What the code defines -------------------------------------------------------------------------------------

/** A string the code writes: its literal pieces, with the places of substituted values between them. */
export interface Literal {
  readonly file: string;
  readonly pieces: readonly string[];
  /**
   * The error a literal is the message of: `ErrorKind.X` or `CniCode.X` when it is an argument of a call or `new`
   * whose first argument names one, `configError` for configError(...); undefined otherwise.
   */
  readonly error?: string;
}

export interface CodeFacts {
  /** Long flags (`--name`): keys of parseArgs-style options objects, and string literals that are a flag. */
  readonly flags: ReadonlySet<string>;
  /** Every string, template and string concatenation of the code. */
  readonly literals: readonly Literal[];
}

function propertyName(name: ts.PropertyName): string | undefined {
  return ts.isIdentifier(name) || ts.isStringLiteral(name) ? name.text : undefined;
}

/** `{ type: 'string' | 'boolean', ... }`: an option of node:util parseArgs. */
function isFlagSpec(node: ts.Expression): boolean {
  return (
    ts.isObjectLiteralExpression(node) &&
    node.properties.some(
      (p) =>
        ts.isPropertyAssignment(p) &&
        propertyName(p.name) === 'type' &&
        ts.isStringLiteral(p.initializer) &&
        (p.initializer.text === 'string' || p.initializer.text === 'boolean'),
    )
  );
}

/** The pieces of a `+` chain of strings and other values; undefined when it holds no string. */
function concatenation(node: ts.Expression): string[] | undefined {
  const pieces: string[] = [''];
  let strings = 0;
  const walk = (n: ts.Expression): void => {
    if (ts.isParenthesizedExpression(n)) return walk(n.expression);
    if (ts.isBinaryExpression(n) && n.operatorToken.kind === ts.SyntaxKind.PlusToken) {
      walk(n.left);
      walk(n.right);
      return;
    }
    const own = literalPieces(n);
    if (own === undefined) {
      pieces.push('');
      return;
    }
    strings++;
    pieces.push(`${pieces.pop() ?? ''}${own[0] ?? ''}`, ...own.slice(1));
  };
  walk(node);
  return strings > 0 ? pieces : undefined;
}

/** The error kind or code the call or `new` that `node` is an argument of names first (Literal.error). */
function errorOf(node: ts.Node): string | undefined {
  for (let at: ts.Node = node; !ts.isSourceFile(at); at = at.parent) {
    const parent = at.parent;
    if (ts.isCallExpression(parent) || ts.isNewExpression(parent)) {
      if (ts.isCallExpression(parent) && ts.isIdentifier(parent.expression) && parent.expression.text === 'configError')
        return 'configError';
      const first = parent.arguments?.[0];
      if (
        first !== undefined &&
        first !== at &&
        ts.isPropertyAccessExpression(first) &&
        ts.isIdentifier(first.expression) &&
        (first.expression.text === 'ErrorKind' || first.expression.text === 'CniCode')
      )
        return `${first.expression.text}.${first.name.text}`;
      return undefined;
    }
    if (ts.isBlock(parent) || ts.isSourceFile(parent)) return undefined;
  }
  return undefined;
}

function literalPieces(node: ts.Node): string[] | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return [node.text];
  if (ts.isTemplateExpression(node)) return [node.head.text, ...node.templateSpans.map((s) => s.literal.text)];
  return undefined;
}

/** Flags and literals of TypeScript or JavaScript sources, read with the TypeScript parser. */
export function codeFacts(files: readonly SourceFile[]): CodeFacts {
  const flags = new Set<string>();
  const literals: Literal[] = [];
  for (const file of files) {
    const source = ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAssignment(node) && isFlagSpec(node.initializer)) {
        const name = propertyName(node.name);
        if (name !== undefined) flags.add(`--${name}`);
      }
      if (
        ts.isBinaryExpression(node) &&
        node.operatorToken.kind === ts.SyntaxKind.PlusToken &&
        !(ts.isBinaryExpression(node.parent) && node.parent.operatorToken.kind === ts.SyntaxKind.PlusToken)
      ) {
        const pieces = concatenation(node);
        const error = errorOf(node);
        if (pieces !== undefined) literals.push({ file: file.path, pieces, ...(error === undefined ? {} : { error }) });
      }
      const pieces = literalPieces(node);
      if (pieces !== undefined) {
        const error = errorOf(node);
        literals.push({ file: file.path, pieces, ...(error === undefined ? {} : { error }) });
        // A literal that is a flag (`case '--version'`), not one that mentions it in a sentence or a usage text.
        const flag = /^--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?:=|$)/.exec(pieces[0]!);
        if (flag !== null) flags.add(`--${flag[1]}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { flags, literals };
}

// --- Flags ------------------------------------------------------------------------------------------------------

/** Every long flag a document names: `--name`, not a prefix like `--whereabouts-*`. */
export function namedFlags(doc: Doc): Array<{ readonly flag: string; readonly line: number }> {
  const found: Array<{ flag: string; line: number }> = [];
  doc.text.split('\n').forEach((text, i) => {
    for (const m of text.matchAll(/(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?![\w*-])/g))
      found.push({ flag: `--${m[1]}`, line: i + 1 });
  });
  return found;
}

/** Flags named in the docs that neither the code defines nor the list of other tools' flags explains. */
export function unknownFlags(
  docs: readonly Doc[],
  defined: ReadonlySet<string>,
  foreign: Readonly<Record<string, string>>,
): string[] {
  return docs.flatMap((doc) =>
    namedFlags(doc)
      .filter(({ flag }) => !defined.has(flag) && foreign[flag] === undefined)
      .map(({ flag, line }) => `${doc.path}:${line}: ${flag}`),
  );
}

// --- Metrics ----------------------------------------------------------------------------------------------------

export interface RegisteredMetric {
  readonly name: string;
  readonly labels: readonly string[];
  /** Histograms also answer to `<name>_bucket`, `_sum` and `_count`. */
  readonly histogram: boolean;
}

/** Every `hereabouts_...` name a document gives (not a prefix like `hereabouts_pool_*`). */
export function namedMetrics(doc: Doc): Array<{ readonly name: string; readonly line: number }> {
  const found: Array<{ name: string; line: number }> = [];
  doc.text.split('\n').forEach((text, i) => {
    for (const m of text.matchAll(/\bhereabouts_[a-z0-9_]*[a-z0-9](?![\w*])/g)) found.push({ name: m[0], line: i + 1 });
  });
  return found;
}

function resolveMetric(name: string, registered: readonly RegisteredMetric[]): RegisteredMetric | undefined {
  return registered.find(
    (m) => m.name === name || (m.histogram && ['_bucket', '_sum', '_count'].some((s) => `${m.name}${s}` === name)),
  );
}

/** Metric names in the docs that the code does not register. */
export function unregisteredMetrics(docs: readonly Doc[], registered: readonly RegisteredMetric[]): string[] {
  return docs.flatMap((doc) =>
    namedMetrics(doc)
      .filter(({ name }) => resolveMetric(name, registered) === undefined)
      .map(({ name, line }) => `${doc.path}:${line}: ${name}`),
  );
}

/** Registered metrics that the monitoring doc does not name. */
export function undocumentedMetrics(monitoring: Doc, registered: readonly RegisteredMetric[]): string[] {
  const named = new Set(namedMetrics(monitoring).map((m) => m.name));
  return registered.filter((m) => !named.has(m.name)).map((m) => m.name);
}

/** The label names a table cell lists: `pool`, `network, range`, `verb` (`ADD`, ...), ... */
export function labelsOfCell(cell: string): string[] {
  let depth = 0;
  let flat = '';
  for (const ch of cell) {
    if (ch === '(') depth++;
    else if (ch === ')') depth = Math.max(0, depth - 1);
    else if (depth === 0) flat += ch;
  }
  return flat
    .split(',')
    .map((l) => l.replace(/`/g, '').trim())
    .filter((l) => l !== '');
}

/** Rows of metric tables (a `metric` column and a `labels` column) whose labels are not the registered ones. */
export function metricLabelMismatches(docs: readonly Doc[], registered: readonly RegisteredMetric[]): string[] {
  const problems: string[] = [];
  for (const doc of docs) {
    for (const row of blocks(doc.text)) {
      if (row.kind !== 'row' || row.header === undefined || row.cells === undefined) continue;
      const metricCol = row.header.findIndex((h) => h.trim().toLowerCase() === 'metric');
      const labelCol = row.header.findIndex((h) => h.trim().toLowerCase() === 'labels');
      if (metricCol < 0 || labelCol < 0) continue;
      const labels = labelsOfCell(row.cells[labelCol] ?? '').sort();
      for (const name of codeSpans(row.cells[metricCol] ?? '').filter((n) => n.startsWith('hereabouts_'))) {
        const metric = resolveMetric(name, registered);
        if (metric === undefined) continue; // reported by unregisteredMetrics
        const expected = [...metric.labels].sort();
        if (labels.join(',') !== expected.join(','))
          problems.push(
            `${doc.path}:${row.line}: ${name} labels ${JSON.stringify(labels)}, registered ${JSON.stringify(expected)}`,
          );
      }
    }
  }
  return problems;
}

// --- Quoted messages --------------------------------------------------------------------------------------------

/** The messages a document quotes in its tables: the code spans of a `msg` column (`` `msg` ``, "typical `msg`"). */
export function quotedMessages(doc: Doc): Array<{ readonly message: string; readonly line: number }> {
  const found: Array<{ message: string; line: number }> = [];
  for (const row of blocks(doc.text)) {
    if (row.kind !== 'row' || row.header === undefined || row.cells === undefined) continue;
    const col = row.header.findIndex((h) => /`msg`/.test(h));
    if (col < 0) continue;
    for (const message of codeSpans(row.cells[col] ?? '')) found.push({ message, line: row.line });
  }
  return found;
}

/**
 * The parts of a quoted message that must be the code's own words: what lies between the values a message carries
 * (`<path>`, `...`, `N`, quoted strings, error codes like ECONNREFUSED, key paths like ipam.range_start, anything
 * with a digit or a slash), split
 * where a message joins its context (`IPPool <pool>: ...`).
 */
export function messageFragments(message: string): string[] {
  return message
    .split(/<[^>]*>|\.\.\.|…|"[^"]*"|\bN\b|\bE[A-Z]{3,}\b|[^\s,;:()]*[\d/][^\s,;:()]*|\b\w+\.\w[\w.]*|:\s/)
    .map((f) => f.trim().replace(/^[\s,;:()]+|[\s,;:()]+$/g, ''))
    .filter((f) => /[a-z]{2}/i.test(f));
}

const GAP = '\u0000';

function words(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9_.-]+/)
    .map((w) => w.replace(/^[.-]+|[.-]+$/g, ''))
    .filter((w) => w !== '');
}

/** A literal as words, with GAP where a value is substituted. */
function literalWords(literal: Literal): string[] {
  return literal.pieces.flatMap((piece, i) => (i === 0 ? words(piece) : [GAP, ...words(piece)]));
}

/**
 * Whether `fragment` reads as a run of the literal's text with values filled in: its words are the literal's words
 * in order, a substituted value standing for one or more of them, and at least a third of them (and two, or the one) are
 * the literal's own.
 * A run starts and ends on the literal's own words, or on a value at the literal's very start or end: `pod ${} is
 * ${}` does not explain "CNI_NETNS is empty".
 */
function matchesLiteral(fragment: readonly string[], tokens: readonly string[]): boolean {
  const from = (t: number, w: number, own: number): boolean => {
    if (w === fragment.length) return own * 3 >= fragment.length && own >= Math.min(2, fragment.length);
    if (t === tokens.length) return false;
    if (tokens[t] === GAP) {
      // A value may end the run only as the literal's last token.
      for (let end = w + 1; end < fragment.length; end++) if (from(t + 1, end, own)) return true;
      if (t === tokens.length - 1 && from(t + 1, fragment.length, own)) return true;
      return from(t + 1, w, own);
    }
    return tokens[t] === fragment[w] && from(t + 1, w + 1, own + 1);
  };
  for (let start = 0; start < tokens.length; start++)
    if ((tokens[start] !== GAP || start === 0) && from(start, 0, 0)) return true;
  return false;
}

/** Whether the code writes this fragment (see matchesLiteral). */
export function fragmentInCode(fragment: string, literals: readonly Literal[]): boolean {
  const wanted = words(fragment);
  return wanted.length > 0 && literals.some((l) => matchesLiteral(wanted, literalWords(l)));
}

/**
 * Quoted messages of a code table (`| code | ... | \`msg\` |`) whose words are the message of an error the code
 * raises with another CNI code than the row's. `codeOf` maps Literal.error to its code. Returns the mismatches and
 * how many messages could be checked (those whose words some error's message holds).
 */
export function misfiledMessages(
  doc: Doc,
  literals: readonly Literal[],
  codeOf: (error: string) => number,
): { readonly mismatches: string[]; readonly checked: number } {
  const mismatches: string[] = [];
  let checked = 0;
  for (const row of blocks(doc.text)) {
    if (row.kind !== 'row' || row.header === undefined || row.cells === undefined) continue;
    const col = row.header.findIndex((h) => /`msg`/.test(h));
    const code = Number(row.cells[0]?.trim());
    if (col < 0 || !/^code$/i.test(row.header[0]?.trim() ?? '') || !Number.isInteger(code)) continue;
    for (const message of codeSpans(row.cells[col] ?? '')) {
      const fragments = messageFragments(message);
      const raisers = literals.filter(
        (l) =>
          l.error !== undefined &&
          fragments.length > 0 &&
          fragments.every((f) => matchesLiteral(words(f), literalWords(l))),
      );
      if (raisers.length === 0) continue;
      checked++;
      const codes = [...new Set(raisers.map((l) => codeOf(l.error ?? '')))];
      if (!codes.includes(code))
        mismatches.push(
          `${doc.path}:${row.line}: ${JSON.stringify(message)} under code ${code}, raised as ${codes.join(', ')}`,
        );
    }
  }
  return { mismatches, checked };
}

/** Quoted messages of which some fragment is not in the code. */
export function unknownMessages(doc: Doc, literals: readonly Literal[]): string[] {
  return quotedMessages(doc).flatMap(({ message, line }) =>
    messageFragments(message)
      .filter((f) => !fragmentInCode(f, literals))
      .map((f) => `${doc.path}:${line}: ${JSON.stringify(f)} of ${JSON.stringify(message)}`),
  );
}

// --- Configuration keys and Helm values -------------------------------------------------------------------------

/** The keys a document's configuration tables name: the code spans of the first column and of every "key" column. */
export function configKeys(doc: Doc): Array<{ readonly key: string; readonly line: number }> {
  const found: Array<{ key: string; line: number }> = [];
  for (const row of blocks(doc.text)) {
    if (row.kind !== 'row' || row.header === undefined || row.cells === undefined) continue;
    if (!/^key$/i.test(row.header[0]?.trim() ?? '')) continue;
    row.header.forEach((h, col) => {
      if (col !== 0 && !/\bkey\b/i.test(h)) return;
      for (const span of codeSpans(row.cells?.[col] ?? '')) {
        if (/^[a-z][A-Za-z0-9_]*(\.[a-z][A-Za-z0-9_]*)*$/.test(span)) found.push({ key: span, line: row.line });
      }
    });
  }
  return found;
}

/** Keys of configuration tables whose last part no configuration parser reads (no string literal of it). */
export function unparsedKeys(docs: readonly Doc[], configLiterals: readonly Literal[]): string[] {
  const known = new Set(configLiterals.flatMap((l) => l.pieces));
  return docs.flatMap((doc) =>
    configKeys(doc)
      .filter(({ key }) => !known.has(key.split('.').at(-1)!))
      .map(({ key, line }) => `${doc.path}:${line}: ${key}`),
  );
}

/** Value paths of a `value` table (`node.resources`, `.interval` after `monitoring.serviceMonitor.enabled`). */
export function valuePaths(doc: Doc): Array<{ readonly path: string; readonly line: number }> {
  const found: Array<{ path: string; line: number }> = [];
  for (const row of blocks(doc.text)) {
    if (row.kind !== 'row' || !/^value$/i.test(row.header?.[0]?.trim() ?? '')) continue;
    let previous: string | undefined;
    for (const span of codeSpans(row.cells?.[0] ?? '')) {
      const path = span.startsWith('.') && previous !== undefined ? previous.replace(/\.[^.]+$/, '') + span : span;
      previous = path;
      found.push({ path, line: row.line });
    }
  }
  return found;
}

/** Value paths of the docs that the chart's values.yaml does not have (`<placeholder>` segments match anything). */
export function unknownValues(doc: Doc, valuesYaml: string): string[] {
  const values = load(valuesYaml);
  const has = (node: unknown, parts: readonly string[]): boolean => {
    if (parts.length === 0) return true;
    if (typeof node !== 'object' || node === null) return false;
    const [head, ...rest] = parts as [string, ...string[]];
    const record = node as Record<string, unknown>;
    if (/^<.*>$/.test(head)) return Object.values(record).some((v) => has(v, rest)) || Object.keys(record).length > 0;
    return head in record && has(record[head], rest);
  };
  return valuePaths(doc)
    .filter(({ path }) => !has(values, path.split('.')))
    .map(({ path, line }) => `${doc.path}:${line}: ${path}`);
}

// --- Measured figures -------------------------------------------------------------------------------------------

/**
 * A figure: a number with a unit of time, size or rate, or a ratio ("2.44x", "1.5 times"). A block shows a
 * measured figure when it has a figure and says what was measured (these words, or its table's header does).
 */
export const FIGURE = /\d(?:[\d.,]*\d)?\s?(?:ms|µs|s|min|MiB|GiB|KiB|MB|GB|kB|ADD\/s|claims\/s|x|times)(?![\w/])/;
export const MEASURED =
  /\b(measured|measures|p50|p90|p99|median|VmHWM|ADD\/s|claims\/s|load average|took|npm run bench|wall(?![-\s]clock)|of CPU|CPU (?:per|p50|p90|time)|ms CPU|etcd CPU|RSS(?! below))/i;

/** `measured at `<commit>` on `<machine>``: the marker that names where the figures of its block were measured. */
export const MARKER = /measured\s+at\s+`([0-9a-f]{7,40})`\s+on\s+`([a-z0-9][a-z0-9-]*)`/gi;

export interface Marker {
  readonly commit: string;
  readonly machine: string;
}

export function markersOf(text: string): Marker[] {
  return [...text.matchAll(MARKER)].map((m) => ({ commit: m[1]!, machine: m[2]! }));
}

/** The machines a document defines: the first column of its table headed `machine`. */
export function machinesOf(doc: Doc): Set<string> {
  const names = new Set<string>();
  for (const row of blocks(doc.text)) {
    if (row.kind === 'row' && /^machine$/i.test(row.header?.[0]?.trim() ?? ''))
      for (const name of codeSpans(row.cells?.[0] ?? '')) names.add(name);
  }
  return names;
}

/** Whether a block shows a measured figure; a table row also by its header or by the paragraph just before it. */
function showsMeasurement(block: Block, caption: string): boolean {
  if (block.kind === 'code' || block.kind === 'heading') return false;
  if (block.kind === 'row' && /^machine$/i.test(block.header?.[0]?.trim() ?? '')) return false;
  // Inline code is a value or a command, not a figure (`--lease-duration 15s`).
  const prose = block.text.replace(/`[^`]*`/g, '');
  if (!FIGURE.test(prose)) return false;
  return MEASURED.test(prose) || (block.kind === 'row' && MEASURED.test(`${block.header?.join(' ') ?? ''} ${caption}`));
}

/**
 * Blocks showing measured figures that no marker covers. A marker covers its own block and the blocks after it up
 * to the next heading of its section's level or above (so a run described at the top of a section covers its
 * subsections); a table's marker is in the paragraph before it.
 */
export function unmarkedFigures(doc: Doc): string[] {
  const problems: string[] = [];
  let level = 0;
  let coveredBelow: number | undefined; // the level of the section a marker covers
  let caption = ''; // the last paragraph before a table
  for (const block of blocks(doc.text)) {
    if (block.kind !== 'row') caption = block.kind === 'paragraph' ? block.text : '';
    if (block.kind === 'heading') {
      level = /^#+/.exec(doc.text.split('\n')[block.line - 1]!)![0].length;
      if (coveredBelow !== undefined && level <= coveredBelow) coveredBelow = undefined;
      continue;
    }
    if (markersOf(block.text).length > 0) coveredBelow = level;
    if (coveredBelow === undefined && showsMeasurement(block, caption))
      problems.push(`${doc.path}:${block.line}: ${block.text.split('\n')[0]!.slice(0, 100)}`);
  }
  return problems;
}

/** Markers that name a machine the machine table does not define, or a commit `isCommit` does not know. */
export function badMarkers(
  docs: readonly Doc[],
  machines: ReadonlySet<string>,
  isCommit: (commit: string) => boolean,
): string[] {
  return docs.flatMap((doc) =>
    blocks(doc.text).flatMap((block) =>
      markersOf(block.text).flatMap(({ commit, machine }) => [
        ...(machines.has(machine) ? [] : [`${doc.path}:${block.line}: machine ${machine} is not in the machine table`]),
        ...(isCommit(commit) ? [] : [`${doc.path}:${block.line}: commit ${commit} is not in the repository's history`]),
      ]),
    ),
  );
}
