// The one command-line parser of every subcommand (the operator commands, controller, install, agent). Flags as
// kubectl reads them: `--name value`, `--name=value`, `-o json`, `-ojson`, `-o=json`; a boolean is `--flag`,
// `--flag=true|false` or `--flag true|false`; `--` ends the flags. Errors are UsageErrors naming the flag as written.

/** The command line cannot be run as given: exit 2, the message names the flag or argument. */
export class UsageError extends Error {}

interface StringFlag {
  readonly type: 'string';
  readonly short?: string;
  readonly default?: string;
}

interface BooleanFlag {
  readonly type: 'boolean';
  readonly short?: string;
  readonly default?: boolean;
}

export type FlagSpec = StringFlag | BooleanFlag;
export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** The parsed value of each flag: a boolean is never undefined (false unless given), a string is when not given. */
export type FlagValues<S extends FlagSpecs> = {
  readonly [K in keyof S]: S[K] extends { readonly type: 'boolean' }
    ? boolean
    : S[K] extends { readonly default: string }
      ? string
      : string | undefined;
};

export interface ParsedFlags<S extends FlagSpecs> {
  readonly values: FlagValues<S>;
  readonly positionals: readonly string[];
}

export interface ParseOptions {
  /** Skip what cannot be read instead of throwing (to learn `-o json` from a command line that is otherwise wrong). */
  readonly lenient?: boolean;
}

/** The flags and positional arguments of `argv`; throws UsageError for an unknown flag or a value it cannot read. */
export function parseFlags<S extends FlagSpecs>(
  argv: readonly string[],
  specs: S,
  options: ParseOptions = {},
): ParsedFlags<S> {
  const values: Record<string, string | boolean | undefined> = {};
  const shorts = new Map<string, string>();
  for (const [name, spec] of Object.entries(specs)) {
    values[name] = spec.default ?? (spec.type === 'boolean' ? false : undefined);
    if (spec.short !== undefined) shorts.set(spec.short, name);
  }
  const positionals: string[] = [];
  const fail = (msg: string): void => {
    if (options.lenient !== true) throw new UsageError(msg);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    const token = flagToken(arg, shorts);
    if (token === undefined) {
      positionals.push(arg);
      continue;
    }
    const spec = token.name !== undefined && Object.hasOwn(specs, token.name) ? specs[token.name] : undefined;
    if (spec === undefined || token.name === undefined) {
      fail(`unknown flag ${token.written}`);
      continue;
    }
    const next = argv[i + 1];
    if (spec.type === 'boolean') {
      let text = token.inline;
      if (text === undefined && (next === 'true' || next === 'false')) {
        text = next;
        i++;
      }
      if (text === undefined) values[token.name] = true;
      else if (text === 'true' || text === 'false') values[token.name] = text === 'true';
      else fail(`${token.written} ${JSON.stringify(text)} must be true or false`);
      continue;
    }
    if (token.inline !== undefined) {
      values[token.name] = token.inline;
    } else if (next === undefined || looksLikeFlag(next)) {
      // A value that starts with "-" must be attached (--namespace=-x): `--namespace -o json` is a missing value.
      fail(`${token.written} needs a value`);
    } else {
      values[token.name] = next;
      i++;
    }
  }
  return { values: values as FlagValues<S>, positionals };
}

interface FlagToken {
  /** The flag as the command line wrote it, without a value: `--output`, `-o`. */
  readonly written: string;
  /** The spec's name; undefined for a short flag no spec has. */
  readonly name: string | undefined;
  /** `--name=value`, `-o=value`, `-ovalue`. */
  readonly inline: string | undefined;
}

function flagToken(arg: string, shorts: ReadonlyMap<string, string>): FlagToken | undefined {
  if (arg.startsWith('--')) {
    const eq = arg.indexOf('=');
    const written = eq < 0 ? arg : arg.slice(0, eq);
    return { written, name: written.slice(2), inline: eq < 0 ? undefined : arg.slice(eq + 1) };
  }
  if (!looksLikeFlag(arg)) return undefined;
  const letter = arg.charAt(1);
  const rest = arg.slice(2);
  return {
    written: `-${letter}`,
    name: shorts.get(letter),
    inline: rest === '' ? undefined : rest.startsWith('=') ? rest.slice(1) : rest,
  };
}

function looksLikeFlag(arg: string): boolean {
  return arg.length > 1 && arg.startsWith('-');
}

/** A duration as Go writes it (500ms, 15s, 5m, 1h) or bare seconds; `flag` names it in the error. */
export function duration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (m === null) throw new UsageError(`--${flag} ${JSON.stringify(text)} is not a duration (500ms, 15s, 5m)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * unit;
}
