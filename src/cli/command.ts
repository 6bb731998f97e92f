// How every subcommand runs: its flags parsed by the one parser, --help, the exit codes, and errors as one line that
// names the subcommand (a JSON object instead with `-o json`).
import { HereaboutsError, messageOf } from '../errors.ts';
import { parseFlags, UsageError, type FlagSpecs, type FlagValues } from './flags.ts';

/** 0: all well. 1: a problem found, a thing not found, a refusal, or a failure. 2: the command line is wrong. */
export const EXIT = { ok: 0, problem: 1, usage: 2 } as const;

/** Ends every --help. */
export const EXIT_HELP = `
Exit status: 0 all well, 1 a problem found or a failure, 2 a wrong command line (an unknown flag, a bad value).
`;

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

export interface Subcommand<S extends FlagSpecs> {
  /** As typed after `hereabouts`: `status`. */
  readonly name: string;
  /** What --help prints (EXIT_HELP follows it). */
  readonly usage: string;
  readonly flags: S;
  /** The names of the positional arguments it takes, in order (`<address>`); none by default. */
  readonly positionals?: readonly string[];
}

export interface Invocation<S extends FlagSpecs> {
  readonly values: FlagValues<S>;
  readonly positionals: readonly string[];
}

/** Parses `argv` for the command and runs `body` with the values; returns the exit code. */
export async function runSubcommand<S extends FlagSpecs>(
  command: Subcommand<S>,
  argv: readonly string[],
  body: (invocation: Invocation<S>) => number | Promise<number>,
): Promise<number> {
  const report = new ErrorReport(command, argv);
  try {
    const { values, positionals } = parseFlags(argv, { ...command.flags, ...HELP });
    if (values.help) {
      process.stdout.write(`${command.usage}${EXIT_HELP}`);
      return EXIT.ok;
    }
    checkPositionals(positionals, command.positionals ?? []);
    return await body({ values, positionals });
  } catch (err) {
    return report.failed(err);
  }
}

/** Too few or too many arguments: a UsageError naming what is missing or extra. */
function checkPositionals(given: readonly string[], names: readonly string[]): void {
  if (given.length < names.length) throw new UsageError(`${names.slice(given.length).join(' ')} is missing`);
  if (given.length > names.length) {
    const extra = given
      .slice(names.length)
      .map((p) => JSON.stringify(p))
      .join(' ');
    throw new UsageError(`takes ${names.length === 0 ? 'no arguments' : `only ${names.join(' ')}`}, also got ${extra}`);
  }
}

/** Writes a failure as one line on stderr, or with `-o json` as one JSON object on stdout; returns the exit code. */
class ErrorReport {
  readonly #name: string;
  readonly #json: boolean;

  constructor(command: Subcommand<FlagSpecs>, argv: readonly string[]) {
    this.#name = `hereabouts ${command.name}`;
    // Read leniently: `-o json` asks for JSON errors even on a command line that is wrong otherwise.
    this.#json =
      Object.hasOwn(command.flags, 'output') &&
      parseFlags(argv, command.flags, { lenient: true }).values['output'] === 'json';
  }

  failed(err: unknown): number {
    const usage = err instanceof UsageError;
    const code = usage ? EXIT.usage : EXIT.problem;
    const details = err instanceof HereaboutsError && err.details !== '' ? ` (${err.details})` : '';
    const hint = usage ? ` (see ${this.#name} --help)` : '';
    const line = `${this.#name}: ${messageOf(err)}${details}${hint}`;
    if (this.#json) process.stdout.write(`${JSON.stringify({ error: line, exitCode: code }, null, 2)}\n`);
    else process.stderr.write(`${line}\n`);
    return code;
  }
}
